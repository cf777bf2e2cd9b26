package httpapi

import (
	"cmp"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// The tool policy and the audit log both look at a POST's requests on the
// way in and at their responses on the way out, through the POST's record
// (observe.go): a denied tools/call never reaches the child (admit), a
// tools/list result loses the tools the principal may not call (outbound),
// and every request gets one audit line once its response is written (or
// the client is gone).

const (
	methodToolsCall = "tools/call"
	methodToolsList = "tools/list"
)

// auditLog writes one JSON object per line. Writes are serialised, so
// lines never interleave.
type auditLog struct {
	mu   sync.Mutex
	w    io.Writer
	args bool // log tools/call arguments
	now  func() time.Time
	// serverOf names the server a tool goes to, for the line's server
	// (the aggregate endpoint's); nil on a server's own endpoint.
	serverOf func(tool string) string
}

type auditEntry struct {
	Time      string `json:"time"`
	Principal string `json:"principal"`
	Issuer    string `json:"issuer,omitempty"`
	Session   string `json:"session,omitempty"`
	Era       string `json:"era"` // 2025 (sessions) or 2026-07-28 (stateless requests)
	Method    string `json:"method"`
	Tool      string `json:"tool,omitempty"`
	// Server is the server of the aggregate endpoint a tool's call went
	// to (the tool is its exposed name, SERVER__NAME).
	Server    string `json:"server,omitempty"`
	Outcome   string `json:"outcome"` // ok, error, denied, refused, input_required, no_response
	ErrorCode int    `json:"error_code,omitempty"`
	// Reason says why the bridge refused a request itself (outcome
	// refused): the message its client was given.
	Reason string `json:"reason,omitempty"`
	// HTTPStatus is the status of a refusal.
	HTTPStatus int `json:"http_status,omitempty"`
	// Exchange links the rounds of one MRTR call (2026-07-28): its first
	// request and every retry carry the same.
	Exchange   string          `json:"exchange,omitempty"`
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

// observe writes the audit lines of a complete record: one per request,
// with the time its response went out (or it was refused), refused with
// the reason for a request the bridge refused itself (one line for a POST
// refused before its messages were known), or no_response for a request
// whose response never went out on this POST (the client left; the answer
// stays with the session).
func (a *auditLog) observe(rec *record) {
	now := a.now()
	base := auditEntry{Principal: rec.principal.String(), Issuer: rec.principal.Issuer, Session: rec.session,
		Era: cmp.Or(rec.era, era2025)}
	if len(rec.calls) == 0 && rec.refusal != nil {
		e := base
		e.Outcome, e.ErrorCode, e.Reason, e.HTTPStatus = "refused", rec.refusal.code, rec.refusal.msg, rec.refusal.status
		e.Time = now.UTC().Format(time.RFC3339Nano)
		e.DurationMS = float64(now.Sub(rec.start).Microseconds()) / 1000
		a.write(e)
		return
	}
	for i := range rec.calls {
		c := &rec.calls[i]
		if c.kind != bridge.Request {
			continue
		}
		tool, args := c.toolCall()
		e := base
		e.Method, e.Tool, e.ErrorCode, e.Exchange = c.method, tool, c.code, c.exchange
		if a.serverOf != nil {
			e.Server = a.serverOf(tool)
		}
		at := c.at
		switch c.outcome {
		case answeredOK:
			e.Outcome = "ok"
			if c.inputRequired {
				e.Outcome = "input_required"
			}
		case answeredError:
			e.Outcome = "error"
		case deniedByPolicy:
			e.Outcome = "denied"
		default:
			e.Outcome, at = "no_response", now
			if rec.refusal != nil {
				e.Outcome, e.ErrorCode, e.Reason, e.HTTPStatus = "refused", rec.refusal.code, rec.refusal.msg, rec.refusal.status
			}
		}
		e.Time = at.UTC().Format(time.RFC3339Nano)
		e.DurationMS = float64(at.Sub(rec.start).Microseconds()) / 1000
		if a.args {
			e.Arguments = args
		}
		a.write(e)
	}
}

// follow has the audit log follow the POST's requests, as the principal
// and in the session that admission found (none in stateless mode).
func (h *mcpHandler) follow(p *post, pr auth.Principal, session string) {
	if h.audit == nil {
		return
	}
	p.rec.audit, p.rec.principal, p.rec.session = h.audit, pr, session
}

// outbound is what the messages of one response pass through: the
// principal's tool filter, and rec, the record of the POST they answer
// (nil for a stream that answers none: a GET, a resume).
func (h *mcpHandler) outbound(r *http.Request, rec *record) outbound {
	return outbound{filter: h.opts.ToolPolicy.For(principal(r)), rec: rec}
}

// filterToolList removes from a tools/list result the tools f does not
// allow, reading the result without decoding it (bridge.FilterTools).
func filterToolList(msg []byte, f *auth.ToolFilter) []byte {
	return bridge.FilterTools(msg, f.Allowed)
}
