//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// TestUnprivilegedSIGKILL: a bridge run as an unprivileged user (nobody),
// whose PID namespaces need a user namespace, is SIGKILLed with a session
// whose child ignores stdin EOF and SIGTERM and has started a grandchild
// that left its group (setsid) and ignores SIGTERM: the child, the
// grandchild and the init of their namespace all die with it. The tests
// above run the bridge as root, whose namespaces need none; stdio's
// TestUnprivileged runs as nobody but only ever ends the child.
func TestUnprivilegedSIGKILL(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: the tests above ran the bridge unprivileged")
	}
	const nobody = 65534
	// nobody must be able to run both executables from where they are:
	// copies in a directory of its own that anyone may read.
	dir, err := os.MkdirTemp("", "mcp-bridge-unprivileged-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin, badchild := filepath.Join(dir, "mcp-bridge"), filepath.Join(dir, "badchild")
	testpeers.CopyExecutable(t, testpeers.BuildGo(t, "./cmd/mcp-bridge"), bin)
	testpeers.CopyExecutable(t, testpeers.BuildGo(t, "./testdata/badchild"), badchild)

	p := startBridgeAs(t, bridgeExec{bin: bin, dir: dir, attr: &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}},
		environWithout(envPrefix), "--containment", "pid-namespace", "--", badchild, "-ignore-eof", "-ignore-term")
	waitLogged(t, p, `msg="process containment" strategy=pid-namespace why="a PID namespace per child, in a user namespace`)
	s := openSession(t, p.URL)
	child := s.intTool("pid")
	_, init, _ := procState(t, child)
	if init == p.cmd.Process.Pid {
		t.Fatalf("the child (%d) is the bridge's own child, want it under the init of a namespace", child)
	}
	grandchild := s.intCall("fork", map[string]any{"setsid": true, "ignore_term": true})
	procs := map[int]string{child: "the child", grandchild: "the grandchild", init: "the init of their namespace"}
	for pid, what := range procs {
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) }) // whatever the test finds
		if st, _, ok := procState(t, pid); !ok || st == "Z" {
			t.Fatalf("%s (%d) should be running (state %q)", what, pid, st)
		}
		if uid := procUID(t, pid); uid != nobody {
			t.Fatalf("%s (%d) runs as uid %d, want nobody (%d)", what, pid, uid, nobody)
		}
	}
	_ = p.Signal(syscall.SIGKILL)
	for pid := range procs {
		waitGone(t, pid)
	}
}

// procUID is the real uid process pid runs as, from /proc.
func procUID(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "Uid:" {
			uid, err := strconv.Atoi(f[1])
			if err != nil {
				break
			}
			return uid
		}
	}
	t.Fatalf("no Uid in /proc/%d/status:\n%s", pid, b)
	return -1
}
