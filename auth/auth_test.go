package auth_test

import (
	"context"
	"crypto"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/auth/authtest"
)

const (
	issuer   = "https://issuer.example"
	audience = "https://bridge.example/mcp"
	tokenA   = "tok-A-0123456789abcdef"
	tokenB   = "tok-B-0123456789abcdef"
)

func request(authz ...string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
	for _, a := range authz {
		r.Header.Add("Authorization", a)
	}
	return r
}

func code(err error) string {
	var e *auth.Error
	if !errors.As(err, &e) {
		return "not an *auth.Error: " + err.Error()
	}
	if e.Code == "" {
		return "none"
	}
	return e.Code
}

func TestBearerToken(t *testing.T) {
	tests := []struct {
		name  string
		r     *http.Request
		token string
		code  string // "" when accepted
	}{
		{"bearer", request("Bearer abc.def-ghi_~+/=="), "abc.def-ghi_~+/==", ""},
		{"scheme case-insensitive", request("bearer abc"), "abc", ""},
		{"no header", request(), "", "none"},
		{"basic", request("Basic dXNlcjpwYXNz"), "", "none"},
		// An empty token is an invalid one (401), not a malformed request
		// (400): a client starts its authorization flow only on 401.
		{"empty bearer", request("Bearer "), "", auth.CodeInvalidToken},
		{"empty credentials", request("Bearer"), "", auth.CodeInvalidToken},
		{"only spaces after the scheme", request("Bearer    "), "", auth.CodeInvalidToken},
		{"two headers", request("Bearer a", "Bearer b"), "", auth.CodeInvalidRequest},
		{"space inside", request("Bearer a b"), "", auth.CodeInvalidRequest},
		{"= inside", request("Bearer a=b"), "", auth.CodeInvalidRequest},
		{"query access_token", httptest.NewRequest("GET", "http://h/mcp?access_token=abc", nil), "", auth.CodeInvalidRequest},
		{"query token next to a header", func() *http.Request {
			r := httptest.NewRequest("GET", "http://h/mcp?Token=abc", nil)
			r.Header.Set("Authorization", "Bearer abc")
			return r
		}(), "", auth.CodeInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := auth.BearerToken(tt.r)
			if tt.code == "" {
				if err != nil || tok != tt.token {
					t.Fatalf("got %q, %v; want %q", tok, err, tt.token)
				}
				return
			}
			if err == nil || code(err) != tt.code {
				t.Fatalf("got %q, %v; want refusal %s", tok, err, tt.code)
			}
		})
	}
}

func TestTokensFromEnv(t *testing.T) {
	env := map[string]string{
		"A": tokenA, "B": tokenB, "EMPTY": "", "SHORT": "s3cr3t", "SPACE": "sup3rs3cr3t with spaces", "DUP": tokenA,
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		names []string
		want  string // in the error; "" for success
	}{
		{[]string{"A", "B"}, ""},
		// A name is shown only when its variable is set: one that is not
		// may be the token itself, given in the name's place.
		{[]string{"A", "MISSING"}, "the 2nd name given is not a variable set in the environment: give the NAME of a variable"},
		{[]string{"abcdef0123456789secret"}, "the name given is not a variable set"},
		{[]string{"EMPTY"}, "EMPTY is empty"},
		{[]string{"SHORT"}, "SHORT is shorter"},
		{[]string{"SPACE"}, "SPACE has characters"},
		{[]string{"A", "DUP"}, "A and DUP hold the same token"},
		{[]string{"BAD-NAME"}, "the name given is not a valid variable name: give the NAME of a variable"},
		{[]string{"A", "B", "0123-4567-secret"}, "the 3rd name given is not a valid variable name"},
		{[]string{"A", "A"}, "A is named twice"},
		{nil, "no token variables"},
	}
	for _, tt := range tests {
		st, err := auth.TokensFromEnv(tt.names, lookup)
		if tt.want == "" {
			if err != nil {
				t.Errorf("%v: %v", tt.names, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want %q", tt.names, err, tt.want)
			continue
		}
		_ = st
		for _, v := range env {
			if v != "" && strings.Contains(err.Error(), v) {
				t.Errorf("%v: the error shows a value: %v", tt.names, err)
			}
		}
		for _, name := range tt.names {
			if _, set := env[name]; !set && strings.Contains(err.Error(), name) {
				t.Errorf("%v: the error shows %q, which names no variable that is set: %v", tt.names, name, err)
			}
		}
	}
}

func TestStaticTokens(t *testing.T) {
	st, err := auth.TokensFromEnv([]string{"A", "B"}, func(k string) (string, bool) {
		return map[string]string{"A": tokenA, "B": tokenB}[k], true
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, header, principal, code string
	}{
		{"first", "Bearer " + tokenA, "A", ""},
		{"second", "Bearer " + tokenB, "B", ""},
		{"wrong", "Bearer " + tokenA + "x", "", auth.CodeInvalidToken},
		{"prefix", "Bearer " + tokenA[:10], "", auth.CodeInvalidToken},
		{"none", "", "", "none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := request()
			if tt.header != "" {
				r = request(tt.header)
			}
			p, err := st.Verify(r)
			if tt.code == "" {
				if err != nil || p.Name != tt.principal || p.Method != auth.MethodToken {
					t.Fatalf("got %+v, %v; want principal %s", p, err, tt.principal)
				}
				return
			}
			if err == nil || code(err) != tt.code {
				t.Fatalf("got %+v, %v; want %s", p, err, tt.code)
			}
			if strings.Contains(err.Error(), tokenA[:10]) {
				t.Errorf("the error shows the token: %v", err)
			}
		})
	}
}

// jwtCase is one token and what the verifier must say of it.
type jwtCase struct {
	name  string
	token string
	code  string // "" when accepted
	sub   string // the principal when accepted
}

func runJWT(t *testing.T, v auth.Verifier, cases []jwtCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := v.Verify(request("Bearer " + tc.token))
			if tc.code == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if p.Name != tc.sub || p.Method != auth.MethodJWT || p.Issuer != issuer {
					t.Fatalf("principal %+v, want sub %s of %s", p, tc.sub, issuer)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted as %+v, want %s", p, tc.code)
			}
			if code(err) != tc.code {
				t.Fatalf("error %v, want %s", err, tc.code)
			}
			// No part of the token is in the error.
			for _, part := range strings.Split(tc.token, ".") {
				if len(part) >= 8 && strings.Contains(err.Error(), part) {
					t.Fatalf("error %q shows part of the token", err)
				}
			}
		})
	}
}

func TestJWTHMAC(t *testing.T) {
	is := authtest.NewIssuer(t)
	v, err := auth.NewJWT(context.Background(), auth.JWTConfig{Secret: is.Secret, Issuer: issuer, Audiences: []string{audience}})
	if err != nil {
		t.Fatal(err)
	}
	good := authtest.Claims(issuer, "alice", audience)
	with := func(k string, val any) jwt.MapClaims {
		c := authtest.Claims(issuer, "alice", audience)
		if val == nil {
			delete(c, k)
		} else {
			c[k] = val
		}
		return c
	}
	hs := func(c jwt.MapClaims) string { return authtest.Sign(t, "HS256", is.Secret, "", c) }
	now := time.Now()
	runJWT(t, v, []jwtCase{
		{name: "HS256", token: hs(good), sub: "alice"},
		{name: "HS512", token: authtest.Sign(t, "HS512", is.Secret, "", good), sub: "alice"},
		{name: "audience in a list", token: hs(with("aud", []string{"other", audience})), sub: "alice"},
		{name: "audience as a string", token: hs(with("aud", audience)), sub: "alice"},
		{name: "expired within leeway", token: hs(with("exp", now.Add(-10*time.Second).Unix())), sub: "alice"},
		{name: "alg none", token: authtest.None(t, good), code: auth.CodeInvalidToken},
		{name: "wrong secret", token: authtest.Sign(t, "HS256", []byte("another secret of at least 32 bytes!"), "", good), code: auth.CodeInvalidToken},
		{name: "RS256 where HMAC is configured", token: authtest.Sign(t, "RS256", is.RSA, "", good), code: auth.CodeInvalidToken},
		{name: "tampered signature", token: authtest.Tamper(hs(good)), code: auth.CodeInvalidToken},
		{name: "expired", token: hs(with("exp", now.Add(-time.Hour).Unix())), code: auth.CodeInvalidToken},
		{name: "missing exp", token: hs(with("exp", nil)), code: auth.CodeInvalidToken},
		{name: "nbf in the future", token: hs(with("nbf", now.Add(time.Hour).Unix())), code: auth.CodeInvalidToken},
		{name: "iat in the future", token: hs(with("iat", now.Add(time.Hour).Unix())), code: auth.CodeInvalidToken},
		{name: "wrong issuer", token: hs(with("iss", "https://evil.example")), code: auth.CodeInvalidToken},
		{name: "missing issuer", token: hs(with("iss", nil)), code: auth.CodeInvalidToken},
		{name: "wrong audience", token: hs(with("aud", "https://other.example/mcp")), code: auth.CodeInvalidToken},
		{name: "missing audience", token: hs(with("aud", nil)), code: auth.CodeInvalidToken},
		{name: "missing sub", token: hs(with("sub", nil)), code: auth.CodeInvalidToken},
		{name: "not a JWT", token: "abcdefghijklmnop", code: auth.CodeInvalidToken},
		{name: "many dots", token: strings.Repeat(".", 1000), code: auth.CodeInvalidToken},
		{name: "non-canonical base64 in the signature", token: slackBits(hs(good)), code: auth.CodeInvalidToken},
	})
}

// TestJWTAlgorithmConfusion: with an RSA public key configured, a token
// signed with HS256 using that public key's bytes as the secret (the
// classic confusion attack) is refused, as are alg none and EC tokens.
func TestJWTAlgorithmConfusion(t *testing.T) {
	is := authtest.NewIssuer(t)
	pemBytes := authtest.PublicPEM(t, &is.RSA.PublicKey)
	keys, err := auth.ParsePublicKeysPEM(pemBytes)
	if err != nil {
		t.Fatal(err)
	}
	v, err := auth.NewJWT(context.Background(), auth.JWTConfig{PublicKeys: keys, Issuer: issuer, Audiences: []string{audience}})
	if err != nil {
		t.Fatal(err)
	}
	good := authtest.Claims(issuer, "bob", audience)
	runJWT(t, v, []jwtCase{
		{name: "RS256", token: authtest.Sign(t, "RS256", is.RSA, "", good), sub: "bob"},
		{name: "PS256", token: authtest.Sign(t, "PS256", is.RSA, "", good), sub: "bob"},
		{name: "HS256 signed with the RSA public key", token: authtest.Sign(t, "HS256", pemBytes, "", good), code: auth.CodeInvalidToken},
		{name: "alg none", token: authtest.None(t, good), code: auth.CodeInvalidToken},
		{name: "ES256 with an unconfigured key", token: authtest.Sign(t, "ES256", is.EC, "", good), code: auth.CodeInvalidToken},
		{name: "RS256 with another key", token: authtest.Sign(t, "RS256", is.Unknown, "", good), code: auth.CodeInvalidToken},
	})
}

func TestJWTKeyTypes(t *testing.T) {
	is := authtest.NewIssuer(t)
	pems := append(authtest.PublicPEM(t, &is.EC.PublicKey), authtest.PublicPEM(t, is.Ed.Public())...)
	keys, err := auth.ParsePublicKeysPEM(pems)
	if err != nil || len(keys) != 2 {
		t.Fatalf("%d keys, %v", len(keys), err)
	}
	v, err := auth.NewJWT(context.Background(), auth.JWTConfig{PublicKeys: keys, Issuer: issuer, Audiences: []string{audience}})
	if err != nil {
		t.Fatal(err)
	}
	good := authtest.Claims(issuer, "carol", audience)
	runJWT(t, v, []jwtCase{
		{name: "ES256", token: authtest.Sign(t, "ES256", is.EC, "", good), sub: "carol"},
		{name: "EdDSA", token: authtest.Sign(t, "EdDSA", is.Ed, "", good), sub: "carol"},
		{name: "RS256 without an RSA key", token: authtest.Sign(t, "RS256", is.RSA, "", good), code: auth.CodeInvalidToken},
	})
}

func TestParsePublicKeysPEM(t *testing.T) {
	is := authtest.NewIssuer(t)
	if _, err := auth.ParsePublicKeysPEM([]byte("not PEM")); err == nil {
		t.Error("no PEM: accepted")
	}
	priv := []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
	if _, err := auth.ParsePublicKeysPEM(priv); err == nil || !strings.Contains(err.Error(), "PRIVATE KEY") {
		t.Errorf("a private key: %v, want refused", err)
	}
	dir := t.TempDir()
	f := filepath.Join(dir, "k.pem")
	if err := os.WriteFile(f, authtest.PublicPEM(t, &is.RSA.PublicKey), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(f)
	if keys, err := auth.ParsePublicKeysPEM(b); err != nil || len(keys) != 1 {
		t.Errorf("RSA: %v", err)
	}
}

func TestJWTConfig(t *testing.T) {
	is := authtest.NewIssuer(t)
	ok := auth.JWTConfig{Secret: is.Secret, Issuer: issuer, Audiences: []string{audience}}
	tests := []struct {
		name string
		mod  func(*auth.JWTConfig)
		want string
	}{
		{"no issuer", func(c *auth.JWTConfig) { c.Issuer = "" }, "no issuer"},
		{"no audience", func(c *auth.JWTConfig) { c.Audiences = nil }, "no audience"},
		{"short secret", func(c *auth.JWTConfig) { c.Secret = []byte("short") }, "at least 32"},
		{"two key sources", func(c *auth.JWTConfig) { c.PublicKeys = []crypto.PublicKey{&is.RSA.PublicKey} }, "exactly one key source"},
		{"http JWKS", func(c *auth.JWTConfig) { c.Secret = nil; c.JWKSURL = "http://idp.example/jwks" }, "want https"},
		{"JWKS URL with credentials", func(c *auth.JWTConfig) { c.Secret = nil; c.JWKSURL = "https://u:hunter2@idp.example/jwks" }, "credentials"},
	}
	for _, tt := range tests {
		c := ok
		tt.mod(&c)
		_, err := auth.NewJWT(context.Background(), c)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the error shows a secret: %v", tt.name, err)
		}
	}
}

func TestJWTScopes(t *testing.T) {
	is := authtest.NewIssuer(t)
	v, err := auth.NewJWT(context.Background(), auth.JWTConfig{
		Secret: is.Secret, Issuer: issuer, Audiences: []string{audience}, RequiredScopes: []string{"mcp:tools", "mcp:read"},
	})
	if err != nil {
		t.Fatal(err)
	}
	sign := func(k string, val any) string {
		c := authtest.Claims(issuer, "dave", audience)
		if k != "" {
			c[k] = val
		}
		return authtest.Sign(t, "HS256", is.Secret, "", c)
	}
	tests := []struct {
		name  string
		token string
		code  string
	}{
		{"scope string", sign("scope", "openid mcp:read mcp:tools"), ""},
		{"scp array", sign("scp", []string{"mcp:tools", "mcp:read"}), ""},
		{"scp string", sign("scp", "mcp:tools mcp:read"), ""},
		{"one missing", sign("scope", "mcp:tools"), auth.CodeInsufficientScope},
		{"none", sign("", nil), auth.CodeInsufficientScope},
		{"bad scope type", sign("scope", 5), auth.CodeInvalidToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := v.Verify(request("Bearer " + tt.token))
			if tt.code == "" {
				if err != nil || !p.HasScope("mcp:tools") {
					t.Fatalf("got %+v, %v", p, err)
				}
				return
			}
			if err == nil || code(err) != tt.code {
				t.Fatalf("got %v, want %s", err, tt.code)
			}
			var e *auth.Error
			if errors.As(err, &e) && e.Code == auth.CodeInsufficientScope && e.Scope != "mcp:tools mcp:read" {
				t.Errorf("scope %q, want every required scope", e.Scope)
			}
		})
	}
}

// TestJWKSRotation: the JWKS is fetched at start; a token whose key id is
// new makes the verifier fetch it again (the issuer rotated its keys);
// after that, keys the JWKS dropped are refused, and a key id it never
// published is refused without a fetch loop.
func TestJWKSRotation(t *testing.T) {
	is := authtest.NewIssuer(t)
	srv := authtest.NewJWKSServer(t, authtest.JWK(t, "k1", &is.RSA.PublicKey), authtest.JWK(t, "e1", &is.EC.PublicKey))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v, err := auth.NewJWT(ctx, auth.JWTConfig{JWKSURL: srv.URL + "/jwks", Issuer: issuer, Audiences: []string{audience}})
	if err != nil {
		t.Fatal(err)
	}
	if n := srv.Fetches.Load(); n != 1 {
		t.Fatalf("%d fetches at start, want 1", n)
	}
	good := authtest.Claims(issuer, "erin", audience)
	runJWT(t, v, []jwtCase{
		{name: "RS256 kid k1", token: authtest.Sign(t, "RS256", is.RSA, "k1", good), sub: "erin"},
		{name: "ES256 kid e1", token: authtest.Sign(t, "ES256", is.EC, "e1", good), sub: "erin"},
		{name: "no kid", token: authtest.Sign(t, "RS256", is.RSA, "", good), sub: "erin"},
		{name: "HS256 signed with the published key", token: authtest.Sign(t, "HS256", authtest.PublicPEM(t, &is.RSA.PublicKey), "k1", good), code: auth.CodeInvalidToken},
		{name: "kid of another key type", token: authtest.Sign(t, "RS256", is.RSA, "e1", good), code: auth.CodeInvalidToken},
	})

	srv.Set(t, authtest.JWK(t, "k2", &is.RSA2.PublicKey)) // the issuer rotates
	runJWT(t, v, []jwtCase{
		{name: "new kid after rotation", token: authtest.Sign(t, "RS256", is.RSA2, "k2", good), sub: "erin"},
	})
	if n := srv.Fetches.Load(); n != 2 {
		t.Fatalf("%d fetches after the new kid, want 2", n)
	}
	runJWT(t, v, []jwtCase{
		{name: "rotated-out kid", token: authtest.Sign(t, "RS256", is.RSA, "k1", good), code: auth.CodeInvalidToken},
		{name: "unknown kid", token: authtest.Sign(t, "RS256", is.Unknown, "nope", good), code: auth.CodeInvalidToken},
		{name: "another unknown kid", token: authtest.Sign(t, "RS256", is.Unknown, "nope2", good), code: auth.CodeInvalidToken},
	})
	// Unknown kids refresh at most every 30 s: the two above fetched
	// nothing more.
	if n := srv.Fetches.Load(); n != 2 {
		t.Fatalf("%d fetches after unknown kids, want still 2", n)
	}
}

func TestJWKSUnreachable(t *testing.T) {
	srv := authtest.NewJWKSServer(t)
	url := srv.URL + "/jwks"
	srv.Close()
	_, err := auth.NewJWT(context.Background(), auth.JWTConfig{JWKSURL: url, Issuer: issuer, Audiences: []string{audience}})
	if err == nil {
		t.Fatal("started without keys")
	}
}

func TestAny(t *testing.T) {
	is := authtest.NewIssuer(t)
	st, err := auth.TokensFromEnv([]string{"A"}, func(string) (string, bool) { return tokenA, true })
	if err != nil {
		t.Fatal(err)
	}
	j, err := auth.NewJWT(context.Background(), auth.JWTConfig{Secret: is.Secret, Issuer: issuer, Audiences: []string{audience}, RequiredScopes: []string{"s"}})
	if err != nil {
		t.Fatal(err)
	}
	v := auth.Any(st, j)
	if p, err := v.Verify(request("Bearer " + tokenA)); err != nil || p.Key() == "" || p.Name != "A" {
		t.Errorf("static: %+v, %v", p, err)
	}
	c := authtest.Claims(issuer, "A", audience)
	c["scope"] = "s"
	p, err := v.Verify(request("Bearer " + authtest.Sign(t, "HS256", is.Secret, "", c)))
	if err != nil || p.Method != auth.MethodJWT {
		t.Fatalf("jwt: %+v, %v", p, err)
	}
	if p.Key() == (auth.Principal{Method: auth.MethodToken, Name: "A"}).Key() {
		t.Error("a JWT with sub A has the key of the token variable A")
	}
	delete(c, "scope")
	if _, err := v.Verify(request("Bearer " + authtest.Sign(t, "HS256", is.Secret, "", c))); code(err) != auth.CodeInsufficientScope {
		t.Errorf("missing scope: %v, want insufficient_scope", err)
	}
	if _, err := v.Verify(request()); code(err) != "none" {
		t.Errorf("no token: %v", err)
	}
}

// slackBits sets the unused low bits of the signature's last character:
// the same bytes to a lenient decoder, another spelling of the token.
func slackBits(tok string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	b := []byte(tok)
	last := len(b) - 1
	i := strings.IndexByte(alphabet, b[last])
	b[last] = alphabet[i|1] // HS256: 32 bytes, 43 characters, 2 slack bits
	if b[last] == tok[last] {
		b[last] = alphabet[i|2]
	}
	return string(b)
}

func TestToolPolicy(t *testing.T) {
	rule := func(s string, deny bool) auth.ToolRule {
		r, err := auth.ParseToolRule(s, deny)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	pol := auth.NewToolPolicy([]auth.ToolRule{
		rule("*=delete_*", true),
		rule("scope:mcp:admin=*", false),
		rule("ALICE=echo", false),
		rule("ALICE=test_?", false),
		rule("token:BOB=add", false),
		rule("jwt:carol=fs/*", false),
	})
	alice := auth.Principal{Method: auth.MethodToken, Name: "ALICE"}
	bob := auth.Principal{Method: auth.MethodToken, Name: "BOB"}
	jwtBob := auth.Principal{Method: auth.MethodJWT, Name: "BOB", Issuer: "i"}
	carol := auth.Principal{Method: auth.MethodJWT, Name: "carol", Issuer: "i"}
	admin := auth.Principal{Method: auth.MethodJWT, Name: "root", Issuer: "i", Scopes: []string{"mcp:admin"}}
	tests := []struct {
		p    auth.Principal
		tool string
		want bool
	}{
		{alice, "echo", true}, {alice, "add", false}, {alice, "test_a", true}, {alice, "test_ab", false}, {alice, "delete_all", false},
		{bob, "add", true}, {bob, "echo", false},
		{jwtBob, "add", true}, {jwtBob, "echo", true}, // token:BOB is not the JWT BOB: only the deny rule applies
		{jwtBob, "delete_x", false},
		{carol, "fs/read.file", true}, {carol, "echo", false},
		{admin, "anything", true}, {admin, "delete_everything", false},
		{auth.Principal{}, "echo", true}, {auth.Principal{}, "delete_it", false},
	}
	for _, tt := range tests {
		if got := pol.For(tt.p).Allowed(tt.tool); got != tt.want {
			t.Errorf("%s, %s: allowed %v, want %v", tt.p, tt.tool, got, tt.want)
		}
	}
	if auth.NewToolPolicy(nil).For(alice) != nil {
		t.Error("no rules: a filter")
	}
	for _, bad := range []string{"noequals", "=glob", "subject=", "scope:=x"} {
		if _, err := auth.ParseToolRule(bad, false); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

// TestSubjects: --admin's subjects have the tool policy's syntax and
// meaning, and a prefix with nothing after it is refused.
func TestSubjects(t *testing.T) {
	alice := auth.Principal{Method: auth.MethodToken, Name: "ALICE"}
	jwtAlice := auth.Principal{Method: auth.MethodJWT, Name: "ALICE", Issuer: "i"}
	root := auth.Principal{Method: auth.MethodJWT, Name: "root", Issuer: "i", Scopes: []string{"mcp:admin"}}
	anonymous := auth.Principal{}
	for _, tt := range []struct {
		subject string
		matches []auth.Principal
	}{
		{"*", []auth.Principal{alice, jwtAlice, root, anonymous}},
		{"ALICE", []auth.Principal{alice, jwtAlice}},
		{"token:ALICE", []auth.Principal{alice}},
		{"jwt:ALICE", []auth.Principal{jwtAlice}},
		{"scope:mcp:admin", []auth.Principal{root}},
		{"", nil},
	} {
		ss, err := auth.ParseSubjects([]string{tt.subject})
		if tt.subject == "" {
			if err == nil {
				t.Error("an empty subject: accepted")
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tt.subject, err)
		}
		for _, p := range []auth.Principal{alice, jwtAlice, root, anonymous} {
			want := slices.ContainsFunc(tt.matches, func(m auth.Principal) bool { return m.Key() == p.Key() })
			if got := ss.Match(p); got != want {
				t.Errorf("%q matches %s (%s): %v, want %v", tt.subject, p, p.Method, got, want)
			}
		}
	}
	if (auth.Subjects(nil)).Match(alice) {
		t.Error("no subjects match a principal")
	}
	for _, bad := range []string{"scope:", "token:", "jwt:"} {
		if _, err := auth.ParseSubjects([]string{"ALICE", bad}); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%q: err %v, want it refused and named", bad, err)
		}
		if _, err := auth.ParseToolRule(bad+"=*", false); err == nil {
			t.Errorf("tool rule %q: accepted", bad+"=*")
		}
	}
}
