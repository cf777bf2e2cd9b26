package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

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

// ModernCall is a modern request in progress. The transport reads what
// goes back to the client with Next until it reports the final message,
// then calls Close; a Close before that is the client closing its stream,
// which 2026-07-28 makes a cancellation.
type ModernCall struct {
	b      *Bridge
	pool   *modernPool
	id     []byte // the request's id, as the client sent it
	method string
	env    Envelope
	owner  Owner
	hints  resultHints
	era    childEra

	// queued are messages to give before any from the child (an answer
	// of the bridge's own, a listen's acknowledgement); queuedFinal says
	// the last of them is the final one.
	queued      [][]byte
	queuedFinal bool

	// On a child:
	sess    *Session
	st      *Stream
	lease   *upstream // the call's own child, nil on the pool's base
	childID int64
	listen  *listenFilter // a listen on a legacy child

	round     *round    // what the child asks the client, being gathered
	gatherEnd time.Time // when the round is complete
	target    string    // params.name or params.uri, for a retry's check
	argsRaw   []byte    // params.arguments, as sent
	args      [32]byte  // their digest, for a retry's check (argsDigest)
	argsDone  bool      // args is made
	keys      int       // input request keys made so far
	// exchange names the MRTR exchange the call is a round of, for the
	// audit log; inputRequired says its answer was input_required.
	exchange      string
	inputRequired bool
	// missing is the first capability the child asked for that the
	// client did not declare (as requiredCapabilities), missingMethod the
	// request that needed it: if the call fails, it gets -32021.
	missing       map[string]any
	missingMethod string

	started   time.Time
	final     bool // the final message was given
	cancelled bool // Close came before it
	parked    bool // an exchange holds the call for the client's retry
	closed    bool
	buf       [][]byte
}

// Modern serves a modern request: it checks it (CheckModern: HTTP 400 or
// 404 errors, with the request's id), finds the child that serves it, and
// sends it there, or answers it itself (discovery from a legacy child's
// InitializeResult, a listen's acknowledgement, an MRTR retry's new
// round). A notification needs no answer: Modern returns nil, nil, and the
// transport answers 202. ctx is the client's request: waits for a child
// end with it.
func (b *Bridge) Modern(ctx context.Context, req ModernRequest) (*ModernCall, error) {
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
	id := m.ID()
	if removedMethods[m.Method] {
		return nil, methodNotFound(m.Method, id)
	}
	p := b.modernPool(req.Owner, req.Env)
	u, era, err := p.ready(ctx)
	if err != nil {
		p.done()
		return nil, withID(asError(err), id)
	}
	if !u.capability(modernMethods[m.Method]) {
		p.done()
		return nil, &Error{Kind: KindNotFound, Code: CodeMethodNotFound, ID: id,
			Message: "Method not found: the MCP server has no " + modernMethods[m.Method] + " capability"}
	}
	if m.Method == "tools/call" {
		var tool string
		_ = unquote(m.Param("name"), &tool)
		if mirrored := p.headersOf(ctx, u, era, tool); len(mirrored) > 0 || len(req.Headers.Params) > 0 {
			if err := checkParamHeaders(m, mirrored, req.Headers.Params); err != nil {
				p.done()
				return nil, err
			}
		}
	}
	mc := &ModernCall{b: b, pool: p, id: bytes.Clone(id), method: m.Method, env: env, owner: req.Owner, era: era, started: b.cfg.Now()}
	mc.hints = resultHints{resultType: "complete", cache: cacheable[m.Method], scope: "public"}
	if req.Private {
		mc.hints.scope, mc.hints.forceScope = "private", true
	}
	if era == eraLegacy {
		mc.hints.serverInfo = u.serverInfo()
		mc.hints.forceScope = false // the bridge sets the scope itself
	}
	if era == eraLegacy {
		if m.Param("requestState") != nil {
			return b.resume(ctx, mc, req)
		}
		if m.Param("inputResponses") != nil {
			// Answers to no question the bridge asked: "servers SHOULD
			// ignore any information [they do] not recognize", and the
			// request is a new one. A legacy child is not shown them.
			m.Raw = withoutParam(m.Raw, "inputResponses")
			m.f, _ = scanFields(m.Raw)
		}
	}
	mc.noteTarget(m)
	if era == eraModern {
		if raw := m.Param("requestState"); raw != nil {
			var rs string
			state, why := "", whyStateNotOurs
			if raw[0] == '"' && unquote(raw, &rs) == nil {
				state, why = mc.unwrapState(rs)
			}
			if why != "" {
				p.done()
				b.stats.InputRefused.Add(1)
				mc.answer(errorResponse(mc.id, CodeInvalidParams, "Invalid params: "+why, nil))
				return mc, nil
			}
			q, _ := json.Marshal(state)
			m.Raw = splice(m.Raw, m.f.params, splice(m.f.params.of(m.Raw), member(m.f.params.of(m.Raw), "requestState"), q))
			m.f, _ = scanFields(m.Raw)
		}
	}
	mrtr := mrtrMethods[m.Method] && env.caps.asksInput()
	switch {
	case era == eraModern:
		if err = mc.start(u, m); err == nil && mc.Listen() {
			b.addListen(mc)
		}
	case m.Method == "server/discover":
		mc.answer(discoverResult(u, mc.id, mc.hints.scope))
	case m.Method == "subscriptions/listen":
		err = mc.startListen(ctx, u, m)
	case mrtr:
		var lease *upstream
		if lease, err = p.lease(ctx, req.Owner.Key, u); err == nil {
			mc.lease = lease
			if err = mc.start(lease, m); err != nil {
				p.release(lease, req.Owner.Key, false)
				mc.lease = nil
			}
		}
	default:
		err = mc.start(u, m)
	}
	if err != nil {
		p.done()
		return nil, withID(asError(err), id)
	}
	if mc.sess != nil {
		b.setRunning(mc, true)
	}
	return mc, nil
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
	mc.queuedFinal = true
}

// noteTarget keeps the call's target (its tool, prompt or resource) and
// its arguments, which a retry must repeat (argsDigest).
func (mc *ModernCall) noteTarget(m *Message) {
	if key := nameParam(m.Method); key != "" {
		_ = unquote(m.Param(key), &mc.target)
	}
	mc.argsRaw = m.Param("arguments")
}

// start sends the request to u's child, on a session of its own.
func (mc *ModernCall) start(u *upstream, m *Message) error {
	s := newSession(mc.b, "modern")
	s.up, s.stateless, s.modern = u, true, true
	s.owner, s.ownerName = mc.owner.Key, mc.owner.Name
	s.logLevel = levelIndex(mc.env.LogLevel)
	u.mu.Lock()
	if u.deadLocked() || u.stopping {
		u.mu.Unlock()
		return &Error{Kind: KindUnavailable, Code: CodeChildExited, Message: "the MCP server is stopping; try again shortly"}
	}
	u.sessions[s] = true
	var setLevel []byte
	if s.logLevel >= 0 && u.era != eraModern && u.hasLogging() {
		// The child sends log messages at the level it was set to; the
		// bridge passes on those at or above the request's own.
		if lvl := u.childLevelLocked(); lvl != u.mux.level {
			u.mux.level = lvl
			p, _ := json.Marshal(map[string]string{"level": lvl})
			setLevel = u.ownRequestLocked("logging/setLevel", p, nil)
		}
	}
	child := u.child
	u.mu.Unlock()
	if setLevel != nil && child != nil {
		u.write(child, [][]byte{setLevel})
	}
	st, err := s.send([]Message{*m}, false, false)
	if err != nil {
		s.end()
		return err
	}
	u.mu.Lock()
	mc.childID = s.byClient[string(mc.id)]
	u.mu.Unlock()
	mc.sess, mc.st = s, st
	return nil
}

// Listen reports whether the call is a subscriptions/listen: its stream
// stays open, so the transport answers it as SSE.
func (mc *ModernCall) Listen() bool { return mc.method == "subscriptions/listen" }

// Next returns what is to go to the client now, and whether the final
// message is among it. It waits for something until ctx ends (its error
// is returned) or timeout fires (nothing, not final). An *Error returned
// answers the request: HTTP 400 or 404 if nothing has been written yet,
// else as the final message in the stream (ErrorBody).
func (mc *ModernCall) Next(ctx context.Context, timeout <-chan time.Time) ([][]byte, bool, error) {
	if len(mc.queued) > 0 {
		out := mc.queued
		mc.queued = nil
		mc.final = mc.queuedFinal
		return out, mc.final, nil
	}
	if mc.final || mc.st == nil {
		return nil, true, nil
	}
	for {
		wait := timeout
		var gather *time.Timer
		if mc.round != nil {
			gather = time.NewTimer(time.Until(mc.gatherEnd))
			wait = gather.C
		}
		fired, err := mc.st.waitFired(ctx, wait)
		if gather != nil {
			gather.Stop()
		}
		if err != nil {
			return nil, false, err
		}
		msgs, fin := mc.st.take(mc.buf[:0])
		mc.buf = msgs[:0]
		out, err := mc.translate(msgs)
		clear(msgs)
		if err != nil {
			return out, true, err
		}
		if fin && !mc.final && mc.round == nil {
			// The stream ended without an answer: the session ended
			// under it (shutdown, or a listen whose child stopped).
			out = append(out, mc.ending())
			mc.final = true
		}
		if mc.round != nil && (fin || !time.Now().Before(mc.gatherEnd)) {
			msg, err := mc.park()
			if err != nil {
				return out, true, err
			}
			out = append(out, msg)
			mc.final = true
		}
		if len(out) > 0 || mc.final {
			return out, mc.final, nil
		}
		if mc.round == nil && fired {
			// The caller's timeout (wait is timeout without a round),
			// with nothing to give: the transport sends a keep-alive, or
			// in auto mode starts its SSE stream.
			return nil, false, nil
		}
	}
}

// ending is the final message of a call whose stream ended without one.
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

// translate turns what the child sent for the call into what the modern
// client gets: the final answer decorated, progress as it is, log
// messages at the request's level, the child's questions gathered into a
// round (MRTR); nothing else (2026-07-28 sends list changes only on a
// listen's stream).
func (mc *ModernCall) translate(msgs [][]byte) ([][]byte, error) {
	var out [][]byte
	for _, msg := range msgs {
		f, err := scanFields(msg)
		if err != nil {
			continue
		}
		switch {
		case !f.method.ok(): // a response: the final answer
			if mc.final {
				continue
			}
			if id := f.id.of(msg); !bytes.Equal(id, mc.id) {
				// Given while the call was parked, to the request that
				// parked it: it answers the retry now.
				msg = splice(msg, f.id, mc.id)
				f, _ = scanFields(msg)
			}
			if mc.round != nil {
				// The child answered while being asked: its questions are
				// moot, and the answer is final.
				mc.dropRound()
			}
			if err := mc.missingFailure(msg, f); err != nil {
				mc.final = true
				if len(out) == 0 {
					return nil, err
				}
				out = append(out, ErrorBody(err))
				continue
			}
			if f.error.ok() {
				var code int
				if mc.era == eraLegacy {
					msg, code = translateError(msg)
				} else {
					code, _ = strconv.Atoi(string(member(f.error.of(msg), "code").of(f.error.of(msg))))
				}
				mc.final = true
				if kind, ok := httpKind(code); ok && len(out) == 0 {
					// The errors 2026-07-28 gives an HTTP status of their
					// own get it while the response has not begun.
					return nil, mc.httpError(msg, kind)
				}
				out = append(out, msg)
				continue
			}
			if mc.method == "tools/list" {
				mc.pool.learnTools(f.result.of(msg))
			}
			if mc.era == eraModern && mrtrMethods[mc.method] {
				msg = mc.relayState(msg, f)
			}
			out = append(out, decorateResult(msg, mc.hints))
			mc.final = true
		case f.id.ok(): // a request of the child's
			mc.childRequest(msg, f)
		default:
			var method string
			_ = unquote(f.method.of(msg), &method)
			switch {
			case method == methodProgress:
				out = append(out, msg)
			case method == methodLogMessage:
				if mc.sess.wantsLog(f.params.of(msg)) {
					out = append(out, msg)
				}
			case mc.listen != nil:
				if mc.listen.wants(method) {
					out = append(out, stampSubscription(msg, mc.id))
				}
			case mc.method == "subscriptions/listen":
				out = append(out, msg) // a modern child's listen: stamped by it
			}
		}
	}
	return out, nil
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
	if mc == nil || mc.closed {
		return
	}
	mc.closed = true
	mc.b.setRunning(mc, false)
	if mc.parked {
		return // its exchange holds it, and its use of the pool
	}
	defer mc.pool.done()
	if mc.Listen() {
		mc.b.removeListen(mc)
	}
	if mc.sess == nil {
		return
	}
	if !mc.final {
		mc.cancelled = true
		mc.cancel("the client closed its stream")
	}
	mc.sess.end()
	if mc.lease != nil {
		mc.pool.release(mc.lease, mc.owner.Key, !mc.cancelled)
	}
}

// cancel sends the child notifications/cancelled for the call's request.
func (mc *ModernCall) cancel(reason string) {
	p, _ := json.Marshal(map[string]any{"requestId": json.RawMessage(mc.id), "reason": reason})
	raw := []byte(`{"jsonrpc":"2.0","method":"` + methodCancelled + `","params":` + string(p) + `}`)
	msgs, _, err := ParseBody(raw)
	if err != nil {
		return
	}
	_, _ = mc.sess.send(msgs, false, false)
}

// discoverResult is server/discover for a legacy child, from its
// InitializeResult: what it can do, said the 2026-07-28 way.
func discoverResult(u *upstream, id []byte, scope string) []byte {
	u.mu.Lock()
	res := u.mux.initResult
	u.mu.Unlock()
	var r struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
		ServerInfo   json.RawMessage            `json:"serverInfo"`
		Instructions string                     `json:"instructions"`
	}
	_ = json.Unmarshal(res, &r)
	caps := r.Capabilities
	if caps == nil {
		caps = map[string]json.RawMessage{}
	}
	// Tasks are an extension in 2026-07-28, negotiated apart; a legacy
	// child's are not served to modern clients.
	delete(caps, "tasks")
	out := map[string]any{
		"resultType":        "complete",
		"supportedVersions": ModernVersions,
		"capabilities":      caps,
		"ttlMs":             0,
		"cacheScope":        scope,
	}
	if len(r.ServerInfo) > 0 {
		out["_meta"] = map[string]json.RawMessage{metaServerInfo: r.ServerInfo}
	}
	if r.Instructions != "" {
		out["instructions"] = r.Instructions
	}
	return resultMessage(id, out)
}

// serverInfo is the child's Implementation, from its InitializeResult.
func (u *upstream) serverInfo() []byte {
	u.mu.Lock()
	res := u.mux.initResult
	u.mu.Unlock()
	if res == nil {
		return nil
	}
	if v := member(res, "serverInfo"); v.ok() {
		return bytes.Clone(v.of(res))
	}
	return nil
}

// hasLogging reports whether the child declared the logging capability.
// Called with u.mu held.
func (u *upstream) hasLogging() bool {
	if u.mux == nil || u.mux.initResult == nil {
		return false
	}
	caps := member(u.mux.initResult, "capabilities").of(u.mux.initResult)
	return caps != nil && caps[0] == '{' && member(caps, "logging").ok()
}

// String names the call in logs.
func (mc *ModernCall) String() string { return fmt.Sprintf("%s %s", mc.method, mc.id) }

// isClosing reports whether the bridge is shutting down.
func (b *Bridge) isClosing() bool { return b.phaseNow() != phaseOpen }
