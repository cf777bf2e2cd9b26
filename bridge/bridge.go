// Package bridge owns MCP sessions and the child processes behind them: it
// creates a session (and its child) on initialize, routes every JSON-RPC
// message between a session's client streams and its child, rewrites
// request ids so they cannot collide, and ends sessions on request, on idle
// expiry and when their child dies. It speaks JSON-RPC, not HTTP: it never
// imports net/http, and returns coded errors (Error, Kind) that each
// transport maps to its own statuses.
package bridge

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
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
	start startFunc // how a child starts: startProcess but in tests

	mu sync.Mutex
	// The sessions and the children they run on (start.go).
	sessionSet

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

	// The 2026-07-28 era's state (modernpool.go).
	modernEra
	// sandbox is the children's sandbox as this system enforces it, for
	// Snapshot; nil without one.
	sandbox *stdio.SandboxReport
	// restarted signals a multiplexed child's restart (restarted.go).
	restarted restartSignal
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
	b := &Bridge{cfg: cfg, start: start, log: cfg.Logger, shutdown: make(chan struct{})}
	b.sessionSet.init(cfg)
	if err := b.modernEra.init(); err != nil {
		return nil, err
	}
	if cfg.Sandbox != nil {
		// Planned once here; each child's start reuses the plan. An error
		// (a right not enforced) is each start's to report.
		b.sandbox, _ = cfg.Sandbox.Check(cfg.Command, cfg.Dir, cfg.Env)
	}
	if cfg.IdleTimeout > 0 || cfg.UnreachableTimeout > 0 {
		b.spawn(b.janitor)
	}
	if cfg.Prespawn > 0 && cfg.Mode == ModePerSession {
		b.kickPool()
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

// track runs f on a goroutine of the bridge's (spawn); once the bridge is
// closed, it runs f itself: f is a stop that Close must not miss.
func (b *Bridge) track(f func()) {
	if !b.spawn(f) {
		f()
	}
}
