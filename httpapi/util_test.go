package httpapi

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
)

// TestReadLimited: a body with a Content-Length is read into one buffer
// of its size (io.ReadAll allocated some four times a body of MiBs); one
// without is read too; one over the limit is refused with a
// *http.MaxBytesError, and one shorter than its Content-Length fails.
func TestReadLimited(t *testing.T) {
	const limit = 4 << 20
	body := bytes.Repeat([]byte("x"), limit)
	t.Run("Content-Length", func(t *testing.T) {
		r := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got, err := readLimited(httptest.NewRecorder(), r, limit)
		runtime.ReadMemStats(&after)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("read %d bytes, %v; want the %d-byte body", len(got), err, len(body))
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > limit+16<<10 {
			t.Errorf("reading a %d-byte body allocated %d bytes, want at most its size and 16 KiB", len(body), alloc)
		}
	})
	t.Run("chunked", func(t *testing.T) {
		r := httptest.NewRequest(http.MethodPost, "/mcp", io.NopCloser(bytes.NewReader(body[:1000])))
		r.ContentLength = -1
		if got, err := readLimited(httptest.NewRecorder(), r, limit); err != nil || len(got) != 1000 {
			t.Errorf("read %d bytes, %v; want 1000", len(got), err)
		}
	})
	for _, cl := range []int64{limit + 1, -1} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", io.NopCloser(bytes.NewReader(append(body, 'x'))))
		r.ContentLength = cl
		var mbe *http.MaxBytesError
		if _, err := readLimited(httptest.NewRecorder(), r, limit); !errors.As(err, &mbe) {
			t.Errorf("a body over the limit (Content-Length %d): %v, want a *http.MaxBytesError", cl, err)
		}
	}
	r := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body[:100]))
	r.ContentLength = 200
	if got, err := readLimited(httptest.NewRecorder(), r, limit); err == nil {
		t.Errorf("a body shorter than its Content-Length: read %d bytes (padded?) and no error", len(got))
	}
}
