package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/auth/authtest"
	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
)

const (
	aliceToken = "alice-0123456789abcdef-secret"
	bobToken   = "bob-0123456789abcdef-secret"
	eveToken   = "eve-0123456789abcdef-secret" // in a variable the bridge was not told about
	jwtIssuer  = "https://issuer.example"
	publicURL  = "https://bridge.example/mcp"
	prmURL     = "https://bridge.example/.well-known/oauth-protected-resource/mcp"
)

// syncBuffer is a log sink tests read while the bridge writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// authFixture is a bridge that accepts the static tokens of ALICE_TOKEN
// and BOB_TOKEN and RS256 JWTs of jwtIssuer, verified against a JWKS
// served on 127.0.0.1, with the scope mcp:tools required; its log, at
// debug level, goes to log.
type authFixture struct {
	*env
	is   *authtest.Issuer
	jwks *authtest.JWKSServer
	log  *syncBuffer
}

func newAuthFixture(t *testing.T, o httpapi.Options) *authFixture {
	t.Helper()
	return newAuthFixtureBridge(t, o, bridge.Config{})
}

// newAuthFixtureBridge is newAuthFixture with the bridge configured by bc
// (its Logger is the fixture's).
func newAuthFixtureBridge(t *testing.T, o httpapi.Options, bc bridge.Config) *authFixture {
	t.Helper()
	is := authtest.NewIssuer(t)
	jwks := authtest.NewJWKSServer(t, authtest.JWK(t, "k1", &is.RSA.PublicKey))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // stops the JWKS refresh
	logBuf := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	static, err := auth.TokensFromEnv([]string{"ALICE_TOKEN", "BOB_TOKEN"}, func(k string) (string, bool) {
		v, ok := map[string]string{"ALICE_TOKEN": aliceToken, "BOB_TOKEN": bobToken, "EVE_TOKEN": eveToken}[k]
		return v, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	j, err := auth.NewJWT(ctx, auth.JWTConfig{
		JWKSURL: jwks.URL + "/jwks", Issuer: jwtIssuer, Audiences: []string{publicURL},
		RequiredScopes: []string{"mcp:tools"}, Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	o.Auth = auth.Any(static, j)
	o.PublicURL = publicURL
	o.AuthorizationServers = []string{jwtIssuer}
	o.Scopes = []string{"mcp:tools"}
	bc.Logger = log
	e := newEnv(t, envOpts{http: o, bridge: bc})
	return &authFixture{env: e, is: is, jwks: jwks, log: logBuf}
}

// jwt mints an RS256 token with kid k1 and the scope mcp:tools; edit
// changes its claims.
func (f *authFixture) jwt(t *testing.T, sub string, edit func(jwt.MapClaims)) string {
	t.Helper()
	c := authtest.Claims(jwtIssuer, sub, publicURL)
	c["scope"] = "mcp:tools"
	if edit != nil {
		edit(c)
	}
	return authtest.Sign(t, "RS256", f.is.RSA, "k1", c)
}

func bearer(tok string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + tok}
}

func withHeader(h map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for hk, hv := range h {
		out[hk] = hv
	}
	return out
}

// initializeAs starts a session with the given headers.
func (e *env) initializeAs(h map[string]string) string {
	e.t.Helper()
	resp := e.do(req{body: sprintf(initBody, "2025-11-25"), header: h})
	msgs := readMessages(e.t, resp)
	if resp.StatusCode != 200 || len(msgs) != 1 {
		e.t.Fatalf("initialize: status %d, %v", resp.StatusCode, msgs)
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	resp = e.do(req{body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, sid: sid, header: h})
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		e.t.Fatalf("initialized: status %d", resp.StatusCode)
	}
	return sid
}

// TestAttacks is the attack table of authentication (missing, forged,
// expired, foreign and misplaced credentials): every row is refused with
// its status and challenge, and neither the response nor the bridge's log
// shows a credential.
func TestAttacks(t *testing.T) {
	f := newAuthFixture(t, httpapi.Options{MaxBodyBytes: 1 << 10})
	alice := bearer(aliceToken)
	bob := bearer(bobToken)
	sid := f.initializeAs(alice)
	jwtSid := f.initializeAs(bearer(f.jwt(t, "alice@example", nil)))

	// The issuer rotates: a token with the new kid makes the bridge fetch
	// the JWKS again, and is accepted.
	f.jwks.Set(t, authtest.JWK(t, "k1", &f.is.RSA.PublicKey), authtest.JWK(t, "k2", &f.is.RSA2.PublicKey))
	rotated := authtest.Sign(t, "RS256", f.is.RSA2, "k2", withScope(authtest.Claims(jwtIssuer, "alice@example", publicURL)))
	resp := f.do(req{body: list, sid: jwtSid, header: bearer(rotated)})
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("a token signed with the rotated-in key: status %d", resp.StatusCode)
	}
	if n := f.jwks.Fetches.Load(); n != 2 {
		t.Fatalf("%d JWKS fetches, want 2 (start, then the new kid)", n)
	}

	claims := func(edit func(jwt.MapClaims)) jwt.MapClaims {
		c := withScope(authtest.Claims(jwtIssuer, "alice@example", publicURL))
		edit(c)
		return c
	}
	now := time.Now()
	tokens := map[string]string{
		"none":          authtest.None(t, claims(func(jwt.MapClaims) {})),
		"hs256 rsa pub": authtest.Sign(t, "HS256", authtest.PublicPEM(t, &f.is.RSA.PublicKey), "k1", claims(func(jwt.MapClaims) {})),
		"expired":       f.jwt(t, "alice@example", func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Hour).Unix() }),
		"nbf":           f.jwt(t, "alice@example", func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Hour).Unix() }),
		"issuer":        f.jwt(t, "alice@example", func(c jwt.MapClaims) { c["iss"] = "https://evil.example" }),
		"audience":      f.jwt(t, "alice@example", func(c jwt.MapClaims) { c["aud"] = "https://other.example/mcp" }),
		"no exp":        f.jwt(t, "alice@example", func(c jwt.MapClaims) { delete(c, "exp") }),
		"unknown kid":   authtest.Sign(t, "RS256", f.is.Unknown, "k9", claims(func(jwt.MapClaims) {})),
		"tampered":      authtest.Tamper(f.jwt(t, "alice@example", nil)),
		"no scope":      f.jwt(t, "alice@example", func(c jwt.MapClaims) { delete(c, "scope") }),
		"sub=ALICE":     f.jwt(t, "ALICE_TOKEN", nil),
	}
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"` + strings.Repeat("a", 2<<10) + `"}}`

	const invalid = `error="invalid_token"`
	cases := []struct {
		name      string
		r         req
		host      string
		status    int
		challenge []string // each in WWW-Authenticate; nil: no challenge expected
		noError   bool     // the challenge must carry no error code
	}{
		{name: "no token", r: req{body: list, sid: sid}, status: 401, challenge: []string{`resource_metadata="` + prmURL + `"`, `scope="mcp:tools"`}, noError: true},
		{name: "no token on initialize", r: req{body: sprintf(initBody, "2025-11-25")}, status: 401, noError: true, challenge: []string{`resource_metadata="` + prmURL + `"`}},
		{name: "wrong token", r: req{body: list, sid: sid, header: bearer(aliceToken + "x")}, status: 401, challenge: []string{invalid, `resource_metadata="` + prmURL + `"`}},
		{name: "token of an unlisted variable", r: req{body: list, sid: sid, header: bearer(eveToken)}, status: 401, challenge: []string{invalid}},
		{name: "token in the query string", r: req{body: list, sid: sid, query: "access_token=" + aliceToken}, status: 401, challenge: []string{`error="invalid_request"`}},
		{name: "token in the query string next to a header", r: req{body: list, sid: sid, header: alice, query: "access_token=" + aliceToken}, status: 401, challenge: []string{`error="invalid_request"`}},
		{name: "basic auth", r: req{body: list, sid: sid, header: map[string]string{"Authorization": "Basic YWxpY2U6c2VjcmV0"}}, status: 401, noError: true, challenge: []string{`resource_metadata="` + prmURL + `"`}},
		{name: "empty bearer token", r: req{body: list, sid: sid, header: map[string]string{"Authorization": "Bearer "}}, status: 401, challenge: []string{invalid, `resource_metadata="` + prmURL + `"`}},
		{name: "empty bearer token on initialize", r: req{body: sprintf(initBody, "2025-11-25"), header: map[string]string{"Authorization": "Bearer"}}, status: 401, challenge: []string{invalid, `resource_metadata="` + prmURL + `"`}},
		{name: "malformed bearer token", r: req{body: list, sid: sid, header: map[string]string{"Authorization": "Bearer a b"}}, status: 400, challenge: []string{`error="invalid_request"`, `resource_metadata="` + prmURL + `"`}},
		{name: "JWT alg none", r: req{body: list, sid: jwtSid, header: bearer(tokens["none"])}, status: 401, challenge: []string{invalid}},
		{name: "HS256 signed with the RSA public key", r: req{body: list, sid: jwtSid, header: bearer(tokens["hs256 rsa pub"])}, status: 401, challenge: []string{invalid}},
		{name: "JWT expired", r: req{body: list, sid: jwtSid, header: bearer(tokens["expired"])}, status: 401, challenge: []string{invalid}},
		{name: "JWT nbf in the future", r: req{body: list, sid: jwtSid, header: bearer(tokens["nbf"])}, status: 401, challenge: []string{invalid}},
		{name: "JWT wrong issuer", r: req{body: list, sid: jwtSid, header: bearer(tokens["issuer"])}, status: 401, challenge: []string{invalid}},
		{name: "JWT wrong audience", r: req{body: list, sid: jwtSid, header: bearer(tokens["audience"])}, status: 401, challenge: []string{invalid}},
		{name: "JWT missing exp", r: req{body: list, sid: jwtSid, header: bearer(tokens["no exp"])}, status: 401, challenge: []string{invalid}},
		{name: "JWT unknown kid after a JWKS refresh", r: req{body: list, sid: jwtSid, header: bearer(tokens["unknown kid"])}, status: 401, challenge: []string{invalid}},
		{name: "JWT tampered signature", r: req{body: list, sid: jwtSid, header: bearer(tokens["tampered"])}, status: 401, challenge: []string{invalid}},
		{name: "JWT without the required scope", r: req{body: list, sid: jwtSid, header: bearer(tokens["no scope"])}, status: 403, challenge: []string{`error="insufficient_scope"`, `scope="mcp:tools"`, `resource_metadata="` + prmURL + `"`}},
		{name: "another principal's session: POST", r: req{body: list, sid: sid, header: bob}, status: 404},
		{name: "another principal's session: GET", r: req{method: "GET", sid: sid, header: bob}, status: 404},
		{name: "another principal's session: resume", r: req{method: "GET", sid: sid, header: withHeader(bob, "Last-Event-ID", "1_1")}, status: 404},
		{name: "another principal's session: DELETE", r: req{method: "DELETE", sid: sid, header: bob}, status: 404},
		{name: "a JWT whose sub is a token variable's name", r: req{body: list, sid: sid, header: bearer(tokens["sub=ALICE"])}, status: 404},
		{name: "a static token on a JWT principal's session", r: req{body: list, sid: jwtSid, header: alice}, status: 404},
		{name: "bad Origin", r: req{body: list, sid: sid, header: withHeader(alice, "Origin", "https://evil.example")}, status: 403},
		{name: "bad Origin without a token", r: req{body: list, sid: sid, header: map[string]string{"Origin": "https://evil.example"}}, status: 403},
		{name: "rebinding Host", r: req{body: list, sid: sid, header: alice}, host: "evil.example.com", status: 403},
		{name: "oversize body", r: req{body: big, sid: sid, header: alice}, status: 413},
		{name: "oversize body without a token", r: req{body: big, sid: sid}, status: 401},
	}
	secrets := []string{aliceToken, bobToken, eveToken}
	for _, tok := range tokens {
		secrets = append(secrets, tok)
		if sig := tok[strings.LastIndex(tok, ".")+1:]; sig != "" { // alg none has none
			secrets = append(secrets, sig)
		}
	}
	secrets = append(secrets, rotated)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r
			r.host = tc.host
			resp := f.do(r)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d; body %s", resp.StatusCode, tc.status, body)
			}
			ch := resp.Header.Get("WWW-Authenticate")
			for _, want := range tc.challenge {
				if !strings.HasPrefix(ch, "Bearer ") || !strings.Contains(ch, want) {
					t.Errorf("WWW-Authenticate %q, want %s", ch, want)
				}
			}
			if tc.noError && strings.Contains(ch, "error=") {
				t.Errorf("WWW-Authenticate %q: a request without a token gets no error code", ch)
			}
			if tc.status == 404 && !strings.Contains(string(body), fmt.Sprint(bridge.CodeSessionNotFound)) {
				t.Errorf("another principal's session: body %s, want exactly the unknown-session answer", body)
			}
			for _, s := range secrets {
				if strings.Contains(string(body), s) || strings.Contains(ch, s) {
					t.Fatalf("the response shows a credential: %s / %s", ch, body)
				}
			}
		})
	}

	// Nothing above touched alice's session: it still answers her.
	if resp := f.do(req{body: list, sid: sid, header: alice}); resp.StatusCode != 200 {
		t.Fatalf("alice's own session after the attacks: status %d", resp.StatusCode)
	}
	logged := f.log.String()
	for _, s := range secrets {
		if strings.Contains(logged, s) {
			t.Fatalf("the log shows a credential %q", s)
		}
	}
	if !strings.Contains(logged, "wrong audience") || !strings.Contains(logged, "token expired") || !strings.Contains(logged, "unknown key id") {
		t.Errorf("the log does not say why tokens were refused:\n%s", logged)
	}
}

const list = `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`

func withScope(c jwt.MapClaims) jwt.MapClaims {
	c["scope"] = "mcp:tools"
	return c
}

// TestAuthPrincipals: each principal reaches its own sessions with every
// method, and the same principal may change its token form only within
// its own identity.
func TestAuthPrincipals(t *testing.T) {
	f := newAuthFixture(t, httpapi.Options{})
	alice, bob := bearer(aliceToken), bearer(bobToken)
	sa := f.initializeAs(alice)
	sb := f.initializeAs(bob)
	for _, tc := range []struct {
		sid    string
		h      map[string]string
		status int
	}{
		{sa, alice, 200}, {sb, bob, 200}, {sa, bob, 404}, {sb, alice, 404},
	} {
		resp := f.do(req{body: list, sid: tc.sid, header: tc.h})
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("tools/list: status %d, want %d", resp.StatusCode, tc.status)
		}
	}
	// Every request is authenticated, the notification and the DELETE too.
	for _, r := range []req{
		{body: `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`, sid: sa},
		{method: "GET", sid: sa},
		{method: "DELETE", sid: sa},
	} {
		resp := f.do(r)
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Errorf("%s without a token: status %d, want 401", r.method, resp.StatusCode)
		}
	}
	resp := f.do(req{method: "DELETE", sid: sa, header: alice})
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("DELETE by the owner: %d", resp.StatusCode)
	}
	// Unauthenticated: health and metadata.
	for _, path := range []string{"/healthz", "/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		resp, err := f.client.Get(f.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: status %d", path, resp.StatusCode)
		}
		if path == "/healthz" {
			continue
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: content type %q", path, ct)
		}
		var doc struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			ScopesSupported      []string `json:"scopes_supported"`
			BearerMethods        []string `json:"bearer_methods_supported"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("%s: %v: %s", path, err, body)
		}
		if doc.Resource != publicURL || fmt.Sprint(doc.AuthorizationServers) != "["+jwtIssuer+"]" ||
			fmt.Sprint(doc.ScopesSupported) != "[mcp:tools]" || fmt.Sprint(doc.BearerMethods) != "[header]" {
			t.Errorf("%s: %s", path, body)
		}
	}
}

// TestNoAuthNoMetadata: without a verifier there is no metadata to serve.
func TestNoAuthNoMetadata(t *testing.T) {
	e := newEnv(t, envOpts{})
	resp, err := e.client.Get(e.srv.URL + "/.well-known/oauth-protected-resource")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("status %d, want 404", resp.StatusCode)
	}
}

func TestCORS(t *testing.T) {
	f := newAuthFixture(t, httpapi.Options{AllowedOrigins: []string{"https://app.example.com"}})
	preflight := func(origin string) *http.Response {
		r, _ := http.NewRequest(http.MethodOptions, f.url, nil)
		r.Header.Set("Origin", origin)
		r.Header.Set("Access-Control-Request-Method", "POST")
		// Sorted and lowercase, as the Fetch standard has browsers send it.
		r.Header.Set("Access-Control-Request-Headers", "authorization,content-type,last-event-id,mcp-protocol-version,mcp-session-id")
		resp, err := f.client.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, origin := range []string{"https://app.example.com", "http://localhost:5173", "http://127.0.0.1:8000"} {
		resp := preflight(origin)
		h := resp.Header
		if resp.StatusCode/100 != 2 || h.Get("Access-Control-Allow-Origin") != origin {
			t.Fatalf("preflight from %s: status %d, allow-origin %q", origin, resp.StatusCode, h.Get("Access-Control-Allow-Origin"))
		}
		allowed := strings.ToLower(h.Get("Access-Control-Allow-Headers"))
		for _, want := range []string{"authorization", "content-type", "mcp-protocol-version", "mcp-session-id", "last-event-id"} {
			if !strings.Contains(allowed, want) {
				t.Errorf("preflight from %s: allowed headers %q lack %s", origin, allowed, want)
			}
		}
		if h.Get("Access-Control-Max-Age") != "600" || h.Get("Access-Control-Allow-Credentials") != "" {
			t.Errorf("preflight from %s: max-age %q, credentials %q", origin, h.Get("Access-Control-Max-Age"), h.Get("Access-Control-Allow-Credentials"))
		}
	}
	// A refused origin: 403, and an Access-Control-Allow-Origin that
	// grants nothing but carries the reason to the browser's console;
	// logged at warn with the hint, once a minute per origin.
	for range 3 {
		resp := preflight("https://evil.example")
		if acao := resp.Header.Get("Access-Control-Allow-Origin"); resp.StatusCode != 403 ||
			acao != "refused-by-mcp-bridge:allow-it-with--allow-origin=https://evil.example" || resp.Header.Get("Access-Control-Allow-Methods") != "" {
			t.Errorf("preflight from a refused origin: status %d, allow-origin %q, allow-methods %q", resp.StatusCode, acao, resp.Header.Get("Access-Control-Allow-Methods"))
		}
	}
	logged := f.log.String()
	warn := `level=WARN msg="request refused: origin not allowed" origin=https://evil.example method=OPTIONS path=/mcp hint="to allow this origin, start the bridge with --allow-origin https://evil.example"`
	if n := strings.Count(logged, warn); n != 1 {
		t.Errorf("the refusals are logged at warn %d times, want once:\n%s", n, logged)
	}
	if n := strings.Count(logged, `level=DEBUG msg="request refused: origin not allowed" origin=https://evil.example`); n != 2 {
		t.Errorf("the refusals past the first are logged at debug %d times, want 2:\n%s", n, logged)
	}
	// Actual responses expose the session id and the challenge, errors
	// included.
	for _, h := range []map[string]string{bearer(aliceToken), {}} {
		resp := f.do(req{body: sprintf(initBody, "2025-11-25"), header: withHeader(h, "Origin", "https://app.example.com")})
		resp.Body.Close()
		exposed := strings.ToLower(resp.Header.Get("Access-Control-Expose-Headers"))
		if !strings.Contains(exposed, "mcp-session-id") || !strings.Contains(exposed, "www-authenticate") {
			t.Errorf("status %d: exposed headers %q", resp.StatusCode, exposed)
		}
		if resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" {
			t.Errorf("status %d: allow-origin %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
		}
	}
}

func TestPrincipalLimits(t *testing.T) {
	t.Run("sessions", func(t *testing.T) {
		f := newAuthFixture(t, httpapi.Options{MaxSessionsPerPrincipal: 1})
		alice := bearer(aliceToken)
		sid := f.initializeAs(alice)
		resp := f.do(req{body: sprintf(initBody, "2025-11-25"), header: alice})
		checkRetry(t, resp)
		f.initializeAs(bearer(bobToken)) // others are not affected
		resp = f.do(req{method: "DELETE", sid: sid, header: alice})
		resp.Body.Close()
		f.initializeAs(alice) // the slot came back with the DELETE
	})
	t.Run("in flight", func(t *testing.T) {
		f := newAuthFixture(t, httpapi.Options{MaxInFlightPerPrincipal: 1})
		alice := bearer(aliceToken)
		sid := f.initializeAs(alice)
		sidB := f.initializeAs(bearer(bobToken))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// The response headers come once the call is with the child
		// (auto mode turns a quiet call into a stream): it is in flight.
		slow := f.doCtx(ctx, req{body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"ms":60000}}}`, sid: sid, header: alice})
		defer slow.Body.Close()
		checkRetry(t, f.do(req{body: list, sid: sid, header: alice}))
		if resp := f.do(req{body: list, sid: sidB, header: bearer(bobToken)}); resp.StatusCode != 200 {
			t.Errorf("another principal: status %d", resp.StatusCode)
		}
		// A GET stream is not a request in flight.
		get := f.doCtx(ctx, req{method: "GET", sid: sid, header: alice})
		defer get.Body.Close()
		if get.StatusCode != 200 {
			t.Errorf("GET stream while a POST is in flight: %d", get.StatusCode)
		}
	})
	t.Run("rate", func(t *testing.T) {
		var clock atomic.Int64
		clock.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
		now := func() time.Time { return time.Unix(0, clock.Load()) }
		f := newAuthFixture(t, httpapi.Options{RateLimit: 1, RateBurst: 3, Now: now})
		alice := bearer(aliceToken)
		sid := f.initializeAs(alice) // two requests of the burst of three
		if resp := f.do(req{body: list, sid: sid, header: alice}); resp.StatusCode != 200 {
			t.Fatalf("third request: %d", resp.StatusCode)
		}
		resp := f.do(req{body: list, sid: sid, header: alice})
		if resp.Header.Get("Retry-After") != "1" {
			t.Errorf("Retry-After %q, want 1 (one request a second)", resp.Header.Get("Retry-After"))
		}
		checkRetry(t, resp)
		if resp := f.do(req{body: list, sid: sid, header: bearer(bobToken)}); resp.StatusCode == 429 {
			t.Error("bob is limited by alice's rate")
		}
		clock.Add(int64(time.Second))
		if resp := f.do(req{body: list, sid: sid, header: alice}); resp.StatusCode != 200 {
			t.Fatalf("a second later: %d", resp.StatusCode)
		}
	})
}

func checkRetry(t *testing.T, resp *http.Response) {
	t.Helper()
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("status %d, Retry-After %q, want 429 with Retry-After; %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
}

// TestToolPolicyAndAudit: a denied tools/call is answered by the bridge
// and never reaches the child; tools/list shows each principal only what
// it may call; every request gets one audit line.
func TestToolPolicyAndAudit(t *testing.T) {
	rule := func(s string, deny bool) auth.ToolRule {
		r, err := auth.ParseToolRule(s, deny)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, withArgs := range []bool{true, false} {
		t.Run(fmt.Sprintf("arguments %v", withArgs), func(t *testing.T) {
			audit := &syncBuffer{}
			f := newAuthFixture(t, httpapi.Options{
				ToolPolicy:     auth.NewToolPolicy([]auth.ToolRule{rule("*=crash", true), rule("BOB_TOKEN=echo", false)}),
				Audit:          audit,
				AuditArguments: withArgs,
			})
			alice, bob := bearer(aliceToken), bearer(bobToken)
			sa, sb := f.initializeAs(alice), f.initializeAs(bob)
			tools := func(sid string, h map[string]string) string {
				msgs := readMessages(t, f.do(req{body: list, sid: sid, header: h}))
				var names []string
				for _, tl := range msgs[0]["result"].(map[string]any)["tools"].([]any) {
					names = append(names, tl.(map[string]any)["name"].(string))
				}
				return strings.Join(names, ",")
			}
			if got := tools(sb, bob); got != "echo" {
				t.Errorf("bob's tools: %s, want echo", got)
			}
			if got := tools(sa, alice); strings.Contains(got, "crash") || !strings.Contains(got, "echo") || !strings.Contains(got, "pid") {
				t.Errorf("alice's tools: %s", got)
			}
			call := func(sid string, h map[string]string, tool string, args string) map[string]any {
				body := `{"jsonrpc":"2.0","id":"c-` + tool + `","method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
				resp := f.do(req{body: body, sid: sid, header: h})
				msgs := readMessages(t, resp)
				if resp.StatusCode != 200 || len(msgs) != 1 {
					t.Fatalf("%s: status %d, %v", tool, resp.StatusCode, msgs)
				}
				return msgs[0]
			}
			// Had it reached the child, crash would have ended the session.
			for _, c := range []struct {
				sid  string
				h    map[string]string
				tool string
			}{{sa, alice, "crash"}, {sb, bob, "pid"}, {sb, bob, "crash"}} {
				m := call(c.sid, c.h, c.tool, `{"code":3}`)
				e, _ := m["error"].(map[string]any)
				if e == nil || fmt.Sprint(e["code"]) != fmt.Sprint(bridge.CodeInvalidParams) || m["id"] != "c-"+c.tool {
					t.Errorf("%s: %v, want JSON-RPC error %d", c.tool, m, bridge.CodeInvalidParams)
				}
			}
			if got := text(call(sa, alice, "echo", `{"message":"still here"}`)); got != "still here" {
				t.Errorf("alice's session after the denied crash: %q", got)
			}
			if got := text(call(sb, bob, "echo", `{"message":"bob too"}`)); got != "bob too" {
				t.Errorf("bob's echo: %q", got)
			}

			type line struct {
				Principal, Session, Method, Tool, Outcome, Time string
				ErrorCode                                       int             `json:"error_code"`
				DurationMS                                      *float64        `json:"duration_ms"`
				Arguments                                       json.RawMessage `json:"arguments"`
			}
			var lines []line
			for _, l := range strings.Split(strings.TrimSpace(audit.String()), "\n") {
				var ln line
				if err := json.Unmarshal([]byte(l), &ln); err != nil {
					t.Fatalf("audit line %q: %v", l, err)
				}
				if ln.Time == "" || ln.DurationMS == nil || ln.Session == "" {
					t.Errorf("audit line without time, duration or session: %s", l)
				}
				lines = append(lines, ln)
			}
			summary := func(l line) string {
				return l.Principal + " " + l.Method + " " + l.Tool + " " + l.Outcome
			}
			var got []string
			for _, l := range lines {
				got = append(got, summary(l))
			}
			want := []string{
				"ALICE_TOKEN initialize  ok", "BOB_TOKEN initialize  ok",
				"BOB_TOKEN tools/list  ok", "ALICE_TOKEN tools/list  ok",
				"ALICE_TOKEN tools/call crash denied", "BOB_TOKEN tools/call pid denied", "BOB_TOKEN tools/call crash denied",
				"ALICE_TOKEN tools/call echo ok", "BOB_TOKEN tools/call echo ok",
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("audit:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			echo := lines[len(lines)-1]
			if withArgs != (string(echo.Arguments) == `{"message":"bob too"}`) {
				t.Errorf("arguments logged %s with AuditArguments %v", echo.Arguments, withArgs)
			}
			if strings.Contains(audit.String(), aliceToken) || strings.Contains(audit.String(), bobToken) {
				t.Error("the audit log shows a token")
			}
		})
	}
}

// TestModernPolicyAuditMetrics: a 2026-07-28 request meets the tool policy,
// the audit log and the metrics exactly as a session's does, labelled with
// its era; its lists are "private" to the principal.
func TestModernPolicyAuditMetrics(t *testing.T) {
	rule, err := auth.ParseToolRule("BOB_TOKEN=echo", false)
	if err != nil {
		t.Fatal(err)
	}
	audit := &syncBuffer{}
	f := newAuthFixture(t, httpapi.Options{ToolPolicy: auth.NewToolPolicy([]auth.ToolRule{rule}), Audit: audit, MetricsPublic: true})
	bob := bearer(bobToken)
	modernReq := func(id int, method, params string, name string) req {
		h := map[string]string{"Mcp-Method": method, "Authorization": bob["Authorization"]}
		if name != "" {
			h["Mcp-Name"] = name
		}
		return req{body: modern(id, method, params), version: "2026-07-28", header: h}
	}
	msgs := readMessages(t, f.do(modernReq(1, "tools/list", "", "")))
	res := msgs[0]["result"].(map[string]any)
	var names []string
	for _, tl := range res["tools"].([]any) {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	if strings.Join(names, ",") != "echo" || res["cacheScope"] != "private" || res["resultType"] != "complete" {
		t.Errorf("bob's modern tools/list: %v, cacheScope %v, resultType %v", names, res["cacheScope"], res["resultType"])
	}
	// crash is denied: had it reached the child, the child would be gone.
	msgs = readMessages(t, f.do(modernReq(2, "tools/call", `"name":"crash","arguments":{},`, "crash")))
	if e, _ := msgs[0]["error"].(map[string]any); e == nil || fmt.Sprint(e["code"]) != fmt.Sprint(bridge.CodeInvalidParams) {
		t.Errorf("denied call: %v", msgs[0])
	}
	msgs = readMessages(t, f.do(modernReq(3, "tools/call", `"name":"echo","arguments":{"message":"modern bob"},`, "echo")))
	if got := text(msgs[0]); got != "modern bob" {
		t.Errorf("echo: %v", msgs[0])
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(audit.String()), "\n") {
		var ln struct{ Principal, Era, Method, Tool, Outcome, Session string }
		if err := json.Unmarshal([]byte(l), &ln); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		got = append(got, strings.Join([]string{ln.Principal, ln.Era, ln.Method, ln.Tool, ln.Outcome, ln.Session}, " "))
	}
	want := []string{
		"BOB_TOKEN 2026-07-28 tools/list  ok ",
		"BOB_TOKEN 2026-07-28 tools/call crash denied ",
		"BOB_TOKEN 2026-07-28 tools/call echo ok ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	resp, err := http.Get(strings.TrimSuffix(f.url, "/mcp") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := map[string]float64{}
	for _, l := range strings.Split(string(body), "\n") {
		if i := strings.LastIndexByte(l, ' '); i > 0 && !strings.HasPrefix(l, "#") {
			v, _ := strconv.ParseFloat(l[i+1:], 64)
			m[l[:i]] = v
		}
	}
	for series, want := range map[string]float64{
		`mcp_bridge_requests_total{era="2026-07-28",method="tools/call",outcome="ok"}`:    1,
		`mcp_bridge_requests_total{era="2026-07-28",method="tools/call",outcome="error"}`: 1,
		`mcp_bridge_requests_total{era="2026-07-28",method="tools/list",outcome="ok"}`:    1,
		`mcp_bridge_requests_total{era="2025",method="tools/call",outcome="ok"}`:          0,
	} {
		if m[series] != want {
			t.Errorf("%s = %v, want %v", series, m[series], want)
		}
	}
}
