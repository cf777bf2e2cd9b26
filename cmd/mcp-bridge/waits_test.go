package main

// Bounded waits at the process level: --request-timeout and --init-timeout
// reach the bridge, and a real client process that vanishes with a call in
// flight, without DELETE, leaves nothing behind.

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
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

// TestVanishedClient: a TypeScript SDK client process calls a tool that
// never answers and is killed: no DELETE, its connections just drop. In
// every mode the call times out and the child is told to cancel it; the
// session then idles out; and the process is stopped where it was the
// client's own (per-session, or its principal's in per-identity mode),
// while a shared one serves on. Before, the call in flight kept the session
// and its process for good.
func TestVanishedClient(t *testing.T) {
	node := testpeers.Node(t)
	script := filepath.Join(filepath.Dir(testpeers.NodeModules(t)), "vanishclient.mjs")
	badchild := testpeers.BuildGo(t, "./testdata/badchild")
	tests := []struct {
		name  string
		args  []string
		token string // the client's bearer token, if any
		// ownChild: the child is the client's alone and must stop once
		// its session is gone; else it serves on, and another client
		// asks it what it was told to cancel.
		ownChild  bool
		stateless bool
	}{
		{name: "per-session", ownChild: true},
		{name: "per-identity", args: []string{"--mode", "per-identity", "--token-env", "ALICE_TOKEN"}, token: tokenAlice, ownChild: true},
		{name: "shared", args: []string{"--mode", "shared"}},
		{name: "stateless", args: []string{"--stateless"}, stateless: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// The idle timeout must outlast the client's pause between its
			// initialize and its call, which a loaded machine can stretch:
			// 3 s does, and the session still idles out soon after the call
			// times out.
			env := append(environWithout(envPrefix), "ALICE_TOKEN="+tokenAlice)
			p := startBridge(t, env, append(append([]string{"--request-timeout", "500ms", "--idle-timeout", "3s"}, tt.args...), "--", badchild)...)

			client := exec.Command(node, script, p.URL)
			client.Env = os.Environ()
			if tt.token != "" {
				client.Env = append(client.Env, "VANISH_TOKEN="+tt.token)
			}
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
			if h.PID == 0 || (h.SessionID == "") != tt.stateless {
				t.Fatalf("the client printed %+v; the bridge logged:\n%s", h, p.Stderr())
			}
			// The call is with the child once the child says so on stderr,
			// which the bridge logs (with the session, where the child is
			// the session's own).
			session := `session=\S+`
			if !tt.stateless {
				session = `session=` + regexp.QuoteMeta(h.SessionID)
			}
			waitLogged(t, p, `msg="child stderr" .*line="badchild: hang received"`)
			if err := client.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = client.Wait()

			waitLogged(t, p, `msg="the MCP server did not answer a request in time; cancelled it" `+session+` method=tools/call`)
			if !tt.stateless {
				waitLogged(t, p, `msg="session ended" `+session+` reason="the session expired"`)
			}
			if tt.ownChild {
				waitGone(t, h.PID, p.cmd.Process.Pid)
				return
			}
			// The child serves on, and was told to cancel the call.
			other := &rawSession{t: t, url: p.URL, hc: &http.Client{}}
			if !tt.stateless {
				other = openSession(t, p.URL)
			}
			if pid := other.intTool("pid"); pid != h.PID {
				t.Errorf("the shared child is %d, was %d: it should serve on", pid, h.PID)
			}
			var cancelled []json.RawMessage
			if got := other.textTool("cancels"); json.Unmarshal([]byte(got), &cancelled) != nil || len(cancelled) != 1 {
				t.Errorf("the child was told to cancel %s, want the vanished client's call", got)
			}
		})
	}
}
