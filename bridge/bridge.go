// Package bridge owns MCP sessions and the child processes behind them: it
// creates a session (and its child) on initialize, routes every JSON-RPC
// message between a session's client streams and its child, rewrites
// request ids so they cannot collide, and ends sessions on request, on idle
// expiry and when their child dies. It speaks JSON-RPC, not HTTP: it never
// imports net/http, and returns coded errors (Error, Kind) that each
// transport maps to its own statuses.
package bridge

import (
	"bytes"
	"cmp"
	"context"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-bridge/mcp-bridge/stdio"
)

// Defaults for the zero values of Config.
const (
	DefaultMaxSessions = 1000
	DefaultIdleTimeout = 30 * time.Minute
	// DefaultUnreachableTimeout ends sooner a session no client can reach
	// any more (Config.UnreachableTimeout).
	DefaultUnreachableTimeout = time.Minute
	DefaultQueueLimit         = 1024
	// DefaultEventLogEvents and DefaultEventLogBytes bound a session's
	// event log (Config.EventLogEvents, EventLogBytes).
	DefaultEventLogEvents = 4096
	DefaultEventLogBytes  = 4 << 20
	DefaultSpawnQueue     = 64
	// DefaultRequestTimeout and DefaultInitTimeout bound the child's
	// answers (Config.RequestTimeout, InitTimeout).
	DefaultRequestTimeout = 5 * time.Minute
	DefaultInitTimeout    = 30 * time.Second
	// spawnConcurrency is how many processes start at once.
	spawnConcurrency = 8
)

// Session modes (Config.Mode).
const (
	ModePerSession = "per-session" // a child per session (the default)
	ModeShared     = "shared"      // one child for every session, multiplexed
	// ModePerIdentity: a child per owner (principal), shared by that
	// owner's sessions and stopped when the last of them ends.
	ModePerIdentity = "per-identity"
)

// Config configures a Bridge. Every field but Command has a working zero
// value.
type Config struct {
	// Command is the child's argv: run for each session (per-session),
	// once for every session (shared), or once per owner (per-identity).
	// No shell.
	Command []string
	// Mode is ModePerSession (default), ModeShared or ModePerIdentity. A
	// shared child is started on the first session and restarted when it
	// crashes; an owner's child is started on the owner's first session and
	// stopped with the last.
	Mode string
	// Prespawn keeps this many children started and waiting (per-session
	// mode), so a new session's initialize does not wait for a process to
	// start (node servers via npx take about a second). Default 0.
	Prespawn int
	// MaxChildren caps the child processes alive at once, waiting ones
	// included. Default MaxSessions + Prespawn.
	MaxChildren int
	// SpawnQueue bounds the sessions waiting for a process to start (at
	// most spawnConcurrency start at once); over it, initialize gets a
	// 503 with Retry-After. Default 64.
	SpawnQueue int
	// Dir is the child's working directory.
	Dir string
	// Env is the child's whole environment (see stdio.Environ). Nil means
	// an empty environment, never the bridge's own.
	Env []string
	// MaxLineBytes caps one message from a child. Default 16 MiB.
	MaxLineBytes int
	// StopGrace is each wait of the stop sequence. Default 2 s.
	StopGrace time.Duration
	// MaxSessions caps live sessions (and so children). Default 1000.
	MaxSessions int
	// IdleTimeout ends a session with no request in flight, no open stream
	// and no traffic for this long. Default 30 min; negative disables.
	IdleTimeout time.Duration
	// UnreachableTimeout ends sooner a session that, as far as the bridge
	// can tell, no client can reach any more: its client's GET stream
	// closed and nothing came since, or it never opened one and sent
	// nothing after notifications/initialized (Session.unreachableLocked).
	// Clients that stop without DELETE leave such sessions, each with its
	// process. Default 1 min; negative disables (IdleTimeout applies).
	UnreachableTimeout time.Duration
	// RequestTimeout bounds the wait for the child's answer to a request.
	// When it runs out the client gets a JSON-RPC error
	// (CodeRequestTimeout), the child gets notifications/cancelled with
	// its own id for the request, and a late answer is dropped. A
	// request in flight keeps its session from idling, so this also
	// bounds how long a hung request keeps a session and its child alive.
	// It also bounds how long the child may leave a message unread on its
	// stdin (stdio.Options.WriteStall): one that stops reading is taken to
	// be hung, its requests fail, and it is stopped (a shared one
	// restarted). Default 5 min; negative disables (as for the other
	// durations, the zero value is the default).
	RequestTimeout time.Duration
	// InitTimeout bounds the wait for the child's answer to initialize: a
	// client's, or the bridge's own (stateless mode, a restarted shared
	// child). When it runs out the client gets CodeRequestTimeout, its
	// session ends, and the child is stopped; a shared one is restarted as
	// after a crash, and the sessions waiting for it get the error.
	// Default 30 s; negative disables.
	InitTimeout time.Duration
	// QueueLimit bounds the messages a session holds while no stream is
	// open to take them. Default 1024. Over it, messages are dropped,
	// logged and counted.
	QueueLimit int
	// EventLogEvents and EventLogBytes bound a session's event log: the
	// SSE events its streams sent, or have for a reader that is behind or
	// gone, kept so a client that lost its connection can resume with
	// Last-Event-ID. The oldest events age out first; a resume from
	// before them fails with CodeEventsGone rather than leave a gap, and a
	// reader whose unread events age out has its connection dropped. The
	// same bounds cap what waits for one GET stream's reader, and the
	// bytes bound a session's queue. Defaults 4096 and 4 MiB.
	EventLogEvents int
	EventLogBytes  int
	// Stateless says the bridge serves stateless HTTP: its shared child
	// (Stateless) serves everyone, modern clients too.
	Stateless bool
	// ChildProtocol is what the child speaks, for modern (2026-07-28)
	// clients: ChildProtocolAuto (default) asks it once with
	// server/discover; ChildProtocolLegacy and ChildProtocolModern skip
	// the probe.
	ChildProtocol string
	// InputTTL is how long a call waits, parked, for its modern client's
	// retry with the input the child asked for (MRTR); then the child's
	// questions are declined and the call cancelled. A parked call holds
	// a process. Default 2 min (docs/decisions.md, "MCP 2026-07-28").
	InputTTL time.Duration
	// MaxParked caps one principal's calls on leased children, running or
	// parked: each may park for its client's input at any moment, so its
	// place is taken before its process starts, and a call over the cap
	// costs no process (429). Default 16.
	MaxParked int
	// ReplicaID names this bridge in the requestState handles it gives
	// out, so a load balancer can route a retry to the replica that holds
	// its call. Default: 8 random characters.
	ReplicaID string
	// Sandbox is what each child may touch and the binary it must be
	// (stdio.Options.Sandbox). Default nil: no sandbox.
	Sandbox *stdio.Sandbox
	// Logger is the base logger. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Stats are counters of events worth watching.
type Stats struct {
	SessionsCreated   atomic.Int64
	SessionsEnded     atomic.Int64
	QueueDrops        atomic.Int64 // messages dropped because a session's queue was full
	OversizeLines     atomic.Int64 // child lines over the cap
	UnroutableDrops   atomic.Int64 // responses the child sent for ids nobody asked
	ChildrenSpawned   atomic.Int64
	ChildrenFailed    atomic.Int64 // children that could not be started
	ChildrenExitedOK  atomic.Int64 // stopped by the bridge: Deleted + Idle + Shutdown
	ChildrenDeleted   atomic.Int64 // stopped because the client deleted the session
	ChildrenIdle      atomic.Int64 // stopped because the session expired
	ChildrenShutdown  atomic.Int64 // stopped because the bridge shut down
	ChildrenCrashed   atomic.Int64 // exited before the bridge asked them to
	ChildrenRestarted atomic.Int64 // shared children restarted after a crash
	// ChildrenUnresponsive: stopped because they could no longer answer
	// (stdout closed while running, or no answer to initialize in time).
	ChildrenUnresponsive atomic.Int64
	StreamsCut           atomic.Int64 // connections dropped because their client fell behind
	EventsEvicted        atomic.Int64 // events aged out of sessions' logs
	RequestsTimedOut     atomic.Int64 // requests the child did not answer in time (RequestTimeout, InitTimeout)
	LateProgress         atomic.Int64 // progress notifications after their request was over, dropped
	// RequestsCancelled: notifications/cancelled sent to a child for a
	// request still in flight there, on a client's behalf: a 2025 client
	// cancelled it, a 2026-07-28 client closed its stream, or a parked
	// call was abandoned. The only trace of a cancellation, which has no
	// response.
	RequestsCancelled atomic.Int64

	// The modern era's MRTR exchanges.
	InputRequired          atomic.Int64 // input_required results given (calls parked)
	InputExpired           atomic.Int64 // parked calls whose client did not retry in time
	InputRefused           atomic.Int64 // retries refused: bad, foreign, used or expired requestState
	InputMissingCapability atomic.Int64 // calls that failed after the child asked what the client cannot give (-32021)
	ParkedDrops            atomic.Int64 // notifications a parked call's child sent, dropped
	// InputPreempted: parked calls ended to give their process to another
	// principal holding fewer (--max-children; budget.go).
	InputPreempted atomic.Int64
}

// Bridge holds the live sessions.
type Bridge struct {
	cfg   Config
	log   *slog.Logger
	stats Stats
	// starts is per-session mode's start breaker (startbreaker.go).
	starts startBreaker
	start  startFunc // how a child starts: startProcess but in tests

	mu       sync.Mutex
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

	// The bridge's life (lifecycle.go): one state, guarded by stateMu, a
	// leaf lock (nothing is taken inside it), and one channel, shutdown,
	// closed as the state becomes closed, for waits to select on. wg
	// counts every goroutine of the bridge's (spawn): Close returns once
	// none is left.
	stateMu  sync.Mutex
	state    phase
	shutdown chan struct{}
	stopCtx  context.Context // Close's: bounds the stops of what is left after shutdown (refill's children)
	wg       sync.WaitGroup

	// The modern era (modern*.go, mrtr.go, listen.go).
	pools    map[string]*modernPool // by partition
	childEra atomic.Int32           // what the children speak, once probed
	probeMu  sync.Mutex             // one probe at a time
	listens  map[*ModernCall]bool   // open listens, which Drain ends
	running  map[*ModernCall]bool   // calls in progress on a child (Snapshot)
	exMu     sync.Mutex             // guards exchanges and leasedBy; a leaf
	// exchanges are the calls parked for their clients' retries, by
	// requestState handle. leasedBy counts the calls on leased children,
	// running or parked, by owner (an owner with none has no entry), and
	// leased all of them (enterLeased).
	exchanges map[string]*exchange
	leasedBy  map[string]int
	leased    int
	// stateKey seals the modern child's requestStates the bridge relays
	// (wrapState, sealed.go); random, this process's own. spent holds the
	// ids of the wrappers used (until they expire), under exMu;
	// spentSweep is the size at which expired ones are swept.
	stateKey   [32]byte
	stateAEAD  cipher.AEAD
	spent      map[[16]byte]int64
	spentSweep int
	// sandbox is the children's sandbox as this system enforces it, for
	// Snapshot; nil without one.
	sandbox *stdio.SandboxReport
}

// withDefaults returns cfg with every zero value that has a default
// filled in (a negative duration stays: it disables), or the error of a
// setting that cannot work.
func (cfg Config) withDefaults() (Config, error) {
	if len(cfg.Command) == 0 {
		return cfg, fmt.Errorf("bridge: no command")
	}
	cfg.MaxSessions = positiveOr(cfg.MaxSessions, DefaultMaxSessions)
	cfg.IdleTimeout = cmp.Or(cfg.IdleTimeout, DefaultIdleTimeout)
	cfg.UnreachableTimeout = cmp.Or(cfg.UnreachableTimeout, DefaultUnreachableTimeout)
	cfg.RequestTimeout = cmp.Or(cfg.RequestTimeout, DefaultRequestTimeout)
	cfg.InitTimeout = cmp.Or(cfg.InitTimeout, DefaultInitTimeout)
	cfg.QueueLimit = positiveOr(cfg.QueueLimit, DefaultQueueLimit)
	cfg.EventLogEvents = positiveOr(cfg.EventLogEvents, DefaultEventLogEvents)
	cfg.EventLogBytes = positiveOr(cfg.EventLogBytes, DefaultEventLogBytes)
	cfg.Prespawn = max(cfg.Prespawn, 0)
	cfg.MaxChildren = positiveOr(cfg.MaxChildren, cfg.MaxSessions+cfg.Prespawn)
	cfg.SpawnQueue = positiveOr(cfg.SpawnQueue, DefaultSpawnQueue)
	cfg.InputTTL = positiveOr(cfg.InputTTL, DefaultInputTTL)
	cfg.MaxParked = positiveOr(cfg.MaxParked, DefaultMaxParked)
	cfg.Mode = cmp.Or(cfg.Mode, ModePerSession)
	cfg.ChildProtocol = cmp.Or(cfg.ChildProtocol, ChildProtocolAuto)
	cfg.ReplicaID = cmp.Or(cfg.ReplicaID, NewID()[:8])
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	switch cfg.Mode {
	case ModePerSession, ModeShared, ModePerIdentity:
	default:
		return cfg, fmt.Errorf("bridge: mode %q: want %s, %s or %s", cfg.Mode, ModePerSession, ModeShared, ModePerIdentity)
	}
	switch cfg.ChildProtocol {
	case ChildProtocolAuto, ChildProtocolLegacy, ChildProtocolModern:
	default:
		return cfg, fmt.Errorf("bridge: child protocol %q: want %s, %s or %s", cfg.ChildProtocol, ChildProtocolAuto, ChildProtocolLegacy, ChildProtocolModern)
	}
	return cfg, nil
}

// positiveOr is v, or def when v is not positive (zero and negative
// values both mean "the default").
func positiveOr[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// New returns a Bridge. Close it to stop every child.
func New(cfg Config) (*Bridge, error) { return newBridge(cfg, startProcess) }

// newBridge is New with the way children start: child processes, or, in
// the bridge's unit tests, in-memory ones.
func newBridge(cfg Config, start startFunc) (*Bridge, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	b := &Bridge{
		cfg:        cfg,
		start:      start,
		log:        cfg.Logger,
		sessions:   make(map[string]*Session),
		identities: make(map[string]*upstream),
		pools:      make(map[string]*modernPool),
		listens:    make(map[*ModernCall]bool),
		running:    make(map[*ModernCall]bool),
		exchanges:  make(map[string]*exchange),
		leasedBy:   make(map[string]int),
		shutdown:   make(chan struct{}),
	}
	if _, err := rand.Read(b.stateKey[:]); err != nil {
		return nil, fmt.Errorf("bridge: requestState key: %w", err)
	}
	aead, err := newStateAEAD(b.stateKey[:])
	if err != nil {
		return nil, fmt.Errorf("bridge: requestState cipher: %w", err)
	}
	b.stateAEAD, b.spent, b.spentSweep = aead, map[[16]byte]int64{}, 1024
	b.children.max = int64(cfg.MaxChildren)
	if cfg.Sandbox != nil {
		// Planned once here; each child's start reuses the plan. An error
		// (a right not enforced) is each start's to report.
		b.sandbox, _ = cfg.Sandbox.Check(cfg.Command, cfg.Dir, cfg.Env)
	}
	b.spawnSem = make(chan struct{}, spawnConcurrency)
	b.pool = make(chan *upstream, cfg.Prespawn)
	b.poolKick = make(chan struct{}, 1)
	if cfg.IdleTimeout > 0 || cfg.UnreachableTimeout > 0 {
		b.spawn(b.janitor)
	}
	if cfg.Prespawn > 0 && cfg.Mode == ModePerSession {
		b.poolKick <- struct{}{}
		b.spawn(b.refill)
	}
	return b, nil
}

// Stats returns the bridge's counters.
func (b *Bridge) Stats() *Stats { return &b.stats }

// Owner is the principal a session belongs to, as the bridge needs it.
type Owner struct {
	// Key binds the session: only Session with the same key finds it,
	// and per-identity mode gives each key a child of its own. "" is the
	// anonymous principal of a bridge without authentication.
	Key string
	// Name shows the principal in Snapshot, as the logs do; it is never
	// compared.
	Name string
}

// InitRequest is what starts a session: the client's initialize request
// and who sends it.
type InitRequest struct {
	// Message is the client's initialize request.
	Message Message
	// Owner is the principal the session belongs to: only Session with
	// the same key finds it. The zero Owner is the anonymous principal of
	// a bridge without authentication.
	Owner Owner
	// Env is added to the environment of the owner's child ("K=V", from
	// the owner's allow-listed claims): in per-identity mode the owner's
	// child is started with it, in per-session mode each of the owner's
	// children is. Only what is listed here reaches a child.
	Env []string
	// JSONOnly as in Session.Send: the client takes the InitializeResult
	// as one JSON body.
	JSONOnly bool
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
		u.mux.initParams = bytes.Clone(msg.f.params.of(msg.Raw))
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
	_ = json.Unmarshal(msg.f.params.of(msg.Raw), &req)
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

// NewID returns 128 random bits, base64url: visible ASCII only, as MCP
// requires of Mcp-Session-Id, safe in a query string (the legacy
// transport's session ids), and unguessable. crypto/rand.Read does not
// fail: where the system's source breaks, the program crashes instead.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// childOptions are what a child of this bridge is started with (log
// labels its lines, env is added to Config.Env).
func (b *Bridge) childOptions(log *slog.Logger, env []string) stdio.Options {
	childEnv := b.cfg.Env
	if len(env) > 0 {
		childEnv = stdio.Environ(b.cfg.Env, nil, env)
	}
	return stdio.Options{
		Argv:         b.cfg.Command,
		Dir:          b.cfg.Dir,
		Env:          childEnv,
		MaxLineBytes: b.cfg.MaxLineBytes,
		StopGrace:    b.cfg.StopGrace,
		// A message the child leaves unread for as long as a request may
		// take can never be answered in time: it has stopped reading.
		WriteStall: max(b.cfg.RequestTimeout, 0),
		Logger:     log,
		Sandbox:    b.cfg.Sandbox,
	}
}

func (c *Config) maxLine() int {
	if c.MaxLineBytes > 0 {
		return c.MaxLineBytes
	}
	return stdio.DefaultMaxLineBytes
}

// WaitingChildren is the number of started children waiting in the pool.
func (b *Bridge) WaitingChildren() int { return len(b.pool) }

// Children is the number of child processes alive or starting: the slots
// of the process budget (MaxChildren) taken.
func (b *Bridge) Children() int { return int(b.children.n.Load()) }

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

// reclaimPools stops the children of modern pools that no call used for
// IdleTimeout: warm leases, and a base child of the pool's own.
func (b *Bridge) reclaimPools(now time.Time) {
	b.mu.Lock()
	var stop []*upstream
	var left []*modernPool
	for _, p := range b.pools {
		stop = append(stop, p.reclaim(now, b.cfg.IdleTimeout)...)
		left = append(left, p)
	}
	b.mu.Unlock()
	for _, p := range left {
		p.mu.Lock()
		empty := p.emptyLocked()
		p.mu.Unlock()
		if empty {
			b.forgetPool(p)
		}
	}
	for _, u := range stop {
		u.logger().Info("modern pool idle; stopping its child", "idle_timeout", b.cfg.IdleTimeout)
		b.track(func() { u.stop(context.Background()) })
	}
}

// track runs f on a goroutine of the bridge's (spawn); once the bridge is
// closed, it runs f itself: f is a stop that Close must not miss.
func (b *Bridge) track(f func()) {
	if !b.spawn(f) {
		f()
	}
}
