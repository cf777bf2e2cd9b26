package glob

import "testing"

func TestMatch(t *testing.T) {
	for _, tt := range []struct {
		pattern, name string
		want          bool
	}{
		{"echo", "echo", true},
		{"echo", "echo2", false},
		{"echo", "ech", false},
		{"*", "", true},
		{"*", "anything.at/all", true},
		{"read_*", "read_file", true},
		{"read_*", "write_file", false},
		{"*_file", "read_file", true},
		{"*file*", "a_file_b", true},
		{"?", "a", true},
		{"?", "", false},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYbZ", false},
		{"", "", true},
		{"", "a", false},
	} {
		if got := Match(tt.pattern, tt.name); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}

func TestLiteral(t *testing.T) {
	for _, tt := range []struct {
		pattern string
		want    bool
	}{{"echo", true}, {"read_*", false}, {"a?", false}, {"", true}} {
		if got := Literal(tt.pattern); got != tt.want {
			t.Errorf("Literal(%q) = %v, want %v", tt.pattern, got, tt.want)
		}
	}
}
