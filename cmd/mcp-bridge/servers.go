package main

// --config: the servers of the file, served and changed by
// internal/registry, reread on SIGHUP.

import (
	"context"
	"log/slog"
	"os"

	"github.com/mcp-bridge/mcp-bridge/internal/registry"
)

// reloadOn rereads the file on every signal until ctx ends. A file that
// cannot be read or is invalid changes nothing.
func reloadOn(ctx context.Context, reg *registry.Registry, sig <-chan os.Signal, file string, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sig:
			log.Info("reloading the servers", "config", file)
			if err := reg.Reload(); err != nil {
				log.Error("reload failed; the servers stay as they were", "err", err)
			}
		}
	}
}
