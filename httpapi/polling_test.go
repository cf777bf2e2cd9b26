package httpapi_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/httpapi"
)

// TestSSEMaxDuration: with --sse-max-duration a 2025-11-25 POST stream's
// connection is closed before the call ends, without ending the stream;
// the client polls with GET and Last-Event-ID until the response arrives,
// and every progress event arrives exactly once, in order.
func TestSSEMaxDuration(t *testing.T) {
	e := newEnv(t, envOpts{http: httpapi.Options{SSEMaxDuration: 50 * time.Millisecond}})
	sid := e.initialize("2025-11-25")
	body := `{"jsonrpc":"2.0","id":"long","method":"tools/call","params":{"name":"slow","arguments":{"ms":600,"steps":6},"_meta":{"progressToken":"p"}}}`
	resp := e.do(req{sid: sid, version: "2025-11-25", accept: "text/event-stream", body: body})
	var progress []string
	var last string
	closes := 0
	for {
		var response map[string]any
		for _, ev := range readSSE(t, resp.Body) {
			if ev.id != "" {
				last = ev.id
			}
			if ev.data == "" {
				continue
			}
			m := decode(t, ev.data)
			switch {
			case m["method"] == "notifications/progress":
				progress = append(progress, fmt.Sprint(m["params"].(map[string]any)["progress"]))
			case m["id"] == "long":
				response = m
			}
		}
		if response != nil {
			if text(response) != "slow done" {
				t.Fatalf("response %v", response)
			}
			break
		}
		closes++
		if closes > 1000 {
			t.Fatal("the response never came")
		}
		resp = e.do(req{method: "GET", sid: sid, version: "2025-11-25", header: map[string]string{"Last-Event-ID": last}})
		if resp.StatusCode != 200 {
			t.Fatalf("resume from %s: %d", last, resp.StatusCode)
		}
	}
	if closes == 0 {
		t.Error("the connection was never closed early: nothing was resumed")
	}
	if got := fmt.Sprint(progress); got != "[1 2 3 4 5 6]" {
		t.Fatalf("progress %s: want each step exactly once, in order", got)
	}
}
