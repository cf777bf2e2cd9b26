package bridge

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// Multi round-trip requests (MRTR) in front of a legacy child. When a
// legacy child asks its client something (sampling/createMessage,
// elicitation/create, roots/list) during a modern tools/call, prompts/get
// or resources/read, the child's request is held, and the client gets an
// input_required result: the child's questions in inputRequests, under
// keys the bridge makes up, and a requestState that names the parked call
// (an exchange). The client's retry, a new request with the same method,
// target and arguments plus inputResponses and that requestState, answers
// the child and takes the call over: its answer, or the child's next
// questions, go to the retry.
//
// The requestState is a handle, not the state: "mb1.<replica>.<128 random
// bits>". Everything it stands for stays in the bridge, bound to the
// principal, method, target and a digest of the arguments, single use,
// and gone after --input-ttl. A forged, altered, replayed, foreign or
// expired handle finds nothing or fails the binding, and gets -32602
// without touching the parked call: tampering can cause nothing worse
// than request failure, which is when the spec lets integrity protection
// go (a MAC would add nothing the lookup does not check). The replica's
// name lets a load balancer send a retry to the replica that holds its
// call, and a wrong replica say so.

// gatherWindow is how long the bridge waits, after a child's first
// question, for the others of the same round: a server may ask several
// at once (go-sdk's servers send a round in parallel), and one
// input_required result carries them all.
const gatherWindow = 20 * time.Millisecond

// round is the questions a child asked during one turn of a call.
type round struct {
	requests map[string]json.RawMessage // key -> {"method":…,"params":…}, for the client
	pending  map[string][]byte          // key -> the child's request id
	methods  map[string]string          // key -> method
}

func newRound() *round {
	return &round{requests: map[string]json.RawMessage{}, pending: map[string][]byte{}, methods: map[string]string{}}
}

// exchange is a call parked for its client's retry.
type exchange struct {
	call    *ModernCall
	round   *round
	owner   string
	method  string
	target  string
	args    [32]byte
	id      string // the exchange's name in the audit log
	timer   *time.Timer
	expires time.Time
}

// childRequest handles a request the child sent while the call runs: a
// question for the client goes into the round being gathered; a ping is
// answered by the bridge; anything else, or a question the client cannot
// answer, is refused. A question that needs a capability the client did
// not declare is refused too, and noted: if the call then fails, it
// failed for lack of it, and gets -32021 (missingFailure).
func (mc *ModernCall) childRequest(m *childMsg) {
	r := mc.run
	xid := bytes.Clone(m.f.id.of(m.raw))
	params := m.params()
	switch m.method {
	case "ping":
		r.reply(xid, []byte(`{}`))
		return
	case "sampling/createMessage", "elicitation/create", "roots/list":
	default:
		r.replyError(xid, CodeMethodNotFound, "mcp-bridge: a 2026-07-28 client cannot be sent "+m.method)
		return
	}
	if !mrtrMethods[mc.method] {
		r.replyError(xid, CodeMethodNotFound, "mcp-bridge: the client's "+mc.method+" cannot carry "+m.method+" (MCP 2026-07-28 asks clients only during tools/call, prompts/get and resources/read)")
		return
	}
	if need := mc.env.caps.missing(m.method, params); need != nil {
		// "Servers MUST NOT send an inputRequests that the client has not
		// declared support for": the child is told the client cannot, as
		// a 2025 client without the capability would tell it, and the
		// call goes on. Ending it here failed calls that needed nothing:
		// the child was initialized with every capability (profileParams)
		// and may ask on its own, outside any tool's work, whichever call
		// is in flight (server-everything asks for roots 350 ms after it
		// is initialized). A call that needed the answer fails, and its
		// failure becomes -32021 naming what the client lacks.
		r.replyError(xid, CodeMethodNotFound, "mcp-bridge: the client did not declare the capability "+m.method+" needs")
		if r.missing == nil {
			r.missing, r.missingMethod = need, m.method
		}
		return
	}
	mc.ask(m.method, params, xid)
}

// ask adds the child's question xid (of method, with params) to the round
// being gathered, opening one if none is.
func (mc *ModernCall) ask(method string, params, xid []byte) {
	r := mc.run
	if r.round == nil {
		r.round = newRound()
		r.gatherEnd = time.Now().Add(gatherWindow)
		mc.state = stateGathering
	}
	r.keys++
	key := map[string]string{"sampling/createMessage": "s", "elicitation/create": "e", "roots/list": "r"}[method] + strconv.Itoa(r.keys)
	// params is never left out, though the schema lets a roots/list go
	// without (server-everything's does): go-sdk v1.8.0 fails to decode
	// an input request that has none ("unexpected end of JSON input"), and
	// {} means the same to every client.
	req := map[string]json.RawMessage{"method": json.RawMessage(strconv.Quote(method)), "params": json.RawMessage(`{}`)}
	if params != nil {
		req["params"] = forClient(method, params)
	}
	b, _ := json.Marshal(req)
	r.round.requests[key] = b
	r.round.pending[key] = xid
	r.round.methods[key] = method
}

// missingFailure is the -32021 error that replaces the final answer msg
// of a call whose child asked for input the client did not declare, if
// that answer is a failure (an error, or a result with isError), nil
// otherwise: a call that failed after its question was refused failed
// for lack of the answer.
func (mc *ModernCall) missingFailure(m *childMsg) *Error {
	if mc.run.missing == nil {
		return nil
	}
	if !m.f.error.ok() {
		res := m.f.result.of(m.raw)
		if res == nil || res[0] != '{' || string(member(res, "isError").of(res)) != "true" {
			return nil
		}
	}
	mc.b.stats.InputMissingCapability.Add(1)
	return &Error{Kind: KindInvalid, Code: CodeMissingCapability, ID: mc.id,
		Message: "Missing required client capability: the server asked for " + mc.run.missingMethod + ", which this request's clientCapabilities do not declare",
		Data:    map[string]any{"requiredCapabilities": mc.run.missing}}
}

// forClient is a child's question's params as a 2026-07-28 client takes
// them: without what that revision removed (URL elicitations lost their
// elicitationId) and without the request's own _meta (its progress token
// is the child's).
func forClient(method string, params []byte) json.RawMessage {
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil {
		return params
	}
	delete(p, "_meta")
	if method == "elicitation/create" {
		delete(p, "elicitationId")
	}
	b, _ := json.Marshal(p)
	return b
}

// missing is the capability the client lacks for the child's question,
// as a ClientCapabilities object for data.requiredCapabilities; nil when
// it has it. The rules are the TypeScript SDK's: a URL elicitation needs
// elicitation.url, a form one elicitation (whose bare {} means form) or
// elicitation.form; sampling that asks for context needs
// sampling.context, with tools sampling.tools.
func (c clientCaps) missing(method string, params []byte) map[string]any {
	var p struct {
		Mode           string          `json:"mode"`
		IncludeContext string          `json:"includeContext"`
		Tools          json.RawMessage `json:"tools"`
	}
	_ = json.Unmarshal(params, &p)
	switch method {
	case "roots/list":
		if c.Roots == nil {
			return map[string]any{"roots": map[string]any{}}
		}
	case "elicitation/create":
		e := c.Elicitation
		if p.Mode == "url" {
			if e == nil || e.URL == nil {
				return map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}
			}
			return nil
		}
		if e == nil || (e.URL != nil && e.Form == nil) {
			return map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}
		}
	case "sampling/createMessage":
		s := c.Sampling
		switch {
		case s == nil:
			return map[string]any{"sampling": map[string]any{}}
		case p.IncludeContext != "" && p.IncludeContext != "none" && s.Context == nil:
			return map[string]any{"sampling": map[string]any{"context": map[string]any{}}}
		case len(p.Tools) > 0 && string(p.Tools) != "null" && s.Tools == nil:
			return map[string]any{"sampling": map[string]any{"tools": map[string]any{}}}
		}
	}
	return nil
}

// dropRound answers what the child asked in the round being gathered as
// if the client had declined: the child has answered its call meanwhile,
// or the call ends.
func (mc *ModernCall) dropRound() {
	r := mc.run.round
	mc.run.round = nil
	mc.answerUnasked(r, "the request ended before its client answered")
}

// answerUnasked answers every question of r the client never answered:
// an elicitation is cancelled, anything else fails.
func (mc *ModernCall) answerUnasked(r *round, reason string) {
	for key, xid := range r.pending {
		if r.methods[key] == "elicitation/create" {
			mc.run.reply(xid, []byte(`{"action":"cancel"}`))
		} else {
			mc.run.replyError(xid, CodeInternalError, "mcp-bridge: "+reason)
		}
	}
}

// park puts the call in an exchange for its client's retry and returns the
// input_required result for the client.
func (mc *ModernCall) park() []byte {
	r := mc.run.round
	mc.run.round = nil
	b := mc.b
	handle := b.newHandle()
	if mc.exchange == "" {
		mc.exchange = newExchangeID()
	}
	ex := &exchange{call: mc, round: r, owner: mc.owner.Key, method: mc.method, target: mc.target, args: mc.argsDigest(), id: mc.exchange}
	// Its place under --max-parked was taken with its lease (enterLeased).
	b.exMu.Lock()
	b.exchanges[handle] = ex
	ex.expires = b.cfg.Now().Add(b.cfg.InputTTL)
	ex.timer = time.AfterFunc(b.cfg.InputTTL, func() { b.expireExchange(handle, ex) })
	b.exMu.Unlock()
	b.stats.InputRequired.Add(1)
	mc.state, mc.inputRequired = stateParked, true
	mc.run.hold(true)
	res := map[string]any{"resultType": "input_required", "inputRequests": r.requests, "requestState": handle}
	msg := resultMessage(mc.id, res)
	if mc.hints.serverInfo != nil {
		msg = decorateResult(scanned(msg), resultHints{resultType: "input_required", serverInfo: mc.hints.serverInfo})
	}
	return msg
}

// newHandle makes a requestState handle: this replica's name and 128
// random bits.
func (b *Bridge) newHandle() string {
	return "mb1." + b.cfg.ReplicaID + "." + NewID()
}

// resume serves a retry: a modern request with requestState (and
// inputResponses) for a call parked on a legacy child. The exchange is
// checked and taken only if everything matches; else the retry gets
// -32602 and the parked call is left as it was. The retry's call takes
// the parked call's run over: its request on the child is the retry's
// from now on.
func (mc *ModernCall) resume(m *Message) error {
	mc.noteTarget(m)
	ex, responses, why := mc.b.takeExchange(mc, m)
	if why != "" {
		mc.b.stats.InputRefused.Add(1)
		mc.answer(errorResponse(mc.id, CodeInvalidParams, "Invalid params: "+why, nil))
		return nil
	}
	old := ex.call
	old.unpool() // the retry holds a use of the pool of its own
	mc.run, mc.exchange, mc.started = old.run, ex.id, old.started
	mc.state = stateRunning
	r := mc.run
	if r.c != nil {
		r.u.resume(r.c, m, levelIndex(mc.env.LogLevel))
	}
	r.hold(false)
	left := newRound()
	for key, xid := range ex.round.pending {
		if v, ok := responses[key]; ok {
			r.reply(xid, v)
			continue
		}
		// "If the client fails to send all the information requested
		// ..., the server SHOULD respond with a new InputRequiredResult
		// requesting the missing information again."
		left.pending[key], left.requests[key], left.methods[key] = xid, ex.round.requests[key], ex.round.methods[key]
	}
	if len(left.pending) > 0 {
		r.round, r.gatherEnd = left, time.Now()
		mc.state = stateGathering
	}
	return nil
}

// takeExchange checks a retry m against the exchange its requestState
// names and, if everything matches, takes the exchange out of the bridge
// and returns it with the retry's answers; else why not, for the client.
func (b *Bridge) takeExchange(mc *ModernCall, m *Message) (*exchange, map[string]json.RawMessage, string) {
	var handle string
	if rs := m.Param("requestState"); rs == nil || rs[0] != '"' || unquote(rs, &handle) != nil {
		return nil, nil, "inputResponses without the requestState of the input_required result they answer"
	}
	var responses map[string]json.RawMessage
	if ir := m.Param("inputResponses"); ir != nil && (ir[0] != '{' || json.Unmarshal(ir, &responses) != nil) {
		return nil, nil, "inputResponses must be an object"
	}
	b.exMu.Lock()
	defer b.exMu.Unlock()
	ex := b.exchanges[handle]
	switch {
	case ex == nil:
		if r := replicaOf(handle); r != "" && r != b.cfg.ReplicaID {
			return nil, nil, "requestState was issued by the bridge replica " + quoteVersion(r) + " and this is " + quoteVersion(b.cfg.ReplicaID) + "; route retries by the replica named in requestState"
		}
		return nil, nil, "requestState is invalid, expired or already used; send the request again without it"
	case ex.owner != mc.owner.Key || ex.method != mc.method || ex.target != mc.target || ex.args != mc.argsDigest():
		return nil, nil, "requestState does not belong to this request (principal, method, target and arguments must be those of the request it answers)"
	}
	for key, v := range responses {
		if method, ok := ex.round.methods[key]; ok {
			if why := invalidInput(method, v); why != "" {
				return nil, nil, "inputResponses[" + strconv.Quote(key) + "]: " + why
			}
		}
	}
	delete(b.exchanges, handle)
	ex.timer.Stop()
	return ex, responses, ""
}

// expireExchange ends a call whose client did not retry within
// --input-ttl: the child's questions are answered as declined or failed,
// the request is cancelled on the child, and its lease is stopped.
func (b *Bridge) expireExchange(handle string, ex *exchange) {
	b.exMu.Lock()
	if b.exchanges[handle] != ex {
		b.exMu.Unlock()
		return
	}
	delete(b.exchanges, handle)
	b.exMu.Unlock()
	b.log.Info("a call waiting for its client's input expired (--input-ttl); cancelled it", "method", ex.method, "principal", ex.call.owner.Name)
	ex.call.abandon(ex.round, "its client did not answer within --input-ttl")
	// Counted once it has given its place under --max-parked back.
	b.stats.InputExpired.Add(1)
}

// abandon ends a parked call: its questions answered as declined or
// failed, its request cancelled, its session ended, its lease stopped.
func (mc *ModernCall) abandon(r *round, reason string) {
	mc.answerUnasked(r, reason)
	mc.run.cancel(reason)
	mc.run.end()
	if mc.run.lease != nil {
		mc.run.unlease(false)
	}
	mc.unpool()
}

// closeExchanges abandons every parked call (Close).
func (b *Bridge) closeExchanges() {
	b.exMu.Lock()
	all := b.exchanges
	b.exchanges = map[string]*exchange{}
	b.exMu.Unlock()
	for _, ex := range all {
		ex.timer.Stop()
		ex.call.abandon(ex.round, "the bridge is shutting down")
	}
}

// replicaOf is the replica a handle names, "" if it is not a handle.
func replicaOf(handle string) string {
	rest, ok := strings.CutPrefix(handle, "mb1.")
	if !ok {
		return ""
	}
	r, _, ok := strings.Cut(rest, ".")
	if !ok {
		return ""
	}
	return r
}

// invalidInput says what is wrong with a client's answer to a question of
// method, "" if nothing: an elicitation result needs an action, a
// sampling result a role and content, a roots result its roots.
func invalidInput(method string, v json.RawMessage) string {
	var r map[string]json.RawMessage
	if len(v) == 0 || v[0] != '{' || json.Unmarshal(v, &r) != nil {
		return "must be an object"
	}
	switch method {
	case "elicitation/create":
		var action string
		if json.Unmarshal(r["action"], &action) != nil || (action != "accept" && action != "decline" && action != "cancel") {
			return `an elicitation result needs "action": "accept", "decline" or "cancel"`
		}
	case "sampling/createMessage":
		if r["role"] == nil || r["content"] == nil {
			return `a sampling result needs "role" and "content"`
		}
	case "roots/list":
		if len(r["roots"]) == 0 || r["roots"][0] != '[' {
			return `a roots result needs "roots", an array`
		}
	}
	return ""
}

// preemptParked ends the call parked longest of the principal that holds
// the most leased children, running or parked, if that is at least two
// more than owner holds (so taking one never leaves it with fewer than
// owner will have), and returns the call's lease, which is being stopped;
// nil if no principal holds that many. The call ends as an expired one
// does: its child's questions declined, its request cancelled; its
// client's retry finds nothing and is told to send the request again.
func (b *Bridge) preemptParked(owner string) *upstream {
	b.exMu.Lock()
	var handle string
	var pick *exchange
	most := 0
	for h, ex := range b.exchanges {
		n := b.leasedBy[ex.owner]
		if ex.call.run.lease == nil || n < b.leasedBy[owner]+2 {
			continue
		}
		if pick == nil || n > most || (n == most && ex.expires.Before(pick.expires)) {
			handle, pick, most = h, ex, n
		}
	}
	if pick == nil {
		b.exMu.Unlock()
		return nil
	}
	delete(b.exchanges, handle)
	pick.timer.Stop()
	b.exMu.Unlock()
	b.log.Info("a call waiting for its client's input was ended to give its process to another principal's (--max-children)",
		"method", pick.method, "principal", pick.call.owner.Name, "its_leased_children", most)
	lease := pick.call.run.lease
	pick.call.abandon(pick.round, "its process was given to another principal's call (--max-children); send the request again")
	b.stats.InputPreempted.Add(1)
	return lease
}
