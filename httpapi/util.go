package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
)

func itoa(n int) string { return strconv.Itoa(n) }

func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strconv.Quote(s)
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// readLimited reads r's body, of at most limit bytes (else an error that
// is an *http.MaxBytesError). With a Content-Length within the limit, it
// reads into a buffer of exactly that size: io.ReadAll grows its buffer by
// a quarter at a time and allocates some four times a body of a few MiB.
func readLimited(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, limit)
	if n := r.ContentLength; n > 0 && n <= limit {
		// net/http ends the body at its Content-Length, and a shorter
		// one is io.ErrUnexpectedEOF.
		buf := make([]byte, n)
		if _, err := io.ReadFull(body, buf); err != nil {
			return nil, err
		}
		return buf, nil
	}
	return io.ReadAll(body)
}
