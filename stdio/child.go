// Package stdio owns one child process that speaks newline-delimited
// JSON-RPC on its stdin and stdout: spawning it contained (a PID
// namespace, a cgroup, a Job Object or a process group of its own; see
// Containment) with an explicit environment, framing what it writes,
// draining its stderr, and stopping it so that nothing it started is left
// behind, orphan or zombie, even when the bridge itself is killed (what
// each system allows of that, Containment says). It knows nothing of
// HTTP, sessions or JSON-RPC semantics.
package stdio

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Defaults for the zero values of Options.
const (
	DefaultMaxLineBytes  = 16 << 20 // the go-sdk's StdioTransport limit
	DefaultStderrLines   = 50
	DefaultStderrLineMax = 4 << 10
	DefaultStopGrace     = 2 * time.Second
	// oversizeKeep is how much of the start and the end of an oversize line
	// is kept, so the caller can still find the id of the response it was.
	oversizeKeep = 4 << 10
	// SpliceSlack is the spare capacity, at least, of a message handed to
	// OnMessage as owned (see Options.OnMessage): room for a longer id.
	SpliceSlack = 512
	// readBuf is the size of the stdout reader's buffer: a line that fits
	// it is delivered from it without a copy. It is also the size of the
	// blocks a longer line is gathered in (see longLine).
	readBuf = 64 << 10
)

// ErrClosed is returned by Write once the child's stdin is closed.
var ErrClosed = errors.New("child stdin closed")

// ErrStalled is returned by Write once the child has left a message
// unread for longer than Options.WriteStall: it has stopped reading its
// stdin. Every later Write returns it too, since the message may have been
// cut short mid-line and the child's framing is broken.
var ErrStalled = errors.New("the child stopped reading its stdin")

// Options configures a child. The zero value of every field but Argv works.
type Options struct {
	// Argv is the program and its arguments. No shell is involved, so
	// nothing in an argument is interpreted.
	Argv []string
	// Dir is the working directory; empty means the bridge's own.
	Dir string
	// Env is the child's entire environment. Nil means an empty one: the
	// child never inherits the bridge's environment implicitly, because that
	// holds the bridge's own secrets (see Environ). ContainProcessGroup
	// adds ContainmentMarkEnv to it.
	Env []string
	// MaxLineBytes caps one stdout line (one JSON-RPC message). A longer
	// line is discarded up to its newline and reported to OnOversize.
	// Default 16 MiB.
	MaxLineBytes int
	// StderrLines is how many of the last stderr lines are kept for
	// StderrTail. Default 50.
	StderrLines int
	// StopGrace is each of the two waits in Stop: after closing stdin and
	// after SIGTERM (on Windows, which has no SIGTERM, only the first).
	// Default 2 s.
	StopGrace time.Duration
	// WriteStall bounds how long one Write may wait for the child to take
	// a message from its stdin pipe (which holds 64 KiB); past it Write
	// returns ErrStalled, for good. A child busy with one long call may
	// leave its stdin unread for a while, so make it generous. Default 0:
	// no bound (Stop and Kill still end a blocked Write).
	WriteStall time.Duration
	// Containment is how this child and what it starts are contained.
	// Default (empty or ContainAuto): the process-wide strategy (see
	// ContainmentInUse). A strategy this system cannot give fails Start.
	Containment Containment
	// Sandbox is what the child may touch, and the binary it must be.
	// Default nil: no sandbox, the child can do whatever the bridge's user
	// can. A child refused by its sandbox or its pin, or whose program
	// cannot be executed inside it, fails Start with a *StartError.
	Sandbox *Sandbox
	// Logger receives stderr lines and framing problems; the child's pid
	// is added to it. Default slog.Default().
	Logger *slog.Logger
	// OnMessage is called on the child's reader goroutine, in order, for
	// every stdout line that looks like JSON, with surrounding white space
	// removed. Who owns msg depends on owned:
	//   - owned false (a line that fit the reader's 64 KiB buffer): msg is
	//     a slice of that buffer, valid only during the call, because the
	//     next read overwrites it. A callee that keeps it must copy it.
	//     This is the common case, and it costs no copy at all.
	//   - owned true (a longer line): msg is a buffer of its own, joined
	//     once from the chunks the line came in, which the reader never
	//     touches again. The callee may keep it without a copy and may
	//     change it, up to its capacity: at least SpliceSlack bytes are
	//     spare, so a longer id can be put in place by moving what follows
	//     it rather than by copying the whole message.
	OnMessage func(msg []byte, owned bool)
	// OnOversize is called on the reader goroutine for every line over
	// MaxLineBytes, after it has been skipped.
	OnOversize func(Oversize)
}

// Oversize describes a stdout line that was over the cap and was dropped.
type Oversize struct {
	Size int64  // bytes in the line, newline excluded
	Head []byte // its first bytes (up to 4 KiB)
	Tail []byte // its last bytes (up to 4 KiB)
}

// Child is one running child process. Its methods are safe for concurrent use.
type Child struct {
	opts   Options
	tree   tree // the child and everything it starts
	pid    int
	log    atomic.Pointer[slog.Logger]
	stdin  *os.File
	stdout *os.File
	stderr *os.File

	writeMu sync.Mutex // one writer on stdin: serialises every message
	wbuf    []byte     // reused to write a message and its newline at once
	// closed is set once stdin is closed. closeStdin does not take
	// writeMu: a Write blocked on a child that has stopped reading holds
	// it, and only closing the pipe ends that Write.
	closed atomic.Bool
	// Guarded by writeMu: the write deadline in force (WriteStall), and
	// whether a write ran past it.
	deadline time.Time
	stalled  bool

	stopOnce sync.Once
	stopped  atomic.Bool   // Stop or Kill was called: the bridge ended it
	done     chan struct{} // closed when the child is reaped and stdout is read to its end
	err      error         // how it ended; set before done closes

	stdoutDone chan struct{} // closed when stdout is read to its end (StdoutClosed)

	tailMu sync.Mutex
	tail   []string // ring of the last stderr lines
	next   int
	// notable are the first stderr lines of a sandboxed child that say
	// what the sandbox may have refused it (notable), kept for its end:
	// a crash dump can push them out of the tail.
	notable []string

	skipped atomic.Int64 // non-JSON stdout lines skipped
}

// Start spawns the child. Its stdout and stderr are read until the child
// and everything it started are gone.
func Start(opts Options) (*Child, error) {
	if len(opts.Argv) == 0 || opts.Argv[0] == "" {
		return nil, errors.New("stdio: empty command")
	}
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	if opts.StderrLines <= 0 {
		opts.StderrLines = DefaultStderrLines
	}
	if opts.StopGrace <= 0 {
		opts.StopGrace = DefaultStopGrace
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.OnMessage == nil {
		opts.OnMessage = func([]byte, bool) {}
	}

	// The program is found as LookPath says, in the child's PATH: what the
	// bridge checked at start and what /readyz checks is what runs.
	path, err := LookPath(opts.Argv[0], opts.Dir, opts.Env)
	if err != nil {
		return nil, fmt.Errorf("stdio: start %q: %w", opts.Argv[0], err)
	}
	if hasPathSep(opts.Argv[0]) {
		path = opts.Argv[0] // relative to Dir, which os/exec and the kernel apply
	}
	// Plain os.Pipe pairs rather than cmd.StdoutPipe: exec then hands the
	// files straight to the child with no copying goroutines, Wait does not
	// close our read ends under the reader (golang/go#60309), and our stdin
	// end is pollable, so Close unblocks a Write stuck on a child that does
	// not read.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stdio: stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, fmt.Errorf("stdio: stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, fmt.Errorf("stdio: stderr pipe: %w", err)
	}

	cmd := exec.Command(path, opts.Argv[1:]...)
	cmd.Args[0] = opts.Argv[0]
	cmd.Dir = opts.Dir
	cmd.Env = opts.Env
	if cmd.Env == nil {
		cmd.Env = []string{} // nil would mean "inherit everything"
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if cmd.Err != nil { // the program was not found
		closeAll(inR, inW, outR, outW, errR, errW)
		return nil, fmt.Errorf("stdio: start %q: %w", opts.Argv[0], cmd.Err)
	}

	// A sandboxed child is its launcher first, which confines itself and
	// then becomes the command (sandbox_*.go).
	sp, err := prepareSandbox(opts.Sandbox, cmd, opts.Dir, opts.Env)
	if err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		return nil, opts.Sandbox.refused(opts.Argv[0], err)
	}

	// The tree leads a process group (or a job) of its own at least, so
	// stopping it reaches everything it started (npx -> sh -> node), and a
	// terminal's Ctrl-C reaches only the bridge, which then stops children
	// in order.
	tr, err := startContained(cmd, opts.Containment, sp)
	sp.started()
	if err != nil {
		sp.close()
		closeAll(inR, inW, outR, outW, errR, errW)
		return nil, fmt.Errorf("stdio: start %q: %w", opts.Argv[0], err)
	}
	// The child holds its own copies now; ours would keep EOF from coming.
	closeAll(inR, outW, errW)
	if serr := sp.await(opts.Logger); serr != nil {
		// The launcher said why, and has exited or is about to.
		tr.signal(syscall.SIGKILL)
		_ = tr.wait()
		closeAll(inW, outR, errR)
		return nil, opts.Sandbox.refused(opts.Argv[0], serr)
	}

	c := &Child{
		opts:   opts,
		tree:   tr,
		pid:    tr.pid(),
		stdin:  inW,
		stdout: outR,
		stderr: errR,
		done:   make(chan struct{}),
		tail:   make([]string, 0, opts.StderrLines),
	}
	c.log.Store(opts.Logger.With("child_pid", c.pid))

	c.stdoutDone = make(chan struct{})
	stderrDone := make(chan struct{})
	go func() { defer close(c.stdoutDone); c.readStdout() }()
	go func() { defer close(stderrDone); c.drainStderr() }()
	go c.supervise(c.stdoutDone, stderrDone)
	return c, nil
}

// SetLogger replaces the logger of the child's lines (a pooled child gets
// its session's once it has one); the child's pid is added to it.
func (c *Child) SetLogger(l *slog.Logger) {
	c.log.Store(l.With("child_pid", c.pid))
}

// Pid is the command's process id as this process sees it (not that of an
// init process around it), which is also its process group id.
func (c *Child) Pid() int { return c.pid }

// Done is closed once the child has exited, has been reaped, and every line
// it wrote to stdout has been handed to OnMessage.
func (c *Child) Done() <-chan struct{} { return c.done }

// StdoutClosed is closed once stdout has reached its end and every line
// on it has been handed to OnMessage: the child can write nothing more.
// That happens as the child exits (Done follows), or while it runs on
// after closing its stdout; either way it can no longer answer.
func (c *Child) StdoutClosed() <-chan struct{} { return c.stdoutDone }

// Err says how the child ended: nil for exit status 0, else an *ExitError
// or the error that stopped it. Valid once Done is closed.
func (c *Child) Err() error {
	<-c.done
	return c.err
}

// SkippedLines is how many non-JSON stdout lines were skipped.
func (c *Child) SkippedLines() int64 { return c.skipped.Load() }

// Write sends one message. msg must be a single line of JSON (compact it
// first); Write adds the newline. Messages from concurrent callers never
// interleave.
func (c *Child) Write(msg []byte) error {
	if bytes.IndexByte(msg, '\n') >= 0 {
		return errors.New("stdio: message contains a newline")
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if c.closed.Load() {
		return ErrClosed
	}
	if c.stalled {
		return fmt.Errorf("stdio: write to child %d: %w", c.pid, ErrStalled)
	}
	c.armDeadlineLocked()
	var err error
	if len(msg) <= 64<<10 {
		c.wbuf = append(append(c.wbuf[:0], msg...), '\n')
		_, err = c.stdin.Write(c.wbuf)
	} else { // not worth copying: two writes under the same lock
		if _, err = c.stdin.Write(msg); err == nil {
			_, err = c.stdin.Write([]byte{'\n'})
		}
	}
	if err != nil {
		if c.closed.Load() { // closed under this Write by Stop or Kill
			return ErrClosed
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			c.stalled = true
			c.log.Load().Warn("the child left a message unread past the write bound; it has stopped reading its stdin", "write_stall", c.opts.WriteStall)
			return fmt.Errorf("stdio: write to child %d: %w", c.pid, ErrStalled)
		}
		return fmt.Errorf("stdio: write to child %d: %w", c.pid, err)
	}
	return nil
}

// armDeadlineLocked keeps a write deadline between WriteStall/2 and
// WriteStall ahead of every write. Setting one is cheap but not free
// (the runtime's poller re-arms a timer), so it is moved only when half
// of it is used up: one write in many pays for it. Called with writeMu.
func (c *Child) armDeadlineLocked() {
	if c.opts.WriteStall <= 0 {
		return
	}
	now := time.Now()
	if !c.deadline.IsZero() && c.deadline.Sub(now) > c.opts.WriteStall/2 {
		return
	}
	c.deadline = now.Add(c.opts.WriteStall)
	_ = c.stdin.SetWriteDeadline(c.deadline) // a pipe from os.Pipe is pollable
}

// Stop ends the child the way the MCP stdio transport says a client should:
// "the client SHOULD initiate shutdown by first closing the input stream to
// the child process, waiting for the server to exit, or sending SIGTERM if
// the server does not exit within a reasonable time; the client SHOULD send
// SIGKILL if the server does not exit within a reasonable time after
// SIGTERM". Signals go to the child and everything it started. Windows
// has no SIGTERM for it: there the job is terminated one grace period
// after stdin is closed. Stop
// returns once the child is reaped and nothing it started is left, or
// early with ctx's error while the escalation goes on (when ctx ends, the
// whole tree gets SIGKILL at once). It is safe to call more than once and
// after the child has exited.
func (c *Child) Stop(ctx context.Context) error {
	c.stopped.Store(true)
	c.stopOnce.Do(func() {
		c.closeStdin()
		go c.escalate()
	})
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		c.tree.signal(syscall.SIGKILL)
		return fmt.Errorf("stdio: stop child %d: %w", c.pid, ctx.Err())
	}
}

// Kill sends SIGKILL to the child and everything it started, at once.
func (c *Child) Kill() {
	c.stopped.Store(true)
	c.closeStdin()
	c.tree.signal(syscall.SIGKILL)
}

// escalate runs the grace periods of Stop: after each, the next of the
// system's stopSignals (SIGTERM then SIGKILL; on Windows, which has no
// polite request to a process without a console of ours, SIGKILL alone).
// It exits when the child is gone.
func (c *Child) escalate() {
	t := time.NewTimer(c.opts.StopGrace)
	defer t.Stop()
	for _, sig := range stopSignals {
		select {
		case <-c.done:
			return
		case <-t.C:
			c.log.Load().Info("child did not exit in time; signalling it and everything it started", "signal", sig.String())
			c.tree.signal(sig)
			t.Reset(c.opts.StopGrace)
		}
	}
}

func (c *Child) closeStdin() {
	if c.closed.CompareAndSwap(false, true) {
		c.stdin.Close()
	}
}

// supervise waits for the child to exit, has the tree kill whatever it
// left, and closes done once stdout is read to its end.
func (c *Child) supervise(stdoutDone, stderrDone <-chan struct{}) {
	err := c.tree.wait()

	// Everything the child started is dead, so stdout reaches EOF as soon
	// as the reader has drained what the child wrote. Only a process that
	// escaped the tree (under ContainProcessGroup, an orphan without the
	// child's mark) can still hold the pipe; don't wait for it for ever.
	bound := time.NewTimer(c.opts.StopGrace)
	defer bound.Stop()
	for _, ch := range []<-chan struct{}{stdoutDone, stderrDone} {
		select {
		case <-ch:
		case <-bound.C:
			c.log.Load().Warn("a process outside the child's tree holds its output open; closing it")
			c.stdout.Close()
			c.stderr.Close()
			<-ch
		}
	}
	c.stdout.Close()
	c.stderr.Close()
	c.closeStdin()
	// Every stderr line is in: they say what the sandbox may have had to
	// do with the end.
	if err != nil && c.opts.Sandbox.Confines() {
		c.tailMu.Lock()
		lines := append(slices.Clone(c.notable), c.tail...)
		c.tailMu.Unlock()
		if hint := c.opts.Sandbox.explain(err, lines, c.stopped.Load()); hint != "" {
			err = &SandboxExit{Err: err, Hint: hint}
		}
	}
	c.err = err
	close(c.done)
}

// readStdout frames stdout into lines. It reads with a bufio.Reader rather
// than a bufio.Scanner because a Scanner stops for good at its first line
// over the limit; here an oversize line is skipped and reading goes on.
//
// What a line costs: one that fits the reader's buffer is delivered from
// it, with no copy. A longer one is gathered in blocks and joined once
// into a buffer of its exact size (plus SpliceSlack), which is handed
// over: at most twice the line while it is joined, and once the blocks'
// pool is warm one allocation of its size (see longLine). One over the
// cap costs at most the cap while it is gathered (the reader cannot know
// it is over until it is), then 4 KiB of its head and 4 KiB of its tail
// while the rest is skipped.
func (c *Child) readStdout() {
	br := bufio.NewReaderSize(c.stdout, readBuf)
	var (
		long longLine // a line longer than the reader's buffer, being gathered
		over bool     // the current line is over the cap and being skipped
		size int64
		head []byte
		tail []byte
	)
	defer long.release()
	for {
		chunk, err := br.ReadSlice('\n')
		end := err == nil // chunk ends the line
		if err != nil && err != bufio.ErrBufferFull {
			if err != io.EOF && !errors.Is(err, os.ErrClosed) {
				c.log.Load().Warn("reading child stdout", "err", err)
			}
			if len(chunk) == 0 && long.n == 0 && !over {
				return
			}
			end = true // a last line without its newline
		}
		switch {
		case over:
			size += int64(len(chunk))
			tail = keepTail(tail, chunk)
		case long.n+len(bytes.TrimSuffix(chunk, []byte{'\n'})) > c.opts.MaxLineBytes: // the newline is not part of the line
			over = true
			size = int64(long.n + len(chunk))
			// The tail from the whole line, not just chunk: the read that
			// crosses the cap may be the line's short last one, holding
			// only its end.
			head = long.appendRange(nil, 0, min(oversizeKeep, int(size)), chunk)
			tail = long.appendRange(make([]byte, 0, oversizeKeep), max(0, int(size)-oversizeKeep), int(size), chunk)
			long.release()
		case end && long.n == 0:
			c.deliver(chunk, false) // the common case: no copy at all
		case end:
			c.deliver(long.join(chunk, SpliceSlack), true)
		default:
			long.add(chunk)
		}
		if end && over {
			if bytes.HasSuffix(tail, []byte{'\n'}) {
				size--
				tail = tail[:len(tail)-1]
			}
			c.log.Load().Warn("child wrote a line over the size cap; skipped it", "bytes", size, "max_bytes", c.opts.MaxLineBytes)
			if c.opts.OnOversize != nil {
				c.opts.OnOversize(Oversize{Size: size, Head: head, Tail: tail})
			}
			over, size, head, tail = false, 0, nil, nil
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}

// deliver hands one line to OnMessage; owned says whether line is the
// callee's to keep (see Options.OnMessage).
func (c *Child) deliver(line []byte, owned bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	if line[0] != '{' && line[0] != '[' {
		// MCP says a server MUST NOT write anything but messages to
		// stdout, yet banners and stray prints are common; one bad line
		// must not end the session.
		c.skipped.Add(1)
		c.log.Load().Warn("child wrote a non-JSON line to stdout; skipped it", "line", string(firstN(line, 200)))
		return
	}
	c.opts.OnMessage(line, owned)
}

// drainStderr reads stderr for the child's whole life, because a child
// blocks once the pipe buffer (64 KiB) fills. Lines go to the log and to the
// ring that StderrTail reads.
func (c *Child) drainStderr() {
	br := bufio.NewReaderSize(c.stderr, DefaultStderrLineMax)
	skipping := false // the rest of a line over the cap
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 && !skipping {
			line := string(bytes.TrimRight(chunk, "\r\n"))
			c.log.Load().Info("child stderr", "line", line)
			c.remember(line)
			if c.opts.Sandbox.Confines() && len(c.notable) < maxNotable && notable(line) {
				c.tailMu.Lock()
				c.notable = append(c.notable, line)
				c.tailMu.Unlock()
			}
		}
		skipping = err == bufio.ErrBufferFull
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}

func (c *Child) remember(line string) {
	c.tailMu.Lock()
	defer c.tailMu.Unlock()
	if len(c.tail) < c.opts.StderrLines {
		c.tail = append(c.tail, line)
		return
	}
	c.tail[c.next] = line
	c.next = (c.next + 1) % len(c.tail)
}

// StderrTail returns the last stderr lines, oldest first.
func (c *Child) StderrTail() []string {
	c.tailMu.Lock()
	defer c.tailMu.Unlock()
	out := make([]string, 0, len(c.tail))
	out = append(out, c.tail[c.next:]...)
	return append(out, c.tail[:c.next]...)
}

// keepTail appends chunk to tail and keeps the last oversizeKeep bytes,
// in tail's own array: skipping the rest of an oversize line allocates
// nothing.
func keepTail(tail, chunk []byte) []byte {
	if len(chunk) >= oversizeKeep {
		return append(tail[:0], chunk[len(chunk)-oversizeKeep:]...)
	}
	if drop := len(tail) + len(chunk) - oversizeKeep; drop > 0 {
		tail = append(tail[:0], tail[drop:]...) // copy moves overlapping bytes correctly
	}
	return append(tail, chunk...)
}

func firstN(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		f.Close()
	}
}
