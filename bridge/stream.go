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
// an SSE event (Next) it gets an id and is kept in the session's event
// log, from which a client that lost the connection can have it again
// (Session.Resume).
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
	msgs         [][]byte // pending: not yet taken by the transport
	pendingBytes int
	want         int  // responses still owed (POST streams)
	final        bool // nothing more will be appended
	attached     bool // a client is reading it
	// jsonOnly: the client takes one JSON body, so only responses may be
	// put here; anything else is routed elsewhere.
	jsonOnly bool
	wake     chan struct{} // capacity 1: "something changed"
	gone     chan struct{} // closed when the current client lets go (Detach)
	cut      func()        // drops the current connection (SetCut)
	behind   bool          // cut for falling behind; the client may resume

	// Guarded by the session's logMu.
	seq     int64       // number of the last event given an id; the priming event is 0
	kept    []keptEvent // this stream's events still in the session's log, oldest first
	evicted int64       // number of the last event that aged out of the log
	cursor  int64       // number of the next event the current client needs
}

type keptEvent struct {
	n    int64
	data []byte
}

// Event is one SSE event: a message and its id ("" for none).
type Event struct {
	ID   string
	Data []byte
}

// newStream is called with the session's lock held.
func newStream(s *Session, get bool, want int, jsonOnly bool) *Stream {
	st := &Stream{sess: s, id: s.b.streamIDs.Add(1), get: get, want: want, jsonOnly: jsonOnly,
		resumable: !jsonOnly && !s.stateless, attached: true, cursor: 1,
		wake: make(chan struct{}, 1), gone: make(chan struct{})}
	s.trackLocked(st)
	return st
}

// Primes reports whether the stream opens with a priming event (an id
// and empty data): only for resumable streams of sessions that negotiated
// 2025-11-25 or later, whose clients expect it; older clients crash on
// empty data.
func (st *Stream) Primes() bool {
	return st.resumable && !st.init && VersionAtLeast(st.sess.Version(), "2025-11-25")
}

// PrimeID is the id for a priming event on the current connection: that
// of the last event the client has, so that resuming from it misses
// nothing.
func (st *Stream) PrimeID() string {
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

// push appends msg (nil: nothing to append). response marks it as one of
// the responses owed. It reports whether the stream is now final. Called
// with the session's lock held.
//
// A message for a stream nobody reads goes straight to the session's log,
// where a resuming client finds it; that keeps what a gone client is owed
// within the log's bounds. A stream whose reader falls more than the
// stream buffer behind is cut: its connection is dropped, and the client
// may resume from the log.
func (st *Stream) push(msg []byte, response bool) bool {
	var cut func()
	st.mu.Lock()
	if msg != nil {
		if !st.attached && st.resumable && !st.get {
			st.sess.logMu.Lock()
			st.sess.commitLocked(st, msg)
			st.sess.logMu.Unlock()
		} else {
			st.msgs = append(st.msgs, msg)
			st.pendingBytes += len(msg)
			cfg := &st.sess.b.cfg
			if st.attached && st.cut != nil && !st.behind && len(st.msgs) > 1 &&
				(len(st.msgs) > cfg.StreamBufferEvents || st.pendingBytes > cfg.StreamBufferBytes) {
				st.behind = true
				cut = st.cut
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
	n, size := len(st.msgs), st.pendingBytes
	st.mu.Unlock()
	if cut != nil {
		st.sess.b.stats.StreamsCut.Add(1)
		st.sess.log.Warn("a client fell behind on its stream; dropped the connection (it can resume with Last-Event-ID)",
			"stream", st.id, "pending_events", n, "pending_bytes", size)
		cut()
	}
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

// SetCut registers how to drop the connection that reads the stream, for
// a reader that falls behind (see push). It must not block or call back
// into the bridge. Detach forgets it.
func (st *Stream) SetCut(cut func()) {
	st.mu.Lock()
	st.cut = cut
	st.mu.Unlock()
}

// Wait blocks until the stream has messages or is final, ctx ends (its
// error is returned) or timeout fires (then it returns nil with nothing to
// take). A nil timeout never fires.
func (st *Stream) Wait(ctx context.Context, timeout <-chan time.Time) error {
	for {
		st.mu.Lock()
		ready := len(st.msgs) > 0 || st.final || st.behind
		st.mu.Unlock()
		if ready || st.replaying() {
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

// replaying reports whether the current client still needs events from the
// log (after Resume).
func (st *Stream) replaying() bool {
	st.sess.logMu.Lock()
	defer st.sess.logMu.Unlock()
	return st.cursor <= st.seq
}

// Take removes the pending messages, appending them to buf, and reports
// whether the stream is complete (final and drained). What Take returns
// gets no id and is not logged: it is for a client that takes one JSON
// body, or a transport without resumption.
func (st *Stream) Take(buf [][]byte) ([][]byte, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	buf = append(buf, st.msgs...)
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
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.final || len(st.msgs) != 1 || st.replaying() {
		return nil, false
	}
	m := st.msgs[0]
	st.clearLocked()
	st.letGoLocked()
	return m, true
}

// letGoLocked records that the stream's client has stopped reading it,
// having got everything (the stream is complete) or having gone.
func (st *Stream) letGoLocked() {
	st.attached = false
	st.cut = nil
	if st.gone != nil {
		close(st.gone)
		st.gone = nil
	}
}

func (st *Stream) clearLocked() {
	clear(st.msgs)
	st.msgs = st.msgs[:0]
	st.pendingBytes = 0
}

// Next takes what the client is to get now as SSE events, appending them
// to buf: first the events a resuming client missed, from the log, then
// the pending messages, which get ids and go to the log (on a resumable
// stream). It reports whether the stream is complete. A stream cut for
// falling behind reports ErrStreamBehind: the transport drops the
// connection, and the client may resume.
func (st *Stream) Next(buf []Event) ([]Event, bool, error) {
	s := st.sess
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.behind {
		return buf, false, ErrStreamBehind
	}
	s.logMu.Lock()
	if st.cursor <= st.seq { // resumed: the events the client missed first
		for _, k := range st.kept {
			if k.n >= st.cursor {
				buf = append(buf, Event{ID: st.eventID(k.n), Data: k.data})
			}
		}
	}
	for i, m := range st.msgs {
		id := ""
		if st.resumable {
			id = st.eventID(s.commitLocked(st, m))
		}
		buf = append(buf, Event{ID: id, Data: m})
		st.msgs[i] = nil
	}
	st.cursor = st.seq + 1
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
func (st *Stream) Detach() {
	st.sess.detach(st)
}

// Pending reports how many messages are queued and not yet taken.
func (st *Stream) Pending() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.msgs)
}

// ID is the stream's id, the part of its event ids before "_".
func (st *Stream) ID() int64 { return st.id }

// commitLocked gives msg the stream's next event number and keeps it in
// the session's log, evicting the oldest events of the session over the
// log's bounds. Called with s.logMu held.
func (s *Session) commitLocked(st *Stream, msg []byte) int64 {
	st.seq++
	st.kept = append(st.kept, keptEvent{n: st.seq, data: msg})
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
	}
	if s.orderHead > 64 && s.orderHead*2 > len(s.order) {
		n := copy(s.order, s.order[s.orderHead:])
		clear(s.order[n:])
		s.order = s.order[:n]
		s.orderHead = 0
	}
	return st.seq
}
