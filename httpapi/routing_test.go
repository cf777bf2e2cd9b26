package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// TestExactlyOnce (docs/spec-rules.md, "Streamable HTTP: one message, one
// stream"): with two POST streams and the GET stream open, every message
// the child writes is delivered on exactly one of them, progress on its
// own request's stream.
func TestExactlyOnce(t *testing.T) {
	e := newEnv(t, envOpts{})
	sid := e.initialize("2025-11-25")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a safety net
	defer cancel()
	get := e.doCtx(ctx, req{method: "GET", sid: sid})
	defer get.Body.Close()

	type result struct {
		token string
		msgs  []map[string]any
	}
	results := make(chan result, 2)
	var wg sync.WaitGroup
	for _, c := range []struct {
		token string
		steps int
	}{{"a", 3}, {"b", 4}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":"slow","arguments":{"ms":60,"steps":%d},"_meta":{"progressToken":%q}}}`, c.token, c.steps, c.token)
			resp := e.doCtx(ctx, req{sid: sid, body: body, accept: "text/event-stream"})
			results <- result{c.token, readMessages(t, resp)}
		}()
	}
	wg.Wait()
	close(results)

	logs := map[string]int{} // "slow step N" -> times seen, over every stream
	for r := range results {
		progress := 0
		for _, m := range r.msgs {
			switch m["method"] {
			case "notifications/progress":
				if tok := m["params"].(map[string]any)["progressToken"]; tok != r.token {
					t.Errorf("stream %s got progress for %v", r.token, tok)
				}
				progress++
			case "notifications/message":
				logs[fmt.Sprint(m["params"].(map[string]any)["data"])]++
			}
		}
		if want := map[string]int{"a": 3, "b": 4}[r.token]; progress != want {
			t.Errorf("stream %s: %d progress notifications, want %d", r.token, progress, want)
		}
	}
	// A marker through the GET stream, after which it holds nothing more.
	e.notifyFromChild(sid, 9, "notifications/prompts/list_changed")
	sr := newSSEReader(get.Body)
	for {
		ev, ok := sr.next()
		if !ok {
			t.Fatal("GET stream ended early")
		}
		m := decode(t, ev.data)
		if m["id"] != nil {
			t.Fatalf("a response on the GET stream: %v", m)
		}
		if m["method"] == "notifications/prompts/list_changed" {
			break
		}
		if m["method"] == "notifications/message" {
			logs[fmt.Sprint(m["params"].(map[string]any)["data"])]++
		}
	}
	want := map[string]int{"slow step 1": 2, "slow step 2": 2, "slow step 3": 2, "slow step 4": 1}
	if fmt.Sprint(logs) != fmt.Sprint(want) {
		t.Fatalf("log messages seen %v, want each exactly once: %v", logs, want)
	}
}

// TestQueueFull: with no stream able to take them, server messages wait in
// a bounded queue; past the bound they are dropped, counted and logged,
// and the ones kept arrive when a stream opens.
func TestQueueFull(t *testing.T) {
	e := newEnv(t, envOpts{bridge: bridge.Config{QueueLimit: 2}})
	sid := e.initialize("2025-11-25")
	for i := range 3 {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i + 10, "method": "tools/call", "params": map[string]any{
			"name": "notify", "arguments": map[string]any{"method": "notifications/resources/list_changed", "params": map[string]any{"n": i}}}})
		if msgs := readMessages(t, e.do(req{sid: sid, body: string(body), accept: "application/json"})); len(msgs) != 1 || text(msgs[0]) != "ok" {
			t.Fatalf("notify: %v", msgs)
		}
	}
	if got := e.b.Stats().QueueDrops.Load(); got != 1 {
		t.Fatalf("queue drops %d, want 1", got)
	}
	get := e.do(req{method: "GET", sid: sid})
	defer get.Body.Close()
	sr := newSSEReader(get.Body)
	for want := range 2 {
		ev, _ := sr.next()
		m := decode(t, ev.data)
		if n := fmt.Sprint(m["params"].(map[string]any)["n"]); n != fmt.Sprint(want) {
			t.Fatalf("queued message %d: %v", want, m)
		}
	}
}
