package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// mcpHandler serves the Streamable HTTP endpoint (MCP 2025-03-26 to
// 2025-11-25).
type mcpHandler struct {
	opts   Options
	b      *bridge.Bridge
	log    *slog.Logger
	limits *limits   // nil without per-principal limits
	audit  *auditLog // nil without an audit log
}

// serve adapts a handler that returns an error, as tsweb does: an error
// returned means nothing was written yet, and becomes a status and a
// JSON-RPC error body.
func (h *mcpHandler) serve(f func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := f(w, r); err != nil {
			he := toHTTPError(err)
			lvl := slog.LevelDebug
			switch {
			case errors.Is(err, bridge.ErrClosing):
				lvl = slog.LevelInfo // every request during a shutdown: expected
			case he.status == http.StatusServiceUnavailable:
				lvl = slog.LevelWarn // a limit shedding load, not a failure
			case he.status >= 500:
				lvl = slog.LevelError
			}
			h.log.Log(r.Context(), lvl, "request refused", "method", r.Method, "status", he.status, "principal", principal(r).String(), "err", err)
			writeError(w, he)
		}
	}
}

const headerSession = "Mcp-Session-Id"

// readPost checks a POST's headers and reads its body.
func (h *mcpHandler) readPost(w http.ResponseWriter, r *http.Request) (wantJSON, wantSSE bool, msgs []bridge.Message, batch bool, err error) {
	wantJSON, wantSSE = accepts(r.Header.Get("Accept"))
	if !wantJSON && !wantSSE {
		return false, false, nil, false, &httpError{status: http.StatusNotAcceptable, code: bridge.CodeInvalidRequest,
			msg: "Not Acceptable: the Accept header must include application/json or text/event-stream (MCP clients send both)"}
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" && !isJSONMediaType(ct) {
		return false, false, nil, false, &httpError{status: http.StatusUnsupportedMediaType, code: bridge.CodeInvalidRequest,
			msg: "Unsupported Media Type: Content-Type must be application/json"}
	}
	body, err := readBody(w, r, h.opts.MaxBodyBytes)
	if err != nil {
		return false, false, nil, false, err
	}
	msgs, batch, err = bridge.ParseBody(body)
	if err != nil {
		return false, false, nil, false, err
	}
	if ex := exchangeOf(w); ex != nil {
		ex.parsed(msgs) // so the metrics need not parse the body again
	}
	return wantJSON, wantSSE, msgs, batch, nil
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

func (h *mcpHandler) post(w http.ResponseWriter, r *http.Request) error {
	wantJSON, wantSSE, msgs, batch, err := h.readPost(w, r)
	if err != nil {
		return err
	}
	// Only the "auto" and "sse" modes can carry messages before the
	// response; a client that takes only JSON gets only its responses.
	jsonOnly := !wantSSE || h.opts.ResponseMode == ModeJSON
	sid := r.Header.Get(headerSession)

	if hasInitialize(msgs) {
		if batch {
			return &httpError{status: http.StatusBadRequest, code: bridge.CodeInvalidRequest,
				msg: "Invalid Request: initialize must not be part of a JSON-RPC batch"}
		}
		if sid != "" {
			return &httpError{status: http.StatusBadRequest, code: bridge.CodeInvalidRequest, id: msgs[0].ID(),
				msg: "Invalid Request: this request carries a session id; initialize starts a new session and must be sent without one"}
		}
		p := principal(r)
		release, err := h.limits.reserveSession(p)
		if err != nil {
			return err
		}
		sess, st, err := h.b.InitializeAs(r.Context(), owner(p), claimEnv(h.opts.ClaimEnv, p), msgs[0], jsonOnly)
		if err != nil {
			release()
			return err
		}
		h.limits.holdSession(sess, release)
		if t := h.track(p, sess.ID(), msgs); t != nil {
			defer t.finish()
			r = r.WithContext(withTrack(r.Context(), t))
		}
		// "A server using the Streamable HTTP transport MAY assign a
		// session ID at initialization time, by including it in an
		// Mcp-Session-Id header on the HTTP response containing the
		// InitializeResult."
		w.Header().Set(headerSession, sess.ID())
		return h.respond(w, r, st, false, wantJSON, wantSSE)
	}

	if sid == "" {
		msg := "Bad Request: Mcp-Session-Id header is required (send initialize first to start a session)"
		if msgs[0].IsModernProbe() {
			// SPEC 1.6 item 10: a dual-era client reads a 4xx whose body is
			// not a 2026-07-28 error as "fall back to initialize".
			msg = "Bad Request: this bridge serves MCP 2024-11-05 to 2025-11-25 sessions; start one with initialize"
		}
		return &httpError{status: http.StatusBadRequest, code: bridge.CodeSessionRequired, msg: msg}
	}
	sess, err := h.b.Session(sid, principal(r).Key())
	if err != nil {
		return err
	}
	if err := checkVersion(r); err != nil {
		return err
	}
	if batch && sess.Version() != "2025-03-26" {
		// Batching exists only in 2025-03-26; 2025-06-18 removed it.
		return &httpError{status: http.StatusBadRequest, code: bridge.CodeInvalidRequest,
			msg: "Invalid Request: JSON-RPC batches are not supported in protocol version " + sess.Version()}
	}
	p := principal(r)
	t := h.track(p, sid, msgs)
	if t != nil {
		defer t.finish()
		r = r.WithContext(withTrack(r.Context(), t))
	}
	if m := denied(msgs, h.opts.ToolPolicy.For(p)); m != nil {
		return h.refuseTool(w, r, m, batch, wantJSON, t)
	}
	st, err := sess.Send(msgs, jsonOnly)
	if err != nil {
		return err
	}
	return h.respond(w, r, st, batch, wantJSON, wantSSE)
}

// respond writes the responses to a POST's requests as JSON or SSE; a
// POST of only notifications and responses (st nil) gets "HTTP status
// code 202 Accepted with no body".
func (h *mcpHandler) respond(w http.ResponseWriter, r *http.Request, st *bridge.Stream, batch, wantJSON, wantSSE bool) error {
	if st == nil {
		w.WriteHeader(http.StatusAccepted)
		return nil
	}
	mode := h.opts.ResponseMode
	switch {
	case !wantSSE:
		mode = ModeJSON
	case !wantJSON:
		mode = ModeSSE
	}
	ctx := r.Context()
	switch mode {
	case ModeJSON:
		var msgs [][]byte
		for final := false; !final; {
			if err := st.Wait(ctx, nil); err != nil {
				st.Detach() // the client left; the answer stays with the session
				return nil
			}
			msgs, final = st.Take(msgs)
		}
		writeJSON(w, h.outbound(r, msgs), batch)
		return nil
	case ModeAuto:
		// Hold the response until the child's first message for it: the
		// response itself goes out as plain JSON, the cheapest form; a
		// notification or a request first (progress, logging, sampling),
		// or silence past SSEDelay, makes it a stream.
		t := time.NewTimer(h.opts.SSEDelay)
		err := st.Wait(ctx, t.C)
		t.Stop()
		if err != nil {
			st.Detach()
			return nil
		}
		if !batch {
			if m, ok := st.TakeOnly(); ok {
				writeJSON(w, h.outbound(r, [][]byte{m}), false)
				return nil
			}
		}
	}
	h.stream(w, r, st)
	return nil
}

// stream writes a Stream as SSE until it is complete or the client leaves.
func (h *mcpHandler) stream(w http.ResponseWriter, r *http.Request, st *bridge.Stream) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	sw, err := startSSE(ctx, w, h.opts.WriteTimeout)
	if err != nil {
		st.Detach()
		return
	}
	primes := st.Primes()
	if primes {
		// Sent on its own, before the reader is registered: a burst that
		// outran it could otherwise cut it before the client had an id to
		// resume from.
		sw.prime(st.PrimeID())
		if err := sw.flush(); err != nil {
			st.Detach()
			return
		}
	}
	// A client so far behind that events it has not read age out of the
	// session's log is cut off; its resume is told what is gone.
	st.SetCut(func() { cancel(); sw.cut() })
	keepAlive := time.NewTicker(h.opts.KeepAlive)
	defer keepAlive.Stop()
	wait := ctx
	if primes && h.opts.SSEMaxDuration > 0 {
		// 2025-11-25: "the server MAY close the connection without
		// terminating the SSE stream"; the client reconnects after the
		// priming event's retry with Last-Event-ID, and Detach keeps what
		// is owed for it.
		var cancelWait context.CancelFunc
		wait, cancelWait = context.WithTimeout(ctx, h.opts.SSEMaxDuration)
		defer cancelWait()
	}
	filter := h.outboundFilter(r)
	var evs []bridge.Event
	for first := true; ; first = false {
		var final bool
		evs, final, err = st.Next(evs[:0])
		if err != nil {
			st.Detach()
			return
		}
		if len(evs) == 0 && !final && !first {
			// Wait returns with nothing to take only when the ticker fired.
			sw.comment("keep-alive")
		}
		for i := range evs {
			if err := sw.message(evs[i].ID, filter(evs[i].Data)); err != nil {
				st.Detach()
				return
			}
			evs[i] = bridge.Event{}
		}
		if err := sw.flush(); err != nil {
			st.Detach()
			return
		}
		if final {
			return
		}
		if err := st.Wait(wait, keepAlive.C); err != nil {
			st.Detach()
			return
		}
	}
}

// sseOne answers with a one-event SSE stream.
func (h *mcpHandler) sseOne(w http.ResponseWriter, r *http.Request, msg []byte) {
	if sw, err := startSSE(r.Context(), w, h.opts.WriteTimeout); err == nil && sw.message("", msg) == nil {
		_ = sw.flush()
	}
}

func (h *mcpHandler) get(w http.ResponseWriter, r *http.Request) error {
	if _, sse := accepts(r.Header.Get("Accept")); !sse {
		return &httpError{status: http.StatusNotAcceptable, code: bridge.CodeInvalidRequest,
			msg: "Not Acceptable: the Accept header must include text/event-stream"}
	}
	sess, err := h.session(r)
	if err != nil {
		return err
	}
	var st *bridge.Stream
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		// "Resumption is always via HTTP GET with Last-Event-ID", for
		// POST streams too.
		st, err = sess.Resume(last)
	} else {
		st, err = sess.OpenStream()
	}
	if err != nil {
		return err
	}
	h.stream(w, r, st)
	return nil
}

func (h *mcpHandler) delete(w http.ResponseWriter, r *http.Request) error {
	sess, err := h.session(r)
	if err != nil {
		return err
	}
	sess.Close()
	h.limits.ended(sess)
	w.WriteHeader(http.StatusOK)
	return nil
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

// session finds the request's session: 400 without an id, 404 for an
// unknown or ended one, or one of another principal's.
func (h *mcpHandler) session(r *http.Request) (*bridge.Session, error) {
	sid := r.Header.Get(headerSession)
	if sid == "" {
		return nil, &httpError{status: http.StatusBadRequest, code: bridge.CodeSessionRequired,
			msg: "Bad Request: Mcp-Session-Id header is required"}
	}
	sess, err := h.b.Session(sid, principal(r).Key())
	if err != nil {
		return nil, err
	}
	return sess, checkVersion(r)
}

// checkVersion: "If the server receives a request with an invalid or
// unsupported MCP-Protocol-Version, it MUST respond with 400 Bad Request."
// A missing header means 2025-03-26, which is supported.
func checkVersion(r *http.Request) error {
	v := r.Header.Get("Mcp-Protocol-Version")
	if v == "" || bridge.KnownVersion(v) {
		return nil
	}
	return &httpError{status: http.StatusBadRequest, code: bridge.CodeInvalidRequest,
		msg: "Bad Request: unsupported MCP-Protocol-Version " + quote(v) + " (supported: " + strings.Join(bridge.Versions, ", ") + ")"}
}

func hasInitialize(msgs []bridge.Message) bool {
	for i := range msgs {
		if msgs[i].Method == bridge.MethodInitialize {
			return true
		}
	}
	return false
}

// accepts reports which of the two MCP response types the Accept header
// allows. "*/*" and "application/*" / "text/*" count.
func accepts(header string) (jsonOK, sseOK bool) {
	if header == "application/json, text/event-stream" { // what MCP clients send: skip the parse
		return true, true
	}
	for _, part := range strings.Split(header, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || params["q"] == "0" {
			continue
		}
		switch mt {
		case "*/*":
			jsonOK, sseOK = true, true
		case "application/json", "application/*":
			jsonOK = true
		case "text/event-stream", "text/*":
			sseOK = true
		}
	}
	return jsonOK, sseOK
}

func writeJSON(w http.ResponseWriter, msgs [][]byte, batch bool) {
	w.Header().Set("Content-Type", "application/json")
	if !batch && len(msgs) == 1 {
		w.Header().Set("Content-Length", itoa(len(msgs[0])))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(msgs[0])
		return
	}
	w.WriteHeader(http.StatusOK)
	buf := []byte{'['}
	for i, m := range msgs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, m...)
	}
	_, _ = w.Write(append(buf, ']'))
}

func isJSONMediaType(ct string) bool {
	mt, _, _ := mime.ParseMediaType(ct)
	return mt == "application/json"
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
