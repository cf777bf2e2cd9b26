package aggregate

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDocFigures: the figures docs/aggregate.md and docs/decisions.md
// give are the package's own.
func TestDocFigures(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "docs", name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(strings.Fields(string(b)), " ")
	}
	secs := func(d time.Duration) string { return fmt.Sprintf("%g s", d.Seconds()) }
	for _, tt := range []struct{ doc, says string }{
		{"aggregate.md", fmt.Sprintf("up to %d pages", DefaultMaxPages)},
		{"aggregate.md", fmt.Sprintf("toward the client** hold %d entries", DefaultPageSize)},
		{"aggregate.md", fmt.Sprintf("(default %s) is how long a list waits", secs(DefaultListTimeout))},
		{"aggregate.md", fmt.Sprintf("has at most %d characters (so `SERVER__X` fits in %d)", MaxServerName, MaxName)},
		{"aggregate.md", "must match `" + exposedName.String() + "`"},
		{"aggregate.md", fmt.Sprintf("past %d waiting", DefaultMaxAsks)},
		{"aggregate.md", fmt.Sprintf("stopped reading (the last %d such)", maxLeft)},
		{"aggregate.md", "at most one per second"}, // DefaultAnnounceInterval, below
		{"aggregate.md", "`" + URIScheme + "://SERVER/ORIGINAL`"},
		{"decisions.md", fmt.Sprintf("pages hold %d entries", DefaultPageSize)},
		{"decisions.md", fmt.Sprintf("`--aggregate-list-timeout` (%s)", secs(DefaultListTimeout))},
		{"decisions.md", "`" + exposedName.String() + "` is the strictest"},
	} {
		if !strings.Contains(read(tt.doc), tt.says) {
			t.Errorf("docs/%s does not say %q", tt.doc, tt.says)
		}
	}
	if DefaultAnnounceInterval != time.Second {
		t.Errorf("docs/aggregate.md says a second between announcements; DefaultAnnounceInterval is %v", DefaultAnnounceInterval)
	}
}
