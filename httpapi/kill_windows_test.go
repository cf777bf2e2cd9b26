package httpapi_test

import (
	"syscall"

	"golang.org/x/sys/windows"
)

// kill0 is what kill(pid, 0) says on Unix: nil while pid names a running
// process, syscall.ESRCH once it has exited.
func kill0(pid int) error {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return syscall.ESRCH
	}
	defer windows.CloseHandle(h)
	var code uint32
	const stillActive = 259 // STILL_ACTIVE
	if err := windows.GetExitCodeProcess(h, &code); err != nil || code != stillActive {
		return syscall.ESRCH
	}
	return nil
}
