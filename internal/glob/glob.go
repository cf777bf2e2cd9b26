// Package glob owns the one pattern syntax of tool names: * is any run of
// characters and ? is one, nothing else is special. The tool policy
// (auth) and the aggregate's per-server tool filter (aggregate) match
// with it, so a pattern means the same wherever the configuration takes
// one. It imports nothing.
package glob

// Match reports whether name matches pattern: * is any run of characters
// (slashes and dots included: tool names are not paths), ? is one
// character, and every other byte stands for itself.
func Match(pattern, name string) bool {
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

// Literal reports whether pattern matches one name only, itself.
func Literal(pattern string) bool {
	for i := range len(pattern) {
		if pattern[i] == '*' || pattern[i] == '?' {
			return false
		}
	}
	return true
}
