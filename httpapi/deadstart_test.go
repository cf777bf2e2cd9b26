package httpapi_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// TestNoSessionForADeadServer: a server that dies at start gets its
// client the error (its exit status, its stderr) and no Mcp-Session-Id,
// whatever form the answer takes: the session is gone before the answer
// is out, and an id for it would only be a 404 to come.
func TestNoSessionForADeadServer(t *testing.T) {
	t.Parallel()
	badchild := testpeers.BuildGo(t, "./testdata/badchild")
	for _, tc := range []struct {
		name, mode, accept string
	}{
		{"auto", httpapi.ModeAuto, ""},
		{"json", httpapi.ModeJSON, ""},
		{"sse", httpapi.ModeSSE, ""},
		{"a client that takes only SSE", httpapi.ModeAuto, "text/event-stream"},
		{"a client that takes only JSON", httpapi.ModeAuto, "application/json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOpts{command: []string{badchild, "-exit-at-start", "-stderr-at-start", "1"}, http: httpapi.Options{ResponseMode: tc.mode}})
			resp := e.do(req{body: sprintf(initBody, "2025-11-25"), accept: tc.accept})
			if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
				t.Errorf("a session id %q for a session that has ended", sid)
			}
			msgs := readMessages(t, resp)
			if len(msgs) != 1 || errCode(msgs[0]) != bridge.CodeChildExited || !strings.Contains(sprintf("%v", msgs[0]), "exit status 3") {
				t.Errorf("status %d, messages %v: want the server's exit (-32005, exit status 3)", resp.StatusCode, msgs)
			}
		})
	}
	// A server that starts gets its session id, in every form.
	for _, mode := range []string{httpapi.ModeAuto, httpapi.ModeJSON, httpapi.ModeSSE} {
		e := newEnv(t, envOpts{http: httpapi.Options{ResponseMode: mode}})
		e.initialize("2025-11-25")
	}
}

// TestStartBreaker: in per-session mode, five sessions in a row whose
// server died before it answered initialize make the bridge not ready
// (/readyz server_down) and refuse new sessions (503, Retry-After) for a
// cool-down; then one start goes through as a trial: its failure opens
// the breaker again, its success closes it.
func TestStartBreaker(t *testing.T) {
	t.Parallel()
	badchild := testpeers.BuildGo(t, "./testdata/badchild")
	fixed := filepath.Join(t.TempDir(), "fixed")
	// The server dies at start until the file "fixed" exists.
	script := "test -e '" + fixed + "' || { echo 'no config' >&2; exit 3; }; exec '" + badchild + "'"
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	e := newEnv(t, envOpts{command: []string{"sh", "-c", script}, bridge: bridge.Config{Now: clock}})

	readyz := func() (int, string) {
		t.Helper()
		resp, err := e.client.Get(e.srv.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	initialize := func() (*http.Response, []map[string]any) {
		t.Helper()
		resp := e.do(req{body: sprintf(initBody, "2025-11-25")})
		return resp, readMessages(t, resp)
	}
	for i := range 5 {
		if code, body := readyz(); code != http.StatusOK {
			t.Fatalf("after %d failed starts: /readyz %d %s, want 200", i, code, body)
		}
		if resp, msgs := initialize(); resp.StatusCode != http.StatusOK || len(msgs) != 1 || errCode(msgs[0]) != bridge.CodeChildExited {
			t.Fatalf("start %d: status %d %v, want the server's exit", i+1, resp.StatusCode, msgs)
		}
	}
	refused := func(when, retryAfter string) {
		t.Helper()
		if code, body := readyz(); code != http.StatusServiceUnavailable || !strings.Contains(body, `"reason":"server_down"`) ||
			!strings.Contains(body, "keeps exiting before it answers initialize") {
			t.Errorf("%s: /readyz %d %s, want 503 server_down", when, code, body)
		}
		resp, msgs := initialize()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != retryAfter || len(msgs) != 1 ||
			!strings.Contains(sprintf("%v", msgs[0]), "exit status 3") || strings.Contains(sprintf("%v", msgs[0]), "no config") {
			t.Errorf("%s: initialize %d (Retry-After %q) %v, want 503, Retry-After %s, the last exit status and no stderr",
				when, resp.StatusCode, resp.Header.Get("Retry-After"), msgs, retryAfter)
		}
	}
	refused("open", "10")
	advance(5 * time.Second)
	refused("open, halfway through the cool-down", "5")

	// The trial fails: open again, for another cool-down.
	advance(5 * time.Second)
	if _, msgs := initialize(); len(msgs) != 1 || errCode(msgs[0]) != bridge.CodeChildExited {
		t.Fatalf("the trial: %v, want the server's exit", msgs)
	}
	refused("after a failed trial", "10")

	// Fixed: the next trial succeeds and closes the breaker.
	if err := os.WriteFile(fixed, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	advance(10 * time.Second)
	e.initialize("2025-11-25")
	if code, body := readyz(); code != http.StatusOK {
		t.Errorf("after a good start: /readyz %d %s, want 200", code, body)
	}
	e.initialize("2025-11-25")
}

// errCode is a JSON-RPC message's error code, 0 if it has none.
func errCode(m map[string]any) int {
	e, _ := m["error"].(map[string]any)
	c, _ := strconv.Atoi(fmt.Sprint(e["code"]))
	return c
}
