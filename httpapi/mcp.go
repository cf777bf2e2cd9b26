package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// mcpHandler serves the Streamable HTTP endpoint (MCP 2025-03-26 to
// 2025-11-25, and 2026-07-28 requests) and the legacy HTTP+SSE one.
type mcpHandler struct {
	opts Options
	b    *bridge.Bridge
	// srv is what the transports serve: b's sessions and calls, through
	// the transport seam (bridge.Server), which something other than one
	// bridge can stand behind.
	srv    bridge.Server
	log    *slog.Logger
	limits *limits   // nil without per-principal limits
	audit  *auditLog // nil without an audit log
	// questions are the bridge's own questions to its sessions' clients
	// waiting for their answers (held.go).
	questions questions
	// agg is the aggregate endpoint's admission (aggregate.go), nil on a
	// server's own endpoint.
	agg *aggregateAdmission
}

// serve adapts a handler that returns an error, as tsweb does: an error
// returned before anything was written becomes a status and a JSON-RPC
// error body. Once the response has begun, the status is the client's
// already and a second answer would only corrupt the first: the error is
// logged instead, as tsweb's error handler does.
func (h *mcpHandler) serve(f func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// Every POST has a record (observe.go): the observing
		// middleware's, or its own, finished here unless a legacy pump
		// took it over.
		var own *record
		if r.Method == http.MethodPost && recordOf(r) == nil {
			own = &record{now: h.opts.Now, start: h.opts.Now()}
			r = r.WithContext(withRecord(r.Context(), own))
		}
		tw := &trackingWriter{ResponseWriter: w}
		err := f(tw, r)
		var he *httpError
		if err != nil && !tw.wrote {
			he = toHTTPError(err)
			if rec := recordOf(r); rec != nil {
				// What the bridge refused itself is audited with its
				// reason, not as a request left unanswered.
				rec.refuse(he, h.audit, principal(r))
			}
		}
		if own != nil && !own.handedOver {
			own.finish()
		}
		if err == nil {
			return
		}
		if tw.wrote {
			he = toHTTPError(err)
			h.log.Error("request failed after its response began; not answered again", "method", r.Method, "status", he.status, "principal", principal(r).String(), "err", err)
			return
		}
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

// trackingWriter knows whether the response has begun.
type trackingWriter struct {
	http.ResponseWriter
	wrote bool
}

func (t *trackingWriter) WriteHeader(code int) {
	t.wrote = true
	t.ResponseWriter.WriteHeader(code)
}

func (t *trackingWriter) Write(p []byte) (int, error) {
	t.wrote = true
	return t.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the flushes and deadlines of
// the writer underneath.
func (t *trackingWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// post serves a POST to the Streamable HTTP endpoint.
func (h *mcpHandler) post(w http.ResponseWriter, r *http.Request) error {
	return h.streamable(w, r, h.sessionPost)
}

// streamable serves a POST to the Streamable HTTP endpoint, read once: a
// 2026-07-28 request as such, anything else with serve (a session's, or,
// in stateless mode, a request's own).
func (h *mcpHandler) streamable(w http.ResponseWriter, r *http.Request, serve func(http.ResponseWriter, *http.Request, *post) error) error {
	p, err := h.parseStreamable(w, r)
	if err != nil {
		return err
	}
	if p.modern && !h.opts.DisableModern {
		return h.modern(w, r, p)
	}
	return serve(w, r, p)
}

// sessionPost serves a POST of a session, or one that starts one.
func (h *mcpHandler) sessionPost(w http.ResponseWriter, r *http.Request, p *post) error {
	if p.init {
		return h.start(w, r, p)
	}
	if p.session == "" {
		msg := "Bad Request: Mcp-Session-Id header is required (send initialize first to start a session)"
		if p.probe {
			// docs/spec-rules.md, "MCP 2026-07-28: era detection by
			// clients": a dual-era client reads a 4xx whose body is not a
			// 2026-07-28 error as "fall back to initialize".
			msg = "Bad Request: this bridge serves MCP 2024-11-05 to 2025-11-25 sessions; start one with initialize"
		}
		return &httpError{status: http.StatusBadRequest, code: bridge.CodeSessionRequired, msg: msg}
	}
	sess, err := h.srv.Conn(p.session, principal(r).Key())
	if err != nil {
		return err
	}
	if done, err := h.admittedHolding(w, r, p, sess); done {
		return err
	}
	if p.held != nil {
		return h.respond(w, r, p, h.hold(r.Context(), p, sess, p.jsonOnly), answer{})
	}
	if len(p.msgs) == 0 {
		// Nothing but answers to the bridge's own questions.
		w.WriteHeader(http.StatusAccepted)
		return nil
	}
	rd, err := sess.Send(p.msgs, p.jsonOnly)
	if err != nil {
		return err
	}
	return h.respond(w, r, p, rd, answer{})
}

// admittedHolding is admitHolding, with a refused tools/call answered:
// done says the POST is over (answered, or refused with err). The caller
// answers p.held.
func (h *mcpHandler) admittedHolding(w http.ResponseWriter, r *http.Request, p *post, sess bridge.Conn) (done bool, err error) {
	refusal, err := h.admitHolding(r, p, sess)
	return h.refused(w, r, p, refusal, err)
}

// admitted is admit, with a refused tools/call answered: for a way in
// that does not hold calls (one that needs approval is refused).
func (h *mcpHandler) admitted(w http.ResponseWriter, r *http.Request, p *post, sess bridge.Conn) (done bool, err error) {
	refusal, err := h.admit(r, p, sess)
	return h.refused(w, r, p, refusal, err)
}

// refused answers an admission's refusal, if there was one.
func (h *mcpHandler) refused(w http.ResponseWriter, r *http.Request, p *post, refusal []byte, err error) (done bool, _ error) {
	switch {
	case err != nil:
		return true, err
	case refusal != nil:
		return true, h.answerOne(w, r, p, refusal)
	}
	return false, nil
}

// parseStreamable is parse for the Streamable HTTP endpoint, whose client
// says in its Accept header how it takes its answers.
func (h *mcpHandler) parseStreamable(w http.ResponseWriter, r *http.Request) (*post, error) {
	takes := accepts(r.Header.Get("Accept"))
	if !takes.json && !takes.sse {
		return nil, &httpError{status: http.StatusNotAcceptable, code: bridge.CodeInvalidRequest,
			msg: "Not Acceptable: the Accept header must include application/json or text/event-stream (MCP clients send both)"}
	}
	p, err := h.parse(w, r)
	if err != nil {
		return nil, err
	}
	// Only the "auto" and "sse" modes can carry messages before the
	// response; a client that takes only JSON gets only its responses.
	p.takes, p.jsonOnly = takes, !takes.sse || h.opts.ResponseMode == ModeJSON
	return p, nil
}

// start serves a POST of an initialize request: a new session.
func (h *mcpHandler) start(w http.ResponseWriter, r *http.Request, p *post) error {
	if p.session != "" {
		return &httpError{status: http.StatusBadRequest, code: bridge.CodeInvalidRequest, id: p.msgs[0].ID(),
			msg: "Invalid Request: this request carries a session id; initialize starts a new session and must be sent without one"}
	}
	sess, rd, err := h.initialize(r, p)
	if err != nil {
		return err
	}
	// "A server using the Streamable HTTP transport MAY assign a
	// session ID at initialization time, by including it in an
	// Mcp-Session-Id header on the HTTP response containing the
	// InitializeResult." Only a session that exists gets one: the
	// response waits for the server's first message (its result, or the
	// error of a server that died at start, after which the session is
	// gone), however long --init-timeout lets it take.
	if err := rd.Await(r.Context(), 0); err != nil {
		return nil // the client left; the session idles out
	}
	if sess.Alive() {
		w.Header().Set(headerSession, sess.ID())
	}
	return h.respond(w, r, p, rd, answer{})
}

// answer says how respond treats what it writes back.
type answer struct {
	// call is the 2026-07-28 call being answered, nil for a session's
	// POST: the record learns its MRTR exchange from it.
	call bridge.Call
	// stream: an SSE stream whatever the mode, to a client that takes
	// one (a listen).
	stream bool
	// counts: once it is a stream, it counts against the principal's
	// open streams (a 2026-07-28 answer; refused, the call is cancelled,
	// as the client's closing would).
	counts bool
}

// respond writes what rd carries back to a POST: as one JSON body when
// it can, else as an SSE stream. A POST of only notifications and
// responses (rd nil) gets "HTTP status code 202 Accepted with no body".
// It is the same for every reader (a session's stream, a 2026-07-28
// call), which it lets go of when it is done.
func (h *mcpHandler) respond(w http.ResponseWriter, r *http.Request, p *post, rd bridge.Reader, a answer) error {
	if rd == nil {
		w.WriteHeader(http.StatusAccepted)
		return nil
	}
	defer rd.Close()
	out := outbound{filter: p.filter, rec: p.rec, call: a.call, catalog: h.opts.Approval.Catalog()}
	ctx := r.Context()
	mode := h.mode(p.takes)
	if a.stream && p.takes.sse {
		mode = ModeSSE
	}
	switch mode {
	case ModeJSON:
		evs, err := rd.Collect(ctx, nil)
		if err != nil {
			return answerErr(err)
		}
		writeJSON(w, out.all(evs), p.batch)
		return nil
	case ModeAuto:
		// Hold the response until the child's first message for it: the
		// response itself goes out as plain JSON, the cheapest form; a
		// notification or a request first (progress, logging, sampling),
		// or silence past SSEDelay, makes it a stream.
		if err := rd.Await(ctx, h.opts.SSEDelay); err != nil {
			return answerErr(err)
		}
		if !p.batch {
			if ev, ok := rd.TakeOnly(); ok {
				writeJSON(w, [][]byte{out.message(ev)}, false)
				return nil
			}
		}
	}
	if a.counts {
		closed, err := h.limits.openStream(principal(r))
		if err != nil {
			return err
		}
		defer closed()
	}
	h.stream(w, r, rd, out)
	return nil
}

// answerErr is what ends an answer before anything was written: a bridge
// error is the client's answer (a 2026-07-28 error with an HTTP status of
// its own); the client leaving is no error to report.
func answerErr(err error) error {
	if _, ok := err.(*bridge.Error); ok {
		return err
	}
	return nil
}

// mode is how a response goes to a client that takes what takes says.
func (h *mcpHandler) mode(takes accept) string {
	switch {
	case !takes.sse:
		return ModeJSON
	case !takes.json:
		return ModeSSE
	}
	return h.opts.ResponseMode
}

// answerOne answers a POST with one message of the bridge's own: a
// refused tools/call, or a stateless initialize's cached result.
func (h *mcpHandler) answerOne(w http.ResponseWriter, r *http.Request, p *post, msg []byte) error {
	if p.takes.json {
		writeJSON(w, [][]byte{msg}, false)
		return nil
	}
	h.sseOne(w, r, msg)
	return nil
}

// stream writes rd as SSE until it is complete or the client leaves,
// with the one loop every SSE answer has (bridge.Pump), which keeps the
// order of what is written.
func (h *mcpHandler) stream(w http.ResponseWriter, r *http.Request, rd bridge.Reader, out outbound) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	sw, err := startSSE(ctx, w, h.opts.WriteTimeout)
	if err != nil {
		return // gone before the first byte
	}
	_ = bridge.Pump(ctx, rd, bridge.ServeOptions{
		KeepAlive:   h.opts.KeepAlive,
		MaxDuration: h.opts.SSEMaxDuration,
		// A client so far behind that events it has not read age out of
		// the session's log is cut off; its resume is told what is gone.
		Cut: func() { cancel(); sw.cut() },
	}, func(evs []bridge.Event) error {
		return sw.events(evs, out)
	})
}

// sseOne answers with a one-event SSE stream.
func (h *mcpHandler) sseOne(w http.ResponseWriter, r *http.Request, msg []byte) {
	if sw, err := startSSE(r.Context(), w, h.opts.WriteTimeout); err == nil && sw.message("", msg) == nil {
		_ = sw.flush()
	}
}

func (h *mcpHandler) get(w http.ResponseWriter, r *http.Request) error {
	if !accepts(r.Header.Get("Accept")).sse {
		return &httpError{status: http.StatusNotAcceptable, code: bridge.CodeInvalidRequest,
			msg: "Not Acceptable: the Accept header must include text/event-stream"}
	}
	sess, err := h.session(r)
	if err != nil {
		return err
	}
	closed, err := h.limits.openStream(principal(r))
	if err != nil {
		return err
	}
	defer closed()
	var rd bridge.Reader
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		// "Resumption is always via HTTP GET with Last-Event-ID", for
		// POST streams too.
		rd, err = sess.Resume(last)
	} else {
		rd, err = sess.Open()
	}
	if err != nil {
		return err
	}
	defer rd.Close()
	h.stream(w, r, rd, h.outbound(r, nil))
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

// session finds the request's session: 400 without an id, 404 for an
// unknown or ended one, or one of another principal's.
func (h *mcpHandler) session(r *http.Request) (bridge.Conn, error) {
	sid := r.Header.Get(headerSession)
	if sid == "" {
		return nil, &httpError{status: http.StatusBadRequest, code: bridge.CodeSessionRequired,
			msg: "Bad Request: Mcp-Session-Id header is required"}
	}
	sess, err := h.srv.Conn(sid, principal(r).Key())
	if err != nil {
		return nil, err
	}
	return sess, checkVersion(r.Header.Get(headerVersion))
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
