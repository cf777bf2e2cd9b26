package bridge

import (
	"net/url"
	"regexp"
	"strings"
)

// Masked replaces what RedactArgv hides.
const Masked = "****"

// RedactArgv is argv as it may be shown (the web page's Server panel):
// the program and its arguments, with the values that look secret
// replaced by Masked. Secrets belong in the child's environment, which is
// never shown; this catches the ones passed as arguments anyway. The rule
// is a heuristic that errs towards hiding:
//
//   - the value of a flag whose name looks secret (secretName), given as
//     --name=value or as --name value (the next argument, unless it is a
//     flag itself);
//   - the value of a NAME=value argument (docker -e, env) whose name looks
//     secret;
//   - the value of a "Name: value" header argument whose name looks secret
//     (mcp-remote --header "Authorization: Bearer ...");
//   - in a URL, its user info (user:password@, or a token as the user) and
//     the values of query parameters whose names look secret;
//   - an argument shaped like a well-known token (secretShape).
//
// argv itself is not modified.
func RedactArgv(argv []string) []string {
	out := make([]string, len(argv))
	maskNext := false
	for i, a := range argv {
		if i == 0 {
			out[i] = a // the program
			continue
		}
		if maskNext && !isFlag(a) {
			out[i], maskNext = Masked, false
			continue
		}
		out[i], maskNext = redactArg(a)
	}
	return out
}

// redactArg redacts one argument; next says the argument after it is the
// value of a secret flag.
func redactArg(a string) (s string, next bool) {
	if isFlag(a) {
		name, val, hasVal := strings.Cut(a, "=")
		switch {
		case !hasVal:
			return a, secretName(name)
		case secretName(name):
			return name + "=" + Masked, false
		default:
			return name + "=" + redactValue(val), false
		}
	}
	if name, val, ok := strings.Cut(a, "="); ok && envName.MatchString(name) {
		if secretName(name) {
			return name + "=" + Masked, false
		}
		return name + "=" + redactValue(val), false
	}
	if m := header.FindStringSubmatch(a); m != nil && secretName(m[1]) {
		return m[1] + ":" + m[2] + Masked, false
	}
	return redactValue(a), false
}

// redactValue redacts a value that may be a URL or a token. A URL is
// edited as text, not re-encoded, so the rest of it reads as given.
func redactValue(v string) string {
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
			if name, err := url.QueryUnescape(k); ok && err == nil && secretName(name) {
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

// isFlag: -x, --name, --name=value; not "-" (stdin) or "--".
func isFlag(a string) bool {
	return len(a) > 1 && a[0] == '-' && a != "--"
}

// secretWords are the parts of names that name secrets.
var secretWords = []string{"key", "token", "secret", "pass", "pwd", "auth", "credential", "cookie", "private", "signature", "dsn"}

// secretName reports whether a flag, variable, header or parameter name
// looks like it names a secret: --api-key, GITHUB_TOKEN, Authorization,
// client_secret, --password...
func secretName(name string) bool {
	n := strings.ToLower(strings.TrimLeft(name, "-"))
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

var (
	urlScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*$`)
	envName   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)
	// header is "Name: value" or "Name:value", not a URL ("host:port" or
	// "scheme://" has no secret name, or is not matched).
	header = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9-]*):( ?)[^/]`)
	// secretShape matches tokens by their well-known prefixes (OpenAI and
	// Anthropic sk-, GitHub, GitLab, Slack, AWS access keys, npm) and JWTs.
	secretShape = regexp.MustCompile(`^(sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{16,}|xox[abposr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|npm_[A-Za-z0-9]{30,}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)$`)
)
