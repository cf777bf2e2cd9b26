//go:build unix

package httpapi_test

import "syscall"

// kill0 is kill(pid, 0): nil while pid names a process, syscall.ESRCH
// once it is gone (reaped).
func kill0(pid int) error { return syscall.Kill(pid, 0) }
