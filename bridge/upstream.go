package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
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
	nextID   int64          // child-side ids of requests, and progress tokens
	parties  map[party]bool // its clients: sessions, and the 2026-07-28 layer's calls and listens
	stopping bool           // the bridge stops the child: no restart
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

// call is one request in flight on the child.
type call struct {
	id       int64   // the child-side id
	party    party   // whose request it is; nil for the bridge's own: their answer is dropped
	clientID []byte  // byte for byte as the client sent it
	token    []byte  // the client's progress token, if any
	st       *Stream // the stream of a session's request that carries its answer
	init     bool    // an initialize request
	method   string  // for the log
	// quiet: a request that takes nothing the child sends but its answer
	// and what names it (a 2026-07-28 child's listen, open for as long as
	// its client stays): it never makes the request beside it ambiguous.
	quiet bool
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

func newUpstream(b *Bridge, r role) *upstream {
	u := &upstream{
		b:       b,
		role:    r,
		calls:   make(map[int64]*call),
		parties: make(map[party]bool),
		freed:   make(chan struct{}),
	}
	if r.multiplexed() {
		u.mux = &muxState{
			subs:       make(map[string]map[party]bool),
			serverReqs: make(map[string]party),
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

// newChildFor is an upstream of role r whose child starts with env added
// to the bridge's environment (a principal's claims).
func newChildFor(b *Bridge, r role, env []string) *upstream {
	u := newUpstream(b, r)
	u.env = env
	return u
}

// newLease is a lease's upstream: its child starts with env, and what it
// announces goes to the listens of hub, its pool's base child.
func newLease(b *Bridge, env []string, hub *upstream) *upstream {
	u := newChildFor(b, roleLease, env)
	u.hub = hub
	return u
}

// deadLocked reports whether the child's crash-loop breaker has tripped:
// it is not started again. Called with mu held.
func (u *upstream) deadLocked() bool { return u.mux != nil && u.mux.dead }

func (u *upstream) logger() *slog.Logger { return u.logp.Load() }

// setLogger labels the upstream's lines (a pooled child meets its
// session, a lease is marked as one).
func (u *upstream) setLogger(l *slog.Logger) { u.logp.Store(l) }

// alive reports whether the child runs and is not being stopped: it may
// take a client.
func (u *upstream) alive() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.child != nil && !u.stopping
}

// going reports whether the child is down for good (its breaker
// tripped), or being stopped.
func (u *upstream) going() (dead, stopping bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.deadLocked(), u.stopping
}

// pid is the child's pid, 0 while none runs.
func (u *upstream) pid() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.child == nil {
		return 0
	}
	return u.child.Pid()
}

// speak records what the child speaks, and, for a modern child, its
// DiscoverResult (what it can do: capability).
func (u *upstream) speak(era childEra, discovered []byte) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.era = era
	if discovered != nil {
		u.discovered = discovered
	}
}

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
	tok := m.metaAt("progressToken")
	if !tok.ok() {
		return splice(m.Raw, m.idAt(), idBytes)
	}
	// The child sees the request's own child-side id as its token: unique
	// on the child even when sessions pick the same tokens.
	c.token = bytes.Clone(tok.of(m.Raw))
	return splice2(m.Raw, m.idAt(), tok, idBytes)
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

// trackLocked puts c in flight under id with its deadline: --init-timeout
// for initialize, --request-timeout for the rest (expire).
func (u *upstream) trackLocked(id int64, c *call) {
	c.id = id
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

// pauseLocked stops c's deadline while its call is parked for its
// client's input (MRTR). Called with mu held.
func (u *upstream) pauseLocked(c *call) {
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
}

// rearmLocked gives c a new deadline when its call resumes. Called with
// mu held.
func (u *upstream) rearmLocked(c *call) {
	if d := u.b.cfg.RequestTimeout; d > 0 && c.timer == nil {
		c.timer = time.AfterFunc(d, func() { u.b.spawn(func() { u.expire(c.id, c, d) }) })
	}
}

// ask sends the child a request of the bridge's own and returns its
// result, or why there is none: the child's error, or its silence for d
// (errNoReply), ctx's end (its error), the bridge's shutdown (ErrClosing),
// or no child running (errRestarting).
func (u *upstream) ask(ctx context.Context, method string, params []byte, d time.Duration) ([]byte, error) {
	c := &call{answered: make(chan error, 1), keep: true}
	u.mu.Lock()
	child := u.child
	if child == nil {
		u.mu.Unlock()
		return nil, errRestarting
	}
	line := u.ownRequestLocked(method, params, c)
	id := u.nextID
	u.mu.Unlock()
	u.write(child, [][]byte{line})
	t := time.NewTimer(d)
	defer t.Stop()
	var err error
	select {
	case err = <-c.answered:
	case <-ctx.Done():
		err = ctx.Err()
	case <-t.C:
		err = errNoReply
	case <-u.b.shutdown:
		err = ErrClosing
	}
	u.mu.Lock()
	u.settleLocked(id)
	u.mu.Unlock()
	return c.result, err
}

func (u *upstream) snapshot(everyone bool) (ChildSnapshot, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.child == nil {
		return ChildSnapshot{}, false
	}
	c := ChildSnapshot{Pid: u.child.Pid(), Started: u.started,
		Sessions: len(u.parties), Identity: u.owner.Name, StderrTail: u.child.StderrTail(), everyone: everyone}
	if u.mux != nil {
		c.Restarts = u.mux.restarts
	}
	switch {
	case everyone:
	case u.role == roleIdentity:
		c.owners = []string{u.owner.Key}
	default:
		for p := range u.parties {
			if o := p.party().owner; !slices.Contains(c.owners, o) {
				c.owners = append(c.owners, o)
			}
		}
	}
	return c, true
}
