package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// BenchmarkPost is one tools/call through the whole handler (the
// middleware, the POST pipeline, the bridge and a real echo child) with
// and without the audit log and a tool policy, answered as JSON (auto
// mode) or as an SSE stream, in a 2025 session or as a 2026-07-28 request
// standing alone (modern: the bridge initializes the child itself and
// checks, translates and decorates each call). Besides ns/op and allocs/op it reports
// cpu-ns/op: the CPU time of this process (the bridge's side; the child is
// another process) per call, from getrusage.
//
//	go test -run '^$' -bench Post -benchmem ./httpapi
func BenchmarkPost(b *testing.B) {
	child := testpeers.BuildGo(b, "./cmd/mcp-bridge-load")
	rule, err := auth.ParseToolRule("*=nope*", true)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name   string
		accept string
		opts   httpapi.Options
		modern bool
	}{
		{"plain/json", "application/json, text/event-stream", httpapi.Options{}, false},
		{"audit+policy/json", "application/json, text/event-stream", httpapi.Options{Audit: io.Discard, ToolPolicy: auth.NewToolPolicy([]auth.ToolRule{rule})}, false},
		{"audit+policy/sse", "text/event-stream", httpapi.Options{Audit: io.Discard, ToolPolicy: auth.NewToolPolicy([]auth.ToolRule{rule})}, false},
		{"modern/json", "application/json, text/event-stream", httpapi.Options{}, true},
		{"modern+audit+policy/json", "application/json, text/event-stream", httpapi.Options{Audit: io.Discard, ToolPolicy: auth.NewToolPolicy([]auth.ToolRule{rule})}, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			log := slog.New(slog.DiscardHandler)
			br, err := bridge.New(bridge.Config{Command: []string{child, "echo-child"}, Logger: log})
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_ = br.Close(ctx)
			}()
			opts := bc.opts
			opts.Bridge, opts.Logger = br, log
			h, err := httpapi.Handler(opts)
			if err != nil {
				b.Fatal(err)
			}
			post := func(sid, accept, body string) *httptest.ResponseRecorder {
				r := httptest.NewRequest(http.MethodPost, httpapi.DefaultPath, strings.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("Accept", accept)
				switch {
				case bc.modern:
					r.Header.Set("Mcp-Protocol-Version", "2026-07-28")
					r.Header.Set("Mcp-Method", "tools/call")
					r.Header.Set("Mcp-Name", "echo")
				case sid != "":
					r.Header.Set("Mcp-Session-Id", sid)
					r.Header.Set("Mcp-Protocol-Version", "2025-06-18")
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				return w
			}
			var sid, meta string
			if bc.modern {
				meta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
				// The first call starts and initializes the child: outside the timer.
				if w := post("", bc.accept, `{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"echo","arguments":{"message":"m"}`+meta+`}}`); w.Code != 200 {
					b.Fatalf("first call: %d %s", w.Code, w.Body)
				}
			} else {
				w := post("", bc.accept, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
				sid = w.Header().Get("Mcp-Session-Id")
				if w.Code != 200 || sid == "" {
					b.Fatalf("initialize: %d %s", w.Code, w.Body)
				}
				if w := post(sid, bc.accept, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); w.Code != 202 {
					b.Fatalf("initialized: %d", w.Code)
				}
			}
			bodies := make([]string, 64)
			for i := range bodies {
				bodies[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"message":"m%d"}%s}}`, i+1, i, meta)
			}
			b.ReportAllocs()
			cpu0 := cpuNanos()
			b.ResetTimer()
			for i := range b.N {
				w := post(sid, bc.accept, bodies[i%len(bodies)])
				if w.Code != 200 || !strings.Contains(w.Body.String(), fmt.Sprintf(`"m%d"`, i%len(bodies))) {
					b.Fatalf("call %d: %d %s", i, w.Code, w.Body)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuNanos()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuNanos is the CPU time, user and system, this process has used.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
