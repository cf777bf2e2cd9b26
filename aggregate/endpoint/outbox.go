package endpoint

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// outbox is what goes back to the client of an aggregate session, as a
// bridge.Reader: the answers of one POST (want of them, then it is
// complete), or the session's GET stream (never complete until the
// session ends). The goroutines that read the servers' sessions push into
// it; the transport's one reader takes from it.
type outbox struct {
	mu     sync.Mutex
	wake   chan struct{} // room for one: a push after the last wait wakes the next
	evs    []bridge.Event
	want   int  // answers still owed (a POST); stream: a GET stream
	stream bool // a GET stream: complete only once ended
	ended  bool
	closed bool // the client let go: what comes is dropped
	max    int  // a GET stream keeps at most this many waiting (the oldest go)
	lost   int  // messages dropped over max, for the log

	// A GET stream's events have ids (1, 2, ...), and those taken stay
	// in sent, bounded like what waits, so that a client whose
	// connection broke can resume after the last it saw (rewind).
	seq       uint64
	sent      []bridge.Event
	sentBytes int
	lostTo    uint64 // the last id dropped unread (over max): no resume from before it
}

// maxSentBytes bounds the bytes of a GET stream's events kept for a
// resume, as maxWaiting bounds their count: the bridge's own event log's
// byte bound (bridge.DefaultEventLogBytes).
const maxSentBytes = bridge.DefaultEventLogBytes

// maxWaiting bounds the messages a GET stream keeps while its client
// is not reading: a client that never opens one must not cost the bridge
// memory without end.
const maxWaiting = 1024

func newReply(want int) *outbox { return &outbox{wake: make(chan struct{}, 1), want: want} }

func newStream() *outbox {
	return &outbox{wake: make(chan struct{}, 1), stream: true, max: maxWaiting}
}

func (o *outbox) signal() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// push gives msg to the client; answer says it answers one of the POST's
// requests.
func (o *outbox) push(msg []byte, answer bool) {
	o.mu.Lock()
	if o.closed || o.ended {
		o.mu.Unlock()
		return
	}
	if answer && o.want > 0 {
		o.want--
	}
	ev := bridge.Event{Data: msg}
	if o.stream {
		o.seq++
		ev.ID = strconv.FormatUint(o.seq, 10)
	}
	o.evs = append(o.evs, ev)
	if o.max > 0 && len(o.evs) > o.max {
		o.lost++
		o.lostTo = max(o.lostTo, id(o.evs[0]))
		o.evs = o.evs[1:]
	}
	o.mu.Unlock()
	o.signal()
}

// end completes a GET stream (the session ended), or a POST whose
// answers can no longer come.
func (o *outbox) end() {
	o.mu.Lock()
	o.ended = true
	o.mu.Unlock()
	o.signal()
}

func (o *outbox) completeLocked() bool {
	if o.stream {
		return o.ended
	}
	return o.want == 0 || o.ended
}

func (o *outbox) ready() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.evs) > 0 || o.completeLocked()
}

// wait blocks until there is something to take, the outbox is complete,
// timeout fires (fired) or ctx ends.
func (o *outbox) wait(ctx context.Context, timeout <-chan time.Time) (fired bool, err error) {
	for !o.ready() {
		select {
		case <-o.wake:
		case <-timeout:
			return true, nil
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	return false, nil
}

// take appends what waits to buf, and says whether the outbox is
// complete with it.
func (o *outbox) take(buf []bridge.Event) ([]bridge.Event, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	buf = append(buf, o.evs...)
	if o.stream {
		o.keepLocked(o.evs)
	}
	clear(o.evs)
	o.evs = o.evs[:0]
	return buf, o.completeLocked()
}

// keepLocked keeps evs, just taken, for a resume; the oldest kept go past
// maxWaiting events or maxSentBytes.
func (o *outbox) keepLocked(evs []bridge.Event) {
	for _, ev := range evs {
		o.sent = append(o.sent, ev)
		o.sentBytes += len(ev.Data)
	}
	drop := 0
	for len(o.sent)-drop > maxWaiting || o.sentBytes > maxSentBytes && drop < len(o.sent) {
		o.sentBytes -= len(o.sent[drop].Data)
		drop++
	}
	if drop > 0 {
		clear(o.sent[:drop])
		o.sent = append(o.sent[:0], o.sent[drop:]...)
	}
}

// rewind prepares a GET stream to be read again from after the event
// last (a Last-Event-ID): the events taken since go back before those
// waiting. An id the stream never gave is refused; so is one whose
// following events are no longer kept, since resuming would leave a gap.
func (o *outbox) rewind(last string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	n, err := strconv.ParseUint(last, 10, 64)
	if err != nil || n > o.seq {
		return &bridge.Error{Kind: bridge.KindInvalid, Code: bridge.CodeInvalidRequest,
			Message: "Last-Event-ID names no event of this session's GET stream: open the GET stream again without Last-Event-ID"}
	}
	oldest := o.seq + 1 // the id of the oldest event kept or waiting
	switch {
	case len(o.sent) > 0:
		oldest = id(o.sent[0])
	case len(o.evs) > 0:
		oldest = id(o.evs[0])
	}
	if n+1 < oldest || n < o.lostTo {
		return &bridge.Error{Kind: bridge.KindGone, Code: bridge.CodeEventsGone, Message: fmt.Sprintf(
			"the events after Last-Event-ID %s are no longer kept (the aggregate endpoint keeps a GET stream's last %d events and %d bytes): resuming would leave a gap; open the GET stream again without Last-Event-ID, and list again what you hold",
			last, maxWaiting, maxSentBytes)}
	}
	i := len(o.sent)
	for i > 0 && id(o.sent[i-1]) > n {
		i--
	}
	again := o.sent[i:]
	for _, ev := range again {
		o.sentBytes -= len(ev.Data)
	}
	o.evs = append(slices.Clone(again), o.evs...)
	clear(o.sent[i:])
	o.sent = o.sent[:i]
	return nil
}

// id is a GET stream's event's number.
func id(ev bridge.Event) uint64 {
	n, _ := strconv.ParseUint(ev.ID, 10, 64)
	return n
}

func (o *outbox) Await(ctx context.Context, d time.Duration) error {
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	_, err := o.wait(ctx, timeout)
	return err
}

func (o *outbox) TakeOnly() (bridge.Event, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.evs) != 1 || !o.completeLocked() {
		return bridge.Event{}, false
	}
	ev := o.evs[0]
	o.evs = o.evs[:0]
	return ev, true
}

func (o *outbox) Collect(ctx context.Context, buf []bridge.Event) ([]bridge.Event, error) {
	for final := false; !final; {
		if _, err := o.wait(ctx, nil); err != nil {
			return buf, err
		}
		buf, final = o.take(buf)
	}
	return buf, nil
}

// Begin: the aggregate's streams do not prime. A POST's events have no
// ids (its answers are its own); a GET stream's do, and a client that
// lost its connection resumes after the last it saw (rewind).
func (o *outbox) Begin(bridge.ServeOptions) (bridge.Event, bool) { return bridge.Event{}, false }

func (o *outbox) Next(ctx context.Context, tick <-chan time.Time, buf []bridge.Event) ([]bridge.Event, bool, error) {
	fired, err := o.wait(ctx, tick)
	if err != nil || fired {
		return buf, false, err
	}
	buf, final := o.take(buf)
	return buf, final, nil
}

// Close lets go of a POST's answers: what comes after is dropped.
func (o *outbox) Close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	clear(o.evs)
	o.evs = nil
}

// getReader is one client's read of a session's GET stream: what it does
// not take waits for the next GET.
type getReader struct {
	*outbox
	once    sync.Once
	release func()
}

func (g *getReader) Close() { g.once.Do(g.release) }
