package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"
)

// A child several clients share (muxState): initialized once, by the
// first session or by the bridge, its outcome a gate the others wait at;
// the log level it runs at, the most verbose any client asked.

// muxState is what a child several clients share keeps, and no other:
// its one initialization, which later sessions are answered from, the
// state it holds for everyone (subscriptions, log level), which the
// bridge keeps per client, whose its requests are, and its crash-loop
// breaker. Guarded by the upstream's mutex.
type muxState struct {
	initParams []byte                    // the first initialize's params, to re-initialize after a restart
	initResult []byte                    // the child's InitializeResult
	gate       *initGate                 // the outcome of initializing it, for sessions that wait for it
	initSent   bool                      // notifications/initialized reached the child
	subs       map[string]map[party]bool // resource subscriptions, by URI: the parties holding them
	level      string                    // log level set on the child
	serverReqs map[string]party          // requests of the child's, routed to a party, by raw id
	crashes    []time.Time
	restarts   int  // times the child was restarted after a crash
	dead       bool // the crash-loop breaker tripped
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

// initializedLocked records what an InitializeResult negotiated and, on a
// shared child, settles its initialization for the sessions waiting.
func (u *upstream) initializedLocked(c *call, line []byte, f fields) {
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if f.result.ok() {
		_ = json.Unmarshal(f.result.of(line), &r)
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
	case c.party == nil:
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

// childLevelLocked is the most verbose level any session asked for.
func (u *upstream) childLevelLocked() string {
	lowest := -1
	for p := range u.parties {
		if l := p.party().logLevel; l >= 0 && (lowest < 0 || l < lowest) {
			lowest = l
		}
	}
	if lowest < 0 {
		return u.mux.level
	}
	return logLevels[lowest]
}

// relevelLocked sets the child's log level to the most verbose any party
// wants, and reports it and whether it changed. Called with mu held.
func (u *upstream) relevelLocked() (string, bool) {
	lvl := u.childLevelLocked()
	if lvl == u.mux.level {
		return lvl, false
	}
	u.mux.level = lvl
	return lvl, true
}

// levelLocked is relevelLocked's request of the bridge's own that tells
// the child, nil when the level did not change. Called with mu held.
func (u *upstream) levelLocked() []byte {
	lvl, changed := u.relevelLocked()
	if !changed {
		return nil
	}
	p, _ := json.Marshal(map[string]string{"level": lvl})
	return u.ownRequestLocked("logging/setLevel", p, nil)
}

// subscribeLocked adds p to the holders of uri and reports whether it is
// the first: the child is to be subscribed. Called with mu held.
func (u *upstream) subscribeLocked(p party, uri string) bool {
	holders := u.mux.subs[uri]
	if holders == nil {
		holders = map[party]bool{}
		u.mux.subs[uri] = holders
	}
	first := len(holders) == 0
	holders[p] = true
	return first
}

// unsubscribeLocked takes p off the holders of uri and reports whether it
// was the last: the child is to be unsubscribed. Called with mu held.
func (u *upstream) unsubscribeLocked(p party, uri string) bool {
	holders, ok := u.mux.subs[uri]
	if !ok || !holders[p] {
		return false
	}
	delete(holders, p)
	if len(holders) > 0 {
		return false
	}
	delete(u.mux.subs, uri)
	return true
}

// initShared initializes a shared child with params, unless someone has
// already (a 2025 session, stateless HTTP, the modern pool), and waits for
// the outcome: ctx's end, shutdown and --init-timeout end the wait too.
func (b *Bridge) initShared(ctx context.Context, u *upstream, params string) error {
	u.mu.Lock()
	if u.mux.dead {
		u.mu.Unlock()
		return ErrSharedDown
	}
	if u.mux.initParams == nil {
		child := u.child
		if child == nil {
			u.mu.Unlock()
			return errRestarting
		}
		u.mux.initParams = []byte(params)
		line := u.ownRequestLocked(MethodInitialize, u.mux.initParams, &call{init: true})
		u.mu.Unlock()
		u.write(child, [][]byte{line})
		u.mu.Lock()
	}
	g := u.mux.gate
	u.mu.Unlock()
	if g.decided() && g.err == nil {
		return nil // initialized: the usual case, without a timer
	}
	if err := b.waitInit(ctx, g, nil); err != nil {
		return err
	}
	return nil
}

// initializeAlone initializes a child that serves one call at a time (a
// lease) with params, waits for its answer within --init-timeout (expire),
// the client's ctx or the bridge's shutdown, and sends it initialized.
func (u *upstream) initializeAlone(ctx context.Context, params string) error {
	b := u.b
	answered := make(chan error, 1)
	u.mu.Lock()
	child := u.child
	if child == nil {
		u.mu.Unlock()
		return errRestarting
	}
	line := u.ownRequestLocked(MethodInitialize, []byte(params), &call{init: true, answered: answered})
	u.mu.Unlock()
	u.write(child, [][]byte{line})
	select {
	case err := <-answered:
		if err != nil {
			var e *Error
			if errors.As(err, &e) {
				return e
			}
			return &Error{Kind: KindUnavailable, Code: CodeChildExited, Message: "the MCP server did not initialize: " + err.Error()}
		}
	case <-ctx.Done():
		return errClientGone
	case <-b.shutdown:
		return ErrClosing
	}
	u.write(child, [][]byte{[]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)})
	// A ping's answer comes after whatever the child says as it starts
	// (server-everything announces its lists once initialized): the
	// bridge reads its lines in order, so by then that has been seen,
	// while no call was in flight, and was not taken for news of one.
	if err := u.ping(min(probeTimeout, max(b.cfg.InitTimeout, time.Second))); err != nil {
		u.logger().Debug("a leased MCP server did not answer the ping after initialize", "err", err)
	}
	return nil
}

// initializing reports whether a shared child's initialization has begun
// (a 2025 session's, or the bridge's own).
func (u *upstream) initializing() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.mux.initParams != nil
}

// gateNow is the gate of the shared child's initialization now.
func (u *upstream) gateNow() *initGate {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.mux.gate
}

// initResult is the shared child's InitializeResult, nil while it has
// none (or for a child of one client's).
func (u *upstream) initResult() []byte {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.mux == nil {
		return nil
	}
	return u.mux.initResult
}

// serverInfo is the child's Implementation, from its InitializeResult.
func (u *upstream) serverInfo() []byte {
	res := u.initResult()
	if res == nil {
		return nil
	}
	if v := member(res, "serverInfo"); v.ok() {
		return bytes.Clone(v.of(res))
	}
	return nil
}

// hasLogging reports whether the child declared the logging capability.
func (u *upstream) hasLogging() bool {
	res := u.initResult()
	if res == nil {
		return false
	}
	caps := member(res, "capabilities").of(res)
	return caps != nil && caps[0] == '{' && member(caps, "logging").ok()
}

// capability reports whether the child serves the capability: from its
// InitializeResult, or what it said it speaks (speak). It runs on every
// 2026-07-28 request, so it scans the result in place rather than
// decoding it.
func (u *upstream) capability(name string) bool {
	if name == "" {
		return true
	}
	u.mu.Lock()
	var res []byte
	if u.mux != nil {
		res = u.mux.initResult
	}
	if u.era == eraModern {
		res = u.discovered
	}
	u.mu.Unlock()
	if res == nil {
		return true // unknown: the child answers for itself
	}
	caps := member(res, "capabilities").of(res)
	switch {
	case caps == nil || string(caps) == "null":
		return false
	case caps[0] != '{':
		return true // malformed: the child answers for itself
	}
	return member(caps, name).ok()
}

// relevel sets the shared child's log level to the most verbose any
// party wants, telling the child if it changed.
func (u *upstream) relevel() {
	u.mu.Lock()
	if u.mux == nil {
		u.mu.Unlock()
		return
	}
	line := u.levelLocked()
	child := u.child
	u.mu.Unlock()
	if line != nil && child != nil {
		u.write(child, [][]byte{line})
	}
}

// subscribe adds p to the holders of uri on a shared child, and reports
// whether it is the first (the child is to be subscribed).
func (u *upstream) subscribe(p party, uri string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.subscribeLocked(p, uri)
}

// unsubscribe takes p off the holders of uri (the child is not told: it
// never took p's subscription).
func (u *upstream) unsubscribe(p party, uri string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.unsubscribeLocked(p, uri)
}
