package httpapi

import (
	"net/http"
)

// statelessPost serves a POST with no session: the request stands alone
// on the shared child, which the bridge initialized itself; an initialize
// is answered from the child's cached InitializeResult. (Options.Stateless)
func (h *mcpHandler) statelessPost(w http.ResponseWriter, r *http.Request) error {
	p, err := h.parseStreamable(w, r)
	if err != nil {
		return err
	}
	if p.modern && !h.opts.DisableModern {
		return h.modern(w, r, p)
	}
	refusal, err := h.admit(r, p, nil)
	if err != nil {
		return err
	}
	if refusal != nil {
		return h.answerOne(w, r, p, refusal)
	}
	sess, answer, err := h.b.Stateless(r.Context(), &p.msgs[0])
	if err != nil {
		return err
	}
	// The session is this request's alone: when the answer is out, so is it.
	defer sess.Close()
	if answer != nil {
		return h.answerOne(w, r, p, outbound{filter: p.filter, rec: p.rec}.message(answer))
	}
	st, err := sess.Send(p.msgs, p.jsonOnly)
	if err != nil {
		return err
	}
	return h.respond(w, r, p, st)
}
