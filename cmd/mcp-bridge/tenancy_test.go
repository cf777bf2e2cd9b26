package main

// Who sees what of the others. The web page shows each principal its own
// sessions and children (admins, --admin, everything), tested in Chromium
// with real sessions of two principals; /metrics can require a token of its
// own (--metrics-token-env); both flags are validated without echoing a
// value.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

func TestVisibilityConfigValidation(t *testing.T) {
	bin := testpeers.BuildGo(t, "./cmd/mcp-bridge")
	const scrape = "scrape-0123456789abcdef"
	servers := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(servers, []byte(`{"mcpServers": {"a": {"command": "x", "envFrom": {"K": "METRICS_TOKEN"}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens := []string{"ALICE_TOKEN=" + tokenAlice}
	checkRefusals(t, bin, []refusal{
		{name: "admin with an empty scope", args: []string{"--token-env", "ALICE_TOKEN", "--admin", "scope:"}, env: tokens, want: []string{"--admin / MCP_BRIDGE_ADMINS", "scope is empty"}},
		{name: "admin with an empty token name", env: append(tokens, "MCP_BRIDGE_TOKEN_ENVS=ALICE_TOKEN", "MCP_BRIDGE_ADMINS=ALICE_TOKEN,token:"), want: []string{"--admin / MCP_BRIDGE_ADMINS", "token is empty"}},
		{name: "admin without authentication", args: []string{"--admin", "ROOT"}, want: []string{"--admin / MCP_BRIDGE_ADMINS", "without authentication"}},
		// An unset or invalid name is not shown: it may be the token itself.
		{name: "metrics token unset", args: []string{"--metrics-token-env", "NOPE_METRICS_TOK"}, want: []string{"--metrics-token-env / MCP_BRIDGE_METRICS_TOKEN_ENV", "not a variable set", "NAME of a variable"}, notWant: []string{"NOPE_METRICS_TOK"}},
		{name: "metrics token empty", env: []string{"MCP_BRIDGE_METRICS_TOKEN_ENV=METRICS_TOKEN", "METRICS_TOKEN="}, want: []string{"--metrics-token-env / MCP_BRIDGE_METRICS_TOKEN_ENV", "METRICS_TOKEN is empty"}},
		{name: "metrics token short", args: []string{"--metrics-token-env", "METRICS_TOKEN"}, env: []string{"METRICS_TOKEN=hunter2"}, want: []string{"METRICS_TOKEN", "shorter"}, notWant: []string{"hunter2"}},
		{name: "metrics token with spaces", args: []string{"--metrics-token-env", "METRICS_TOKEN"}, env: []string{"METRICS_TOKEN=supersecret value 0123456789"}, want: []string{"METRICS_TOKEN"}, notWant: []string{"supersecret"}},
		{name: "metrics token variable name invalid", args: []string{"--metrics-token-env", "BAD-NAME"}, want: []string{"--metrics-token-env / MCP_BRIDGE_METRICS_TOKEN_ENV", "NAME of a variable"}, notWant: []string{"BAD-NAME"}},
		{name: "metrics token variable of the bridge's own", args: []string{"--metrics-token-env", "MCP_BRIDGE_X"}, want: []string{"--metrics-token-env / MCP_BRIDGE_METRICS_TOKEN_ENV"}},
		{name: "a server's envFrom names the metrics token", args: []string{"--config", servers, "--metrics-token-env", "METRICS_TOKEN"}, env: []string{"METRICS_TOKEN=" + scrape}, want: []string{`field "envFrom"`, "METRICS_TOKEN holds a token of the bridge"}, notWant: []string{scrape}},
	})
}

// TestMetricsTokenProcess: with --metrics-token-env, /metrics of a real
// bridge answers the scraper's token only (401 with a challenge without
// it), with one server or several (--config: every server's /metrics);
// no child sees the variable, and the log never shows the token.
func TestMetricsTokenProcess(t *testing.T) {
	const scrape = "scrape-0123456789abcdef-secret"
	badchild := testpeers.BuildGo(t, "./testdata/badchild")
	servers := filepath.Join(t.TempDir(), "servers.json")
	file, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"a": map[string]any{"command": badchild}}})
	if err := os.WriteFile(servers, file, 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(environWithout(envPrefix), "METRICS_TOKEN="+scrape)
	for _, tt := range []struct {
		name    string
		args    []string
		metrics string // path
		mcp     string // path
	}{
		{"one server", []string{"--metrics-token-env", "METRICS_TOKEN", "--", badchild}, "/metrics", "/mcp"},
		{"several servers", []string{"--config", servers, "--metrics-token-env", "METRICS_TOKEN"}, "/servers/a/metrics", "/servers/a/mcp"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := startBridge(t, env, tt.args...)
			scrapeAs := func(token string) (int, string, string) {
				t.Helper()
				r, _ := http.NewRequest(http.MethodGet, p.Base+tt.metrics, nil)
				if token != "" {
					r.Header.Set("Authorization", "Bearer "+token)
				}
				resp, err := http.DefaultClient.Do(r)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(body)
			}
			if code, challenge, _ := scrapeAs(""); code != 401 || challenge != `Bearer realm="mcp-bridge metrics"` {
				t.Errorf("no token: %d %q, want 401 with the challenge", code, challenge)
			}
			if code, challenge, _ := scrapeAs("not-the-scrape-token-0123456789"); code != 401 || !strings.Contains(challenge, `error="invalid_token"`) {
				t.Errorf("a wrong token: %d %q, want 401 invalid_token", code, challenge)
			}
			if code, _, body := scrapeAs(scrape); code != 200 || !strings.Contains(body, "mcp_bridge_sessions ") {
				t.Errorf("the token: %d\n%.300s", code, body)
			}
			s := openSession(t, p.Base+tt.mcp)
			if childEnv := s.textTool("env"); strings.Contains(childEnv, "METRICS_TOKEN") || strings.Contains(childEnv, scrape) {
				t.Error("the child sees the metrics token's variable")
			}
			if strings.Contains(p.Stderr(), scrape) {
				t.Error("the log shows the metrics token")
			}
		})
	}
}

// liveviewResult is what testdata/node/liveview.mjs reports.
type liveviewResult struct {
	Pages map[string]struct {
		Live     string `json:"live"`
		Sessions string `json:"sessions"`
		Children string `json:"children"`
	} `json:"pages"`
	Failed     string   `json:"failed"`
	Console    []string `json:"console"`
	PageErrors []string `json:"pageErrors"`
}

func (r *liveviewResult) failed() string { return r.Failed }

// TestWebTenancyInBrowser: what one principal sees of another, as a browser
// shows it. Two principals, Alice and Bob, hold sessions (real Go SDK
// clients) whose children each got a secret of theirs on stderr, on two
// real bridges: one server in per-session mode, and --config with a
// per-session server (solo) and a shared one (everyone). In Chromium, each
// principal's page shows their sessions and children and nothing of the
// other's (no session, no child pid, no stderr, not their name); the shared
// child shows, but not its stderr, which mixes both; the page of an admin
// (--admin token:ROOT_TOKEN) shows everything.
func TestWebTenancyInBrowser(t *testing.T) {
	node, nodeModules := browserPeers(t)
	badchild := testpeers.BuildGo(t, "./testdata/badchild")
	tokens := map[string]string{"ALICE_TOKEN": randomToken(), "BOB_TOKEN": randomToken(), "ROOT_TOKEN": randomToken()}
	env := environWithout(envPrefix)
	for k, v := range tokens {
		env = append(env, k+"="+v)
	}
	auth := []string{"--token-env", "ALICE_TOKEN", "--token-env", "BOB_TOKEN", "--token-env", "ROOT_TOKEN", "--admin", "token:ROOT_TOKEN"}
	single := startBridge(t, env, append(auth, "--", badchild)...)
	servers := filepath.Join(t.TempDir(), "servers.json")
	file, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"solo":     map[string]any{"command": badchild},
		"everyone": map[string]any{"command": badchild, "mode": "shared"},
	}})
	if err := os.WriteFile(servers, file, 0o600); err != nil {
		t.Fatal(err)
	}
	several := startBridge(t, env, append(auth, "--config", servers)...)

	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	defer cancel()
	// session is one SDK session of a principal: its id prefix, its
	// child's pid, the secret its child wrote to stderr.
	type session struct{ prefix, pid, secret string }
	open := func(principal, endpoint string) session {
		t.Helper()
		client := mcp.NewClient(&mcp.Implementation{Name: "tenancy-test", Version: "1"}, nil)
		hc := &http.Client{Transport: bearerTransport{tokens[principal], http.DefaultTransport}}
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}) // a session, for the page to show
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		s := session{prefix: cs.ID()[:8], secret: strings.ToLower(principal) + "-stderr-secret-" + randomToken()[:8]}
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "stderr", Arguments: map[string]any{"stderr": s.secret}}); err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pid", Arguments: map[string]any{}})
		if err != nil || len(res.Content) == 0 {
			t.Fatalf("pid: %v", err)
		}
		s.pid = res.Content[0].(*mcp.TextContent).Text
		return s
	}
	type user struct {
		name                   string
		single, solo, everyone session
	}
	var users []user
	for _, name := range []string{"ALICE_TOKEN", "BOB_TOKEN"} {
		users = append(users, user{name: name, single: open(name, single.URL),
			solo: open(name, several.Base+"/servers/solo/mcp"), everyone: open(name, several.Base+"/servers/everyone/mcp")})
	}
	alice, bob := users[0], users[1]

	page := func(name, url, principal string, want ...string) map[string]any {
		return map[string]any{"name": name, "url": url, "token": tokens[principal], "want": want}
	}
	hidden := "stderr hidden"
	pages, _ := json.Marshal([]map[string]any{
		page("alice", single.Base+"/", "ALICE_TOKEN", alice.single.prefix, alice.single.secret, "pid "+alice.single.pid),
		page("bob", single.Base+"/", "BOB_TOKEN", bob.single.prefix, bob.single.secret, "pid "+bob.single.pid),
		page("root", single.Base+"/", "ROOT_TOKEN", alice.single.prefix, alice.single.secret, bob.single.prefix, bob.single.secret),
		page("alice several", several.Base+"/", "ALICE_TOKEN", alice.solo.prefix, alice.solo.secret, alice.everyone.prefix, "pid "+alice.everyone.pid, hidden),
		page("bob several", several.Base+"/", "BOB_TOKEN", bob.solo.prefix, bob.solo.secret, bob.everyone.prefix, "pid "+bob.everyone.pid, hidden),
		page("root several", several.Base+"/", "ROOT_TOKEN", alice.solo.secret, bob.solo.secret, alice.everyone.secret, bob.everyone.secret),
	})
	var res liveviewResult
	runPageScript(t, ctx, node, nodeModules, "liveview.mjs", &res, string(pages))
	if testing.Verbose() {
		for name, pg := range res.Pages {
			t.Logf("%s's page:\n%s", name, pg.Live)
		}
	}
	if res.Failed != "" {
		t.Fatalf("a page failed: %s\npages so far: %+v\nconsole: %q\npage errors: %q", res.Failed, res.Pages, res.Console, res.PageErrors)
	}
	if len(res.PageErrors) > 0 {
		t.Errorf("uncaught errors in the pages: %q", res.PageErrors)
	}
	showsPid := func(text, pid string) bool { return regexp.MustCompile(`\bpid ` + pid + `\b`).MatchString(text) }

	for _, tt := range []struct {
		page      string
		me, other user
	}{{"alice", alice, bob}, {"bob", bob, alice}} {
		pg := res.Pages[tt.page]
		if !strings.Contains(pg.Sessions, tt.me.name) || !strings.Contains(pg.Children, tt.me.single.secret) {
			t.Errorf("%s's page: sessions %q, children %q: want theirs", tt.page, pg.Sessions, pg.Children)
		}
		several := res.Pages[tt.page+" several"]
		// Their own secret on the shared child is hidden too: it is on
		// the same stderr as the other's.
		for _, leak := range []string{tt.other.name, tt.other.single.prefix, tt.other.single.secret, tt.other.solo.prefix,
			tt.other.solo.secret, tt.other.everyone.prefix, tt.other.everyone.secret, tt.me.everyone.secret} {
			for name, text := range map[string]string{tt.page: pg.Live, tt.page + " several": several.Live} {
				if strings.Contains(text, leak) {
					t.Errorf("%s's page shows %q:\n%s", name, leak, text)
				}
			}
		}
		if showsPid(pg.Live, tt.other.single.pid) || showsPid(several.Live, tt.other.solo.pid) {
			t.Errorf("%s's pages show %s's child:\n%s\n%s", tt.page, tt.other.name, pg.Live, several.Live)
		}
	}
	for _, u := range users {
		root, several := res.Pages["root"], res.Pages["root several"]
		if !strings.Contains(root.Sessions, u.name) || !showsPid(root.Children, u.single.pid) ||
			!strings.Contains(several.Sessions, u.name) || !showsPid(several.Children, u.solo.pid) {
			t.Errorf("the admin's pages lack %s's sessions or children:\n%s\n%s", u.name, root.Live, several.Live)
		}
	}
	for _, p := range []*bridgeProc{single, several} {
		for _, tok := range tokens {
			if strings.Contains(p.Stderr(), tok) {
				t.Error("the bridge logged a token")
			}
		}
	}
}

// TestMetricsClosedProcess: a real bridge that requires tokens, without
// --metrics-token-env, says at start that /metrics is closed and how to
// open it, and /metrics answers 403; --metrics-public opens it. With
// --config, one server's own tokens close the set's /metrics too.
func TestMetricsClosedProcess(t *testing.T) {
	const token = "alice-0123456789abcdef-secret"
	env := append(environWithout(envPrefix), "ALICE_TOKEN="+token)
	servers := filepath.Join(t.TempDir(), "servers.json")
	file, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"a": map[string]any{"command": testpeers.BuildGo(t, "./testdata/badchild"), "tokenEnvs": []string{"ALICE_TOKEN"}},
	}})
	if err := os.WriteFile(servers, file, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		args   []string
		status int
	}{
		{"closed", []string{"--token-env", "ALICE_TOKEN"}, http.StatusForbidden},
		{"public", []string{"--token-env", "ALICE_TOKEN", "--metrics-public"}, http.StatusOK},
		{"a server's own tokens", []string{"--config", servers}, http.StatusForbidden},
		{"a server's own tokens, public", []string{"--config", servers, "--metrics-public"}, http.StatusOK},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := startBridge(t, env, tt.args...)
			resp, err := http.Get(p.Base + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("GET /metrics: %d, want %d", resp.StatusCode, tt.status)
			}
			warned := strings.Contains(p.Stderr(), "--metrics-public")
			if warned != (tt.status == http.StatusForbidden) {
				t.Errorf("start-up log names --metrics-public: %v, want %v:\n%s", warned, !warned, p.Stderr())
			}
		})
	}
}
