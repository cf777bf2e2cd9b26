package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// How a 2025 session gets its child: one of its own (a waiting one from
// the warm pool, or a new one within the process budget and the spawn
// turns), the shared child, or its principal's; a shared child is
// initialized once, and the sessions after the first are answered from
// its InitializeResult. A stateless request gets a session of its own on
// the shared child.

// sessionSet is the sessions of a Bridge, a part of it, and the children
// they run on but for the ones each session owns. sessions, shared and
// identities are guarded by the bridge's mutex.
type sessionSet struct {
	sessions map[string]*Session
	shared   *upstream // the shared child, in ModeShared
	// identities are the owners' children, in ModePerIdentity.
	identities map[string]*upstream

	streamIDs    atomic.Int64   // stream ids given out
	children     slots          // the process budget, MaxChildren (budget.go)
	pool         chan *upstream // started children waiting for a session (refill's)
	poolKick     chan struct{}  // capacity 1: the pool may need refilling
	spawnSem     chan struct{}  // spawnConcurrency slots
	spawnWaiting atomic.Int64   // sessions waiting for a slot
	// starts is per-session mode's start breaker (startbreaker.go).
	starts startBreaker
}

// init makes the set for cfg.
func (ss *sessionSet) init(cfg Config) {
	ss.sessions = make(map[string]*Session)
	ss.identities = make(map[string]*upstream)
	ss.children.max = int64(cfg.MaxChildren)
	ss.spawnSem = make(chan struct{}, spawnConcurrency)
	ss.pool = make(chan *upstream, cfg.Prespawn)
	ss.poolKick = make(chan struct{}, 1)
}

// attachChild gives s a child of its own: a waiting one from the pool if
// there is one, else a new one, within MaxChildren and the spawn queue.
func (b *Bridge) attachChild(ctx context.Context, s *Session, env []string) *Error {
	for len(env) == 0 { // a waiting child has no owner's variables

		var u *upstream
		select {
		case u = <-b.pool:
			b.kickPool()
		default:
		}
		if u == nil {
			break
		}
		u.mu.Lock()
		alive := u.child != nil && !u.stopping
		if alive {
			// Under u.mu: a child that dies from now on sees the session.
			u.parties[s] = true
			s.up = u
			u.logp.Store(s.log)
			u.child.SetLogger(s.log)
		}
		u.mu.Unlock()
		if alive {
			s.log.Info("session took a waiting child", "child_pid", s.ChildPid())
			return nil
		}
	}
	u := newUpstream(b, roleOwn)
	u.env = env
	u.logp.Store(s.log)
	if err := b.reserve(ctx, u, s.owner); err != nil {
		return err
	}
	if b.spawnWaiting.Add(1) > int64(b.cfg.SpawnQueue) {
		b.spawnWaiting.Add(-1)
		u.giveSlot()
		return &Error{Kind: KindUnavailable, Code: CodeInternalError, Message: "too many sessions waiting for an MCP server process to start; try again shortly"}
	}
	release, err := b.spawnTurn(ctx)
	b.spawnWaiting.Add(-1)
	if err != nil {
		u.giveSlot()
		return err
	}
	defer release()
	s.up = u
	u.parties[s] = true
	if err := u.start(s.log); err != nil {
		return errCannotStart(err)
	}
	return nil
}

// reserve takes a slot of the process budget for u before its child
// starts, making room for owner if none is free (withRoom).
func (b *Bridge) reserve(ctx context.Context, u *upstream, owner string) *Error {
	_, err := withRoom(ctx, b, owner, func() (struct{}, error) {
		if !u.takeSlot() {
			return struct{}{}, errNoSlot
		}
		return struct{}{}, nil
	})
	if err != nil {
		return errCannotStart(err)
	}
	return nil
}

// spawnTurn waits for one of the spawnConcurrency turns to start a
// process; release gives it back. The wait ends with ctx (the client
// left) or the bridge's shutdown.
func (b *Bridge) spawnTurn(ctx context.Context) (release func(), err *Error) {
	select {
	case b.spawnSem <- struct{}{}:
		return func() { <-b.spawnSem }, nil
	case <-ctx.Done():
		return nil, errClientGone
	case <-b.shutdown:
		return nil, ErrClosing
	}
}

func (b *Bridge) kickPool() {
	select {
	case b.poolKick <- struct{}{}:
	default:
	}
}

// joinShared puts s on the shared child, starting it on first use. The
// first session's initialize goes to the child; later sessions are
// answered from its InitializeResult, with their own protocol version
// where the child's allows it, once it is known (waitInit).
func (b *Bridge) joinShared(ctx context.Context, s *Session, u *upstream, msg Message, jsonOnly bool) (*Stream, error) {
	s.up = u
	u.mu.Lock()
	if u.mux.dead || u.stopping {
		u.mu.Unlock()
		return nil, &Error{Kind: KindUnavailable, Code: CodeChildExited, Message: "the shared MCP server keeps crashing or is stopping; try again shortly", ID: msg.ID()}
	}
	if u.mux.initParams == nil {
		if u.child == nil {
			u.mu.Unlock()
			return nil, withID(errRestarting, msg.ID())
		}
		u.parties[s] = true
		u.mux.initParams = bytes.Clone(msg.params())
		u.mu.Unlock()
		st, err := s.send([]Message{msg}, true, jsonOnly)
		if err != nil {
			u.mu.Lock()
			if u.mux.initResult == nil {
				u.mux.initParams = nil // nothing was sent: the next session initializes
			}
			u.mu.Unlock()
			s.end()
		}
		return st, err
	}
	u.parties[s] = true
	g := u.mux.gate
	u.mu.Unlock()
	if err := b.waitInit(ctx, g, s.done); err != nil {
		s.end()
		return nil, withID(err, msg.ID())
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if s.closed {
		return nil, withID(errSessionEnded, msg.ID())
	}
	s.version = sharedVersion(msg, u.mux.initResult)
	st := newStream(s, false, 1, jsonOnly)
	st.init = true
	s.posts[st] = true
	s.answerLocked(&call{st: st}, cachedInitialize(msg.ID(), u.mux.initResult, s.version))
	s.log.Info("session initialized", "protocol_version", s.version, "shared", true)
	return st, nil
}

// waitInit waits for the outcome of a shared child's initialization (g).
// It ends, with an error, when initialization fails (the child refused,
// died or timed out), the session ends (ended; nil for none), the client
// leaves (ctx), the bridge shuts down, or InitTimeout runs out.
func (b *Bridge) waitInit(ctx context.Context, g *initGate, ended <-chan struct{}) *Error {
	// Decided already, as for every modern request after the first: no
	// timer to make.
	select {
	case <-g.done:
		return g.err
	default:
	}
	var deadline <-chan time.Time
	if d := b.cfg.InitTimeout; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		deadline = t.C
	}
	select {
	case <-g.done:
		return g.err // written before done was closed
	case <-ended:
		return errSessionEnded
	case <-ctx.Done():
		return errClientGone
	case <-b.shutdown:
		return ErrClosing
	case <-deadline:
		return &Error{Kind: KindUnavailable, Code: CodeRequestTimeout,
			Message: fmt.Sprintf("the MCP server did not initialize within %v (--init-timeout)", b.cfg.InitTimeout)}
	}
}

// Errors of waits that end without an outcome.
var (
	errClientGone   = &Error{Kind: KindUnavailable, Code: CodeInternalError, Message: "the client went away before the MCP server was ready"}
	errSessionEnded = &Error{Kind: KindUnavailable, Code: CodeChildExited, Message: "the session ended before the MCP server initialized; try again shortly"}
	errRestarting   = &Error{Kind: KindUnavailable, Code: CodeChildExited, Message: "the MCP server is restarting; try again shortly"}
)

// sharedUpstream returns the shared child, starting it on first use
// (making room for owner within the process budget).
func (b *Bridge) sharedUpstream(ctx context.Context, owner string) (*upstream, *Error) {
	u, err := withRoom(ctx, b, owner, func() (*upstream, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.shared == nil {
			u := newUpstream(b, roleShared)
			if err := u.start(b.log); err != nil {
				return nil, err
			}
			b.shared = u
		}
		return b.shared, nil
	})
	if err != nil {
		return nil, errCannotStart(err)
	}
	return u, nil
}

// identityUpstream returns owner's child, starting it (with env) when
// the owner has none or its last one is stopping (making room within the
// process budget).
func (b *Bridge) identityUpstream(ctx context.Context, owner Owner, env []string) (*upstream, *Error) {
	u, err := withRoom(ctx, b, owner.Key, func() (*upstream, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		if u := b.identities[owner.Key]; u != nil {
			u.mu.Lock()
			ok := !u.stopping && !u.mux.dead
			u.mu.Unlock()
			if ok {
				return u, nil
			}
		}
		u := newUpstream(b, roleIdentity)
		u.owner, u.env = owner, env
		log := b.log.With("principal", owner.Name)
		u.logp.Store(log)
		if err := u.start(log); err != nil {
			return nil, err
		}
		b.identities[owner.Key] = u
		return u, nil
	})
	if err != nil {
		return nil, errCannotStart(err)
	}
	return u, nil
}

// retire stops an owner's child once its last session has ended.
func (b *Bridge) retire(u *upstream) {
	b.mu.Lock()
	if b.identities[u.owner.Key] == u {
		delete(b.identities, u.owner.Key)
	}
	b.mu.Unlock()
	u.logger().Info("the principal's last session ended; stopping its child")
	ctx, cancel := context.WithTimeout(context.Background(), 2*b.cfg.StopGrace+time.Second)
	defer cancel()
	u.stop(ctx)
}

// statelessParams initialize a shared child for stateless HTTP, where no
// client initializes anything.
const statelessParams = `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcp-bridge","version":"1"}}`

// Stateless returns a session for one stateless HTTP request: it lives on
// the shared child, initialized by the bridge itself, and is not
// registered (it has no id a client could name). End it with Close when
// the request is answered. For an initialize request it also returns the
// answer, from the cached InitializeResult. ctx is the client's request:
// the wait for the child's initialization ends when it does.
func (b *Bridge) Stateless(ctx context.Context, msg *Message) (*Session, []byte, error) {
	// The shared child is everyone's: started for no principal in
	// particular.
	u, err := b.sharedUpstream(ctx, "")
	if err != nil {
		return nil, nil, err
	}
	if err := b.initShared(ctx, u, statelessParams); err != nil {
		return nil, nil, err
	}
	s := newSession(b, NewID())
	s.up = u
	s.stateless = true
	u.mu.Lock()
	defer u.mu.Unlock()
	var answer []byte
	if msg != nil && msg.Method == MethodInitialize {
		s.version = sharedVersion(*msg, u.mux.initResult)
		answer = cachedInitialize(msg.ID(), u.mux.initResult, s.version)
	} else {
		var r struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(u.mux.initResult, &r)
		s.version = r.ProtocolVersion
	}
	u.parties[s] = true
	return s, answer, nil
}

// sharedVersion: the version the client asked for when the shared child
// speaks it or a later one and the bridge knows it, else the child's.
func sharedVersion(msg Message, result []byte) string {
	var req, res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(msg.params(), &req)
	_ = json.Unmarshal(result, &res)
	if KnownVersion(req.ProtocolVersion) && VersionAtLeast(res.ProtocolVersion, req.ProtocolVersion) {
		return req.ProtocolVersion
	}
	return res.ProtocolVersion
}

// cachedInitialize is the InitializeResult response for id, with version.
func cachedInitialize(id, result []byte, version string) []byte {
	var r map[string]json.RawMessage
	if err := json.Unmarshal(result, &r); err != nil {
		r = map[string]json.RawMessage{}
	}
	r["protocolVersion"], _ = json.Marshal(version)
	b, _ := json.Marshal(struct {
		JSONRPC string                     `json:"jsonrpc"`
		ID      json.RawMessage            `json:"id"`
		Result  map[string]json.RawMessage `json:"result"`
	}{"2.0", id, r})
	return b
}

// multiplexedLocked lists the children that sessions share: the shared
// one and the owners' ones. Called with b.mu held.
func (b *Bridge) multiplexedLocked() []*upstream {
	ups := make([]*upstream, 0, len(b.identities)+1)
	if b.shared != nil {
		ups = append(ups, b.shared)
	}
	for _, u := range b.identities {
		ups = append(ups, u)
	}
	return ups
}

// markReady publishes that s has its child (s.up), for Snapshot.
// It reports false when the bridge began draining or closing meanwhile
// (Close may not have seen the session): the caller must then end it
// itself.
func (b *Bridge) markReady(s *Session) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	s.ready = true
	return b.phaseNow() == phaseOpen
}

// readyLocked lists the sessions that have their child (markReady).
// Called with b.mu held.
func (b *Bridge) readyLocked() []*Session {
	sessions := make([]*Session, 0, len(b.sessions))
	for _, s := range b.sessions {
		if s.ready {
			sessions = append(sessions, s)
		}
	}
	return sessions
}

// endDue ends the sessions whose time is up at now (Session.expiry:
// idle for IdleTimeout, or no client can reach them for
// UnreachableTimeout).
func (b *Bridge) endDue(now time.Time) {
	b.mu.Lock()
	var due []*Session
	var unreachable []bool
	for _, s := range b.readyLocked() {
		if at, gone := s.expiry(); !at.IsZero() && !now.Before(at) {
			due = append(due, s)
			unreachable = append(unreachable, gone)
		}
	}
	b.mu.Unlock()
	for i, s := range due {
		reason := reasonExpired
		if unreachable[i] {
			reason = reasonUnreachable
			s.log.Info("no client can reach the session any more; ending it", "unreachable_timeout", b.cfg.UnreachableTimeout)
		} else {
			s.log.Info("session idle; ending it", "idle_timeout", b.cfg.IdleTimeout)
		}
		// Refused once the bridge is closed: Close ends it.
		b.spawn(func() { s.stop(context.Background(), reason) })
	}
}

// refill keeps the pool of waiting children full, until the bridge
// closes; it then stops the children still waiting. Only it adds to the
// pool, so once it has returned nothing waits there.
func (b *Bridge) refill() {
	for {
		select {
		case <-b.poolKick:
		case <-b.shutdown:
			b.emptyPool()
			return
		}
		for len(b.pool) < cap(b.pool) {
			u := newUpstream(b, roleOwn)
			if err := u.start(b.log); err != nil {
				// Every slot taken is no error: the pool fills as slots
				// are given back (watch kicks it when a child it stopped
				// is gone).
				if !errors.Is(err, ErrClosing) && !errors.Is(err, errNoSlot) {
					b.log.Error("cannot start a waiting MCP server process", "err", err)
				}
				break
			}
			b.pool <- u // room: only this goroutine adds
		}
	}
}

// emptyPool stops the children waiting in the pool, within Close's ctx.
func (b *Bridge) emptyPool() {
	for {
		select {
		case u := <-b.pool:
			u.stop(b.closeContext())
		default:
			return
		}
	}
}

// Initialize creates a session and its child, and sends the client's
// initialize request to it. The returned Stream carries the
// InitializeResult. ctx is the client's request: a wait for a process slot
// or for a shared child's initialization ends when it does.
func (b *Bridge) Initialize(ctx context.Context, req InitRequest) (*Session, *Stream, error) {
	msg, owner, env, jsonOnly := req.Message, req.Owner, req.Env, req.JSONOnly
	if msg.Kind != Request || msg.Method != MethodInitialize {
		return nil, nil, invalid(CodeInvalidRequest, "Invalid Request: a session starts with an initialize request", msg.ID())
	}
	id := NewID()
	b.mu.Lock()
	switch {
	case b.phaseNow() != phaseOpen:
		b.mu.Unlock()
		return nil, nil, ErrClosing
	case len(b.sessions) >= b.cfg.MaxSessions:
		b.mu.Unlock()
		return nil, nil, ErrTooManySessions
	}
	s := newSession(b, id)
	s.owner, s.ownerName = owner.Key, owner.Name
	s.elicitForm = DeclaresFormElicitation(msg.Param("capabilities"))
	b.sessions[id] = s // reserve the slot while the child starts
	b.mu.Unlock()
	release := func() {
		b.mu.Lock()
		delete(b.sessions, id)
		b.mu.Unlock()
	}

	if b.cfg.Mode != ModePerSession {
		var u *upstream
		var err *Error
		if b.cfg.Mode == ModeShared {
			u, err = b.sharedUpstream(ctx, owner.Key)
		} else {
			u, err = b.identityUpstream(ctx, owner, env)
		}
		if err != nil {
			release()
			return nil, nil, withID(err, msg.ID())
		}
		st, jerr := b.joinShared(ctx, s, u, msg, jsonOnly)
		if jerr != nil {
			release()
			return nil, nil, jerr
		}
		b.stats.SessionsCreated.Add(1)
		if !b.markReady(s) {
			s.Close()
			return nil, nil, ErrClosing
		}
		return s, st, nil
	}
	if err := b.starts.admit(b.cfg.Now()); err != nil {
		release()
		return nil, nil, withID(err, msg.ID())
	}
	if err := b.attachChild(ctx, s, env); err != nil {
		release()
		return nil, nil, withID(err, msg.ID())
	}
	b.stats.SessionsCreated.Add(1)
	if !b.markReady(s) {
		s.Close()
		return nil, nil, ErrClosing
	}
	st, err := s.send([]Message{msg}, true, jsonOnly)
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return s, st, nil
}

// Session returns the live session with that id if it belongs to owner,
// else ErrSessionNotFound: another principal's session answers exactly
// like one that never existed, so a stolen id is useless with another
// token and the answer does not even confirm it is live (MCP security
// best practices: bind sessions to the user, "<user_id>:<session_id>").
func (b *Bridge) Session(id, owner string) (*Session, error) {
	b.mu.Lock()
	s, ok := b.sessions[id]
	ok = ok && s.ready
	b.mu.Unlock()
	if !ok || s.owner != owner || s.isClosed() {
		return nil, ErrSessionNotFound
	}
	return s, nil
}

// Len is the number of live sessions.
func (b *Bridge) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.sessions)
}

func (b *Bridge) remove(s *Session) {
	b.mu.Lock()
	if b.sessions[s.id] == s {
		delete(b.sessions, s.id)
	}
	b.mu.Unlock()
}

// WaitingChildren is the number of started children waiting in the pool.
func (b *Bridge) WaitingChildren() int { return len(b.pool) }

// Children is the number of child processes alive or starting: the slots
// of the process budget (MaxChildren) taken.
func (b *Bridge) Children() int { return int(b.children.n.Load()) }

// census is how many sessions there are, and the shared child (nil
// unless one runs), for Ready.
func (b *Bridge) census() (int, *upstream) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.sessions), b.shared
}

// sessionSnapshots describes the sessions, and the children they run on
// (the shared one, the principals', each session's own), each once; seen
// gets the children described.
func (b *Bridge) sessionSnapshots(seen map[*upstream]bool) ([]SessionSnapshot, []ChildSnapshot) {
	b.mu.Lock()
	sessions := b.readyLocked()
	ups := b.multiplexedLocked()
	shared := b.shared
	b.mu.Unlock()
	for _, u := range ups {
		seen[u] = true
	}
	out := make([]SessionSnapshot, 0, len(sessions))
	for _, s := range sessions {
		out = append(out, s.snapshot())
		if u := s.up; !seen[u] {
			seen[u] = true
			ups = append(ups, u)
		}
	}
	children := []ChildSnapshot{}
	for _, u := range ups {
		if c, ok := u.snapshot(u == shared); ok {
			children = append(children, c)
		}
	}
	return out, children
}
