//go:build !linux

package stdio

import (
	"context"
	"log/slog"
)

// EnableSubreaper does nothing here: only Linux lets a process adopt the
// orphans of its descendants. On macOS an orphan goes to launchd, and on
// Windows a process leaves no zombie; launchd and Windows clean up after
// them, so none stays a zombie. (Killing them is the tree's work: see
// Containment.)
func EnableSubreaper(context.Context, *slog.Logger) error { return nil }

// ReapOrphans does nothing here: no orphan comes to the bridge (see
// EnableSubreaper).
func ReapOrphans(context.Context) error { return nil }
