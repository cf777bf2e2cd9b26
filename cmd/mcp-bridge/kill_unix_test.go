//go:build unix

package main

import "syscall"

// killPid sends SIGKILL to pid, if it is still there.
func killPid(pid int) { _ = syscall.Kill(pid, syscall.SIGKILL) }
