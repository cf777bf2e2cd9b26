// Package redact owns the heuristic by which the bridge hides what looks
// secret before showing it to people: names that name secrets (--api-key,
// GITHUB_TOKEN, client_secret), values shaped like well-known tokens, the
// user info and secret query parameters of URLs. bridge.RedactArgv applies
// it to a server's command line (the web page, the registry API); JSON
// applies it to a tool call's arguments (an approval's question). One rule,
// so what is hidden in one place is hidden in the other.
package redact

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Masked replaces what is hidden.
const Masked = "****"

// secretWords are the parts of names that name secrets.
var secretWords = []string{"key", "token", "secret", "pass", "pwd", "auth", "credential", "cookie", "private", "signature", "dsn"}

// SecretName reports whether a flag, variable, header, parameter or field
// name looks like it names a secret: --api-key, GITHUB_TOKEN,
// Authorization, client_secret, --password...
func SecretName(name string) bool {
	n := strings.ToLower(strings.TrimLeft(name, "-"))
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// Value redacts a value that may be a URL or a token: Masked for a token
// of a well-known shape; for a URL its user info and the values of query
// parameters whose names look secret. A URL is edited as text, not
// re-encoded, so the rest of it reads as given.
func Value(v string) string {
	if secretShape.MatchString(v) {
		return Masked
	}
	scheme, rest, ok := strings.Cut(v, "://")
	if !ok || !urlScheme.MatchString(scheme) {
		return v
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		authority = Masked + authority[at:]
	}
	path, query, hasQuery := strings.Cut(tail, "?")
	if hasQuery {
		query, fragment, hasFragment := strings.Cut(query, "#")
		params := strings.Split(query, "&")
		for i, p := range params {
			k, _, ok := strings.Cut(p, "=")
			if name, err := url.QueryUnescape(k); ok && err == nil && SecretName(name) {
				params[i] = k + "=" + Masked
			}
		}
		tail = path + "?" + strings.Join(params, "&")
		if hasFragment {
			tail += "#" + fragment
		}
	}
	return scheme + "://" + authority + tail
}

var (
	urlScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*$`)
	// secretShape matches tokens by their well-known prefixes (OpenAI and
	// Anthropic sk-, GitHub, GitLab, Slack, AWS access keys, npm) and JWTs.
	secretShape = regexp.MustCompile(`^(sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{16,}|xox[abposr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|npm_[A-Za-z0-9]{30,}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)$`)
)

// JSON is a JSON value as it may be shown: the value of every member
// whose name looks secret (SecretName) replaced by Masked, whatever it is
// (a string, a number, an object), and every other string through Value,
// at any depth. Keys come out sorted, numbers as written. Bytes that are
// not one JSON value come back as a JSON string saying so, never as they
// are: they may hold anything.
func JSON(raw []byte) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil || d.More() {
		return json.RawMessage(`"(not valid JSON)"`)
	}
	// Shown to people: & < > as they are, not as \u0026 and the like.
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(walk(v)); err != nil {
		return json.RawMessage(`"(not valid JSON)"`)
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n"))
}

func walk(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Collect(maps.Keys(v)) {
			if SecretName(k) {
				v[k] = Masked
			} else {
				v[k] = walk(v[k])
			}
		}
		return v
	case []any:
		for i := range v {
			v[i] = walk(v[i])
		}
		return v
	case string:
		return Value(v)
	}
	return v
}
