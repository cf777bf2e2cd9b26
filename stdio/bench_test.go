package stdio_test

import (
	"context"
	"fmt"
	"testing"
	"time"

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

// BenchmarkStart: start a child under each containment strategy, get its
// answer to one request, and stop it (it exits on stdin EOF): what a new
// per-session child costs before its first answer, and after its last.
// Each strategy runs without a sandbox and with the tightest one (preset
// none: Landlock, namespaces, seccomp, rlimits), whose launcher, like
// the init of pid-namespace, is this test binary run again (the bridge's
// own executable in production: cmd/mcp-bridge's BenchmarkSandboxStart).
func BenchmarkStart(b *testing.B) {
	bin := testpeers.BuildGo(b, "./cmd/mcp-bridge-load")
	sandboxes := []struct {
		name string
		sb   *stdio.Sandbox
	}{{"no sandbox", nil}, {"sandbox", &stdio.Sandbox{Preset: stdio.PresetNone, Limits: stdio.Limits{Files: 256}}}}
	for _, cont := range []stdio.Containment{stdio.ContainPIDNamespace, stdio.ContainCgroup, stdio.ContainProcessGroup} {
		for _, sb := range sandboxes {
			b.Run(string(cont)+"/"+sb.name, func(b *testing.B) {
				benchStart(b, bin, cont, sb.sb)
			})
		}
	}
}

func benchStart(b *testing.B, bin string, cont stdio.Containment, sb *stdio.Sandbox) {
	{
		{
			if _, _, err := stdio.ProbeContainment(cont); err != nil {
				b.Skip(err)
			}
			got := make(chan struct{}, 1)
			var toAnswer, toStop time.Duration
			for b.Loop() {
				t0 := time.Now()
				c, err := stdio.Start(stdio.Options{Argv: []string{bin, "echo-child"}, Containment: cont, Sandbox: sb, OnMessage: func([]byte, bool) { got <- struct{}{} }})
				if err != nil {
					b.Fatal(err)
				}
				if err := c.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"m"}}}`)); err != nil {
					b.Fatal(err)
				}
				<-got
				t1 := time.Now()
				if err := c.Stop(context.Background()); err != nil {
					b.Fatal(err)
				}
				toAnswer += t1.Sub(t0)
				toStop += time.Since(t1)
			}
			b.ReportMetric(float64(toAnswer.Microseconds())/float64(b.N), "µs-to-answer/op")
			b.ReportMetric(float64(toStop.Microseconds())/float64(b.N), "µs-to-stop/op")
		}
	}
}
