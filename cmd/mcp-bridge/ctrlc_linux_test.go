//go:build linux

package main

import (
	"context"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// TestCtrlC: Ctrl-C, with real signals, on a real bridge whose clients
// wait for calls that never end (a session's, and a 2026-07-28 client's),
// on servers that ignore the end of their input and SIGTERM. The first
// signal logs what the bridge waits for and how to stop at once; the
// second stops at once (not after --shutdown-timeout and the stop
// sequence), every client is told the bridge is shutting down, and no
// process is left behind.
func TestCtrlC(t *testing.T) {
	dir := t.TempDir()
	badchild := filepath.Join(dir, "badchild")
	testpeers.CopyExecutable(t, testpeers.BuildGo(t, "./testdata/badchild"), badchild)
	t.Cleanup(func() { killRunningFrom(dir) })
	// Stopping gracefully would take 10 minutes of waiting, then two stop
	// graces of 10 s: the test's Signal gives up long before.
	p := startBridge(t, environWithout(envPrefix), "--shutdown-timeout", "10m", "--stop-grace", "10s",
		"--", badchild, "-ignore-eof", "-ignore-term")

	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	session := openSession(t, p.URL)
	answers := make(chan rpcReply, 2)
	go func() {
		r, _ := session.call(ctx, "hang", map[string]any{})
		answers <- r
	}()
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.URL, strings.NewReader(
			`{"jsonrpc":"2.0","id":"m","method":"tools/call","params":{"name":"hang","arguments":{},`+
				`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
		for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "hang"} {
			req.Header.Set(k, v)
		}
		var r rpcReply
		if resp, err := http.DefaultClient.Do(req); err == nil {
			r, _ = readReply(resp, `"m"`)
		}
		answers <- r
	}()
	waitLoggedN(t, p, regexp.MustCompile(`line="badchild: hang received"`), 2)

	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	p.waitLog(`msg="shutting down" timeout=10m0s waiting_for="2 requests (tools/call×2)" hint="signal again (Ctrl-C) to stop at once"`)
	start := time.Now()
	if err := p.Signal(syscall.SIGINT); err != nil {
		t.Errorf("mcp-bridge after the second SIGINT: %v, want exit status 0", err)
	}
	t.Logf("stopped %v after the second signal", time.Since(start).Round(time.Millisecond))
	for range 2 {
		r := <-answers
		if r.Error == nil || r.Error.Code != -32005 || r.Error.Message != "the bridge is shutting down" {
			t.Errorf("a client in flight got %s, want -32005 the bridge is shutting down", r.raw)
		}
	}
	if !strings.Contains(p.Stderr(), `msg="second signal: stopping at once; the servers are killed"`) {
		t.Errorf("the second signal is not logged:\n%s", p.Stderr())
	}
	if left := waitNoneRunningFrom(t, dir); len(left) > 0 {
		t.Errorf("processes left running: %q", left)
	}
}
