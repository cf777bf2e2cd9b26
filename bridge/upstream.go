package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-bridge/mcp-bridge/stdio"
)

// upstream is one child process and the requests in flight on it. Its
// role says whom it serves: one session, one 2026-07-28 call at a time,
// or several clients at once. Its mutex guards its own state and that of
// every session on it, so routing one message takes one lock.
type upstream struct {
	b    *Bridge
	logp atomic.Pointer[slog.Logger] // changes when a pooled child meets its session
	role role
	// owner is the principal a per-identity child is for (roleIdentity:
	// the anonymous principal's has the zero Owner); env what its owner's
	// claims add to its environment.
	owner Owner
	env   []string
	// hub is the base child of the modern pool a leased child belongs
	// to (roleLease only): the list changes and resource updates the
	// leased child sends go to the listens there (publish).
	hub *upstream
	// mux is the state of a child several clients share, nil for any
	// other (role.multiplexed).
	mux *muxState
	// slot: the upstream holds a slot of the process budget (budget.go),
	// from before its child starts until the child is gone and none
	// follows it. freed is closed when it gives the slot back.
	slot      atomic.Bool
	freed     chan struct{}
	freedOnce sync.Once

	mu       sync.Mutex
	child    child // nil while a shared child restarts
	calls    map[int64]*call
	nextID   int64 // child-side ids of requests, and progress tokens
	sessions map[*Session]bool
	stopping bool // the bridge stops the child: no restart
	// unresponsive is the child the bridge is stopping because it can no
	// longer answer (its stdout closed, or initialize timed out): its exit
	// is counted as such, and a shared one is restarted as after a crash.
	unresponsive child
	// unresponsiveWhy is why: the error of a request sent to it since.
	unresponsiveWhy string
	started         time.Time // when the current child started

	// era is what the child speaks, once the modern layer has asked:
	// eraModern passes 2026-07-28 requests through, and its notifications
	// that name a listen (a subscriptionId) go to that listen's request.
	// discovered is its DiscoverResult, from the probe.
	era        childEra
	discovered []byte
}

// role is what an upstream's child is for. It decides where what the
// child sends that names no request goes, whether the child is restarted
// after a crash, and whether it carries the state of a shared child
// (muxState).
type role uint8

const (
	// roleOwn: one 2025 session's own child (per-session mode), or one
	// waiting in the warm pool for its session.
	roleOwn role = iota
	// roleLease: a child leased to one 2026-07-28 call at a time.
	roleLease
	// roleShared: the child every session shares (shared and stateless
	// mode), which serves 2026-07-28 clients too.
	roleShared
	// roleIdentity: one principal's child, shared by that principal's
	// sessions (per-identity mode).
	roleIdentity
	// roleModernBase: a 2026-07-28 pool's own base child (per-session and
	// per-identity modes), which serves only 2026-07-28 clients.
	roleModernBase
)

// multiplexed reports whether several clients share the child: it keeps
// a muxState, and it is restarted after a crash.
func (r role) multiplexed() bool { return r >= roleShared }

// muxState is what a child several clients share keeps, and no other:
// its one initialization, which later sessions are answered from, the
// state it holds for everyone (subscriptions, log level), which the
// bridge keeps per client, whose its requests are, and its crash-loop
// breaker. Guarded by the upstream's mutex.
type muxState struct {
	initParams []byte    // the first initialize's params, to re-initialize after a restart
	initResult []byte    // the child's InitializeResult
	gate       *initGate // the outcome of initializing it, for sessions that wait for it
	initSent   bool      // notifications/initialized reached the child
	subs       map[string]map[*Session]bool
	level      string              // log level set on the child
	serverReqs map[string]*Session // requests of the child's, routed to a session, by raw id
	crashes    []time.Time
	restarts   int  // times the child was restarted after a crash
	dead       bool // the crash-loop breaker tripped
}

// call is one request in flight on the child.
type call struct {
	sess     *Session // nil for the bridge's own requests: their answer is dropped
	clientID []byte   // byte for byte as the client sent it
	token    []byte   // the client's progress token, if any
	st       *Stream
	init     bool   // an initialize request
	method   string // for the log
	// answered hears the outcome of a request of the bridge's own that
	// someone waits for (a readiness ping, a restarted child's
	// initialize); capacity 1.
	answered chan error
	timer    *time.Timer // its deadline (trackLocked); nil without one
	// keep: a request of the bridge's own whose result is wanted
	// (result, set before answered is sent).
	keep   bool
	result []byte
}

// initGate is the outcome of initializing a shared child, which the
// sessions that join before its InitializeResult is known wait for. A
// gate is for one child: the one its initialize goes to, or (child nil)
// the next one started. Its fields are guarded by the upstream's mutex;
// err is read once done is closed.
type initGate struct {
	done  chan struct{} // closed once the outcome is known
	err   *Error        // why initialization failed; nil: it succeeded
	child child
}

func newGate(child child) *initGate {
	return &initGate{done: make(chan struct{}), child: child}
}

func (g *initGate) decided() bool {
	select {
	case <-g.done:
		return true
	default:
		return false
	}
}

// settle decides the gate (err nil: initialized); only the first call
// counts. Called with the upstream's mutex held.
func (g *initGate) settle(err *Error) {
	if !g.decided() {
		g.err = err
		close(g.done)
	}
}

// Restart policy of a shared child.
const (
	restartMin   = 100 * time.Millisecond
	restartMax   = 10 * time.Second
	breakerCount = 5           // crashes within breakerSpan trip the breaker
	breakerSpan  = time.Minute // ...
)

func newUpstream(b *Bridge, r role) *upstream {
	u := &upstream{
		b:        b,
		role:     r,
		calls:    make(map[int64]*call),
		sessions: make(map[*Session]bool),
		freed:    make(chan struct{}),
	}
	if r.multiplexed() {
		u.mux = &muxState{
			subs:       make(map[string]map[*Session]bool),
			serverReqs: make(map[string]*Session),
			gate:       newGate(nil),
		}
	}
	u.logp.Store(b.log)
	return u
}

// gateLocked is the gate of a shared child's initialization, nil for a
// child of one client's. Called with mu held.
func (u *upstream) gateLocked() *initGate {
	if u.mux == nil {
		return nil
	}
	return u.mux.gate
}

// deadLocked reports whether the child's crash-loop breaker has tripped:
// it is not started again. Called with mu held.
func (u *upstream) deadLocked() bool { return u.mux != nil && u.mux.dead }

func (u *upstream) logger() *slog.Logger { return u.logp.Load() }

// start spawns the child. log labels its lines (with the session in
// per-session mode).
func (u *upstream) start(log *slog.Logger) error { return u.startWith(log, nil) }

// startWith starts a child and, before any session can write to it, runs
// prepare (the re-initialization of a restarted shared child): requests
// reach a child only after what it must hear first. The child's slot of
// the process budget is taken first (errNoSlot if none is free); watch
// gives it back once the child is gone, and every failure here before
// watch runs gives it back at once.
func (u *upstream) startWith(log *slog.Logger, prepare func(child) error) error {
	if u.b.phaseNow() == phaseClosed {
		u.giveSlot()
		return fmt.Errorf("%w: %w", errNotStarted, ErrClosing) // once the bridge closes, no child starts
	}
	if !u.takeSlot() {
		return errNoSlot
	}
	opts := u.b.childOptions(log, u.env)
	opts.OnMessage = u.fromChild
	opts.OnOversize = u.oversize
	child, err := u.b.start(opts)
	if err != nil {
		u.giveSlot()
		u.b.stats.ChildrenFailed.Add(1)
		return fmt.Errorf("%w: %w", errNotStarted, err)
	}
	u.b.stats.ChildrenSpawned.Add(1)
	u.mu.Lock()
	if g := u.gateLocked(); g != nil && g.child == nil && !g.decided() {
		// The initialization waited for is this child's; bound before
		// watch can see it die.
		g.child = child
	}
	u.mu.Unlock()
	if !u.b.spawn(func() { u.watch(child) }) {
		// The bridge closed while it started, and no one would stop it.
		child.Kill()
		<-child.Done()
		u.giveSlot()
		u.b.stats.ChildrenExitedOK.Add(1)
		u.b.stats.ChildrenShutdown.Add(1)
		return fmt.Errorf("%w: %w", errNotStarted, ErrClosing)
	}
	if prepare != nil {
		if err := prepare(child); err != nil {
			if e, ok := errors.AsType[*Error](err); ok && e.Code == CodeRequestTimeout {
				u.mu.Lock()
				u.unresponsive = child // it did not answer initialize
				u.mu.Unlock()
			}
			child.Kill() // watch sees it go, and the restart policy applies
			return err
		}
	}
	u.mu.Lock()
	select {
	case <-child.Done():
		// It died while being prepared and watch has dealt with it: a dead
		// child published now would take requests nobody fails.
	default:
		u.child = child
		u.started = u.b.cfg.Now()
	}
	u.mu.Unlock()
	log.Info("child started", "child_pid", child.Pid(), "command", u.b.cfg.Command[0])
	return nil
}

// register puts a request in flight and returns the line for the child,
// with the child-side id (and progress token) in place of the client's.
// Called with mu held.
func (u *upstream) register(c *call, m *Message) []byte {
	u.nextID++
	id := u.nextID
	c.method = m.Method
	u.trackLocked(id, c)
	idBytes := strconv.AppendInt(nil, id, 10)
	out := splice(m.Raw, m.f.id, idBytes)
	if tok := progressToken(m.Raw, m.f.params); tok != nil {
		// The child sees the request's own child-side id as its token:
		// unique on the child even when sessions pick the same tokens.
		c.token = bytes.Clone(tok)
		f, _ := scanFields(out)
		p := f.params.of(out)
		meta := member(p, "_meta")
		mp := meta.of(p)
		ts := member(mp, "progressToken")
		newMeta := splice(mp, ts, idBytes)
		newParams := splice(p, meta, newMeta)
		out = splice(out, f.params, newParams)
	}
	return out
}

// write sends lines to the child. A failure means the child is gone or
// going: watch fails what is in flight with its exit status.
func (u *upstream) write(child child, lines [][]byte) {
	for _, line := range lines {
		if err := child.Write(line); err != nil {
			if errors.Is(err, stdio.ErrStalled) {
				// It has not read its stdin for RequestTimeout: nothing
				// written to it can be answered in time. Stopping it takes
				// the grace periods; the writer (often a client's POST)
				// does not wait for that, its request is failed meanwhile.
				// Once the bridge is closed, Close stops it instead.
				u.b.spawn(func() {
					u.unanswerable(child, fmt.Sprintf("the MCP server stopped reading its input: a message waited %v to be taken (--request-timeout)", u.b.cfg.RequestTimeout),
						"the MCP server stopped reading its stdin; stopping it")
				})
				return
			}
			u.logger().Warn("write to child failed", "err", err)
			return
		}
	}
}

// fromChild routes one message the child wrote. It runs on the child's
// reader goroutine, so it never blocks on a client. owned says whether
// line is the bridge's to keep and change (stdio.Options.OnMessage): a
// big message then goes to the session as it is, its id replaced in
// place, and is never copied; a short one, which lives in the reader's
// buffer, is copied once.
func (u *upstream) fromChild(line []byte, owned bool) {
	if !json.Valid(line) {
		u.logger().Warn("child wrote invalid JSON; skipped it", "line", string(line[:min(len(line), 200)]))
		return
	}
	if line[0] == '[' { // a 2025-03-26 child may batch
		_ = eachElement(line, func(elem []byte) error {
			// Not owned: splicing one in place would move the bytes
			// of the next, and keeping one would pin the whole batch.
			u.fromChild(elem, false)
			return nil
		})
		return
	}
	f, err := scanFields(line)
	if err != nil {
		u.logger().Warn("child wrote a message that is not an object; skipped it")
		return
	}
	if !f.method.ok() {
		// A response: the usual message, routed before anything else is
		// read of it (method, which escapes, would cost it an allocation).
		u.mu.Lock()
		u.responseLocked(line, f, owned)
		u.mu.Unlock()
		return
	}
	var method string
	_ = unquote(f.method.of(line), &method)
	if u.role == roleLease && !f.id.ok() && changeNotification(method) {
		// A leased child's list change or resource update: for the
		// listens of its pool, not for the call it serves; and only while
		// it serves one, which can have changed something. What it says on
		// its own (server-everything announces its lists as it starts) is
		// not news to anyone.
		u.mu.Lock()
		busy := u.clientCallsLocked() > 0
		u.mu.Unlock()
		if busy {
			u.hub.publish(method, f.params.of(line), bytes.Clone(line))
		}
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	params := f.params.of(line)
	if u.era == eraModern && !f.id.ok() && method != methodProgress {
		if sid, ok := subscriptionOf(line, f.params); ok {
			// A modern child's listen notification: it names the listen by
			// the id the child knows; the client knows its own.
			if c := u.calls[sid]; c != nil && c.sess != nil {
				c.st.push(replaceSubscription(bytes.Clone(line), f.params, c.clientID), false)
			}
			return
		}
	}

	if method == methodProgress {
		tok := member(params, "progressToken")
		id, err := strconv.ParseInt(string(tok.of(params)), 10, 64)
		c := u.calls[id]
		if err != nil || c == nil || c.sess == nil {
			u.droppedProgressLocked(id, err == nil && c == nil)
			return
		}
		at := span{f.params.start + tok.start, f.params.start + tok.end} // the token, in line
		msg := replace(line, at, c.token, owned)
		c.sess.touchLocked()
		if c.st.canKeep() {
			c.st.push(msg, false)
		} else {
			c.sess.deliverLocked(msg)
		}
		return
	}
	msg := line
	if !owned {
		msg = bytes.Clone(line)
	}
	// A request of the child's (sampling, elicitation, roots, ping) or a
	// log message, while exactly one request is in flight, relates to that
	// request: stdio gives no other hint, and one in flight is unambiguous.
	var only *call
	for _, c := range u.calls {
		if c.sess == nil {
			continue // the bridge's own request (a ping, a subscription)
		}
		if c.method == "subscriptions/listen" {
			// A modern child's listen, open for as long as its client
			// stays: it takes "never progress or logs", nor any request,
			// so it must not make the call beside it ambiguous (go-sdk
			// clients keep one open from Connect on).
			continue
		}
		if only != nil {
			only = nil
			break
		}
		only = c
	}
	isRequest := f.id.ok()
	if (isRequest || method == methodLogMessage) && only != nil && only.sess != nil && !only.sess.closed {
		if isRequest && u.role.multiplexed() {
			u.mux.serverReqs[string(f.id.of(line))] = only.sess
		}
		if method == methodLogMessage && !only.sess.wantsLog(params) {
			return
		}
		only.sess.touchLocked()
		if only.st.canCarry() {
			only.st.push(msg, false)
		} else {
			only.sess.deliverLocked(msg)
		}
		return
	}
	if !u.role.multiplexed() {
		taken := false
		for s := range u.sessions {
			if s.modern {
				continue // it takes only what relates to its own request
			}
			s.touchLocked()
			s.deliverLocked(msg)
			taken = true
		}
		if isRequest && !taken {
			// A leased child asking while no call runs on it (on its own,
			// like server-everything's roots/list after initialize): no
			// client can answer, and it is told so now, not left to its
			// own timeout.
			u.refuseLocked(f.id.of(line), method, "no request of a client is in flight on this server process, so no client can answer it")
		}
		return
	}
	u.sharedNotificationLocked(method, params, f, line, msg, isRequest)
}

// refuseLocked answers the child's request id (of method) with an error
// saying why no client answers it. The write is not done under u.mu: it
// may block. Called with u.mu held.
func (u *upstream) refuseLocked(id []byte, method, why string) {
	u.logger().Info("the MCP server asked its client something that no client can answer; refused it", "method", method, "why", why)
	reply := errorResponse(id, CodeInternalError, "mcp-bridge: cannot route "+method+": "+why, nil)
	if child := u.child; child != nil {
		u.b.spawn(func() { u.write(child, [][]byte{reply}) })
	}
}

// droppedProgressLocked accounts for a progress notification that goes
// nowhere. "Progress notifications MUST stop after completion": one for a
// request that is over (answered, cancelled, timed out) breaks that rule,
// and is dropped, logged and counted; one with a token the bridge never
// gave out is dropped and logged.
func (u *upstream) droppedProgressLocked(id int64, over bool) {
	if over && id > 0 && id <= u.nextID {
		u.b.stats.LateProgress.Add(1)
		u.logger().Debug("dropped a progress notification that came after its request was over", "child_id", id)
		return
	}
	u.logger().Debug("dropped a progress notification for no request of a client", "child_id", id)
}

// sharedNotificationLocked routes what a shared child sends that relates
// to no single request: by subscription, by log level, to everyone for
// list changes, and nowhere it cannot be attributed.
func (u *upstream) sharedNotificationLocked(method string, params []byte, f fields, line, msg []byte, isRequest bool) {
	switch {
	case isRequest:
		// Sampling, elicitation or roots with no single request in flight:
		// guessing would hand one user's question to another.
		n := len(u.calls)
		// What would carry it: for a 2025 client a session with a child
		// of its own (per-session mode); for a 2026-07-28 client, which
		// no mode gives a child of its own, declaring the capability
		// (its calls then get a leased child each). A modern pool's own
		// child serves only the latter, in a bridge that may already run
		// in per-session mode.
		cure := "a 2026-07-28 client that declares the capability gets a child of its own for each call"
		if u.role != roleModernBase {
			cure = "run the bridge with --mode per-session for 2025 clients; " + cure
		}
		u.logger().Warn("the shared MCP server sent a request that cannot be attributed to one client's request; refused it",
			"method", method, "requests_in_flight", n, "remedy", cure)
		reply := errorResponse(f.id.of(line), CodeInternalError,
			fmt.Sprintf("mcp-bridge: cannot route %s: this server is shared by several clients and %d requests are in flight, so it is ambiguous which client should answer; %s", method, n, cure), nil)
		if child := u.child; child != nil {
			u.b.spawn(func() { u.write(child, [][]byte{reply}) }) // not under u.mu: a write may block
		}
	case strings.HasSuffix(method, "/list_changed"):
		for s := range u.sessions {
			s.deliverLocked(msg)
		}
	case method == "notifications/resources/updated":
		var p struct {
			URI string `json:"uri"`
		}
		_ = json.Unmarshal(params, &p)
		for s := range u.mux.subs[p.URI] {
			s.deliverLocked(msg)
		}
	case method == methodLogMessage:
		for s := range u.sessions {
			if s.wantsLog(params) {
				s.deliverLocked(msg)
			}
		}
	default:
		u.logger().Warn("the shared MCP server sent a notification that belongs to no single session; dropped it", "method", method)
	}
}

func (u *upstream) responseLocked(line []byte, f fields, owned bool) {
	id, err := strconv.ParseInt(string(f.id.of(line)), 10, 64)
	c := u.settleLocked(id)
	if err != nil || c == nil {
		if err == nil && id > 0 && id <= u.nextID {
			// A late answer to a request that was cancelled or whose
			// session ended.
			u.logger().Debug("dropped the response to a request that is over", "child_id", id)
			return
		}
		u.b.stats.UnroutableDrops.Add(1)
		u.logger().Warn("child answered an id nobody asked; dropped it", "id", string(f.id.of(line)))
		return
	}
	if c.init {
		u.initializedLocked(c, line, f)
	}
	if c.sess == nil {
		if c.answered != nil {
			var err error
			switch {
			case c.init && f.error.ok():
				err = fmt.Errorf("the MCP server refused initialize: %s", f.error.of(line))
			case f.error.ok() && c.keep:
				err = fmt.Errorf("the MCP server answered %s with an error: %s", c.method, f.error.of(line))
			case c.keep:
				c.result = bytes.Clone(f.result.of(line))
			}
			c.answered <- err
		}
		if f.error.ok() && !c.keep {
			// (Whoever keeps the result judges an error too: the era
			// probe expects a legacy server's refusal, and logs its
			// verdict.)
			u.logger().Warn("the MCP server refused a request of the bridge's", "error", string(f.error.of(line)))
		}
		return
	}
	c.sess.doneLocked(c)
	if c.sess.closed {
		return
	}
	// Last use of line and f: an owned line is changed in place.
	c.sess.answerLocked(c, replace(line, f.id, c.clientID, owned))
}

// initializedLocked records what an InitializeResult negotiated and, on a
// shared child, settles its initialization for the sessions waiting.
func (u *upstream) initializedLocked(c *call, line []byte, f fields) {
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if f.result.ok() {
		_ = json.Unmarshal(f.result.of(line), &r)
	}
	if c.sess != nil {
		c.sess.version = r.ProtocolVersion
		c.sess.log.Info("session initialized", "protocol_version", r.ProtocolVersion)
		if f.result.ok() && !u.role.multiplexed() {
			u.b.starts.succeeded()
		}
	}
	if !u.role.multiplexed() || u.mux.initResult != nil {
		return
	}
	if !f.result.ok() {
		// The child refused these parameters and lives on: the next
		// session's initialize is tried with its own.
		u.mux.initParams = nil
		u.initFailedLocked(u.child, &Error{Kind: KindUnavailable, Code: CodeInternalError,
			Message: "the MCP server refused to initialize: " + string(f.error.of(line))}, true)
		return
	}
	u.mux.initResult = bytes.Clone(f.result.of(line))
	switch {
	case c.answered != nil:
		// A restarted child's re-initialization: restart opens the gate
		// once the child takes requests.
	case c.sess == nil:
		// The bridge initialized the child itself (stateless HTTP):
		// initialized goes out before anyone waiting may send.
		u.mux.initSent = true
		child, g := u.child, u.mux.gate
		sent := u.b.spawn(func() {
			if child != nil {
				u.write(child, [][]byte{[]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)})
			}
			u.mu.Lock()
			g.settle(nil)
			u.mu.Unlock()
		})
		if !sent {
			g.settle(ErrClosing)
		}
	default:
		u.mux.gate.settle(nil)
	}
}

// initFailedLocked records that initializing child failed with err: the
// sessions waiting for it get err. Unless the child is down for good
// (downLocked), the next initialization gets a gate of its own: of the
// same child when it lives on (again), else of the next child started.
func (u *upstream) initFailedLocked(child child, err *Error, again bool) {
	g := u.mux.gate
	if u.mux.initResult != nil || g.child != child || g.decided() {
		return
	}
	g.settle(err)
	next := child
	if !again {
		next = nil
	}
	u.mux.gate = newGate(next)
}

// downLocked: the shared child will not be started again (crash-loop
// breaker, bridge shutdown); sessions waiting for it get err.
func (u *upstream) downLocked(err *Error) {
	u.mux.gate.settle(err) // nothing if it was decided
}

// oversize fails the request whose response was over the line cap.
func (u *upstream) oversize(o stdio.Oversize) {
	u.b.stats.OversizeLines.Add(1)
	id := idFromOversize(o.Head, o.Tail)
	childID, err := strconv.ParseInt(string(id), 10, 64)
	u.mu.Lock()
	defer u.mu.Unlock()
	var c *call
	if id != nil && err == nil {
		c = u.settleLocked(childID)
	}
	if c == nil {
		u.logger().Warn("dropped an oversize message from the child that answers no request", "bytes", o.Size)
		return
	}
	if c.sess == nil {
		if c.answered != nil {
			c.answered <- fmt.Errorf("the MCP server's answer (%d bytes) is over the message size limit", o.Size)
		}
		return
	}
	c.sess.doneLocked(c)
	msg := fmt.Sprintf("the MCP server's response (%d bytes) is over the bridge's message size limit (%d bytes); raise --max-message-bytes", o.Size, u.b.cfg.maxLine())
	c.sess.answerLocked(c, errorResponse(c.clientID, CodeResponseTooLarge, msg, nil))
}

// watch handles the child's end: every request in flight fails at once
// with the exit status and the last lines of stderr. In per-session mode
// the session ends with it; a shared child is restarted.
func (u *upstream) watch(child child) {
	u.waitExit(child)
	err := child.Err()
	tail := child.StderrTail()
	status := exitStatus(err)
	// A child the bridge's shutdown stopped did not fail: its requests
	// are told the bridge is shutting down, whoever they are for (a
	// session's ended with that reason already; a 2026-07-28 call's has
	// no session of a client's to carry it).
	ended := "the MCP server process exited (" + status + ")"
	closing := u.b.phaseNow() == phaseClosed

	u.mu.Lock()
	if u.child == child {
		u.child = nil
	}
	stopping := u.stopping
	unresponsive := u.unresponsive == child
	exited := u.exitCounterLocked()
	data := map[string]any{"exitStatus": status}
	if len(tail) > 0 {
		data["stderr"] = strings.Join(tail, "\n")
	}
	if closing && stopping {
		ended = reasonShutdown
	}
	ending := u.failAllLocked(ended, data)
	if u.role.multiplexed() {
		u.initFailedLocked(child, &Error{Kind: KindUnavailable, Code: CodeChildExited,
			Message: "the MCP server exited (" + status + ") before it initialized; try again shortly"}, false)
	}
	restart := u.role.multiplexed() && !stopping && u.breakerLocked()
	if !restart {
		if u.role.multiplexed() {
			down := ErrSharedDown
			if stopping {
				down = ErrClosing
			}
			u.downLocked(down)
		}
		ending = ending[:0]
		for s := range u.sessions {
			if s.endReason == "" {
				s.endReason = "the MCP server process exited (" + status + ")"
			}
			ending = append(ending, s)
		}
	}
	u.mu.Unlock()
	if !restart {
		u.giveSlot() // gone, and nothing follows it; a restart keeps the slot
	}

	switch {
	case unresponsive:
		u.b.stats.ChildrenUnresponsive.Add(1)
		u.logger().Info("child stopped: it could no longer answer", "child_pid", child.Pid(), "child_exit", status, "restart", restart)
	case stopping:
		u.b.stats.ChildrenExitedOK.Add(1)
		exited.Add(1)
		u.logger().Info("child stopped", "child_pid", child.Pid(), "child_exit", status)
	case u.role.multiplexed():
		u.b.stats.ChildrenCrashed.Add(1)
		u.logger().Warn("the shared child exited", "child_pid", child.Pid(), "child_exit", status, "stderr_tail", tail, "restart", restart)
	default:
		u.b.stats.ChildrenCrashed.Add(1)
		u.logger().Warn("child exited; session ended", "child_exit", status, "child_pid", child.Pid(), "stderr_tail", tail)
	}
	for _, s := range ending {
		s.end()
	}
	if (len(ending) == 0 && !u.role.multiplexed() && !stopping) || (stopping && !restart) {
		// A waiting child died, or a child the bridge stopped gave its
		// slot back: the warm pool may refill.
		u.b.kickPool()
	}
	if restart {
		u.restart()
	}
}

// waitExit waits for the child to exit. One that closes its stdout and
// runs on can never answer again: it is stopped (stdoutClosed). Stdout
// also ends just before an exiting child is reaped, so the exit is given
// the stop grace to show first.
func (u *upstream) waitExit(child child) {
	select {
	case <-child.Done():
		return
	case <-child.StdoutClosed():
	}
	grace := u.b.cfg.StopGrace
	if grace <= 0 {
		grace = stdio.DefaultStopGrace
	}
	t := time.NewTimer(grace)
	select {
	case <-child.Done():
		t.Stop()
		return
	case <-t.C:
	}
	u.mu.Lock()
	stopping := u.stopping
	u.mu.Unlock()
	if stopping {
		// The bridge is stopping it anyway (its session ended, or the
		// bridge closes): the stop sequence is under way, and a slow exit
		// is not a child that stopped answering.
		<-child.Done()
		return
	}
	u.stdoutClosed(child)
	<-child.Done()
}

// stdoutClosed handles a child that closed its stdout and runs on: it can
// no longer answer.
func (u *upstream) stdoutClosed(child child) {
	u.unanswerable(child, "the MCP server closed its stdout and can no longer answer",
		"the MCP server closed its stdout but is still running; stopping it")
}

// unanswerable handles a child that runs on but can no longer serve (it
// closed its stdout, or stopped reading its stdin), once per child: every
// request in flight fails now with -32005, reason and the last lines of
// its stderr, and it is stopped with the grace sequence; a shared child
// is then restarted as after a crash.
func (u *upstream) unanswerable(child child, reason, warn string) {
	u.mu.Lock()
	if u.unresponsive == child || u.stopping {
		u.mu.Unlock()
		return // already being stopped
	}
	u.unresponsive, u.unresponsiveWhy = child, reason
	u.mu.Unlock()
	tail := child.StderrTail()
	u.logger().Warn(warn, "child_pid", child.Pid(), "stderr_tail", tail)
	data := map[string]any{}
	if len(tail) > 0 {
		data["stderr"] = strings.Join(tail, "\n")
	}
	u.mu.Lock()
	ending := u.failAllLocked(reason, data)
	if u.role.multiplexed() {
		u.initFailedLocked(child, &Error{Kind: KindUnavailable, Code: CodeChildExited, Message: reason + "; try again shortly"}, false)
	}
	u.mu.Unlock()
	for _, s := range ending {
		s.end()
	}
	u.stopUnresponsive(child, reason)
}

// failAllLocked fails every request in flight with -32005: with reason,
// or the reason its session ended, and data. It returns the sessions of a
// shared child whose initialize it failed: they end, as their clients
// have no session.
func (u *upstream) failAllLocked(reason string, data map[string]any) []*Session {
	var initFailed []*Session
	for id := range u.calls {
		c := u.settleLocked(id)
		if c.sess == nil {
			if c.answered != nil {
				c.answered <- errors.New(reason)
			}
			continue
		}
		c.sess.doneLocked(c)
		r := c.sess.endReason
		if r == "" {
			r = reason
		}
		if c.init && u.role.multiplexed() {
			c.sess.endReason = "its initialize failed: " + r
			initFailed = append(initFailed, c.sess)
		}
		c.sess.answerLocked(c, errorResponse(c.clientID, CodeChildExited, r, data))
	}
	if u.mux != nil {
		clear(u.mux.serverReqs)
	}
	return initFailed
}

// stopUnresponsive stops a child that can no longer serve, with the grace
// sequence, and returns once it is reaped. In per-session mode its session
// ends with reason; a shared child is restarted as after a crash (watch).
func (u *upstream) stopUnresponsive(child child, reason string) {
	u.mu.Lock()
	u.unresponsive, u.unresponsiveWhy = child, reason
	if !u.role.multiplexed() {
		for s := range u.sessions {
			if s.endReason == "" {
				s.endReason = reason
			}
		}
	}
	u.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*u.b.cfg.StopGrace+time.Second)
	defer cancel()
	if err := child.Stop(ctx); err != nil {
		u.logger().Warn("child did not stop in time; killed its group", "err", err)
		child.Kill()
		<-child.Done()
	}
}

// trackLocked puts c in flight under id with its deadline: --init-timeout
// for initialize, --request-timeout for the rest (expire).
func (u *upstream) trackLocked(id int64, c *call) {
	u.calls[id] = c
	d := u.b.cfg.RequestTimeout
	if c.init {
		d = u.b.cfg.InitTimeout
	}
	if d > 0 {
		// Once the bridge is closed a deadline does nothing: Close stops
		// every child, which fails what is in flight.
		c.timer = time.AfterFunc(d, func() { u.b.spawn(func() { u.expire(id, c, d) }) })
	}
}

// settleLocked takes the request id out of flight (answered, cancelled,
// failed) and returns it; nil if it is not in flight.
func (u *upstream) settleLocked(id int64) *call {
	c := u.calls[id]
	if c == nil {
		return nil
	}
	delete(u.calls, id)
	if c.timer != nil {
		c.timer.Stop()
	}
	return c
}

// expire settles a request the child did not answer within d: the child
// gets notifications/cancelled for it, so its late answer is dropped, and
// then the client a JSON-RPC error naming the flag (in that order, so a
// client that asks the child next finds the cancel there before it). An
// initialize is not cancelled ("MUST NOT be cancelled"): a child that does
// not answer it cannot serve, so it is stopped (per-session: its session
// ends; shared: the sessions waiting for it get the error, and it is
// restarted as after a crash).
func (u *upstream) expire(id int64, c *call, d time.Duration) {
	u.mu.Lock()
	if u.calls[id] != c {
		u.mu.Unlock()
		return // answered meanwhile
	}
	if c.init {
		u.settleLocked(id)
	}
	// Any other request stays in flight while its cancel is written, which
	// can take as long as a stalled child lets it: if the child dies or is
	// found unresponsive meanwhile, failAllLocked answers it with why;
	// if it answers after all, that answer goes out; else the timeout
	// error below. Exactly one of them, never none.
	child := u.child
	u.mu.Unlock()
	u.b.stats.RequestsTimedOut.Add(1)
	flag := "--request-timeout"
	if c.init {
		flag = "--init-timeout"
	}
	msg := fmt.Sprintf("the MCP server did not answer %s within %v (%s)", c.method, d, flag)
	log := u.logger()
	if c.sess != nil {
		log = c.sess.log
	}
	if c.init {
		log.Warn("the MCP server did not answer initialize in time; stopping it", "child_id", id, "timeout", d)
	} else {
		log.Warn("the MCP server did not answer a request in time; cancelled it", "method", c.method, "child_id", id, "timeout", d)
		if child != nil {
			u.write(child, [][]byte{cancelNotification(id, msg)})
		}
	}

	u.mu.Lock()
	if !c.init {
		if u.calls[id] != c {
			u.mu.Unlock()
			return // answered or failed while the cancel was written
		}
		u.settleLocked(id)
	}
	if c.sess != nil {
		c.sess.doneLocked(c)
		c.sess.touchLocked() // the session idles from now, not from its last message
		if !c.sess.closed {
			c.sess.answerLocked(c, errorResponse(c.clientID, CodeRequestTimeout, msg, nil))
		}
	} else if c.answered != nil {
		c.answered <- &Error{Kind: KindUnavailable, Code: CodeRequestTimeout, Message: msg}
	}
	// A restart's own initialize (answered) fails the restart instead.
	stop := c.init && c.answered == nil && child != nil && u.child == child && !u.stopping
	if stop && u.role.multiplexed() {
		u.initFailedLocked(child, &Error{Kind: KindUnavailable, Code: CodeRequestTimeout, Message: msg}, false)
		if c.sess != nil && c.sess.endReason == "" {
			c.sess.endReason = "its initialize failed: " + msg
		}
	}
	u.mu.Unlock()
	if !stop {
		return
	}
	if c.sess != nil && u.role.multiplexed() {
		c.sess.end() // its client has no session
	}
	u.stopUnresponsive(child, msg)
}

// cancelNotification is notifications/cancelled for the child's request id.
func cancelNotification(id int64, reason string) []byte {
	type params struct {
		RequestID int64  `json:"requestId"`
		Reason    string `json:"reason"`
	}
	b, _ := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  params `json:"params"`
	}{"2.0", methodCancelled, params{id, reason}})
	return b
}

// breakerLocked records a crash and reports whether another restart is
// allowed: not after breakerCount crashes within breakerSpan.
func (u *upstream) breakerLocked() bool {
	now := u.b.cfg.Now()
	keep := u.mux.crashes[:0]
	for _, t := range u.mux.crashes {
		if now.Sub(t) < breakerSpan {
			keep = append(keep, t)
		}
	}
	u.mux.crashes = append(keep, now)
	if len(u.mux.crashes) >= breakerCount {
		u.mux.dead = true
		u.logger().Error("the shared MCP server keeps crashing; not restarting it (crash-loop breaker)", "crashes", len(u.mux.crashes), "within", breakerSpan)
		return false
	}
	return true
}

// restart starts a shared child again after a backoff, initializes it with
// the parameters the first session used, and restores subscriptions and
// the log level, so sessions continue.
func (u *upstream) restart() {
	u.mu.Lock()
	backoff := restartMin << (len(u.mux.crashes) - 1)
	u.mu.Unlock()
	backoff = min(backoff, restartMax)
	u.logger().Info("restarting the shared MCP server", "after", backoff)
	t := time.NewTimer(backoff)
	select {
	case <-t.C:
	case <-u.b.shutdown:
		t.Stop()
		u.giveSlot() // kept for the restart that will not be
		u.mu.Lock()
		u.downLocked(ErrClosing)
		u.mu.Unlock()
		u.endAll()
		return
	}
	u.mu.Lock()
	u.mux.restarts++
	u.mu.Unlock()
	u.b.stats.ChildrenRestarted.Add(1)
	err := u.startWith(u.logger(), u.reinitialize)
	switch {
	case err == nil:
		u.mu.Lock()
		if u.mux.initResult != nil && u.child != nil {
			u.mux.gate.settle(nil) // re-initialized, and now taking requests
		}
		u.mu.Unlock()
	case errors.Is(err, ErrClosing):
		// The bridge closed meanwhile.
		u.mu.Lock()
		u.downLocked(ErrClosing)
		u.mu.Unlock()
		u.endAll()
	case errors.Is(err, errNotStarted):
		u.logger().Error("cannot restart the shared MCP server", "err", err)
		u.mu.Lock()
		u.mux.dead = true
		u.downLocked(ErrSharedDown)
		u.mu.Unlock()
		u.endAll()
	default:
		u.logger().Warn("the restarted MCP server failed to re-initialize", "err", err)
	}
}

// errNotStarted wraps a failure to start the process at all.
var errNotStarted = errors.New("the MCP server process did not start")

// reinitialize replays to a restarted shared child what the sessions on
// it rely on: initialize with the first session's parameters (waiting for
// its answer, within --init-timeout: expire), initialized, the
// subscriptions and the log level.
func (u *upstream) reinitialize(child child) error {
	u.mu.Lock()
	if u.mux.initParams == nil {
		u.mu.Unlock()
		return nil
	}
	answered := make(chan error, 1)
	line := u.ownRequestLocked(MethodInitialize, u.mux.initParams, &call{init: true, answered: answered})
	u.mu.Unlock()
	if err := child.Write(line); err != nil {
		return err
	}
	// The child's death answers too (watch fails what is in flight).
	select {
	case err := <-answered:
		if err != nil {
			return err
		}
	case <-u.b.shutdown:
		return ErrClosing
	}
	u.mu.Lock()
	u.mux.initSent = true
	lines := [][]byte{[]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)}
	for uri := range u.mux.subs {
		p, _ := json.Marshal(map[string]string{"uri": uri})
		lines = append(lines, u.ownRequestLocked("resources/subscribe", p, nil))
	}
	if u.mux.level != "" {
		p, _ := json.Marshal(map[string]string{"level": u.mux.level})
		lines = append(lines, u.ownRequestLocked("logging/setLevel", p, nil))
	}
	u.mu.Unlock()
	for _, l := range lines {
		if err := child.Write(l); err != nil {
			return err
		}
	}
	return nil
}

// ping asks the child for a ping answer, as MCP allows at any time, and
// waits up to timeout: whether the process is alive and reading.
func (u *upstream) ping(timeout time.Duration) error {
	u.mu.Lock()
	child := u.child
	if child == nil {
		u.mu.Unlock()
		return errors.New("the MCP server is restarting")
	}
	answered := make(chan error, 1)
	line := u.ownRequestLocked("ping", nil, &call{answered: answered})
	id := u.nextID
	u.mu.Unlock()
	u.write(child, [][]byte{line})
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-answered:
		return err
	case <-t.C:
		u.mu.Lock()
		u.settleLocked(id)
		u.mu.Unlock()
		return fmt.Errorf("the MCP server did not answer a ping within %v", timeout)
	case <-u.b.shutdown:
		u.mu.Lock()
		u.settleLocked(id)
		u.mu.Unlock()
		return ErrClosing
	}
}

// ownRequestLocked builds a request of the bridge's own and puts c (nil: a
// new call, whose answer is dropped) in flight for it.
func (u *upstream) ownRequestLocked(method string, params []byte, c *call) []byte {
	u.nextID++
	if c == nil {
		c = &call{}
	}
	c.method = method
	u.trackLocked(u.nextID, c)
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      int64           `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params,omitempty"`
	}{"2.0", u.nextID, method, params})
	return b
}

// endAll ends every session of the upstream.
func (u *upstream) endAll() {
	u.mu.Lock()
	var all []*Session
	for s := range u.sessions {
		all = append(all, s)
	}
	u.mu.Unlock()
	for _, s := range all {
		s.end()
	}
}

// stop stops the child for good (per-session: the session ended; shared:
// the bridge closes).
func (u *upstream) stop(ctx context.Context) {
	u.mu.Lock()
	u.stopping = true
	child := u.child
	u.mu.Unlock()
	if child == nil {
		return
	}
	if err := child.Stop(ctx); err != nil {
		u.logger().Warn("child did not stop in time; killed its group", "err", err)
		child.Kill()
		<-child.Done()
	}
}

// pauseLocked stops c's deadline while its call is parked for its
// client's input (MRTR). Called with mu held.
func (u *upstream) pauseLocked(c *call) {
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
}

// rearmLocked gives c, the request id, a new deadline when its call
// resumes. Called with mu held.
func (u *upstream) rearmLocked(id int64, c *call) {
	if d := u.b.cfg.RequestTimeout; d > 0 && c.timer == nil {
		c.timer = time.AfterFunc(d, func() { u.expire(id, c, d) })
	}
}

// clientCallsLocked is the number of requests of clients in flight (the
// bridge's own not counted). Called with mu held.
func (u *upstream) clientCallsLocked() int {
	n := 0
	for _, c := range u.calls {
		if c.sess != nil {
			n++
		}
	}
	return n
}
