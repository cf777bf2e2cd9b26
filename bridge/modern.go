package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// The 2026-07-28 layer. A modern request has no session: Modern checks
// it, finds the pool that serves its principal (modernpool.go) and the
// backend for what the pool's children speak (backend.go), and the
// backend either answers it itself or puts it on a child through the
// core's seam (party.go). Its transport reads the answer from the
// ModernCall as it reads a session's Stream.

// ModernRequest is one modern (2026-07-28) POST, as the transport read it.
type ModernRequest struct {
	Message Message
	Headers ModernHeaders
	// Owner is who sends it: leased children, parked calls and, in
	// per-identity mode, the pool are the owner's.
	Owner Owner
	// Env is added to the environment of children started for the owner
	// in per-identity mode (its --claim-env variables).
	Env []string
	// Private says answers may differ per principal (the bridge
	// authenticates, or filters tools per principal): cacheable results
	// then say cacheScope "private".
	Private bool
}

// callState is where a ModernCall is. Next and Close move it, and
// nothing else does:
//
//	answered   the bridge answers the request itself (discovery of a
//	           legacy child, a refused retry, a listen with nothing to
//	           honour): what is queued is all      → done, when Next gives it
//	running    its request is on a child          → done (the answer),
//	                                                 gathering (the child asks its client)
//	gathering  the child asked its client something; more questions of
//	           the round may come within gatherWindow
//	                                               → parked (the window is over),
//	                                                 done (the child answered anyway)
//	parked     answered input_required: an exchange holds the call's run
//	           for its client's retry, whose own call takes it over
//	           (running, or gathering for what the retry left unanswered)
//	listening  a listen: open until its client leaves or the server ends it
//	                                               → done (the completion result)
//	done       the final message has been given
//	closed     the client let go (Close); before done, that cancels the
//	           request, but for a parked call, whose exchange keeps it
type callState uint8

const (
	stateAnswered callState = iota
	stateRunning
	stateGathering
	stateParked
	stateListening
	stateDone
	stateClosed
)

// over reports whether the call's final message has been given: nothing
// more goes to its client.
func (s callState) over() bool { return s == stateParked || s >= stateDone }

// ModernCall is a modern request in progress. The transport reads what
// goes back to the client with Next until it reports the final message,
// then calls Close; a Close before that is the client closing its stream,
// which 2026-07-28 makes a cancellation.
type ModernCall struct {
	b      *Bridge
	id     []byte // the request's id, as the client sent it
	method string
	env    Envelope
	owner  Owner
	hints  resultHints
	state  callState

	// pool is the pool that serves the call, base its base child, be the
	// backend for what they speak; unpool gives the call's use of the
	// pool back (once).
	pool   *modernPool
	base   *upstream
	be     backend
	unpool func()

	// queued are messages of the bridge's own to give before any from
	// the child (its answer, a listen's acknowledgement).
	queued [][]byte
	// early is what Await took for TakeOnly or the stream's first
	// batch; sse says an SSE writer reads the call (Begin).
	early []Event
	sse   bool
	// run is the call's request on a child (nil when the bridge answers
	// it itself): what a retry takes over from a parked call.
	run *run
	buf []childMsg

	target   string   // params.name or params.uri, for a retry's check
	argsRaw  []byte   // params.arguments, as sent
	args     [32]byte // their digest, for a retry's check (argsDigest)
	argsDone bool     // args is made
	// exchange names the MRTR exchange the call is a round of, for the
	// audit log; inputRequired says its answer was input_required.
	exchange      string
	inputRequired bool
	started       time.Time
}

// run is a call's request on a child: the child, the request in flight
// there, the box what the child sends for it lands in, and what the call
// has learnt of the child's questions (MRTR). A parked call's run is
// taken over whole by its client's retry.
type run struct {
	u     *upstream
	c     *call // nil for a listen the bridge serves, which has no request on the child
	party party // the box, as the child knows it
	inbox *box
	// lease is the call's own child, if it has one, and unlease gives it
	// back (reuse: it may serve the owner's next call).
	lease   *upstream
	unlease func(reuse bool)

	round     *round    // what the child asks the client, being gathered
	gatherEnd time.Time // when the round is complete
	keys      int       // input request keys made so far, so every key of the call is new
	// missing is the first capability the child asked for that the
	// client did not declare (as requiredCapabilities), missingMethod the
	// request that needed it: if the call fails, it gets -32021.
	missing       map[string]any
	missingMethod string
}

// cancel tells the child the request is abandoned.
func (r *run) cancel(reason string) {
	if r.c != nil {
		r.u.cancel(r.c, reason)
	}
}

// end takes the run's box off its child.
func (r *run) end() { r.party.end() }

// reply answers the child's request xid with result.
func (r *run) reply(xid, result []byte) {
	r.u.reply(r.party, xid, []byte(`{"jsonrpc":"2.0","id":`+string(xid)+`,"result":`+string(result)+`}`))
}

// replyError answers the child's request xid with an error.
func (r *run) replyError(xid []byte, code int, msg string) {
	r.u.reply(r.party, xid, errorResponse(xid, code, msg, nil))
}

// hold parks (true) or frees the run's request while its client is being
// asked: its --request-timeout does not run, and the notifications the
// child sends for it are dropped (none can reach a client that is not
// listening).
func (r *run) hold(parked bool) {
	if parked && r.c != nil {
		r.u.pause(r.c)
	}
	r.inbox.park(parked)
}

// Modern serves a modern request: it checks it (CheckModern: HTTP 400 or
// 404 errors, with the request's id), finds the child that serves it, and
// sends it there, or answers it itself (discovery from a legacy child's
// InitializeResult, a listen's acknowledgement, an MRTR retry's new
// round). A notification needs no answer: Modern returns nil, nil, and the
// transport answers 202. ctx is the client's request: waits for a child
// end with it.
func (b *Bridge) Modern(ctx context.Context, req ModernRequest) (_ *ModernCall, err error) {
	m := &req.Message
	if m.Kind == Notification {
		// notifications/cancelled from an SDK that also closes the
		// stream, or anything else: 2026-07-28 defines none over HTTP.
		return nil, nil
	}
	env, err := CheckModern(m, req.Headers)
	if err != nil {
		return nil, err
	}
	if removedMethods[m.Method] {
		return nil, methodNotFound(m.Method, m.ID())
	}
	mc := b.newCall(req, env)
	defer func() {
		if err != nil {
			mc.Close() // what it acquired goes back
		}
	}()
	if err = mc.admit(ctx, m, req.Headers); err != nil {
		return nil, err
	}
	if err = mc.be.start(ctx, mc, m); err != nil {
		return nil, withID(asError(err), mc.id)
	}
	if mc.run != nil {
		b.setRunning(mc, true)
	}
	return mc, nil
}

// newCall makes the call of req, holding a use of its principal's pool.
func (b *Bridge) newCall(req ModernRequest, env Envelope) *ModernCall {
	m := &req.Message
	mc := &ModernCall{b: b, id: bytes.Clone(m.ID()), method: m.Method, env: env, owner: req.Owner, started: b.cfg.Now()}
	mc.pool, mc.unpool = b.acquirePool(req.Owner, req.Env)
	mc.hints = resultHints{resultType: "complete", cache: cacheable[m.Method], scope: "public"}
	if req.Private {
		mc.hints.scope, mc.hints.forceScope = "private", true
	}
	return mc
}

// admit readies the pool's base child and what serves the call on it,
// and checks what only the child can say: that the server has the
// method's capability, and a tools/call's Mcp-Param headers against the
// tool's schema.
func (mc *ModernCall) admit(ctx context.Context, m *Message, h ModernHeaders) error {
	u, era, err := mc.pool.ready(ctx)
	if err != nil {
		return withID(asError(err), mc.id)
	}
	mc.base, mc.be = u, backendFor(era)
	if !u.capability(modernMethods[m.Method]) {
		return &Error{Kind: KindNotFound, Code: CodeMethodNotFound, ID: mc.id,
			Message: "Method not found: the MCP server has no " + modernMethods[m.Method] + " capability"}
	}
	if m.Method == "tools/call" {
		var tool string
		_ = unquote(m.Param("name"), &tool)
		if mirrored := mc.pool.headersOf(ctx, u, era, tool); len(mirrored) > 0 || len(h.Params) > 0 {
			if err := checkParamHeaders(m, mirrored, h.Params); err != nil {
				return err
			}
		}
	}
	if era == eraLegacy {
		mc.hints.serverInfo = u.serverInfo()
		mc.hints.forceScope = false // the bridge sets the scope itself
	}
	mc.noteTarget(m)
	return nil
}

// setRunning records (or forgets) a call in progress on a child, for
// Snapshot; a parked one is its exchange's.
func (b *Bridge) setRunning(mc *ModernCall, on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if on {
		b.running[mc] = true
	} else {
		delete(b.running, mc)
	}
}

// mrtrMethods are the requests that may be answered input_required.
var mrtrMethods = map[string]bool{"tools/call": true, "prompts/get": true, "resources/read": true}

// asError is err as an *Error, for the transport.
func asError(err error) *Error {
	if e, ok := err.(*Error); ok {
		return e
	}
	return &Error{Kind: KindInternal, Code: CodeInternalError, Message: "internal error", Err: err}
}

// answer queues the final message of a call the bridge answers itself.
func (mc *ModernCall) answer(msg []byte) {
	mc.queued = append(mc.queued, msg)
	mc.state = stateAnswered
}

// noteTarget keeps the call's target (its tool, prompt or resource) and
// its arguments, which a retry must repeat (argsDigest).
func (mc *ModernCall) noteTarget(m *Message) {
	if key := nameParam(m.Method); key != "" {
		_ = unquote(m.Param(key), &mc.target)
	}
	mc.argsRaw = m.Param("arguments")
}

// submit puts the call's request m on u's child, in a box of its own.
// quiet: it takes nothing but its answer and what names it (a listen).
func (mc *ModernCall) submit(u *upstream, m *Message, quiet bool) error {
	x := newBox(mc.b, u, mc.owner, levelIndex(mc.env.LogLevel))
	if err := u.join(x); err != nil {
		return err
	}
	if x.logLevel >= 0 && mc.be.leveled() && u.hasLogging() {
		// The child sends log messages at the level it was set to; the
		// bridge passes on those at or above the request's own.
		u.relevel()
	}
	c, err := u.submit(x, m, quiet)
	if err != nil {
		x.end()
		return err
	}
	mc.run = &run{u: u, c: c, party: x, inbox: x}
	mc.state = stateRunning
	return nil
}

// Listen reports whether the call is a subscriptions/listen: its stream
// stays open, so the transport answers it as SSE.
func (mc *ModernCall) Listen() bool { return mc.method == "subscriptions/listen" }

// A ModernCall is read as every Reader (reader.go). What Await finds
// waits in early for TakeOnly, or for Next once the answer is a stream.

// Await waits up to d (d <= 0: for as long as it takes) for what goes to
// the client first, or the final answer. An *Error is the answer, with an
// HTTP status of its own.
func (mc *ModernCall) Await(ctx context.Context, d time.Duration) error {
	t := after(d)
	defer t.stop()
	msgs, _, err := mc.next(ctx, t.c())
	mc.early = append(mc.early, msgs...)
	return err
}

// TakeOnly takes the final answer if it is all that is to go to the
// client: a plain JSON body.
func (mc *ModernCall) TakeOnly() (Event, bool) {
	if !mc.state.over() || len(mc.early) != 1 {
		return Event{}, false
	}
	ev := mc.early[0]
	mc.early = nil
	return ev, true
}

// Collect gives the final answer alone, for a client that takes one JSON
// body: what comes before it (progress, log messages) has nowhere to go.
func (mc *ModernCall) Collect(ctx context.Context, buf []Event) ([]Event, error) {
	last := mc.early
	mc.early = nil
	for !mc.state.over() || len(mc.queued) > 0 {
		msgs, _, err := mc.next(ctx, nil)
		if err != nil {
			return buf, err
		}
		if len(msgs) > 0 {
			last = msgs
		}
	}
	if len(last) == 0 {
		return buf, nil
	}
	return append(buf, last[len(last)-1]), nil
}

// Begin says an SSE writer reads the call from now: an answer that is an
// error goes out as the stream's final message. A call never primes.
func (mc *ModernCall) Begin(ServeOptions) (Event, bool) {
	mc.sse = true
	return Event{}, false
}

// Next is the Source's: what next gives, as events without ids (a
// 2026-07-28 stream cannot be resumed), after what Await found first.
func (mc *ModernCall) Next(ctx context.Context, tick <-chan time.Time, buf []Event) ([]Event, bool, error) {
	evs := mc.early
	mc.early = nil
	final := mc.state.over()
	if len(evs) == 0 {
		var err error
		evs, final, err = mc.next(ctx, tick)
		if e, ok := err.(*Error); ok && mc.sse {
			// The answer is an error, and the stream has begun: it is
			// the stream's final message.
			evs, final, err = append(evs, mc.answerEvent(ErrorBody(e), true, e.Code)), true, nil
		}
		if err != nil {
			return buf, false, err
		}
	}
	return append(buf, evs...), final, nil
}

// next returns what is to go to the client now, and whether the final
// message is among it. It waits for something until ctx ends (its error
// is returned) or timeout fires (nothing, not final). An *Error returned
// answers the request: HTTP 400 or 404 if nothing has been written yet,
// else as the final message in the stream (Next, once an SSE writer reads
// the call).
func (mc *ModernCall) next(ctx context.Context, timeout <-chan time.Time) ([]Event, bool, error) {
	if len(mc.queued) > 0 {
		out := make([]Event, len(mc.queued))
		for i, msg := range mc.queued {
			out[i] = Event{Data: msg}
		}
		mc.queued = nil
		if mc.state == stateAnswered {
			mc.state = stateDone
		}
		return out, mc.state.over(), nil
	}
	if mc.state.over() || mc.run == nil {
		return nil, true, nil
	}
	for {
		wait, gather := mc.waitFor(timeout)
		fired, err := mc.run.inbox.wait(ctx, wait)
		gather.stop()
		if err != nil {
			return nil, false, err
		}
		out, err := mc.read()
		if err != nil {
			return out, true, err
		}
		if len(out) > 0 || mc.state.over() {
			return out, mc.state.over(), nil
		}
		if mc.state != stateGathering && fired {
			// The caller's timeout, with nothing to give: the transport
			// sends a keep-alive, or in auto mode starts its SSE stream.
			return nil, false, nil
		}
	}
}

// waitFor is what Next waits for besides the box: the caller's timeout,
// or, while a round is gathered, the end of its window (a timer of its
// own, to stop after the wait).
func (mc *ModernCall) waitFor(timeout <-chan time.Time) (<-chan time.Time, timer) {
	if mc.state != stateGathering {
		return timeout, timer{}
	}
	t := after(max(time.Until(mc.run.gatherEnd), time.Nanosecond))
	return t.c(), t
}

// read takes what the child sent for the call and turns it into what the
// client gets; a round whose window is over, or whose request the child
// can no longer answer, is parked.
func (mc *ModernCall) read() ([]Event, error) {
	items, fin := mc.run.inbox.take(mc.buf[:0])
	out, err := mc.be.translate(mc, items)
	clear(items)
	mc.buf = items[:0]
	if err != nil {
		mc.state = stateDone
		return out, err
	}
	switch {
	case mc.state == stateGathering && (fin || !time.Now().Before(mc.run.gatherEnd)):
		out = append(out, Event{Data: mc.park()})
	case fin && !mc.state.over() && mc.state != stateGathering:
		// The box ended without an answer: its child ended under it
		// (shutdown, or a listen whose child stopped).
		out = append(out, Event{Data: mc.ending()})
		mc.state = stateDone
	}
	return out, nil
}

// ending is the final message of a call whose box ended without one.
func (mc *ModernCall) ending() []byte {
	if mc.Listen() {
		// "it SHOULD respond to the original subscriptions/listen
		// request with a completion result before closing the stream"
		return mc.listenEnd()
	}
	reason := "the MCP server ended before it answered"
	if mc.b.isClosing() {
		reason = "the bridge is shutting down"
	}
	return errorResponse(mc.id, CodeChildExited, reason, nil)
}

// httpKind is the Kind (the HTTP status) of a child's error code that
// 2026-07-28 answers with a status of its own: 404 for a method the
// server does not implement, 400 for a missing client capability, a
// header mismatch or an unsupported version. Every other error is 200,
// in-band.
func httpKind(code int) (Kind, bool) {
	switch code {
	case CodeMethodNotFound:
		return KindNotFound, true
	case CodeMissingCapability, CodeHeaderMismatch, CodeUnsupportedVersion:
		return KindInvalid, true
	}
	return 0, false
}

// httpError is the error response msg as an error for the transport.
func (mc *ModernCall) httpError(msg []byte, kind Kind) *Error {
	f, _ := scanFields(msg)
	e := f.error.of(msg)
	var body struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	_ = json.Unmarshal(e, &body)
	out := &Error{Kind: kind, Code: body.Code, Message: body.Message, ID: mc.id}
	if len(body.Data) > 0 {
		out.Data = body.Data
	}
	return out
}

// Close ends the call. Before its final message, that is the client
// closing its stream: the child gets notifications/cancelled for the
// request and nothing more goes to the client ("Closing the SSE response
// stream MUST be treated ... as cancellation"). A call parked for the
// client's retry stays with its exchange.
func (mc *ModernCall) Close() {
	if mc == nil || mc.state == stateClosed {
		return
	}
	was := mc.state
	mc.state = stateClosed
	mc.b.setRunning(mc, false)
	if was == stateParked {
		return // its exchange holds its run, and its use of the pool
	}
	defer mc.unpool()
	if mc.Listen() {
		mc.b.removeListen(mc)
	}
	r := mc.run
	if r == nil {
		return
	}
	answered := was == stateDone
	if !answered {
		r.cancel("the client closed its stream")
	}
	r.end()
	if r.lease != nil {
		r.unlease(answered)
	}
}

// String names the call in logs.
func (mc *ModernCall) String() string { return fmt.Sprintf("%s %s", mc.method, mc.id) }

// isClosing reports whether the bridge is shutting down.
func (b *Bridge) isClosing() bool { return b.phaseNow() != phaseOpen }

// modernSnapshot lists the modern requests in progress, oldest first.
func (b *Bridge) modernSnapshot() []ModernSnapshot {
	out := []ModernSnapshot{}
	b.mu.Lock()
	calls := make([]*ModernCall, 0, len(b.running))
	for mc := range b.running {
		calls = append(calls, mc)
	}
	b.mu.Unlock()
	for _, mc := range calls {
		out = append(out, mc.snapshot(nil))
	}
	b.exMu.Lock()
	parked := make([]*exchange, 0, len(b.exchanges))
	for _, ex := range b.exchanges {
		parked = append(parked, ex)
	}
	b.exMu.Unlock()
	for _, ex := range parked {
		out = append(out, ex.call.snapshot(ex))
	}
	slices.SortFunc(out, func(a, b ModernSnapshot) int { return a.Started.Compare(b.Started) })
	return out
}

// snapshot describes the call; ex is its exchange if it is parked.
func (mc *ModernCall) snapshot(ex *exchange) ModernSnapshot {
	m := ModernSnapshot{Principal: mc.owner.Name, Method: mc.method, Target: mc.target, Started: mc.started,
		State: ModernRunning, owner: mc.owner.Key}
	if mc.Listen() {
		m.State = ModernListening
	}
	if ex != nil {
		m.State = ModernWaiting
		exp := ex.expires
		m.Expires = &exp
	}
	if r := mc.run; r != nil {
		m.Leased, m.ChildPid = r.lease != nil, r.u.pid()
	}
	return m
}

// modernBusy counts the 2026-07-28 calls running on a child by method into
// methods, and returns how many there are (Busy).
func (b *Bridge) modernBusy(methods map[string]int) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	for mc := range b.running {
		methods[mc.method]++
	}
	return len(b.running)
}
