//go:build unix

package testpeers

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// recvTimeout only stops a broken child from hanging the test; nothing
// waits for it to pass.
const recvTimeout = 10 * time.Second

// child is a running badchild driven over its stdio pipes.
type child struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte  // stdout lines without "\n"; closed at EOF
	stderr bytes.Buffer // read only after wait

	waitOnce sync.Once
	waitErr  error
}

// startBadchild runs badchild in its own process group, so that cleanup can
// kill whatever it forked along with it.
func startBadchild(t *testing.T, args ...string) *child {
	t.Helper()
	c := &child{t: t, lines: make(chan []byte)}
	c.cmd = exec.Command(BuildGo(t, "./testdata/badchild"), args...)
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.cmd.Stderr = &c.stderr
	c.cmd.WaitDelay = 5 * time.Second
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	// An os.Pipe we own, rather than StdoutPipe, so reading to EOF does not
	// race with Wait closing the pipe.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c.cmd.Stdout = pw
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start badchild: %v", err)
	}
	pw.Close() // the child has its copy; ours would keep EOF from ever coming
	go func() {
		defer close(c.lines)
		defer pr.Close()
		r := bufio.NewReader(pr)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				c.lines <- bytes.TrimSuffix(line, []byte("\n"))
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL) // may already be gone
		for range c.lines {
		}
		_ = c.wait()
	})
	return c
}

func (c *child) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.stdin, line+"\n"); err != nil {
		c.t.Fatalf("write to badchild: %v", err)
	}
}

func (c *child) call(id, tool, args string) {
	c.t.Helper()
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args))
}

func (c *child) recv() []byte {
	c.t.Helper()
	select {
	case line, ok := <-c.lines:
		if !ok {
			err := c.wait() // bounded by WaitDelay
			c.t.Fatalf("badchild closed stdout (%v); stderr:\n%s", err, c.stderr.String())
		}
		return line
	case <-time.After(recvTimeout):
		c.t.Fatalf("no line from badchild within %v", recvTimeout)
		return nil
	}
}

// rest reads stdout to EOF, which comes only once every process holding it
// (badchild and anything it forked) has gone.
func (c *child) rest() [][]byte {
	c.t.Helper()
	var out [][]byte
	timeout := time.After(recvTimeout)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				return out
			}
			out = append(out, line)
		case <-timeout:
			c.t.Fatalf("badchild stdout still open after %v", recvTimeout)
		}
	}
}

func (c *child) wait() error {
	c.waitOnce.Do(func() { c.waitErr = c.cmd.Wait() })
	return c.waitErr
}

type reply struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result struct {
		Content []struct{ Text string } `json:"content"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func decode(t *testing.T, line []byte) reply {
	t.Helper()
	var r reply
	if err := json.Unmarshal(line, &r); err != nil {
		t.Fatalf("badchild wrote %q: %v", line, err)
	}
	return r
}

func text(t *testing.T, line []byte) string {
	t.Helper()
	r := decode(t, line)
	if r.Error != nil || len(r.Result.Content) != 1 {
		t.Fatalf("want one text block, got %s", line)
	}
	return r.Result.Content[0].Text
}

func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("want an exit error, got %v", err)
	}
	return ee.ExitCode()
}

func TestBadchildInitialize(t *testing.T) {
	c := startBadchild(t)
	for _, tc := range []struct{ asked, want string }{
		{"2025-03-26", "2025-03-26"},
		{"2025-06-18", "2025-06-18"},
		{"2025-11-25", "2025-11-25"},
		{"2024-11-05", "2025-11-25"},
		{"", "2025-11-25"},
	} {
		t.Run(tc.asked, func(t *testing.T) {
			c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{}}}`, tc.asked))
			var r struct {
				Result struct {
					ProtocolVersion string `json:"protocolVersion"`
					ServerInfo      struct{ Name string }
				}
			}
			if err := json.Unmarshal(c.recv(), &r); err != nil {
				t.Fatal(err)
			}
			if r.Result.ProtocolVersion != tc.want || r.Result.ServerInfo.Name != "badchild" {
				t.Errorf("got version %q server %q, want %q badchild", r.Result.ProtocolVersion, r.Result.ServerInfo.Name, tc.want)
			}
		})
	}
}

// The TypeScript SDK writes "id" last; a bridge that finds ids by position
// or re-spells them would break on these.
func TestBadchildEchoIDLast(t *testing.T) {
	c := startBadchild(t)
	for _, id := range []string{`"7"`, `7`, `"a \"quoted\" id"`, `-1.5e3`} {
		t.Run(id, func(t *testing.T) {
			c.call(id, "echo", `{"message":"hi"}`)
			line := c.recv()
			if !bytes.HasPrefix(line, []byte(`{"jsonrpc":"2.0","result":`)) || !bytes.HasSuffix(line, []byte(`,"id":`+id+`}`)) {
				t.Errorf("got %s, want the result first and id %s last, byte for byte", line, id)
			}
			if got := text(t, line); got != "hi" {
				t.Errorf("text %q, want hi", got)
			}
		})
	}
}

func TestBadchildBig(t *testing.T) {
	c := startBadchild(t)
	const n = 3<<20 + 7 // more than one 64 KiB write, not a multiple of it
	for _, idFirst := range []bool{true, false} {
		t.Run(fmt.Sprint("id_first=", idFirst), func(t *testing.T) {
			c.call("9", "big", fmt.Sprintf(`{"bytes":%d,"id_first":%t}`, n, idFirst))
			line := c.recv()
			if got := bytes.HasPrefix(line, []byte(`{"jsonrpc":"2.0","id":9,`)); got != idFirst {
				t.Errorf("id first = %v, want %v", got, idFirst)
			}
			if got := text(t, line); len(got) != n || strings.Trim(got, "x") != "" {
				t.Errorf("text of %d bytes, want %d x's", len(got), n)
			}
		})
	}
}

func TestBadchildGarbage(t *testing.T) {
	c := startBadchild(t)
	c.call("1", "garbage", `{"lines":3}`)
	for i := 1; i <= 3; i++ {
		if got, want := string(c.recv()), fmt.Sprintf("this is not json %d", i); got != want {
			t.Errorf("line %d: %q, want %q", i, got, want)
		}
	}
	if got := c.recv(); len(got) != 0 {
		t.Errorf("want a blank line, got %q", got)
	}
	if r := decode(t, c.recv()); string(r.ID) != "1" || r.Error != nil {
		t.Errorf("want the answer to id 1 after the garbage, got %+v", r)
	}
}

// Sampling needs badchild to keep reading stdin while a tools/call waits
// for the client's answer.
func TestBadchildSampleRoundTrip(t *testing.T) {
	c := startBadchild(t)
	c.call("1", "sample", `{"prompt":"tell me"}`)
	req := decode(t, c.recv())
	var p struct {
		Messages []struct {
			Role    string
			Content struct{ Type, Text string }
		}
		MaxTokens int
	}
	if err := json.Unmarshal(req.Params, &p); err != nil {
		t.Fatal(err)
	}
	if req.Method != "sampling/createMessage" || string(req.ID) != `"s-1"` || len(p.Messages) != 1 || p.Messages[0].Content.Text != "tell me" {
		t.Fatalf("got request %s %s %+v", req.Method, req.ID, p)
	}

	c.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if r := decode(t, c.recv()); string(r.ID) != "2" {
		t.Fatalf("want the ping answered while sampling waits, got id %s", r.ID)
	}

	c.send(`{"jsonrpc":"2.0","id":"s-1","result":{"role":"assistant","content":{"type":"text","text":"sampled!"},"model":"m"}}`)
	line := c.recv()
	if r := decode(t, line); string(r.ID) != "1" || text(t, line) != "sampled!" {
		t.Errorf("got %s, want id 1 answered with the sampled text", line)
	}
}

func TestBadchildSlowProgressAndCancel(t *testing.T) {
	c := startBadchild(t)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"ms":30,"steps":3},"_meta":{"progressToken":"tok-1"}}}`)
	var progress []string
	for {
		line := c.recv()
		r := decode(t, line)
		if r.Method == "notifications/progress" {
			var p struct {
				ProgressToken json.RawMessage
				Progress      int
			}
			if err := json.Unmarshal(r.Params, &p); err != nil {
				t.Fatal(err)
			}
			progress = append(progress, fmt.Sprintf("%s:%d", p.ProgressToken, p.Progress))
			continue
		}
		if r.Method == "" {
			if got := text(t, line); got != "slow done" {
				t.Errorf("text %q, want slow done", got)
			}
			break
		}
	}
	if got, want := strings.Join(progress, " "), `"tok-1":1 "tok-1":2 "tok-1":3`; got != want {
		t.Errorf("progress %s, want %s", got, want)
	}

	// A cancelled call is never answered: "Receivers of a cancellation
	// notification SHOULD ... Not send a response for the cancelled request".
	c.call("5", "slow", `{"ms":600000,"steps":1}`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"test"}}`)
	c.call("6", "cancels", `{}`)
	if got := text(t, c.recv()); got != "[5]" {
		t.Errorf("cancels %s, want [5]", got)
	}
	c.stdin.Close()
	for _, line := range c.rest() {
		if r := decode(t, line); string(r.ID) == "5" {
			t.Errorf("cancelled call was answered: %s", line)
		}
	}
	if err := c.wait(); err != nil {
		t.Errorf("exit after stdin EOF: %v, want success", err)
	}
}

// fork's grandchild shares badchild's process group and stdout, so stdout
// reaches EOF only when the whole group is killed.
func TestBadchildForkKillGroup(t *testing.T) {
	c := startBadchild(t)
	c.call("1", "fork", `{}`)
	gpid, err := strconv.Atoi(text(t, c.recv()))
	if err != nil {
		t.Fatal(err)
	}
	pgid, err := syscall.Getpgid(gpid)
	if err != nil {
		t.Fatalf("grandchild %d not running: %v", gpid, err)
	}
	if pgid != c.cmd.Process.Pid {
		t.Errorf("grandchild in group %d, want badchild's %d", pgid, c.cmd.Process.Pid)
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.rest()
	if err := c.wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("wait: %v, want killed", err)
	}
}

func TestBadchildCrash(t *testing.T) {
	c := startBadchild(t)
	c.call("1", "crash", `{"code":42,"stderr":"boom: out of luck\n"}`)
	if lines := c.rest(); len(lines) != 0 {
		t.Errorf("crash answered: %q", lines)
	}
	if code := exitCode(t, c.wait()); code != 42 {
		t.Errorf("exit code %d, want 42", code)
	}
	if !strings.Contains(c.stderr.String(), "boom: out of luck") {
		t.Errorf("stderr %q lacks the crash message", c.stderr.String())
	}
}

func TestBadchildStderrFlood(t *testing.T) {
	c := startBadchild(t, "-stderr-at-start", "2")
	c.call("1", "stderr_flood", `{"lines":1000}`)
	if got := text(t, c.recv()); got != "done" {
		t.Errorf("text %q, want done", got)
	}
	c.stdin.Close()
	c.rest()
	if err := c.wait(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"stderr at start line 2\n", "stderr line 1\n", "stderr line 1000\n"} {
		if !strings.Contains(c.stderr.String(), want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
}

func TestBadchildFlags(t *testing.T) {
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`

	t.Run("banner and exit-after-init", func(t *testing.T) {
		c := startBadchild(t, "-banner", "-exit-after-init")
		if line := c.recv(); json.Valid(line) {
			t.Errorf("banner %q is JSON", line)
		}
		c.send(initialize)
		if r := decode(t, c.recv()); string(r.ID) != "1" {
			t.Errorf("want the initialize answer, got %+v", r)
		}
		c.rest()
		if code := exitCode(t, c.wait()); code != 3 {
			t.Errorf("exit code %d, want 3", code)
		}
	})

	t.Run("ignore-eof", func(t *testing.T) {
		// Since badchild never exits by itself here, SIGTERM is always what ends it.
		c := startBadchild(t, "-ignore-eof")
		c.send(initialize)
		c.recv()
		c.stdin.Close()
		if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		c.rest()
		if err := c.wait(); err == nil || !strings.Contains(err.Error(), "terminated") {
			t.Errorf("wait: %v, want terminated", err)
		}
	})

	t.Run("ignore-term", func(t *testing.T) {
		c := startBadchild(t, "-ignore-term")
		// Answering a ping shows badchild is past its flag handling, so
		// SIGTERM cannot arrive before it is ignored.
		c.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		c.recv()
		if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		c.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
		c.recv()
		c.stdin.Close()
		c.rest()
		if err := c.wait(); err != nil {
			t.Errorf("wait: %v, want a clean exit on EOF despite SIGTERM", err)
		}
	})
}

func TestBadchildNotifyEnvPid(t *testing.T) {
	c := startBadchild(t)
	c.call("1", "notify", `{"method":"notifications/tools/list_changed"}`)
	if got, want := string(c.recv()), `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`; got != want {
		t.Errorf("notification %s, want %s", got, want)
	}
	if got := text(t, c.recv()); got != "ok" {
		t.Errorf("text %q, want ok", got)
	}
	c.call("2", "pid", `{}`)
	if got := text(t, c.recv()); got != strconv.Itoa(c.cmd.Process.Pid) {
		t.Errorf("pid %s, want %d", got, c.cmd.Process.Pid)
	}
	c.call("3", "env", `{}`)
	if got := text(t, c.recv()); !strings.Contains(got, "PATH=") {
		t.Errorf("env lacks PATH: %q", got)
	}
}

// TestTSClientAgainstEverything checks tsclient.mjs and RunTSClient against
// the reference server, so a failure in the bridge's tests is the bridge's.
func TestTSClientAgainstEverything(t *testing.T) {
	entry := filepath.Join(NodeModules(t), "@modelcontextprotocol", "server-everything", "dist", "index.js")
	for _, tc := range []struct{ mode, transport, path, ready string }{
		{"streamable", "streamableHttp", "/mcp", "listening on port"},
		{"sse", "sse", "/sse", "running on port"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			url := startEverything(t, entry, tc.transport, tc.ready) + tc.path
			res := RunTSClient(t, tc.mode, url)
			if res.ServerName != "mcp-servers/everything" || res.SessionID == "" || res.ProtocolVersion == "" {
				t.Errorf("server %q session %q version %q", res.ServerName, res.SessionID, res.ProtocolVersion)
			}
			if res.Echo != "Echo: hello from ts" {
				t.Errorf("echo %q", res.Echo)
			}
			if len(res.Progress) == 0 {
				t.Errorf("no progress seen")
			}
			if !strings.Contains(res.Sample, "sampled:") {
				t.Errorf("sample %q lacks the client's sampled text", res.Sample)
			}
		})
	}
}

// startEverything runs server-everything's HTTP mode and returns its base
// URL once it says it is listening.
func startEverything(t *testing.T, entry, transport, ready string) string {
	t.Helper()
	// server-everything takes only a PORT, so find a free one; the moment
	// between closing it and node binding it is the only race here.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()

	cmd := exec.Command(Node(t), entry, transport)
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start server-everything: %v", err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	up := make(chan struct{})
	go func() {
		// Keep reading after the ready line, so node never blocks on a full pipe.
		s := bufio.NewScanner(stderr)
		seen := false
		for s.Scan() {
			if !seen && strings.Contains(s.Text(), ready) {
				seen = true
				close(up)
			}
		}
	}()
	select {
	case <-up:
	case <-time.After(recvTimeout):
		t.Fatalf("server-everything %s did not report %q", transport, ready)
	}
	return fmt.Sprintf("http://127.0.0.1:%d", port)
}
