package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"regexp"
	"slices"
)

// MinTokenLength is the shortest static token accepted: a token a person
// can guess or a script can enumerate protects nothing.
const MinTokenLength = 16

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// StaticTokens accepts the bearer tokens held in named environment
// variables. The principal of a request is the name of the variable whose
// token it presented, so rotating a token means adding a second variable,
// moving clients over, and removing the first.
type StaticTokens struct {
	names   []string
	digests [][sha256.Size]byte
}

// TokensFromEnv reads the token of each named variable with lookup
// (os.LookupEnv, or a map in tests). A name that is not a valid variable
// name, a variable that is unset or empty, a token too short or not
// sendable in a header, and two variables holding the same token are
// errors; each names the variable and never shows its value.
func TokensFromEnv(names []string, lookup func(string) (string, bool)) (*StaticTokens, error) {
	st := &StaticTokens{}
	seen := map[[sha256.Size]byte]string{}
	for _, name := range names {
		if !envNameRE.MatchString(name) {
			return nil, fmt.Errorf("token variable %q is not a valid environment variable name", name)
		}
		if slices.Contains(st.names, name) {
			return nil, fmt.Errorf("token variable %s is named twice", name)
		}
		tok, ok := lookup(name)
		switch {
		case !ok:
			return nil, fmt.Errorf("token variable %s is not set", name)
		case tok == "":
			return nil, fmt.Errorf("token variable %s is empty", name)
		case len(tok) < MinTokenLength:
			return nil, fmt.Errorf("the token in %s is shorter than %d characters; use a random one (e.g. openssl rand -hex 32)", name, MinTokenLength)
		case !isToken68(tok):
			return nil, fmt.Errorf("the token in %s has characters a bearer token cannot carry (allowed: A-Z a-z 0-9 - . _ ~ + / and trailing =)", name)
		}
		d := sha256.Sum256([]byte(tok))
		if other, dup := seen[d]; dup {
			// Which of the two would the principal be?
			return nil, fmt.Errorf("token variables %s and %s hold the same token", other, name)
		}
		seen[d] = name
		st.names = append(st.names, name)
		st.digests = append(st.digests, d)
	}
	if len(st.names) == 0 {
		return nil, fmt.Errorf("no token variables named")
	}
	return st, nil
}

// Names are the variables whose tokens are accepted.
func (s *StaticTokens) Names() []string { return slices.Clone(s.names) }

// Verify accepts a request whose bearer token equals one of the tokens.
// Both sides are hashed first, so the comparison takes the same time
// whatever the presented token's length or how much of it matches, and
// every configured token is compared, matched or not.
func (s *StaticTokens) Verify(r *http.Request) (Principal, error) {
	tok, err := BearerToken(r)
	if err != nil {
		return Principal{}, err
	}
	d := sha256.Sum256([]byte(tok))
	found := -1
	for i := range s.digests {
		if subtle.ConstantTimeCompare(d[:], s.digests[i][:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Principal{}, invalidToken("the token matches no configured token")
	}
	return Principal{Method: MethodToken, Name: s.names[found], Claims: map[string]string{"sub": s.names[found]}}, nil
}
