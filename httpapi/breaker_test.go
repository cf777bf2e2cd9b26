package httpapi_test

import (
	"fmt"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// TestSharedCrashLoop: a shared child that dies every time it starts is
// restarted with backoff until the crash-loop breaker trips; then its
// sessions end and new ones are refused with 503 rather than spawning for
// ever.
func TestSharedCrashLoop(t *testing.T) {
	bin := testpeers.BuildGo(t, "./testdata/badchild")
	e := newEnv(t, envOpts{bridge: bridge.Config{Mode: bridge.ModeShared}, command: []string{bin, "-exit-after-init"}})
	resp := e.do(req{body: fmt.Sprintf(initBody, "2025-11-25")})
	readMessages(t, resp)
	waitFor(t, func() bool { return e.b.Len() == 0 })
	if got := e.b.Stats().ChildrenCrashed.Load(); got < 5 {
		t.Fatalf("%d crashes before the breaker tripped, want 5", got)
	}
	if got := e.b.Stats().ChildrenRestarted.Load(); got != 4 {
		t.Fatalf("%d restarts, want 4 (the fifth crash trips the breaker)", got)
	}
	resp = e.do(req{body: fmt.Sprintf(initBody, "2025-11-25")})
	if resp.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	checkStatus(t, resp, 503, bridge.CodeChildExited)
}
