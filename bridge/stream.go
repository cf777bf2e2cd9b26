package bridge

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// Stream is the way back to a client: the stream of one POST (the
// responses to the requests it carried, and whatever relates to them) or a
// session's GET stream (server-initiated messages). The router appends and
// never blocks; the transport takes what is there and writes it.
//
// Each message the child writes lands on exactly one Stream.
type Stream struct {
	sess *Session
	id   int64 // unique within the session
	get  bool  // the session's GET stream
	init bool  // carries the InitializeResult: no priming, as the client knows no version yet

	mu       sync.Mutex
	msgs     [][]byte
	want     int  // responses still owed (POST streams)
	final    bool // nothing more will be appended
	attached bool // a client is reading it
	// jsonOnly: the client takes one JSON body, so only responses may be
	// put here; anything else is routed elsewhere.
	jsonOnly bool
	wake     chan struct{} // capacity 1: "something changed"
	gone     chan struct{} // closed when the current client lets go (Detach)
	events   int64         // SSE events written so far, for event ids
}

// newStream is called with the session's lock held.
func newStream(s *Session, get bool, want int, jsonOnly bool) *Stream {
	s.streams++
	return &Stream{sess: s, id: s.streams, get: get, want: want, jsonOnly: jsonOnly, attached: true,
		wake: make(chan struct{}, 1), gone: make(chan struct{})}
}

// EventIDs reports whether SSE events of this stream carry ids: only for
// sessions that negotiated 2025-11-25 or later, whose clients handle the
// priming event (an id with empty data) that opens such a stream; older
// clients crash on empty data.
func (st *Stream) EventIDs() bool {
	return !st.init && VersionAtLeast(st.sess.Version(), "2025-11-25")
}

// NextEventID returns the id of the stream's next SSE event. Ids name
// their stream ("<stream>_<n>"), as 2025-11-25 asks, so a Last-Event-ID
// leads back to the stream it came from.
func (st *Stream) NextEventID() string {
	st.mu.Lock()
	n := st.events
	st.events++
	st.mu.Unlock()
	return strconv.FormatInt(st.id, 10) + "_" + strconv.FormatInt(n, 10)
}

func (st *Stream) signal() {
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// push appends msg (nil: nothing to append). response marks it as one of
// the responses owed. It reports whether the stream is now final.
func (st *Stream) push(msg []byte, response bool) bool {
	st.mu.Lock()
	if msg != nil {
		st.msgs = append(st.msgs, msg)
	}
	if response {
		st.want--
		if st.want <= 0 && !st.get {
			st.final = true
		}
	}
	final := st.final
	st.mu.Unlock()
	st.signal()
	return final
}

// finish marks the stream as complete: nothing more will come.
func (st *Stream) finish() {
	st.mu.Lock()
	st.final = true
	st.mu.Unlock()
	st.signal()
}

// canCarry reports whether non-response messages may be routed here.
// Called with the session's lock held.
func (st *Stream) canCarry() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.attached && !st.jsonOnly && !st.final
}

// Wait blocks until the stream has messages or is final, ctx ends (its
// error is returned) or timeout fires (then it returns nil with nothing to
// take). A nil timeout never fires.
func (st *Stream) Wait(ctx context.Context, timeout <-chan time.Time) error {
	for {
		st.mu.Lock()
		ready := len(st.msgs) > 0 || st.final
		st.mu.Unlock()
		if ready {
			return nil
		}
		select {
		case <-st.wake:
		case <-timeout:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Take removes the queued messages, appending them to buf, and reports
// whether the stream is complete (final and drained).
func (st *Stream) Take(buf [][]byte) ([][]byte, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	buf = append(buf, st.msgs...)
	clear(st.msgs)
	st.msgs = st.msgs[:0]
	return buf, st.final
}

// Detach says the client stopped reading (it went away). In the
// 2025-era protocol that is not a cancellation: the requests go on, and
// their responses stay on this stream, kept for the session rather than
// sent anywhere else. Messages of a GET stream that were not taken go back
// to the session's queue.
func (st *Stream) Detach() {
	st.sess.detach(st)
}

// Pending reports how many messages are queued and not yet taken.
func (st *Stream) Pending() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.msgs)
}
