package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// The legacy HTTP+SSE transport of MCP 2024-11-05, which many clients
// still speak, served next to the Streamable HTTP endpoint ("Servers
// wanting to support older clients should continue to host both the SSE
// and POST endpoints of the old transport, alongside the new MCP
// endpoint"):
//
//   - GET SSEPath opens a stream whose first event is "endpoint": "the
//     server MUST send an endpoint event containing a URI for the client
//     to use for sending messages". Every later event is a "message".
//   - POST MessagePath?sessionId=<id> answers 202; whatever the server
//     sends back (responses, notifications, its own requests) goes on the
//     one stream.
//   - Closing the stream ends the session.
//
// The session id is announced before the client has said anything, but a
// bridge session (and its child) starts with initialize, which is the
// client's first POST. So a stream is a legacyConn with an id of its own
// from the GET on, and gets its bridge session when initialize arrives.
// The bridge session's id is never shown to the client: it could otherwise
// use it on the Streamable endpoint, where a second reader of the session
// would steal this stream's messages.
//
// Inside, a legacy session is an ordinary bridge session whose streams are
// all read by the same connection: each POST's Stream and the session's
// GET Stream are drained by a pump goroutine (bridge.Pump, without event
// ids) into the conn, whose GET handler is the one writer of the SSE
// response: it reads the conn as a source of its own with the same loop.
// A pump hands over one message at a time on an unbuffered channel, so
// what a slow client has not read stays in the bridge's Streams (and a
// pump's last batch), exactly as for a slow Streamable client: the conn
// adds no buffer of its own.

// legacyInitTimeout closes a stream that still has no session this long
// after it opened. Clients send initialize as soon as they have the
// endpoint; an idle stream with no session holds a connection and is of
// no use to anyone. (A stream with a session lives as long as it is open:
// it is the session's only stream, so the idle timeout never ends it.)
const legacyInitTimeout = time.Minute

// legacy serves the two endpoints of the HTTP+SSE transport.
type legacy struct {
	h        *mcpHandler
	endpoint string // MessagePath relative to SSEPath (legacyEndpointRef)

	mu    sync.Mutex
	conns map[string]*legacyConn // by the id in the endpoint URI
}

func newLegacy(h *mcpHandler, ssePath, messagePath string) *legacy {
	return &legacy{h: h, endpoint: legacyEndpointRef(ssePath, messagePath), conns: make(map[string]*legacyConn)}
}

// legacyEndpointRef is the data of the endpoint event: messagePath as a
// path-relative reference ("message", "../message"), resolved by the
// client against the URL it opened the stream with. Behind a reverse
// proxy that serves the bridge under a prefix and strips it
// (https://example.com/tools/sse → http://bridge/sse), the client's SSE
// URL carries the prefix and so does the resolved "message"
// (https://example.com/tools/message); an absolute path ("/message") would
// drop it and miss the bridge, and an absolute URL would name the
// bridge's own address, which clients reject when its origin differs from
// the SSE URL's. The ref is computed once, from the two paths alone.
func legacyEndpointRef(ssePath, messagePath string) string {
	segs := func(p string) []string {
		p = strings.Trim(p, "/")
		if p == "" {
			return nil
		}
		return strings.Split(p, "/")
	}
	from := segs(ssePath[:strings.LastIndexByte(ssePath, '/')+1]) // the directory the client resolves against
	to := segs(messagePath)
	base := ""
	if len(to) > 0 && !strings.HasSuffix(messagePath, "/") {
		base, to = to[len(to)-1], to[:len(to)-1]
	}
	k := 0
	for k < len(from) && k < len(to) && from[k] == to[k] {
		k++
	}
	ref := strings.Repeat("../", len(from)-k)
	for _, s := range to[k:] {
		ref += s + "/"
	}
	ref += base
	if ref == "" || strings.Contains(strings.SplitN(ref, "/", 2)[0], ":") {
		// "" would resolve to the SSE URL itself, and a first segment
		// with a colon would read as a URI scheme (RFC 3986 section 4.2).
		ref = "./" + ref
	}
	return ref
}

// legacyConn is one open SSE stream of the legacy transport, and the
// session behind it once the client has initialized one.
type legacyConn struct {
	id     string
	owner  string           // auth.Principal.Key of the GET; every POST must be the same principal
	filter *auth.ToolFilter // the principal's tool filter, for every message the pumps hand over
	ctx    context.Context
	cut    func()        // drops the connection: a stream fell behind
	out    chan []byte   // pumps to the writer, unbuffered
	ended  chan struct{} // closed when the session (or its GET stream) has ended
	end    func()        // closes ended, once

	mu           sync.Mutex
	closed       bool // no more POSTs: the stream is going
	initializing bool
	sess         bridge.Conn

	// The writer's own, as it reads the conn (Next): when it gives up on
	// an initialize, the session's end it has yet to see, and the pumps
	// it waits for once the session has ended.
	log     *slog.Logger
	noInit  <-chan time.Time
	waitEnd <-chan struct{}
	drained chan struct{}

	posts sync.WaitGroup // POSTs being handled
	pumps sync.WaitGroup // pump and inject goroutines
}

// enter counts a POST being handled, unless the stream is going (then
// the answer is 404, as for a session that never existed). Every pump is
// started inside enter/leave, so once close has waited for the POSTs no
// pump can be added.
func (c *legacyConn) enter() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.posts.Add(1)
	return true
}

func (c *legacyConn) leave() { c.posts.Done() }

// close refuses new POSTs and waits for those being handled: an
// initialize in progress has then either made its session, which the
// caller ends, or failed.
func (c *legacyConn) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.posts.Wait()
}

func (c *legacyConn) session() bridge.Conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess
}

// pump moves the messages of rd, each through out, to the writer until
// rd is complete or the client has left (then rd is let go of: its
// requests go on, their answers stay with the session, which is about to
// end). For the session's GET stream, its end is the session's end.
// out.rec, if set, is the record of the POST that rd answers: the pump
// finishes it. The caller is inside enter/leave.
func (c *legacyConn) pump(rd bridge.Reader, out outbound, get bool) {
	c.pumps.Add(1)
	go func() {
		defer c.pumps.Done()
		if out.rec != nil {
			defer out.rec.finish()
		}
		if get {
			defer c.end()
		}
		// A client that does not read would let the stream's buffer grow:
		// past its bounds the connection is dropped (Cut), which ends the
		// session (the legacy transport cannot resume).
		_ = bridge.Pump(c.ctx, rd, bridge.ServeOptions{Plain: true, Cut: c.cut}, func(evs []bridge.Event) error {
			for _, ev := range evs {
				m, reply, ok := out.prepare(ev)
				select {
				case c.out <- m:
				case <-c.ctx.Done():
					return c.ctx.Err()
				}
				if ok {
					out.rec.answered(reply)
				}
			}
			return nil
		})
		rd.Close()
	}()
}

// inject puts a message of the bridge's own on the stream, without
// blocking the POST that makes it. The caller is inside enter/leave.
func (c *legacyConn) inject(msg []byte) {
	c.pumps.Add(1)
	go func() {
		defer c.pumps.Done()
		select {
		case c.out <- msg:
		case <-c.ctx.Done():
		}
	}()
}

// find returns the open stream with that id if it belongs to owner, else
// nil: another principal's stream answers like one that never existed.
func (l *legacy) find(id, owner string) *legacyConn {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.conns[id]
	if c == nil || c.owner != owner {
		return nil
	}
	return c
}

func (l *legacy) remove(c *legacyConn) {
	l.mu.Lock()
	delete(l.conns, c.id)
	l.mu.Unlock()
}

// get serves GET SSEPath: the stream, for as long as the client keeps it
// open or the session lasts.
func (l *legacy) get(w http.ResponseWriter, r *http.Request) error {
	if !accepts(r.Header.Get("Accept")).sse {
		return &httpError{status: http.StatusNotAcceptable, code: bridge.CodeInvalidRequest,
			msg: "Not Acceptable: the Accept header must include text/event-stream"}
	}
	closed, err := l.h.limits.openStream(principal(r))
	if err != nil {
		return err
	}
	defer closed()
	id := bridge.NewID()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	sw, err := startSSE(ctx, w, l.h.opts.WriteTimeout)
	if err != nil {
		return nil
	}
	ended := make(chan struct{})
	var endOnce sync.Once
	p := principal(r)
	c := &legacyConn{id: id, owner: p.Key(), filter: l.h.opts.ToolPolicy.For(p), ctx: ctx, out: make(chan []byte), ended: ended,
		end: func() { endOnce.Do(func() { close(ended) }) }, cut: func() { cancel(); sw.cut() }}
	l.mu.Lock()
	l.conns[id] = c
	l.mu.Unlock()
	log := l.h.log.With("legacy_session", id)
	defer func() {
		// Later POSTs get 404; the ones in progress finish; the pumps stop;
		// then the session ends: its child gets the stop sequence, which
		// begins with closing its stdin and gives the requests it is still
		// working on StopGrace to finish.
		l.remove(c)
		c.close()
		cancel()
		c.pumps.Wait()
		if sess := c.session(); sess != nil {
			sess.Close()
			l.h.limits.ended(sess)
		}
		log.Info("legacy SSE stream closed")
	}()

	sw.endpoint(l.endpoint + "?sessionId=" + id)
	if err := sw.flush(); err != nil {
		return nil
	}
	log.Info("legacy SSE stream opened", "principal", p.String())
	noInit := time.NewTimer(legacyInitTimeout)
	defer noInit.Stop()
	c.log, c.noInit, c.waitEnd = log, noInit.C, ended
	// The conn is the one writer's source: what the pumps hand over, and
	// keep-alives, until the client leaves, a write fails, no initialize
	// comes in time, or the session has ended and its streams are
	// drained.
	err = bridge.Pump(ctx, c, bridge.ServeOptions{KeepAlive: l.h.opts.KeepAlive}, func(evs []bridge.Event) error {
		return sw.events(evs, outbound{})
	})
	if err != nil && ctx.Err() == nil {
		log.Debug("legacy SSE write failed; closing the stream", "err", err)
	}
	return nil
}

// legacyBatch is how many messages the writer takes at once, for one
// write and one flush.
const legacyBatch = 16

// Begin is the conn's, as the writer's source: it never primes.
func (c *legacyConn) Begin(bridge.ServeOptions) (bridge.Event, bool) { return bridge.Event{}, false }

// Next is the conn's, as the writer's source: what the pumps hand over,
// with what else is ready; nothing when tick fires (a keep-alive); the
// end when no initialize came in time, or the session has ended and the
// pumps have handed everything over (out is unbuffered).
func (c *legacyConn) Next(ctx context.Context, tick <-chan time.Time, buf []bridge.Event) ([]bridge.Event, bool, error) {
	for {
		select {
		case m := <-c.out:
			return c.more(append(buf, bridge.Event{Data: m})), false, nil
		case <-tick:
			return buf, false, nil
		case <-c.noInit:
			c.noInit = nil
			if c.session() == nil {
				c.log.Info("no initialize on the legacy SSE stream; closing it", "after", legacyInitTimeout)
				return buf, true, nil
			}
		case <-c.waitEnd:
			// The session is over (its child exited, or the bridge is
			// shutting down): deliver what its streams still hold, such
			// as the errors that answer the requests in flight, then end
			// the stream.
			c.waitEnd = nil
			c.close()
			drained := make(chan struct{})
			c.drained = drained
			go func() { c.pumps.Wait(); close(drained) }()
		case <-c.drained:
			return buf, true, nil
		case <-ctx.Done():
			return buf, false, ctx.Err()
		}
	}
}

// more appends to buf what else the pumps have ready, up to
// legacyBatch, without waiting.
func (c *legacyConn) more(buf []bridge.Event) []bridge.Event {
	for len(buf) < legacyBatch {
		select {
		case m := <-c.out:
			buf = append(buf, bridge.Event{Data: m})
		default:
			return buf
		}
	}
	return buf
}

// post serves POST MessagePath?sessionId=<id>: 202, and the answers go on
// the stream.
func (l *legacy) post(w http.ResponseWriter, r *http.Request) error {
	id := r.URL.Query().Get("sessionId")
	if id == "" {
		return &httpError{status: http.StatusBadRequest, code: bridge.CodeSessionRequired,
			msg: "Bad Request: the sessionId query parameter is required: POST to the endpoint URI the SSE stream announced"}
	}
	c := l.find(id, principal(r).Key())
	if c == nil {
		return bridge.ErrSessionNotFound
	}
	// Unlike the Streamable endpoint, no Accept header is required:
	// nothing is ever answered in the POST's body.
	h := l.h
	p, err := h.parse(w, r)
	if err != nil {
		return err
	}
	if !c.enter() {
		return bridge.ErrSessionNotFound
	}
	defer c.leave()
	if p.init {
		return l.initialize(w, r, c, p)
	}
	sess := c.session()
	if sess == nil {
		return l.notInitialized(w, c, p)
	}
	refusal, err := h.admitHolding(r, p, sess)
	if err != nil {
		return err
	}
	if refusal != nil {
		c.inject(refusal)
		w.WriteHeader(http.StatusAccepted)
		return nil
	}
	if p.held != nil {
		c.pump(h.hold(c.ctx, p, sess, false), outbound{filter: p.filter, rec: p.handOver(), catalog: h.opts.Approval.Catalog()}, false)
		w.WriteHeader(http.StatusAccepted)
		return nil
	}
	if len(p.msgs) == 0 {
		// Nothing but answers to the bridge's own questions.
		w.WriteHeader(http.StatusAccepted)
		return nil
	}
	rd, err := sess.Send(p.msgs, false)
	if err != nil {
		return err
	}
	if rd != nil {
		c.pump(rd, outbound{filter: p.filter, rec: p.handOver(), catalog: h.opts.Approval.Catalog()}, false)
	}
	w.WriteHeader(http.StatusAccepted)
	return nil
}

// notInitialized answers requests sent before initialize the way a
// 2024-11-05 server answers a request it cannot serve: 202, and a JSON-RPC
// error on the stream. Clients probe like this: the Go SDK sends
// 2026-07-28's server/discover first and falls back to initialize on any
// error that is not a 2026-07-28 one, while a failed POST would end its
// connection. Anything but requests is refused.
func (l *legacy) notInitialized(w http.ResponseWriter, c *legacyConn, p *post) error {
	msg := "Invalid Request: the session is not initialized; send initialize first"
	if p.probe {
		// docs/spec-rules.md, "MCP 2026-07-28: era detection by
		// clients": not a 2026-07-28 error, so dual-era clients fall back
		// to initialize.
		msg = "Invalid Request: this bridge serves MCP 2024-11-05 to 2025-11-25 sessions; start one with initialize"
	}
	for i := range p.msgs {
		if p.msgs[i].Kind != bridge.Request {
			return &httpError{status: http.StatusBadRequest, code: bridge.CodeInvalidRequest, msg: "Bad Request: the session is not initialized; send initialize first"}
		}
	}
	for i := range p.msgs {
		c.inject(bridge.ErrorBody(&bridge.Error{Code: bridge.CodeInvalidRequest, Message: msg, ID: p.msgs[i].ID()}))
	}
	w.WriteHeader(http.StatusAccepted)
	return nil
}

// initialize starts the conn's bridge session, whose every stream the
// conn then reads.
func (l *legacy) initialize(w http.ResponseWriter, r *http.Request, c *legacyConn, p *post) error {
	c.mu.Lock()
	if c.sess != nil || c.initializing {
		c.mu.Unlock()
		return &httpError{status: http.StatusBadRequest, code: bridge.CodeInvalidRequest, id: p.msgs[0].ID(),
			msg: "Invalid Request: the session is already initialized"}
	}
	c.initializing = true
	c.mu.Unlock()
	h := l.h
	// The same start as the Streamable endpoint's: the principal's
	// session slot, and its --claim-env variables for the child.
	sess, rd, err := h.initialize(r, p)
	c.mu.Lock()
	c.initializing = false // on failure, the client may try again
	if err == nil {
		c.sess = sess
	}
	c.mu.Unlock()
	if err != nil {
		return err
	}
	c.pump(rd, outbound{filter: c.filter, rec: p.handOver()}, false)
	// The session's GET stream carries what relates to no request; it is
	// open for the session's whole life, so nothing waits in the queue.
	if get, err := sess.Open(); err != nil {
		c.end() // the session is already over (its child exited at once)
	} else {
		c.pump(get, outbound{filter: c.filter}, true)
	}
	h.log.Info("legacy session started", "legacy_session", c.id, "session", sess.ID())
	w.WriteHeader(http.StatusAccepted)
	return nil
}
