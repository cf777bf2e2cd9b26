package httpapi

import (
	"fmt"
	"testing"
	"time"
)

// TestOriginLogLimits: each refused origin is logged at warn at most once
// a window, with the count of refusals skipped since; past maxOrigins
// origins, the others share one allowance, so memory stays bounded.
func TestOriginLogLimits(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	l := newOriginLog(nil, func() time.Time { return now })
	type step struct {
		origin  string
		advance time.Duration
		warn    bool
		skipped int
	}
	for i, s := range []step{
		{"https://a.example", 0, true, 0},
		{"https://a.example", time.Second, false, 0},
		{"https://a.example", time.Second, false, 0},
		{"https://b.example", 0, true, 0}, // another origin has its own allowance
		{"https://a.example", originLogWindow, true, 2},
		{"https://a.example", 0, false, 0},
	} {
		now = now.Add(s.advance)
		warn, skipped := l.allow(s.origin)
		if warn != s.warn || skipped != s.skipped {
			t.Errorf("step %d (%s): warn %v, skipped %d; want %v, %d", i, s.origin, warn, skipped, s.warn, s.skipped)
		}
	}

	// Many origins: the map never grows past maxOrigins (plus the shared
	// allowance), and the origins past it are logged once a window.
	l = newOriginLog(nil, func() time.Time { return now })
	warned := 0
	for i := range 10 * maxOrigins {
		if warn, _ := l.allow(fmt.Sprintf("https://o%d.example", i)); warn {
			warned++
		}
	}
	if len(l.seen) > maxOrigins+1 {
		t.Errorf("%d origins remembered, want at most %d", len(l.seen), maxOrigins+1)
	}
	if warned != maxOrigins+1 {
		t.Errorf("%d warnings for %d origins in one window, want %d (one each, then one for the rest)", warned, 10*maxOrigins, maxOrigins+1)
	}
	// A window later, old entries make room for new origins.
	now = now.Add(originLogWindow)
	if warn, _ := l.allow("https://new.example"); !warn {
		t.Error("a new origin, a window later, is not logged")
	}
}

func TestRefusalReason(t *testing.T) {
	for _, tc := range []struct{ origin, want string }{
		{"http://evil.test:8080", "refused-by-mcp-bridge:allow-it-with--allow-origin=http://evil.test:8080"},
		{"null", "refused-by-mcp-bridge:allow-it-with--allow-origin"},
		{"https://x.example, https://y.example", "refused-by-mcp-bridge:allow-it-with--allow-origin"},
		{"https://x.example/path", "refused-by-mcp-bridge:allow-it-with--allow-origin"},
	} {
		if got := refusalReason(tc.origin); got != tc.want {
			t.Errorf("refusalReason(%q) = %q, want %q", tc.origin, got, tc.want)
		}
	}
}
