package stdio_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
	"github.com/mcp-bridge/mcp-bridge/stdio"
)

// Set for the run of TestUnprivileged as another user.
const (
	badchildEnv = "STDIO_TEST_BADCHILD"     // the badchild binary to use
	unprivEnv   = "STDIO_TEST_UNPRIVILEGED" // this run is the unprivileged one
)

// forEachContainment runs f as a subtest for the process-wide default and
// for each strategy this system allows; one it does not is skipped with
// the reason.
func forEachContainment(t *testing.T, f func(t *testing.T, c stdio.Containment)) {
	for _, c := range []stdio.Containment{stdio.ContainAuto, stdio.ContainPIDNamespace, stdio.ContainCgroup, stdio.ContainProcessGroup} {
		t.Run(string(c), func(t *testing.T) {
			if _, why, err := stdio.ProbeContainment(c); err != nil {
				t.Skipf("%s: %v", c, err)
			} else if c == stdio.ContainAuto {
				t.Logf("auto: %s", why)
			}
			f(t, c)
		})
	}
}

// TestContainment: whatever ends a child (Stop, Kill, a crash), every
// process it started dies: grandchildren in its group, ones that left it
// (setsid) and ignore SIGTERM, and a daemon that forked twice so that its
// parent exited and it was re-parented. The child itself ignores stdin EOF
// and SIGTERM. Its exit status is still the command's own.
func TestContainment(t *testing.T) {
	ends := []struct {
		name     string
		end      func(ctx context.Context, p *peer)
		wantExit string
	}{
		{"stop", func(ctx context.Context, p *peer) {
			if err := p.c.Stop(ctx); err != nil {
				p.t.Fatal(err)
			}
		}, "signal: killed"},
		{"kill", func(ctx context.Context, p *peer) { p.c.Kill() }, "signal: killed"},
		{"crash", func(ctx context.Context, p *peer) {
			p.call(99, "crash", map[string]any{"code": 3})
		}, "exit status 3"},
	}
	grandchildren := []struct {
		name string
		args map[string]any
		// escapes names the ends after which ContainProcessGroup lets this
		// one live on here: it is no longer linked to the child when the
		// child is gone, and is re-parented to PID 1, since this test
		// binary is no subreaper. The bridge is one: it finds such orphans
		// by the child's mark (cmd/mcp-bridge's TestNothingOutlivesTheBridge).
		escapes []string
	}{
		{"in the group", nil, nil},
		{"in the group, ignoring SIGTERM", map[string]any{"ignore_term": true}, nil},
		{"setsid, ignoring SIGTERM", map[string]any{"setsid": true, "ignore_term": true}, []string{"crash"}},
		{"daemon re-parented", map[string]any{"daemon": true}, []string{"stop", "kill", "crash"}},
	}
	forEachContainment(t, func(t *testing.T, cont stdio.Containment) {
		for _, end := range ends {
			t.Run(end.name, func(t *testing.T) {
				ctx := testContext(t)
				p := startChild(t, stdio.Options{StopGrace: 100 * time.Millisecond, Containment: cont}, "-ignore-eof", "-ignore-term")
				p.call(1, "pid", nil)
				if got := p.text(ctx, 1); got != strconv.Itoa(p.c.Pid()) {
					t.Fatalf("the child says its pid is %s, Pid() says %d", got, p.c.Pid())
				}
				checkContained(t, cont, p.c.Pid())
				pids := map[string]int{}
				for i, g := range grandchildren {
					p.call(2+i, "fork", g.args)
					pid, err := strconv.Atoi(p.text(ctx, 2+i))
					if err != nil {
						t.Fatalf("fork %s answered no pid: %v", g.name, err)
					}
					if state, _, err := procStat(pid); err != nil || state == "Z" {
						t.Fatalf("grandchild %s (%d) is not running: state %q, %v", g.name, pid, state, err)
					}
					pids[g.name] = pid
					t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) }) // whatever the test finds
				}
				end.end(ctx, p)
				select {
				case <-p.c.Done():
				case <-ctx.Done():
					t.Fatal("child never exited")
				}
				if err := p.c.Err(); err == nil || err.Error() != end.wantExit {
					t.Errorf("Err() = %v, want %q", err, end.wantExit)
				}
				waitGone(t, p.c.Pid())
				for _, g := range grandchildren {
					if cont == stdio.ContainProcessGroup && strings.Contains(strings.Join(g.escapes, ","), end.name) {
						continue // documented: see docs/containment.md
					}
					waitGone(t, pids[g.name])
				}
			})
		}
	})
}

// TestContainmentMark: under ContainProcessGroup each child, and what it
// starts, carries ContainmentMarkEnv with a value of its own, in place of
// any the caller's environment had; under the other strategies, none.
func TestContainmentMark(t *testing.T) {
	forEachContainment(t, func(t *testing.T, cont stdio.Containment) {
		if cont == stdio.ContainAuto {
			t.Skip("the strategies themselves are below")
		}
		ctx := testContext(t)
		marks := map[string]bool{}
		for range 2 {
			p := startChild(t, stdio.Options{Containment: cont, Env: []string{stdio.ContainmentMarkEnv + "=the caller's"}})
			p.call(1, "env", nil)
			var got []string
			for kv := range strings.SplitSeq(p.text(ctx, 1), "\n") {
				if v, ok := strings.CutPrefix(kv, stdio.ContainmentMarkEnv+"="); ok {
					got = append(got, v)
				}
			}
			if cont != stdio.ContainProcessGroup {
				if !slices.Equal(got, []string{"the caller's"}) {
					t.Fatalf("the child's %s: %q, want the caller's, as it was", stdio.ContainmentMarkEnv, got)
				}
				continue
			}
			if len(got) != 1 || got[0] == "the caller's" || len(got[0]) < 16 || marks[got[0]] {
				t.Fatalf("the child's %s: %q, want one random value of its own", stdio.ContainmentMarkEnv, got)
			}
			marks[got[0]] = true
		}
	})
}

// TestStartFailures: a command that cannot start fails Start, under every
// strategy, with the reason, and leaves nothing behind.
func TestStartFailures(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "not-a-program")
	if err := os.WriteFile(notExec, []byte("\x00\x01 not a program"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts stdio.Options
		want string
	}{
		{"exec format error", stdio.Options{Argv: []string{notExec}}, "exec format error"},
		{"no such directory", stdio.Options{Argv: []string{"/bin/true"}, Dir: filepath.Join(dir, "nonexistent")}, "no such file or directory"},
	}
	forEachContainment(t, func(t *testing.T, cont stdio.Containment) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				tt.opts.Containment = cont
				c, err := stdio.Start(tt.opts)
				if err == nil {
					c.Kill()
					<-c.Done()
					t.Fatal("Start succeeded")
				}
				if !strings.Contains(err.Error(), tt.want) {
					t.Errorf("Start: %v, want it to say %q", err, tt.want)
				}
			})
		}
	})
}

// TestContainmentChoice: auto picks a strategy and says why; an unknown one
// is refused.
func TestContainmentChoice(t *testing.T) {
	got, why, err := stdio.ProbeContainment(stdio.ContainAuto)
	if err != nil || got == stdio.ContainAuto || why == "" {
		t.Fatalf("ProbeContainment(auto) = %q, %q, %v; want a strategy and a reason", got, why, err)
	}
	t.Logf("auto: %s (%s)", got, why)
	if inUse, _ := stdio.ContainmentInUse(); inUse != got {
		t.Errorf("ContainmentInUse() = %q, ProbeContainment(auto) = %q", inUse, got)
	}
	if os.Getenv(unprivEnv) != "" && (got != stdio.ContainPIDNamespace || !strings.Contains(why, "user namespace")) {
		t.Errorf("unprivileged, auto chose %q (%s), want a PID namespace in a user namespace", got, why)
	}
	if _, _, err := stdio.ProbeContainment("chroot"); err == nil {
		t.Error("ProbeContainment(chroot) succeeded")
	}
}

// checkContained fails unless pid is contained the way cont says: in a PID
// namespace or a cgroup other than this process's.
func checkContained(t *testing.T, cont stdio.Containment, pid int) {
	t.Helper()
	if cont == stdio.ContainAuto {
		cont, _ = stdio.ContainmentInUse()
	}
	differs := func(what string, read func(pid string) (string, error)) {
		ours, err1 := read("self")
		its, err2 := read(strconv.Itoa(pid))
		if err1 != nil || err2 != nil {
			t.Fatalf("read %s: %v, %v", what, err1, err2)
		}
		if ours == its {
			t.Errorf("the child (%d) is in this process's %s %s, want one of its own", pid, what, its)
		}
	}
	switch cont {
	case stdio.ContainPIDNamespace:
		differs("PID namespace", func(pid string) (string, error) { return os.Readlink("/proc/" + pid + "/ns/pid") })
	case stdio.ContainCgroup:
		differs("cgroup", func(pid string) (string, error) {
			b, err := os.ReadFile("/proc/" + pid + "/cgroup")
			return string(b), err
		})
	}
}

// TestUnprivileged runs the tests of the PID-namespace strategy again as an
// unprivileged user (nobody), whose namespace needs a user namespace, when
// this test runs as root (as any other user, the tests above ran that way).
func TestUnprivileged(t *testing.T) {
	if os.Getenv(unprivEnv) != "" {
		t.Skip("this is the unprivileged run")
	}
	if os.Geteuid() != 0 {
		t.Skip("not root: the other tests ran unprivileged")
	}
	badchild := testpeers.BuildGo(t, "./testdata/badchild") // in a directory anyone can read
	// The test binary's own directory is root's alone: copy it out.
	dir, err := os.MkdirTemp("", "stdio-unprivileged-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "stdio.test")
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	testpeers.CopyExecutable(t, os.Args[0], bin)

	ctx := testContext(t)
	cmd := exec.CommandContext(ctx, bin, "-test.count=1", "-test.v",
		"-test.run", "^(TestContainment|TestStopSequence|TestExitStatus|TestContainmentChoice)$/^(auto|pid-namespace)$")
	cmd.Env = append(os.Environ(), unprivEnv+"=1", badchildEnv+"="+badchild)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the tests as nobody: %v\n%s", err, out)
	}
	for _, want := range []string{"--- PASS: TestContainment/pid-namespace/", "--- PASS: TestStopSequence/pid-namespace/", "--- PASS: TestExitStatus/pid-namespace/", "--- PASS: TestContainmentChoice"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the tests as nobody did not pass %q:\n%s", want, out)
		}
	}
}
