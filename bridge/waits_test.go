package bridge

// Tests that no wait of the bridge outlives its reason: a shared child's
// failed first start, a crash loop, a child that closed its stdout, a
// request or an initialize the child never answers, and progress after
// the answer. Each test runs against a real badchild process and against
// its in-memory double (memChild); every wait of the tests themselves is
// bounded by a safety net, never a timing assertion.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// safetyNet bounds every wait here: reaching it means something hangs.
const safetyNet = 30 * time.Second

// logBuffer collects the bridge's log for the tests to read.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// peerBridge starts a bridge on p's badchild run with args; the bridge
// logs at debug level into the returned buffer, and is closed (every
// child reaped) when the test ends.
func peerBridge(t *testing.T, p peer, cfg Config, args ...string) (*Bridge, *logBuffer) {
	t.Helper()
	cfg.Command = p.command(t, args...)
	logs := &logBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if cfg.StopGrace == 0 {
		cfg.StopGrace = 500 * time.Millisecond
	}
	b, err := newBridge(cfg, p.start)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			t.Errorf("bridge close: %v", err)
		}
		if n := b.Children(); n != 0 {
			t.Errorf("%d children alive after Close", n)
		}
	})
	return b, logs
}

func safety(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), safetyNet)
	t.Cleanup(cancel)
	return ctx
}

// rpc parses one JSON-RPC message.
func rpc(t *testing.T, format string, a ...any) Message {
	t.Helper()
	msgs, _, err := ParseBody(fmt.Appendf(nil, format, a...))
	if err != nil || len(msgs) != 1 {
		t.Fatalf("parse %q: %v", fmt.Sprintf(format, a...), err)
	}
	return msgs[0]
}

func initRequest(t *testing.T) Message {
	return rpc(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
}

func toolCall(t *testing.T, id, tool string) Message {
	return rpc(t, `{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":{},"_meta":{"progressToken":"tok"}}}`, id, tool)
}

// reply is a decoded JSON-RPC message.
type reply struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result *struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
	Error *struct {
		Code    int            `json:"code"`
		Message string         `json:"message"`
		Data    map[string]any `json:"data"`
	} `json:"error"`
}

func (r reply) text() string {
	if r.Result == nil || len(r.Result.Content) == 0 {
		return ""
	}
	return r.Result.Content[0].Text
}

// drain reads st to its end and returns its last message: the response.
// A stream that never ends fails the test at the safety net.
func drain(ctx context.Context, t *testing.T, st *Stream) reply {
	t.Helper()
	r, err := drainErr(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// errNoAnswer: a stream ended without its response, or never ended.
var errNoAnswer = errors.New("no answer")

// drainErr is drain for goroutines other than the test's.
func drainErr(ctx context.Context, st *Stream) (reply, error) {
	var msgs [][]byte
	for final := false; !final; {
		if err := st.wait(ctx, nil); err != nil {
			return reply{}, fmt.Errorf("%w: the stream never ended: %v", errNoAnswer, err)
		}
		msgs, final = st.take(msgs)
	}
	var r reply
	if len(msgs) == 0 || json.Unmarshal(msgs[len(msgs)-1], &r) != nil {
		return reply{}, fmt.Errorf("%w: the stream ended with %q", errNoAnswer, msgs)
	}
	return r, nil
}

// callTool sends a tools/call on s and returns its response.
func callTool(ctx context.Context, t *testing.T, s *Session, id, tool string) reply {
	t.Helper()
	st, err := s.Send([]Message{toolCall(t, id, tool)}, false)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return drain(ctx, t, st)
}

// start sends a tools/call on s and returns its stream unread.
func start(t *testing.T, s *Session, id, tool string) *Stream {
	t.Helper()
	st, err := s.Send([]Message{toolCall(t, id, tool)}, false)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return st
}

// until polls cond, with the safety net as its deadline: for states the
// bridge reaches on its own (a restart, a session's end) and does not
// announce. A bounded poll, not a timing assertion.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(safetyNet)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("never: %s", what)
		case <-tick.C:
		}
	}
}

// kindOf is the Kind of err, KindInternal when it has none.
func kindOf(err error) Kind {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Kind
	}
	return KindInternal
}

func wantCode(t *testing.T, r reply, code int, contains string) {
	t.Helper()
	if r.Error == nil || r.Error.Code != code || !strings.Contains(r.Error.Message, contains) {
		raw, _ := json.Marshal(r)
		t.Fatalf("got %s, want a JSON-RPC error %d mentioning %q", raw, code, contains)
	}
}

// join starts a session the way each mode does: Initialize, or for
// stateless a request's session. It returns the session (nil on error)
// and the response to initialize. An initialize that is never answered
// is errNoAnswer. It may run on any goroutine.
func join(ctx context.Context, t *testing.T, b *Bridge, stateless bool) (*Session, reply, error) {
	msg := initRequest(t)
	if stateless {
		s, answer, err := b.Stateless(ctx, &msg)
		if err != nil {
			return nil, reply{}, err
		}
		var r reply
		if err := json.Unmarshal(answer, &r); err != nil {
			return nil, reply{}, fmt.Errorf("%w: %s", errNoAnswer, answer)
		}
		return s, r, nil
	}
	s, st, err := b.Initialize(ctx, InitRequest{Message: msg})
	if err != nil {
		return nil, reply{}, err
	}
	r, err := drainErr(ctx, st)
	return s, r, err
}

// TestSharedFirstStartFails: a shared child whose first start dies on the
// first initialize and whose restart works. The first initialize fails; the
// next one, sent while the child restarts, waits for the restarted child's
// initialization and succeeds, and calls work. Before, it waited for good:
// the restart's own initialize was not one the wait heard of.
func TestSharedFirstStartFails(t *testing.T) { forPeers(t, testSharedFirstStartFails) }

func testSharedFirstStartFails(t *testing.T, p peer) {
	for _, stateless := range []bool{false, true} {
		t.Run(fmt.Sprintf("stateless=%v", stateless), func(t *testing.T) {
			ctx := safety(t)
			marker := filepath.Join(t.TempDir(), "started")
			b, _ := peerBridge(t, p, Config{Mode: ModeShared}, "-exit-first", marker)

			s, r, err := join(ctx, t, b, stateless)
			switch {
			case stateless && err == nil && r.Result == nil:
				// A stateless request waits for the shared child's
				// initialization: it fails with the first start, or, when
				// the restart is quick enough to decide the wait first, is
				// answered from the restarted child (the first never
				// answers anything).
				t.Fatalf("the first request: %+v, want an error or the restarted child's answer", r)
			case !stateless && (err != nil || r.Error == nil || r.Error.Code != CodeChildExited):
				t.Fatalf("first initialize: %v %+v, want a -32005 answer", err, r)
			}
			switch {
			case s != nil && stateless:
				// Answered by the restarted child: a stateless request's
				// session lives until its request is done.
				s.Close()
			case s != nil:
				until(t, "the failed session ended", func() bool { return s.isClosed() })
			}

			s, r, err = join(ctx, t, b, stateless)
			if err != nil || r.Result == nil {
				t.Fatalf("second initialize: %v %+v", err, r)
			}
			if got := callTool(ctx, t, s, "2", "pid"); got.text() == "" {
				t.Fatalf("a call after the restart: %+v", got)
			}
			if stateless {
				s.Close()
			}
		})
	}
}

// TestCrashLoopEndsWaits: a shared child that exits at every start.
// Sessions and stateless requests that arrive together, and wait for its
// initialization, each get an error as the initialization they wait for
// fails; none waits until shutdown. Once the crash-loop breaker trips, new
// ones are refused at once.
func TestCrashLoopEndsWaits(t *testing.T) { forPeers(t, testCrashLoopEndsWaits) }

func testCrashLoopEndsWaits(t *testing.T, p peer) {
	for _, stateless := range []bool{false, true} {
		t.Run(fmt.Sprintf("stateless=%v", stateless), func(t *testing.T) {
			ctx := safety(t)
			b, _ := peerBridge(t, p, Config{Mode: ModeShared}, "-exit-at-start")
			const n = 4
			errs := make(chan error, n)
			for i := range n {
				go func() {
					s, r, err := join(ctx, t, b, stateless)
					switch {
					case err == nil && r.Error == nil:
						err = fmt.Errorf("request %d succeeded on a child that never starts: %+v", i, r)
					case err == nil:
						select {
						case <-s.Done(): // its initialize failed: its client has no session
						case <-ctx.Done():
							err = fmt.Errorf("request %d: the failed session did not end", i)
						}
					case errors.Is(err, errNoAnswer):
					default:
						err = nil // refused: as it should be
					}
					errs <- err
				}()
			}
			for range n {
				select {
				case err := <-errs:
					if err != nil {
						t.Error(err)
					}
				case <-ctx.Done():
					t.Fatal("a request never got an answer")
				}
			}
			until(t, "the crash-loop breaker tripped", func() bool { return errors.Is(b.Ready(), ErrSharedDown) })
			if _, _, err := join(ctx, t, b, stateless); kindOf(err) != KindUnavailable {
				t.Fatalf("after the breaker: %v, want the server down", err)
			}
			if n := b.Len(); n != 0 {
				t.Errorf("%d sessions left", n)
			}
		})
	}
}

// TestStdoutClosed: a child that closes its stdout and runs on. The call in
// flight and the one that closed it fail at once with -32005 and the stderr
// tail; it is logged and the child is stopped. Per session the session
// ends; a shared child is restarted and its sessions go on.
func TestStdoutClosed(t *testing.T) { forPeers(t, testStdoutClosed) }

func testStdoutClosed(t *testing.T, p peer) {
	for _, mode := range []string{ModePerSession, ModeShared} {
		t.Run(mode, func(t *testing.T) {
			ctx := safety(t)
			b, logs := peerBridge(t, p, Config{Mode: mode})
			s, _, err := join(ctx, t, b, false)
			if err != nil {
				t.Fatal(err)
			}
			pid := s.ChildPid()
			hung := start(t, s, "1", "hang")
			until(t, "the hang call reached the child", func() bool { return strings.Contains(logs.String(), "badchild: hang received") })
			closer := start(t, s, "2", "close_stdout")
			for _, st := range []*Stream{hung, closer} {
				r := drain(ctx, t, st)
				wantCode(t, r, CodeChildExited, "closed its stdout")
				if tail, _ := r.Error.Data["stderr"].(string); !strings.Contains(tail, "badchild: closing stdout") {
					t.Errorf("error data %v: want the stderr tail", r.Error.Data)
				}
			}
			if !strings.Contains(logs.String(), "the MCP server closed its stdout but is still running; stopping it") {
				t.Errorf("not logged:\n%s", logs.String())
			}
			if mode == ModePerSession {
				select {
				case <-s.Done():
				case <-ctx.Done():
					t.Fatal("the session did not end")
				}
				until(t, "the child was reaped", func() bool { return b.Children() == 0 })
			} else {
				until(t, "the shared child was restarted", func() bool { p := s.ChildPid(); return p != 0 && p != pid })
				if r := callTool(ctx, t, s, "3", "pid"); r.text() == "" || r.text() == fmt.Sprint(pid) {
					t.Fatalf("a call after the restart: %+v", r)
				}
			}
			if got := b.Stats().ChildrenUnresponsive.Load(); got != 1 {
				t.Errorf("ChildrenUnresponsive %d, want 1", got)
			}
		})
	}
}

// TestRequestTimeout: a call the child never answers gets a JSON-RPC error
// naming --request-timeout, the child gets notifications/cancelled with its
// own id for it, and the session, idle from then on, expires.
func TestRequestTimeout(t *testing.T) { forPeers(t, testRequestTimeout) }

func testRequestTimeout(t *testing.T, p peer) {
	for _, mode := range []string{ModePerSession, ModeShared, ModePerIdentity} {
		t.Run(mode, func(t *testing.T) {
			ctx := safety(t)
			b, _ := peerBridge(t, p, Config{Mode: mode, RequestTimeout: 200 * time.Millisecond})
			s, _, err := join(ctx, t, b, false)
			if err != nil {
				t.Fatal(err)
			}
			wantCode(t, callTool(ctx, t, s, `"h"`, "hang"), CodeRequestTimeout, "--request-timeout")
			if n := s.InFlight(); n != 0 {
				t.Errorf("%d requests in flight after the timeout", n)
			}
			// The child reads stdin in order: the cancel is in by now.
			var cancels []json.RawMessage
			if err := json.Unmarshal([]byte(callTool(ctx, t, s, "3", "cancels").text()), &cancels); err != nil || len(cancels) != 1 {
				t.Fatalf("the child saw cancels %s, want one", cancels)
			}
			if id := string(cancels[0]); id == `"h"` || strings.Trim(id, "0123456789") != "" {
				t.Errorf("the child was told to cancel %s: want its own (numeric) id, not the client's", id)
			}
		})
	}
	t.Run("idle after a hung call", func(t *testing.T) {
		ctx := safety(t)
		b, _ := peerBridge(t, p, Config{RequestTimeout: 300 * time.Millisecond, IdleTimeout: 200 * time.Millisecond})
		s, _, err := join(ctx, t, b, false)
		if err != nil {
			t.Fatal(err)
		}
		st := start(t, s, "1", "hang")
		st.Detach() // the client is gone
		select {
		case <-s.Done():
		case <-ctx.Done():
			t.Fatal("a session whose hung call was left never ended")
		}
		until(t, "the child was reaped", func() bool { return b.Children() == 0 })
	})
}

// TestInitTimeout: a child that never answers initialize. The client gets a
// JSON-RPC error naming --init-timeout, its session ends and the process is
// stopped; on a shared child, the sessions and stateless requests waiting
// for the initialization get the error too, and the child is restarted by
// the restart policy.
func TestInitTimeout(t *testing.T) { forPeers(t, testInitTimeout) }

func testInitTimeout(t *testing.T, p peer) {
	t.Run(ModePerSession, func(t *testing.T) {
		ctx := safety(t)
		b, _ := peerBridge(t, p, Config{InitTimeout: 200 * time.Millisecond}, "-never-init")
		s, r, err := join(ctx, t, b, false)
		if err != nil {
			t.Fatal(err)
		}
		wantCode(t, r, CodeRequestTimeout, "--init-timeout")
		select {
		case <-s.Done():
		case <-ctx.Done():
			t.Fatal("the session did not end")
		}
		until(t, "the child was reaped", func() bool { return b.Children() == 0 })
		if got := b.Stats().ChildrenUnresponsive.Load(); got != 1 {
			t.Errorf("ChildrenUnresponsive %d, want 1", got)
		}
	})
	for _, stateless := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared, stateless=%v", stateless), func(t *testing.T) {
			ctx := safety(t)
			b, _ := peerBridge(t, p, Config{Mode: ModeShared, InitTimeout: 300 * time.Millisecond}, "-never-init")
			const n = 3
			errs := make(chan error, 2*n)
			done := make(chan struct{}, n)
			for range n {
				go func() {
					defer func() { done <- struct{}{} }()
					s, r, err := join(ctx, t, b, stateless)
					switch {
					case err == nil && r.Error == nil:
						errs <- fmt.Errorf("initialized a child that never answers: %+v", r)
					case errors.Is(err, errNoAnswer):
						errs <- err
					case err == nil:
						if r.Error.Code != CodeRequestTimeout {
							errs <- fmt.Errorf("error %+v, want %d", r.Error, CodeRequestTimeout)
						}
						select {
						case <-s.Done():
						case <-ctx.Done():
							errs <- errors.New("the session whose initialize timed out did not end")
						}
					case kindOf(err) != KindUnavailable:
						errs <- err
					}
				}()
			}
			for range n {
				select {
				case <-done:
				case <-ctx.Done():
					t.Fatal("an initialize never got an answer")
				}
			}
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			until(t, "the unresponsive child was stopped and restarted", func() bool {
				return b.Stats().ChildrenUnresponsive.Load() >= 1 && b.Stats().ChildrenRestarted.Load() >= 1
			})
			if n := b.Len(); n != 0 {
				t.Errorf("%d sessions left", n)
			}
		})
	}
}

// TestSharedSessionEnds: a session on a shared child ends (DELETE, the
// bridge's shutdown) with a call in flight that the child never answers.
// The call gets -32005 with why the session ended, at once, and the
// child is told to cancel it, as a per-session child's stop answers it.
// Before, its stream ended without an answer.
func TestSharedSessionEnds(t *testing.T) { forPeers(t, testSharedSessionEnds) }

func testSharedSessionEnds(t *testing.T, p peer) {
	for _, mode := range []string{ModeShared, ModePerIdentity} {
		t.Run(mode, func(t *testing.T) {
			ctx := safety(t)
			b, logs := peerBridge(t, p, Config{Mode: mode})
			// other stays to the end, so the child does too.
			other, _, err := join(ctx, t, b, false)
			if err != nil {
				t.Fatal(err)
			}
			hang := func(s *Session, id string, n int) *Stream {
				st := start(t, s, id, "hang")
				until(t, "the hang call reached the child", func() bool {
					return strings.Count(logs.String(), "badchild: hang received") >= n
				})
				return st
			}
			s, _, err := join(ctx, t, b, false)
			if err != nil {
				t.Fatal(err)
			}
			st := hang(s, "1", 1)
			s.Close()
			if r := drain(ctx, t, st); r.Error == nil || r.Error.Code != CodeChildExited || r.Error.Message != reasonDeleted {
				t.Fatalf("the call in flight when its session was deleted: %+v, want -32005 %q", r, reasonDeleted)
			}
			var cancelled []json.RawMessage
			if r := callTool(ctx, t, other, "2", "cancels"); json.Unmarshal([]byte(r.text()), &cancelled) != nil || len(cancelled) != 1 {
				t.Errorf("the child was told to cancel %s, want the deleted session's call", r.text())
			}

			st = hang(other, "3", 2)
			closed := make(chan error, 1)
			go func() { closed <- b.Close(ctx) }()
			if r := drain(ctx, t, st); r.Error == nil || r.Error.Code != CodeChildExited || r.Error.Message != reasonShutdown {
				t.Fatalf("the call in flight at shutdown: %+v, want -32005 %q", r, reasonShutdown)
			}
			if err := <-closed; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestLateProgress: progress after its request's answer is dropped, logged
// at debug with the child's id, and counted.
func TestLateProgress(t *testing.T) { forPeers(t, testLateProgress) }

func testLateProgress(t *testing.T, p peer) {
	ctx := safety(t)
	b, logs := peerBridge(t, p, Config{})
	s, _, err := join(ctx, t, b, false)
	if err != nil {
		t.Fatal(err)
	}
	if r := callTool(ctx, t, s, "1", "progress_after"); r.text() != "ok" {
		t.Fatalf("progress_after: %+v", r)
	}
	// The child writes the late progress with its answer, in one write:
	// once a later call's answer is in, so is the progress. (Its calls
	// run concurrently, so without that the answer could come first.)
	callTool(ctx, t, s, "2", "pid")
	if got := b.Stats().LateProgress.Load(); got != 1 {
		t.Errorf("LateProgress %d, want 1", got)
	}
	if !regexp.MustCompile(`level=DEBUG msg="dropped a progress notification that came after its request was over".* child_id=2\n`).MatchString(logs.String()) {
		t.Errorf("not logged at debug with the child's id:\n%s", logs.String())
	}
}

// TestStdinStalled: a child that stops reading its stdin while it runs
// on. Once its pipe is full, a write blocked on it is bounded by
// --request-timeout: every request in flight fails with -32005 saying the
// server stopped reading, the child is stopped (a shared one restarted),
// and the POST that was writing returns. Before, the write, and with it
// the client's POST and the timeout's own cancel, waited for good.
//
// Against the process only: what the test waits for is a pipe that fills,
// which the in-memory child does not model (TestInMemoryChildFaults
// stalls one directly).
func TestStdinStalled(t *testing.T) { testStdinStalled(t, processPeer) }

func testStdinStalled(t *testing.T, p peer) {
	for _, mode := range []string{ModePerSession, ModeShared} {
		t.Run(mode, func(t *testing.T) {
			ctx := safety(t)
			b, logs := peerBridge(t, p, Config{Mode: mode, RequestTimeout: 500 * time.Millisecond})
			s, _, err := join(ctx, t, b, false)
			if err != nil {
				t.Fatal(err)
			}
			pid := s.ChildPid()
			if r := callTool(ctx, t, s, "1", "stop_reading"); r.text() != "ok" {
				t.Fatalf("stop_reading: %+v", r)
			}
			// Requests of 256 KiB each: the first fills the 64 KiB pipe and
			// blocks its writer, the rest wait behind it.
			big := strings.Repeat("x", 256<<10)
			type result struct {
				r   reply
				err error
			}
			results := make(chan result, 3)
			for i := range 3 {
				go func() {
					st, err := s.Send([]Message{rpc(t, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"message":%q}}}`, 10+i, big)}, false)
					if err != nil {
						results <- result{err: err}
						return
					}
					r, err := drainErr(ctx, st)
					results <- result{r, err}
				}()
			}
			for range 3 {
				res := <-results
				switch {
				case res.err != nil && !errors.Is(res.err, errNoAnswer):
					// Refused outright: the child is already being stopped.
				case res.err != nil:
					t.Fatal(res.err)
				case res.r.Error != nil && res.r.Error.Code == CodeRequestTimeout:
					// Its own timeout may answer first: the stall bound is
					// the same --request-timeout. Either way it is answered.
				default:
					wantCode(t, res.r, CodeChildExited, "stopped reading its input")
				}
			}
			if !strings.Contains(logs.String(), "the MCP server stopped reading its stdin; stopping it") {
				t.Errorf("not logged:\n%s", logs.String())
			}
			if mode == ModePerSession {
				select {
				case <-s.Done():
				case <-ctx.Done():
					t.Fatal("the session did not end")
				}
				until(t, "the child was reaped", func() bool { return b.Children() == 0 })
			} else {
				until(t, "the shared child was restarted", func() bool { p := s.ChildPid(); return p != 0 && p != pid })
				if r := callTool(ctx, t, s, "20", "pid"); r.text() == "" || r.text() == fmt.Sprint(pid) {
					t.Fatalf("a call after the restart: %+v", r)
				}
			}
			if got := b.Stats().ChildrenUnresponsive.Load(); got != 1 {
				t.Errorf("ChildrenUnresponsive %d, want 1", got)
			}
		})
	}
}

// TestPerIdentityRetires: in per-identity mode a principal's child is
// stopped with its last session, the anonymous principal's (a bridge
// without authentication) as well as a named one's. Before, the
// anonymous principal's child, whose key is "", was kept until shutdown.
func TestPerIdentityRetires(t *testing.T) { forPeers(t, testPerIdentityRetires) }

func testPerIdentityRetires(t *testing.T, p peer) {
	for _, owner := range []string{"", "token ALICE"} {
		t.Run(fmt.Sprintf("owner %q", owner), func(t *testing.T) {
			ctx := safety(t)
			b, _ := peerBridge(t, p, Config{Mode: ModePerIdentity})
			var sessions []*Session
			for range 2 {
				s, st, err := b.Initialize(ctx, InitRequest{Message: initRequest(t), Owner: Owner{Key: owner, Name: owner}})
				if err != nil {
					t.Fatal(err)
				}
				drain(ctx, t, st)
				sessions = append(sessions, s)
			}
			if sessions[0].ChildPid() != sessions[1].ChildPid() || b.Children() != 1 {
				t.Fatalf("two sessions of one principal on %d children", b.Children())
			}
			sessions[0].Close()
			if b.Children() != 1 {
				t.Fatal("the child was stopped while a session of its principal lives")
			}
			sessions[1].Close()
			until(t, "the principal's child was stopped with its last session", func() bool { return b.Children() == 0 })
		})
	}
}

// TestInMemoryChildFaults: faults caused in an in-memory child directly,
// with a call in flight, each shown to the bridge by the next write. A
// child that stalls (stops reading) fails the call with -32005 and is
// stopped; one that exits fails it with its exit status; one that closes
// its stdout fails it and is stopped. Per session the session ends; a
// shared child is restarted and its session goes on.
func TestInMemoryChildFaults(t *testing.T) {
	unresponsive := func(s *Stats) int64 { return s.ChildrenUnresponsive.Load() }
	crashed := func(s *Stats) int64 { return s.ChildrenCrashed.Load() }
	for _, tc := range []struct {
		name  string
		fault func(*memChild)
		want  string             // in the error of the call in flight
		ended func(*Stats) int64 // the counter of the child's end
	}{
		{"stall", (*memChild).stall, "stopped reading its input", unresponsive},
		{"exit", func(m *memChild) { m.exitWith(3) }, "exited (exit status 3)", crashed},
		{"close stdout", (*memChild).closeStdout, "closed its stdout", unresponsive},
	} {
		for _, mode := range []string{ModePerSession, ModeShared} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				ctx := safety(t)
				kids := &memChildren{}
				b, _ := peerBridge(t, peer{"memory", kids.start}, Config{Mode: mode})
				s, _, err := join(ctx, t, b, false)
				if err != nil {
					t.Fatal(err)
				}
				pid := s.ChildPid()
				hung := start(t, s, "1", "hang")
				tc.fault(kids.last())
				// Refused or not, it is written, or found the child gone.
				_, _ = s.Send([]Message{rpc(t, `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`)}, false)
				wantCode(t, drain(ctx, t, hung), CodeChildExited, tc.want)
				if mode == ModePerSession {
					select {
					case <-s.Done():
					case <-ctx.Done():
						t.Fatal("the session did not end")
					}
					until(t, "the child was reaped", func() bool { return b.Children() == 0 })
				} else {
					until(t, "the shared child was restarted", func() bool { p := s.ChildPid(); return p != 0 && p != pid })
					if r := callTool(ctx, t, s, "3", "pid"); r.text() != fmt.Sprint(s.ChildPid()) {
						t.Fatalf("a call after the restart: %+v", r)
					}
				}
				if got := tc.ended(b.Stats()); got != 1 {
					t.Errorf("the child's end counted %d times, want 1", got)
				}
			})
		}
	}
}
