package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/mcp-bridge/mcp-bridge/approval"
	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// record is the one observer of a POST: its JSON-RPC messages, learnt
// when its body is parsed, and what became of each, learnt from every
// message written back, each read once (outbound.message). The metrics
// and the audit log read it once, when it is complete, as tsweb's logging
// writer hands its record to its completion hook: neither parses the body
// or a response again.
//
// A record is complete when its last request has its response, before
// that response is written (so a client that has read its answer finds
// the audit line written), or, for what is left, when the POST is over
// (finish): the handler has returned, or on the legacy endpoint the pump
// that writes the POST's answers has stopped.
//
// The observing middleware (metrics.go) makes the record of each POST to
// the MCP endpoint; a POST with none (the legacy endpoint's) gets its own
// at parse. One goroutine uses it at a time: the handler's, then that of
// whoever it was handed over to.
type record struct {
	now   func() time.Time
	start time.Time
	calls []callRecord  // one per message, in the POST's order
	one   [1]callRecord // calls of a POST of one message, without an allocation
	left  int           // requests still without a response
	batch bool
	// era is the protocol era of the POST (era2025, eraModern), for the
	// metrics and the audit log.
	era string
	// status is the HTTP status of the POST, for the metrics: set by the
	// observing middleware before it finishes the record; 400 and over
	// mean nothing reached the server.
	status int

	// Its readers, nil when off. The audit log reads only a POST that
	// admission let reach a session (follow).
	metrics   *metrics
	audit     *auditLog
	principal auth.Principal
	session   string

	// refusal is the bridge's own refusal of the POST (an HTTP error
	// before any answer), nil if there was none: what was left
	// unanswered was refused, not abandoned.
	refusal *httpError
	// handedOver: a legacy pump writes the POST's answers, and finishes
	// the record when it is done.
	handedOver bool

	done bool
}

// callRecord is one message of a POST.
type callRecord struct {
	kind   bridge.MsgKind
	method string
	id     []byte
	msg    *bridge.Message
	// tool and args: the tool a tools/call names and its arguments, as
	// sent, read on first use (toolCall): only the policy and the audit
	// log need them.
	tool     string
	args     json.RawMessage
	toolRead bool
	// exchange names the MRTR exchange the call belongs to: every round
	// of one call, its first request and each retry, carries the same.
	exchange string
	// inputRequired: the answer was an input_required result, a round of
	// the exchange rather than its end.
	inputRequired bool
	outcome       outcome
	code          int       // the error's code, for outcomeError and outcomeDenied
	at            time.Time // when the response went out, or the call was denied
}

type outcome uint8

const (
	unanswered outcome = iota
	answeredOK
	answeredError
	deniedByPolicy
)

type recordKey struct{}

// withRecord is ctx carrying the POST's record, for the POST pipeline.
func withRecord(ctx context.Context, rec *record) context.Context {
	return context.WithValue(ctx, recordKey{}, rec)
}

// recordOf is the record the observing middleware made for r, if any.
func recordOf(r *http.Request) *record {
	rec, _ := r.Context().Value(recordKey{}).(*record)
	return rec
}

// parsed records the POST's messages: requests wait for their response;
// notifications and responses need only counting.
func (rec *record) parsed(msgs []bridge.Message, batch bool) {
	if len(msgs) == 1 {
		rec.calls = rec.one[:]
	} else {
		rec.calls = make([]callRecord, len(msgs))
	}
	rec.batch = batch
	for i := range msgs {
		m := &msgs[i]
		c := &rec.calls[i]
		c.kind, c.method, c.msg = m.Kind, m.Method, m
		if m.Kind == bridge.Request {
			c.id = m.ID()
			rec.left++
		}
	}
}

// toolCall is the tool a tools/call names and its arguments, read from
// its bytes once; "" and nil for any other message.
func (c *callRecord) toolCall() (string, json.RawMessage) {
	if !c.toolRead && c.method == methodToolsCall {
		c.tool, c.args = toolOf(c.msg)
	}
	c.toolRead = true
	return c.tool, c.args
}

// toolOf reads the tool a tools/call names, and its arguments, from the
// message's bytes: params.name (a string) and params.arguments.
func toolOf(m *bridge.Message) (name string, args json.RawMessage) {
	raw := m.Param("name")
	switch {
	case len(raw) >= 2 && raw[0] == '"' && bytes.IndexByte(raw, '\\') < 0:
		name = string(raw[1 : len(raw)-1])
	case raw != nil:
		_ = json.Unmarshal(raw, &name)
	}
	return name, m.Param("arguments")
}

// method is the method of the POST's request with this id, "" for none.
func (rec *record) method(id []byte) string {
	for i := range rec.calls {
		if c := &rec.calls[i]; c.kind == bridge.Request && bytes.Equal(c.id, id) {
			return c.method
		}
	}
	return ""
}

// answered records r, a response written back, if it answers one of the
// POST's requests still waiting. The last one completes the record.
func (rec *record) answered(r bridge.Reply) {
	if rec.left == 0 {
		return
	}
	for i := range rec.calls {
		c := &rec.calls[i]
		if c.kind != bridge.Request || c.outcome != unanswered || !bytes.Equal(c.id, r.ID) {
			continue
		}
		c.outcome, c.at = answeredOK, rec.now()
		if r.Error {
			c.outcome, c.code = answeredError, r.Code
		}
		if rec.left--; rec.left == 0 {
			rec.finish()
		}
		return
	}
}

// denied returns the index of the first tools/call of the POST that f
// does not allow, or -1.
func (rec *record) denied(f *auth.ToolFilter) int {
	if f == nil {
		return -1
	}
	for i := range rec.calls {
		c := &rec.calls[i]
		if c.kind != bridge.Request || c.method != methodToolsCall {
			continue
		}
		if tool, _ := c.toolCall(); !f.Allowed(tool) {
			return i
		}
	}
	return -1
}

// deny records that call i was refused by the tool policy and answered
// by the bridge. A single request is then complete; a batch that holds a
// denied call is refused whole, and is complete when the POST is over.
func (rec *record) deny(i int) {
	c := &rec.calls[i]
	if c.outcome != unanswered {
		return
	}
	c.outcome, c.code, c.at = deniedByPolicy, bridge.CodeInvalidParams, rec.now()
	if rec.left--; rec.left == 0 && !rec.batch {
		rec.finish()
	}
}

// refuse records that the bridge refused the POST itself (he is its
// answer). The audit log, if there is one, follows a POST refused before
// admission too (as pr): a refusal is worth a line as much as an answer.
func (rec *record) refuse(he *httpError, audit *auditLog, pr auth.Principal) {
	rec.refusal = he
	if rec.audit == nil && audit != nil {
		rec.audit, rec.principal = audit, pr
	}
}

// finish completes the record, once: its readers read it. What is still
// waiting then got no response on this POST.
func (rec *record) finish() {
	if rec.done {
		return
	}
	rec.done = true
	if rec.metrics != nil {
		rec.metrics.observe(rec)
	}
	if rec.audit != nil {
		rec.audit.observe(rec)
	}
}

// outbound is what every message written back to a client passes
// through, once: the tool policy's filter of tools/list results, then the
// record of the POST it answers. Both read the message in one scan.
type outbound struct {
	filter *auth.ToolFilter // nil: every tool is allowed
	rec    *record          // nil: the stream answers no POST of this request (GET, resume)
	// call is the 2026-07-28 call the POST is, if it is one: the record
	// learns its MRTR exchange from it.
	call bridge.Call
	// catalog learns the tools/list results the POST is answered with
	// (the annotations a trusted server's approval rules read), nil when
	// nothing reads them.
	catalog *approval.Catalog
}

// message prepares ev's message for the client and tells the record.
func (o outbound) message(ev bridge.Event) []byte {
	msg, r, ok := o.prepare(ev)
	if ok {
		if o.call != nil && len(o.rec.calls) == 1 {
			c := &o.rec.calls[0]
			c.exchange, c.inputRequired = o.call.Exchange(), o.call.InputRequired()
		}
		o.rec.answered(r)
	}
	return msg
}

// prepare is message without telling the record: ok says r is for it, to
// pass to rec.answered once msg is on its way.
func (o outbound) prepare(ev bridge.Event) (_ []byte, r bridge.Reply, ok bool) {
	msg := ev.Data
	follow := o.rec != nil && o.rec.left > 0
	if o.filter == nil && !follow && o.catalog == nil {
		return msg, r, false
	}
	// What the bridge read of the message on its way, or the message
	// itself when it did not.
	r, isReply := ev.Reply()
	if !isReply {
		return msg, r, false
	}
	if o.catalog != nil && !r.Error && o.method(r.ID) == methodToolsList {
		// The server's own list, before the principal's filter: what it
		// says of each tool holds whoever asked.
		o.catalog.Learn(resultOf(msg))
	}
	if o.filter != nil && !r.Error {
		// A response to one of the POST's requests that is no tools/list
		// has no tools to filter; anything else may.
		if m := o.method(r.ID); m == "" || m == methodToolsList {
			msg = filterToolList(msg, o.filter)
		}
	}
	return msg, r, follow
}

func (o outbound) method(id []byte) string {
	if o.rec == nil {
		return ""
	}
	return o.rec.method(id)
}

// resultOf is the result member of a response, nil if it has none.
func resultOf(msg []byte) json.RawMessage {
	var m struct {
		Result json.RawMessage `json:"result"`
	}
	_ = json.Unmarshal(msg, &m)
	return m.Result
}

// all is message for each of evs.
func (o outbound) all(evs []bridge.Event) [][]byte {
	msgs := make([][]byte, len(evs))
	for i, ev := range evs {
		msgs[i] = o.message(ev)
	}
	return msgs
}
