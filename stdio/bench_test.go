package stdio_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
	"github.com/mcp-bridge/mcp-bridge/stdio"
)

// BenchmarkChildRoundTrip: one echo request and its response over a
// child's pipes, handed from the reader goroutine to the caller.
func BenchmarkChildRoundTrip(b *testing.B) {
	bin := testpeers.BuildGo(b, "./cmd/mcp-bridge-load")
	got := make(chan struct{}, 1)
	c, err := stdio.Start(stdio.Options{Argv: []string{bin, "echo-child"}, OnMessage: func([]byte, bool) { got <- struct{}{} }})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Stop(context.Background())
	b.ResetTimer()
	for i := range b.N {
		if err := c.Write(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"message":"m"}}}`, i)); err != nil {
			b.Fatal(err)
		}
		<-got
	}
}
