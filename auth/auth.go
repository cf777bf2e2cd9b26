// Package auth owns who may use the bridge: it turns the credentials of an
// HTTP request into a Principal, or refuses them with an Error that says
// what the client may be told. Two verifiers exist: static bearer tokens
// held in named environment variables (StaticTokens) and JWT access tokens
// (JWT). The package is a leaf: it imports nothing of the bridge, and no
// secret (a token, a key, a shared secret) ever appears in its errors.
package auth

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
)

// Verifier authenticates one request. It returns the request's Principal,
// or an *Error. MCP: "authorization MUST be included in every HTTP request
// from client to server, even if they are part of the same logical
// session", so a Verifier runs on every request.
type Verifier interface {
	Verify(r *http.Request) (Principal, error)
}

// Methods of authentication (Principal.Method).
const (
	MethodToken = "token" // a static bearer token from an environment variable
	MethodJWT   = "jwt"   // a JWT access token
)

// Principal is who a request acts for.
type Principal struct {
	// Method is MethodToken or MethodJWT; empty for the anonymous
	// principal of a bridge without authentication.
	Method string
	// Name identifies the principal for its method: the name of the
	// environment variable whose token was presented, or the JWT's sub.
	Name string
	// Issuer is the JWT's iss; empty for a static token.
	Issuer string
	// Scopes are the scopes the JWT grants (its scope or scp claim); nil
	// for a static token.
	Scopes []string
	// Claims are the JWT's string and number claims, as text; for a
	// static token, just "sub" (the variable's name). The bridge maps
	// only allow-listed ones into a child's environment (--claim-env).
	Claims map[string]string
}

// Key is the identity that state such as a session is bound to. It is
// unique across methods and issuers: a JWT whose sub happens to equal a
// token variable's name is not that principal. The anonymous principal's
// Key is "".
func (p Principal) Key() string {
	if p.Method == "" {
		return ""
	}
	return p.Method + " " + strconv.Quote(p.Issuer) + " " + strconv.Quote(p.Name)
}

// String names the principal for logs.
func (p Principal) String() string {
	switch {
	case p.Method == "":
		return "anonymous"
	case p.Issuer != "":
		return p.Name + " (" + p.Issuer + ")"
	}
	return p.Name
}

// HasScope reports whether the principal was granted scope.
func (p Principal) HasScope(scope string) bool {
	for _, s := range p.Scopes {
		if s == scope {
			return true
		}
	}
	return false
}

type principalKey struct{}

// NewContext returns ctx carrying p, for the code that serves the request.
func NewContext(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the Principal NewContext put in ctx.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// Error codes of RFC 6750 section 3.1 (Error.Code). The empty code is a
// request without credentials: "the resource server SHOULD NOT include an
// error code or other error information" in that case.
const (
	CodeNone              = ""
	CodeInvalidRequest    = "invalid_request"    // malformed: HTTP 400
	CodeInvalidToken      = "invalid_token"      // expired, revoked, malformed, wrong audience...: HTTP 401
	CodeInsufficientScope = "insufficient_scope" // valid, but not for this: HTTP 403
)

// Error is a refusal. Description and Scope may be shown to the client;
// Reason is for the log. None of them ever holds a secret or the token.
type Error struct {
	Code        string // one of the Code constants
	Description string // for the client (error_description), fixed text
	Scope       string // for CodeInsufficientScope: every scope needed, space-separated
	Reason      string // for the log: why, in a few words
}

func (e *Error) Error() string {
	s := "unauthorized"
	if e.Code != "" {
		s = e.Code
	}
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// ErrNoToken answers a request that carries no credentials.
var ErrNoToken = &Error{Code: CodeNone, Reason: "no bearer token"}

// ErrQueryToken answers a request with a token in its query string. MCP
// answers it 401 ("not accepted") rather than RFC 6750's 400 for
// invalid_request, so the client is sent to the metadata and the header.
var ErrQueryToken = &Error{Code: CodeInvalidRequest,
	Description: "access tokens are accepted only in the Authorization header, never in the query string",
	Reason:      "a token in the query string"}

// Is matches the sentinels by identity of code and reason.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && t.Reason == e.Reason
}

func invalidToken(reason string) *Error {
	return &Error{Code: CodeInvalidToken, Description: "the access token is invalid, expired or not for this server", Reason: reason}
}

func invalidRequest(desc string) *Error {
	return &Error{Code: CodeInvalidRequest, Description: desc, Reason: desc}
}

// queryTokenNames are query parameters that carry tokens (RFC 6750
// section 2.3 names access_token). MCP: "Access tokens MUST NOT be
// included in the URI query string".
var queryTokenNames = []string{"access_token", "token", "bearer", "id_token"}

// BearerToken returns the request's bearer token from its Authorization
// header, ErrNoToken when there is none, an invalid_token Error for an
// empty one, or an invalid_request Error for a malformed header, several
// Authorization headers, or a token in the query string (refused even next to a valid header: the token is already
// leaking into URLs and logs, and the client must be fixed).
func BearerToken(r *http.Request) (string, error) {
	for name := range r.URL.Query() {
		for _, bad := range queryTokenNames {
			if strings.EqualFold(name, bad) {
				return "", ErrQueryToken
			}
		}
	}
	vals := r.Header.Values("Authorization")
	switch len(vals) {
	case 0:
		return "", ErrNoToken
	case 1:
	default:
		return "", invalidRequest("more than one Authorization header")
	}
	scheme, tok, _ := strings.Cut(strings.TrimSpace(vals[0]), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		// Credentials of another scheme (Basic...) are no bearer token:
		// the plain challenge tells the client which scheme to use.
		return "", &Error{Code: CodeNone, Reason: "the Authorization header is not of the Bearer scheme"}
	}
	tok = strings.TrimLeft(tok, " ")
	if tok == "" {
		// "Bearer" and nothing else is a token that cannot be valid, not
		// a malformed request: 401 with the challenge, as for any invalid
		// token, because a client starts its authorization flow on 401
		// (MCP: "Invalid or expired tokens MUST receive a HTTP 401").
		return "", invalidToken("the bearer token is empty")
	}
	if !isToken68(tok) {
		return "", invalidRequest("the bearer token is malformed")
	}
	return tok, nil
}

// isToken68: RFC 6750's b64token, 1*( ALPHA / DIGIT / "-" / "." / "_" /
// "~" / "+" / "/" ) *"=".
func isToken68(s string) bool {
	if s == "" {
		return false
	}
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/') {
			break
		}
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return false
		}
	}
	return true
}

// Any accepts a request that any of the verifiers accepts, tried in order.
// When all refuse, the most telling refusal is returned: insufficient
// scope (the token was valid) before a malformed request before an
// invalid token before no token; the reasons of equally telling refusals
// are joined for the log.
func Any(vs ...Verifier) Verifier {
	if len(vs) == 1 {
		return vs[0]
	}
	return anyOf(vs)
}

type anyOf []Verifier

func (a anyOf) Verify(r *http.Request) (Principal, error) {
	var best error
	for _, v := range a {
		p, err := v.Verify(r)
		if err == nil {
			return p, nil
		}
		switch {
		case best == nil || rank(err) > rank(best):
			best = err
		case rank(err) == rank(best):
			var e, b *Error
			if errors.As(err, &e) && errors.As(best, &b) && e.Reason != b.Reason {
				joined := *b
				joined.Reason = b.Reason + "; " + e.Reason
				best = &joined
			}
		}
	}
	if best == nil {
		best = ErrNoToken
	}
	return Principal{}, best
}

func rank(err error) int {
	var e *Error
	if !errors.As(err, &e) {
		return 0
	}
	switch e.Code {
	case CodeInsufficientScope:
		return 4
	case CodeInvalidRequest:
		return 3
	case CodeInvalidToken:
		return 2
	}
	return 1
}
