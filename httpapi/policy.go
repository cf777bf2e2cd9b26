package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// The tool policy and the audit log both look at a POST's requests on the
// way in and at their responses on the way out: a denied tools/call never
// reaches the child, a tools/list result loses the tools the principal may
// not call, and every request gets one audit line once its response is
// written (or the client is gone).

const methodToolsCall = "tools/call"

// auditLog writes one JSON object per line. Writes are serialised, so
// lines never interleave.
type auditLog struct {
	mu   sync.Mutex
	w    io.Writer
	args bool // log tools/call arguments
	now  func() time.Time
}

type auditEntry struct {
	Time       string          `json:"time"`
	Principal  string          `json:"principal"`
	Issuer     string          `json:"issuer,omitempty"`
	Session    string          `json:"session,omitempty"`
	Method     string          `json:"method"`
	Tool       string          `json:"tool,omitempty"`
	Outcome    string          `json:"outcome"` // ok, error, denied, no_response
	ErrorCode  int             `json:"error_code,omitempty"`
	DurationMS float64         `json:"duration_ms"`
	Arguments  json.RawMessage `json:"arguments,omitempty"`
}

func (a *auditLog) write(e auditEntry) {
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	_, _ = a.w.Write(append(b, '\n'))
}

// callParams are the parts of a tools/call the policy and the audit read.
type callParams struct {
	Params struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"params"`
}

func toolOf(m *bridge.Message) (name string, args json.RawMessage) {
	if m.Method != methodToolsCall {
		return "", nil
	}
	var c callParams
	_ = json.Unmarshal(m.Raw, &c)
	return c.Params.Name, c.Params.Arguments
}

// postTrack follows one POST's requests until their responses are out.
type postTrack struct {
	audit   *auditLog
	p       auth.Principal
	session string

	mu      sync.Mutex
	pending map[string]*pendingCall // by the request id's raw bytes
}

type pendingCall struct {
	method, tool string
	args         json.RawMessage
	start        time.Time
}

type trackKey struct{}

// track starts following msgs for the audit log; nil without one.
func (h *mcpHandler) track(p auth.Principal, session string, msgs []bridge.Message) *postTrack {
	if h.audit == nil {
		return nil
	}
	t := &postTrack{audit: h.audit, p: p, session: session, pending: make(map[string]*pendingCall)}
	now := h.audit.now()
	for i := range msgs {
		m := &msgs[i]
		if m.Kind != bridge.Request {
			continue
		}
		tool, args := toolOf(m)
		if !h.audit.args {
			args = nil
		}
		t.pending[string(m.ID())] = &pendingCall{method: m.Method, tool: tool, args: args, start: now}
	}
	return t
}

func (t *postTrack) entry(c *pendingCall, outcome string, code int) auditEntry {
	now := t.audit.now()
	return auditEntry{
		Time: now.UTC().Format(time.RFC3339Nano), Principal: t.p.String(), Issuer: t.p.Issuer,
		Session: t.session, Method: c.method, Tool: c.tool, Outcome: outcome, ErrorCode: code,
		DurationMS: float64(now.Sub(c.start).Microseconds()) / 1000, Arguments: c.args,
	}
}

// observe writes the audit line of the request msg answers, if msg is a
// response to one of this POST's requests.
func (t *postTrack) observe(msg []byte) {
	var r struct {
		ID     json.RawMessage     `json:"id"`
		Method *string             `json:"method"`
		Error  *struct{ Code int } `json:"error"`
	}
	if json.Unmarshal(msg, &r) != nil || r.Method != nil || r.ID == nil {
		return
	}
	t.mu.Lock()
	c := t.pending[string(r.ID)]
	delete(t.pending, string(r.ID))
	t.mu.Unlock()
	if c == nil {
		return
	}
	if r.Error != nil {
		t.audit.write(t.entry(c, "error", r.Error.Code))
		return
	}
	t.audit.write(t.entry(c, "ok", 0))
}

// deny writes the audit line of a request refused by the policy.
func (t *postTrack) deny(id []byte) {
	t.mu.Lock()
	c := t.pending[string(id)]
	delete(t.pending, string(id))
	t.mu.Unlock()
	if c != nil {
		t.audit.write(t.entry(c, "denied", bridge.CodeInvalidParams))
	}
}

// finish writes a line for each request whose response never went out on
// this POST (the client left; the answer stays with the session).
func (t *postTrack) finish() {
	t.mu.Lock()
	left := t.pending
	t.pending = nil
	t.mu.Unlock()
	for _, c := range left {
		t.audit.write(t.entry(c, "no_response", 0))
	}
}

// denied returns the first request of msgs the principal's filter does not
// allow: a tools/call of a tool it may not call.
func denied(msgs []bridge.Message, f *auth.ToolFilter) *bridge.Message {
	if f == nil {
		return nil
	}
	for i := range msgs {
		if msgs[i].Kind != bridge.Request {
			continue
		}
		if name, _ := toolOf(&msgs[i]); msgs[i].Method == methodToolsCall && !f.Allowed(name) {
			return &msgs[i]
		}
	}
	return nil
}

// refuseTool answers a denied tools/call without the child: for a single
// request, its JSON-RPC error, as the child would answer an unknown tool;
// a batch is refused whole (403), since its other requests would need
// answers the bridge cannot give.
func (h *mcpHandler) refuseTool(w http.ResponseWriter, r *http.Request, m *bridge.Message, batch, wantJSON bool, t *postTrack) error {
	name, _ := toolOf(m)
	h.log.Info("tools/call refused by the tool policy", "tool", name)
	msg := "tool " + quote(name) + " is not allowed for this principal (tool policy)"
	if t != nil {
		t.deny(m.ID())
	}
	if batch {
		return &httpError{status: http.StatusForbidden, code: bridge.CodeInvalidParams, msg: "Forbidden: " + msg}
	}
	body := bridge.ErrorBody(&bridge.Error{Code: bridge.CodeInvalidParams, Message: msg, ID: m.ID()})
	if wantJSON {
		writeJSON(w, [][]byte{body}, false)
		return nil
	}
	h.sseOne(w, r, body)
	return nil
}

// outbound applies the tool policy and the audit to messages about to be
// written to the client: it is called on every stream, so a tools/list
// result is filtered however it travels (its POST, a resumed stream).
func (h *mcpHandler) outbound(r *http.Request, msgs [][]byte) [][]byte {
	filter := h.outboundFilter(r)
	for i, m := range msgs {
		msgs[i] = filter(m)
	}
	return msgs
}

// outboundFilter is outbound for one message at a time.
func (h *mcpHandler) outboundFilter(r *http.Request) func([]byte) []byte {
	if h.opts.ToolPolicy == nil && h.audit == nil {
		return func(m []byte) []byte { return m }
	}
	f := h.opts.ToolPolicy.For(principal(r))
	t, _ := r.Context().Value(trackKey{}).(*postTrack)
	return func(m []byte) []byte {
		if f != nil {
			m = filterToolList(m, f)
		}
		if t != nil {
			t.observe(m)
		}
		return m
	}
}

func withTrack(ctx context.Context, t *postTrack) context.Context {
	return context.WithValue(ctx, trackKey{}, t)
}

// filterToolList removes from a tools/list result the tools f does not
// allow. A response whose result has a "tools" array is a tools/list
// result: no other MCP result has one at the top.
func filterToolList(msg []byte, f *auth.ToolFilter) []byte {
	if !bytes.Contains(msg, []byte(`"tools"`)) {
		return msg
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(msg, &top) != nil || top["result"] == nil || top["method"] != nil {
		return msg
	}
	var result map[string]json.RawMessage
	if json.Unmarshal(top["result"], &result) != nil || result["tools"] == nil {
		return msg
	}
	var tools []json.RawMessage
	if json.Unmarshal(result["tools"], &tools) != nil {
		return msg
	}
	kept := tools[:0:0]
	for _, raw := range tools {
		var t struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &t) == nil && f.Allowed(t.Name) {
			kept = append(kept, raw)
		}
	}
	if len(kept) == len(tools) {
		return msg
	}
	var err error
	if result["tools"], err = json.Marshal(kept); err != nil {
		return msg
	}
	if top["result"], err = json.Marshal(result); err != nil {
		return msg
	}
	out, err := json.Marshal(top)
	if err != nil {
		return msg
	}
	return out
}
