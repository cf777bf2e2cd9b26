package main

// Tests of authentication as configured on the command line: startup
// refuses bad settings naming them but never their values, the tokens and
// secrets never reach a child, and a real bridge process challenges,
// accepts and binds each session to the principal that made it.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/auth/authtest"
	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

const (
	tokenAlice = "alice-tok-0123456789abcdef"
	tokenBob   = "bob-tok-0123456789abcdef"
	jwtSecret  = "jwt-secret-0123456789abcdef0123456789"
)

func TestAuthConfigValidation(t *testing.T) {
	bin := testpeers.BuildGo(t, "./cmd/mcp-bridge")
	pemFile := filepath.Join(t.TempDir(), "key.pem")
	is := authtest.NewIssuer(t)
	if err := os.WriteFile(pemFile, authtest.PublicPEM(t, &is.RSA.PublicKey), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []refusal{
		// A name is shown only when its variable is set: one that is not
		// may be the token itself, pasted where its name belongs.
		{name: "token variable unset", args: []string{"--token-env", "NOPE_TOKEN"}, want: []string{"--token-env / MCP_BRIDGE_TOKEN_ENVS", "not a variable set", "NAME of a variable"}, notWant: []string{"NOPE_TOKEN"}},
		{name: "token variable empty", args: []string{"--token-env", "EMPTY_TOKEN"}, env: []string{"EMPTY_TOKEN="}, want: []string{"EMPTY_TOKEN is empty"}},
		{name: "token too short", env: []string{"MCP_BRIDGE_TOKEN_ENVS=SHORT_TOKEN", "SHORT_TOKEN=hunter2"}, want: []string{"SHORT_TOKEN", "shorter"}, notWant: []string{"hunter2"}},
		{name: "token with spaces", args: []string{"--token-env", "SPACE_TOKEN"}, env: []string{"SPACE_TOKEN=supersecret value 0123456789"}, want: []string{"SPACE_TOKEN"}, notWant: []string{"supersecret"}},
		{name: "token variable name invalid", args: []string{"--token-env", "BAD-NAME"}, want: []string{"--token-env / MCP_BRIDGE_TOKEN_ENVS", "NAME of a variable"}, notWant: []string{"BAD-NAME"}},
		{name: "two variables, one token", args: []string{"--token-env", "A_TOKEN", "--token-env", "B_TOKEN"}, env: []string{"A_TOKEN=" + tokenAlice, "B_TOKEN=" + tokenAlice}, want: []string{"A_TOKEN and B_TOKEN hold the same token"}, notWant: []string{tokenAlice}},
		{name: "JWT secret unset", args: []string{"--jwt-secret-env", "NOPE_SECRET", "--jwt-issuer", "https://i", "--public-url", "https://b/mcp"}, want: []string{"--jwt-secret-env / MCP_BRIDGE_JWT_SECRET_ENV", "NAME of a variable"}, notWant: []string{"NOPE_SECRET"}},
		{name: "JWT secret short", args: []string{"--jwt-secret-env", "S", "--jwt-issuer", "https://i", "--public-url", "https://b/mcp"}, env: []string{"S=supersecret"}, want: []string{"at least 32"}, notWant: []string{"supersecret"}},
		{name: "JWT without issuer", args: []string{"--jwt-public-key", pemFile, "--public-url", "https://b/mcp"}, want: []string{"--jwt-issuer / MCP_BRIDGE_JWT_ISSUER"}},
		{name: "JWT without audience", args: []string{"--jwt-public-key", pemFile, "--jwt-issuer", "https://i"}, want: []string{"--public-url"}},
		{name: "two JWT key sources", args: []string{"--jwt-public-key", pemFile, "--jwks-url", "https://i/jwks", "--jwt-issuer", "https://i", "--public-url", "https://b/mcp"}, want: []string{"one JWT key source"}},
		{name: "JWT settings without a key", args: []string{"--jwt-issuer", "https://i"}, want: []string{"need a key"}},
		{name: "key file missing", args: []string{"--jwt-public-key", "/nonexistent.pem", "--jwt-issuer", "https://i", "--public-url", "https://b/mcp"}, want: []string{"--jwt-public-key / MCP_BRIDGE_JWT_PUBLIC_KEY"}},
		{name: "JWKS over plain http", args: []string{"--jwks-url", "http://idp.example/jwks", "--jwt-issuer", "https://i", "--public-url", "https://b/mcp"}, want: []string{"want https"}},
		{name: "JWKS unreachable", args: []string{"--jwks-url", "http://127.0.0.1:1/jwks", "--jwt-issuer", "https://i", "--public-url", "https://b/mcp"}, want: []string{"JWKS"}},
		{name: "public URL with a query", args: []string{"--public-url", "https://b/mcp?x=1"}, want: []string{"--public-url / MCP_BRIDGE_PUBLIC_URL"}},
		{name: "negative rate", args: []string{"--rate-limit", "-1"}, want: []string{"--rate-limit / MCP_BRIDGE_RATE_LIMIT"}},
		{name: "rate not a number", env: []string{"MCP_BRIDGE_RATE_LIMIT=fast"}, want: []string{"--rate-limit / MCP_BRIDGE_RATE_LIMIT", "a number"}},
		{name: "auth server without auth", args: []string{"--auth-server", "https://as.example"}, want: []string{"--auth-server / MCP_BRIDGE_AUTH_SERVERS"}},
		{name: "tool rule without a glob", args: []string{"--tool-deny", "ALICE"}, want: []string{"--tool-deny / MCP_BRIDGE_TOOL_DENY", "SUBJECT=GLOB"}},
		{name: "audit arguments without a log", args: []string{"--audit-arguments"}, want: []string{"--audit-arguments / MCP_BRIDGE_AUDIT_ARGUMENTS"}},
	}
	checkRefusals(t, bin, tests)
}

// bearerTransport adds a bearer token to every request.
type bearerTransport struct {
	token string
	base  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// openSessionAs is openSession with a bearer token on every request.
func openSessionAs(t *testing.T, url, token string) *rawSession {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	s := &rawSession{t: t, url: url, hc: &http.Client{Transport: bearerTransport{token, tr}}}
	s.nextID.Store(1)
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	resp, err := s.post(ctx, initializeBody)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	s.sid = resp.Header.Get("Mcp-Session-Id")
	if r, err := readReply(resp, "1"); err != nil || r.Error != nil || s.sid == "" {
		t.Fatalf("initialize: %v %s (session id %q)", err, r.raw, s.sid)
	}
	t.Cleanup(func() { s.delete() })
	if got := s.status(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); got != http.StatusAccepted {
		t.Fatalf("notifications/initialized: status %d, want 202", got)
	}
	return s
}

// TestAuthProcess runs the bridge with two token variables and an HMAC
// JWT secret: requests without a token are challenged, each principal
// sees only its sessions, the child's environment holds none of the
// secrets' variables, and the log shows none of their values.
func TestAuthProcess(t *testing.T) {
	badchild := testpeers.BuildGo(t, "./testdata/badchild")
	env := append(environWithout(envPrefix),
		"ALICE_TOKEN="+tokenAlice, "BOB_TOKEN="+tokenBob, "JWT_SECRET="+jwtSecret,
		"MCP_BRIDGE_TOKEN_ENVS=ALICE_TOKEN,BOB_TOKEN",
	)
	auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
	p := startBridge(t, env,
		"--jwt-secret-env", "JWT_SECRET", "--jwt-issuer", "https://issuer.example",
		"--public-url", "https://bridge.example/mcp", "--require-scope", "mcp:tools",
		"--tool-deny", "*=fork", "--audit-log", auditFile,
		"--", badchild)

	// No token: 401 with the challenge; the metadata is open.
	resp, err := http.Post(p.URL, "application/json", strings.NewReader(initializeBody))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	wantChallenge := `Bearer scope="mcp:tools", resource_metadata="https://bridge.example/.well-known/oauth-protected-resource/mcp"`
	if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != wantChallenge {
		t.Fatalf("no token: status %d, challenge %q; want 401, %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), wantChallenge)
	}
	// An empty bearer token is an invalid token: 401 and the challenge
	// that starts a client's authorization flow, not 400, which would
	// leave the client nowhere to go. net/http trims the header, so
	// "Bearer " arrives as "Bearer".
	for _, h := range []string{"Bearer ", "Bearer"} {
		req, _ := http.NewRequest(http.MethodPost, p.URL, strings.NewReader(initializeBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", h)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := `Bearer error="invalid_token", error_description="the access token is invalid, expired or not for this server", scope="mcp:tools", resource_metadata="https://bridge.example/.well-known/oauth-protected-resource/mcp"`
		if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != want {
			t.Errorf("Authorization %q: status %d, challenge %q; want 401, %q", h, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), want)
		}
	}
	resp, err = http.Get(p.Base + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil || doc["resource"] != "https://bridge.example/mcp" ||
		!strings.Contains(string(body), `"authorization_servers":["https://issuer.example"]`) {
		t.Fatalf("metadata: %v %s", err, body)
	}

	alice := openSessionAs(t, p.URL, tokenAlice)
	childEnv := alice.textTool("env")
	for _, name := range []string{"ALICE_TOKEN", "BOB_TOKEN", "JWT_SECRET"} {
		if strings.Contains(childEnv, name+"=") {
			t.Errorf("the child sees %s", name)
		}
	}
	for _, secret := range []string{tokenAlice, tokenBob, jwtSecret} {
		if strings.Contains(childEnv, secret) {
			t.Errorf("the child's environment holds a secret of the bridge")
		}
	}

	// The tool policy answers for the child; the audit log has both.
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	if r, err := alice.call(ctx, "fork", map[string]any{}); err != nil || r.Error == nil || !strings.Contains(r.Error.Message, "tool policy") {
		t.Errorf("fork under --tool-deny '*=fork': %v %s", err, r.raw)
	}
	auditLines, err := os.ReadFile(auditFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"principal":"ALICE_TOKEN"`, `"method":"tools/call","tool":"env","outcome":"ok"`, `"tool":"fork","outcome":"denied"`} {
		if !strings.Contains(string(auditLines), want) {
			t.Errorf("the audit log lacks %s:\n%s", want, auditLines)
		}
	}

	// Bob, and alice as a JWT principal, cannot use alice's session.
	bob := &rawSession{t: t, url: p.URL, sid: alice.sid, hc: &http.Client{Transport: bearerTransport{tokenBob, http.DefaultTransport}}}
	if got := bob.status(`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`); got != http.StatusNotFound {
		t.Errorf("bob on alice's session: status %d, want 404", got)
	}
	c := authtest.Claims("https://issuer.example", "ALICE_TOKEN", "https://bridge.example/mcp")
	c["scope"] = "mcp:tools"
	jwtTok := authtest.Sign(t, "HS256", []byte(jwtSecret), "", c)
	asJWT := &rawSession{t: t, url: p.URL, sid: alice.sid, hc: &http.Client{Transport: bearerTransport{jwtTok, http.DefaultTransport}}}
	if got := asJWT.status(`{"jsonrpc":"2.0","id":6,"method":"tools/list"}`); got != http.StatusNotFound {
		t.Errorf("a JWT with sub ALICE_TOKEN on the token's session: status %d, want 404", got)
	}
	jwtSession := openSessionAs(t, p.URL, jwtTok)
	if got := jwtSession.textTool("pid"); got == "" {
		t.Error("the JWT principal's own session does not answer")
	}
	if got := alice.status(`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`); got != http.StatusOK {
		t.Errorf("alice on her session: status %d", got)
	}

	// The refusals are logged, in order: once the last is in, every
	// line before it is too.
	waitLogged(t, p, `msg="request refused: unauthorized" method=POST status=401 reason="no bearer token"`)
	waitLogged(t, p, `msg="request refused" method=POST status=404 principal="ALICE_TOKEN \(https://issuer.example\)"`)
	for _, secret := range []string{tokenAlice, tokenBob, jwtSecret, jwtTok} {
		if strings.Contains(p.Stderr(), secret) {
			t.Errorf("the log shows a secret")
		}
	}
}
