package httpapi

import (
	"net/http"
	"strings"
	"time"

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
	if p.msgs[0].Method == "subscriptions/listen" {
		// A listen is a stream for as long as its client keeps it: it
		// counts from before it starts.
		closed, err := h.limits.openStream(pr)
		if err != nil {
			return err
		}
		defer closed()
	}
	mc, err := h.b.Modern(r.Context(), bridge.ModernRequest{
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
	if mc == nil {
		w.WriteHeader(http.StatusAccepted) // a notification
		return nil
	}
	defer mc.Close()
	return h.respondModern(w, r, p, mc)
}

// respondModern writes a modern call's answer: a plain JSON body when the
// final message comes first and alone (within --sse-delay in auto mode),
// else an SSE stream. A listen is always a stream. The client closing its
// stream ends the request's context, and Close then cancels the call.
func (h *mcpHandler) respondModern(w http.ResponseWriter, r *http.Request, p *post, mc *bridge.ModernCall) error {
	ctx := r.Context()
	out := outbound{filter: p.filter, rec: p.rec, call: mc}
	mode := h.mode(p.takes)
	if mc.Listen() && p.takes.sse {
		mode = ModeSSE
	}
	var first [][]byte
	switch mode {
	case ModeJSON:
		// The client takes one JSON body: only the final answer.
		for {
			msgs, final, err := mc.Next(ctx, nil)
			if err != nil {
				return modernErr(err)
			}
			if final {
				writeJSON(w, [][]byte{out.message(msgs[len(msgs)-1])}, false)
				return nil
			}
		}
	case ModeAuto:
		t := time.NewTimer(h.opts.SSEDelay)
		msgs, final, err := mc.Next(ctx, t.C)
		t.Stop()
		if err != nil {
			return modernErr(err)
		}
		if final && len(msgs) == 1 {
			writeJSON(w, [][]byte{out.message(msgs[0])}, false)
			return nil
		}
		first = msgs
	}
	if !mc.Listen() {
		// An answer that becomes a stream counts from now; refused, the
		// call is cancelled (Close), as the client's closing would.
		closed, err := h.limits.openStream(principal(r))
		if err != nil {
			return err
		}
		defer closed()
	}
	sw, err := startSSE(ctx, w, h.opts.WriteTimeout)
	if err != nil {
		return nil // gone before the first byte: Close cancels
	}
	var tick <-chan time.Time
	if h.opts.KeepAlive > 0 {
		t := time.NewTicker(h.opts.KeepAlive)
		defer t.Stop()
		tick = t.C
	}
	msgs, final := first, false
	for next := len(first) == 0; ; next = true {
		if next {
			var err error
			msgs, final, err = mc.Next(ctx, tick)
			if err != nil {
				if e, ok := err.(*bridge.Error); ok {
					// The answer is an error, and the stream has begun: it
					// is the stream's final message.
					_ = sw.message("", out.message(bridge.ErrorBody(e)))
					_ = sw.flush()
				}
				return nil
			}
			if len(msgs) == 0 && !final {
				sw.comment("keep-alive") // Next waited a KeepAlive for nothing
			}
		}
		for _, m := range msgs {
			if err := sw.message("", out.message(m)); err != nil {
				return nil
			}
		}
		if err := sw.flush(); err != nil || final {
			return nil
		}
	}
}

// modernErr is what ends a call before anything was written: a bridge
// error is the client's answer (HTTP 400 or 404 with its JSON-RPC error);
// the client leaving is no error to report.
func modernErr(err error) error {
	if _, ok := err.(*bridge.Error); ok {
		return err
	}
	return nil
}

// Eras, as the metrics and the audit log label requests.
const (
	era2025   = "2025"
	eraModern = "2026-07-28"
)
