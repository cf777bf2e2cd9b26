package httpapi

// Formatting for what the client reads: numbers in headers, values
// quoted in error messages, sizes in limits' messages.

import (
	"fmt"
	"strconv"
)

func itoa(n int) string { return strconv.Itoa(n) }

// quote quotes a value of the client's for an error message, cut at 64
// bytes: an error never echoes a whole body back.
func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strconv.Quote(s)
}

// byteSize writes a limit as its users set it: MiB or KiB when exact.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
