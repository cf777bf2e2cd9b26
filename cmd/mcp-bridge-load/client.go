package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// clientProtocol is the revision the load tool asks for in initialize.
const clientProtocol = "2025-11-25"

// modernProtocol is the revision of the modern era: no initialize and no
// session, every request standing alone.
const modernProtocol = "2026-07-28"

// Eras the load tool drives a target in (-era).
const (
	era2025   = "2025"         // sessions: initialize, then calls on Mcp-Session-Id
	eraModern = modernProtocol // stateless: each call carries its own _meta
)

// Accept header values selected by -accept. The spec: "The client MUST
// include an Accept header, listing both application/json and
// text/event-stream as supported content types"; json and sse exist to
// force one response format out of a server that honours either.
var acceptValues = map[string]string{
	"both": "application/json, text/event-stream",
	"json": "application/json",
	"sse":  "text/event-stream",
}

// caller makes calls for one worker. It is not safe for concurrent use: the
// phase runner gives each worker its own.
type caller interface {
	// call sends one request carrying msg, which is unique in the run,
	// and checks the answer echoes it. A caller picks its own JSON-RPC
	// ids: the spec says an id "MUST NOT have been previously used by the
	// requestor within the same session", so they must not restart when
	// a measurement follows the warmup on the same sessions.
	call(ctx context.Context, msg []byte) error
}

// ---- latency histogram ----

// histogram is a log-linear latency histogram: exact below 128ns, then 64
// buckets per power of two, so any recorded value is within 1/64 (1.6%) of
// the truth. Fixed size and no allocation per record, so a worker can keep
// one without the tool becoming what is measured.
type histogram struct {
	counts [histBuckets]uint64
	n      uint64
	max    time.Duration
}

const (
	histLinear  = 128 // values below are their own bucket
	histSub     = 64  // buckets per power of two above
	histBuckets = histLinear + (63-7)*histSub
)

func histIndex(v uint64) int {
	if v < histLinear {
		return int(v)
	}
	k := bits.Len64(v) - 1 // v in [2^k, 2^(k+1)), k >= 7
	mant := v >> (k - 6)   // in [64, 128)
	return histLinear + (k-7)*histSub + int(mant-histSub)
}

// histValue is the midpoint of bucket i.
func histValue(i int) uint64 {
	if i < histLinear {
		return uint64(i)
	}
	k := (i-histLinear)/histSub + 7
	mant := uint64((i-histLinear)%histSub + histSub)
	lo := mant << (k - 6)
	return lo + (uint64(1)<<(k-6))/2
}

func (h *histogram) record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[histIndex(uint64(d))]++
	h.n++
	h.max = max(h.max, d)
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// quantile returns the latency at q in [0,1]; 0 when empty.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n-1)) + 1
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(time.Duration(histValue(i)), h.max)
		}
	}
	return h.max
}

// ---- phase runner ----

// phaseResult is what one timed phase of workers produced.
type phaseResult struct {
	calls   uint64 // successful calls
	errors  uint64
	elapsed time.Duration // from start until the last worker returned
	hist    histogram
	// firstErr is one error, kept so a run with errors says why.
	firstErr error
}

// workerStats is one worker's private tally, merged after the phase.
type workerStats struct {
	calls, errors uint64
	hist          histogram
	firstErr      error
}

// runPhase drives every caller from its own goroutine for d. Workers start
// no call after d; a call still outstanding grace after that is cancelled
// through ctx and counted as an error, so a phase never outlives d+grace.
// onAbort, if not nil, runs if that cancellation happens (or ctx is
// cancelled), for callers blocked in something a context cannot interrupt,
// like a read from a pipe.
func runPhase(ctx context.Context, callers []caller, d, grace time.Duration, onAbort func()) phaseResult {
	start := time.Now()
	end := start.Add(d)
	hard, cancel := context.WithDeadline(ctx, end.Add(grace))
	defer cancel()
	if onAbort != nil {
		stop := context.AfterFunc(hard, onAbort)
		defer stop() // after wg.Wait: a clean finish never aborts
	}

	stats := make([]*workerStats, len(callers))
	var wg sync.WaitGroup
	for w, c := range callers {
		ws := new(workerStats)
		stats[w] = ws
		// Owner: runPhase, which waits below. Exit: the clock reaching end,
		// or hard being cancelled.
		wg.Go(func() { runWorker(hard, c, w, end, ws) })
	}
	wg.Wait()

	res := phaseResult{elapsed: time.Since(start)}
	for _, ws := range stats {
		res.calls += ws.calls
		res.errors += ws.errors
		res.hist.merge(&ws.hist)
		if res.firstErr == nil {
			res.firstErr = ws.firstErr
		}
	}
	return res
}

// phases numbers the phases of a run, to keep messages unique across them.
var phases atomic.Uint64

func runWorker(ctx context.Context, c caller, w int, end time.Time, ws *workerStats) {
	// Messages are unique in the run (phase, worker, sequence), so an
	// answer routed to the wrong session or worker cannot pass
	// verification.
	prefix := fmt.Appendf(nil, "p%d-w%d-", phases.Add(1), w)
	msg := make([]byte, 0, len(prefix)+20)
	for seq := uint64(0); ctx.Err() == nil; seq++ {
		t0 := time.Now()
		if !t0.Before(end) {
			return
		}
		msg = strconv.AppendUint(append(msg[:0], prefix...), seq, 10)
		err := c.call(ctx, msg)
		lat := time.Since(t0)
		if err != nil {
			ws.errors++
			if ws.firstErr == nil {
				ws.firstErr = err
			}
			continue
		}
		ws.calls++
		ws.hist.record(lat)
	}
}

// ---- JSON-RPC messages ----

// rpcResponse holds any response the client expects: initialize's result
// and the echo tool's share one struct so each message is decoded once.
type rpcResponse struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"` // set on server requests and notifications
	Result *struct {
		ProtocolVersion string `json:"protocolVersion"`
		ResultType      string `json:"resultType"` // 2026-07-28's, "complete" for a final result
		Content         []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (r *rpcResponse) decode(b []byte) error {
	*r = rpcResponse{}
	if err := json.Unmarshal(b, r); err != nil {
		return fmt.Errorf("decode response %.200q: %w", b, err)
	}
	return nil
}

// matches reports whether r is the response to the request with id, which
// is the decimal form of a JSON number.
func (r *rpcResponse) matches(id []byte) bool {
	return r.Method == "" && bytes.Equal(bytes.TrimSpace(r.ID), id)
}

// check returns an error unless r is a successful response whose result
// passes ok.
func (r *rpcResponse) check(id []byte) error {
	if r.Method != "" {
		return fmt.Errorf("got %q, not the response to id %s", r.Method, id)
	}
	if !r.matches(id) {
		return fmt.Errorf("response id %s, want %s", r.ID, id)
	}
	if r.Error != nil {
		return fmt.Errorf("id %s: JSON-RPC error %d: %s", id, r.Error.Code, r.Error.Message)
	}
	if r.Result == nil {
		return fmt.Errorf("id %s: response has neither result nor error", id)
	}
	return nil
}

// checkEcho verifies r is the echo tool's answer to msg.
func (r *rpcResponse) checkEcho(id, msg []byte) error {
	if err := r.check(id); err != nil {
		return err
	}
	c := r.Result.Content
	switch {
	case r.Result.IsError:
		return fmt.Errorf("id %s: tool error: %+v", id, c)
	case len(c) != 1 || c[0].Type != "text":
		return fmt.Errorf("id %s: want one text content, got %+v", id, c)
	case c[0].Text != string(msg) && c[0].Text != "Echo: "+string(msg):
		// The second form is @modelcontextprotocol/server-everything's.
		return fmt.Errorf("id %s: echoed %q, sent %q", id, c[0].Text, msg)
	}
	return nil
}

// checkModernEcho verifies r is the echo tool's answer to msg in the
// modern era, whose spec says every result carries a resultType: a final
// one is "complete" (anything else, like "input_required", would mean the
// call is not over).
func (r *rpcResponse) checkModernEcho(id, msg []byte) error {
	if err := r.checkEcho(id, msg); err != nil {
		return err
	}
	if r.Result.ResultType != "complete" {
		return fmt.Errorf("id %s: resultType %q, want \"complete\"", id, r.Result.ResultType)
	}
	return nil
}

// appendEchoCall appends a tools/call request for the echo tool. msg must
// need no JSON escaping, which runWorker's messages never do.
func appendEchoCall(dst []byte, id int64, tool string, msg []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = strconv.AppendInt(dst, id, 10)
	dst = append(dst, `,"method":"tools/call","params":{"name":"`...)
	dst = append(dst, tool...)
	dst = append(dst, `","arguments":{"message":"`...)
	dst = append(dst, msg...)
	return append(dst, `"}}}`...)
}

// appendModernEchoCall appends a 2026-07-28 tools/call request for the echo
// tool: the version and capabilities a 2025 client declares once in
// initialize ride on every request, in params._meta. msg as for
// appendEchoCall.
func appendModernEchoCall(dst []byte, id int64, tool string, msg []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = strconv.AppendInt(dst, id, 10)
	dst = append(dst, `,"method":"tools/call","params":{"name":"`...)
	dst = append(dst, tool...)
	dst = append(dst, `","arguments":{"message":"`...)
	dst = append(dst, msg...)
	return append(dst, `"},"_meta":{"io.modelcontextprotocol/protocolVersion":"`+modernProtocol+
		`","io.modelcontextprotocol/clientCapabilities":{}}}}`...)
}

const (
	initializeRequest = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + clientProtocol +
		`","capabilities":{},"clientInfo":{"name":"mcp-bridge-load","version":"1.0.0"}}}`
	initializedNotification = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

var initializeID = []byte("0")

// ---- HTTP client ----

// httpTarget is one Streamable HTTP endpoint and the transport all workers
// share.
type httpTarget struct {
	url *url.URL
	// transport is used without an http.Client: the client's redirect
	// and cookie handling cost allocations per call, and an MCP endpoint
	// that redirects is a misconfiguration the errors should show.
	transport *http.Transport
	accept    []string
	// tools are the tools/call names the sessions call, one each in turn
	// (session i calls tools[i%len(tools)]): echo by default; on an
	// aggregate endpoint, one echo per server (a__echo,b__echo,...).
	tools []string
}

// newHTTPTarget prepares a client for rawURL. conns is the number of
// concurrent workers: with fewer idle connections kept per host, workers
// would close and redial connections and the benchmark would measure TCP
// handshakes.
func newHTTPTarget(rawURL, accept string, conns int) (*httpTarget, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parse url %q: %w", rawURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("url %q: scheme must be http or https", rawURL)
	}
	av, ok := acceptValues[accept]
	if !ok {
		return nil, fmt.Errorf("accept %q: want both, json or sse", accept)
	}
	tr := &http.Transport{
		Proxy:               nil, // measure the target, never a proxy from the environment
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns + 16,
		MaxIdleConnsPerHost: conns + 16,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // echo bodies are tiny; gzip would only add CPU on both sides
	}
	return &httpTarget{url: u, transport: tr, accept: []string{av}, tools: []string{"echo"}}, nil
}

// close drops the idle connections.
func (t *httpTarget) close() { t.transport.CloseIdleConnections() }

// httpConn is one worker's view of one session. Its buffers are reused from
// call to call, so it must not be shared.
type httpConn struct {
	t      *httpTarget
	header http.Header
	// The wire id of the n'th call is n*stride+slot: unique among the
	// workers sharing a session.
	slot, stride int64
	n            int64
	// modern says each call is a 2026-07-28 request standing alone.
	modern bool
	// tool is the tool its calls name (httpTarget.tools).
	tool string

	id   []byte
	buf  bytes.Buffer // response body, or the data of one SSE event
	br   *bufio.Reader
	long []byte
	resp rpcResponse
}

func newHTTPConn(t *httpTarget) *httpConn {
	c := &httpConn{t: t, stride: 1, br: bufio.NewReaderSize(nil, 16<<10), tool: t.tools[0]}
	c.setSession("", "")
	return c
}

// setSession points c at a session. The header map is replaced, never
// edited: the transport may still be reading the old one.
func (c *httpConn) setSession(id, protocol string) {
	h := http.Header{
		"Accept":       c.t.accept,
		"Content-Type": {"application/json"},
	}
	if id != "" {
		h["Mcp-Session-Id"] = []string{id}
	}
	if protocol != "" {
		// The spec: "the client MUST include the MCP-Protocol-Version:
		// <protocol-version> HTTP header on all subsequent requests".
		h["Mcp-Protocol-Version"] = []string{protocol}
	}
	c.header = h
}

// setModern makes c a 2026-07-28 client: no session, and on every request
// the headers that the spec says mirror the body ("MCP-Protocol-Version",
// "Mcp-Method", and "Mcp-Name" for tools/call), which a server checks
// against it.
func (c *httpConn) setModern() {
	c.header = http.Header{
		"Accept":               c.t.accept,
		"Content-Type":         {"application/json"},
		"Mcp-Protocol-Version": {modernProtocol},
		"Mcp-Method":           {"tools/call"},
		"Mcp-Name":             {c.tool},
	}
	c.modern = true
}

// initialize opens a session: initialize, then notifications/initialized.
// It leaves c pointed at the new session and returns its id, empty if the
// server does not use sessions.
func (c *httpConn) initialize(ctx context.Context) (string, error) {
	c.setSession("", "")
	hdr, err := c.post(ctx, []byte(initializeRequest), initializeID)
	if err != nil {
		return "", fmt.Errorf("initialize: %w", err)
	}
	if err := c.resp.check(initializeID); err != nil {
		return "", fmt.Errorf("initialize: %w", err)
	}
	if c.resp.Result.ProtocolVersion == "" {
		return "", errors.New("initialize: result has no protocolVersion")
	}
	sid := hdr.Get("Mcp-Session-Id")
	c.setSession(sid, c.resp.Result.ProtocolVersion)
	if _, err := c.post(ctx, []byte(initializedNotification), nil); err != nil {
		return "", fmt.Errorf("notifications/initialized: %w", err)
	}
	return sid, nil
}

// terminate ends the session c points at with DELETE.
func (c *httpConn) terminate(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.t.url.String(), nil)
	if err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	req.Header = c.header
	res, err := c.t.transport.RoundTrip(req)
	if err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body) // keep the connection reusable; its content is irrelevant
	// The spec: "The server MAY respond to this request with HTTP 405
	// Method Not Allowed, indicating that the server does not allow
	// clients to terminate sessions."
	if res.StatusCode/100 != 2 && res.StatusCode != http.StatusMethodNotAllowed {
		return fmt.Errorf("delete session: status %s", res.Status)
	}
	return nil
}

// call implements caller with one tools/call of echo.
func (c *httpConn) call(ctx context.Context, msg []byte) error {
	id := c.n*c.stride + c.slot
	c.n++
	c.id = strconv.AppendInt(c.id[:0], id, 10)
	// A fresh body per call: the transport may read a request body after
	// RoundTrip returns, so reusing one buffer would race.
	if c.modern {
		body := appendModernEchoCall(make([]byte, 0, 224+len(msg)), id, c.tool, msg)
		if _, err := c.post(ctx, body, c.id); err != nil {
			return err
		}
		return c.resp.checkModernEcho(c.id, msg)
	}
	body := appendEchoCall(make([]byte, 0, 96+len(msg)), id, c.tool, msg)
	if _, err := c.post(ctx, body, c.id); err != nil {
		return err
	}
	return c.resp.checkEcho(c.id, msg)
}

// post sends one JSON-RPC message. For a request (id not nil) it leaves
// the decoded response in c.resp; for a notification it expects 202
// Accepted. It returns the response headers.
func (c *httpConn) post(ctx context.Context, body, id []byte) (http.Header, error) {
	req := (&http.Request{
		Method:        http.MethodPost,
		URL:           c.t.url,
		Host:          c.t.url.Host,
		Header:        c.header,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
	}).WithContext(ctx)
	res, err := c.t.transport.RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("post: %w", err)
	}
	defer res.Body.Close()

	if id == nil {
		_, _ = io.Copy(io.Discard, res.Body) // keep the connection reusable
		// The spec: "If the server accepts the input, the server MUST
		// return HTTP status code 202 Accepted with no body."
		if res.StatusCode != http.StatusAccepted {
			return nil, fmt.Errorf("notification: status %s, want 202", res.Status)
		}
		return res.Header, nil
	}
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 512)) // only for the message
		return nil, fmt.Errorf("status %s: %s", res.Status, bytes.TrimSpace(b))
	}
	switch ct := mediaType(res.Header.Get("Content-Type")); ct {
	case "application/json":
		c.buf.Reset()
		if _, err := c.buf.ReadFrom(res.Body); err != nil {
			return nil, fmt.Errorf("read body: %w", err)
		}
		if err := c.resp.decode(c.buf.Bytes()); err != nil {
			return nil, err
		}
	case "text/event-stream":
		if err := c.readSSE(res.Body, id); err != nil {
			return nil, err
		}
		// The spec: "After the JSON-RPC response has been sent, the server
		// SHOULD close the SSE stream." Reading to its end keeps the
		// connection reusable; a server that keeps it open is stopped by
		// the phase deadline.
		if _, err := io.Copy(io.Discard, res.Body); err != nil {
			return nil, fmt.Errorf("drain event stream: %w", err)
		}
	default:
		return nil, fmt.Errorf("unexpected Content-Type %q", ct)
	}
	return res.Header, nil
}

// readSSE reads events from an event stream until one carries the response
// to id, leaving it decoded in c.resp. Server requests and notifications
// before it are skipped: the load tool never declares capabilities a
// server could need an answer for.
func (c *httpConn) readSSE(body io.Reader, id []byte) error {
	c.br.Reset(body)
	c.buf.Reset()
	hasData := false
	for {
		line, err := readLine(c.br, &c.long)
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0 && err == nil:
			// A blank line dispatches the event.
			if !hasData || len(bytes.TrimSpace(c.buf.Bytes())) == 0 {
				// No data, or the 2025-11-25 priming event (an id with
				// empty data): nothing to decode.
				c.buf.Reset()
				hasData = false
				continue
			}
			if derr := c.resp.decode(c.buf.Bytes()); derr != nil {
				return derr
			}
			if c.resp.Method == "" {
				return nil // a response: the caller checks its id
			}
			c.buf.Reset()
			hasData = false
		case len(line) > 0 && line[0] == ':':
			// A comment, used as keep-alive.
		default:
			field, value, _ := bytes.Cut(line, []byte(":"))
			value, _ = bytes.CutPrefix(value, []byte(" "))
			if string(field) == "data" {
				if hasData {
					c.buf.WriteByte('\n')
				}
				c.buf.Write(value)
				hasData = true
			}
		}
		if err != nil {
			if err == io.EOF {
				// An event without its blank line is discarded, per the
				// SSE parsing rules.
				return fmt.Errorf("event stream ended before the response to id %s", id)
			}
			return fmt.Errorf("read event stream: %w", err)
		}
	}
}

// mediaType returns the lower-case media type of a Content-Type value
// without parameters, cheaper than mime.ParseMediaType on every call.
func mediaType(ct string) string {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return strings.ToLower(strings.TrimSpace(ct))
}

// ---- HTTP endpoint (target or HTTP floor) ----

// httpEndpoint runs load against a Streamable HTTP endpoint.
type httpEndpoint struct {
	t *httpTarget
}

// open starts n sessions concurrently and returns conc callers for each.
func (e *httpEndpoint) open(ctx context.Context, n, conc int) (*sessionSet, error) {
	conns := make([]*httpConn, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range conns {
		// Owner: open, which waits. Exit: initialize returning, bounded by ctx.
		wg.Go(func() {
			c := newHTTPConn(e.t)
			_, errs[i] = c.initialize(ctx)
			conns[i] = c
		})
	}
	wg.Wait()
	set := &sessionSet{close: func() error {
		// Sessions are ended even if ctx is done: a target keeps state
		// (and perhaps a child) per session until told.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		var errs []error
		for i, c := range conns {
			if c.header["Mcp-Session-Id"] == nil {
				continue // initialize failed, or a server without sessions
			}
			if err := c.terminate(cctx); err != nil {
				errs = append(errs, fmt.Errorf("session %d: %w", i, err))
			}
		}
		return errors.Join(errs...)
	}}
	if err := firstOf(errs); err != nil {
		return nil, errors.Join(err, set.close())
	}
	for i, c := range conns {
		for w := range conc {
			wc := newHTTPConn(e.t)
			wc.tool = e.t.tools[i%len(e.t.tools)]
			wc.header = c.header
			wc.slot, wc.stride = int64(w)+1, int64(conc) // id 0 was initialize
			set.callers = append(set.callers, wc)
		}
	}
	return set, nil
}

// churner returns a caller whose every call is a whole session lifetime.
func (e *httpEndpoint) churner() caller { return &httpChurner{c: newHTTPConn(e.t)} }

// httpChurner measures the cost of a session: initialize,
// notifications/initialized, one echo call, DELETE.
type httpChurner struct{ c *httpConn }

func (h *httpChurner) call(ctx context.Context, msg []byte) error {
	if _, err := h.c.initialize(ctx); err != nil {
		return err
	}
	h.c.slot, h.c.stride, h.c.n = 1, 1, 0 // a new session: ids start over
	err := h.c.call(ctx, msg)
	if h.c.header["Mcp-Session-Id"] != nil {
		err = errors.Join(err, h.c.terminate(ctx))
	}
	return err
}

// ---- modern HTTP endpoint (target or HTTP floor) ----

// modernEndpoint runs load against a Streamable HTTP endpoint as
// 2026-07-28 clients. They open nothing: a "session" of the load tool is
// then a client, whose workers each POST calls that stand alone. It has no
// churner, as there is no session to open and close.
type modernEndpoint struct {
	t *httpTarget
}

// open returns conc callers for each of n clients. Nothing goes on the
// wire: the first call is the first the server hears of a client.
func (e *modernEndpoint) open(_ context.Context, n, conc int) (*sessionSet, error) {
	set := &sessionSet{close: func() error { return nil }}
	for i := range n * conc {
		c := newHTTPConn(e.t)
		c.tool = e.t.tools[i/conc%len(e.t.tools)]
		c.setModern()
		c.slot = 1 // ids from 1, as a client starting afresh would
		set.callers = append(set.callers, c)
	}
	return set, nil
}
