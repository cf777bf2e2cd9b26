package bridge_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// BenchmarkRoundTrip measures one tools/call through a session and its
// child, without HTTP: the bridge's own share of a call.
func BenchmarkRoundTrip(b *testing.B) {
	child := testpeers.BuildGo(b, "./cmd/mcp-bridge-load")
	br, err := bridge.New(bridge.Config{Command: []string{child, "echo-child"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close(context.Background())
	msgs, _, err := bridge.ParseBody([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`))
	if err != nil {
		b.Fatal(err)
	}
	s, st, err := br.Initialize(context.Background(), bridge.InitRequest{Message: msgs[0]})
	if err != nil {
		b.Fatal(err)
	}
	take(b, st)
	b.ResetTimer()
	for i := range b.N {
		msgs, _, err := bridge.ParseBody(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"message":"m"}}}`, i+2))
		if err != nil {
			b.Fatal(err)
		}
		st, err := s.Send(msgs, false)
		if err != nil {
			b.Fatal(err)
		}
		take(b, st)
	}
}

func take(b *testing.B, st *bridge.Stream) {
	if _, err := st.Collect(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkParseBody measures reading one client message: validation,
// classification and the key checks (keys.go), for what clients send most.
func BenchmarkParseBody(b *testing.B) {
	for _, bc := range []struct{ name, body string }{
		{"call", `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello","count":3},"_meta":{"progressToken":12}}}`},
		{"modern-call", `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello","count":3},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{},"elicitation":{"form":{}}}}}}`},
		{"result", `{"jsonrpc":"2.0","id":"s1","result":{"role":"assistant","model":"m","content":{"type":"text","text":"an answer of some length"}}}`},
		{"big-args", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write","arguments":{"path":"/tmp/x","content":"` + strings.Repeat("x", 64<<10) + `"}}}`},
	} {
		body := []byte(bc.body)
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := bridge.ParseBody(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
