package auth

import (
	"bytes"
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"
)

// Defaults for the zero values of JWTConfig.
const (
	DefaultLeeway      = 30 * time.Second
	DefaultJWKSRefresh = 15 * time.Minute
	// DefaultJWKSUnknownKIDEvery is how often, at most, a token with a key
	// id the JWKS does not hold makes the bridge fetch the JWKS again: the
	// issuer may have rotated its keys, but a stream of made-up key ids
	// must not turn the bridge into a fetch loop against the issuer.
	DefaultJWKSUnknownKIDEvery = 30 * time.Second
	jwksRateLimitWaitMax       = 2 * time.Second
	jwksHTTPTimeout            = 5 * time.Second
)

// JWTConfig configures a JWT verifier. Exactly one key source is set:
// Secret, PublicKeys or JWKSURL. Issuer and at least one Audience are
// required.
type JWTConfig struct {
	// Secret is an HMAC secret (HS256, HS384, HS512), at least 32 bytes.
	// Tokens signed with anything else are refused.
	Secret []byte
	// PublicKeys verify RS*/PS* (RSA, 2048 bits or more), ES256/384/512
	// (by curve) or EdDSA (Ed25519) tokens; see ParsePublicKeysPEM.
	PublicKeys []crypto.PublicKey
	// JWKSURL is fetched at start (failing NewJWT if it cannot be), then
	// every JWKSRefresh, and again when a token names a key id it does not
	// hold (at most every DefaultJWKSUnknownKIDEvery). It must be https,
	// or http on a loopback address. Only asymmetric keys are used from
	// it: a symmetric key published in a JWKS is no secret.
	JWKSURL string
	// Issuer must equal the token's iss.
	Issuer string
	// Audiences: the token's aud must hold one of them. MCP: servers "MUST
	// validate that access tokens were issued specifically for them as
	// the intended audience" (RFC 8707): the bridge's canonical URL.
	Audiences []string
	// RequiredScopes must all be granted (scope or scp claim); a valid
	// token without them gets insufficient_scope.
	RequiredScopes []string
	// Leeway absorbs clock skew on exp, nbf and iat. Default 30 s.
	Leeway time.Duration
	// JWKSRefresh is the JWKS refresh interval. Default 15 min.
	JWKSRefresh time.Duration
	// HTTPClient fetches the JWKS. Default: a client with a 5 s timeout
	// that follows redirects only to https (or loopback http).
	HTTPClient *http.Client
	// Logger logs JWKS refresh failures. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// JWT verifies JWT access tokens.
type JWT struct {
	cfg    JWTConfig
	parser *jwt.Parser
	keys   func(ctx context.Context) jwt.Keyfunc
}

// NewJWT returns a JWT verifier. With a JWKS URL it fetches the JWKS
// before returning and keeps refreshing it until ctx ends: cancel ctx at
// shutdown.
func NewJWT(ctx context.Context, cfg JWTConfig) (*JWT, error) {
	if cfg.Leeway <= 0 {
		cfg.Leeway = DefaultLeeway
	}
	if cfg.JWKSRefresh <= 0 {
		cfg.JWKSRefresh = DefaultJWKSRefresh
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Issuer == "" {
		return nil, errors.New("jwt: no issuer: set the issuer whose tokens are accepted")
	}
	if len(cfg.Audiences) == 0 || slices.Contains(cfg.Audiences, "") {
		return nil, errors.New("jwt: no audience: tokens must be checked against this server's URL")
	}
	sources := 0
	for _, set := range []bool{cfg.Secret != nil, cfg.PublicKeys != nil, cfg.JWKSURL != ""} {
		if set {
			sources++
		}
	}
	if sources != 1 {
		// Never HMAC next to public keys: one key source, one family of
		// algorithms.
		return nil, errors.New("jwt: want exactly one key source: an HMAC secret, a PEM public key file, or a JWKS URL")
	}
	j := &JWT{cfg: cfg}
	var algs []string
	switch {
	case cfg.Secret != nil:
		if len(cfg.Secret) < MinHMACSecret {
			return nil, fmt.Errorf("jwt: the HMAC secret is %d bytes; at least %d are needed", len(cfg.Secret), MinHMACSecret)
		}
		algs = hmacAlgs
		secret := cfg.Secret
		j.keys = func(context.Context) jwt.Keyfunc {
			return func(*jwt.Token) (any, error) { return secret, nil }
		}
	case cfg.PublicKeys != nil:
		for i, k := range cfg.PublicKeys {
			if err := checkPublicKey(k); err != nil {
				return nil, fmt.Errorf("jwt: public key %d: %w", i+1, err)
			}
		}
		algs = algsFor(cfg.PublicKeys)
		set := jwt.VerificationKeySet{}
		for _, k := range cfg.PublicKeys {
			set.Keys = append(set.Keys, k)
		}
		j.keys = func(context.Context) jwt.Keyfunc {
			return func(*jwt.Token) (any, error) { return set, nil }
		}
	default:
		if err := checkJWKSURL(cfg.JWKSURL); err != nil {
			return nil, err
		}
		algs = asymAlgs
		kf, err := newJWKS(ctx, cfg)
		if err != nil {
			return nil, err
		}
		j.keys = kf.KeyfuncCtx
	}
	j.parser = jwt.NewParser(
		jwt.WithValidMethods(algs), // never "none", never a family the key source is not
		jwt.WithIssuer(cfg.Issuer),
		jwt.WithAudience(cfg.Audiences...),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(cfg.Leeway),
		jwt.WithTimeFunc(cfg.Now),
		// One token, one spelling: no slack bits, no padding variants.
		jwt.WithStrictDecoding(),
	)
	return j, nil
}

func newJWKS(ctx context.Context, cfg JWTConfig) (keyfunc.Keyfunc, error) {
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{
			Timeout: jwksHTTPTimeout,
			CheckRedirect: func(req *http.Request, via []*http.Request) error {
				if len(via) >= 3 {
					return errors.New("too many redirects")
				}
				return checkJWKSURL(req.URL.String())
			},
		}
	}
	fail := false
	log := cfg.Logger
	kf, err := keyfunc.NewDefaultOverrideCtx(ctx, []string{cfg.JWKSURL}, keyfunc.Override{
		Client:                    client,
		HTTPTimeout:               jwksHTTPTimeout,
		NoErrorReturnFirstHTTPReq: &fail, // no keys, no start: better than refusing every token
		RateLimitWaitMax:          jwksRateLimitWaitMax,
		RefreshInterval:           cfg.JWKSRefresh,
		RefreshUnknownKID:         rate.NewLimiter(rate.Every(DefaultJWKSUnknownKIDEvery), 1),
		RefreshErrorHandlerFunc: func(u string) func(context.Context, error) {
			return func(ctx context.Context, err error) {
				log.WarnContext(ctx, "JWKS refresh failed; keeping the keys already fetched", "jwks_url", u, "err", err)
			}
		},
	})
	if err != nil {
		// jwkset joins its errors with newlines: keep the message one line.
		// The URL is a setting's value, which no error shows (it may carry
		// a key in its query); the errors beneath quote it.
		msg := strings.ReplaceAll(err.Error(), "\n", "; ")
		msg = strings.ReplaceAll(msg, cfg.JWKSURL, "(the JWKS URL)")
		return nil, fmt.Errorf("jwt: cannot fetch the JWKS: %s", msg)
	}
	return kf, nil
}

// checkJWKSURL: https, or http to a loopback address only; no user info
// (a credential in a URL ends up in logs).
func checkJWKSURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return errors.New("jwt: the JWKS URL does not parse")
	}
	if u.User != nil {
		return errors.New("jwt: the JWKS URL must not carry credentials")
	}
	switch {
	case u.Scheme == "https" && u.Host != "":
		return nil
	case u.Scheme == "http" && isLoopback(u.Hostname()):
		return nil
	}
	return errors.New("jwt: the JWKS URL: want https (http only on a loopback address)")
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// claims are the claims the bridge reads.
type claims struct {
	jwt.RegisteredClaims
	Scope scopeList `json:"scope"` // RFC 8693 / RFC 9068: space-separated
	Scp   scopeList `json:"scp"`   // Azure AD, Okta...: a list or a string
}

// scopeList decodes a space-separated string or an array of strings.
type scopeList []string

func (s *scopeList) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err == nil {
		*s = strings.Fields(str)
		return nil
	}
	var arr []string
	if err := json.Unmarshal(b, &arr); err != nil {
		return errors.New("scope claim: want a string or an array of strings")
	}
	*s = arr
	return nil
}

// Verify accepts a request with a valid JWT for this server.
func (j *JWT) Verify(r *http.Request) (Principal, error) {
	tok, err := BearerToken(r)
	if err != nil {
		return Principal{}, err
	}
	var c claims
	kf := j.keys(r.Context())
	_, err = j.parser.ParseWithClaims(tok, &c, func(t *jwt.Token) (any, error) {
		key, err := kf(t)
		if err != nil {
			return nil, err
		}
		return fitting(t.Method.Alg(), key)
	})
	if err != nil {
		return Principal{}, invalidToken(jwtReason(err))
	}
	if c.Subject == "" {
		return Principal{}, invalidToken("no sub claim: the token names no principal")
	}
	scopes := slices.Concat([]string(c.Scope), []string(c.Scp))
	p := Principal{Method: MethodJWT, Name: c.Subject, Issuer: c.Issuer, Scopes: scopes, Claims: textClaims(tok)}
	for _, need := range j.cfg.RequiredScopes {
		if !p.HasScope(need) {
			// RFC 6750: the scope attribute lists the scopes "necessary
			// to access the requested resource", granted ones included.
			return Principal{}, &Error{
				Code:        CodeInsufficientScope,
				Description: "the access token lacks a required scope",
				Scope:       strings.Join(j.cfg.RequiredScopes, " "),
				Reason:      fmt.Sprintf("principal %s lacks scope %q", p, need),
			}
		}
	}
	return p, nil
}

// fitting keeps the keys whose type fits alg (see keyFits).
func fitting(alg string, key any) (any, error) {
	if set, ok := key.(jwt.VerificationKeySet); ok {
		var out jwt.VerificationKeySet
		for _, k := range set.Keys {
			if keyFits(alg, k) {
				out.Keys = append(out.Keys, k)
			}
		}
		if len(out.Keys) == 0 {
			return nil, errNoFittingKey
		}
		return out, nil
	}
	if !keyFits(alg, key) {
		return nil, errNoFittingKey
	}
	return key, nil
}

var errNoFittingKey = errors.New("no key of the type the token's algorithm needs")

// jwtReason says in a few fixed words why golang-jwt refused a token: its
// own messages can quote parts of the token.
func jwtReason(err error) string {
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "malformed token"
	case errors.Is(err, errNoFittingKey):
		return "no key fits the token's algorithm"
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return "no key verifies the token (unknown key id?)"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return "bad signature or algorithm not allowed"
	case errors.Is(err, jwt.ErrTokenExpired):
		return "token expired"
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return "token not valid yet (nbf)"
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return "token issued in the future (iat)"
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return "wrong issuer"
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return "wrong audience"
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return "a required claim (exp, iss or aud) is missing"
	case errors.Is(err, jwt.ErrTokenInvalidClaims):
		return "invalid claims"
	}
	return "invalid token"
}

// textClaims returns the string and number claims of a token already
// verified, as text: the payload is decoded once more rather than asking
// golang-jwt for a map, so the typed claims above stay the checked ones.
func textClaims(tok string) map[string]string {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil
	}
	var all map[string]any
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	if d.Decode(&all) != nil {
		return nil
	}
	out := make(map[string]string, len(all))
	for k, v := range all {
		switch v := v.(type) {
		case string:
			out[k] = v
		case json.Number:
			out[k] = v.String()
		}
	}
	return out
}
