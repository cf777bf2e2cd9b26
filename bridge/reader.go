package bridge

import (
	"context"
	"time"
)

// The transport seam: what a transport (httpapi's Streamable HTTP, its
// 2026-07-28 requests and the legacy HTTP+SSE endpoints) serves, in
// interfaces narrow enough that something else can stand behind them. A
// Bridge stands behind them through ServerOf; so could a server made of
// several bridges, with a session of its own that holds one session per
// bridge, and readers that merge theirs.
//
//   - Server: starts and finds sessions, serves a stateless request and a
//     2026-07-28 one.
//   - Conn: one session: send to it, open or resume its GET stream,
//     close it, its id and version.
//   - Reader: what goes back to a client for one request or stream, read
//     with one pull interface (Source) by one loop (Pump), or taken as one
//     JSON body (Await, TakeOnly, Collect).
//   - Call: a 2026-07-28 request's Reader, with what its transport
//     reports of it.

// Server is what a transport serves.
type Server interface {
	// Initialize starts a session with a client's initialize request;
	// the Reader carries the InitializeResult.
	Initialize(ctx context.Context, req InitRequest) (Conn, Reader, error)
	// Conn finds the live session id of owner's, else ErrSessionNotFound.
	Conn(id, owner string) (Conn, error)
	// Stateless gives a session for one stateless request (Close it once
	// the request is answered), and the answer of an initialize, which
	// needs no child.
	Stateless(ctx context.Context, msg *Message) (Conn, []byte, error)
	// Modern serves a 2026-07-28 request (nil, nil for a notification).
	Modern(ctx context.Context, req ModernRequest) (Call, error)
}

// Conn is one session, as a transport uses it.
type Conn interface {
	ID() string
	// Version is the protocol version negotiated at initialize.
	Version() string
	// Alive reports whether the session still exists: a transport hands
	// out its id only while it does.
	Alive() bool
	// Send forwards a client's messages; the Reader carries the answers
	// (nil when there is no request among them).
	Send(msgs []Message, jsonOnly bool) (Reader, error)
	// Open opens the session's GET stream; Resume reattaches the stream
	// a Last-Event-ID names.
	Open() (Reader, error)
	Resume(lastEventID string) (Reader, error)
	// Close ends the session (DELETE).
	Close()
	// Done is closed once the session has ended.
	Done() <-chan struct{}
}

// Holder is what a transport needs of a Conn to hold one of its client's
// calls before it sends it (a call waiting for a human's approval), asking
// the client meanwhile. A Conn that is not one cannot have its client
// asked. It is apart from Conn so that another Conn need not be one.
type Holder interface {
	// ElicitsForm reports whether the client declared form elicitation
	// at initialize: whether it may be sent an elicitation/create of the
	// transport's own.
	ElicitsForm() bool
	// Hold keeps the session alive as if the held call were in flight
	// (no idle or unreachable expiry), until release.
	Hold() (release func())
}

// Source is what Pump reads: events, as they come.
type Source interface {
	// Begin says an SSE writer reads the source from now on, framed as o
	// says, and returns the priming event to write first, if the source
	// primes: its cut is registered only once that is out.
	Begin(o ServeOptions) (prime Event, primes bool)
	// Next waits until there is something for the client, ctx ends (its
	// error) or tick fires (nothing, not final: a keep-alive is due), and
	// takes it, appended to buf, with whether the source is complete. An
	// error ends the connection: the client fell behind, or went.
	Next(ctx context.Context, tick <-chan time.Time, buf []Event) ([]Event, bool, error)
}

// Reader is what goes back to a client for one request, or on a stream.
// A transport reads it with one call: Pump (SSE), Collect (one JSON body),
// or Await, then TakeOnly or Pump. Close lets go of it, once the client
// has what it gets, or is gone; it may be called more than once.
type Reader interface {
	Source
	// Await waits up to d (d <= 0: for as long as it takes) for the first
	// message or the end, so that the transport can choose how to answer.
	// An *Error answers the request with its own status (while nothing
	// has been written); ctx's end is the client gone.
	Await(ctx context.Context, d time.Duration) error
	// TakeOnly takes the final message if it is all there is: an answer
	// that can go out as a plain JSON body.
	TakeOnly() (Event, bool)
	// Collect gathers what answers the request, for a client that takes
	// one JSON body (an error as Await's).
	Collect(ctx context.Context, buf []Event) ([]Event, error)
	Close()
}

// Call is a 2026-07-28 request's Reader, with what its transport learns
// of it.
type Call interface {
	Reader
	// Listen reports whether it is a subscriptions/listen, whose answer is
	// a stream for as long as its client keeps it.
	Listen() bool
	// Exchange names the MRTR exchange it is a round of ("" for none),
	// and InputRequired says its answer was input_required: for the audit
	// log, once the final message is given.
	Exchange() string
	InputRequired() bool
}

// ServeOptions say how a transport frames a Source for Pump.
type ServeOptions struct {
	// KeepAlive, when positive, is how long the source may be quiet
	// before Pump emits an empty batch, which the transport writes as a
	// keep-alive. Zero: no keep-alives.
	KeepAlive time.Duration
	// MaxDuration, when positive, ends the connection after that long
	// without ending the stream, on a stream that primes (2025-11-25: "the
	// server MAY close the connection without terminating the SSE
	// stream"): the client reconnects after the priming event's retry,
	// with Last-Event-ID, and gets the rest.
	MaxDuration time.Duration
	// Cut drops the transport's connection, from another goroutine, when
	// its client falls so far behind that events it has not read age out
	// of the session's log (see Stream.push). It must not block or call
	// back into the bridge. Nil: the connection is never cut; the client
	// still learns what it lost when it resumes.
	Cut func()
	// Plain is for a transport without event ids or resumption (the
	// 2024-11-05 HTTP+SSE transport): no priming event, and events get no
	// ids, so a GET stream's messages do not go to the log either.
	Plain bool
}

// Pump writes a source to its client through emit until it is complete
// (nil), ctx ends, emit fails, or the source fails (a stream's client
// fell so far behind that events it had not read aged out:
// ErrStreamBehind). It is the one loop of every SSE answer, in every
// transport, and the one place where the calling order is written down:
//
//  1. On a source that primes, the priming event, emitted on its own and
//     before the reader is registered: a burst that outran it could
//     otherwise cut the connection before the client had an id to resume
//     from. It is an Event with an ID and no Data.
//  2. The reader is registered with its Cut (the source's first Next).
//  3. Events, in batches as they come; an empty batch after KeepAlive of
//     quiet; MaxDuration ends the connection.
//
// emit writes one batch and pushes it to the client (an SSE event held in
// a buffer is an event late); Pump does not keep the events after it
// returns. Pump does not let go of the source: its caller closes it.
func Pump(ctx context.Context, src Source, o ServeOptions, emit func([]Event) error) error {
	prime, primes := src.Begin(o)
	if primes {
		if err := emit([]Event{prime}); err != nil {
			return err
		}
	}
	var tick <-chan time.Time
	if o.KeepAlive > 0 {
		t := time.NewTicker(o.KeepAlive)
		defer t.Stop()
		tick = t.C
	}
	if primes && o.MaxDuration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.MaxDuration)
		defer cancel()
	}
	var evs []Event
	for {
		var final bool
		var err error
		if evs, final, err = src.Next(ctx, tick, evs[:0]); err != nil {
			return err
		}
		// An empty batch that is not the end: tick fired, a keep-alive.
		if len(evs) > 0 || !final {
			err := emit(evs)
			clear(evs) // a big message is not held until the next batch
			if err != nil {
				return err
			}
		}
		if final {
			return nil
		}
	}
}

// waitWake blocks until ready holds, ctx ends (its error is returned) or
// timeout fires (fired true); wake is signalled whenever ready may have
// come true. A nil timeout never fires. (A Stream's wait, a box's.)
func waitWake(ctx context.Context, wake <-chan struct{}, timeout <-chan time.Time, ready func() bool) (fired bool, err error) {
	for !ready() {
		select {
		case <-wake:
		case <-timeout:
			return true, nil
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	return false, nil
}

// timer fires once, after the duration it was made with (the zero timer,
// or one made for d <= 0, never fires). A value, so that a wait that ends
// after a while costs the time.Timer only.
type timer struct{ t *time.Timer }

// after is a timer that fires once d has passed.
func after(d time.Duration) timer {
	if d <= 0 {
		return timer{}
	}
	return timer{time.NewTimer(d)}
}

// c is the channel the timer fires on (nil, never ready, if it never
// fires).
func (t timer) c() <-chan time.Time {
	if t.t == nil {
		return nil
	}
	return t.t.C
}

// stop lets the timer go.
func (t timer) stop() {
	if t.t != nil {
		t.t.Stop()
	}
}

// ServerOf is b as a transport serves it.
func ServerOf(b *Bridge) Server { return bridgeServer{b} }

type bridgeServer struct{ b *Bridge }

func (x bridgeServer) Initialize(ctx context.Context, req InitRequest) (Conn, Reader, error) {
	s, st, err := x.b.Initialize(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	return sessionConn{s}, st.read(), nil
}

func (x bridgeServer) Conn(id, owner string) (Conn, error) {
	s, err := x.b.Session(id, owner)
	if err != nil {
		return nil, err
	}
	return sessionConn{s}, nil
}

func (x bridgeServer) Stateless(ctx context.Context, msg *Message) (Conn, []byte, error) {
	s, answer, err := x.b.Stateless(ctx, msg)
	if err != nil {
		return nil, nil, err
	}
	return sessionConn{s}, answer, nil
}

func (x bridgeServer) Modern(ctx context.Context, req ModernRequest) (Call, error) {
	mc, err := x.b.Modern(ctx, req)
	if mc == nil {
		return nil, err // not a nil *ModernCall in a non-nil Call
	}
	return mc, err
}

// sessionConn is a Session as a Conn: its streams as Readers.
type sessionConn struct{ *Session }

func (c sessionConn) Send(msgs []Message, jsonOnly bool) (Reader, error) {
	st, err := c.Session.Send(msgs, jsonOnly)
	if st == nil {
		return nil, err // no request among them: no reader
	}
	return st.read(), err
}

func (c sessionConn) Open() (Reader, error) { return readerOf(c.OpenStream()) }

func (c sessionConn) Resume(lastEventID string) (Reader, error) {
	return readerOf(c.Session.Resume(lastEventID))
}

func readerOf(st *Stream, err error) (Reader, error) {
	if err != nil {
		return nil, err
	}
	return st.read(), nil
}

// streamReader is one client's read of a Stream: a resume may give the
// stream to the next client while this one is still letting go, and what
// this one does then must not reach the next (release).
type streamReader struct {
	st    *Stream
	r     uint64 // the reader it is (Stream.reader)
	plain bool   // Begin's ServeOptions.Plain
	cut   func() // Begin's ServeOptions.Cut, registered on the first Next
	armed bool   // the cut is registered
}

// read is st as its current client reads it.
func (st *Stream) read() *streamReader {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.first.st == nil {
		st.first = streamReader{st: st, r: st.reader}
		return &st.first
	}
	return &streamReader{st: st, r: st.reader}
}

func (x *streamReader) Await(ctx context.Context, d time.Duration) error {
	t := after(d)
	defer t.stop()
	if err := x.st.wait(ctx, t.c()); err != nil {
		x.Close()
		return err
	}
	return nil
}

func (x *streamReader) TakeOnly() (Event, bool) { return x.st.takeOnly() }

func (x *streamReader) Collect(ctx context.Context, buf []Event) ([]Event, error) {
	for final := false; !final; {
		if err := x.st.wait(ctx, nil); err != nil {
			x.Close()
			return buf, err
		}
		buf, final = x.st.takeEvents(buf)
	}
	return buf, nil
}

func (x *streamReader) Begin(o ServeOptions) (Event, bool) {
	x.plain, x.cut = o.Plain, o.Cut
	if !o.Plain && x.st.primes() {
		return Event{ID: x.st.primeID()}, true
	}
	return Event{}, false
}

func (x *streamReader) Next(ctx context.Context, tick <-chan time.Time, buf []Event) ([]Event, bool, error) {
	if !x.armed {
		x.armed = true
		x.st.setCut(x.cut)
	}
	if err := x.st.wait(ctx, tick); err != nil {
		return buf, false, err
	}
	return x.st.events(buf, x.plain)
}

// Close lets go of the stream if this client still reads it: one that got
// everything has let go already, and a resume may have given the stream
// to the next one since. What it owes stays with the session.
func (x *streamReader) Close() { x.st.release(x.r) }
