package bridge

import (
	"bytes"
	"encoding/json"
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

// childLevelLocked is the most verbose level any session asked for.
func (u *upstream) childLevelLocked() string {
	lowest := -1
	for s := range u.sessions {
		if s.logLevel >= 0 && (lowest < 0 || s.logLevel < lowest) {
			lowest = s.logLevel
		}
	}
	if lowest < 0 {
		return u.mux.level
	}
	return logLevels[lowest]
}
