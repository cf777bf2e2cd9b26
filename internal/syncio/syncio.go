// Package syncio owns the one writer that several goroutines share:
// Writer serialises their writes, so the lines of several audit logs, or
// the stderr of several children, never interleave or race.
package syncio

import (
	"io"
	"sync"
)

// Writer serialises writes to an io.Writer: each Write is whole before
// the next begins.
type Writer struct {
	mu sync.Mutex
	w  io.Writer
}

// NewWriter returns w behind a lock; a Writer already is one, and is
// returned as it is.
func NewWriter(w io.Writer) *Writer {
	if l, ok := w.(*Writer); ok {
		return l
	}
	return &Writer{w: w}
}

func (l *Writer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
