package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// env is a bridge serving a test child over a real HTTP server.
type env struct {
	t      *testing.T
	b      *bridge.Bridge
	srv    *httptest.Server
	url    string // the MCP endpoint
	client *http.Client
}

type envOpts struct {
	bridge  bridge.Config
	http    httpapi.Options
	command []string // default: the badchild
}

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	if o.command == nil {
		o.command = []string{testpeers.BuildGo(t, "./testdata/badchild")}
	}
	o.bridge.Command = o.command
	if o.bridge.Env == nil {
		o.bridge.Env = os.Environ()
	}
	if o.bridge.StopGrace == 0 {
		o.bridge.StopGrace = 500 * time.Millisecond
	}
	if o.bridge.Logger == nil {
		o.bridge.Logger = testLogger(t)
	}
	b, err := bridge.New(o.bridge)
	if err != nil {
		t.Fatal(err)
	}
	o.http.Bridge = b
	o.http.Logger = o.bridge.Logger
	o.http.LoopbackOnly = true
	h, err := httpapi.Handler(o.http)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			t.Errorf("bridge close: %v", err)
		}
	})
	return &env{t: t, b: b, srv: srv, url: srv.URL + "/mcp", client: srv.Client()}
}

// req is one raw HTTP request to the endpoint.
type req struct {
	method  string // default POST
	body    string
	sid     string
	accept  string // default both
	ctype   string // default application/json
	version string // MCP-Protocol-Version
	header  map[string]string
	query   string // raw query string
	host    string // Host, if not the server's
}

func (e *env) do(r req) *http.Response {
	e.t.Helper()
	return e.doCtx(context.Background(), r)
}

func (e *env) doCtx(ctx context.Context, r req) *http.Response {
	e.t.Helper()
	resp, err := e.try(ctx, r)
	if err != nil {
		e.t.Fatalf("%s: %v", r.method, err)
	}
	return resp
}

// try is doCtx for goroutines other than the test's: it returns the error
// instead of failing the test.
func (e *env) try(ctx context.Context, r req) (*http.Response, error) {
	if r.method == "" {
		r.method = http.MethodPost
	}
	u := e.url
	if r.query != "" {
		u += "?" + r.query
	}
	hr, err := http.NewRequestWithContext(ctx, r.method, u, strings.NewReader(r.body))
	if err != nil {
		return nil, err
	}
	if r.host != "" {
		hr.Host = r.host
	}
	if r.accept == "" {
		r.accept = "application/json, text/event-stream"
	}
	if r.accept != "-" {
		hr.Header.Set("Accept", r.accept)
	}
	if r.ctype == "" {
		r.ctype = "application/json"
	}
	if r.method == http.MethodPost && r.ctype != "-" {
		hr.Header.Set("Content-Type", r.ctype)
	}
	if r.sid != "" {
		hr.Header.Set("Mcp-Session-Id", r.sid)
	}
	if r.version != "" {
		hr.Header.Set("MCP-Protocol-Version", r.version)
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	return e.client.Do(hr)
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"%s","capabilities":{"sampling":{}},"clientInfo":{"name":"raw","version":"1"}}}`

// initialize starts a session at the given version and sends initialized.
func (e *env) initialize(version string) string {
	e.t.Helper()
	resp := e.do(req{body: sprintf(initBody, version)})
	msgs := readMessages(e.t, resp)
	if resp.StatusCode != 200 || len(msgs) != 1 {
		e.t.Fatalf("initialize: status %d, %d messages", resp.StatusCode, len(msgs))
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		e.t.Fatal("initialize: no Mcp-Session-Id")
	}
	resp = e.do(req{body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, sid: sid, version: version})
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		e.t.Fatalf("initialized: status %d", resp.StatusCode)
	}
	return sid
}

// call sends a tools/call and returns every message of its response.
func (e *env) call(sid string, id any, tool string, args any) (*http.Response, []map[string]any) {
	e.t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}})
	resp := e.do(req{body: string(body), sid: sid})
	return resp, readMessages(e.t, resp)
}

// readMessages reads a JSON or SSE response to its end and decodes every
// JSON-RPC message in it.
func readMessages(t *testing.T, resp *http.Response) []map[string]any {
	t.Helper()
	defer resp.Body.Close()
	var raws [][]byte
	switch ct := resp.Header.Get("Content-Type"); {
	case strings.HasPrefix(ct, "text/event-stream"):
		for _, ev := range readSSE(t, resp.Body) {
			if ev.data != "" {
				raws = append(raws, []byte(ev.data))
			}
		}
	default:
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			return nil
		}
		if b[0] == '[' {
			var arr []json.RawMessage
			if err := json.Unmarshal(b, &arr); err != nil {
				t.Fatalf("bad JSON array %q: %v", b, err)
			}
			for _, r := range arr {
				raws = append(raws, r)
			}
		} else {
			raws = append(raws, b)
		}
	}
	var out []map[string]any
	for _, r := range raws {
		var m map[string]any
		d := json.NewDecoder(bytes.NewReader(r))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			t.Fatalf("bad message %q: %v", r, err)
		}
		out = append(out, m)
	}
	return out
}

type sseEvent struct {
	id, event, data string
	comment         bool
}

func readSSE(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var ev sseEvent
	seen := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if seen {
				out = append(out, ev)
			}
			ev, seen = sseEvent{}, false
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "data:"):
			if ev.data != "" {
				ev.data += "\n"
			}
			ev.data += strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")
			seen = true
		case strings.HasPrefix(line, "event:"):
			ev.event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
			seen = true
		case strings.HasPrefix(line, "id:"):
			ev.id = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
			seen = true
		}
	}
	return out
}

// sseReader reads events one by one from a live stream.
type sseReader struct {
	sc *bufio.Scanner
}

func newSSEReader(r io.Reader) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	return &sseReader{sc: sc}
}

// next returns the next event with data, or ok=false at the end.
func (s *sseReader) next() (ev sseEvent, ok bool) {
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case line == "":
			if ev.data != "" {
				return ev, true
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, "data:"):
			ev.data += strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")
		case strings.HasPrefix(line, "event:"):
			ev.event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "id:"):
			ev.id = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
		}
	}
	return ev, false
}

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatalf("bad JSON %q: %v", s, err)
	}
	return m
}

// text returns result.content[0].text of a tools/call response.
func text(m map[string]any) string {
	r, _ := m["result"].(map[string]any)
	c, _ := r["content"].([]any)
	if len(c) == 0 {
		return ""
	}
	first, _ := c[0].(map[string]any)
	s, _ := first["text"].(string)
	return s
}

func sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }
