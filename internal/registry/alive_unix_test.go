//go:build unix

package registry

import "syscall"

// alive reports whether process pid runs (or is a zombie not yet reaped).
func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }
