package bridge

import (
	"context"
	"log/slog"

	"github.com/mcp-bridge/mcp-bridge/stdio"
)

// child is what the bridge needs of a child: *stdio.Child, a process, in
// production; an in-memory one in the bridge's unit tests
// (memchild_test.go), as the MCP Go SDK's tests run an in-memory
// transport. What the child writes reaches the bridge through the
// callbacks it was started with (stdio.Options.OnMessage, OnOversize),
// in order, all of it before Done is closed.
type child interface {
	// Write sends one message, a line of JSON without its newline;
	// stdio.ErrStalled once the child has stopped reading.
	Write(msg []byte) error
	// Done is closed once the child has exited and everything it wrote
	// has been handed over.
	Done() <-chan struct{}
	// StdoutClosed is closed once the child can write nothing more.
	StdoutClosed() <-chan struct{}
	// Err says how the child ended, once Done is closed.
	Err() error
	Pid() int
	// Kill ends the child at once; Stop with the grace sequence, and may
	// be called more than once.
	Kill()
	Stop(ctx context.Context) error
	// StderrTail is the last lines the child wrote to stderr.
	StderrTail() []string
	// SetLogger labels the child's log lines (a pooled child gets its
	// session's logger).
	SetLogger(l *slog.Logger)
}

var _ child = (*stdio.Child)(nil)

// startFunc starts a child with opts.
type startFunc func(opts stdio.Options) (child, error)

// startProcess starts a child process: the bridge's startFunc but in its
// own tests.
func startProcess(opts stdio.Options) (child, error) {
	c, err := stdio.Start(opts)
	if err != nil {
		return nil, err // not a nil *stdio.Child in a non-nil child
	}
	return c, nil
}
