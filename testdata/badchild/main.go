// Command badchild is a stdio MCP server that misbehaves on request, so that
// mcp-bridge's tests can meet, through a real child process, each wire habit
// a real stdio server has been seen to have.
//
// It reads newline-delimited JSON-RPC 2.0 from stdin and writes it to stdout.
// The loop is hand-written rather than built on an SDK because the tests
// depend on exact bytes: key order, id spelling, stray lines.
//
// Methods: initialize, ping, tools/list, logging/setLevel, tools/call.
// Each tools/call runs in its own goroutine, so a call waiting on the client
// (sample) or on the clock (slow) does not stop stdin being read.
//
// Tools (arguments in params.arguments):
//
//	echo {message}             answers message, with "id" as the LAST key (as the TypeScript SDK does)
//	echo_count {}              answers how many echo calls it has answered
//	big {bytes, id_first}      answers a text of that many 'x', streamed; id first or last
//	garbage {lines}            writes that many non-JSON lines and a blank line, then answers
//	stderr_flood {lines}       writes that many lines to stderr, then answers "done"
//	stderr {stderr}            writes that text and a newline to stderr, then answers "ok"
//	crash {code, stderr}       writes stderr, then exits with code without answering
//	fork {setsid, ignore_term, daemon}
//	                           starts a grandchild that inherits stdout and stderr and answers
//	                           its pid. By default it stays in badchild's process group;
//	                           setsid: it starts a session of its own (leaving the group);
//	                           ignore_term: it ignores SIGTERM; daemon: it forks a daemon
//	                           (setsid, ignoring SIGTERM) and exits, so the daemon is
//	                           re-parented, and the answer is the daemon's pid
//	slow {ms, steps}           sends progress (if _meta.progressToken) and log notifications
//	                           per step over ms in total, then answers "slow done"
//	sample {prompt}            sends sampling/createMessage to the client, answers the sampled text
//	                           (a JSON-RPC error if the client answered one)
//	ask {method}               sends the client a request of method (no params), answers
//	                           "asked METHOD: result JSON" or "asked METHOD: error JSON": a
//	                           server that carries on whatever the answer
//	notify {method, params}    writes that notification, then answers "ok"
//	flood {count, bytes}       writes count notifications/progress (with _meta.progressToken,
//	                           a message of bytes 'x') as fast as it can, then answers "flood done"
//	env {}                     answers os.Environ() joined by "\n"
//	pid {}                     answers its pid
//	cancels {}                 answers a JSON array of the requestIds seen in notifications/cancelled
//	strays {}                  answers a JSON array of the ids of responses to requests it never sent
//	state_calls {}             answers the setLevel/subscribe/unsubscribe requests received, as a JSON array
//	lifecycle {}               answers the initialize requests (with their params) and
//	                           notifications/initialized received, in order, as a JSON array
//	hang {}                    never answers: writes "badchild: hang received" to stderr and waits
//	                           until cancelled (notifications/cancelled) or stdin ends
//	close_stdout {}            writes "badchild: closing stdout" to stderr, closes stdout and
//	                           keeps running (reading stdin) without answering
//	ask_after {method}         answers "ok", then sends the client a request of method with
//	                           empty params (roots/list, say) and writes what came back to stderr:
//	                           "badchild: <method> after the answer got <result or error>"
//	progress_after {}          answers "ok", then sends a progress notification for the request
//	                           (if _meta.progressToken): progress after the answer, in the
//	                           same write, so no later call's answer comes between them
//	stop_reading {}            answers "ok", then never reads stdin again and keeps running
//	                           (until signalled): a server whose input backs up
//	probe {op, target, in_grandchild}
//	                           tries one thing a sandbox may refuse and answers "ok" or
//	                           "error: <why>": op read, list or write a file (target), exec it,
//	                           tcp (connect to target HOST:PORT), udp (send a datagram there),
//	                           unix (connect to the socket at target), listen (TCP on target),
//	                           signal (SIGCONT to the pid target), userns (start a grandchild in a
//	                           user namespace of its own), mount (a tmpfs on target), nocaps ("ok"
//	                           when it has no effective capability);
//	                           in_grandchild: a grandchild ("badchild probe OP TARGET") tries it;
//	                           exit_on_error: on an error, write "badchild: <why>" to stderr and
//	                           exit 1, as a server that cannot go on without what it was refused
//	forkbomb {}                starts grandchildren until the system refuses one, then writes
//	                           "badchild: fork bomb stopped after N processes: <why>" to stderr
//	                           and exits 1
//	hog {}                     allocates and touches memory in 8 MiB steps until it dies
//	spin {}                    keeps a CPU busy until it dies
//
// Pids are as /proc sees them (the readlink of /proc/self), which inside a
// PID namespace of the bridge's making is the bridge's view, not os.Getpid().
//
// Flags: -ignore-term, -ignore-eof, -banner, -exit-after-init, -stderr-at-start N,
// -exit-first PATH (if PATH does not exist, create it and exit 3 as soon as the first line
// arrives on stdin, unanswered: the first start fails, the next works), -exit-at-start
// (always exit 3 at once), -never-init (never answer initialize), -tool-pages N (tools/list
// in N pages, the cursor of page k being "page-k"; a cursor it did not give is -32602),
// -hang-lists (never answer a */list request, as a server that hangs), -notify-at-init
// METHOD, -ask-when-idle METHOD, -runs PATH (append the message of every echo call to PATH, a
// quoted line each: what ran, recorded across every process that shares PATH).
// Run as "badchild grandchild [-ignore-term] [-daemon]" it blocks until killed
// (with -daemon it starts the daemon and exits); that is what fork starts.
// Run as "badchild probe OP TARGET" it prints what probe would answer.
// By default it exits 0 on stdin EOF once in-flight calls have ended.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// message is any JSON-RPC message; which fields are set says which kind.
type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// server holds the state shared by the read loop and the tool goroutines.
type server struct {
	mu  sync.Mutex // guards out, so each JSON-RPC line is written whole
	out *bufio.Writer

	stateMu  sync.Mutex
	pending  map[string]chan message  // our requests to the client, by raw id
	inflight map[string]chan struct{} // tools/call in progress, closed on cancel
	cancels  []json.RawMessage
	// strays: the ids of responses to requests it never sent.
	strays []json.RawMessage
	// stateCalls: setLevel, subscribe and unsubscribe requests, in order.
	stateCalls []string
	// lifecycle: initialize requests and initialized notifications, in order.
	lifecycle []string

	nextID    atomic.Int64
	echoes    atomic.Int64  // echo calls answered
	stdinDone chan struct{} // closed at stdin EOF: nobody will answer us any more
	calls     sync.WaitGroup

	neverInit bool // -never-init
	// askWhenIdle (-ask-when-idle) is a request the server sends its
	// client on its own, as server-everything asks for roots after it is
	// initialized: right after its first answer to a tools/call, so no
	// request of the client's is in flight; askedWhenIdle is the answer,
	// for the asked_when_idle tool.
	askWhenIdle   string
	notifyAtInit  string // -notify-at-init
	toolPages     int    // -tool-pages
	runs          string // -runs
	hangLists     bool   // -hang-lists
	headerParam   string // -header-param
	initGate      string // -init-gate
	askOnce       sync.Once
	askedWhenIdle string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "grandchild" {
		grandchild(os.Args[2:])
	}
	if len(os.Args) == 4 && os.Args[1] == "probe" {
		fmt.Print(probe(os.Args[2], os.Args[3]))
		os.Exit(0)
	}
	ignoreTerm := flag.Bool("ignore-term", false, "ignore SIGTERM, so only SIGKILL stops the process")
	ignoreEOF := flag.Bool("ignore-eof", false, "keep running after stdin EOF until signalled")
	banner := flag.Bool("banner", false, "print a non-JSON banner line to stdout at start")
	exitAfterInit := flag.Bool("exit-after-init", false, "exit 3 right after answering initialize")
	stderrAtStart := flag.Int("stderr-at-start", 0, "write this many stderr lines at start")
	exitFirst := flag.String("exit-first", "", "if this file does not exist, create it and exit 3 on the first line read")
	exitAtStart := flag.Bool("exit-at-start", false, "exit 3 at once")
	neverInit := flag.Bool("never-init", false, "never answer initialize")
	notifyAtInit := flag.String("notify-at-init", "", "send this notification (METHOD, or METHOD PARAMS with {pid} in PARAMS replaced by the process id) once initialized, as a server that announces its lists as it starts")
	askWhenIdle := flag.String("ask-when-idle", "", "send the client a request of this method on its own, right after the first tools/call is answered")
	runs := flag.String("runs", "", "append the message of every echo call to this file, a line each: a record of the calls run that outlives the process")
	toolPages := flag.Int("tool-pages", 1, "answer tools/list in this many pages, each with a nextCursor to the next")
	hangLists := flag.Bool("hang-lists", false, "never answer tools/list, prompts/list, resources/list or resources/templates/list")
	initGate := flag.String("init-gate", "", "answer initialize only once this file exists: a server slow to start, for as long as a test wants")
	headerParam := flag.String("header-param", "", "list echo's message with this x-mcp-header, which 2026-07-28 clients mirror into Mcp-Param-{it}")
	flag.Parse()

	if *exitFirst != "" {
		if f, err := os.OpenFile(*exitFirst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err == nil {
			f.Close()
			// Once the first message is in, so whoever sent it waits for
			// an answer that never comes.
			_, _ = bufio.NewReader(os.Stdin).ReadBytes('\n')
			fmt.Fprintln(os.Stderr, "badchild: first start; exiting")
			os.Exit(3)
		}
	}
	if *exitAtStart {
		fmt.Fprintln(os.Stderr, "badchild: exiting at start")
		os.Exit(3)
	}

	if *ignoreTerm {
		signal.Ignore(syscall.SIGTERM)
	}
	for i := 1; i <= *stderrAtStart; i++ {
		fmt.Fprintf(os.Stderr, "stderr at start line %d\n", i)
	}
	s := &server{
		out:          bufio.NewWriterSize(os.Stdout, 64<<10),
		pending:      map[string]chan message{},
		inflight:     map[string]chan struct{}{},
		stdinDone:    make(chan struct{}),
		neverInit:    *neverInit,
		askWhenIdle:  *askWhenIdle,
		notifyAtInit: *notifyAtInit,
		toolPages:    max(*toolPages, 1),
		runs:         *runs,
		hangLists:    *hangLists,
		headerParam:  *headerParam,
		initGate:     *initGate,
	}
	if *banner {
		s.writeLine([]byte("badchild: starting up (this line is not JSON)"))
	}
	s.readLoop(os.Stdin, *exitAfterInit)
	close(s.stdinDone)
	s.calls.Wait()
	if *ignoreEOF {
		blockForever()
	}
}

// blockForever sleeps rather than using select{}, which the runtime would
// report as a deadlock once no other goroutine is left.
func blockForever() {
	for {
		time.Sleep(time.Hour)
	}
}

func (s *server) readLoop(r io.Reader, exitAfterInit bool) {
	br := bufio.NewReader(r) // ReadBytes has no line limit, unlike bufio.Scanner
	for {
		line, err := br.ReadBytes('\n')
		if line = bytes.TrimSpace(line); len(line) > 0 {
			s.handle(line, exitAfterInit)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				fmt.Fprintf(os.Stderr, "badchild: read stdin: %v\n", err)
			}
			return
		}
	}
}

func (s *server) handle(line []byte, exitAfterInit bool) {
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		fmt.Fprintf(os.Stderr, "badchild: ignoring unparsable line: %v\n", err)
		return
	}
	switch {
	case m.Method == "" && len(m.ID) > 0:
		s.deliverResponse(m)
	case len(m.ID) == 0:
		s.handleNotification(m)
	case m.Method == "initialize":
		s.stateMu.Lock()
		s.lifecycle = append(s.lifecycle, m.Method+" "+string(m.Params))
		s.stateMu.Unlock()
		if s.neverInit {
			return
		}
		if s.initGate != "" {
			go func() {
				for {
					if _, err := os.Stat(s.initGate); err == nil {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
				s.initialize(m)
			}()
			return
		}
		s.initialize(m)
		if exitAfterInit {
			os.Exit(3)
		}
	case m.Method == "ping":
		s.respond(m.ID, struct{}{}, false)
	case m.Method == "logging/setLevel", m.Method == "resources/subscribe", m.Method == "resources/unsubscribe":
		// Recorded, so tests can see what a shared child was asked.
		s.stateMu.Lock()
		s.stateCalls = append(s.stateCalls, m.Method+" "+string(m.Params))
		s.stateMu.Unlock()
		s.respond(m.ID, struct{}{}, false)
	case s.hangLists && strings.HasSuffix(m.Method, "/list"):
		fmt.Fprintf(os.Stderr, "badchild: %s received, never answered\n", m.Method)
	case m.Method == "tools/list":
		s.listTools(m)
	case m.Method == "tools/call" && toolName(m.Params) == "stop_reading":
		// Answered here, on the read loop, which then never reads again.
		s.respond(m.ID, textResult("ok"), false)
		fmt.Fprintln(os.Stderr, "badchild: no longer reading stdin")
		blockForever()
	case m.Method == "tools/call":
		done := make(chan struct{})
		s.stateMu.Lock()
		s.inflight[idKey(m.ID)] = done
		s.stateMu.Unlock()
		s.calls.Go(func() {
			s.callTool(m, done)
			s.stateMu.Lock()
			delete(s.inflight, idKey(m.ID))
			s.stateMu.Unlock()
		})
	default:
		s.respondError(m.ID, -32601, "method not found: "+m.Method)
	}
}

// listTools answers tools/list with the page its cursor names: the tools
// in -tool-pages pages, the cursor of page k (from 2) "page-k". A cursor
// it did not give is an error (-32602), as the specification asks.
func (s *server) listTools(m message) {
	var p struct {
		Cursor *string `json:"cursor"`
	}
	_ = json.Unmarshal(m.Params, &p)
	tools := toolList()
	if s.headerParam != "" {
		echo := tools[0].(map[string]any)["inputSchema"].(map[string]any)["properties"].(map[string]any)["message"].(map[string]any)
		echo["x-mcp-header"] = s.headerParam
	}
	page := 1
	if p.Cursor != nil {
		if _, err := fmt.Sscanf(*p.Cursor, "page-%d", &page); err != nil || page < 2 || page > s.toolPages || *p.Cursor != fmt.Sprintf("page-%d", page) {
			s.respondError(m.ID, -32602, "invalid cursor")
			return
		}
	}
	per := (len(tools) + s.toolPages - 1) / s.toolPages
	res := map[string]any{"tools": tools[min((page-1)*per, len(tools)):min(page*per, len(tools))]}
	if page < s.toolPages {
		res["nextCursor"] = fmt.Sprintf("page-%d", page+1)
	}
	s.respond(m.ID, res, false)
}

// toolName is the name of the tool a tools/call's params call.
func toolName(params json.RawMessage) string {
	var p struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(params, &p)
	return p.Name
}

func (s *server) initialize(m message) {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(m.Params, &p) // a missing version falls back to the latest below
	version := "2025-11-25"
	if slices.Contains([]string{"2025-03-26", "2025-06-18", "2025-11-25"}, p.ProtocolVersion) {
		version = p.ProtocolVersion
	}
	s.respond(m.ID, map[string]any{
		"protocolVersion": version,
		"capabilities": map[string]any{"tools": map[string]any{"listChanged": true}, "logging": map[string]any{},
			// It answers resources/subscribe (recorded: state_calls) but has
			// no resources to list; updates are what notify sends.
			"resources": map[string]any{"subscribe": true}},
		"serverInfo": map[string]any{"name": "badchild", "version": "0.0.1"},
	}, false)
}

func (s *server) handleNotification(m message) {
	if m.Method == "notifications/initialized" {
		s.stateMu.Lock()
		s.lifecycle = append(s.lifecycle, m.Method)
		s.stateMu.Unlock()
		if s.notifyAtInit != "" {
			// "METHOD" or "METHOD PARAMS", PARAMS a JSON object in which
			// {pid} is this process's id (which child sent it).
			method, params, _ := strings.Cut(s.notifyAtInit, " ")
			n := map[string]any{"jsonrpc": "2.0", "method": method}
			if params != "" {
				n["params"] = json.RawMessage(strings.ReplaceAll(params, "{pid}", strconv.Itoa(selfPid())))
			}
			s.writeJSON(n)
		}
		return
	}
	if m.Method != "notifications/cancelled" {
		return // the rest need nothing from us
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil || len(p.RequestID) == 0 {
		fmt.Fprintf(os.Stderr, "badchild: cancelled without requestId: %s\n", m.Params)
		return
	}
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	s.cancels = append(s.cancels, p.RequestID)
	if done, ok := s.inflight[idKey(p.RequestID)]; ok {
		close(done)
		delete(s.inflight, idKey(p.RequestID))
	}
}

func (s *server) deliverResponse(m message) {
	s.stateMu.Lock()
	ch, ok := s.pending[idKey(m.ID)]
	delete(s.pending, idKey(m.ID))
	s.stateMu.Unlock()
	if !ok {
		fmt.Fprintf(os.Stderr, "badchild: response to unknown request %s\n", m.ID)
		s.stateMu.Lock()
		s.strays = append(s.strays, m.ID)
		s.stateMu.Unlock()
		return
	}
	ch <- m
}

// callTool runs one tools/call. done is closed if the client cancels it.
func (s *server) callTool(m message, done <-chan struct{}) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		s.respondError(m.ID, -32602, "bad tools/call params: "+err.Error())
		return
	}
	var a struct {
		Message string          `json:"message"`
		Bytes   int             `json:"bytes"`
		IDFirst bool            `json:"id_first"`
		Lines   int             `json:"lines"`
		Code    int             `json:"code"`
		Stderr  string          `json:"stderr"`
		MS      int             `json:"ms"`
		Steps   int             `json:"steps"`
		Prompt  string          `json:"prompt"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
		Count   int             `json:"count"`
		// fork
		Setsid     bool `json:"setsid"`
		IgnoreTerm bool `json:"ignore_term"`
		Daemon     bool `json:"daemon"`
		// probe
		Op           string `json:"op"`
		Target       string `json:"target"`
		InGrandchild bool   `json:"in_grandchild"`
		ExitOnError  bool   `json:"exit_on_error"`
	}
	if len(p.Arguments) > 0 {
		if err := json.Unmarshal(p.Arguments, &a); err != nil {
			s.respondError(m.ID, -32602, "bad arguments: "+err.Error())
			return
		}
	}
	switch p.Name {
	case "echo":
		s.echoes.Add(1)
		if s.runs != "" {
			s.recordRun(a.Message)
		}
		s.respond(m.ID, textResult(a.Message), true)
	case "echo_count":
		s.respond(m.ID, textResult(strconv.FormatInt(s.echoes.Load(), 10)), false)
	case "big":
		s.writeBig(m.ID, a.Bytes, a.IDFirst)
	case "garbage":
		s.mu.Lock()
		for i := 1; i <= a.Lines; i++ {
			fmt.Fprintf(s.out, "this is not json %d\n", i)
		}
		s.out.WriteString("\n")
		s.out.Flush()
		s.mu.Unlock()
		s.respond(m.ID, textResult(fmt.Sprintf("wrote %d garbage lines", a.Lines)), false)
	case "stderr_flood":
		w := bufio.NewWriter(os.Stderr)
		for i := 1; i <= a.Lines; i++ {
			fmt.Fprintf(w, "stderr line %d\n", i)
		}
		w.Flush()
		s.respond(m.ID, textResult("done"), false)
	case "stderr":
		fmt.Fprintln(os.Stderr, a.Stderr)
		s.respond(m.ID, textResult("ok"), false)
	case "crash":
		fmt.Fprint(os.Stderr, a.Stderr)
		os.Exit(a.Code)
	case "fork":
		s.fork(m.ID, a.Setsid, a.IgnoreTerm, a.Daemon)
	case "slow":
		s.slow(m.ID, p.Meta.ProgressToken, a.MS, a.Steps, done)
	case "sample":
		s.sample(m.ID, a.Prompt)
	case "ask":
		s.ask(m.ID, a.Method)
	case "asked_when_idle":
		s.stateMu.Lock()
		answer := s.askedWhenIdle
		s.stateMu.Unlock()
		s.respond(m.ID, textResult(answer), false)
		if s.askWhenIdle != "" {
			// Written after the answer: the client's call is over when the
			// question arrives.
			s.askOnce.Do(func() {
				go func() {
					resp, ok := s.request(s.askWhenIdle, nil)
					answer := "result " + string(resp.Result)
					if len(resp.Error) > 0 {
						answer = "error " + string(resp.Error)
					}
					if ok {
						s.stateMu.Lock()
						s.askedWhenIdle = answer
						s.stateMu.Unlock()
					}
				}()
			})
		}
	case "notify":
		n := map[string]any{"jsonrpc": "2.0", "method": a.Method}
		if len(a.Params) > 0 {
			n["params"] = a.Params
		}
		s.writeJSON(n)
		s.respond(m.ID, textResult("ok"), false)
	case "flood":
		s.flood(m.ID, p.Meta.ProgressToken, a.Count, a.Bytes)
	case "env":
		s.respond(m.ID, textResult(strings.Join(os.Environ(), "\n")), false)
	case "pid":
		s.respond(m.ID, textResult(strconv.Itoa(selfPid())), false)
	case "state_calls":
		s.stateMu.Lock()
		b, _ := json.Marshal(s.stateCalls)
		s.stateMu.Unlock()
		s.respond(m.ID, textResult(string(b)), false)
	case "lifecycle":
		s.stateMu.Lock()
		b, _ := json.Marshal(s.lifecycle)
		s.stateMu.Unlock()
		s.respond(m.ID, textResult(string(b)), false)
	case "hang":
		fmt.Fprintln(os.Stderr, "badchild: hang received")
		select {
		case <-done:
		case <-s.stdinDone:
		}
	case "close_stdout":
		fmt.Fprintln(os.Stderr, "badchild: closing stdout")
		s.mu.Lock()
		s.out.Flush()
		os.Stdout.Close()
		s.mu.Unlock()
	case "ask_after":
		s.respond(m.ID, textResult("ok"), false)
		s.askAfter(a.Method)
	case "progress_after":
		// The answer and the progress go out in one write: every call
		// runs in a goroutine of its own, and an answer to a later call
		// must not come between them. Once a later answer is in, so is
		// this late progress.
		lines := [][]byte{resultLine(m.ID, textResult("ok"), false)}
		if len(p.Meta.ProgressToken) > 0 {
			lines = append(lines, mustMarshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{
				"progressToken": p.Meta.ProgressToken, "progress": 1, "total": 1, "message": "after the answer",
			}}))
		}
		s.writeLine(lines...)
	case "probe":
		got := probe(a.Op, a.Target)
		if a.InGrandchild {
			got = probeInGrandchild(a.Op, a.Target)
		}
		if why, failed := strings.CutPrefix(got, "error: "); failed && a.ExitOnError {
			fmt.Fprintln(os.Stderr, "badchild: "+why)
			os.Exit(1)
		}
		s.respond(m.ID, textResult(got), false)
	case "forkbomb":
		forkbomb()
	case "hog":
		hog()
	case "spin":
		for n := 0; ; n++ {
			spun.Add(1)
		}
	case "cancels", "strays":
		s.stateMu.Lock()
		ids, _ := json.Marshal(map[string][]json.RawMessage{"cancels": s.cancels, "strays": s.strays}[p.Name]) // raw ids marshal as themselves
		s.stateMu.Unlock()
		if string(ids) == "null" {
			ids = []byte("[]")
		}
		s.respond(m.ID, textResult(string(ids)), false)
	default:
		s.respondError(m.ID, -32602, "unknown tool: "+p.Name)
	}
}

// fork starts a grandchild that inherits stdout and stderr, so, like a
// server started through npx or a shell, it keeps the pipes open after
// badchild itself is killed unless the whole tree is.
func (s *server) fork(id json.RawMessage, setsid, ignoreTerm, daemon bool) {
	var args []string
	if ignoreTerm {
		args = append(args, "-ignore-term")
	}
	if daemon {
		args = append(args, "-daemon")
	}
	pid, wait, err := startGrandchild(setsid, args...)
	if err != nil {
		s.respondError(id, -32603, err.Error())
		return
	}
	go wait() // reap it if it dies while we live; its exit status is of no interest
	s.respond(id, textResult(strconv.Itoa(pid)), false)
}

// startGrandchild runs "badchild grandchild args..." and returns its pid,
// which it reports itself on fd 3 (its pid as /proc sees it).
func startGrandchild(setsid bool, args ...string) (int, func() error, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, nil, fmt.Errorf("find executable: %v", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return 0, nil, err
	}
	defer r.Close()
	cmd := exec.Command(exe, append([]string{"grandchild"}, args...)...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: setsid}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return 0, nil, fmt.Errorf("start grandchild: %v", err)
	}
	line, _ := bufio.NewReader(r).ReadString('\n')
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return 0, nil, fmt.Errorf("the grandchild reported no pid (%q)", line)
	}
	return pid, cmd.Wait, nil
}

// grandchild is what fork starts: it reports a pid on fd 3 and blocks until
// killed; with -daemon it starts a setsid'd daemon that ignores SIGTERM,
// reports the daemon's pid instead, and exits.
func grandchild(args []string) {
	fs := flag.NewFlagSet("grandchild", flag.ExitOnError)
	ignoreTerm := fs.Bool("ignore-term", false, "ignore SIGTERM")
	daemon := fs.Bool("daemon", false, "start a setsid'd daemon ignoring SIGTERM, report its pid, and exit")
	fs.Parse(args)
	if *ignoreTerm {
		signal.Ignore(syscall.SIGTERM)
	}
	report := os.NewFile(3, "report")
	if *daemon {
		pid, _, err := startGrandchild(true, "-ignore-term")
		if err != nil {
			fmt.Fprintf(os.Stderr, "badchild: %v\n", err)
			os.Exit(1)
		}
		fmt.Fprintf(report, "%d\n", pid)
		os.Exit(0)
	}
	fmt.Fprintf(report, "%d\n", selfPid())
	report.Close()
	blockForever()
}

// probe tries op on target and says how it went: "ok", or "error: "
// and the error.
func probe(op, target string) string {
	var err error
	switch op {
	case "read":
		_, err = os.ReadFile(target)
	case "list":
		_, err = os.ReadDir(target)
	case "write":
		err = os.WriteFile(target, []byte("written by badchild\n"), 0o600)
	case "exec":
		err = exec.Command(target).Run()
	case "tcp", "unix":
		var c net.Conn
		if c, err = net.DialTimeout(op, target, 10*time.Second); err == nil {
			c.Close()
		}
	case "udp":
		var c net.Conn
		if c, err = net.Dial("udp", target); err == nil {
			_, err = c.Write([]byte("badchild"))
			c.Close()
		}
	case "listen":
		var l net.Listener
		if l, err = net.Listen("tcp", target); err == nil {
			l.Close()
		}
	case "signal":
		var pid int
		if pid, err = strconv.Atoi(target); err == nil {
			err = syscall.Kill(pid, syscall.SIGCONT)
		}
	case "userns":
		cmd := exec.Command("/proc/self/exe", "probe", "read", "/dev/null")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
		err = cmd.Run()
	case "mount":
		err = syscall.Mount("tmpfs", target, "tmpfs", 0, "")
	case "nocaps":
		var b []byte
		if b, err = os.ReadFile("/proc/self/status"); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, "CapEff:"); ok && strings.Trim(strings.TrimSpace(v), "0") != "" {
					err = fmt.Errorf("capabilities %s", strings.TrimSpace(v))
				}
			}
		}
	default:
		err = fmt.Errorf("unknown probe %q", op)
	}
	if err != nil {
		return "error: " + err.Error()
	}
	return "ok"
}

// probeInGrandchild runs the probe in a grandchild, which inherits
// whatever confines this process.
func probeInGrandchild(op, target string) string {
	exe, err := os.Executable()
	if err != nil {
		return "error: " + err.Error()
	}
	out, err := exec.Command(exe, "probe", op, target).Output()
	if err != nil {
		return "error: the grandchild: " + err.Error()
	}
	return string(out)
}

// forkbomb starts grandchildren that block until killed, until one
// cannot be started, then says so on stderr and exits 1.
func forkbomb() {
	exe, err := os.Executable()
	if err != nil {
		exe = "/proc/self/exe"
	}
	for n := 0; ; n++ {
		cmd := exec.Command(exe, "grandchild")
		r, w, perr := os.Pipe()
		if perr == nil {
			cmd.ExtraFiles = []*os.File{w}
		}
		if err := cmd.Start(); err != nil {
			fmt.Fprintf(os.Stderr, "badchild: fork bomb stopped after %d processes: %v\n", n, err)
			os.Exit(1)
		}
		if perr == nil {
			w.Close()
			go func() { io.Copy(io.Discard, r); r.Close() }()
		}
		go cmd.Wait()
	}
}

// spun keeps spin's loop from being optimised away.
var spun atomic.Int64

// hog allocates memory and touches every page of it until it dies.
func hog() {
	var keep [][]byte
	for {
		b := make([]byte, 8<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		keep = append(keep, b)
	}
}

// selfPid is this process's pid as /proc sees it.
func selfPid() int {
	if l, err := os.Readlink("/proc/self"); err == nil {
		if pid, err := strconv.Atoi(l); err == nil {
			return pid
		}
	}
	return os.Getpid()
}

func (s *server) slow(id, progressToken json.RawMessage, ms, steps int, cancelled <-chan struct{}) {
	steps = max(steps, 1)
	for i := 1; i <= steps; i++ {
		t := time.NewTimer(time.Duration(ms) * time.Millisecond / time.Duration(steps))
		select {
		case <-t.C:
		case <-cancelled:
			t.Stop()
			// "Receivers of a cancellation notification SHOULD ... Not send a
			// response for the cancelled request".
			return
		}
		if len(progressToken) > 0 {
			s.writeJSON(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{
				"progressToken": progressToken, "progress": i, "total": steps,
				"message": fmt.Sprintf("step %d of %d", i, steps),
			}})
		}
		s.writeJSON(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{
			"level": "info", "logger": "badchild", "data": fmt.Sprintf("slow step %d", i),
		}})
	}
	s.respond(id, textResult("slow done"), false)
}

// flood writes count progress notifications whose message is bytes 'x',
// one line each, as fast as stdout takes them: a server that streams far
// more than a slow client reads. Without a progressToken it only answers.
func (s *server) flood(id, progressToken json.RawMessage, count, n int) {
	if len(progressToken) > 0 {
		text := bytes.Repeat([]byte("x"), n)
		for i := 1; i <= count; i++ {
			line := fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,"progress":%d,"total":%d,"message":"%s"}}`,
				progressToken, i, count, text)
			s.writeLine(line)
		}
	}
	s.respond(id, textResult("flood done"), false)
}

func (s *server) sample(id json.RawMessage, prompt string) {
	resp, ok := s.request("sampling/createMessage", map[string]any{
		"messages":  []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": prompt}}},
		"maxTokens": 10,
	})
	if !ok {
		s.respondError(id, -32603, "stdin closed while waiting for sampling response")
		return
	}
	if len(resp.Error) > 0 {
		s.respondError(id, -32603, "sampling failed: "+string(resp.Error))
		return
	}
	var r struct {
		Content struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(resp.Result, &r); err != nil {
		s.respondError(id, -32603, "bad sampling result: "+err.Error())
		return
	}
	s.respond(id, textResult(r.Content.Text), false)
}

// ask sends the client a request of method without params and answers
// what came back, result or error, as a successful text: a server that
// carries on whatever the client says (as server-everything does with the
// roots it asks for on its own).
func (s *server) ask(id json.RawMessage, method string) {
	resp, ok := s.request(method, nil)
	if !ok {
		s.respondError(id, -32603, "stdin closed while waiting for the answer to "+method)
		return
	}
	if len(resp.Error) > 0 {
		s.respond(id, textResult("asked "+method+": error "+string(resp.Error)), false)
		return
	}
	s.respond(id, textResult("asked "+method+": result "+string(resp.Result)), false)
}

// askAfter sends the client a request of method, as a server does that
// asks on its own schedule rather than for a request, and reports the
// outcome on stderr.
func (s *server) askAfter(method string) {
	resp, ok := s.request(method, map[string]any{})
	if !ok {
		return
	}
	got := "result " + string(resp.Result)
	if len(resp.Error) > 0 {
		got = "error " + string(resp.Error)
	}
	fmt.Fprintf(os.Stderr, "badchild: %s after the answer got %s\n", method, got)
}

// request sends the client a request and waits for its answer; false if
// stdin ended first.
func (s *server) request(method string, params any) (message, bool) {
	reqID, _ := json.Marshal(fmt.Sprintf("s-%d", s.nextID.Add(1)))
	ch := make(chan message, 1)
	s.stateMu.Lock()
	s.pending[idKey(reqID)] = ch
	s.stateMu.Unlock()
	req := map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(reqID), "method": method}
	if params != nil {
		req["params"] = params
	}
	s.writeJSON(req)
	select {
	case resp := <-ch:
		return resp, true
	case <-s.stdinDone:
		return message{}, false
	}
}

// writeBig streams the text so tens of MiB never sit in memory twice.
func (s *server) writeBig(id json.RawMessage, n int, idFirst bool) {
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out.WriteString(`{"jsonrpc":"2.0",`)
	if idFirst {
		fmt.Fprintf(s.out, `"id":%s,`, id)
	}
	s.out.WriteString(`"result":{"content":[{"type":"text","text":"`)
	for n > 0 {
		k := min(n, len(chunk))
		s.out.Write(chunk[:k])
		n -= k
	}
	s.out.WriteString(`"}]}`)
	if !idFirst {
		fmt.Fprintf(s.out, `,"id":%s`, id)
	}
	s.out.WriteString("}\n")
	if err := s.out.Flush(); err != nil {
		fmt.Fprintf(os.Stderr, "badchild: write stdout: %v\n", err)
	}
}

// respond writes a result with the id bytes exactly as the request had them.
func (s *server) respond(id json.RawMessage, result any, idLast bool) {
	s.writeLine(resultLine(id, result, idLast))
}

// resultLine is a response with the id bytes exactly as the request had
// them, first or last.
func resultLine(id json.RawMessage, result any, idLast bool) []byte {
	res, err := json.Marshal(result)
	if err != nil {
		panic(fmt.Sprintf("marshal result: %v", err)) // results are built here, so this is a bug
	}
	if idLast {
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","result":%s,"id":%s}`, res, id)
	}
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, res)
}

func (s *server) respondError(id json.RawMessage, code int, msg string) {
	e, _ := json.Marshal(map[string]any{"code": code, "message": msg})
	s.writeLine(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":%s}`, id, e))
}

func (s *server) writeJSON(v any) {
	s.writeLine(mustMarshal(v))
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("marshal message: %v", err)) // messages are built here, so this is a bug
	}
	return b
}

// writeLine writes each of lines as a line of its own, all at once: no
// other goroutine's line comes between them.
func (s *server) writeLine(lines ...[]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range lines {
		s.out.Write(b)
		s.out.WriteByte('\n')
	}
	if err := s.out.Flush(); err != nil {
		fmt.Fprintf(os.Stderr, "badchild: write stdout: %v\n", err)
	}
}

func textResult(text string) map[string]any {
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}
}

// idKey makes ids comparable whatever whitespace the peer put inside them.
func idKey(id json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, id); err != nil {
		return string(id)
	}
	return b.String()
}

// recordRun appends an echo call's message to the -runs file: one
// O_APPEND write a line, whole, so that several children may share it.
func (s *server) recordRun(msg string) {
	f, err := os.OpenFile(s.runs, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintf(os.Stderr, "badchild: -runs: %v\n", err)
		return
	}
	defer f.Close()
	_, _ = f.WriteString(strconv.Quote(msg) + "\n")
}

func toolList() []any {
	obj := func(props ...string) map[string]any {
		p := map[string]any{}
		for i := 0; i+1 < len(props); i += 2 {
			p[props[i]] = map[string]any{"type": props[i+1]}
		}
		return map[string]any{"type": "object", "properties": p}
	}
	tools := []struct {
		name, desc  string
		schema      map[string]any
		annotations map[string]any
	}{
		{"echo", "Echoes message; the response has its id last.", obj("message", "string"), nil},
		{"echo_count", "Answers how many echo calls it has answered.", obj(), map[string]any{"readOnlyHint": true, "destructiveHint": false}},
		{"big", "Answers a text of the given number of bytes.", obj("bytes", "integer", "id_first", "boolean"), nil},
		{"garbage", "Writes non-JSON lines to stdout before answering.", obj("lines", "integer"), nil},
		{"stderr_flood", "Writes numbered lines to stderr before answering.", obj("lines", "integer"), nil},
		{"stderr", "Writes a line to stderr, then answers ok.", obj("stderr", "string"), nil},
		{"crash", "Writes to stderr and exits without answering.", obj("code", "integer", "stderr", "string"), nil},
		{"fork", "Starts a grandchild (or a daemon); answers its pid.", obj("setsid", "boolean", "ignore_term", "boolean", "daemon", "boolean"), nil},
		{"slow", "Sends progress and log notifications over ms milliseconds.", obj("ms", "integer", "steps", "integer"), nil},
		{"sample", "Asks the client for sampling/createMessage; answers its text.", obj("prompt", "string"), nil},
		{"ask", "Sends the client a request of the given method; answers what came back, even an error.", obj("method", "string"), nil},
		{"asked_when_idle", "Answers what came back for the -ask-when-idle request (\"\" while nothing has), then sends it the first time.", obj(), nil},
		{"notify", "Sends the given notification, then answers ok.", obj("method", "string", "params", "object"), nil},
		{"flood", "Sends count progress notifications of the given size as fast as it can.", obj("count", "integer", "bytes", "integer"), nil},
		{"env", "Answers the child's environment.", obj(), nil},
		{"pid", "Answers the child's pid.", obj(), nil},
		{"cancels", "Answers the requestIds seen in notifications/cancelled.", obj(), nil},
		{"strays", "Answers the ids of responses to requests it never sent.", obj(), nil},
		{"state_calls", "Answers the logging/setLevel and resources/(un)subscribe requests received, in order.", obj(), nil},
		{"lifecycle", "Answers the initialize requests and initialized notifications received, in order.", obj(), nil},
		{"hang", "Never answers; waits until cancelled.", obj(), nil},
		{"close_stdout", "Closes stdout and keeps running without answering.", obj(), nil},
		{"ask_after", "Answers ok, then asks the client method; writes what came back to stderr.", obj("method", "string"), nil},
		{"progress_after", "Answers ok, then sends progress for the request.", obj(), nil},
		{"stop_reading", "Answers ok, then never reads stdin again (and keeps running).", obj(), nil},
		{"probe", "Tries one thing a sandbox may refuse (read, list, write, exec, tcp, udp, unix, listen) on target; answers ok or the error.", obj("op", "string", "target", "string", "in_grandchild", "boolean", "exit_on_error", "boolean"), nil},
		{"forkbomb", "Starts processes until the system refuses one, then exits 1.", obj(), nil},
		{"hog", "Allocates memory until it dies.", obj(), nil},
		{"spin", "Keeps a CPU busy until it dies.", obj(), nil},
	}
	out := make([]any, 0, len(tools))
	for _, t := range tools {
		tool := map[string]any{"name": t.name, "description": t.desc, "inputSchema": t.schema}
		if t.annotations != nil {
			tool["annotations"] = t.annotations
		}
		out = append(out, tool)
	}
	return out
}
