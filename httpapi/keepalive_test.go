package httpapi_test

import (
	"bufio"
	"net/http"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/httpapi"
)

// TestKeepAlive: a stream with nothing to say still sends comment lines,
// so proxies and load balancers that close quiet connections leave it
// open. Reading the comment is the test; no clock is watched.
func TestKeepAlive(t *testing.T) {
	e := newEnv(t, envOpts{http: httpapi.Options{KeepAlive: 5 * time.Millisecond}})
	for _, tc := range []struct {
		name string
		open func(t *testing.T) *http.Response
	}{
		{"GET stream of a session", func(t *testing.T) *http.Response {
			return e.do(req{method: http.MethodGet, sid: e.initialize("2025-11-25")})
		}},
		{"POST stream of a slow call", func(t *testing.T) *http.Response {
			sid := e.initialize("2025-06-18")
			return e.do(req{sid: sid, accept: "text/event-stream",
				body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"ms":60000,"steps":1}}}`})
		}},
		// 2026-07-28: a listen, and a request's stream, both quiet.
		{"2026-07-28 listen", func(t *testing.T) *http.Response {
			return e.do(modernRequest{id: 1, method: "subscriptions/listen",
				params: map[string]any{"notifications": map[string]any{"toolsListChanged": true}}}.req())
		}},
		{"2026-07-28 stream of a slow call", func(t *testing.T) *http.Response {
			r := modernRequest{id: 1, method: "tools/call", params: map[string]any{"name": "slow", "arguments": map[string]any{"ms": 60000, "steps": 1}}}.req()
			r.accept = "text/event-stream"
			return e.do(r)
		}},
		{"legacy stream before initialize", func(t *testing.T) *http.Response {
			return openLegacy(t, e.client, e.srv.URL+"/sse", nil).resp
		}},
		{"legacy stream of a session", func(t *testing.T) *http.Response {
			c := openLegacy(t, e.client, e.srv.URL+"/sse", nil)
			c.initialize("2025-11-25")
			return c.resp
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := tc.open(t)
			defer resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("%d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if sc.Text() == ": keep-alive" {
					return
				}
			}
			t.Fatalf("the stream ended without a keep-alive comment: %v", sc.Err())
		})
	}
}
