package main

// Issue 10 at the process level: --request-timeout and --init-timeout
// reach the bridge, and a real client process that vanishes with a call
// in flight, without DELETE, leaves nothing behind.

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// TestTimeoutFlags: a call the child never answers gets -32007 naming
// --request-timeout; an initialize it never answers gets -32007 naming
// --init-timeout.
func TestTimeoutFlags(t *testing.T) {
	badchild := testpeers.BuildGo(t, "./testdata/badchild")
	t.Run("request", func(t *testing.T) {
		t.Parallel()
		p := startBridge(t, nil, "--request-timeout", "300ms", "--", badchild)
		s := openSession(t, p.URL)
		ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
		defer cancel()
		r, err := s.call(ctx, "hang", map[string]any{})
		if err != nil || r.Error == nil || r.Error.Code != bridge.CodeRequestTimeout || !regexp.MustCompile(`within 300ms \(--request-timeout\)`).MatchString(r.Error.Message) {
			t.Fatalf("hang: %s %v, want error %d naming --request-timeout", r.raw, err, bridge.CodeRequestTimeout)
		}
	})
	t.Run("initialize", func(t *testing.T) {
		t.Parallel()
		p := startBridge(t, nil, "--init-timeout", "300ms", "--", badchild, "-never-init")
		s := &rawSession{t: t, url: p.URL, hc: &http.Client{}}
		ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
		defer cancel()
		resp, err := s.post(ctx, initializeBody)
		if err != nil {
			t.Fatal(err)
		}
		r, err := readReply(resp, "1")
		if err != nil || r.Error == nil || r.Error.Code != bridge.CodeRequestTimeout || !regexp.MustCompile(`within 300ms \(--init-timeout\)`).MatchString(r.Error.Message) {
			t.Fatalf("initialize: %s %v, want error %d naming --init-timeout", r.raw, err, bridge.CodeRequestTimeout)
		}
		waitLogged(t, p, `msg="session ended" session=\S+ reason="the MCP server did not answer initialize within 300ms \(--init-timeout\)"`)
		waitLogged(t, p, `msg="child stopped: it could no longer answer"`)
	})
}

// TestVanishedClient (issue 10 point 4): a TypeScript SDK client process
// calls a tool that never answers and is killed: no DELETE, its
// connections just drop. The call times out, the session then idles out,
// and its process is stopped. Before, the call in flight kept the session
// and its process for good.
func TestVanishedClient(t *testing.T) {
	node := testpeers.Node(t)
	script := filepath.Join(filepath.Dir(testpeers.NodeModules(t)), "vanishclient.mjs")
	badchild := testpeers.BuildGo(t, "./testdata/badchild")
	// The idle timeout must outlast the client's pause between its
	// initialize and its call, which a loaded machine can stretch: 3 s
	// does, and the session still idles out soon after the call times out.
	p := startBridge(t, nil, "--request-timeout", "500ms", "--idle-timeout", "3s", "--", badchild)

	client := exec.Command(node, script, p.URL)
	out, err := client.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Process.Kill(); _ = client.Wait() })
	type hello struct {
		SessionID string `json:"sessionId"`
		PID       int    `json:"pid"`
	}
	got := make(chan hello, 1)
	go func() {
		var h hello
		if line, err := bufio.NewReader(out).ReadBytes('\n'); err == nil {
			_ = json.Unmarshal(line, &h)
		}
		got <- h
	}()
	var h hello
	select {
	case h = <-got:
	case <-p.done:
		t.Fatalf("the bridge exited\n%s", p.Stderr())
	case <-time.After(safetyNet): // a safety net, not a timing assertion
		t.Fatal("the client printed nothing")
	}
	if h.SessionID == "" || h.PID == 0 {
		t.Fatalf("the client printed %+v; the bridge logged:\n%s", h, p.Stderr())
	}
	// The call is with the child once the child says so on stderr, which
	// the bridge logs with the session.
	waitLogged(t, p, `msg="child stderr" session=`+regexp.QuoteMeta(h.SessionID)+` child_pid=\d+ line="badchild: hang received"`)
	if err := client.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = client.Wait()

	waitGone(t, h.PID, p.cmd.Process.Pid)
	waitLogged(t, p, `msg="the MCP server did not answer a request in time; cancelled it" session=`+regexp.QuoteMeta(h.SessionID)+` method=tools/call`)
	waitLogged(t, p, `msg="session ended" session=`+regexp.QuoteMeta(h.SessionID)+` reason="the session expired"`)
}
