package stdio_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
	"github.com/mcp-bridge/mcp-bridge/stdio"
)

// text is the text of the tool result in a response, or its error's
// message.
func text(t *testing.T, resp []byte) string {
	t.Helper()
	var r struct {
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(resp, &r); err != nil {
		t.Fatalf("response %s: %v", resp, err)
	}
	if r.Error != nil {
		return "rpc error: " + r.Error.Message
	}
	if len(r.Result.Content) == 0 {
		t.Fatalf("response without content: %s", resp)
	}
	return r.Result.Content[0].Text
}

// probe has the child (or its grandchild) try op on target and returns
// what it says: "ok" or "error: ...".
func (p *peer) probe(ctx context.Context, id int, op, target string, grandchild bool) string {
	p.t.Helper()
	p.call(id, "probe", map[string]any{"op": op, "target": target, "in_grandchild": grandchild})
	return text(p.t, p.next(ctx))
}

// sandboxWorld is what the sandbox tests reach for: files inside and
// outside the paths they give, and servers on 127.0.0.1 to connect to.
type sandboxWorld struct {
	readDir, writeDir, outside string
	allowed, other             string // TCP listeners: the port the profile allows, and another
	udp                        string // a UDP listener
	sock                       string // a unix socket, outside every path given
	abstract                   string // an abstract unix socket
}

func newSandboxWorld(t *testing.T) *sandboxWorld {
	dir := t.TempDir()
	w := &sandboxWorld{readDir: filepath.Join(dir, "read"), writeDir: filepath.Join(dir, "write"), outside: filepath.Join(dir, "outside")}
	for _, d := range []string{w.readDir, w.writeDir, w.outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "file"), []byte("content\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	listen := func(network, addr string) string {
		l, err := net.Listen(network, addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		return l.Addr().String()
	}
	w.allowed, w.other = listen("tcp", "127.0.0.1:0"), listen("tcp", "127.0.0.1:0")
	w.sock = listen("unix", filepath.Join(w.outside, "sock"))
	w.abstract = listen("unix", "@mcp-bridge-test-"+strconv.Itoa(os.Getpid())+"-"+filepath.Base(dir))
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	w.udp = pc.LocalAddr().String()
	return w
}

func port(t *testing.T, addr string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSandbox: a sandboxed server, and a grandchild it starts, can do
// what its profile gives and nothing else: read inside its read paths
// and not outside them (EACCES), write inside its write paths only; never
// signal a process outside the sandbox or read its /proc entry, make a
// user namespace or mount anything, and they hold no capability; with
// the network none, no TCP connection, no UDP datagram, no unix socket
// and no listening socket; with one port allowed, a connection to that
// port on 127.0.0.1 and to no other. Under each containment, since the
// sandbox's namespaces are made with the containment's own.
func TestSandbox(t *testing.T) {
	if _, err := (&stdio.Sandbox{Preset: stdio.PresetNone}).Check([]string{"/bin/sh"}, "", nil); err != nil {
		t.Skipf("this system cannot enforce a sandbox: %v", err)
	}
	w := newSandboxWorld(t)
	type probe struct {
		op, target string
		ok         bool
		why        string // what the error must say
		// pidns: only with a PID namespace of the sandbox's own does a
		// grandchild get its own /proc/self (the launcher mounts a /proc
		// of the namespace); without one the server's alone is granted.
		pidns bool
	}
	denied := "permission denied"
	profiles := []struct {
		name    string
		sandbox *stdio.Sandbox
		probes  []probe
	}{
		{"files", &stdio.Sandbox{Read: []string{w.readDir}, Write: []string{w.writeDir}}, []probe{
			{"read", filepath.Join(w.readDir, "file"), true, "", false},
			{"list", w.readDir, true, "", false},
			{"read", filepath.Join(w.writeDir, "file"), true, "", false},
			{"write", filepath.Join(w.writeDir, "new"), true, "", false},
			{"read", filepath.Join(w.outside, "file"), false, denied, false},
			{"list", w.outside, false, denied, false},
			{"read", "/etc/hostname", false, denied, false},
			{"write", filepath.Join(w.readDir, "new"), false, denied, false},
			{"write", filepath.Join(w.readDir, "file"), false, denied, false},
			{"write", filepath.Join(w.outside, "new"), false, denied, false},
			{"exec", "/bin/true", false, denied, false},
			{"read", "/dev/null", true, "", false},
			{"write", "/dev/null", true, "", false},
			{"read", "/proc/self/status", true, "", true},
		}},
		{"nothing else", &stdio.Sandbox{Preset: stdio.PresetNone}, []probe{
			{"signal", strconv.Itoa(os.Getpid()), false, "", false},
			{"read", "/proc/" + strconv.Itoa(os.Getpid()) + "/status", false, "", false},
			{"userns", "", false, "operation not permitted", false},
			{"mount", w.writeDir, false, "operation not permitted", false},
			{"nocaps", "", true, "", true},
		}},
		{"network none", &stdio.Sandbox{Preset: stdio.PresetNone}, []probe{
			{"tcp", w.allowed, false, "", false},
			{"udp", w.udp, false, "", false},
			{"unix", w.sock, false, "", false},
			{"listen", "127.0.0.1:0", false, "", false},
		}},
		{"unix sockets allowed", &stdio.Sandbox{Net: []string{stdio.NetUnix}}, []probe{
			{"unix", w.sock, true, "", false},
			// Landlock's scope (ABI 6), and a network namespace of its
			// own, which has abstract sockets of its own.
			{"unix", w.abstract, false, "", false},
			{"tcp", w.allowed, false, "", false},
		}},
		{"one port", &stdio.Sandbox{Net: []string{port(t, w.allowed)}}, []probe{
			{"tcp", w.allowed, true, "", false},
			{"tcp", w.other, false, denied, false},
			{"unix", w.sock, false, "", false},
			{"listen", "127.0.0.1:0", false, denied, false},
		}},
	}
	forEachContainment(t, func(t *testing.T, c stdio.Containment) {
		for _, pr := range profiles {
			t.Run(pr.name, func(t *testing.T) {
				p := startChild(t, stdio.Options{Sandbox: pr.sandbox, Containment: c})
				ctx := testContext(t)
				id := 0
				for _, x := range pr.probes {
					for _, grandchild := range []bool{false, true} {
						if grandchild && x.pidns && c != stdio.ContainPIDNamespace && c != stdio.ContainAuto {
							continue
						}
						id++
						got := p.probe(ctx, id, x.op, x.target, grandchild)
						where := "the server"
						if grandchild {
							where = "its grandchild"
						}
						switch {
						case x.ok && got != "ok":
							t.Errorf("%s: %s %s: %s, want ok", where, x.op, x.target, got)
						case !x.ok && !strings.HasPrefix(got, "error: "):
							t.Errorf("%s: %s %s: %s, want it refused", where, x.op, x.target, got)
						case !x.ok && !strings.Contains(got, x.why):
							t.Errorf("%s: %s %s: %s, want %q", where, x.op, x.target, got, x.why)
						}
					}
				}
			})
		}
	})
	// Nothing was written where the sandbox refused it.
	for _, f := range []string{filepath.Join(w.readDir, "new"), filepath.Join(w.outside, "new")} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s was written", f)
		}
	}
}

// TestSandboxRequired: under required enforcement (the default) a
// sandbox asking for a right the kernel cannot enforce refuses to start
// the child, saying which right; best-effort starts it. The missing right
// is a Landlock ABI above the kernel's.
func TestSandboxRequired(t *testing.T) {
	var refused []*stdio.StartError
	sb := &stdio.Sandbox{Preset: stdio.PresetNone, LandlockABI: 99, OnRefuse: func(e *stdio.StartError) { refused = append(refused, e) }}
	bin := badchildBin(t)
	_, err := stdio.Start(stdio.Options{Argv: []string{bin}, Sandbox: sb})
	var se *stdio.StartError
	if !errors.As(err, &se) || se.Kind != stdio.StartSandbox {
		t.Fatalf("start: %v, want a sandbox StartError", err)
	}
	if !strings.Contains(err.Error(), "Landlock ABI 99") || !strings.Contains(err.Error(), stdio.ErrNotEnforced.Error()) {
		t.Errorf("error %q does not name the right not enforced", err)
	}
	if len(refused) != 1 {
		t.Errorf("OnRefuse called %d times, want once", len(refused))
	}
	rep, err := sb.Check([]string{bin}, "", nil)
	if err == nil || rep == nil || len(rep.NotEnforced()) != 1 {
		t.Errorf("Check: %v, %+v; want the one right not enforced", err, rep)
	}

	best := &stdio.Sandbox{Preset: stdio.PresetNone, LandlockABI: 99, Enforce: stdio.EnforceBestEffort}
	p := startChild(t, stdio.Options{Argv: []string{bin}, Sandbox: best})
	p.call(1, "echo", map[string]any{"message": "best effort"})
	if got := text(t, p.next(testContext(t))); got != "best effort" {
		t.Errorf("echo: %q", got)
	}
}

// badchildBin is the badchild to run: the unprivileged run's, or a build.
func badchildBin(t *testing.T) string {
	if bin := os.Getenv(badchildEnv); bin != "" {
		return bin
	}
	return testpeers.BuildGo(t, "./testdata/badchild")
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestSandboxPin: a program that matches its pin runs; one that does not
// is refused with a StartError whose log text has both hashes and whose
// client message has neither, and OnRefuse hears of it. A pin alone,
// without a profile, confines nothing.
func TestSandboxPin(t *testing.T) {
	bin := badchildBin(t)
	sum := fileSHA256(t, bin)
	wrong := strings.Repeat("ab", 32)

	p := startChild(t, stdio.Options{Argv: []string{bin}, Sandbox: &stdio.Sandbox{PinSHA256: sum}})
	ctx := testContext(t)
	if got := p.probe(ctx, 1, "read", "/etc/hostname", false); got != "ok" {
		t.Errorf("a pinned program without a profile cannot read: %s", got)
	}

	var refused []*stdio.StartError
	_, err := stdio.Start(stdio.Options{Argv: []string{bin}, Sandbox: &stdio.Sandbox{PinSHA256: wrong,
		OnRefuse: func(e *stdio.StartError) { refused = append(refused, e) }}})
	var se *stdio.StartError
	if !errors.As(err, &se) || se.Kind != stdio.StartPin {
		t.Fatalf("start with a wrong pin: %v, want a pin StartError", err)
	}
	if !strings.Contains(se.Error(), sum) || !strings.Contains(se.Error(), wrong) {
		t.Errorf("the log's error %q lacks a hash", se.Error())
	}
	if msg := se.ClientMessage(); strings.Contains(msg, sum) || strings.Contains(msg, wrong) || msg != "server refused to start: binary does not match its pin" {
		t.Errorf("client message %q", msg)
	}
	if len(refused) != 1 || refused[0] != se {
		t.Errorf("OnRefuse got %v", refused)
	}
}

// TestSandboxPinSwap: while the pinned program's file is swapped, over
// and over, for another program (a script that would answer IMPOSTOR),
// children keep being started from it: each one either runs the pinned
// program or is refused for its pin; the other never runs. A check of
// the file followed by an exec of the file by path would let the swap
// win between the two.
func TestSandboxPinSwap(t *testing.T) {
	dir := t.TempDir()
	good, bad, target := filepath.Join(dir, "good"), filepath.Join(dir, "bad"), filepath.Join(dir, "server")
	testpeers.CopyExecutable(t, badchildBin(t), good)
	impostor := "#!/bin/sh\nwhile read line; do echo '{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"IMPOSTOR\"}]}}'; done\n"
	if err := os.WriteFile(bad, []byte(impostor), 0o755); err != nil {
		t.Fatal(err)
	}
	sum := fileSHA256(t, good)
	place := func(from string) {
		tmp := target + ".tmp"
		_ = os.Remove(tmp)
		if err := os.Link(from, tmp); err != nil {
			t.Error(err)
			return
		}
		if err := os.Rename(tmp, target); err != nil {
			t.Error(err)
		}
	}
	place(good)

	stop := make(chan struct{})
	var swaps atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			place(bad)
			place(good)
			swaps.Add(2)
		}
	})
	defer func() { close(stop); wg.Wait() }()

	sb := &stdio.Sandbox{PinSHA256: sum}
	ran, refusedN := 0, 0
	for i := 0; i < 60; i++ {
		msgs := make(chan []byte, 8)
		c, err := stdio.Start(stdio.Options{Argv: []string{target}, Sandbox: sb, Logger: slog.New(slog.DiscardHandler),
			OnMessage: func(m []byte, _ bool) {
				select {
				case msgs <- bytes.Clone(m):
				default:
				}
			}})
		var se *stdio.StartError
		switch {
		case errors.As(err, &se) && se.Kind == stdio.StartPin:
			refusedN++
			continue
		case err != nil:
			t.Fatalf("start %d: %v", i, err)
		}
		got := "(it exited without answering)"
		if err := c.Write(request(7, "echo", map[string]any{"message": "genuine"})); err == nil {
			select {
			case m := <-msgs:
				got = text(t, m)
			case <-c.Done():
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		_ = c.Stop(ctx)
		cancel()
		if got != "genuine" {
			t.Fatalf("start %d ran something other than the pinned program: it answered %q (%v, stderr %q)", i, got, c.Err(), c.StderrTail())
		}
		ran++
	}
	t.Logf("%d starts ran the pinned program, %d were refused, over %d swaps", ran, refusedN, swaps.Load())
	if ran == 0 || refusedN == 0 {
		t.Errorf("the race was not exercised: %d ran, %d refused", ran, refusedN)
	}
}

// TestSandboxLimits: a fork bomb stops at the process limit and a memory
// hog dies at its memory limit; either way the child's end says which
// limit it reached (SandboxExit), from what it wrote to stderr.
func TestSandboxLimits(t *testing.T) {
	cases := []struct {
		name   string
		tool   string
		limits stdio.Limits
		hint   string
	}{
		{"fork bomb", "forkbomb", stdio.Limits{Procs: 40}, "process limit (procs=40"},
		{"memory hog", "hog", stdio.Limits{Memory: 256 << 20}, "memory limit (mem=256M"},
		// Go ignores SIGXCPU: the hard limit's SIGKILL, a second later.
		{"CPU hog", "spin", stdio.Limits{CPU: time.Second}, "its CPU time (cpu=1s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sb := &stdio.Sandbox{Preset: stdio.PresetNone, Limits: tc.limits}
			if tc.limits.Procs > 0 && os.Geteuid() == 0 {
				// RLIMIT_NPROC never binds uid 0: required refuses, and
				// TestSandboxUnprivileged runs the bomb as nobody.
				_, err := stdio.Start(stdio.Options{Argv: []string{badchildBin(t)}, Sandbox: sb})
				if err == nil || !strings.Contains(err.Error(), "RLIMIT_NPROC never binds a process of uid 0") {
					t.Fatalf("start as root with a process limit: %v, want it refused", err)
				}
				return
			}
			p := startChild(t, stdio.Options{Sandbox: sb})
			if err := p.c.Write(request(1, tc.tool, nil)); err != nil {
				<-p.c.Done()
				t.Fatalf("write %s request: %v (the child ended: %v, stderr %q)", tc.tool, err, p.c.Err(), p.c.StderrTail())
			}
			<-p.c.Done()
			err := p.c.Err()
			var sx *stdio.SandboxExit
			if !errors.As(err, &sx) || !strings.Contains(sx.Hint, tc.hint) {
				t.Fatalf("the child ended with %v (stderr %q), want a hint with %q", err, p.c.StderrTail()[:min(8, len(p.c.StderrTail()))], tc.hint)
			}
			var ee *stdio.ExitError
			if !errors.As(err, &ee) {
				t.Errorf("the exit status is lost: %v", err)
			}
			for _, line := range p.c.StderrTail() {
				if n, ok := strings.CutPrefix(line, "badchild: fork bomb stopped after "); ok {
					started, _ := strconv.Atoi(strings.Fields(n)[0])
					if started >= tc.limits.Procs {
						t.Errorf("the bomb started %d processes past a limit of %d", started, tc.limits.Procs)
					}
				}
			}
		})
	}
}

// TestSandboxUnprivileged runs the sandbox tests as nobody, whose
// sandbox is a user namespace mapping only its own ids, and whose process
// limit binds (root's does not): the fork bomb stops there.
func TestSandboxUnprivileged(t *testing.T) {
	if os.Getenv(unprivEnv) != "" {
		t.Skip("this is the unprivileged run")
	}
	if os.Geteuid() != 0 {
		t.Skip("not root: the other tests ran unprivileged")
	}
	badchild := testpeers.BuildGo(t, "./testdata/badchild") // in a directory anyone can read
	dir, err := os.MkdirTemp("", "stdio-unprivileged-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "stdio.test")
	testpeers.CopyExecutable(t, os.Args[0], bin)
	cmd := exec.CommandContext(testContext(t), bin, "-test.count=1", "-test.v", "-test.run", "^(TestSandbox|TestSandboxLimits|TestSandboxPin)$")
	cmd.Env = append(os.Environ(), unprivEnv+"=1", badchildEnv+"="+badchild)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the tests as nobody: %v\n%s", err, out)
	}
	for _, want := range []string{"--- PASS: TestSandbox/pid-namespace/files", "--- PASS: TestSandboxLimits/fork_bomb", "--- PASS: TestSandboxLimits/memory_hog", "--- PASS: TestSandboxPin"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the tests as nobody did not pass %q:\n%s", want, out)
		}
	}
}

// TestSandboxStartErrors: a child that does not start says why with a
// StartError of its own kind, and a client message of its own: its pin
// (TestSandboxPin), its sandbox (TestSandboxRequired), or its program,
// which the launcher could not execute once the sandbox was in place.
func TestSandboxStartErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "not-a-program")
	if err := os.WriteFile(garbage, []byte("\x00\x01 neither ELF nor a script\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := stdio.Start(stdio.Options{Argv: []string{garbage}, Sandbox: &stdio.Sandbox{Preset: stdio.PresetNone}, Logger: slog.New(slog.DiscardHandler)})
	var se *stdio.StartError
	if !errors.As(err, &se) || se.Kind != stdio.StartExec || !strings.Contains(se.Error(), "exec format error") {
		t.Fatalf("start: %v, want an exec StartError", err)
	}
	messages := map[string]bool{}
	for _, kind := range []string{stdio.StartPin, stdio.StartSandbox, stdio.StartExec} {
		messages[(&stdio.StartError{Kind: kind}).ClientMessage()] = true
	}
	if len(messages) != 3 {
		t.Errorf("the three kinds share a client message: %v", messages)
	}
}
