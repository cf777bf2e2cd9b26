package stdio

import "strings"

// Environ builds a child's environment: every variable of parent except
// those hidden says to hide, then extra ("K=V", overriding a variable of the
// same name). The rule the bridge documents is exactly this: pass the
// environment through (npx and friends need PATH, HOME, ...), minus the
// bridge's own settings and secrets, plus what the user adds.
func Environ(parent []string, hidden func(name string) bool, extra []string) []string {
	out := make([]string, 0, len(parent)+len(extra))
	override := make(map[string]bool, len(extra))
	for _, kv := range extra {
		override[envName(kv)] = true
	}
	for _, kv := range parent {
		name := envName(kv)
		if override[name] || (hidden != nil && hidden(name)) {
			continue
		}
		out = append(out, kv)
	}
	return append(out, extra...)
}

func envName(kv string) string {
	if i := strings.IndexByte(kv, '='); i >= 0 {
		return kv[:i]
	}
	return kv
}
