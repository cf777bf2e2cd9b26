// Package authtest owns the credentials that tests of the bridge forge: an
// issuer with RSA, ECDSA, Ed25519 and HMAC keys that mints JWTs (good ones
// and every classic bad one), and a JWKS server on 127.0.0.1 whose keys a
// test rotates. It is for tests only.
package authtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Issuer holds one key of each kind, each with its key id.
type Issuer struct {
	RSA     *rsa.PrivateKey
	EC      *ecdsa.PrivateKey // P-256
	Ed      ed25519.PrivateKey
	Secret  []byte          // 32 random bytes
	RSA2    *rsa.PrivateKey // a second RSA key, for rotation
	Unknown *rsa.PrivateKey // a key no JWKS ever publishes
}

var (
	once   sync.Once
	shared *Issuer
)

// NewIssuer returns the issuer's keys. RSA key generation is slow under
// the race detector, so every test of a process shares one set.
func NewIssuer(t testing.TB) *Issuer {
	t.Helper()
	once.Do(func() {
		must := func(err error) {
			if err != nil {
				panic(err)
			}
		}
		var is Issuer
		var err error
		is.RSA, err = rsa.GenerateKey(rand.Reader, 2048)
		must(err)
		is.RSA2, err = rsa.GenerateKey(rand.Reader, 2048)
		must(err)
		is.Unknown, err = rsa.GenerateKey(rand.Reader, 2048)
		must(err)
		is.EC, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		must(err)
		_, is.Ed, err = ed25519.GenerateKey(rand.Reader)
		must(err)
		is.Secret = make([]byte, 32)
		_, err = rand.Read(is.Secret)
		must(err)
		shared = &is
	})
	return shared
}

// Claims builds standard claims valid now for an hour.
func Claims(iss, sub string, aud ...string) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{
		"iss": iss,
		"sub": sub,
		"aud": aud,
		"iat": now.Unix(),
		"nbf": now.Unix(),
		"exp": now.Add(time.Hour).Unix(),
	}
}

// Sign signs claims with alg and key, with kid in the header if not empty.
func Sign(t testing.TB, alg string, key any, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.GetSigningMethod(alg), claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("authtest: sign %s: %v", alg, err)
	}
	return s
}

// None is an unsigned token: alg "none" and an empty signature.
func None(t testing.TB, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodNone, claims)
	s, err := tok.SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// PublicPEM is the PKIX PEM encoding of a public key: what an attacker
// who read the server's key file (or its JWKS) knows.
func PublicPEM(t testing.TB, pub crypto.PublicKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// Tamper changes one character in the middle of the signature, where
// every bit is signature (the last character holds slack bits that a
// lenient decoder ignores).
func Tamper(tok string) string {
	b := []byte(tok)
	sig := strings.LastIndexByte(tok, '.') + 1
	i := sig + (len(b)-sig)/2
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

// JWK is one public key as a JSON Web Key.
func JWK(t testing.TB, kid string, pub crypto.PublicKey) map[string]any {
	t.Helper()
	b64 := base64.RawURLEncoding.EncodeToString
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return map[string]any{"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
			"n": b64(k.N.Bytes()), "e": b64(big.NewInt(int64(k.E)).Bytes())}
	case *ecdsa.PublicKey:
		raw, err := k.Bytes() // 0x04 || X || Y
		if err != nil {
			t.Fatal(err)
		}
		n := (len(raw) - 1) / 2
		return map[string]any{"kty": "EC", "kid": kid, "use": "sig", "alg": "ES256", "crv": "P-256",
			"x": b64(raw[1 : 1+n]), "y": b64(raw[1+n:])}
	case ed25519.PublicKey:
		return map[string]any{"kty": "OKP", "kid": kid, "use": "sig", "alg": "EdDSA", "crv": "Ed25519", "x": b64(k)}
	}
	t.Fatalf("authtest: no JWK for %T", pub)
	return nil
}

// JWKSServer serves a JWKS on 127.0.0.1 and counts its fetches.
type JWKSServer struct {
	*httptest.Server
	mu      sync.Mutex
	body    []byte
	Fetches atomic.Int64
}

// NewJWKSServer starts a JWKS server with keys; it is closed on cleanup.
func NewJWKSServer(t testing.TB, keys ...map[string]any) *JWKSServer {
	t.Helper()
	s := &JWKSServer{}
	s.Set(t, keys...)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.Fetches.Add(1)
		s.mu.Lock()
		body := s.body
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(s.Close)
	return s
}

// Set replaces the keys served: a rotation.
func (s *JWKSServer) Set(t testing.TB, keys ...map[string]any) {
	t.Helper()
	if keys == nil {
		keys = []map[string]any{}
	}
	b, err := json.Marshal(map[string]any{"keys": keys})
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.body = b
	s.mu.Unlock()
}
