package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
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
// errors. None shows a token, and a name is shown only when it names a
// variable that is set: a "name" that is not one may well be the token
// itself, given where its variable's name belongs (--token-env
// "$(cat token.txt)"); such a name is told by its place in names.
func TokensFromEnv(names []string, lookup func(string) (string, bool)) (*StaticTokens, error) {
	st := &StaticTokens{}
	seen := map[[sha256.Size]byte]string{}
	for i, name := range names {
		given := nth(i, len(names))
		if !envNameRE.MatchString(name) {
			return nil, fmt.Errorf("%s is not a valid variable name: give the NAME of a variable that holds a token, never the token", given)
		}
		tok, ok := lookup(name)
		switch {
		case slices.Contains(st.names, name): // set: it was read before
			return nil, fmt.Errorf("token variable %s is named twice", name)
		case !ok:
			return nil, fmt.Errorf("%s is not a variable set in the environment: give the NAME of a variable that holds a token, never the token", given)
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

// nth names the i-th of n names by its place: "the name given" when it is
// the only one, else "the 2nd name given".
func nth(i, n int) string {
	if n == 1 {
		return "the name given"
	}
	return "the " + Ordinal(i+1) + " name given"
}

// Ordinal is n as "1st", "2nd", "3rd", "4th"...
func Ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
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
