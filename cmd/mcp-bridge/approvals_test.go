package main

// Approvals on a real bridge process: the flags and the --config fields
// reach the call path and the operators' channel. The transports do not
// hold calls yet, so a call that needs a human's yes is refused, saying
// so, and never reaches the server; the operators' channel answers; the
// fail-open flag is warned about at start.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

const (
	apprCallerToken = "appr-caller-token-0123456789abcdef"
	apprOpsToken    = "appr-ops-token-0123456789abcdefgh"
)

// getAs is one GET as the principal of token, its status and body.
func getAs(t *testing.T, url, token string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestApprovalsProcess(t *testing.T) {
	child := testpeers.BuildGo(t, "./testdata/badchild")
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	env := append(environWithout(envPrefix), "CALLER_TOKEN="+apprCallerToken, "OPS_TOKEN="+apprOpsToken)
	p := startBridge(t, env, "--token-env", "CALLER_TOKEN", "--token-env", "OPS_TOKEN", "--tool-approve", "*=echo",
		"--approver", "token:OPS_TOKEN", "--approval-fail-open", "--audit-log", audit, "--metrics-public", "--", child)
	if !strings.Contains(p.Stderr(), "--approval-fail-open: a call that needs approval runs without one") {
		t.Errorf("no warning of --approval-fail-open at start:\n%s", p.Stderr())
	}
	// The URLs served are logged after the line that says it listens.
	p.waitLog("also serving approvals API (--approver)")

	s := openSessionAs(t, p.URL, apprCallerToken)
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	for _, args := range []any{map[string]any{"message": "x"}, map[string]any{"message": "x", "confirm": true}} {
		r, err := s.call(ctx, "echo", args)
		if err != nil {
			t.Fatal(err)
		}
		if r.Error == nil || !strings.Contains(r.Error.Message, `tool "echo" needs a human's approval (rule *=echo)`) {
			t.Errorf("a call that needs approval: %s", r.raw)
		}
	}
	if n := s.intTool("echo_count"); n != 0 {
		t.Errorf("the server answered %d echo calls, want 0", n)
	}

	if code, body := getAs(t, p.Base+"/approvals", apprOpsToken); code != 200 || !strings.Contains(body, `"approvals":[]`) || !strings.Contains(body, `"approver":true`) {
		t.Errorf("the approver's list: %d %s", code, body)
	}
	if code, _ := getAs(t, p.Base+"/approvals", apprCallerToken); code != 403 {
		t.Errorf("the caller's list: %d, want 403", code)
	}
	if code, _ := getAs(t, p.Base+"/approvals", ""); code != 401 {
		t.Errorf("no token: %d, want 401", code)
	}
	if code, body := getAs(t, p.Base+"/metrics", ""); code != 200 || !strings.Contains(body, "mcp_bridge_approvals_pending 0") {
		t.Errorf("/metrics: %d, no mcp_bridge_approvals_pending", code)
	}
	b, _ := os.ReadFile(audit)
	if n := strings.Count(string(b), `"tool":"echo","outcome":"denied"`); n != 2 {
		t.Errorf("%d audit lines of the denied calls, want 2:\n%s", n, b)
	}
}

// TestApprovalsConfigFile: a --config server's own approval rules, with
// the flags', and the operators' channel once for every server.
func TestApprovalsConfigFile(t *testing.T) {
	child := testpeers.BuildGo(t, "./testdata/badchild")
	q, _ := json.Marshal(child)
	file := filepath.Join(t.TempDir(), "servers.json")
	data := `{"mcpServers": {"held": {"command": ` + string(q) + `, "toolApprove": ["*=echo"], "trusted": true}, "free": {"command": ` + string(q) + `}}}`
	if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(environWithout(envPrefix), "CALLER_TOKEN="+apprCallerToken, "OPS_TOKEN="+apprOpsToken)
	p := startBridge(t, env, "--config", file, "--token-env", "CALLER_TOKEN", "--token-env", "OPS_TOKEN", "--approver", "token:OPS_TOKEN")
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	held := openSessionAs(t, p.Base+"/servers/held/mcp", apprCallerToken)
	if r, err := held.call(ctx, "echo", map[string]any{"message": "x"}); err != nil || r.Error == nil || !strings.Contains(r.Error.Message, "needs a human's approval") {
		t.Errorf("held/echo: %v %s", err, r.raw)
	}
	free := openSessionAs(t, p.Base+"/servers/free/mcp", apprCallerToken)
	if r, err := free.call(ctx, "echo", map[string]any{"message": "x"}); err != nil || r.Error != nil {
		t.Errorf("free/echo: %v %s", err, r.raw)
	}
	if code, body := getAs(t, p.Base+"/approvals", apprOpsToken); code != 200 || !strings.Contains(body, `"approvals":[]`) {
		t.Errorf("/approvals: %d %s", code, body)
	}
	if code, _ := getAs(t, p.Base+"/servers/held/approvals", apprOpsToken); code == 200 {
		t.Error("a server serves the operators' channel of its own")
	}
}
