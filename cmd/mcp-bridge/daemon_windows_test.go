package main

import (
	"os/exec"
	"testing"
	"time"
)

// runDaemon starts a server process and stops it when the test ends.
// Windows has no SIGTERM to send it: it is terminated.
func runDaemon(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		select {
		case <-done:
		case <-time.After(30 * time.Second): // a safety net, not a timing assertion
		}
	})
}
