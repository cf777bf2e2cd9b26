package bridge

import (
	"regexp"
	"strings"

	"github.com/mcp-bridge/mcp-bridge/internal/redact"
)

// Masked replaces what RedactArgv hides.
const Masked = redact.Masked

// RedactArgv is argv as it may be shown (the web page's Server panel):
// the program and its arguments, with the values that look secret
// replaced by Masked, by the heuristic of package redact. Secrets belong
// in the child's environment, which is never shown; this catches the ones
// passed as arguments anyway. The rule errs towards hiding:
//
//   - the value of a flag whose name looks secret (redact.SecretName), given as
//     --name=value or as --name value (the next argument, unless it is a
//     flag itself);
//   - the value of a NAME=value argument (docker -e, env) whose name looks
//     secret;
//   - the value of a "Name: value" header argument whose name looks secret
//     (mcp-remote --header "Authorization: Bearer ...");
//   - in a URL, its user info (user:password@, or a token as the user) and
//     the values of query parameters whose names look secret;
//   - an argument shaped like a well-known token (redact.Value).
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
			return a, redact.SecretName(name)
		case redact.SecretName(name):
			return name + "=" + Masked, false
		default:
			return name + "=" + redact.Value(val), false
		}
	}
	if name, val, ok := strings.Cut(a, "="); ok && envName.MatchString(name) {
		if redact.SecretName(name) {
			return name + "=" + Masked, false
		}
		return name + "=" + redact.Value(val), false
	}
	if m := header.FindStringSubmatch(a); m != nil && redact.SecretName(m[1]) {
		return m[1] + ":" + m[2] + Masked, false
	}
	return redact.Value(a), false
}

// isFlag: -x, --name, --name=value; not "-" (stdin) or "--".
func isFlag(a string) bool {
	return len(a) > 1 && a[0] == '-' && a != "--"
}

var (
	envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)
	// header is "Name: value" or "Name:value", not a URL ("host:port" or
	// "scheme://" has no secret name, or is not matched).
	header = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9-]*):( ?)[^/]`)
)
