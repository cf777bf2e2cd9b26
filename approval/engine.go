// Package approval owns the human's yes before a risky tool runs: the
// rules that mark the calls needing one (Policy), the pending approvals
// and what decides them (Engine), and the question a caller's user is
// asked (Question, ParseAnswer). It knows nothing of HTTP or of sessions:
// the transports hold a call and ask its caller through the hooks of a
// Request, httpapi serves the operators' channel (Resolve, List, Watch),
// and both audit what the engine reports (Options.Observe).
//
// An approval covers one call and nothing else: it is bound to the
// principal, the server, the tool, the SHA-256 of the arguments'
// canonical JSON (canonjson.Digest, the rule a sealed requestState binds
// arguments by), the rule that asked for it, and an expiry; once a call
// has run on it, it is gone. Nothing a caller sends counts as consent but
// the answer to the question (an argument named confirm, a _meta field a
// model could set, are arguments like any other, bound by the digest).
package approval

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/internal/canonjson"
)

// Defaults for the zero values of Options.
const (
	DefaultTimeout                = 2 * time.Minute
	DefaultMaxPending             = 1000
	DefaultMaxPendingPerPrincipal = 20
	DefaultProgressInterval       = 10 * time.Second
	DefaultMaxWatchers            = 64
	// watchBuffer is how many events a watcher may fall behind before
	// it is cut off (and reconnects, to be sent what is pending again).
	watchBuffer = 256
)

// Options configures an Engine. The zero value works: calls needing
// approval are then denied, saying nobody can approve them, unless their
// caller can be asked.
type Options struct {
	// Timeout is how long a call waits for a decision; then it is
	// denied as expired and never reaches the server. Default 2 min.
	Timeout time.Duration
	// MaxPending bounds the approvals alive at once (pending, or
	// approved and not run yet), MaxPendingPerPrincipal those of one
	// principal; past either, a call is refused at once, saying which.
	// Defaults 1000 and 20.
	MaxPending             int
	MaxPendingPerPrincipal int
	// Approvers may decide through the operators' channel (Resolve). An
	// empty list names nobody: only a caller's own user can approve.
	Approvers auth.Subjects
	// SeparateApprover: nobody approves a call of their own; the caller's
	// user is then never asked, and an operator who is the caller is
	// refused (ErrSelfApproval).
	SeparateApprover bool
	// FailOpen runs a call that nobody could be asked about (no caller
	// channel, no approver) instead of denying it. A decision a human
	// made, an expiry and a bound still deny. Off by default: say so at
	// start when it is on.
	FailOpen bool
	// ProgressInterval is how often a waiting call's Progress hook is
	// called. Default 10 s.
	ProgressInterval time.Duration
	// MaxWatchers bounds the operators' event streams (Watch). Default 64.
	MaxWatchers int
	// Observe, if set, is told every event, in order, one at a time:
	// the audit log. It must not call the engine.
	Observe func(Event)
	// Clock is the engine's clock. Default: the system's.
	Clock Clock
	// Logger logs every event. Default slog.Default().
	Logger *slog.Logger
}

// Clock is what the engine reads time from and waits with.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed; stop
	// cancels it, reporting whether it did.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }
func (systemClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// Decision is how a call's approval ended, or that it has not.
type Decision uint8

const (
	// Pending: not decided. Either the question went to a caller who
	// answers in a later request (Request.AskLater: Outcome.Question is
	// what to ask), or the waiter's context ended; the approval waits
	// for a retry until it expires.
	Pending Decision = iota
	// Approved: run the call, once. The approval is spent.
	Approved
	// Denied: a human said no, the caller could not be asked and nobody
	// else can approve, the call already ran on another request, or the
	// bridge is shutting down. Outcome.Message says which.
	Denied
	// Expired: nobody decided within the timeout.
	Expired
	// Refused: over a bound of pending approvals; nobody was asked.
	Refused
)

func (d Decision) String() string {
	return [...]string{"pending", "approved", "denied", "expired", "refused"}[d]
}

// Channel is who decided.
type Channel string

const (
	ChannelCaller   Channel = "caller"    // the caller's user, through the caller's client
	ChannelOperator Channel = "operator"  // an approver, through the operators' channel
	ChannelFailOpen Channel = "fail-open" // nobody: --approval-fail-open ran it
	ChannelBridge   Channel = "bridge"    // the bridge itself: no channel, a bound, a shutdown, an expiry
)

// Event kinds, as the audit log and the metrics name them.
const (
	EventRequested = "approval_requested"
	EventApproved  = "approved"
	EventDenied    = "denied"
	EventExpired   = "expired"
	EventExecuted  = "executed"
)

// EventKinds are every kind, in the order a call meets them.
var EventKinds = []string{EventRequested, EventApproved, EventDenied, EventExpired, EventExecuted}

// Request is one call that a Policy holds for approval, and the hooks of
// the transport that holds it.
type Request struct {
	// Principal is who calls; the approval is theirs alone.
	Principal auth.Principal
	// Server is the server's name (Policy.Server), Tool the tool,
	// Arguments the call's arguments as sent (nil for none).
	Server    string
	Tool      string
	Arguments json.RawMessage
	// Rule is the rule that holds the call (Policy.Needs).
	Rule Rule

	// Ask, if set, asks the caller's user the question (a 2025 session
	// whose client declared form elicitation: elicitation/create on the
	// call's stream) and returns the result the client answered, as
	// received, for ParseAnswer. Decide calls it at most once at a
	// time per approval, in a goroutine of its own whose context ends
	// when the answer no longer matters (decided elsewhere, expired,
	// the waiter gone): Ask must return then, and may withdraw the
	// question. An error means the caller could not be asked.
	Ask func(ctx context.Context, q Question) (json.RawMessage, error)
	// AskLater: the caller is asked in the answer to this request and
	// answers in a retry (a 2026-07-28 client: an input_required result
	// with a sealed requestState). Decide then returns at once, Pending
	// with the Question, unless the approval is decided already.
	AskLater bool
	// Answer is the caller's answer a retry brings (AskLater): the id
	// of the question it answers, unsealed from its requestState by the
	// transport, and the elicitation result. An answer to another
	// approval than the pending one of this call is ignored.
	Answer *Answer
	// Progress, if set, is called every ProgressInterval while Decide
	// waits, so that the transport can send progress notifications (a
	// client may reset its timeout on them).
	Progress func(Waiting)
}

// Answer is a caller's answer brought by a retry.
type Answer struct {
	ID     string
	Result json.RawMessage
}

// Waiting is what a progress notification says of a waiting call.
type Waiting struct {
	ID      string
	Elapsed time.Duration
	Timeout time.Duration
}

// Outcome is how Decide ended.
type Outcome struct {
	Decision Decision
	// ID names the approval (the audit log's "approval").
	ID string
	// Channel and Approver say who decided (Approver: the principal,
	// as logs name it); Reason is the approver's reason, or why the
	// bridge decided.
	Channel  Channel
	Approver string
	Reason   string
	// Waited is the time from the request to the decision.
	Waited time.Duration
	// Question is what to ask the caller (Pending, AskLater).
	Question *Question
	// Message is what the caller is told of an outcome other than
	// Approved: the text of its isError result.
	Message string
}

// Errors of Resolve.
var (
	ErrNotFound     = errors.New("no such approval pending: it was decided, ran, expired, or never was")
	ErrDecided      = errors.New("the approval is approved already, and its call not run yet")
	ErrNotApprover  = errors.New("only an approver may decide (--approver)")
	ErrSelfApproval = errors.New("the approver must not be the caller (--approval-separate-approver)")
	ErrClosed       = errors.New("the bridge is shutting down")
	ErrTooManyWatch = errors.New("too many approval streams are open")
)

// Engine holds calls for approval and takes the decisions. Safe for
// concurrent use. Its goroutines: one expiry timer per approval (the
// clock's), each Decide's own ask goroutine while it asks (Decide waits
// for it), none else.
type Engine struct {
	opts  Options
	clock Clock
	log   *slog.Logger

	mu           sync.Mutex
	closed       bool
	byID         map[string]*record
	byKey        map[key]*record
	perPrincipal map[string]int
	counts       map[[2]string]uint64 // {event, channel}

	// emitMu orders events: taken before mu is released by whoever
	// made them, held while they are delivered, never held while mu is
	// taken. It guards watchers.
	emitMu   sync.Mutex
	watchers map[*Watcher]struct{}

	// onWait, for tests, is told (under mu) each time a request starts
	// waiting on an approval.
	onWait func(id string)
}

// key is what a retry of the same call shares with it.
type key struct {
	principal, server, tool, rule string
	digest                        [32]byte
}

type state uint8

const (
	statePending state = iota
	stateApproved
	stateDenied
	stateExpired
)

// record is one approval.
type record struct {
	id        string
	key       key
	principal auth.Principal
	shown     string // the arguments as people see them
	requested time.Time
	expires   time.Time
	question  Question

	state   state
	taken   bool          // approved and run: spent
	done    chan struct{} // closed once decided (approved, denied) or expired
	isDone  bool
	stop    func() bool // the expiry timer
	waiters int         // Decide calls waiting on it now
	asking  bool        // a Decide's Ask is under way
	// askFreed is closed when the Decide that asks stops asking without
	// an answer (its caller left, or could not be asked): a waiter that
	// could ask then asks in its place (a retry that came while the
	// first was still being withdrawn).
	askFreed chan struct{}
	offered  bool // the question went to a caller who answers later
	asked    bool // the caller was asked, at least once
	channel  Channel
	approver string
	reason   string
	decided  time.Time
}

func (r *record) finish() {
	if !r.isDone {
		r.isDone = true
		close(r.done)
	}
}

// New returns an engine.
func New(opts Options) *Engine {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = DefaultMaxPending
	}
	if opts.MaxPendingPerPrincipal <= 0 {
		opts.MaxPendingPerPrincipal = DefaultMaxPendingPerPrincipal
	}
	if opts.ProgressInterval <= 0 {
		opts.ProgressInterval = DefaultProgressInterval
	}
	if opts.MaxWatchers <= 0 {
		opts.MaxWatchers = DefaultMaxWatchers
	}
	e := &Engine{opts: opts, clock: opts.Clock, log: opts.Logger,
		byID: map[string]*record{}, byKey: map[key]*record{}, perPrincipal: map[string]int{},
		counts: map[[2]string]uint64{}, watchers: map[*Watcher]struct{}{}}
	if e.clock == nil {
		e.clock = systemClock{}
	}
	if e.log == nil {
		e.log = slog.Default()
	}
	return e
}

// Timeout is how long a call waits for a decision.
func (e *Engine) Timeout() time.Duration { return e.opts.Timeout }

// Operators reports whether anyone may decide through the operators'
// channel.
func (e *Engine) Operators() bool { return len(e.opts.Approvers) > 0 }

// MayDecide reports whether p may decide through the operators' channel.
func (e *Engine) MayDecide(p auth.Principal) bool { return e.opts.Approvers.Match(p) }

// SeparateApprover reports whether nobody may approve their own calls.
func (e *Engine) SeparateApprover() bool { return e.opts.SeparateApprover }

// Decide holds the call req describes until it is approved, denied or
// expired, or ctx ends. A call that has a pending approval already (a
// retry of it: the same principal, server, tool, arguments and rule)
// waits on that one, and one approval runs one call: of several requests
// waiting on it, one gets Approved, the others Denied. Without any
// channel (no caller to ask, no approver), the call is denied at once,
// saying why, unless FailOpen. When ctx ends first, the outcome is
// Pending with ctx's error, and the approval goes on waiting for a retry.
func (e *Engine) Decide(ctx context.Context, req Request) (Outcome, error) {
	if req.Tool == "" {
		return Outcome{}, errors.New("approval: a request without a tool")
	}
	start := e.clock.Now()
	k := key{principal: req.Principal.Key(), server: req.Server, tool: req.Tool, rule: req.Rule.String(), digest: canonjson.Digest(req.Arguments)}
	caller := (req.Ask != nil || req.AskLater) && !e.opts.SeparateApprover

	e.mu.Lock()
	var evs []Event
	rec := e.byKey[k]
	if rec == nil || e.closed {
		if out, done := e.admitLocked(req, k, caller, start, &evs); done {
			e.unlockAndEmit(evs)
			return out, nil
		}
		rec = e.byKey[k]
	} else if !caller && !e.Operators() && !rec.asking {
		// A retry that cannot be asked, on an approval that nobody is
		// being asked about: nobody can decide it.
		e.mu.Unlock()
		return e.noChannel(req, rec.id), nil
	}
	if a := req.Answer; a != nil && caller && a.ID == rec.id && rec.offered {
		approve, why := ParseAnswer(a.Result)
		_ = e.resolveLocked(rec, approve, ChannelCaller, req.Principal.String(), why, &evs)
	}
	if rec.state != statePending {
		out := e.settleLocked(rec, start, &evs)
		e.unlockAndEmit(evs)
		return out, nil
	}
	if req.AskLater && caller {
		rec.offered, rec.asked = true, true
		q := rec.question
		out := Outcome{Decision: Pending, ID: rec.id, Question: &q, Waited: e.clock.Now().Sub(rec.requested)}
		e.unlockAndEmit(evs)
		return out, nil
	}
	rec.waiters++
	if e.onWait != nil {
		e.onWait(rec.id)
	}
	a := &asker{ctx: ctx, req: req, can: req.Ask != nil && caller}
	defer a.stop()
	if a.can && !rec.asking {
		a.askLocked(rec)
	}
	e.unlockAndEmit(evs)
	return e.wait(ctx, req, rec, a, start)
}

// asker is one Decide's asking of its caller: at most one Decide of an
// approval asks at a time; one that can, and is not, asks when the one
// that is stops without an answer.
type asker struct {
	ctx   context.Context
	req   Request
	can   bool           // its caller can be asked
	asked chan askResult // its Ask's result; nil when it is not asking
	stops []func()       // each Ask goroutine's end, which stop waits for
}

// askLocked starts asking the caller about rec, on a goroutine that stop
// ends (its context cancelled) and waits for.
func (a *asker) askLocked(rec *record) {
	rec.asking, rec.asked = true, true
	rec.askFreed = make(chan struct{})
	a.asked = make(chan askResult, 1)
	askCtx, cancel := context.WithCancel(a.ctx)
	askDone := make(chan struct{})
	q, ask, out := rec.question, a.req.Ask, a.asked
	go func() {
		defer close(askDone)
		res, err := ask(askCtx, q)
		out <- askResult{res, err}
	}()
	a.stops = append(a.stops, func() { cancel(); <-askDone })
}

func (a *asker) stop() {
	for _, f := range a.stops {
		f()
	}
}

// freedLocked is what a waiter that could ask, and is not asking, waits
// on to ask in place of the one that is: nil when it cannot or need not.
func (a *asker) freedLocked(rec *record) <-chan struct{} {
	if !a.can || a.asked != nil || !rec.asking {
		return nil
	}
	return rec.askFreed
}

// freeAskLocked marks rec as asked by nobody, telling a waiter that
// could ask to.
func freeAskLocked(rec *record) {
	rec.asking = false
	if rec.askFreed != nil {
		close(rec.askFreed)
		rec.askFreed = nil
	}
}

type askResult struct {
	result json.RawMessage
	err    error
}

// admitLocked makes the approval of a call that has none: or answers it
// at once (done) when nobody could decide it, over a bound, or at
// shutdown.
func (e *Engine) admitLocked(req Request, k key, caller bool, now time.Time, evs *[]Event) (out Outcome, done bool) {
	id := newID()
	quick := func(d Decision, ch Channel, reason, msg string) (Outcome, bool) {
		v := View{ID: id, State: "denied", Principal: req.Principal.String(), Server: req.Server, Tool: req.Tool, Rule: k.rule, Requested: now, Expires: now}
		v.Arguments, _ = shownArguments(req.Arguments)
		v.ArgumentsSHA256 = hex.EncodeToString(k.digest[:])
		kind := EventDenied
		if d == Approved {
			v.State, kind = "approved", EventApproved
		}
		*evs = append(*evs, e.eventLocked(EventRequested, v, "", "", "", now, 0))
		*evs = append(*evs, e.eventLocked(kind, v, ch, "", reason, now, 0))
		if d == Approved {
			*evs = append(*evs, e.eventLocked(EventExecuted, v, ch, "", reason, now, 0))
		}
		return Outcome{Decision: d, ID: id, Channel: ch, Reason: reason, Message: msg}, true
	}
	switch {
	case e.closed:
		return quick(Denied, ChannelBridge, ErrClosed.Error(), fmt.Sprintf("tool %q was not run: the bridge is shutting down", req.Tool))
	case !caller && !e.Operators() && e.opts.FailOpen:
		return quick(Approved, ChannelFailOpen, "nobody could be asked, and --approval-fail-open runs such calls", "")
	case !caller && !e.Operators():
		o := e.noChannel(req, id)
		return quick(Denied, ChannelBridge, o.Reason, o.Message)
	case len(e.byID) >= e.opts.MaxPending:
		return e.refusal(req, id, fmt.Sprintf("%d approvals are pending, the most the bridge holds (--max-approvals)", e.opts.MaxPending), quick)
	case e.perPrincipal[k.principal] >= e.opts.MaxPendingPerPrincipal:
		return e.refusal(req, id, fmt.Sprintf("%d approvals of this principal are pending, the most one principal may have (--max-approvals-per-principal)", e.opts.MaxPendingPerPrincipal), quick)
	}
	rec := &record{id: id, key: k, principal: req.Principal, requested: now, expires: now.Add(e.opts.Timeout), done: make(chan struct{})}
	rec.shown, _ = shownArguments(req.Arguments)
	rec.question = Question{ID: id, Message: message(req.Server, req.Tool, rec.shown, k.rule, e.opts.Timeout), Schema: Schema}
	rec.stop = e.clock.AfterFunc(e.opts.Timeout, func() { e.expire(rec) })
	e.byID[id], e.byKey[k] = rec, rec
	e.perPrincipal[k.principal]++
	*evs = append(*evs, e.eventLocked(EventRequested, rec.viewLocked(), "", "", "", now, 0))
	return Outcome{}, false
}

func (e *Engine) refusal(req Request, id, why string, quick func(Decision, Channel, string, string) (Outcome, bool)) (Outcome, bool) {
	out, done := quick(Refused, ChannelBridge, why, fmt.Sprintf("tool %q was not run: it needs a human's approval, and %s; retry once some are decided", req.Tool, why))
	out.Decision = Refused
	return out, done
}

// noChannel is the denial of a call nobody can be asked about.
func (e *Engine) noChannel(req Request, id string) Outcome {
	why := "nobody can approve it: the client did not declare form elicitation, and no approver is configured (--approver)"
	if e.opts.SeparateApprover && !e.Operators() {
		why = "nobody can approve it: the approver must not be the caller (--approval-separate-approver), and no approver is configured (--approver)"
	}
	return Outcome{Decision: Denied, ID: id, Channel: ChannelBridge, Reason: why,
		Message: fmt.Sprintf("tool %q was not run: it needs a human's approval (rule %s), and %s", req.Tool, req.Rule, why)}
}

// wait waits for rec's decision as one of its waiters, calling
// req.Progress every ProgressInterval meanwhile.
func (e *Engine) wait(ctx context.Context, req Request, rec *record, a *asker, start time.Time) (Outcome, error) {
	var tick chan struct{}
	stopTick := func() bool { return false }
	schedule := func() {}
	if req.Progress != nil {
		tick = make(chan struct{}, 1)
		schedule = func() {
			stopTick = e.clock.AfterFunc(e.opts.ProgressInterval, func() {
				select {
				case tick <- struct{}{}:
				default:
				}
			})
		}
		schedule()
		defer func() { stopTick() }()
	}
	for {
		out, err, over, ticked := e.waitOnce(ctx, req, rec, a, tick, start)
		if over {
			return out, err
		}
		if ticked {
			req.Progress(Waiting{ID: rec.id, Elapsed: e.clock.Now().Sub(rec.requested), Timeout: e.opts.Timeout})
			schedule()
		}
	}
}

// waitOnce waits for one thing: the decision (over), ctx's end (over),
// the caller's answer (applied), a progress tick (for the caller to
// send).
func (e *Engine) waitOnce(ctx context.Context, req Request, rec *record, a *asker, tick chan struct{}, start time.Time) (_ Outcome, _ error, over, ticked bool) {
	e.mu.Lock()
	freed := a.freedLocked(rec)
	e.mu.Unlock()
	select {
	case <-freed:
		e.mu.Lock()
		if rec.state == statePending && !rec.asking {
			a.askLocked(rec)
		}
		e.mu.Unlock()
		return Outcome{}, nil, false, false
	case <-rec.done:
		e.mu.Lock()
		rec.waiters--
		var evs []Event
		out := e.settleLocked(rec, start, &evs)
		e.unlockAndEmit(evs)
		return out, nil, true, false
	case <-ctx.Done():
		e.mu.Lock()
		rec.waiters--
		if a.asked != nil {
			freeAskLocked(rec) // a retry may ask again
		}
		out := Outcome{Decision: Pending, ID: rec.id, Waited: e.clock.Now().Sub(start)}
		e.mu.Unlock()
		return out, ctx.Err(), true, false
	case res := <-a.asked:
		a.asked = nil
		var evs []Event
		e.mu.Lock()
		freeAskLocked(rec)
		switch {
		case res.err == nil:
			approve, why := ParseAnswer(res.result)
			_ = e.resolveLocked(rec, approve, ChannelCaller, req.Principal.String(), why, &evs)
		case !e.Operators():
			_ = e.resolveLocked(rec, false, ChannelBridge, "", "the caller could not be asked ("+res.err.Error()+"), and no approver is configured (--approver)", &evs)
		}
		e.unlockAndEmit(evs)
		return Outcome{}, nil, false, false
	case <-tick:
		return Outcome{}, nil, false, true
	}
}

// settleLocked is the outcome of a decided approval for one of its
// calls: the first to take an approval runs; it is spent then.
func (e *Engine) settleLocked(rec *record, start time.Time, evs *[]Event) Outcome {
	now := e.clock.Now()
	out := Outcome{ID: rec.id, Channel: rec.channel, Approver: rec.approver, Reason: rec.reason, Waited: now.Sub(start)}
	tool := rec.key.tool
	switch {
	case rec.state == stateApproved && !rec.taken:
		rec.taken = true
		e.removeLocked(rec)
		*evs = append(*evs, e.eventLocked(EventExecuted, rec.viewLocked(), rec.channel, rec.approver, rec.reason, now, now.Sub(rec.requested)))
		out.Decision = Approved
	case rec.state == stateApproved:
		out.Decision, out.Message = Denied, fmt.Sprintf("tool %q was not run: it was approved once, and that approval already ran it for another request of the same call", tool)
	case rec.state == stateDenied:
		out.Decision = Denied
		switch rec.channel {
		case ChannelBridge:
			out.Message = fmt.Sprintf("tool %q was not run: %s", tool, rec.reason)
		default:
			out.Message = fmt.Sprintf("tool %q was not run: %s denied it (%s)", tool, whoDecided(rec), rec.channel)
			if rec.reason != "" {
				out.Message += ": " + rec.reason
			}
		}
	default:
		out.Decision, out.Message = Expired, fmt.Sprintf("tool %q was not run: nobody approved it within %s", tool, e.opts.Timeout)
	}
	return out
}

func whoDecided(rec *record) string {
	if rec.channel == ChannelCaller {
		return "the caller's user"
	}
	return rec.approver
}

// resolveLocked applies a decision: an approval of a pending approval,
// or a denial of one not run yet (a denial wins over an approval whose
// call has not run: any human with a say may still stop it).
func (e *Engine) resolveLocked(rec *record, approve bool, ch Channel, by, reason string, evs *[]Event) error {
	if e.byID[rec.id] != rec {
		return ErrNotFound
	}
	if approve && rec.state != statePending {
		return ErrDecided
	}
	now := e.clock.Now()
	rec.channel, rec.approver, rec.reason, rec.decided = ch, by, reason, now
	kind := EventApproved
	if approve {
		rec.state = stateApproved
	} else {
		rec.state, kind = stateDenied, EventDenied
		e.removeLocked(rec)
	}
	rec.finish()
	*evs = append(*evs, e.eventLocked(kind, rec.viewLocked(), ch, by, reason, now, now.Sub(rec.requested)))
	return nil
}

// expire ends an approval nobody decided in time, or whose approved call
// never came to run.
func (e *Engine) expire(rec *record) {
	e.mu.Lock()
	if e.byID[rec.id] != rec {
		e.mu.Unlock()
		return
	}
	rec.state = stateExpired
	e.removeLocked(rec)
	rec.finish()
	now := e.clock.Now()
	evs := []Event{e.eventLocked(EventExpired, rec.viewLocked(), ChannelBridge, "", fmt.Sprintf("no decision within %s", e.opts.Timeout), now, now.Sub(rec.requested))}
	e.unlockAndEmit(evs)
}

// removeLocked forgets rec: no retry finds it, no operator sees it.
func (e *Engine) removeLocked(rec *record) {
	if e.byID[rec.id] != rec {
		return
	}
	delete(e.byID, rec.id)
	delete(e.byKey, rec.key)
	if e.perPrincipal[rec.key.principal]--; e.perPrincipal[rec.key.principal] <= 0 {
		delete(e.perPrincipal, rec.key.principal)
	}
	rec.stop()
}

// Verdict is an operator's decision.
type Verdict struct {
	Approve bool
	// Reason is said to the caller and written to the audit log.
	Reason string
	// By is the operator.
	By auth.Principal
}

// MaxReason is the longest reason kept, in bytes; a longer one is cut.
const MaxReason = 500

// Resolve decides approval id through the operators' channel: by an
// approver, not the caller when SeparateApprover. It returns the approval
// as decided.
func (e *Engine) Resolve(id string, v Verdict) (View, error) {
	if !e.MayDecide(v.By) {
		return View{}, ErrNotApprover
	}
	if len(v.Reason) > MaxReason {
		v.Reason = cutString(v.Reason, MaxReason)
	}
	e.mu.Lock()
	rec, ok := e.byID[id]
	switch {
	case e.closed:
		e.mu.Unlock()
		return View{}, ErrClosed
	case !ok:
		e.mu.Unlock()
		return View{}, ErrNotFound
	case e.opts.SeparateApprover && v.By.Key() == rec.key.principal:
		e.mu.Unlock()
		return View{}, ErrSelfApproval
	}
	var evs []Event
	if err := e.resolveLocked(rec, v.Approve, ChannelOperator, v.By.String(), v.Reason, &evs); err != nil {
		e.mu.Unlock()
		return View{}, err
	}
	view := rec.viewLocked()
	e.unlockAndEmit(evs)
	return view, nil
}

// View is an approval as operators see it: arguments masked.
type View struct {
	ID string `json:"id"`
	// State is pending, approved (its call not run yet), or in an
	// event, how it ended: denied, expired, executed.
	State     string `json:"state"`
	Principal string `json:"principal"`
	Server    string `json:"server,omitempty"`
	Tool      string `json:"tool"`
	// Arguments are the call's, as people may see them: masked where
	// they look secret, cut at MaxShownArguments.
	Arguments string `json:"arguments"`
	// ArgumentsSHA256 is the digest the approval is bound to.
	ArgumentsSHA256 string    `json:"argumentsSha256"`
	Rule            string    `json:"rule"`
	Requested       time.Time `json:"requested"`
	Expires         time.Time `json:"expires"`
	// Waiting is how many requests of the call wait on it now.
	Waiting int `json:"waiting"`
	// AskedCaller: the caller's user was asked too.
	AskedCaller bool `json:"askedCaller"`
	// Decided, Channel, Approver and Reason: who decided, once decided.
	Decided  *time.Time `json:"decided,omitempty"`
	Channel  Channel    `json:"channel,omitempty"`
	Approver string     `json:"approver,omitempty"`
	Reason   string     `json:"reason,omitempty"`

	principalKey string
}

// Caller reports whether p made the call.
func (v View) Caller(p auth.Principal) bool { return v.principalKey == p.Key() }

func (r *record) viewLocked() View {
	v := View{ID: r.id, Principal: r.principal.String(), Server: r.key.server, Tool: r.key.tool, Arguments: r.shown,
		ArgumentsSHA256: hex.EncodeToString(r.key.digest[:]), Rule: r.key.rule, Requested: r.requested, Expires: r.expires,
		Waiting: r.waiters, AskedCaller: r.asked, Channel: r.channel, Approver: r.approver, Reason: r.reason, principalKey: r.key.principal}
	v.State = [...]string{"pending", "approved", "denied", "expired"}[r.state]
	if r.taken {
		v.State = "executed"
	}
	if !r.decided.IsZero() {
		d := r.decided
		v.Decided = &d
	}
	return v
}

// States a list may ask for.
const (
	ListPending  = "pending"  // not decided yet
	ListApproved = "approved" // approved, the call not run yet
	ListAll      = "all"
)

// List returns the approvals alive in state (ListPending, ListApproved or
// ListAll), oldest first.
func (e *Engine) List(state string) []View {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]View, 0, len(e.byID))
	for _, r := range e.byID {
		if state == ListAll || state == ListPending && r.state == statePending || state == ListApproved && r.state == stateApproved {
			out = append(out, r.viewLocked())
		}
	}
	sortViews(out)
	return out
}

// Get returns approval id, if it is alive.
func (e *Engine) Get(id string) (View, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.byID[id]
	if !ok {
		return View{}, false
	}
	return r.viewLocked(), true
}

// Event is one step of an approval, as the audit log writes it and the
// operators' stream sends it.
type Event struct {
	Kind     string    `json:"event"`
	Time     time.Time `json:"time"`
	Approval View      `json:"approval"`
	Channel  Channel   `json:"channel,omitempty"`
	Approver string    `json:"approver,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	// Waited is the time since the request.
	Waited time.Duration `json:"-"`
	// Issuer is the caller's issuer (a JWT's iss), for the audit log.
	Issuer string `json:"-"`
}

func (e *Engine) eventLocked(kind string, v View, ch Channel, by, reason string, now time.Time, waited time.Duration) Event {
	e.counts[[2]string{kind, string(ch)}]++
	if kind == EventExecuted {
		v.State = "executed"
	}
	return Event{Kind: kind, Time: now, Approval: v, Channel: ch, Approver: by, Reason: reason, Waited: waited}
}

// unlockAndEmit releases mu and delivers evs, in order: emitMu is taken
// before mu is released, so events reach every reader in the order their
// changes were made.
func (e *Engine) unlockAndEmit(evs []Event) {
	if len(evs) == 0 {
		e.mu.Unlock()
		return
	}
	e.emitMu.Lock()
	e.mu.Unlock()
	defer e.emitMu.Unlock()
	for _, ev := range evs {
		e.log.Info("approval: "+ev.Kind, "approval", ev.Approval.ID, "principal", ev.Approval.Principal, "server", ev.Approval.Server,
			"tool", ev.Approval.Tool, "rule", ev.Approval.Rule, "channel", string(ev.Channel), "approver", ev.Approver, "reason", ev.Reason,
			"waited", ev.Waited.Round(time.Millisecond))
		if e.opts.Observe != nil {
			e.opts.Observe(ev)
		}
		for w := range e.watchers {
			select {
			case w.c <- ev:
			default:
				// It fell behind: cut it off. It reconnects, and is sent
				// what is pending first.
				w.lost = true
				e.dropWatcherLocked(w)
			}
		}
	}
}

// Watcher is one operators' stream: every event from the moment it was
// made, until Close, the engine's Close, or it falls behind (Lost).
type Watcher struct {
	// C carries the events; it is closed when the stream ends.
	C <-chan Event
	c chan Event
	e *Engine

	lost, gone bool // guarded by e.emitMu
}

// Watch opens a stream of events, and returns with it the approvals
// pending when it opened: a stream that reconnects misses nothing that
// is still pending.
func (e *Engine) Watch() (*Watcher, []View, error) {
	// Both locks: the list holds every change made before, and the
	// stream every event of a change made after.
	e.mu.Lock()
	e.emitMu.Lock()
	defer e.emitMu.Unlock()
	defer e.mu.Unlock()
	switch {
	case e.closed:
		return nil, nil, ErrClosed
	case len(e.watchers) >= e.opts.MaxWatchers:
		return nil, nil, ErrTooManyWatch
	}
	pending := make([]View, 0, len(e.byID))
	for _, r := range e.byID {
		pending = append(pending, r.viewLocked())
	}
	sortViews(pending)
	c := make(chan Event, watchBuffer)
	w := &Watcher{C: c, c: c, e: e}
	e.watchers[w] = struct{}{}
	return w, pending, nil
}

// Close ends the stream.
func (w *Watcher) Close() {
	w.e.emitMu.Lock()
	defer w.e.emitMu.Unlock()
	w.e.dropWatcherLocked(w)
}

// Lost reports whether the stream ended because it fell behind.
func (w *Watcher) Lost() bool {
	w.e.emitMu.Lock()
	defer w.e.emitMu.Unlock()
	return w.lost
}

func (e *Engine) dropWatcherLocked(w *Watcher) {
	if w.gone {
		return
	}
	w.gone = true
	delete(e.watchers, w)
	close(w.c)
}

// Count is how many events of a kind, by a channel, the engine made.
type Count struct {
	Event   string
	Channel Channel
	N       uint64
}

// Stats are the engine's counts, for the metrics.
type Stats struct {
	// Pending are the approvals alive (pending, or approved and not run).
	Pending int
	// Watchers are the operators' streams open.
	Watchers int
	// Counts are every event by kind and channel, sorted.
	Counts []Count
}

// Stats returns the counts now.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	s := Stats{Pending: len(e.byID)}
	for k, n := range e.counts {
		s.Counts = append(s.Counts, Count{Event: k[0], Channel: Channel(k[1]), N: n})
	}
	e.mu.Unlock()
	e.emitMu.Lock()
	s.Watchers = len(e.watchers)
	e.emitMu.Unlock()
	sort.Slice(s.Counts, func(i, j int) bool {
		if s.Counts[i].Event != s.Counts[j].Event {
			return s.Counts[i].Event < s.Counts[j].Event
		}
		return s.Counts[i].Channel < s.Counts[j].Channel
	})
	return s
}

// Close denies every approval alive (the bridge is shutting down), ends
// every stream, and refuses what comes after. Calls waiting return
// Denied.
func (e *Engine) Close() {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.closed = true
	var evs []Event
	for _, r := range e.byID {
		_ = e.resolveLocked(r, false, ChannelBridge, "", "the bridge is shutting down", &evs)
	}
	e.emitMu.Lock()
	for w := range e.watchers {
		e.dropWatcherLocked(w)
	}
	e.emitMu.Unlock()
	e.unlockAndEmit(evs)
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func sortViews(vs []View) {
	slices.SortFunc(vs, func(a, b View) int {
		if c := a.Requested.Compare(b.Requested); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// cutString cuts s to at most n bytes, on a character boundary.
func cutString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
