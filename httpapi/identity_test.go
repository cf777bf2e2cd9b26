package httpapi_test

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
)

// TestPerIdentity: one child per principal, shared by that principal's
// sessions, with the principal's allow-listed claims in its environment,
// and stopped when the principal's last session ends.
func TestPerIdentity(t *testing.T) {
	tokens := map[string]string{"ALICE_TOKEN": "alice-secret-0123456789", "BOB_TOKEN": "bob-secret-0123456789ab"}
	v, err := auth.TokensFromEnv([]string{"ALICE_TOKEN", "BOB_TOKEN"}, func(k string) (string, bool) { v, ok := tokens[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOpts{
		bridge: bridge.Config{Mode: bridge.ModePerIdentity},
		http:   httpapi.Options{Auth: v, ClaimEnv: map[string]string{"sub": "MCP_USER"}},
	})
	as := func(token string, r req) req {
		r.header = map[string]string{"Authorization": "Bearer " + token}
		return r
	}
	start := func(token string) string {
		t.Helper()
		resp := e.do(as(token, req{body: fmt.Sprintf(initBody, "2025-11-25")}))
		readMessages(t, resp)
		sid := resp.Header.Get("Mcp-Session-Id")
		if sid == "" {
			t.Fatalf("initialize: %d", resp.StatusCode)
		}
		return sid
	}
	callAs := func(token, sid, tool string) string {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
		msgs := readMessages(t, e.do(as(token, req{sid: sid, body: body})))
		return text(msgs[len(msgs)-1])
	}
	a1, a2, b1 := start(tokens["ALICE_TOKEN"]), start(tokens["ALICE_TOKEN"]), start(tokens["BOB_TOKEN"])
	pa1, pa2, pb1 := callAs(tokens["ALICE_TOKEN"], a1, "pid"), callAs(tokens["ALICE_TOKEN"], a2, "pid"), callAs(tokens["BOB_TOKEN"], b1, "pid")
	if pa1 == "" || pa1 != pa2 || pa1 == pb1 {
		t.Fatalf("pids alice %s %s, bob %s: want one child per principal", pa1, pa2, pb1)
	}
	for token, want := range map[string]string{tokens["ALICE_TOKEN"]: "MCP_USER=ALICE_TOKEN", tokens["BOB_TOKEN"]: "MCP_USER=BOB_TOKEN"} {
		sid := a1
		if strings.HasPrefix(token, "bob") {
			sid = b1
		}
		envText := callAs(token, sid, "env")
		if !strings.Contains("\n"+envText+"\n", "\n"+want+"\n") {
			t.Errorf("child environment lacks %s", want)
		}
		if strings.Contains(envText, "secret") {
			t.Errorf("a token reached a child's environment")
		}
	}
	// Alice's last session ends: her child stops; Bob's is untouched.
	for _, sid := range []string{a1, a2} {
		resp := e.do(as(tokens["ALICE_TOKEN"], req{method: http.MethodDelete, sid: sid}))
		resp.Body.Close()
	}
	pid, _ := strconv.Atoi(pa1)
	waitFor(t, func() bool { return processGone(pid) })
	if got := callAs(tokens["BOB_TOKEN"], b1, "pid"); got != pb1 {
		t.Fatalf("bob's child changed: %s -> %s", pb1, got)
	}
	a3 := start(tokens["ALICE_TOKEN"])
	if got := callAs(tokens["ALICE_TOKEN"], a3, "pid"); got == pa1 || got == "" {
		t.Fatalf("alice's new session got pid %q", got)
	}
}

// processGone: no such process, or a zombie (dead, not yet reaped).
func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] == 'Z'
}
