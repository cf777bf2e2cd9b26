package httpapi_test

// The legacy HTTP+SSE transport (MCP 2024-11-05; docs/spec-rules.md,
// "Legacy HTTP+SSE", whose rules the tests cite by number), over raw HTTP:
// what the bytes on the wire are is the point.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
)

// legacyClient is a raw client of the legacy transport: its open stream,
// and the endpoint the stream announced, resolved against the stream's URL
// as clients do.
type legacyClient struct {
	t      *testing.T
	hc     *http.Client
	header map[string]string
	resp   *http.Response
	sr     *sseReader
	data   string   // the endpoint event's data, as sent
	post   *url.URL // the endpoint, resolved
}

// openLegacy GETs sseURL and reads the endpoint event.
func openLegacy(t *testing.T, hc *http.Client, sseURL string, header map[string]string) *legacyClient {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, sseURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %q %s", sseURL, resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	c := &legacyClient{t: t, hc: hc, header: header, resp: resp, sr: newSSEReader(resp.Body)}
	ev, ok := c.sr.next()
	if !ok || ev.event != "endpoint" {
		t.Fatalf("first event %+v (ok %v), want an endpoint event", ev, ok)
	}
	c.data = ev.data
	base, _ := url.Parse(sseURL)
	if c.post, err = base.Parse(ev.data); err != nil {
		t.Fatalf("endpoint %q: %v", ev.data, err)
	}
	return c
}

// sessionID is the sessionId of the announced endpoint.
func (c *legacyClient) sessionID() string { return c.post.Query().Get("sessionId") }

// send POSTs body to the announced endpoint.
func (c *legacyClient) send(body string) *http.Response {
	c.t.Helper()
	return c.sendTo(c.post.String(), body, "application/json")
}

func (c *legacyClient) sendTo(u, body, ctype string) *http.Response {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", ctype)
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

// accepted POSTs body and wants 202 with no body.
func (c *legacyClient) accepted(body string) {
	c.t.Helper()
	checkStatus(c.t, c.send(body), http.StatusAccepted, 0)
}

// next reads the next event, which must be a message without an id: the
// legacy transport has no resumability, and no event of it is primed.
func (c *legacyClient) next() map[string]any {
	c.t.Helper()
	ev, ok := c.sr.next()
	if !ok {
		c.t.Fatal("the stream ended")
	}
	if ev.event != "message" || ev.id != "" {
		c.t.Fatalf("event %+v: want event: message, no id", ev)
	}
	return decode(c.t, ev.data)
}

// initialize starts the session at version and returns the
// InitializeResult's protocolVersion.
func (c *legacyClient) initialize(version string) string {
	c.t.Helper()
	c.accepted(sprintf(initBody, version))
	m := c.next()
	res, _ := m["result"].(map[string]any)
	if fmt.Sprint(m["id"]) != "1" || res == nil {
		c.t.Fatalf("initialize answered %v", m)
	}
	c.accepted(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	v, _ := res["protocolVersion"].(string)
	return v
}

// callTool POSTs a tools/call and returns the messages on the stream up to
// and including its response.
func (c *legacyClient) callTool(id any, tool string, args any, meta map[string]any) []map[string]any {
	c.t.Helper()
	params := map[string]any{"name": tool, "arguments": args}
	if meta != nil {
		params["_meta"] = meta
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
	c.accepted(string(body))
	var out []map[string]any
	for {
		m := c.next()
		out = append(out, m)
		if m["method"] == nil && fmt.Sprint(m["id"]) == fmt.Sprint(id) {
			return out
		}
	}
}

// logWatch is a slog handler that hands every record with a given message
// to a channel: tests wait on what the server says it has done.
type logWatch struct {
	slog.Handler
	msg string
	ch  chan slog.Record
}

func watchLog(t *testing.T, msg string) (*slog.Logger, <-chan slog.Record) {
	ch := make(chan slog.Record, 64)
	base := slog.Handler(slog.DiscardHandler)
	if testing.Verbose() {
		base = slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})
	}
	return slog.New(&logWatch{Handler: base, msg: msg, ch: ch}), ch
}

func (h *logWatch) Enabled(context.Context, slog.Level) bool { return true }

func (h *logWatch) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.msg {
		select {
		case h.ch <- r:
		default:
		}
	}
	if h.Handler.Enabled(ctx, r.Level) {
		return h.Handler.Handle(ctx, r)
	}
	return nil
}

func (h *logWatch) WithAttrs(as []slog.Attr) slog.Handler {
	return &logWatch{Handler: h.Handler.WithAttrs(as), msg: h.msg, ch: h.ch}
}

func (h *logWatch) WithGroup(name string) slog.Handler {
	return &logWatch{Handler: h.Handler.WithGroup(name), msg: h.msg, ch: h.ch}
}

var legacyID = regexp.MustCompile(`^[A-Za-z0-9_-]{22}$`) // 128 bits, base64url

// TestLegacyEndpoint (rule 1): the first event names the POST endpoint as
// a path-relative reference with a session id, which resolves against the
// stream's URL to the configured message path, whatever the paths are.
func TestLegacyEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     httpapi.Options
		sse      string // path of the stream
		data     string // endpoint data up to the session id
		endpoint string // resolved path
	}{
		{"defaults", httpapi.Options{}, "/sse", "message?sessionId=", "/message"},
		{"next to a nested MCP path", httpapi.Options{Path: "/api/v1/mcp"}, "/api/v1/sse", "message?sessionId=", "/api/v1/message"},
		{"same directory", httpapi.Options{SSEPath: "/legacy/sse", MessagePath: "/legacy/messages"}, "/legacy/sse", "messages?sessionId=", "/legacy/messages"},
		{"sibling directory", httpapi.Options{SSEPath: "/a/sse", MessagePath: "/b/message"}, "/a/sse", "../b/message?sessionId=", "/b/message"},
		{"subdirectory", httpapi.Options{SSEPath: "/sse", MessagePath: "/rpc/message"}, "/sse", "rpc/message?sessionId=", "/rpc/message"},
		{"first segment with a colon", httpapi.Options{SSEPath: "/sse", MessagePath: "/a:b"}, "/sse", "./a:b?sessionId=", "/a:b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOpts{http: tc.opts})
			c := openLegacy(t, e.client, e.srv.URL+tc.sse, nil)
			if c.resp.Header.Get("Cache-Control") != "no-cache" || c.resp.Header.Get("X-Accel-Buffering") != "no" {
				t.Errorf("stream headers %v", c.resp.Header)
			}
			id, ok := strings.CutPrefix(c.data, tc.data)
			if !ok || !legacyID.MatchString(id) {
				t.Fatalf("endpoint data %q, want %q and a 128-bit id", c.data, tc.data+"…")
			}
			if got := c.post.Scheme + "://" + c.post.Host + c.post.Path; got != e.srv.URL+tc.endpoint {
				t.Fatalf("endpoint resolves to %s, want %s", got, e.srv.URL+tc.endpoint)
			}
			if v := c.initialize("2025-06-18"); v != "2025-06-18" {
				t.Errorf("negotiated %q", v)
			}
			// Two streams, two sessions.
			if other := openLegacy(t, e.client, e.srv.URL+tc.sse, nil); other.sessionID() == c.sessionID() {
				t.Error("two streams got the same session id")
			}
		})
	}
}

// TestLegacySession (rules 2 and 6): in both session modes, POSTs answer
// 202 and everything comes back as message events on the one stream:
// responses with their ids exact, progress before its response, a
// sampling request of the server's and the answer to it; the protocol
// version is whatever initialize negotiated, 2024-11-05 or later.
func TestLegacySession(t *testing.T) {
	for _, mode := range []string{bridge.ModePerSession, bridge.ModeShared} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, envOpts{bridge: bridge.Config{Mode: mode}})
			// Newest first: a shared child speaks the version of the first
			// session, and later ones may pick that or an older one.
			for _, version := range []string{"2025-11-25", "2025-06-18", "2025-03-26"} {
				t.Run(version, func(t *testing.T) {
					c := openLegacy(t, e.client, e.srv.URL+"/sse", nil)
					if got := c.initialize(version); got != version {
						t.Fatalf("negotiated %q, want %q", got, version)
					}
					c.accepted(`{"jsonrpc":"2.0","id":"list","method":"tools/list"}`)
					if m := c.next(); m["id"] != "list" || !strings.Contains(fmt.Sprint(m["result"]), "echo") {
						t.Fatalf("tools/list: %v", m)
					}
					msgs := c.callTool("7", "echo", map[string]any{"message": "hi"}, nil)
					if len(msgs) != 1 || msgs[0]["id"] != "7" || text(msgs[0]) != "hi" {
						t.Fatalf("echo: %v", msgs)
					}
					msgs = c.callTool(json.Number("12345678901234567"), "echo", map[string]any{"message": "big id"}, nil)
					if fmt.Sprint(msgs[0]["id"]) != "12345678901234567" {
						t.Fatalf("id %v, want 12345678901234567 exactly", msgs[0]["id"])
					}

					// Progress, with the client's own token, in order, before
					// the response.
					msgs = c.callTool(8, "slow", map[string]any{"ms": 30, "steps": 3}, map[string]any{"progressToken": "tok"})
					var progress []string
					for _, m := range msgs {
						if m["method"] == "notifications/progress" {
							p := m["params"].(map[string]any)
							if p["progressToken"] != "tok" {
								t.Errorf("progress token %v", p["progressToken"])
							}
							progress = append(progress, fmt.Sprint(p["progress"]))
						}
					}
					if strings.Join(progress, ",") != "1,2,3" || text(msgs[len(msgs)-1]) != "slow done" {
						t.Errorf("slow: progress %v, then %v", progress, msgs[len(msgs)-1])
					}

					// The server's own request comes on the stream; its answer
					// is a POST like any other.
					c.accepted(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"sample","arguments":{"prompt":"6*7?"}}}`)
					req := c.next()
					if req["method"] != "sampling/createMessage" || req["id"] == nil {
						t.Fatalf("want the sampling request, got %v", req)
					}
					answer, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req["id"], "result": map[string]any{
						"role": "assistant", "model": "m", "content": map[string]any{"type": "text", "text": "42"}}})
					c.accepted(string(answer))
					if m := c.next(); fmt.Sprint(m["id"]) != "9" || text(m) != "42" {
						t.Fatalf("sample: %v", m)
					}
				})
			}
		})
	}
}

// TestLegacyRefusals (rules 3, 4 and 7, and the POST checks): every row is
// refused with its status and JSON-RPC code, and nothing reaches a child.
func TestLegacyRefusals(t *testing.T) {
	e := newEnv(t, envOpts{http: httpapi.Options{MaxBodyBytes: 1 << 10}})
	c := openLegacy(t, e.client, e.srv.URL+"/sse", nil)
	msgURL := e.srv.URL + "/message"
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	type row struct {
		name   string
		method string
		url    string
		ctype  string
		body   string
		status int
		code   int
		allow  string // for 405
	}
	run := func(rows []row) {
		for _, tc := range rows {
			t.Run(tc.name, func(t *testing.T) {
				if tc.ctype == "" {
					tc.ctype = "application/json"
				}
				if tc.url == "" {
					tc.url = c.post.String()
				}
				var resp *http.Response
				if tc.method == http.MethodGet {
					req, _ := http.NewRequest(http.MethodGet, tc.url, nil)
					req.Header.Set("Accept", tc.ctype)
					var err error
					if resp, err = e.client.Do(req); err != nil {
						t.Fatal(err)
					}
				} else {
					resp = c.sendTo(tc.url, tc.body, tc.ctype)
				}
				allow := resp.Header.Get("Allow")
				checkStatus(t, resp, tc.status, tc.code)
				if allow != tc.allow {
					t.Errorf("Allow %q, want %q", allow, tc.allow)
				}
			})
		}
	}
	run([]row{
		// A Streamable HTTP client POSTs initialize to the URL it was
		// given first; 405 makes it fall back to GET.
		{"initialize posted to the SSE URL", http.MethodPost, e.srv.URL + "/sse", "", sprintf(initBody, "2025-11-25"), 405, bridge.CodeInvalidRequest, "GET"},
		{"GET of the message endpoint", http.MethodGet, msgURL + "?sessionId=" + c.sessionID(), "text/event-stream", "", 405, bridge.CodeInvalidRequest, "POST"},
		{"stream without SSE in Accept", http.MethodGet, e.srv.URL + "/sse", "application/json", "", 406, bridge.CodeInvalidRequest, ""},
		{"no sessionId", "", msgURL, "", list, 400, bridge.CodeSessionRequired, ""},
		{"empty sessionId", "", msgURL + "?sessionId=", "", list, 400, bridge.CodeSessionRequired, ""},
		{"unknown sessionId", "", msgURL + "?sessionId=AAAAAAAAAAAAAAAAAAAAAA", "", list, 404, bridge.CodeSessionNotFound, ""},
		{"the session id under another name", "", msgURL + "?session_id=" + c.sessionID(), "", list, 400, bridge.CodeSessionRequired, ""},
		{"wrong content type", "", "", "text/plain", list, 415, bridge.CodeInvalidRequest, ""},
		{"body over the limit", "", "", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"` + strings.Repeat("a", 2<<10) + `"}}`, 413, bridge.CodeInvalidRequest, ""},
		{"invalid JSON", "", "", "", `{"jsonrpc":`, 400, bridge.CodeParseError, ""},
		{"null id", "", "", "", `{"jsonrpc":"2.0","id":null,"method":"tools/list"}`, 400, bridge.CodeInvalidRequest, ""},
		{"notification before initialize", "", "", "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 400, bridge.CodeInvalidRequest, ""},
		// Answered on the stream, as a 2024-11-05 server would: a client
		// that probes with 2026-07-28's server/discover reads the error
		// and falls back to initialize.
		{"request before initialize", "", "", "", `{"jsonrpc":"2.0","id":"probe","method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, 202, 0, ""},
		{"initialize in a batch", "", "", "", "[" + sprintf(initBody, "2025-03-26") + "]", 400, bridge.CodeInvalidRequest, ""},
	})
	m := c.next()
	if e, _ := m["error"].(map[string]any); m["id"] != "probe" || e == nil || fmt.Sprint(e["code"]) != fmt.Sprint(bridge.CodeInvalidRequest) {
		t.Fatalf("the request before initialize got %v, want its error %d on the stream", m, bridge.CodeInvalidRequest)
	}
	if e.b.Len() != 0 {
		t.Fatalf("%d sessions before initialize", e.b.Len())
	}
	c.initialize("2025-06-18")
	run([]row{
		{"second initialize", "", "", "", sprintf(initBody, "2025-06-18"), 400, bridge.CodeInvalidRequest, ""},
		{"request", "", "", "", list, 202, 0, ""},
		{"batch after 2025-03-26", "", "", "", "[" + list + "]", 400, bridge.CodeInvalidRequest, ""},
		{"notification", "", "", "", `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`, 202, 0, ""},
	})
	if m := c.next(); fmt.Sprint(m["id"]) != "1" {
		t.Fatalf("tools/list answered %v", m)
	}
	if e.b.Len() != 1 {
		t.Fatalf("%d sessions, want 1", e.b.Len())
	}
}

// TestLegacyClose (rule 5): closing the stream ends the session: in
// per-session mode its child is stopped, and the old endpoint is 404.
func TestLegacyClose(t *testing.T) {
	for _, mode := range []string{bridge.ModePerSession, bridge.ModeShared} {
		t.Run(mode, func(t *testing.T) {
			log, closed := watchLog(t, "legacy SSE stream closed")
			e := newEnv(t, envOpts{bridge: bridge.Config{Mode: mode, Logger: log}})
			c := openLegacy(t, e.client, e.srv.URL+"/sse", nil)
			c.initialize("2025-11-25")
			pid := 0
			fmt.Sscan(text(c.callTool(1, "pid", nil, nil)[0]), &pid)
			if pid == 0 || e.b.Len() != 1 {
				t.Fatalf("pid %d, %d sessions", pid, e.b.Len())
			}
			c.resp.Body.Close()
			<-closed // logged once the session has ended and its child is reaped
			if e.b.Len() != 0 {
				t.Errorf("%d sessions after the stream closed", e.b.Len())
			}
			err := kill0(pid)
			if mode == bridge.ModePerSession && err != syscall.ESRCH {
				t.Errorf("child %d: kill 0 = %v, want it gone", pid, err)
			}
			if mode == bridge.ModeShared && err != nil {
				t.Errorf("the shared child %d is gone (%v): it serves other sessions", pid, err)
			}
			checkStatus(t, c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`), 404, bridge.CodeSessionNotFound)
		})
	}
}

// TestLegacyChildExit: when the child dies, the requests in flight get
// their errors on the stream, and then the stream ends.
func TestLegacyChildExit(t *testing.T) {
	e := newEnv(t, envOpts{})
	c := openLegacy(t, e.client, e.srv.URL+"/sse", nil)
	c.initialize("2025-06-18")
	msgs := c.callTool(1, "crash", map[string]any{"code": 3, "stderr": "boom"}, nil)
	raw, _ := json.Marshal(msgs[len(msgs)-1]["error"])
	if !strings.Contains(string(raw), "exit status 3") {
		t.Fatalf("crash answered %s", raw)
	}
	if ev, ok := c.sr.next(); ok {
		t.Fatalf("after the session ended: %+v, want the end of the stream", ev)
	}
	checkStatus(t, c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`), 404, bridge.CodeSessionNotFound)
}

// TestLegacyAuth: the stream and its POSTs are authenticated, and a stream
// answers only the principal that opened it; another principal's POST is
// told the session does not exist.
func TestLegacyAuth(t *testing.T) {
	rule, err := auth.ParseToolRule("*=crash", true)
	if err != nil {
		t.Fatal(err)
	}
	f := newAuthFixture(t, httpapi.Options{ToolPolicy: auth.NewToolPolicy([]auth.ToolRule{rule})})
	sse := f.srv.URL + "/sse"

	req, _ := http.NewRequest(http.MethodGet, sse, nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if challenge := resp.Header.Get("WWW-Authenticate"); !strings.Contains(challenge, "resource_metadata=") {
		t.Errorf("challenge %q", challenge)
	}
	checkStatus(t, resp, 401, bridge.CodeInvalidRequest)

	c := openLegacy(t, f.client, sse, bearer(aliceToken))
	as := func(h map[string]string) *legacyClient { cc := *c; cc.header = h; return &cc }
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	checkStatus(t, as(nil).send(sprintf(initBody, "2025-11-25")), 401, bridge.CodeInvalidRequest)
	checkStatus(t, as(bearer(bobToken)).send(sprintf(initBody, "2025-11-25")), 404, bridge.CodeSessionNotFound)
	c.initialize("2025-11-25")
	checkStatus(t, as(bearer(bobToken)).send(list), 404, bridge.CodeSessionNotFound)
	checkStatus(t, as(nil).send(list), 401, bridge.CodeInvalidRequest)

	// The tool policy holds here too: crash is neither listed nor run.
	c.accepted(list)
	if m := c.next(); fmt.Sprint(m["id"]) != "1" || strings.Contains(fmt.Sprint(m["result"]), "crash") || !strings.Contains(fmt.Sprint(m["result"]), "echo") {
		t.Fatalf("tools/list: %v", m)
	}
	msgs := c.callTool("c", "crash", map[string]any{"code": 3}, nil)
	if e, _ := msgs[0]["error"].(map[string]any); e == nil || fmt.Sprint(e["code"]) != fmt.Sprint(bridge.CodeInvalidParams) {
		t.Fatalf("denied crash: %v", msgs)
	}
	if msgs := c.callTool("e", "echo", map[string]any{"message": "alive"}, nil); text(msgs[0]) != "alive" {
		t.Fatalf("echo after the denied crash: %v", msgs)
	}
}

// TestLegacyBehindPrefix: behind a reverse proxy that serves the bridge
// under /tools and strips the prefix, the relative endpoint leads the
// client back through the proxy to the bridge (an absolute "/message"
// would miss the prefix).
func TestLegacyBehindPrefix(t *testing.T) {
	e := newEnv(t, envOpts{})
	target, _ := url.Parse(e.srv.URL)
	proxy := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.URL.Path = strings.TrimPrefix(r.In.URL.Path, "/tools")
			r.Out.URL.RawPath = ""
			r.Out.Host = r.In.Host
		},
	})
	t.Cleanup(proxy.Close)
	c := openLegacy(t, proxy.Client(), proxy.URL+"/tools/sse", nil)
	if !strings.HasPrefix(c.post.String(), proxy.URL+"/tools/message?") {
		t.Fatalf("endpoint %s", c.post)
	}
	c.initialize("2025-11-25")
	if msgs := c.callTool(1, "echo", map[string]any{"message": "through the proxy"}, nil); text(msgs[0]) != "through the proxy" {
		t.Fatalf("echo: %v", msgs)
	}
}

// TestLegacyCloseRace: streams closed while their initialize is being
// handled leave no session and no child behind, whichever comes first.
func TestLegacyCloseRace(t *testing.T) {
	log, closed := watchLog(t, "legacy SSE stream closed")
	e := newEnv(t, envOpts{bridge: bridge.Config{Logger: log}})
	const streams = 20
	for range streams {
		c := openLegacy(t, e.client, e.srv.URL+"/sse", nil)
		posted := make(chan int)
		go func() {
			resp := c.sendTo(c.post.String(), sprintf(initBody, "2025-11-25"), "application/json")
			resp.Body.Close()
			posted <- resp.StatusCode
		}()
		c.resp.Body.Close()
		if status := <-posted; status != http.StatusAccepted && status != http.StatusNotFound {
			t.Errorf("initialize: %d, want 202 or, once the stream is gone, 404", status)
		}
		<-closed
	}
	if n, k := e.b.Len(), e.b.Children(); n != 0 || k != 0 {
		t.Fatalf("%d sessions and %d children left", n, k)
	}
}
