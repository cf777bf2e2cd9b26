package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// withFixtures is args, then the command of the demo's conformance
// server (mcp-bridge conformance-server): the demo's tools and every
// fixture of the conformance suite, for the tests that use them. Without
// a command the bridge serves the demo, a handful of tools.
func withFixtures(t testing.TB, args ...string) []string {
	return append(args, "--", testpeers.BuildGo(t, "./cmd/mcp-bridge"), "conformance-server")
}

// bridgeProc is a real mcp-bridge process started by a test.
type bridgeProc struct {
	t    testing.TB
	cmd  *exec.Cmd
	URL  string // the MCP endpoint, e.g. http://127.0.0.1:41234/mcp
	Base string // scheme://host:port

	mu     sync.Mutex
	stderr bytes.Buffer // everything the bridge logged
	done   chan struct{}
	err    error
	line   chan struct{} // capacity 1: a line was logged (waitLog)
}

var listening = regexp.MustCompile(`url=(http://[^\s]+?)(/[^\s]*)`)

// startBridge builds (once) and starts mcp-bridge with args (port 0 and
// debug logs are added) and the given environment, and waits until it
// listens. The process is stopped with SIGTERM on cleanup, then killed.
func startBridge(t testing.TB, env []string, args ...string) *bridgeProc {
	t.Helper()
	return startBridgeAs(t, bridgeExec{}, env, args...)
}

// bridgeExec says how startBridgeAs runs mcp-bridge; the zero value runs
// the build of startBridge as this process's user, in this directory.
type bridgeExec struct {
	bin  string               // the executable; default the build
	dir  string               // the working directory; default this one
	attr *syscall.SysProcAttr // another user's credentials, say
}

// startBridgeAs is startBridge run as x says.
func startBridgeAs(t testing.TB, x bridgeExec, env []string, args ...string) *bridgeProc {
	t.Helper()
	bin := x.bin
	if bin == "" {
		bin = testpeers.BuildGo(t, "./cmd/mcp-bridge")
	}
	if env == nil {
		env = os.Environ()
	}
	cmd := exec.Command(bin, append([]string{"--port", "0", "--log-level", "debug"}, args...)...)
	cmd.Env = env
	cmd.Dir = x.dir
	cmd.SysProcAttr = x.attr
	pr, pw := io.Pipe()
	p := &bridgeProc{t: t, cmd: cmd, done: make(chan struct{}), line: make(chan struct{}, 1)}
	cmd.Stderr = pw
	cmd.Stdout = os.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan [2]string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.stderr.WriteString(line + "\n")
			p.mu.Unlock()
			select {
			case p.line <- struct{}{}:
			default:
			}
			if testing.Verbose() {
				t.Log(line)
			}
			if m := listening.FindStringSubmatch(line); m != nil {
				select {
				case ready <- [2]string{m[1], m[1] + m[2]}:
				default:
				}
			}
		}
	}()
	go func() {
		p.err = cmd.Wait()
		pw.Close()
		close(p.done)
	}()
	t.Cleanup(func() { p.stop() })
	select {
	case u := <-ready:
		p.Base, p.URL = u[0], u[1]
	case <-p.done:
		t.Fatalf("mcp-bridge exited before listening: %v\n%s", p.err, p.Stderr())
	case <-time.After(30 * time.Second): // a safety net, not a timing assertion
		t.Fatalf("mcp-bridge did not start listening\n%s", p.Stderr())
	}
	return p
}

// waitLog waits until the bridge has logged a line containing s, and
// returns its log so far.
func (p *bridgeProc) waitLog(s string) string {
	p.t.Helper()
	deadline := time.NewTimer(30 * time.Second) // a safety net, not a timing assertion
	defer deadline.Stop()
	for {
		if out := p.Stderr(); strings.Contains(out, s) {
			return out
		}
		select {
		case <-p.line:
		case <-deadline.C:
			p.t.Fatalf("the bridge never logged %q\n%s", s, p.Stderr())
		}
	}
}

// Stderr is what the bridge has logged so far.
func (p *bridgeProc) Stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// Signal sends sig to the bridge and waits for it to exit; it returns the
// exit error.
func (p *bridgeProc) Signal(sig syscall.Signal) error {
	_ = p.cmd.Process.Signal(sig)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		p.t.Fatalf("mcp-bridge did not exit after %v\n%s", sig, p.Stderr())
		return nil
	}
}

func (p *bridgeProc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// lockedWriter serialises the writes of several processes' output to
// one buffer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
