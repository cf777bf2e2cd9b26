package httpapi

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// The POST pipeline, one for every way a client POSTs messages: the
// Streamable HTTP endpoint (mcp.go), its stateless mode (stateless.go) and
// the legacy HTTP+SSE message endpoint (legacy.go).
//
//  1. parse reads the headers that say how to read a POST, and its body,
//     once, into a post; the POST's record (observe.go) learns its
//     messages there.
//  2. A POST that starts a session goes to initialize, the one start for
//     every transport (the principal's session slot, its --claim-env
//     variables). Any other goes through admit, what every POST to a
//     session must pass (the version header, batching in the session's
//     version, the tool policy).
//  3. The transport frames the answers: its own part, and its only one.
//
// Authentication and the per-principal rate and in-flight limits come
// before, as middleware; the record is read when the POST is over.

// post is one POST, parsed once: what admission, the transports and the
// observer read. A new protocol era is to be told here, from the headers
// and each message's _meta, and nowhere else.
type post struct {
	msgs  []bridge.Message
	batch bool // a JSON array (2025-03-26 only)
	// init: it starts a session, with an initialize request (alone: parse
	// refuses a batch that holds one).
	init bool
	// probe: a message is in the 2026-07-28 format (server/discover, or
	// a protocol version in its _meta).
	probe bool
	// modern: the POST is of the 2026-07-28 era (bridge.IsModern), served
	// by modern.go unless the modern era is off (Options.DisableModern).
	modern bool
	// session is the Mcp-Session-Id header, "" without one (and on the
	// legacy endpoint, whose session is named by its URL).
	session string
	// version is the MCP-Protocol-Version header, "" without one.
	version string

	// Set by the Streamable HTTP transport: what the client takes back,
	// and whether it takes only one JSON body (bridge.Session.Send).
	takes    accept
	jsonOnly bool

	// filter is the principal's tool filter (nil: every tool), set by
	// admit and initialize, read for every message written back.
	filter *auth.ToolFilter
	rec    *record
	// held is the POST's tools/call that the approval rules hold, set by
	// admit (nil: none): the transport answers with a held reader (hold,
	// holdStateless, modernHeld) and never sends the call itself.
	held *heldCall
	// aggCalls are, on the aggregate endpoint, the POST's tools/calls of
	// a served server, resolved once for the tool policy and the approval
	// rules both (aggregateAdmission.calls); aggResolved says they are.
	aggCalls    []aggCall
	aggResolved bool
}

// accept is what a client takes back: a JSON body, an SSE stream, or both.
type accept struct{ json, sse bool }

// Request headers of Streamable HTTP.
const (
	headerSession = "Mcp-Session-Id"
	headerVersion = "Mcp-Protocol-Version"
)

// parse reads a POST: its Content-Type, its body within MaxBodyBytes, and
// the JSON-RPC messages in it, with the headers that say how to read
// them. The POST's record learns its messages.
func (h *mcpHandler) parse(w http.ResponseWriter, r *http.Request) (*post, error) {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" && !isJSONMediaType(ct) {
		return nil, &httpError{status: http.StatusUnsupportedMediaType, code: bridge.CodeInvalidRequest,
			msg: "Unsupported Media Type: Content-Type must be application/json"}
	}
	body, err := readBody(w, r, h.opts.MaxBodyBytes)
	if err != nil {
		return nil, err
	}
	msgs, batch, err := bridge.ParseBody(body)
	if err != nil {
		return nil, err
	}
	p := &post{msgs: msgs, batch: batch, session: r.Header.Get(headerSession), version: r.Header.Get(headerVersion)}
	for i := range msgs {
		p.init = p.init || msgs[i].Method == bridge.MethodInitialize
		p.probe = p.probe || msgs[i].IsModernProbe()
		p.modern = p.modern || bridge.IsModern(&msgs[i], p.version)
	}
	if p.rec = recordOf(r); p.rec == nil {
		// Only a handler that serve does not wrap has none (tests).
		p.rec = &record{now: h.opts.Now, start: h.opts.Now()}
	}
	p.rec.parsed(msgs, batch)
	p.rec.era = era2025
	if p.init && batch && !p.modern {
		return nil, &httpError{status: http.StatusBadRequest, code: bridge.CodeInvalidRequest,
			msg: "Invalid Request: initialize must not be part of a JSON-RPC batch"}
	}
	return p, nil
}

// handOver gives the record to whoever writes the POST's answers after
// the handler has returned (a legacy pump), which finishes it.
func (p *post) handOver() *record {
	p.rec.handedOver = true
	return p.rec
}

// initialize starts a session with p's initialize request, the same way
// for every transport: within the principal's session cap, with the
// principal's --claim-env variables for its child.
func (h *mcpHandler) initialize(r *http.Request, p *post) (bridge.Conn, bridge.Reader, error) {
	pr := principal(r)
	release, err := h.limits.reserveSession(pr)
	if err != nil {
		return nil, nil, err
	}
	sess, rd, err := h.srv.Initialize(r.Context(), bridge.InitRequest{
		Message:  p.msgs[0],
		Owner:    owner(pr),
		Env:      claimEnv(h.opts.ClaimEnv, pr),
		JSONOnly: p.jsonOnly,
	})
	if err != nil {
		release()
		return nil, nil, err
	}
	h.limits.holdSession(sess, release)
	p.filter = h.opts.ToolPolicy.For(pr)
	h.follow(p, pr, sess.ID())
	return sess, rd, nil
}

// admitHolding is what a POST to a session must pass, whichever transport
// brought it (sess is nil in stateless mode, which has none): the version
// header, batching only in the version that has it, the tool policy, and
// the approval rules: a call that needs a human's yes is set aside in
// p.held, for the transport to hold (a batch that holds one is refused
// whole: its other answers could not wait). Answers to the bridge's own
// questions on the session are taken out of p.msgs here (questions.take).
// From here the audit log follows the POST's requests. A denied tools/call
// comes back as the JSON-RPC error that answers it, for the transport to
// send as it sends answers; a batch that holds one is refused whole (403),
// since its other requests would need answers the bridge cannot give.
//
// admitHolding is for a transport that holds such a call (it answers
// p.held with hold, holdStateless or modernHeld); admit, for one that
// does not.
func (h *mcpHandler) admitHolding(r *http.Request, p *post, sess bridge.Conn) (refusal []byte, err error) {
	if err := checkVersion(p.version); err != nil {
		return nil, err
	}
	id := ""
	if sess != nil {
		if p.batch && sess.Version() != "2025-03-26" {
			// Batching exists only in 2025-03-26; 2025-06-18 removed it.
			return nil, &httpError{status: http.StatusBadRequest, code: bridge.CodeInvalidRequest,
				msg: "Invalid Request: JSON-RPC batches are not supported in protocol version " + sess.Version()}
		}
		id = sess.ID()
		h.questions.take(p, id)
	}
	pr := principal(r)
	p.filter = h.opts.ToolPolicy.For(pr)
	h.follow(p, pr, id)
	i, msg := h.refusedCall(p, pr)
	if i < 0 {
		if p.held = h.held(p, pr); p.held != nil && p.batch {
			p.rec.deny(p.held.index)
			return nil, &httpError{status: http.StatusForbidden, code: bridge.CodeInvalidParams,
				msg: "Forbidden: tool " + quote(p.held.tool) + " needs a human's approval, which a call in a JSON-RPC batch cannot wait for; send it alone"}
		}
		return nil, nil
	}
	if p.batch {
		return nil, &httpError{status: http.StatusForbidden, code: bridge.CodeInvalidParams, msg: "Forbidden: " + msg}
	}
	return bridge.ErrorBody(&bridge.Error{Code: bridge.CodeInvalidParams, Message: msg, ID: p.rec.calls[i].id}), nil
}

// admit is admitHolding for a way in that does not hold calls: one the
// approval rules hold is refused, saying so, and never reaches the
// server. So a way in that knows nothing of approvals refuses such a call
// rather than let it through unasked.
func (h *mcpHandler) admit(r *http.Request, p *post, sess bridge.Conn) (refusal []byte, err error) {
	if refusal, err = h.admitHolding(r, p, sess); err != nil || refusal != nil || p.held == nil {
		return refusal, err
	}
	c := p.held
	p.held = nil
	p.rec.deny(c.index)
	h.log.Info("tools/call needs approval, which this endpoint cannot hold a call for: refused", "tool", c.tool, "rule", c.rule.String())
	return bridge.ErrorBody(&bridge.Error{Code: bridge.CodeInvalidParams, ID: c.id,
		Message: "tool " + quote(c.tool) + " needs a human's approval (rule " + c.rule.String() + "), and this endpoint cannot hold a call for approval: it was not run"}), nil
}

// refusedCall finds the first tools/call of the POST that the tool policy
// denies to pr, records it denied, and returns its index and what its
// client is told; -1 when the POST has none.
func (h *mcpHandler) refusedCall(p *post, pr auth.Principal) (int, string) {
	if h.agg != nil {
		return h.agg.refusedCall(h, p, pr)
	}
	if i := p.rec.denied(p.filter); i >= 0 {
		name, _ := p.rec.calls[i].toolCall()
		h.log.Info("tools/call refused by the tool policy", "tool", name, "era", p.rec.era)
		p.rec.deny(i)
		return i, "tool " + quote(name) + " is not allowed for this principal (tool policy)"
	}
	return -1, ""
}

// checkVersion: "If the server receives a request with an invalid or
// unsupported MCP-Protocol-Version, it MUST respond with 400 Bad Request."
// A missing header means 2025-03-26, which is supported.
func checkVersion(v string) error {
	if v == "" || bridge.KnownVersion(v) {
		return nil
	}
	return &httpError{status: http.StatusBadRequest, code: bridge.CodeInvalidRequest,
		msg: "Bad Request: unsupported MCP-Protocol-Version " + quote(v) + " (supported: " + strings.Join(bridge.Versions, ", ") + ")"}
}

// readBody reads a POST's body, at most limit bytes: 413 over it, 408
// when the client sends it slower than the server's read timeout
// (Server.ReadTimeout; the connection is closed, as the rest of the body
// may still be on its way), 400 when reading fails otherwise.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body, err := readLimited(w, r, limit)
	if err == nil {
		return body, nil
	}
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, &httpError{status: http.StatusRequestEntityTooLarge, code: bridge.CodeInvalidRequest,
			msg: "Request Entity Too Large: the body is over the limit of " + byteSize(mbe.Limit) + " (--max-body-bytes)"}
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, &httpError{status: http.StatusRequestTimeout, code: bridge.CodeInvalidRequest,
			msg:    "Request Timeout: the body did not arrive within the read timeout (--read-timeout)",
			header: http.Header{"Connection": {"close"}}}
	}
	return nil, &httpError{status: http.StatusBadRequest, code: bridge.CodeInvalidRequest, msg: "Bad Request: reading the body failed"}
}

// readLimited reads r's body, of at most limit bytes (else an error that
// is an *http.MaxBytesError). With a Content-Length within the limit, it
// reads into a buffer of exactly that size: io.ReadAll grows its buffer by
// a quarter at a time and allocates some four times a body of a few MiB.
func readLimited(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, limit)
	if n := r.ContentLength; n > 0 && n <= limit {
		// net/http ends the body at its Content-Length, and a shorter
		// one is io.ErrUnexpectedEOF.
		buf := make([]byte, n)
		if _, err := io.ReadFull(body, buf); err != nil {
			return nil, err
		}
		return buf, nil
	}
	return io.ReadAll(body)
}

func isJSONMediaType(ct string) bool {
	mt, _, _ := mime.ParseMediaType(ct)
	return mt == "application/json"
}

// accepts reads which of the two MCP response types the Accept header
// allows. "*/*" and "application/*" / "text/*" count.
func accepts(header string) accept {
	if header == "application/json, text/event-stream" { // what MCP clients send: skip the parse
		return accept{json: true, sse: true}
	}
	var a accept
	for _, part := range strings.Split(header, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || params["q"] == "0" {
			continue
		}
		switch mt {
		case "*/*":
			a = accept{json: true, sse: true}
		case "application/json", "application/*":
			a.json = true
		case "text/event-stream", "text/*":
			a.sse = true
		}
	}
	return a
}

// principal is who the request acts for: the anonymous principal when the
// bridge has no authentication.
func principal(r *http.Request) auth.Principal {
	p, _ := auth.FromContext(r.Context())
	return p
}

// owner is p as the bridge records a session's owner: the key sessions
// are bound to, and the name the web page shows ("" for the anonymous
// principal, which the page calls anonymous).
func owner(p auth.Principal) bridge.Owner {
	if p.Method == "" {
		return bridge.Owner{}
	}
	return bridge.Owner{Key: p.Key(), Name: p.String()}
}

// claimEnv is the environment a principal's child gets from its claims:
// only the allow-listed ones, and only those the principal has.
func claimEnv(allow map[string]string, p auth.Principal) []string {
	var env []string
	for claim, name := range allow {
		if v, ok := p.Claims[claim]; ok && !strings.ContainsRune(v, 0) {
			env = append(env, name+"="+v)
		}
	}
	slices.Sort(env)
	return env
}
