package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// foldedBodies are tools/call messages whose keys fold: each would make a
// server that decodes with encoding/json into structs run the tool
// "secret" (or run a call the bridge took for a notification), while the
// bridge, reading keys exactly, saw something else. meta is the members to
// put in params._meta ("" for none).
func foldedBodies(meta string) []string {
	m := ""
	if meta != "" {
		m = `,"_meta":{` + meta + `}`
	}
	bodies := []string{
		// What the review found.
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","Method":"tools/call","params":{"name":"secret"` + m + `}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","NAME":"secret"` + m + `}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"` + m + `},"paramſ":{"name":"secret"` + m + `}}`,
		`{"jsonrpc":"2.0","ID":9,"method":"tools/call","params":{"name":"secret"` + m + `}}`,
		// The same key twice: decoders keep the first or the last.
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"secret","name":"echo"` + m + `}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"tools/list","params":{"name":"secret"` + m + `}}`,
	}
	// Every spelling of name, method, params and id that folds.
	for _, v := range []string{"Name", "nAME", "NAME", "naMe"} {
		bodies = append(bodies, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",`+strconv.Quote(v)+`:"secret"`+m+`}}`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{`+strconv.Quote(v)+`:"secret","name":"echo"`+m+`}}`)
	}
	for _, v := range []string{"Method", "METHOD", "mEthod", "methoD"} {
		bodies = append(bodies, `{"jsonrpc":"2.0","id":1,"method":"tools/list",`+strconv.Quote(v)+`:"tools/call","params":{"name":"secret"`+m+`}}`)
	}
	for _, v := range []string{"Params", "PARAMS", "paramS", "pAramſ"} {
		bodies = append(bodies, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"`+m+`},`+strconv.Quote(v)+`:{"name":"secret"`+m+`}}`)
	}
	for _, v := range []string{"Id", "iD", "ID", "ıd", "İd"} {
		bodies = append(bodies, `{"jsonrpc":"2.0",`+strconv.Quote(v)+`:9,"method":"tools/call","params":{"name":"secret"`+m+`}}`)
	}
	return bodies
}

// TestFoldedKeysNeverReachTheChild: through a server that decodes with
// encoding/json into structs, a message whose keys fold cannot run the
// tool the policy denies, or run a call the bridge did not see, in either
// era and in every mode. The bridge refuses it (HTTP 400, -32600, naming
// the keys), the server never runs the tool, and the audit log has a
// line that says what was refused and why. What is allowed still runs.
func TestFoldedKeysNeverReachTheChild(t *testing.T) {
	child := testpeers.BuildGo(t, "./testdata/foldchild")
	deny, err := auth.ParseToolRule("*=secret", true)
	if err != nil {
		t.Fatal(err)
	}
	const token = "alice-secret-0123456789"
	verifier, err := auth.TokensFromEnv([]string{"ALICE_TOKEN"}, func(string) (string, bool) { return token, true })
	if err != nil {
		t.Fatal(err)
	}
	type mode struct {
		name      string
		bridge    bridge.Config
		auth      bool
		stateless bool
	}
	modes := []mode{
		{name: "per-session"},
		{name: "shared", bridge: bridge.Config{Mode: bridge.ModeShared}},
		{name: "per-identity", bridge: bridge.Config{Mode: bridge.ModePerIdentity}, auth: true},
		{name: "stateless", stateless: true},
	}
	for _, md := range modes {
		for _, modernChild := range []bool{false, true} {
			name := md.name + "/legacy-child"
			if modernChild {
				name = md.name + "/modern-child"
			}
			t.Run(name, func(t *testing.T) {
				calls := filepath.Join(t.TempDir(), "calls")
				audit := &syncBuffer{}
				cfg := md.bridge
				cfg.Env = append(os.Environ(), "FOLDCHILD_LOG="+calls)
				command := []string{child}
				if modernChild {
					command = append(command, "-modern")
				}
				opts := httpapi.Options{Audit: audit, ToolPolicy: auth.NewToolPolicy([]auth.ToolRule{deny}), Stateless: md.stateless}
				if md.auth {
					opts.Auth = verifier
				}
				e := newEnv(t, envOpts{command: command, bridge: cfg, http: opts})
				header := func() map[string]string {
					h := map[string]string{}
					if md.auth {
						h["Authorization"] = "Bearer " + token
					}
					return h
				}
				refused := 0
				check := func(era string, r req) {
					t.Helper()
					resp := e.do(r)
					msgs := readMessages(t, resp)
					var errMsg string
					if len(msgs) == 1 {
						if em, ok := msgs[0]["error"].(map[string]any); ok && fmt.Sprint(em["code"]) == strconv.Itoa(bridge.CodeInvalidRequest) {
							errMsg, _ = em["message"].(string)
						}
					}
					if resp.StatusCode != http.StatusBadRequest || !strings.Contains(errMsg, "ignores case") && !strings.Contains(errMsg, "twice") {
						t.Fatalf("%s %s: %d %v; want 400 and -32600 naming the keys", era, r.body, resp.StatusCode, msgs)
					}
					refused++
				}
				// The 2025 era: a session, or stateless POSTs.
				if !modernChild {
					sid := ""
					if !md.stateless {
						resp := e.do(req{body: fmt.Sprintf(initBody, "2025-11-25"), header: header()})
						readMessages(t, resp)
						if sid = resp.Header.Get("Mcp-Session-Id"); sid == "" {
							t.Fatalf("initialize: %d", resp.StatusCode)
						}
					}
					for _, body := range foldedBodies("") {
						check("2025", req{body: body, sid: sid, version: "2025-11-25", header: header()})
					}
					// Allowed and denied calls, spelled plainly, still work.
					msgs := readMessages(t, e.do(req{sid: sid, version: "2025-11-25", header: header(),
						body: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`}))
					if text(msgs[len(msgs)-1]) != "hi" {
						t.Fatalf("echo: %v", msgs)
					}
					msgs = readMessages(t, e.do(req{sid: sid, version: "2025-11-25", header: header(),
						body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"secret"}}`}))
					if msgs[0]["error"] == nil {
						t.Fatalf("secret, spelled plainly: %v; want the policy's refusal", msgs)
					}
				}
				// The 2026-07-28 era, to whichever child.
				meta := `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`
				for _, body := range foldedBodies(meta) {
					h := header()
					h["Mcp-Method"], h["Mcp-Name"] = "tools/call", "echo"
					check("2026-07-28", req{body: body, version: "2026-07-28", header: h})
				}
				h := header()
				h["Mcp-Method"], h["Mcp-Name"] = "tools/call", "echo"
				msgs := readMessages(t, e.do(req{version: "2026-07-28", header: h,
					body: `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"message":"modern"},"_meta":{` + meta + `}}}`}))
				if text(msgs[len(msgs)-1]) != "modern" {
					t.Fatalf("a 2026-07-28 echo: %v", msgs)
				}

				ran, _ := os.ReadFile(calls)
				if strings.Contains(string(ran), "secret") {
					t.Fatalf("the server ran what the bridge refused:\n%s", ran)
				}
				if !strings.Contains(string(ran), "tools/call echo") {
					t.Fatalf("the server's log has no echo: %q (the test cannot see what it runs)", ran)
				}
				var lines int
				for _, l := range strings.Split(strings.TrimSpace(audit.String()), "\n") {
					var ln struct {
						Outcome, Reason string
						ErrorCode       int `json:"error_code"`
						HTTPStatus      int `json:"http_status"`
					}
					if err := json.Unmarshal([]byte(l), &ln); err != nil {
						t.Fatalf("audit line %q: %v", l, err)
					}
					if ln.Outcome != "refused" {
						continue
					}
					lines++
					if ln.ErrorCode != bridge.CodeInvalidRequest || ln.HTTPStatus != http.StatusBadRequest ||
						!strings.Contains(ln.Reason, "ignores case") && !strings.Contains(ln.Reason, "twice") {
						t.Errorf("audit line %s: want the refusal with its code and reason", l)
					}
				}
				if lines != refused {
					t.Errorf("%d refusals audited, want %d:\n%s", lines, refused, audit.String())
				}
			})
		}
	}
}
