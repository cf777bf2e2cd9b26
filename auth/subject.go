package auth

import (
	"errors"
	"fmt"
	"strings"
)

// Subject names a set of principals, in the syntax the tool policy's
// rules and the web page's admins share: "*" (every principal, the
// anonymous one included), "scope:NAME" (principals granted that scope),
// "token:NAME" (the token of variable NAME), "jwt:SUB" (JWTs with that
// sub), or a bare name, which means either of the last two.
type Subject string

// ParseSubject checks s: a prefix with nothing after it names nobody, and
// is a mistake rather than a rule.
func ParseSubject(s string) (Subject, error) {
	if s == "" {
		return "", errors.New("the subject is empty")
	}
	for _, prefix := range []string{"scope:", MethodToken + ":", MethodJWT + ":"} {
		if rest, ok := strings.CutPrefix(s, prefix); ok && rest == "" {
			return "", errors.New("the " + strings.TrimSuffix(prefix, ":") + " is empty")
		}
	}
	return Subject(s), nil
}

// Matches reports whether p is one of the principals s names.
func (s Subject) Matches(p Principal) bool {
	if s == "*" {
		return true
	}
	if scope, ok := strings.CutPrefix(string(s), "scope:"); ok {
		return p.HasScope(scope)
	}
	if name, ok := strings.CutPrefix(string(s), MethodToken+":"); ok {
		return p.Method == MethodToken && p.Name == name
	}
	if name, ok := strings.CutPrefix(string(s), MethodJWT+":"); ok {
		return p.Method == MethodJWT && p.Name == name
	}
	return p.Method != "" && string(s) == p.Name
}

// Subjects is a list of subjects; it names the principals any of them
// names. The empty list names nobody.
type Subjects []Subject

// ParseSubjects checks each of list.
func ParseSubjects(list []string) (Subjects, error) {
	var out Subjects
	for _, s := range list {
		sub, err := ParseSubject(s)
		if err != nil {
			return nil, fmt.Errorf("subject %q: %w", s, err)
		}
		out = append(out, sub)
	}
	return out, nil
}

// Match reports whether any of ss matches p.
func (ss Subjects) Match(p Principal) bool {
	for _, s := range ss {
		if s.Matches(p) {
			return true
		}
	}
	return false
}
