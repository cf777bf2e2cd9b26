package httpapi

import (
	"net/http"
	"strings"

	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// Modern (MCP 2026-07-28) requests on the Streamable HTTP endpoint: each
// POST stands alone, with its version and capabilities in _meta and its
// method and target mirrored in headers. The era is decided per POST
// (post.modern); the bridge checks and serves the request (bridge.Modern),
// this transport frames the answer: one JSON body when the final answer
// comes alone, else an SSE stream scoped to the request, whose closing by
// the client cancels it. Sessions, GET and DELETE stay the 2025 era's.

// Request headers of 2026-07-28.
const (
	headerMethod     = "Mcp-Method"
	headerName       = "Mcp-Name"
	headerParamStart = "Mcp-Param-"
)

// modernHeaders reads what bridge.CheckModern compares with the body.
func modernHeaders(r *http.Request) bridge.ModernHeaders {
	h := r.Header
	var mh bridge.ModernHeaders
	mh.Version, mh.HasVersion = headerValue(h, headerVersion)
	mh.Method, mh.HasMethod = headerValue(h, headerMethod)
	mh.Name, mh.HasName = headerValue(h, headerName)
	for _, name := range []string{headerMethod, headerName} {
		if len(h[http.CanonicalHeaderKey(name)]) > 1 {
			mh.Repeated = name
		}
	}
	for k, v := range h {
		if len(k) > len(headerParamStart) && strings.EqualFold(k[:len(headerParamStart)], headerParamStart) && len(v) > 0 {
			if mh.Params == nil {
				mh.Params = map[string]string{}
			}
			name := strings.ToLower(k[len(headerParamStart):])
			if _, twice := mh.Params[name]; twice || len(v) > 1 {
				mh.Repeated = k
			}
			mh.Params[name] = v[0]
		}
	}
	return mh
}

// headerValue is a header's first value and whether it was sent at all.
func headerValue(h http.Header, name string) (string, bool) {
	v, ok := h[http.CanonicalHeaderKey(name)]
	if !ok || len(v) == 0 {
		return "", false
	}
	return v[0], true
}

// modern serves a modern POST: admission (the tool policy, the audit
// log), then the bridge's answer, framed.
func (h *mcpHandler) modern(w http.ResponseWriter, r *http.Request, p *post) error {
	if p.batch {
		return &httpError{status: http.StatusBadRequest, code: bridge.CodeInvalidRequest,
			msg: "Invalid Request: a 2026-07-28 request is never part of a JSON-RPC batch"}
	}
	p.rec.era = eraModern
	pr := principal(r)
	p.filter = h.opts.ToolPolicy.For(pr)
	h.follow(p, pr, "")
	if i, msg := h.refusedCall(p, pr); i >= 0 {
		return h.answerOne(w, r, p, bridge.ErrorBody(&bridge.Error{Code: bridge.CodeInvalidParams, Message: msg, ID: p.msgs[0].ID()}))
	}
	if p.held = h.held(p, pr); p.held != nil {
		return h.modernHeld(w, r, p, pr)
	}
	if p.msgs[0].Method == "subscriptions/listen" {
		// A listen is a stream for as long as its client keeps it: it
		// counts from before it starts.
		closed, err := h.limits.openStream(pr)
		if err != nil {
			return err
		}
		defer closed()
	}
	call, err := h.srv.Modern(r.Context(), bridge.ModernRequest{
		Message: p.msgs[0],
		Headers: modernHeaders(r),
		Owner:   owner(pr),
		Env:     claimEnv(h.opts.ClaimEnv, pr),
		// What one principal is told may not be another's to cache:
		// with authentication, or a tool policy that filters lists.
		Private: pr.Method != "" || h.opts.ToolPolicy != nil,
	})
	if err != nil {
		return err
	}
	if call == nil {
		w.WriteHeader(http.StatusAccepted) // a notification
		return nil
	}
	// A plain JSON body when the final message comes first and alone
	// (within --sse-delay in auto mode), else an SSE stream; a listen is
	// always a stream, counted already. The client closing its stream
	// ends the request's context, and Close then cancels the call.
	return h.respond(w, r, p, call, answer{call: call, stream: call.Listen(), counts: !call.Listen()})
}

// Eras, as the metrics and the audit log label requests.
const (
	era2025   = "2025"
	eraModern = "2026-07-28"
)
