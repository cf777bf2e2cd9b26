package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/internal/syncio"
)

// stopTimeout is how long a child gets to exit after its stdin is closed
// before it is killed.
const stopTimeout = 2 * time.Second

// ---- child processes ----

// childProc is a process the load tool spawned, with its stdin and stdout
// as pipes the tool owns. Both ends are plain *os.File so exec starts no
// copying goroutines and Wait never closes a pipe a reader is using.
type childProc struct {
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	br     *bufio.Reader
	long   []byte

	stopOnce sync.Once
	stopErr  error
}

// childStderr returns what children sharing w should get as stderr: w
// itself if it is a file (the child then writes to it directly), else w
// behind a lock: exec copies the stderr of a child whose Stderr is not an
// *os.File in a goroutine of its own, so children sharing such a writer
// (a buffer in tests) would race without it.
func childStderr(w io.Writer) io.Writer {
	if _, ok := w.(*os.File); ok {
		return w
	}
	return syncio.NewWriter(w)
}

// startChild spawns argv. Its stderr goes to stderr, which must be safe for
// concurrent use (see childStderr). The caller must call stop.
func startChild(argv []string, stderr io.Writer) (*childProc, error) {
	if len(argv) == 0 {
		return nil, errors.New("start child: empty command")
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start %q: %w", argv[0], err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("start %q: %w", argv[0], err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, stderr
	err = cmd.Start()
	// The child has its own copies now; ours would keep the pipes open
	// and hide the child's exit from the reader as EOF.
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("start %q: %w", argv[0], err)
	}
	return &childProc{cmd: cmd, stdin: inW, stdout: outR, br: bufio.NewReaderSize(outR, 64<<10)}, nil
}

func (c *childProc) pid() int { return c.cmd.Process.Pid }

// readLine returns the next line from the child's stdout, valid until the
// next read.
func (c *childProc) readLine() ([]byte, error) {
	line, err := readLine(c.br, &c.long)
	if err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("child %d: stdout closed", c.pid())
		}
		return nil, fmt.Errorf("child %d: read: %w", c.pid(), err)
	}
	return line, nil
}

// kill ends the child at once; used to unblock readers when a run is
// aborted. stop must still be called.
func (c *childProc) kill() { _ = c.cmd.Process.Kill() } // already exited is fine

// stop ends the child the way the stdio transport spec asks: "the client
// SHOULD initiate shutdown by first closing the input stream to the child
// process ... and waiting for the server to exit, or sending SIGTERM if
// the server does not exit within a reasonable time". The load tool skips
// straight to SIGKILL: its children are its own echo server or a server
// under test, and a benchmark must not hang on either.
func (c *childProc) stop() error {
	c.stopOnce.Do(func() {
		c.stdin.Close()
		done := make(chan error, 1)
		// Owner: stop. Exit: Wait returns once the process is gone,
		// which the Kill below guarantees.
		go func() { done <- c.cmd.Wait() }()
		var err error
		select {
		case err = <-done:
		case <-time.After(stopTimeout):
			_ = c.cmd.Process.Kill() // may have exited just now
			<-done
			err = fmt.Errorf("did not exit %v after stdin closed; killed", stopTimeout)
		}
		// Closed only after exit: a grandchild holding the pipe would
		// otherwise keep a reader blocked, and closing unblocks it.
		c.stdout.Close()
		if err != nil {
			c.stopErr = fmt.Errorf("stop child %d: %w", c.pid(), err)
		}
	})
	return c.stopErr
}

// ---- pipe floor ----

// pipeEndpoint is the pipe floor: the load tool talks to the echo child
// directly over its stdin and stdout, with no HTTP and no bridge between.
type pipeEndpoint struct {
	argv   []string
	stderr io.Writer
}

// pipeSession is one child speaking MCP over its pipes to conc workers.
type pipeSession struct {
	child *childProc
	conc  int

	wmu sync.Mutex // one writer at a time: a line must reach the pipe whole

	// With more than one worker a reader goroutine owns stdout and hands
	// each response line to the worker whose id it carries.
	slots      []chan []byte
	readerDone chan struct{}
	readerErr  error
	quit       chan struct{} // closed by stop, in case the reader is stuck handing over
	quitOnce   sync.Once
}

// openPipeSession spawns a child and initializes it. A child that does not
// answer initialize before ctx is done is killed.
func (e *pipeEndpoint) openPipeSession(ctx context.Context, conc int) (*pipeSession, error) {
	child, err := startChild(e.argv, e.stderr)
	if err != nil {
		return nil, err
	}
	s := &pipeSession{child: child, conc: conc, quit: make(chan struct{})}
	stopKill := context.AfterFunc(ctx, child.kill)
	err = s.initialize()
	if !stopKill() {
		err = fmt.Errorf("initialize child %d: %w", child.pid(), context.Cause(ctx))
	}
	if err != nil {
		return nil, errors.Join(err, child.stop())
	}
	if conc > 1 {
		s.slots = make([]chan []byte, conc)
		for i := range s.slots {
			s.slots[i] = make(chan []byte, 1)
		}
		s.readerDone = make(chan struct{})
		// Owner: the session. Exit: stdout EOF or error, which stop (the
		// child exiting, then stdout closing) guarantees, or quit.
		go s.readLoop()
	}
	return s, nil
}

func (s *pipeSession) write(b []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if _, err := s.child.stdin.Write(b); err != nil {
		return fmt.Errorf("child %d: write: %w", s.child.pid(), err)
	}
	return nil
}

func (s *pipeSession) initialize() error {
	if err := s.write([]byte(initializeRequest + "\n")); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	line, err := s.child.readLine()
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	var r rpcResponse
	if err := r.decode(line); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if err := r.check(initializeID); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if err := s.write([]byte(initializedNotification + "\n")); err != nil {
		return fmt.Errorf("notifications/initialized: %w", err)
	}
	return nil
}

// readLoop routes responses by id: worker w of the session uses ids
// congruent to w+1 modulo conc, so no lookup table or lock is needed.
func (s *pipeSession) readLoop() {
	defer close(s.readerDone)
	// Only the id is decoded here; the worker decodes the rest.
	var r struct {
		ID json.RawMessage `json:"id"`
	}
	for {
		line, err := s.child.readLine()
		if err != nil {
			s.readerErr = err
			return
		}
		r.ID = r.ID[:0]
		if err := json.Unmarshal(line, &r); err != nil {
			s.readerErr = fmt.Errorf("child %d: decode %.200q: %w", s.child.pid(), line, err)
			return
		}
		id, err := strconv.ParseInt(string(bytes.TrimSpace(r.ID)), 10, 64)
		if err != nil || id < 1 {
			s.readerErr = fmt.Errorf("child %d: response with unexpected id %q", s.child.pid(), r.ID)
			return
		}
		select {
		case s.slots[(id-1)%int64(s.conc)] <- bytes.Clone(line): // line is only valid until the next read
		case <-s.quit:
			// A child answering one id more often than asked filled
			// the slot; stop is waiting for us.
			return
		}
	}
}

// pipeCaller is one worker of a pipe session.
type pipeCaller struct {
	s    *pipeSession
	slot int64
	n    int64 // calls made, for ids
	id   []byte
	req  []byte
	resp rpcResponse
}

func (p *pipeCaller) call(ctx context.Context, msg []byte) error {
	id := p.n*int64(p.s.conc) + p.slot + 1 // id 0 was initialize
	p.n++
	p.id = strconv.AppendInt(p.id[:0], id, 10)
	p.req = append(appendEchoCall(p.req[:0], id, "echo", msg), '\n')
	if err := p.s.write(p.req); err != nil {
		return err
	}
	var line []byte
	if p.s.slots == nil {
		// One worker: it owns stdout, saving a goroutine handoff per call.
		var err error
		if line, err = p.s.child.readLine(); err != nil {
			return err
		}
	} else {
		select {
		case line = <-p.s.slots[p.slot]:
		case <-p.s.readerDone:
			return p.s.readerErr
		}
	}
	if err := p.resp.decode(line); err != nil {
		return err
	}
	return p.resp.checkEcho(p.id, msg)
}

// stop ends the child and waits for the reader.
func (s *pipeSession) stop() error {
	err := s.child.stop()
	s.quitOnce.Do(func() { close(s.quit) })
	if s.readerDone != nil {
		<-s.readerDone
	}
	return err
}

// open spawns n children concurrently, initializes each, and returns conc
// callers per child.
func (e *pipeEndpoint) open(ctx context.Context, n, conc int) (*sessionSet, error) {
	sessions := make([]*pipeSession, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range sessions {
		// Owner: open, which waits. Exit: initialize returning; a child
		// that never answers is killed when ctx is done.
		wg.Go(func() { sessions[i], errs[i] = e.openPipeSession(ctx, conc) })
	}
	wg.Wait()
	set := &sessionSet{
		close: func() error {
			// In parallel: each child may take up to stopTimeout.
			errs := make([]error, len(sessions))
			var wg sync.WaitGroup
			for i, s := range sessions {
				if s != nil {
					// Owner: close, which waits. Exit: stop returning,
					// bounded by stopTimeout and a kill.
					wg.Go(func() { errs[i] = s.stop() })
				}
			}
			wg.Wait()
			return errors.Join(errs...)
		},
		abort: func() {
			for _, s := range sessions {
				if s != nil {
					s.child.kill()
				}
			}
		},
	}
	if err := firstOf(errs); err != nil {
		return nil, errors.Join(err, set.close())
	}
	for _, s := range sessions {
		set.pids = append(set.pids, s.child.pid())
		for w := range conc {
			set.callers = append(set.callers, &pipeCaller{s: s, slot: int64(w)})
		}
	}
	return set, nil
}

// churner returns a caller whose every call is a child's whole life: spawn,
// initialize, one echo call, close stdin, wait.
func (e *pipeEndpoint) churner() caller { return pipeChurner{e} }

type pipeChurner struct{ e *pipeEndpoint }

func (p pipeChurner) call(ctx context.Context, msg []byte) error {
	s, err := p.e.openPipeSession(ctx, 1)
	if err != nil {
		return err
	}
	// A child that hangs is killed when the phase is cancelled, so the
	// read below cannot outlive the run.
	stopKill := context.AfterFunc(ctx, s.child.kill)
	defer stopKill()
	c := pipeCaller{s: s}
	return errors.Join(c.call(ctx, msg), s.stop())
}

// ---- HTTP floor ----

// floorHandler is the HTTP floor: the least a Streamable HTTP server can
// do per call. It keeps a session table and answers the echo tool inline,
// with no child process behind it. A 2026-07-28 request (its
// MCP-Protocol-Version header names that era) needs no session: it is
// checked against its headers and answered on its own (answerModern).
type floorHandler struct {
	mu       sync.RWMutex
	sessions map[string]struct{}
	bufs     sync.Pool // *[]byte: request and response bodies
}

func newFloorHandler() *floorHandler {
	return &floorHandler{sessions: make(map[string]struct{})}
}

// floorMaxBody bounds a request body; echo requests are tiny.
const floorMaxBody = 1 << 20

func (h *floorHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		h.post(w, r)
	case http.MethodDelete:
		sid := r.Header.Get("Mcp-Session-Id")
		h.mu.Lock()
		_, ok := h.sessions[sid]
		delete(h.sessions, sid)
		h.mu.Unlock()
		if !ok {
			http.Error(w, "unknown session", http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		// No GET stream: the floor never sends server-initiated messages.
		w.Header().Set("Allow", "POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func (h *floorHandler) post(w http.ResponseWriter, r *http.Request) {
	bp, _ := h.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer h.bufs.Put(bp)
	body, err := readAllInto((*bp)[:0], http.MaxBytesReader(w, r.Body, floorMaxBody))
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	*bp = body[:0] // keep the grown buffer for the next request
	if isModernVersion(r.Header.Get("Mcp-Protocol-Version")) {
		// The response goes after the request, as below.
		out, status := answerModern(body[len(body):], body, r.Header)
		if status == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		writeAnswer(w, r, status, out)
		return
	}
	var req rpcRequest
	// The response goes after the request in the same buffer: one
	// allocation for both once the pool is warm.
	out, method, reply := answer(body[len(body):], body, &req)
	if method == "initialize" {
		sid := newSessionID()
		h.mu.Lock()
		h.sessions[sid] = struct{}{}
		h.mu.Unlock()
		w.Header().Set("Mcp-Session-Id", sid)
	} else {
		// The spec: "Servers that require a session ID SHOULD respond to
		// requests without an Mcp-Session-Id header (other than
		// initialization) with HTTP 400 Bad Request", and to unknown ones
		// with 404.
		sid := r.Header.Get("Mcp-Session-Id")
		if sid == "" {
			http.Error(w, "missing Mcp-Session-Id", http.StatusBadRequest)
			return
		}
		h.mu.RLock()
		_, ok := h.sessions[sid]
		h.mu.RUnlock()
		if !ok {
			http.Error(w, "unknown session", http.StatusNotFound)
			return
		}
	}
	if !reply {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	writeAnswer(w, r, http.StatusOK, out)
}

// writeAnswer writes one JSON-RPC message, the answer to r, as JSON if the
// client takes it or status is not 200 (a status of its own belongs with
// an error body), else as an event stream.
func writeAnswer(w http.ResponseWriter, r *http.Request, status int, out []byte) {
	if status != http.StatusOK || acceptsJSON(r.Header.Get("Accept")) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(out)))
		w.WriteHeader(status)
		_, _ = w.Write(out) // a client that went away is not the floor's problem
		return
	}
	// A client that only accepts text/event-stream gets the response as
	// the single event of a stream that then ends.
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = io.WriteString(w, "event: message\ndata: ")
	_, _ = w.Write(out)
	_, _ = io.WriteString(w, "\n\n")
}

// modernRequest is a 2026-07-28 echo request as the HTTP floor reads it,
// in one pass: rpcRequest's fields and what the request says of itself in
// params._meta. A type of its own, so the echo child (a 2025 server, which
// skips _meta) decodes no more than it did.
type modernRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string `json:"name"`
		Arguments struct {
			Message json.RawMessage `json:"message"`
		} `json:"arguments"`
		Meta struct {
			ProtocolVersion    string          `json:"io.modelcontextprotocol/protocolVersion"`
			ClientCapabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
		} `json:"_meta"`
	} `json:"params"`
}

// Error codes 2026-07-28 adds.
const (
	codeHeaderMismatch     = -32020
	codeUnsupportedVersion = -32022
)

// modernResultHead opens the echo tool's result the way a bridge gives it
// for a 2025 child: marked complete and naming the server, so the floor
// sends the target's bytes.
const modernResultHead = `{"_meta":{"io.modelcontextprotocol/serverInfo":` + serverInfo +
	`},"resultType":"complete","content":[{"type":"text","text":`

// isModernVersion reports whether an MCP-Protocol-Version value names the
// modern era: a date no earlier than 2026-07-28. Versions are dates, so a
// later one is modern too (and unsupported).
func isModernVersion(v string) bool {
	return len(v) == len(modernProtocol) && v[4] == '-' && v[7] == '-' && v >= modernProtocol
}

// answerModern appends the answer to a 2026-07-28 request to dst and
// returns it with its HTTP status, 0 for none (a notification). It checks
// what the spec has a server check on each such request, in the order of
// its validation rules: _meta has the version and the client's
// capabilities; the MCP-Protocol-Version and Mcp-Method headers match the
// body; the version is served; the method exists; Mcp-Name matches
// params.name. Then it answers the echo tool inline.
func answerModern(dst, body []byte, hdr http.Header) ([]byte, int) {
	var req modernRequest
	if err := json.Unmarshal(body, &req); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && len(req.ID) > 0 && req.Method != "" {
			return appendError(dst, req.ID, codeInvalidParams, "invalid params"), http.StatusBadRequest
		}
		return appendError(dst, json.RawMessage("null"), codeParseError, "parse error"), http.StatusBadRequest
	}
	if len(req.ID) == 0 || req.Method == "" {
		return dst, 0 // a notification, or a response: nothing to answer
	}
	id, meta := req.ID, &req.Params.Meta
	fail := func(status, code int, msg string) ([]byte, int) {
		return appendError(dst, id, code, msg), status
	}
	switch {
	case meta.ProtocolVersion == "":
		return fail(http.StatusBadRequest, codeInvalidParams, "_meta io.modelcontextprotocol/protocolVersion is required")
	case len(meta.ClientCapabilities) == 0 || meta.ClientCapabilities[0] != '{':
		return fail(http.StatusBadRequest, codeInvalidParams, "_meta io.modelcontextprotocol/clientCapabilities is required")
	case hdr.Get("Mcp-Protocol-Version") != meta.ProtocolVersion:
		return fail(http.StatusBadRequest, codeHeaderMismatch, "MCP-Protocol-Version differs from _meta")
	case hdr.Get("Mcp-Method") != req.Method:
		return fail(http.StatusBadRequest, codeHeaderMismatch, "Mcp-Method differs from the body's method")
	case meta.ProtocolVersion != modernProtocol:
		out, status := fail(http.StatusBadRequest, codeUnsupportedVersion, "unsupported protocol version")
		// The spec's -32022 names what is served and what was asked.
		data, _ := json.Marshal(map[string]any{"supported": []string{modernProtocol}, "requested": meta.ProtocolVersion}) // cannot fail
		out = append(append(append(out[:len(out)-2], `,"data":`...), data...), `}}`...)
		return out, status
	case req.Method != "tools/call":
		return fail(http.StatusNotFound, codeMethodNotFound, "method not found: "+strconv.Quote(req.Method))
	case hdr.Get("Mcp-Name") != req.Params.Name:
		return fail(http.StatusBadRequest, codeHeaderMismatch, "Mcp-Name differs from params.name")
	case req.Params.Name != "echo":
		return fail(http.StatusOK, codeInvalidParams, "unknown tool "+strconv.Quote(req.Params.Name))
	}
	m := req.Params.Arguments.Message
	if len(m) == 0 || m[0] != '"' {
		return fail(http.StatusOK, codeInvalidParams, "argument message must be a string")
	}
	// m is a JSON string already validated by Unmarshal, as in answer.
	dst = appendResultHead(dst, id)
	dst = append(dst, modernResultHead...)
	dst = append(dst, m...)
	return append(dst, `}]}}`...), http.StatusOK
}

// acceptsJSON reports whether an Accept header lists application/json (or
// a wildcard covering it).
func acceptsJSON(accept string) bool {
	for part := range strings.SplitSeq(accept, ",") {
		switch mediaType(part) {
		case "application/json", "application/*", "*/*":
			return true
		}
	}
	return false
}

// readAllInto reads r to EOF, appending to dst.
func readAllInto(dst []byte, r io.Reader) ([]byte, error) {
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

// newSessionID returns 128 random bits in hex. The spec: the session ID
// "SHOULD be globally unique and cryptographically secure".
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// runHTTPFloor serves the HTTP floor on 127.0.0.1:0 for the http-floor
// subcommand. It prints its URL as the first line of out and serves until
// in reaches EOF, so the floor dies with the load tool that started it.
func runHTTPFloor(ctx context.Context, in io.Reader, out io.Writer) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("http floor: listen: %w", err)
	}
	srv := &http.Server{Handler: newFloorHandler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	// Owner: runHTTPFloor. Exit: Shutdown below.
	go func() { served <- srv.Serve(ln) }()
	if _, err := fmt.Fprintf(out, "http://%s/mcp\n", ln.Addr()); err != nil {
		_ = srv.Close()
		<-served
		return fmt.Errorf("http floor: announce url: %w", err)
	}

	stdinDone := make(chan struct{})
	// Owner: runHTTPFloor. Exit: in reaching EOF, which happens when the
	// parent closes the pipe or dies; not waited for, since the process
	// exits right after.
	go func() {
		_, _ = io.Copy(io.Discard, in)
		close(stdinDone)
	}()
	select {
	case <-stdinDone:
	case <-ctx.Done():
	case err := <-served:
		return fmt.Errorf("http floor: serve: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("http floor: shutdown: %w", err)
	}
	<-served
	return nil
}

// floorProcess is an HTTP floor running as a child of the load tool. A
// separate process, like the target, so its CPU and RSS can be read from
// /proc the same way and it does not share a Go runtime with the load
// generator.
type floorProcess struct {
	child *childProc
	url   string
}

// startFloorProcess runs self ("mcp-bridge-load", or a test binary that
// dispatches the same subcommands) as an HTTP floor.
func startFloorProcess(self []string, stderr io.Writer) (*floorProcess, error) {
	child, err := startChild(append(self[:len(self):len(self)], "http-floor"), stderr)
	if err != nil {
		return nil, fmt.Errorf("http floor: %w", err)
	}
	type result struct {
		line []byte
		err  error
	}
	got := make(chan result, 1)
	// Owner: startFloorProcess. Exit: the line arriving, or stop below
	// closing stdout.
	go func() {
		line, err := child.readLine()
		got <- result{bytes.Clone(line), err}
	}()
	var r result
	select {
	case r = <-got:
	case <-time.After(10 * time.Second):
		r = result{err: errors.New("no url within 10s")}
	}
	if r.err != nil {
		err := child.stop()
		<-got
		return nil, errors.Join(fmt.Errorf("http floor: %w", r.err), err)
	}
	return &floorProcess{child: child, url: string(bytes.TrimSpace(r.line))}, nil
}

func (f *floorProcess) pid() int    { return f.child.pid() }
func (f *floorProcess) stop() error { return f.child.stop() }
