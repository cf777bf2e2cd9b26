package bridge

// memChild: an in-memory child for the bridge's unit tests, as the MCP Go
// SDK's tests run an in-memory transport. It is badchild's double: it
// takes badchild's flags (from its argv) and answers initialize, ping,
// tools/list and a few of badchild's tools the same way, with the same
// stderr lines, so a test can run against both (forPeers). What it writes
// reaches the bridge through the callbacks the bridge started it with
// (stdio.Options.OnMessage, OnOversize), in order, from one goroutine of
// its own, all of it before Done is closed, as stdio.Child does.
//
// Tools: echo {message}, pid, big {bytes}, hang (never answered; stderr
// "badchild: hang received"), cancels, close_stdout, progress_after,
// crash {code, stderr}, sample {prompt}. Flags: -never-init,
// -exit-at-start, -exit-first PATH.
//
// A test can also act on it directly (memChildren records the children a
// bridge starts): stall it (it reads nothing more, and Write fails with
// stdio.ErrStalled at once, as a process's does once its write deadline
// has passed), make it exit with a status, or close its stdout.
//
// Stop closes its stdin: it reads what was written before, then exits 0
// (a stalled child dies of SIGTERM at once, the grace periods left out).
// Kill ends it at once.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
	"github.com/mcp-bridge/mcp-bridge/stdio"
)

// peer is a kind of child the bridge's tests run against.
type peer struct {
	name  string
	start startFunc
}

var (
	processPeer = peer{"process", startProcess} // the badchild process
	memoryPeer  = peer{"memory", memStart}      // its in-memory double
	peers       = []peer{processPeer, memoryPeer}
)

// forPeers runs test against each peer, as a subtest named after it.
func forPeers(t *testing.T, test func(*testing.T, peer)) {
	t.Helper()
	for _, p := range peers {
		t.Run(p.name, func(t *testing.T) { test(t, p) })
	}
}

// command is the Command of a bridge on p: badchild with args.
func (p peer) command(t *testing.T, args ...string) []string {
	t.Helper()
	bin := "badchild"
	if p.name == processPeer.name {
		bin = testpeers.BuildGo(t, "./testdata/badchild")
	}
	return append([]string{bin}, args...)
}

// memChildren records the in-memory children a bridge starts (its start
// is the bridge's startFunc), for tests that act on them.
type memChildren struct {
	mu  sync.Mutex
	all []*memChild
}

func (r *memChildren) start(opts stdio.Options) (child, error) {
	m, err := newMemChild(opts)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.all = append(r.all, m)
	r.mu.Unlock()
	return m, nil
}

// last is the child started last.
func (r *memChildren) last() *memChild {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.all[len(r.all)-1]
}

// memPids are the in-memory children's pids: made up, unique, and far
// from any real process's.
var memPids atomic.Int64

// memStart is the startFunc of the in-memory child.
func memStart(opts stdio.Options) (child, error) {
	m, err := newMemChild(opts)
	if err != nil {
		return nil, err
	}
	return m, nil
}

type memChild struct {
	opts stdio.Options
	pid  int
	log  atomic.Pointer[slog.Logger]

	// Flags.
	neverInit   bool
	exitAtStart bool
	exitFirst   string

	mu       sync.Mutex
	cond     *sync.Cond // signalled when inbox, eof, stalled, exit or killed change
	inbox    [][]byte   // written and not yet read
	eof      bool       // stdin is closed
	stalled  bool       // it reads nothing more, and Write fails (stall)
	exit     error      // how it is to exit (exit), nil: not yet
	killed   bool
	shut     bool              // stdout is closed: it writes nothing more
	tail     []string          // the last stderr lines
	cancels  []json.RawMessage // requestIds of notifications/cancelled
	hangs    map[string]bool   // hang calls in flight, by raw id
	samples  map[string]json.RawMessage
	nextSamp int

	stdoutDone chan struct{}
	done       chan struct{}
	err        error // how it ended; set before done is closed
}

func newMemChild(opts stdio.Options) (*memChild, error) {
	if len(opts.Argv) == 0 || opts.Argv[0] == "" {
		return nil, errors.New("memchild: empty command")
	}
	m := &memChild{
		opts:       opts,
		pid:        1<<30 + int(memPids.Add(1)),
		hangs:      make(map[string]bool),
		samples:    make(map[string]json.RawMessage),
		stdoutDone: make(chan struct{}),
		done:       make(chan struct{}),
	}
	m.cond = sync.NewCond(&m.mu)
	fs := flag.NewFlagSet("badchild", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&m.neverInit, "never-init", false, "")
	fs.BoolVar(&m.exitAtStart, "exit-at-start", false, "")
	fs.StringVar(&m.exitFirst, "exit-first", "", "")
	if err := fs.Parse(opts.Argv[1:]); err != nil {
		return nil, fmt.Errorf("memchild: %w", err)
	}
	if m.opts.MaxLineBytes <= 0 {
		m.opts.MaxLineBytes = stdio.DefaultMaxLineBytes
	}
	if m.opts.StderrLines <= 0 {
		m.opts.StderrLines = stdio.DefaultStderrLines
	}
	if m.opts.Logger == nil {
		m.opts.Logger = slog.Default()
	}
	m.SetLogger(m.opts.Logger)
	go m.serve()
	return m, nil
}

func (m *memChild) SetLogger(l *slog.Logger)      { m.log.Store(l.With("child_pid", m.pid)) }
func (m *memChild) Pid() int                      { return m.pid }
func (m *memChild) Done() <-chan struct{}         { return m.done }
func (m *memChild) StdoutClosed() <-chan struct{} { return m.stdoutDone }

func (m *memChild) Err() error {
	<-m.done
	return m.err
}

func (m *memChild) StderrTail() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.tail)
}

func (m *memChild) Write(msg []byte) error {
	if bytes.IndexByte(msg, '\n') >= 0 {
		return errors.New("memchild: message contains a newline")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.eof:
		return stdio.ErrClosed
	case m.stalled:
		return fmt.Errorf("memchild: write to child %d: %w", m.pid, stdio.ErrStalled)
	}
	m.inbox = append(m.inbox, bytes.Clone(msg))
	m.cond.Broadcast()
	return nil
}

// stall makes the child read nothing more: every Write fails with
// stdio.ErrStalled.
func (m *memChild) stall() {
	m.mu.Lock()
	m.stalled = true
	m.cond.Broadcast()
	m.mu.Unlock()
}

// exitWith makes the child exit with status code, after the line it is
// answering.
func (m *memChild) exitWith(code int) {
	m.mu.Lock()
	if m.exit == nil {
		m.exit = fmt.Errorf("exit status %d", code)
	}
	m.cond.Broadcast()
	m.mu.Unlock()
}

// closeStdout closes the child's stdout: it runs on, and writes nothing
// more.
func (m *memChild) closeStdout() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.shut {
		m.shut = true
		close(m.stdoutDone)
	}
}

func (m *memChild) Stop(ctx context.Context) error {
	m.mu.Lock()
	m.eof = true
	m.cond.Broadcast()
	m.mu.Unlock()
	select {
	case <-m.done:
		return nil
	case <-ctx.Done():
		m.Kill()
		return fmt.Errorf("memchild: stop child %d: %w", m.pid, ctx.Err())
	}
}

func (m *memChild) Kill() {
	m.mu.Lock()
	m.killed, m.eof = true, true
	m.cond.Broadcast()
	m.mu.Unlock()
}

// serve is the child's life: it reads and answers until it exits, then
// closes StdoutClosed and Done, after everything it wrote was handed over.
func (m *memChild) serve() {
	err := m.run()
	m.mu.Lock()
	m.eof = true
	m.mu.Unlock()
	m.closeStdout()
	m.err = err
	close(m.done)
}

// run reads and answers; it returns how the child ended (nil: exit 0).
func (m *memChild) run() error {
	if m.exitFirst != "" {
		if f, err := os.OpenFile(m.exitFirst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err == nil {
			f.Close()
			if _, ok, end := m.read(); !ok {
				return end
			}
			m.stderr("badchild: first start; exiting")
			return errors.New("exit status 3")
		}
	}
	if m.exitAtStart {
		m.stderr("badchild: exiting at start")
		return errors.New("exit status 3")
	}
	for {
		line, ok, end := m.read()
		if !ok {
			return end
		}
		if err := m.handle(line); err != nil {
			return err
		}
	}
}

// read takes the next line written; ok false when the child ends with
// end instead.
func (m *memChild) read() (line []byte, ok bool, end error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for {
		switch {
		case m.killed:
			return nil, false, errors.New("signal: killed")
		case m.exit != nil:
			return nil, false, m.exit
		case m.stalled && m.eof:
			// It reads nothing, so it never sees EOF: Stop's SIGTERM
			// ends it.
			return nil, false, errors.New("signal: terminated")
		case !m.stalled && len(m.inbox) > 0:
			line, m.inbox = m.inbox[0], m.inbox[1:]
			return line, true, nil
		case !m.stalled && m.eof:
			return nil, false, nil // stdin ended: exit 0
		}
		m.cond.Wait()
	}
}

// handle answers one line; an error ends the child with it.
func (m *memChild) handle(line []byte) error {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(line, &msg); err != nil {
		m.stderr("badchild: ignoring unparsable line: " + err.Error())
		return nil
	}
	switch {
	case msg.Method == "" && len(msg.ID) > 0:
		m.sampled(msg.ID, msg.Result, msg.Error)
	case len(msg.ID) == 0:
		if msg.Method == methodCancelled {
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
			}
			_ = json.Unmarshal(msg.Params, &p)
			m.mu.Lock()
			m.cancels = append(m.cancels, p.RequestID)
			delete(m.hangs, string(p.RequestID))
			m.mu.Unlock()
		}
	case msg.Method == MethodInitialize:
		if m.neverInit {
			return nil
		}
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(msg.Params, &p)
		version := "2025-11-25"
		if slices.Contains([]string{"2025-03-26", "2025-06-18"}, p.ProtocolVersion) {
			version = p.ProtocolVersion
		}
		m.respond(msg.ID, map[string]any{
			"protocolVersion": version,
			"capabilities":    map[string]any{"tools": map[string]any{"listChanged": true}, "logging": map[string]any{}},
			"serverInfo":      map[string]any{"name": "badchild", "version": "0.0.1"},
		})
	case msg.Method == "ping", msg.Method == "logging/setLevel", msg.Method == "resources/subscribe", msg.Method == "resources/unsubscribe":
		m.respond(msg.ID, struct{}{})
	case msg.Method == "tools/list":
		tools := []any{}
		for _, name := range []string{"echo", "pid", "big", "hang", "cancels", "close_stdout", "progress_after", "crash", "sample"} {
			tools = append(tools, map[string]any{"name": name, "inputSchema": map[string]any{"type": "object"}})
		}
		m.respond(msg.ID, map[string]any{"tools": tools})
	case msg.Method == "tools/call":
		return m.call(msg.ID, msg.Params)
	default:
		m.respondError(msg.ID, CodeMethodNotFound, "method not found: "+msg.Method)
	}
	return nil
}

// call runs one tools/call.
func (m *memChild) call(id, params json.RawMessage) error {
	var p struct {
		Name      string `json:"name"`
		Arguments struct {
			Message string `json:"message"`
			Bytes   int    `json:"bytes"`
			Code    int    `json:"code"`
			Stderr  string `json:"stderr"`
			Prompt  string `json:"prompt"`
		} `json:"arguments"`
		Meta struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		m.respondError(id, CodeInvalidParams, "bad tools/call params: "+err.Error())
		return nil
	}
	a := p.Arguments
	switch p.Name {
	case "echo":
		m.respond(id, textResult(a.Message))
	case "pid":
		m.respond(id, textResult(strconv.Itoa(m.pid)))
	case "big":
		m.respond(id, textResult(string(bytes.Repeat([]byte("x"), a.Bytes))))
	case "hang":
		m.stderr("badchild: hang received")
		m.mu.Lock()
		m.hangs[string(id)] = true
		m.mu.Unlock()
	case "cancels":
		m.mu.Lock()
		ids, _ := json.Marshal(m.cancels)
		m.mu.Unlock()
		if string(ids) == "null" {
			ids = []byte("[]")
		}
		m.respond(id, textResult(string(ids)))
	case "close_stdout":
		m.stderr("badchild: closing stdout")
		m.closeStdout()
	case "progress_after":
		m.respond(id, textResult("ok"))
		if len(p.Meta.ProgressToken) > 0 {
			m.send(map[string]any{"jsonrpc": "2.0", "method": methodProgress, "params": map[string]any{
				"progressToken": p.Meta.ProgressToken, "progress": 1, "total": 1, "message": "after the answer",
			}})
		}
	case "crash":
		m.stderr(a.Stderr)
		return fmt.Errorf("exit status %d", a.Code)
	case "sample":
		m.mu.Lock()
		m.nextSamp++
		reqID := json.RawMessage(strconv.Quote(fmt.Sprintf("s-%d", m.nextSamp)))
		m.samples[string(reqID)] = id
		m.mu.Unlock()
		m.send(map[string]any{"jsonrpc": "2.0", "id": reqID, "method": "sampling/createMessage", "params": map[string]any{
			"messages":  []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": a.Prompt}}},
			"maxTokens": 10,
		}})
	default:
		m.respondError(id, CodeInvalidParams, "unknown tool: "+p.Name)
	}
	return nil
}

// sampled answers the sample call that asked the client request id.
func (m *memChild) sampled(id, result, rpcErr json.RawMessage) {
	m.mu.Lock()
	call, ok := m.samples[string(id)]
	delete(m.samples, string(id))
	m.mu.Unlock()
	if !ok {
		m.stderr(fmt.Sprintf("badchild: response to unknown request %s", id))
		return
	}
	if len(rpcErr) > 0 {
		m.respondError(call, CodeInternalError, "sampling failed: "+string(rpcErr))
		return
	}
	var r struct {
		Content struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	_ = json.Unmarshal(result, &r)
	m.respond(call, textResult(r.Content.Text))
}

func textResult(text string) map[string]any {
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}
}

func (m *memChild) respond(id json.RawMessage, result any) {
	m.send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (m *memChild) respondError(id json.RawMessage, code int, msg string) {
	m.send(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
}

// send writes one message to the bridge, as stdio's reader hands a line
// over: one over MaxLineBytes is reported to OnOversize instead, and one
// over the reader's buffer is the bridge's to keep (owned).
func (m *memChild) send(v any) {
	line, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("memchild: marshal: %v", err)) // built here: a bug
	}
	m.mu.Lock()
	shut := m.shut
	m.mu.Unlock()
	if shut {
		return
	}
	if len(line) > m.opts.MaxLineBytes {
		if m.opts.OnOversize != nil {
			keep := min(4<<10, len(line))
			m.opts.OnOversize(stdio.Oversize{Size: int64(len(line)), Head: line[:keep], Tail: line[len(line)-keep:]})
		}
		return
	}
	owned := len(line) > 64<<10
	if owned {
		line = append(make([]byte, 0, len(line)+stdio.SpliceSlack), line...)
	}
	if m.opts.OnMessage != nil {
		m.opts.OnMessage(line, owned)
	}
}

// stderr writes a line to stderr: to the log and the tail, as stdio does.
func (m *memChild) stderr(line string) {
	m.log.Load().Info("child stderr", "line", line)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tail = append(m.tail, line)
	if len(m.tail) > m.opts.StderrLines {
		m.tail = m.tail[1:]
	}
}
