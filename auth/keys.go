package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
)

// MinRSABits is the smallest RSA key accepted.
const MinRSABits = 2048

// MinHMACSecret is the shortest HMAC secret accepted: RFC 7518 section
// 3.2, "A key of the same size as the hash output (for instance, 256 bits
// for HS256) or larger MUST be used".
const MinHMACSecret = 32

var (
	hmacAlgs  = []string{"HS256", "HS384", "HS512"}
	rsaAlgs   = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}
	ecAlgs    = []string{"ES256", "ES384", "ES512"}
	edAlgs    = []string{"EdDSA"}
	asymAlgs  = slices.Concat(rsaAlgs, ecAlgs, edAlgs)
	errNoKeys = errors.New("no public key in the PEM data")
)

// ParsePublicKeysPEM reads the public keys of PEM data: PUBLIC KEY
// (PKIX: RSA, ECDSA P-256/384/521, Ed25519), RSA PUBLIC KEY (PKCS #1) and
// CERTIFICATE blocks. A private key block is an error: the bridge only
// verifies, and a private key has no business on its disk.
func ParsePublicKeysPEM(data []byte) ([]crypto.PublicKey, error) {
	var keys []crypto.PublicKey
	for n := 1; ; n++ {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		var (
			k   any
			err error
		)
		switch b.Type {
		case "PUBLIC KEY":
			k, err = x509.ParsePKIXPublicKey(b.Bytes)
		case "RSA PUBLIC KEY":
			k, err = x509.ParsePKCS1PublicKey(b.Bytes)
		case "CERTIFICATE":
			var c *x509.Certificate
			if c, err = x509.ParseCertificate(b.Bytes); err == nil {
				k = c.PublicKey
			}
		default:
			return nil, fmt.Errorf("PEM block %d is a %q; want PUBLIC KEY, RSA PUBLIC KEY or CERTIFICATE", n, b.Type)
		}
		if err != nil {
			return nil, fmt.Errorf("PEM block %d: %w", n, err)
		}
		if err := checkPublicKey(k); err != nil {
			return nil, fmt.Errorf("PEM block %d: %w", n, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errNoKeys
	}
	return keys, nil
}

func checkPublicKey(k any) error {
	switch k := k.(type) {
	case *rsa.PublicKey:
		if k.N.BitLen() < MinRSABits {
			return fmt.Errorf("the RSA key has %d bits; at least %d are needed", k.N.BitLen(), MinRSABits)
		}
	case *ecdsa.PublicKey:
		if ecAlg(k) == "" {
			return fmt.Errorf("the ECDSA curve %s is not one JWS uses (P-256, P-384, P-521)", k.Curve.Params().Name)
		}
	case ed25519.PublicKey:
	default:
		return fmt.Errorf("unsupported key type %T", k)
	}
	return nil
}

// ecAlg is the one JWS algorithm of an ECDSA key's curve (RFC 7518
// section 3.4 ties each to a curve).
func ecAlg(k *ecdsa.PublicKey) string {
	switch k.Curve {
	case elliptic.P256():
		return "ES256"
	case elliptic.P384():
		return "ES384"
	case elliptic.P521():
		return "ES512"
	}
	return ""
}

// algsFor is every algorithm some key of keys can verify.
func algsFor(keys []crypto.PublicKey) []string {
	var out []string
	for _, k := range keys {
		var algs []string
		switch k := k.(type) {
		case *rsa.PublicKey:
			algs = rsaAlgs
		case *ecdsa.PublicKey:
			algs = []string{ecAlg(k)}
		case ed25519.PublicKey:
			algs = edAlgs
		}
		for _, a := range algs {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

// keyFits reports whether key is of the type alg verifies with. It is the
// guard against algorithm confusion: an HMAC algorithm never gets a public
// key (whose bytes an attacker knows) as its secret, and an asymmetric one
// never gets a secret.
func keyFits(alg string, key any) bool {
	switch k := key.(type) {
	case []byte:
		return slices.Contains(hmacAlgs, alg)
	case *rsa.PublicKey:
		return slices.Contains(rsaAlgs, alg) && k.N.BitLen() >= MinRSABits
	case *ecdsa.PublicKey:
		return alg == ecAlg(k)
	case ed25519.PublicKey:
		return alg == "EdDSA"
	}
	return false
}
