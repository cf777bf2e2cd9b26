package main

// Approvals on a real bridge process: the flags and the --config fields
// reach the call path and the operators' channel. A call that needs a
// human's yes is held until an operator decides it through /approvals
// (its client cannot be asked: it declared no elicitation), and reaches
// the server only when approved; the fail-open flag is warned about at
// start, and runs nothing while an approver can decide.

import (
	"bufio"
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
	events := openApprovalEvents(ctx, t, p.Base, apprOpsToken)
	for _, tt := range []struct {
		args    map[string]any
		verdict string
		want    string
	}{
		{map[string]any{"message": "x", "confirm": true}, "deny", `"isError":true`},
		{map[string]any{"message": "x"}, "approve", `"text":"x"`},
	} {
		replies := make(chan rpcReply, 1)
		go func() {
			r, err := s.call(ctx, "echo", tt.args)
			if err != nil {
				r.raw = []byte(err.Error())
			}
			replies <- r
		}()
		v := events.next(t, "approval_requested")
		if v.Tool != "echo" || v.Principal != "CALLER_TOKEN" {
			t.Errorf("held: %+v", v)
		}
		if code, body := decideAs(t, p.Base, apprOpsToken, v.ID, tt.verdict); code != 200 {
			t.Fatalf("%s: %d %s", tt.verdict, code, body)
		}
		if r := <-replies; !strings.Contains(string(r.raw), tt.want) {
			t.Errorf("%s: %s", tt.verdict, r.raw)
		}
	}
	if n := s.intTool("echo_count"); n != 1 {
		t.Errorf("the server answered %d echo calls, want 1", n)
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
	for _, line := range []string{`"tool":"echo","outcome":"denied"`, `"event":"denied"`, `"event":"executed"`, `"channel":"operator","approver":"OPS_TOKEN"`} {
		if !strings.Contains(string(b), line) {
			t.Errorf("no %s in the audit log:\n%s", line, b)
		}
	}
}

// approvalEvents is an operator's /approvals/events stream.
type approvalEvents struct{ sc *bufio.Scanner }

func openApprovalEvents(ctx context.Context, t *testing.T, base, token string) approvalEvents {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/approvals/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/approvals/events: %v %v", err, resp)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return approvalEvents{bufio.NewScanner(resp.Body)}
}

type approvalView struct{ ID, Tool, Principal, Server string }

// next is the approval of the next event of kind.
func (e approvalEvents) next(t *testing.T, kind string) approvalView {
	t.Helper()
	for e.sc.Scan() {
		data, ok := strings.CutPrefix(e.sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Event    string       `json:"event"`
			Approval approvalView `json:"approval"`
		}
		if json.Unmarshal([]byte(data), &ev) == nil && ev.Event == kind {
			return ev.Approval
		}
	}
	t.Fatalf("the stream ended before a %s event", kind)
	return approvalView{}
}

// decideAs decides an approval as the principal of token.
func decideAs(t *testing.T, base, token, id, verdict string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/approvals/"+id, strings.NewReader(`{"decision":"`+verdict+`","reason":"checked"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
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
	events := openApprovalEvents(ctx, t, p.Base, apprOpsToken)
	held := openSessionAs(t, p.Base+"/servers/held/mcp", apprCallerToken)
	replies := make(chan rpcReply, 1)
	go func() {
		r, _ := held.call(ctx, "echo", map[string]any{"message": "x"})
		replies <- r
	}()
	if v := events.next(t, "approval_requested"); v.Server != "held" || v.Tool != "echo" {
		t.Errorf("held: %+v", v)
	} else if code, body := decideAs(t, p.Base, apprOpsToken, v.ID, "deny"); code != 200 {
		t.Errorf("deny: %d %s", code, body)
	}
	if r := <-replies; !strings.Contains(string(r.raw), `"isError":true`) {
		t.Errorf("held/echo: %s", r.raw)
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
