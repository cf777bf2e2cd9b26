//go:build unix

package main

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// runDaemon starts a server process (HAProxy, nginx) in a process group
// of its own and stops it when the test ends: SIGTERM, then, should it
// hang, SIGKILL to the whole group, workers included.
func runDaemon(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second): // a safety net, not a timing assertion
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
}
