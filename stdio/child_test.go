//go:build linux

package stdio_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
	"github.com/mcp-bridge/mcp-bridge/stdio"
)

// testTimeout is a safety net for a test that would otherwise hang; no
// assertion depends on it.
const testTimeout = 60 * time.Second

// peer is a running badchild and what it has written to stdout.
type peer struct {
	t    *testing.T
	c    *stdio.Child
	msgs chan []byte         // copies of what OnMessage got, in order
	over chan stdio.Oversize // what OnOversize got
}

// startChild starts testdata/badchild with args, or opts.Argv if set.
// Other fields of opts are kept; OnMessage and OnOversize feed the peer's channels unless
// opts sets them. The child is stopped in t.Cleanup.
func startChild(t *testing.T, opts stdio.Options, args ...string) *peer {
	t.Helper()
	bin := os.Getenv(badchildEnv) // set by TestUnprivileged, whose user cannot build
	if bin == "" {
		bin = testpeers.BuildGo(t, "./testdata/badchild")
	}
	p := &peer{t: t, msgs: make(chan []byte, 64), over: make(chan stdio.Oversize, 8)}
	quit := make(chan struct{}) // closed in cleanup so an unread message never blocks the reader
	if opts.Argv == nil {
		opts.Argv = append([]string{bin}, args...)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.OnMessage == nil {
		opts.OnMessage = func(msg []byte, owned bool) {
			if !owned {
				msg = bytes.Clone(msg) // msg is reused after the call
			}
			select {
			case p.msgs <- msg:
			case <-quit:
			}
		}
	}
	if opts.OnOversize == nil {
		opts.OnOversize = func(o stdio.Oversize) {
			select {
			case p.over <- o:
			case <-quit:
			}
		}
	}
	c, err := stdio.Start(opts)
	if err != nil {
		t.Fatalf("start badchild: %v", err)
	}
	p.c = c
	t.Cleanup(func() {
		close(quit)
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if err := c.Stop(ctx); err != nil {
			t.Errorf("stop child: %v", err)
		}
	})
	return p
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// request builds a tools/call request for tool.
func request(id int, tool string, args map[string]any) []byte {
	b, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args},
	})
	if err != nil {
		panic(err)
	}
	return b
}

func (p *peer) call(id int, tool string, args map[string]any) {
	p.t.Helper()
	if err := p.c.Write(request(id, tool, args)); err != nil {
		p.t.Fatalf("write %s request: %v", tool, err)
	}
}

// next returns the next message the child wrote.
func (p *peer) next(ctx context.Context) []byte {
	p.t.Helper()
	select {
	case m := <-p.msgs:
		return m
	case o := <-p.over:
		p.t.Fatalf("got an oversize line of %d bytes instead of a message", o.Size)
	case <-p.c.Done():
		select { // Done comes after the last OnMessage: it may be queued
		case m := <-p.msgs:
			return m
		default:
		}
		p.t.Fatalf("child exited (%v) while a message was awaited; stderr:\n%s", p.c.Err(), strings.Join(p.c.StderrTail(), "\n"))
	case <-ctx.Done():
		p.t.Fatalf("no message from the child: %v", ctx.Err())
	}
	return nil
}

// response is what badchild answers to a tools/call.
type response struct {
	ID     json.RawMessage `json:"id"`
	Result struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
	Error json.RawMessage `json:"error"`
}

func parseResponse(msg []byte) (response, error) {
	var r response
	if err := json.Unmarshal(msg, &r); err != nil {
		return r, err
	}
	if len(r.Error) > 0 {
		return r, fmt.Errorf("error response %s", r.Error)
	}
	if len(r.Result.Content) != 1 {
		return r, fmt.Errorf("want one content item in %s", msg)
	}
	return r, nil
}

// text waits for the answer to request id and returns its text.
func (p *peer) text(ctx context.Context, id int) string {
	p.t.Helper()
	msg := p.next(ctx)
	r, err := parseResponse(msg)
	if err != nil {
		p.t.Fatalf("answer to %d: %v", id, err)
	}
	if string(r.ID) != strconv.Itoa(id) {
		p.t.Fatalf("got the answer to id %s, want %d: %.200s", r.ID, id, msg)
	}
	return r.Result.Content[0].Text
}

// echo checks a round trip, which also shows the child has got past its
// start-up (flags parsed, signals set).
func (p *peer) echo(ctx context.Context, id int) {
	p.t.Helper()
	want := fmt.Sprintf("echo %d", id)
	p.call(id, "echo", map[string]any{"message": want})
	if got := p.text(ctx, id); got != want {
		p.t.Fatalf("echo %d answered %q, want %q", id, got, want)
	}
}

// bigLine is the line badchild's big tool writes, without its newline.
func bigLine(id, n int, idFirst bool) []byte {
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0",`)
	if idFirst {
		fmt.Fprintf(&b, `"id":%d,`, id)
	}
	b.WriteString(`"result":{"content":[{"type":"text","text":"`)
	b.Write(bytes.Repeat([]byte("x"), n))
	b.WriteString(`"}]}`)
	if !idFirst {
		fmt.Fprintf(&b, `,"id":%d`, id)
	}
	b.WriteString("}")
	return b.Bytes()
}

// bigBytes is the text size that makes bigLine lineLen bytes long.
func bigBytes(lineLen int, idFirst bool) int {
	return lineLen - len(bigLine(1, 0, idFirst))
}

func TestFramingWholeLines(t *testing.T) {
	tests := []struct {
		name    string
		max     int
		bytes   int
		idFirst bool
	}{
		// Over bufio.Scanner's 64 KiB default, which used to end the session.
		{"200 KiB id last", 0, 200 << 10, false},
		{"200 KiB id first", 0, 200 << 10, true},
		{"20 MiB with a 32 MiB cap", 32 << 20, 20 << 20, false},
		// MaxLineBytes counts the line without its newline.
		{"exactly the cap", 1 << 20, bigBytes(1<<20, true), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			p := startChild(t, stdio.Options{MaxLineBytes: tt.max})
			p.call(1, "big", map[string]any{"bytes": tt.bytes, "id_first": tt.idFirst})
			got := p.next(ctx)
			if want := bigLine(1, tt.bytes, tt.idFirst); !bytes.Equal(got, want) {
				t.Fatalf("got a message of %d bytes, want the %d-byte line whole (head %.80q)", len(got), len(want), got)
			}
			p.echo(ctx, 2)
		})
	}
}

func TestFramingOversize(t *testing.T) {
	const capBytes = 1 << 20
	tests := []struct {
		name    string
		lineLen int // newline excluded
		idFirst bool
	}{
		{"2 MiB id first", 2 << 20, true},
		{"2 MiB id last", 2 << 20, false},
		{"one byte over", capBytes + 1, false},
		// The cap is crossed by the short last read of the line, so the
		// tail must come from what was gathered before it as well.
		{"over in the last read", capBytes + 99, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			p := startChild(t, stdio.Options{MaxLineBytes: capBytes})
			n := bigBytes(tt.lineLen, tt.idFirst)
			p.call(1, "big", map[string]any{"bytes": n, "id_first": tt.idFirst})
			line := bigLine(1, n, tt.idFirst)
			var o stdio.Oversize
			select {
			case o = <-p.over:
			case m := <-p.msgs:
				t.Fatalf("a %d-byte line over a %d-byte cap was delivered: %.80q", len(m), capBytes, m)
			case <-ctx.Done():
				t.Fatal("OnOversize was not called")
			}
			if o.Size != int64(len(line)) {
				t.Errorf("Size = %d, want %d", o.Size, len(line))
			}
			const keep = 4 << 10
			if !bytes.Equal(o.Head, line[:keep]) {
				t.Errorf("Head is %d bytes %.80q..., want the line's first %d", len(o.Head), o.Head, keep)
			}
			// The kept 4 KiB may include the newline, which is cut off.
			if !bytes.HasSuffix(line, o.Tail) || len(o.Tail) < keep-1 || len(o.Tail) > keep {
				t.Errorf("Tail is %d bytes ...%q, want the line's last %d", len(o.Tail), o.Tail[max(0, len(o.Tail)-40):], keep)
			}
			idMember := []byte(`"id":1`)
			if tt.idFirst && !bytes.Contains(o.Head, idMember) || !tt.idFirst && !bytes.HasSuffix(o.Tail, []byte(`,"id":1}`)) {
				t.Errorf("the id is not where the caller looks for it: head %.60q tail %q", o.Head, o.Tail[max(0, len(o.Tail)-40):])
			}
			// The child lives on and the next line is framed from its start.
			p.echo(ctx, 2)
			select {
			case <-p.c.Done():
				t.Fatalf("child exited: %v", p.c.Err())
			default:
			}
		})
	}
}

func TestNonJSONLinesSkipped(t *testing.T) {
	tests := []struct {
		name        string
		args        []string
		garbage     int // lines for the garbage tool; 0: don't call it
		wantSkipped int64
	}{
		{"banner", []string{"-banner"}, 0, 1},
		{"garbage", nil, 3, 3},
		{"banner and garbage", []string{"-banner"}, 100, 101},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			p := startChild(t, stdio.Options{}, tt.args...)
			p.echo(ctx, 1)
			if tt.garbage > 0 {
				p.call(2, "garbage", map[string]any{"lines": tt.garbage})
				if got, want := p.text(ctx, 2), fmt.Sprintf("wrote %d garbage lines", tt.garbage); got != want {
					t.Fatalf("garbage answered %q, want %q", got, want)
				}
			}
			p.echo(ctx, 3)
			// Skipped lines came before the answers just read, on the
			// same reader goroutine, so the count is final.
			if got := p.c.SkippedLines(); got != tt.wantSkipped {
				t.Errorf("SkippedLines = %d, want %d", got, tt.wantSkipped)
			}
		})
	}
}

func TestStderr(t *testing.T) {
	numbered := func(format string, from, to int) []string {
		var out []string
		for i := from; i <= to; i++ {
			out = append(out, fmt.Sprintf(format, i))
		}
		return out
	}
	tests := []struct {
		name  string
		args  []string
		keep  int
		flood int // lines for stderr_flood; 0: don't call it
		want  []string
	}{
		// Far over the 64 KiB pipe buffer: the child blocks unless it is drained.
		{"flood keeps the last lines", nil, 20, 10000, numbered("stderr line %d", 9981, 10000)},
		{"fewer lines than kept", nil, 50, 10, numbered("stderr line %d", 1, 10)},
		{"default keeps 50", []string{"-stderr-at-start", "120"}, 0, 0, numbered("stderr at start line %d", 71, 120)},
	}
	forEachContainment(t, func(t *testing.T, cont stdio.Containment) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				ctx := testContext(t)
				p := startChild(t, stdio.Options{StderrLines: tt.keep, Containment: cont}, tt.args...)
				if tt.flood > 0 {
					p.call(1, "stderr_flood", map[string]any{"lines": tt.flood})
					if got := p.text(ctx, 1); got != "done" {
						t.Fatalf("stderr_flood answered %q", got)
					}
				}
				p.echo(ctx, 2)
				// Stderr is another pipe: only once the child is gone is every
				// line of it read.
				if err := p.c.Stop(ctx); err != nil {
					t.Fatal(err)
				}
				if err := p.c.Err(); err != nil {
					t.Fatalf("child ended with %v", err)
				}
				if got := p.c.StderrTail(); !slices.Equal(got, tt.want) {
					t.Errorf("StderrTail() = %d lines %q\nwant %d lines %q", len(got), got, len(tt.want), tt.want)
				}
			})
		}
	})
}

func TestStopSequence(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		cancelStop bool           // call Stop with a context that has already ended
		wantSignal syscall.Signal // 0: a clean exit
		wantErr    string
		grace      time.Duration // 0: 100 ms
	}{
		{"exits on stdin close", nil, false, 0, "", 0},
		// The child exits on SIGTERM, which it must have done before the
		// second wait ends: on a loaded machine a PID namespace's init
		// passing the signal on has taken longer than 100 ms (CI). A
		// second is the first wait's cost (the child ignores EOF), and
		// the second wait ends as soon as the child does.
		{"ignores EOF: SIGTERM", []string{"-ignore-eof"}, false, syscall.SIGTERM, "signal: terminated", time.Second},
		{"ignores EOF and SIGTERM: SIGKILL", []string{"-ignore-eof", "-ignore-term"}, false, syscall.SIGKILL, "signal: killed", 0},
		{"context ends: SIGKILL at once", []string{"-ignore-eof", "-ignore-term"}, true, syscall.SIGKILL, "signal: killed", 0},
	}
	forEachContainment(t, func(t *testing.T, cont stdio.Containment) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				ctx := testContext(t)
				grace := 100 * time.Millisecond
				if tt.grace != 0 {
					grace = tt.grace
				}
				if tt.cancelStop {
					grace = time.Hour // only the context can end this child
				}
				p := startChild(t, stdio.Options{StopGrace: grace, Containment: cont}, tt.args...)
				p.echo(ctx, 1) // the child has set up its signal handling
				if tt.cancelStop {
					ended, cancel := context.WithCancel(ctx)
					cancel()
					if err := p.c.Stop(ended); !errors.Is(err, context.Canceled) {
						t.Fatalf("Stop with an ended context = %v, want context.Canceled", err)
					}
					select {
					case <-p.c.Done():
					case <-ctx.Done():
						t.Fatal("child not reaped after Stop's context ended")
					}
				} else if err := p.c.Stop(ctx); err != nil {
					t.Fatalf("Stop: %v", err)
				}
				err := p.c.Err()
				if tt.wantSignal == 0 {
					if err != nil {
						t.Fatalf("Err() = %v, want nil", err)
					}
					return
				}
				var ee *stdio.ExitError
				if !errors.As(err, &ee) {
					t.Fatalf("Err() = %v (%T), want an *stdio.ExitError", err, err)
				}
				ws := ee.Status
				if !ws.Signaled() || ws.Signal() != tt.wantSignal {
					t.Errorf("Err() = %v, want death by %v", err, tt.wantSignal)
				}
				if err.Error() != tt.wantErr {
					t.Errorf("Err() says %q, want %q", err, tt.wantErr)
				}
				// Stop is safe to call again once the child is gone.
				if err := p.c.Stop(ctx); err != nil {
					t.Errorf("second Stop: %v", err)
				}
			})
		}
	})
}

// procStat returns the state and parent pid of pid from /proc/<pid>/stat.
func procStat(pid int) (state string, ppid int, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, err
	}
	// The command name may hold spaces and parens: fields start after the
	// last ')'. Then: state ppid ...
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 {
		return "", 0, fmt.Errorf("short /proc/%d/stat: %q", pid, s)
	}
	ppid, err = strconv.Atoi(f[1])
	return f[0], ppid, err
}

// waitGone waits until pid has died: it no longer exists, or is a zombie
// that some other process (init, a subreaper) has to reap. It is a poll,
// bounded by a deadline, because nothing tells a process that an unrelated
// one has died.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	poll := time.NewTicker(time.Millisecond)
	defer poll.Stop()
	for {
		state, ppid, err := procStat(pid)
		if errors.Is(err, os.ErrNotExist) {
			// kill(pid, 0) agrees: no such process.
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("pid %d has no /proc entry but kill(pid, 0) = %v", pid, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("pid %d: %v", pid, err)
		}
		if state == "Z" {
			// kill(pid, 0) still succeeds on a zombie: it has died but
			// is not reaped. Reaping it is its parent's job, and that
			// must not be us (we'd never do it).
			if ppid == os.Getpid() {
				t.Errorf("pid %d is a zombie left for this test process to reap", pid)
			}
			return
		}
		select {
		case <-poll.C:
		case <-ctx.Done():
			t.Fatalf("pid %d is still alive (state %s, parent %d)", pid, state, ppid)
		}
	}
}

func TestNoOrphans(t *testing.T) {
	tests := []struct {
		name string
		end  func(ctx context.Context, p *peer) // ends the child
	}{
		{"stop", func(ctx context.Context, p *peer) {
			if err := p.c.Stop(ctx); err != nil {
				p.t.Fatal(err)
			}
		}},
		{"crash", func(ctx context.Context, p *peer) {
			p.call(2, "crash", map[string]any{"code": 1})
		}},
		{"kill", func(ctx context.Context, p *peer) { p.c.Kill() }},
	}
	forEachContainment(t, func(t *testing.T, cont stdio.Containment) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				ctx := testContext(t)
				p := startChild(t, stdio.Options{StopGrace: 100 * time.Millisecond, Containment: cont})
				p.call(1, "fork", nil)
				grandchild, err := strconv.Atoi(p.text(ctx, 1))
				if err != nil {
					t.Fatalf("fork answered no pid: %v", err)
				}
				if state, _, err := procStat(grandchild); err != nil || state == "Z" {
					t.Fatalf("grandchild %d is not running before the test: state %q, %v", grandchild, state, err)
				}
				tt.end(ctx, p)
				select {
				case <-p.c.Done():
				case <-ctx.Done():
					t.Fatal("child never exited")
				}
				waitGone(t, grandchild)
			})
		}
	})
}

func TestExitStatus(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		crash      map[string]any // crash tool arguments; nil: initialize instead
		wantCode   int
		wantStderr []string // lines that must be in StderrTail
	}{
		{"crash 7", nil, map[string]any{"code": 7, "stderr": "boom: disk on fire\n"}, 7, []string{"boom: disk on fire"}},
		{"crash 0 is a clean exit", nil, map[string]any{"code": 0}, 0, nil},
		{"stderr without a newline", nil, map[string]any{"code": 2, "stderr": "first\nlast words"}, 2, []string{"first", "last words"}},
		{"exit after initialize", []string{"-exit-after-init"}, nil, 3, nil},
	}
	forEachContainment(t, func(t *testing.T, cont stdio.Containment) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				ctx := testContext(t)
				p := startChild(t, stdio.Options{Containment: cont}, tt.args...)
				if tt.crash != nil {
					p.call(1, "crash", tt.crash)
				} else {
					if err := p.c.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)); err != nil {
						t.Fatal(err)
					}
					p.next(ctx) // the InitializeResult, written before the exit
				}
				select {
				case <-p.c.Done():
				case <-ctx.Done():
					t.Fatal("child never exited")
				}
				err := p.c.Err()
				if tt.wantCode == 0 {
					if err != nil {
						t.Errorf("Err() = %v, want nil", err)
					}
				} else if ee, ok := errors.AsType[*stdio.ExitError](err); !ok || ee.ExitCode() != tt.wantCode {
					t.Errorf("Err() = %v (%T), want an *stdio.ExitError with code %d", err, err, tt.wantCode)
				}
				tail := p.c.StderrTail()
				for _, line := range tt.wantStderr {
					if !slices.Contains(tail, line) {
						t.Errorf("StderrTail() = %q, want it to hold %q", tail, line)
					}
				}
			})
		}
	})
}

func TestWrite(t *testing.T) {
	t.Run("after exit", func(t *testing.T) {
		ctx := testContext(t)
		p := startChild(t, stdio.Options{})
		p.call(1, "crash", map[string]any{"code": 1})
		select {
		case <-p.c.Done():
		case <-ctx.Done():
			t.Fatal("child never exited")
		}
		if err := p.c.Write(request(2, "echo", nil)); !errors.Is(err, stdio.ErrClosed) {
			t.Errorf("Write after exit = %v, want ErrClosed", err)
		}
	})
	t.Run("after stop", func(t *testing.T) {
		ctx := testContext(t)
		p := startChild(t, stdio.Options{})
		if err := p.c.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if err := p.c.Write(request(2, "echo", nil)); !errors.Is(err, stdio.ErrClosed) {
			t.Errorf("Write after Stop = %v, want ErrClosed", err)
		}
	})
	t.Run("newline refused", func(t *testing.T) {
		ctx := testContext(t)
		p := startChild(t, stdio.Options{})
		for _, msg := range []string{"{\"jsonrpc\":\"2.0\",\n\"id\":1}", "{}\n", "\n"} {
			if err := p.c.Write([]byte(msg)); err == nil {
				t.Errorf("Write(%q) = nil, want an error", msg)
			}
		}
		p.echo(ctx, 1) // nothing of the refused messages reached the child
	})
	// A child that stops reading stdin leaves a Write blocked on the full
	// pipe. Stopping or killing the child must still work, and end that
	// Write.
	for _, end := range []struct {
		name string
		end  func(ctx context.Context, c *stdio.Child) error
	}{
		{"stop unblocks a stuck write", func(ctx context.Context, c *stdio.Child) error { return c.Stop(ctx) }},
		{"kill unblocks a stuck write", func(ctx context.Context, c *stdio.Child) error { c.Kill(); return nil }},
	} {
		t.Run(end.name, func(t *testing.T) {
			ctx := testContext(t)
			// It reads 64 KiB, says so, and never reads again.
			p := startChild(t, stdio.Options{
				Argv:      []string{"/bin/sh", "-c", `head -c 65536 >/dev/null && echo "{}" && exec sleep 1000`},
				StopGrace: 100 * time.Millisecond,
			})
			werr := make(chan error, 1)
			go func() { werr <- p.c.Write(bytes.Repeat([]byte("x"), 1<<20)) }()
			// The only bytes the child can have read are the first of that
			// message; the rest does not fit in the pipe: Write is blocked.
			p.next(ctx)
			ended := make(chan error, 1)
			go func() { ended <- end.end(ctx, p.c) }()
			select {
			case err := <-ended:
				if err != nil {
					t.Fatal(err)
				}
			case <-ctx.Done():
				syscall.Kill(-p.c.Pid(), syscall.SIGKILL) // frees the Write, so cleanup can end
				t.Fatalf("%s never returned while a Write was blocked", end.name)
			}
			select {
			case err := <-werr:
				if !errors.Is(err, stdio.ErrClosed) {
					t.Errorf("the stuck Write returned %v, want ErrClosed", err)
				}
			case <-ctx.Done():
				t.Fatal("the stuck Write never returned")
			}
			<-p.c.Done()
		})
	}
	t.Run("concurrent", func(t *testing.T) {
		const writers, each = 8, 1000
		ctx := testContext(t)
		var (
			mu   sync.Mutex
			seen = map[int]bool{}
			all  = make(chan struct{})
		)
		message := func(id int) string {
			// Every 100th is over both PIPE_BUF and Write's 64 KiB copy
			// limit, where a write is not atomic on its own.
			if id%100 == 0 {
				return strings.Repeat(fmt.Sprintf("<%d>", id), 70<<10/8)
			}
			return fmt.Sprintf("message %d", id)
		}
		p := startChild(t, stdio.Options{OnMessage: func(msg []byte, _ bool) {
			r, err := parseResponse(msg)
			id, idErr := strconv.Atoi(string(r.ID))
			if err != nil || idErr != nil {
				t.Errorf("bad answer %.200q: %v %v", msg, err, idErr)
				return
			}
			if r.Result.Content[0].Text != message(id) {
				t.Errorf("answer to %d has the text of another message: %.60q", id, r.Result.Content[0].Text)
			}
			mu.Lock()
			defer mu.Unlock()
			if seen[id] {
				t.Errorf("id %d answered twice", id)
			}
			seen[id] = true
			if len(seen) == writers*each {
				close(all)
			}
		}})
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range each {
					id := w*each + i + 1
					if err := p.c.Write(request(id, "echo", map[string]any{"message": message(id)})); err != nil {
						t.Errorf("writer %d: %v", w, err)
						return
					}
				}
			})
		}
		wg.Wait()
		select {
		case <-all:
		case <-p.c.Done():
			t.Fatalf("child exited: %v; stderr %q", p.c.Err(), p.c.StderrTail())
		case <-ctx.Done():
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("%d of %d requests answered", len(seen), writers*each)
		}
	})
}

func TestEnviron(t *testing.T) {
	parent := []string{"PATH=/bin", "HOME=/home/u", "BRIDGE_TOKEN=secret", "LANG=C", "BRIDGE_PORT=80"}
	bridgeVars := func(name string) bool { return strings.HasPrefix(name, "BRIDGE_") }
	tests := []struct {
		name   string
		parent []string
		hidden func(string) bool
		extra  []string
		want   []string
	}{
		{"pass through", parent, nil, nil, parent},
		{"hidden removed, order kept", parent, bridgeVars, nil, []string{"PATH=/bin", "HOME=/home/u", "LANG=C"}},
		{"extra appended in order", parent, bridgeVars, []string{"B=2", "A=1"}, []string{"PATH=/bin", "HOME=/home/u", "LANG=C", "B=2", "A=1"}},
		{"extra overrides, at the end", parent, bridgeVars, []string{"HOME=/tmp"}, []string{"PATH=/bin", "LANG=C", "HOME=/tmp"}},
		{"extra may set a hidden name", parent, bridgeVars, []string{"BRIDGE_PORT=9"}, []string{"PATH=/bin", "HOME=/home/u", "LANG=C", "BRIDGE_PORT=9"}},
		{"override removes every duplicate", []string{"X=1", "Y=2", "X=3"}, nil, []string{"X=4"}, []string{"Y=2", "X=4"}},
		{"name is up to the first '='", []string{"K=a=b", "KA=c"}, func(n string) bool { return n == "K" }, nil, []string{"KA=c"}},
		{"empty value overrides", []string{"PATH=/bin"}, nil, []string{"PATH="}, []string{"PATH="}},
		{"nothing", nil, nil, nil, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := stdio.Environ(tt.parent, tt.hidden, tt.extra)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Environ() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestChildEnvironment(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want string
	}{
		// The bridge's own environment holds its secrets: nil must not
		// mean "inherit" as it does for exec.Cmd.
		{"nil is empty", nil, ""},
		{"empty", []string{}, ""},
		{"exactly what is given", []string{"B=2", "A=1"}, "B=2\nA=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			p := startChild(t, stdio.Options{Env: tt.env})
			p.call(1, "env", nil)
			if got := p.text(ctx, 1); got != tt.want {
				t.Errorf("child environment = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStartErrors(t *testing.T) {
	tests := []struct {
		name string
		argv []string
	}{
		{"no argv", nil},
		{"empty program", []string{""}},
		{"no such program", []string{"/nonexistent/mcp-server"}},
	}
	forEachContainment(t, func(t *testing.T, cont stdio.Containment) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				c, err := stdio.Start(stdio.Options{Argv: tt.argv, Containment: cont})
				if err == nil {
					c.Kill()
					<-c.Done()
					t.Fatal("Start succeeded")
				}
			})
		}
	})
}

// TestStdoutClosed: a child that closes its stdout and runs on is seen at
// once (StdoutClosed) while Done stays open until it is stopped.
func TestStdoutClosed(t *testing.T) {
	ctx := testContext(t)
	p := startChild(t, stdio.Options{StopGrace: 200 * time.Millisecond})
	p.call(1, "close_stdout", nil)
	select {
	case <-p.c.StdoutClosed():
	case <-ctx.Done():
		t.Fatal("StdoutClosed never closed")
	}
	select {
	case <-p.c.Done():
		t.Fatal("Done closed: the child reads stdin until it ends, so it is still running")
	default:
	}
	if err := p.c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.c.Err(); err != nil {
		t.Errorf("Err() = %v: the child exits 0 on stdin EOF", err)
	}
}

// TestWriteStall: a Write that the child leaves unread past WriteStall
// (here a child that never reads its stdin, once the pipe is full) returns
// ErrStalled, and so does every later Write, at once: the message may
// have been cut mid-line. Without the bound it would wait for good.
func TestWriteStall(t *testing.T) {
	p := startChild(t, stdio.Options{Argv: []string{"sleep", "1000"}, WriteStall: 200 * time.Millisecond})
	msg := bytes.Repeat([]byte("x"), 256<<10) // bigger than the pipe
	done := make(chan error, 1)
	go func() { done <- p.c.Write(msg) }()
	select {
	case err := <-done:
		if !errors.Is(err, stdio.ErrStalled) {
			t.Fatalf("Write to a child that does not read = %v, want ErrStalled", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("Write never returned")
	}
	if err := p.c.Write([]byte(`{}`)); !errors.Is(err, stdio.ErrStalled) {
		t.Errorf("a later Write = %v, want ErrStalled", err)
	}
	// A child that reads is never stalled, however long it runs.
	q := startChild(t, stdio.Options{WriteStall: 200 * time.Millisecond})
	for i := range 50 {
		if err := q.c.Write(request(i+1, "echo", map[string]any{"message": "m"})); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		<-q.msgs
	}
}
