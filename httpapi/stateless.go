package httpapi

import (
	"net/http"

	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// statelessPost serves a POST with no session: the request stands alone
// on the shared child, which the bridge initialized itself; an initialize
// is answered from the child's cached InitializeResult. (Options.Stateless)
func (h *mcpHandler) statelessPost(w http.ResponseWriter, r *http.Request) error {
	return h.streamable(w, r, h.stateless)
}

// stateless serves a POST of the 2025 era in stateless mode.
func (h *mcpHandler) stateless(w http.ResponseWriter, r *http.Request, p *post) error {
	if done, err := h.admittedHolding(w, r, p, nil); done {
		return err
	}
	if p.held != nil {
		return h.respond(w, r, p, h.holdStateless(r.Context(), p), answer{})
	}
	sess, cached, err := h.srv.Stateless(r.Context(), &p.msgs[0])
	if err != nil {
		return err
	}
	// The session is this request's alone: when the answer is out, so is it.
	defer sess.Close()
	if cached != nil {
		return h.answerOne(w, r, p, outbound{filter: p.filter, rec: p.rec}.message(bridge.Event{Data: cached}))
	}
	rd, err := sess.Send(p.msgs, p.jsonOnly)
	if err != nil {
		return err
	}
	return h.respond(w, r, p, rd, answer{})
}
