package auth

import (
	"errors"
	"fmt"
	"strings"
)

// ToolRule allows or denies the tools whose names match Glob to the
// principals Subject names.
type ToolRule struct {
	// Subject names the principals the rule applies to: see Subject
	// for the syntax.
	Subject string
	// Glob matches tool names: * is any run of characters, ? one.
	Glob string
	// Deny makes it a deny rule.
	Deny bool
}

// ParseToolRule reads "SUBJECT=GLOB". Its errors do not repeat the rule:
// a setting's value is never echoed (it may be a secret put in the wrong
// place); the caller says which rule it was.
func ParseToolRule(s string, deny bool) (ToolRule, error) {
	subject, glob, ok := strings.Cut(s, "=")
	if !ok || subject == "" || glob == "" {
		return ToolRule{}, errors.New("tool rule: want SUBJECT=GLOB (SUBJECT: *, scope:NAME or a principal)")
	}
	if _, err := ParseSubject(subject); err != nil {
		return ToolRule{}, fmt.Errorf("tool rule: %w", err)
	}
	return ToolRule{Subject: subject, Glob: glob, Deny: deny}, nil
}

// ToolPolicy decides which tools each principal may list and call. A tool
// is allowed to a principal when no deny rule that applies to the
// principal matches it, and either no allow rule applies to the principal
// or one that does matches it. Deny wins; without rules everything is
// allowed.
type ToolPolicy struct {
	rules []ToolRule
}

// NewToolPolicy returns the policy of rules; nil for no rules.
func NewToolPolicy(rules []ToolRule) *ToolPolicy {
	if len(rules) == 0 {
		return nil
	}
	return &ToolPolicy{rules: rules}
}

// ToolFilter is one principal's view of a ToolPolicy.
type ToolFilter struct {
	allow, deny []string
}

// For returns p's filter, or nil when no rule applies to p (every tool
// is allowed). A nil policy has no rules.
func (tp *ToolPolicy) For(p Principal) *ToolFilter {
	if tp == nil {
		return nil
	}
	var f ToolFilter
	for _, r := range tp.rules {
		if !r.appliesTo(p) {
			continue
		}
		if r.Deny {
			f.deny = append(f.deny, r.Glob)
		} else {
			f.allow = append(f.allow, r.Glob)
		}
	}
	if f.allow == nil && f.deny == nil {
		return nil
	}
	return &f
}

func (r ToolRule) appliesTo(p Principal) bool { return Subject(r.Subject).Matches(p) }

// Allowed reports whether the filter lets tool through. A nil filter
// allows everything.
func (f *ToolFilter) Allowed(tool string) bool {
	if f == nil {
		return true
	}
	for _, g := range f.deny {
		if globMatch(g, tool) {
			return false
		}
	}
	if f.allow == nil {
		return true
	}
	for _, g := range f.allow {
		if globMatch(g, tool) {
			return true
		}
	}
	return false
}

// GlobMatch reports whether name matches pattern, as the tool policy's
// globs do: * is any run of characters, ? one. The approval rules match
// tools by the same globs.
func GlobMatch(pattern, name string) bool { return globMatch(pattern, name) }

// globMatch matches name against a pattern where * is any run of
// characters (slashes and dots included: tool names are not paths) and ?
// is one character.
func globMatch(pattern, name string) bool {
	p, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == name[n]):
			p++
			n++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
		case star >= 0:
			p = star + 1
			mark++
			n = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
