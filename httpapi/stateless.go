package httpapi

import (
	"net/http"

	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// statelessPost serves a POST with no session: the request stands alone
// on the shared child, which the bridge initialized itself; an initialize
// is answered from the child's cached InitializeResult. (Options.Stateless)
func (h *mcpHandler) statelessPost(w http.ResponseWriter, r *http.Request) error {
	wantJSON, wantSSE, msgs, batch, err := h.readPost(w, r)
	if err != nil {
		return err
	}
	if m := denied(msgs, h.opts.ToolPolicy.For(principal(r))); m != nil {
		return h.refuseTool(w, r, m, batch, wantJSON, nil)
	}
	if err := checkVersion(r); err != nil {
		return err
	}
	if batch && hasInitialize(msgs) {
		return &httpError{status: http.StatusBadRequest, code: bridge.CodeInvalidRequest,
			msg: "Invalid Request: initialize must not be part of a JSON-RPC batch"}
	}
	sess, answer, err := h.b.Stateless(r.Context(), &msgs[0])
	if err != nil {
		return err
	}
	// The session is this request's alone: when the answer is out, so is it.
	defer sess.Close()
	if answer != nil {
		if wantJSON {
			writeJSON(w, [][]byte{answer}, false)
		} else {
			h.sseOne(w, r, answer)
		}
		return nil
	}
	st, err := sess.Send(msgs, !wantSSE || h.opts.ResponseMode == ModeJSON)
	if err != nil {
		return err
	}
	return h.respond(w, r, st, batch, wantJSON, wantSSE)
}
