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
// Each message the child writes lands on exactly one Stream. A message
// waits on the Stream ("pending") until the transport takes it; taken as
// an SSE event it gets an id and is kept in the session's event log, from
// which a client that lost the connection can have it again
// (Session.Resume).
//
// A transport reads a Stream as every Reader (reader.go): Pump writes it
// as SSE; Collect gathers the responses for one JSON body; Await, then
// TakeOnly or Pump, is the choice between the two. Each of them lets go
// of the stream if the client leaves. Detach lets go without reading; it
// may be called again, and after the others.
type Stream struct {
	sess *Session
	id   int64 // unique within the bridge, so an id of one session names nothing in another
	get  bool  // the session's GET stream
	init bool  // carries the InitializeResult: no priming, as the client knows no version yet
	// resumable: its events get ids and go to the session's log. Every
	// stream but one whose client takes a single JSON body, or one of a
	// stateless request, which no GET can name.
	resumable bool

	mu           sync.Mutex
	msgs         []waiting // not yet numbered or taken by the transport
	pendingBytes int
	want         int  // responses still owed (POST streams)
	final        bool // nothing more will be appended
	attached     bool // a client is reading it
	// reader counts the clients that have read the stream (one at a
	// time; a resume is the next): a reader that lets go when it is done
	// never lets go of the one after it.
	reader uint64
	// sse: a transport's reader loop reads it (setCut), so what comes for
	// a POST stream goes straight to the log, numbered, however far behind
	// the reader is.
	sse bool
	// jsonOnly: the client takes one JSON body, so only responses may be
	// put here; anything else is routed elsewhere.
	jsonOnly bool
	wake     chan struct{} // capacity 1: "something changed"
	gone     chan struct{} // closed when the current client lets go (Detach)
	// first is the first client's read of the stream (read), made with
	// it: the usual stream, read once, costs no allocation for it.
	first streamReader

	// Guarded by the session's logMu.
	seq     int64       // number of the last event given an id; the priming event is 0
	kept    []keptEvent // this stream's events still in the session's log, numbers evicted+1..seq
	evicted int64       // number of the last event that aged out of the log
	cursor  int64       // number of the next event the current client needs
	cut     func()      // drops the current connection (setCut)
	behind  bool        // the client lost events it had not read: its connection is cut
}

type keptEvent struct {
	n    int64
	data []byte
	mark mark
}

// waiting is a message of a stream that waits for its reader, with what
// the bridge read of it.
type waiting struct {
	data []byte
	mark mark
}

// Event is one SSE event: a message and its id ("" for none). The
// priming event, which Pump emits first on a source that primes, has an
// ID and no Data (a message is never empty). What the bridge read of the
// message on its way (Reply) goes with it, so that a transport need not
// read it again.
type Event struct {
	ID   string
	Data []byte
	read uint8 // readUnknown, readOther or readReply
	rep  Reply // with readReply
}

// What an Event says of its message.
const (
	readUnknown uint8 = iota // nothing: Reply reads the message
	readOther                // no response
	readReply                // a response: rep
)

// Reply is what answers a request in the event's message, if it is a
// response: from what the bridge read of it on its way, or, when it did
// not read it, from the message (ReplyOf).
func (e Event) Reply() (Reply, bool) {
	switch e.read {
	case readOther:
		return Reply{}, false
	case readReply:
		return e.rep, true
	}
	return ReplyOf(e.Data)
}

// mark is what the bridge read of a message a stream keeps: whether it is
// a response, its id's place in it, and its error code, so that the event
// it becomes carries its Reply. The zero mark says nothing.
type mark struct {
	read uint8 // as Event's
	err  bool
	code int32
	id   [2]int32
}

// markOther marks a message that is no response.
var markOther = mark{read: readOther}

// markOf marks msg, a response whose id is at id, with the error code
// code (0 for a result).
func markOf(id span, errs bool, code int) mark {
	return mark{read: readReply, err: errs, code: int32(code), id: [2]int32{int32(id.start), int32(id.end)}}
}

// event is the Event of msg, marked mk, with the event id id.
func event(id string, msg []byte, mk mark) Event {
	ev := Event{ID: id, Data: msg, read: mk.read}
	if mk.read == readReply && int(mk.id[1]) <= len(msg) {
		ev.rep = Reply{ID: msg[mk.id[0]:mk.id[1]], Error: mk.err, Code: int(mk.code)}
	}
	return ev
}

// newStream is called with the session's lock held.
func newStream(s *Session, get bool, want int, jsonOnly bool) *Stream {
	st := &Stream{sess: s, id: s.b.streamIDs.Add(1), get: get, want: want, jsonOnly: jsonOnly,
		resumable: !jsonOnly && !s.stateless, attached: true, reader: 1, cursor: 1,
		wake: make(chan struct{}, 1), gone: make(chan struct{})}
	s.trackLocked(st)
	return st
}

// primes reports whether the stream opens with a priming event (an id
// and empty data): only for resumable streams of sessions that negotiated
// 2025-11-25 or later, whose clients expect it; older clients crash on
// empty data.
func (st *Stream) primes() bool {
	return st.resumable && !st.init && VersionAtLeast(st.sess.Version(), "2025-11-25")
}

// primeID is the id for a priming event on the current connection: that
// of the last event the client has, so that resuming from it misses
// nothing.
func (st *Stream) primeID() string {
	st.sess.logMu.Lock()
	defer st.sess.logMu.Unlock()
	return st.eventID(st.cursor - 1)
}

// eventID names event n of the stream: "<stream>_<n>". Ids name their
// stream, as 2025-11-25 asks, so a Last-Event-ID leads back to it.
func (st *Stream) eventID(n int64) string {
	b := make([]byte, 0, 24)
	b = strconv.AppendInt(b, st.id, 10)
	b = append(b, '_')
	return string(strconv.AppendInt(b, n, 10))
}

func (st *Stream) signal() {
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// Spilling: a POST stream's pending messages go to the log, numbered,
// once they are this many or this big, even before an SSE writer reads
// the stream (the transport may hold a response for up to --sse-delay
// before it decides between JSON and SSE).
const (
	spillEvents = 64
	spillBytes  = 256 << 10
)

// push appends msg (nil: nothing to append). response marks it as one of
// the responses owed. It reports whether the stream is now final. Called
// with the session's lock held.
//
// Nothing here waits for a reader. A POST stream's messages go to the
// session's event log, numbered, as soon as an SSE writer reads the
// stream, or its client has left, or too many wait: the log's bounds are
// then the stream's, and a reader that falls so far behind that an event
// it has not read ages out is cut off (commitLocked), to learn on resume
// that the events are gone. A GET stream keeps its messages pending until
// its reader takes them (if the client leaves they go back to the
// session's queue, for whichever stream opens next), and a reader more
// than the log's bounds behind is cut off too.
func (st *Stream) push(msg []byte, response bool) bool { return st.pushMarked(msg, mark{}, response) }

// pushMarked is push, with what the bridge read of msg.
func (st *Stream) pushMarked(msg []byte, mk mark, response bool) bool {
	s := st.sess
	st.mu.Lock()
	if msg != nil {
		cfg := &s.b.cfg
		logged := st.resumable && !st.get
		switch {
		case !st.attached && !st.resumable:
			// A client that wanted one JSON body, or a stateless request,
			// and left: no one can ask for it again.
			s.log.Debug("dropped a message for a client that left", "stream", st.id)
		case logged && (!st.attached || st.sse || len(st.msgs) > 0 &&
			(len(st.msgs) >= min(spillEvents, cfg.EventLogEvents) ||
				st.pendingBytes+len(msg) > min(spillBytes, cfg.EventLogBytes))):
			// (One message alone waits whatever its size: a response that
			// may go out as a plain JSON body.)
			s.logMu.Lock()
			st.spillLocked()
			s.commitLocked(st, msg, mk, false)
			s.logMu.Unlock()
		default:
			st.msgs = append(st.msgs, waiting{msg, mk})
			st.pendingBytes += len(msg)
			if !logged && (len(st.msgs) > cfg.EventLogEvents || st.pendingBytes > cfg.EventLogBytes) {
				s.logMu.Lock()
				s.behindLocked(st)
				s.logMu.Unlock()
			}
		}
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

// spillLocked moves the pending messages to the log, in order. Called
// with st.mu and the session's logMu held.
func (st *Stream) spillLocked() {
	for _, m := range st.msgs {
		st.sess.commitLocked(st, m.data, m.mark, false)
	}
	st.clearLocked()
}

// behindLocked cuts off the client of st, which has fallen too far
// behind: its connection is dropped, and when it resumes it learns what
// it can still have. Called with the session's logMu held.
func (s *Session) behindLocked(st *Stream) {
	if st.cut == nil || st.behind {
		return
	}
	st.behind = true
	s.b.stats.StreamsCut.Add(1)
	s.log.Warn("a client fell too far behind on its stream; dropped the connection (it may resume with Last-Event-ID)",
		"stream", st.id, "event_log_events", s.b.cfg.EventLogEvents, "event_log_bytes", s.b.cfg.EventLogBytes)
	st.cut()
}

// finish marks the stream as complete: nothing more will come.
func (st *Stream) finish() {
	st.mu.Lock()
	st.final = true
	st.mu.Unlock()
	st.signal()
}

// canCarry reports whether messages that relate to no request may be
// routed here: only while a client reads it. Called with the session's
// lock held.
func (st *Stream) canCarry() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.attached && !st.jsonOnly && !st.final
}

// canKeep reports whether a message that relates to this stream's request
// (its progress) may be put here: while a client reads it, or, for a
// resumable stream, while one may come back for it. Called with the
// session's lock held.
func (st *Stream) canKeep() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return (st.attached || st.resumable) && !st.jsonOnly && !st.final
}

// setCut says a transport's reader loop now reads the stream, and how to
// drop its connection if it falls too far behind (see push). It must not
// block or call back into the bridge. Until then nothing is cut: a reader
// that lost events before it began learns it from next. The reader
// letting go forgets it.
func (st *Stream) setCut(cut func()) {
	st.mu.Lock()
	st.sse = true
	st.mu.Unlock()
	st.sess.logMu.Lock()
	st.cut = cut
	st.sess.logMu.Unlock()
}

// wait blocks until the stream has something to take or is final, ctx
// ends (its error is returned) or timeout fires (then it returns nil with
// nothing to take). A nil timeout never fires.
func (st *Stream) wait(ctx context.Context, timeout <-chan time.Time) error {
	_, err := st.waitFired(ctx, timeout)
	return err
}

// waitFired is wait that also reports whether it was timeout that ended
// it: wait takes the timer's one value, so a caller that must tell a
// timeout from messages it then drops cannot read the channel after it.
func (st *Stream) waitFired(ctx context.Context, timeout <-chan time.Time) (bool, error) {
	return waitWake(ctx, st.wake, timeout, st.ready)
}

// ready reports whether the stream has something to take or is final.
func (st *Stream) ready() bool {
	st.mu.Lock()
	ready := len(st.msgs) > 0 || st.final
	st.mu.Unlock()
	return ready || st.unread()
}

// unread reports whether the log holds events the current client has not
// taken, or the client has been cut off.
func (st *Stream) unread() bool {
	st.sess.logMu.Lock()
	defer st.sess.logMu.Unlock()
	return st.cursor <= st.seq || st.behind
}

// unreadLocked returns the logged events the client has not taken, from
// the cursor on, and moves the cursor past them. The caller has checked
// that none has aged out. Called with the session's logMu held.
func (st *Stream) unreadLocked() []keptEvent {
	var unread []keptEvent
	if st.cursor <= st.seq && len(st.kept) > 0 {
		unread = st.kept[max(0, st.cursor-st.kept[0].n):]
	}
	st.cursor = st.seq + 1
	return unread
}

// take takes what the client is to get now, appending it to buf, and
// reports whether the stream is complete (final and drained). What take
// returns gets no event id: it is for a client that takes one JSON body.
func (st *Stream) take(buf [][]byte) ([][]byte, bool) {
	evs, final := st.takeEvents(nil)
	for _, ev := range evs {
		buf = append(buf, ev.Data)
	}
	return buf, final
}

// takeEvents is take, for a Reader: the messages with what the bridge
// read of them.
func (st *Stream) takeEvents(buf []Event) ([]Event, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.sess.logMu.Lock()
	for _, k := range st.unreadLocked() {
		buf = append(buf, event("", k.data, k.mark))
	}
	st.sess.logMu.Unlock()
	for _, m := range st.msgs {
		buf = append(buf, event("", m.data, m.mark))
	}
	st.clearLocked()
	if st.final {
		st.letGoLocked()
	}
	return buf, st.final
}

// TakeOnly takes the stream's single message if the stream is complete
// with it: a response that can go out as a plain JSON body. Otherwise it
// takes nothing.
func (st *Stream) TakeOnly() ([]byte, bool) {
	ev, ok := st.takeOnly()
	return ev.Data, ok
}

// takeOnly is TakeOnly, for a Reader.
func (st *Stream) takeOnly() (Event, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.final || len(st.msgs) != 1 || st.unread() {
		return Event{}, false
	}
	ev := event("", st.msgs[0].data, st.msgs[0].mark)
	st.clearLocked()
	st.letGoLocked()
	return ev, true
}

// letGoLocked records that the stream's client has stopped reading it,
// having got everything (the stream is complete) or having gone.
func (st *Stream) letGoLocked() {
	st.attached = false
	st.sse = false
	if st.gone != nil {
		close(st.gone)
		st.gone = nil
	}
	st.sess.logMu.Lock()
	st.cut = nil
	st.sess.logMu.Unlock()
}

func (st *Stream) clearLocked() {
	clear(st.msgs)
	st.msgs = st.msgs[:0]
	st.pendingBytes = 0
}

// next takes what the client is to get now as SSE events, appending them
// to buf: the logged events it has not read (after a resume, or that went
// to the log while it was writing), then the pending messages, which get
// ids and go to the log (on a resumable stream). It reports whether the
// stream is complete. A client that has lost events, which aged out of the
// log before it read them, gets ErrStreamBehind: the transport drops the
// connection, and the client's resume is told what happened.
func (st *Stream) next(buf []Event) ([]Event, bool, error) { return st.events(buf, false) }

// events is next; plain is for a transport without event ids or
// resumption (the 2024-11-05 HTTP+SSE transport): the events get no ids,
// and the pending messages do not go to the log.
func (st *Stream) events(buf []Event, plain bool) ([]Event, bool, error) {
	s := st.sess
	st.mu.Lock()
	defer st.mu.Unlock()
	s.logMu.Lock()
	if st.behind || st.cursor <= st.evicted {
		st.behind = true
		s.logMu.Unlock()
		return buf, false, ErrStreamBehind
	}
	for _, k := range st.unreadLocked() {
		ev := event("", k.data, k.mark)
		if !plain {
			ev.ID = st.eventID(k.n)
		}
		buf = append(buf, ev)
	}
	for i, m := range st.msgs {
		ev := event("", m.data, m.mark)
		if st.resumable && !plain {
			ev.ID = st.eventID(s.commitLocked(st, m.data, m.mark, true))
		}
		buf = append(buf, ev)
		st.msgs[i] = waiting{}
	}
	s.logMu.Unlock()
	st.clearLocked()
	if st.final {
		st.letGoLocked()
	}
	return buf, st.final, nil
}

// Detach says the client stopped reading (it went away). In the
// 2025-era protocol that is not a cancellation: the requests go on, and
// their responses stay on this stream, in the session's log, for a client
// that resumes; they are never sent anywhere else. Messages of a GET
// stream that were not taken go back to the session's queue.
//
// Like the SDK's Connection.Close, it may be called more than once: a
// stream whose reader has already let go (complete, or detached) is left
// as it is. Serve, Collect and Await let go themselves when the client
// leaves; Detach is for a transport that gives up before it reads.
func (st *Stream) Detach() {
	st.sess.detach(st, 0)
}

// attachment is the stream's current reader, for release.
func (st *Stream) attachment() uint64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.reader
}

// release lets go of reader r if it still reads the stream: a reader that
// got everything has let go already, and a resume may have given the
// stream to the next one since.
func (st *Stream) release(r uint64) {
	st.sess.detach(st, r)
}

// Serve writes the stream to its client through emit, as Pump does, and
// lets go of the reader when it is done, whatever ended it: the
// responses still owed stay with the session.
func (st *Stream) Serve(ctx context.Context, o ServeOptions, emit func([]Event) error) error {
	x := st.read()
	defer x.Close()
	return Pump(ctx, x, o, emit)
}

// Collect gathers every response the stream owes, appended to buf, for a
// client that takes one JSON body. If ctx ends first it lets go of the
// reader and returns ctx's error: the responses stay with the session.
func (st *Stream) Collect(ctx context.Context, buf [][]byte) ([][]byte, error) {
	evs, err := st.read().Collect(ctx, nil)
	for _, ev := range evs {
		buf = append(buf, ev.Data)
	}
	return buf, err
}

// Await waits up to d (d <= 0: for as long as it takes) for the stream's
// first message or its completion, so that the transport can choose how
// to answer: TakeOnly for a plain JSON body, else Serve. If ctx ends
// first it lets go of the reader and returns ctx's error.
func (st *Stream) Await(ctx context.Context, d time.Duration) error {
	return st.read().Await(ctx, d)
}

// ID is the stream's id, the part of its event ids before "_".
func (st *Stream) ID() int64 { return st.id }

// commitLocked gives msg the stream's next event number and keeps it in
// the session's log, evicting the oldest events of the session over the
// log's bounds. delivered says the current client is taking it now. A
// client whose unread event ages out is cut off. Called with s.logMu
// held.
func (s *Session) commitLocked(st *Stream, msg []byte, mk mark, delivered bool) int64 {
	st.seq++
	if delivered {
		st.cursor = st.seq + 1
	}
	st.kept = append(st.kept, keptEvent{n: st.seq, data: msg, mark: mk})
	s.order = append(s.order, st)
	s.logEvents++
	s.logBytes += len(msg)
	cfg := &s.b.cfg
	// The newest event stays whatever its size: it may be the response a
	// client is waiting for.
	for s.logEvents > 1 && (s.logEvents > cfg.EventLogEvents || s.logBytes > cfg.EventLogBytes) {
		old := s.order[s.orderHead]
		s.order[s.orderHead] = nil
		s.orderHead++
		k := old.kept[0]
		old.kept[0] = keptEvent{}
		old.kept = old.kept[1:]
		old.evicted = k.n
		s.logEvents--
		s.logBytes -= len(k.data)
		s.b.stats.EventsEvicted.Add(1)
		if k.n >= old.cursor {
			s.behindLocked(old)
		}
	}
	if s.orderHead > 64 && s.orderHead*2 > len(s.order) {
		n := copy(s.order, s.order[s.orderHead:])
		clear(s.order[n:])
		s.order = s.order[:n]
		s.orderHead = 0
	}
	return st.seq
}
