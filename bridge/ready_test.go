package bridge

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// TestReadyPingsSharedChild: a shared child that answers ping is ready;
// one that reads nothing (sleep) is reported unresponsive.
func TestReadyPingsSharedChild(t *testing.T) {
	badchild := testpeers.BuildGo(t, "./testdata/badchild")
	for _, tc := range []struct {
		name    string
		command []string
		want    error
	}{
		{"answers", []string{badchild}, nil},
		{"hung", []string{"sleep", "1000"}, ErrSharedUnresponsive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := New(Config{Command: tc.command, Mode: ModeShared, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close(context.Background()) })
			if _, err := b.sharedUpstream(t.Context(), ""); err != nil {
				t.Fatal(err)
			}
			if err := b.Ready(); !errors.Is(err, tc.want) && !(tc.want == nil && err == nil) {
				t.Fatalf("Ready() = %v, want %v", err, tc.want)
			}
		})
	}
}
