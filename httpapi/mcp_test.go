package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

func TestLifecycle(t *testing.T) {
	e := newEnv(t, envOpts{})
	sid := e.initialize("2025-11-25")

	resp, msgs := e.call(sid, 2, "echo", map[string]any{"message": "hi"})
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("a response that comes first should be plain JSON, got %q", ct)
	}
	if len(msgs) != 1 || text(msgs[0]) != "hi" || msgs[0]["id"].(interface{ String() string }).String() != "2" {
		t.Fatalf("echo: %v", msgs)
	}

	// Progress comes first, so the response becomes a stream.
	body := `{"jsonrpc":"2.0","id":"p","method":"tools/call","params":{"name":"slow","arguments":{"ms":30,"steps":3},"_meta":{"progressToken":"tok"}}}`
	resp = e.do(req{body: body, sid: sid})
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type %q, want SSE", ct)
	}
	msgs = readMessages(t, resp)
	var progress int
	for i, m := range msgs {
		switch m["method"] {
		case "notifications/progress":
			progress++
			if p := m["params"].(map[string]any); p["progressToken"] != "tok" {
				t.Errorf("progress token %v", p["progressToken"])
			}
		case nil:
			if i != len(msgs)-1 || m["id"] != "p" || text(m) != "slow done" {
				t.Errorf("response %v at %d of %d", m, i, len(msgs))
			}
		}
	}
	if progress != 3 {
		t.Errorf("got %d progress notifications, want 3: %v", progress, msgs)
	}

	resp = e.do(req{method: http.MethodDelete, sid: sid})
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	resp, _ = e.call(sid, 3, "echo", map[string]any{"message": "x"})
	if resp.StatusCode != 404 {
		t.Fatalf("after DELETE: %d, want 404", resp.StatusCode)
	}
	_ = strings.TrimSpace
}
