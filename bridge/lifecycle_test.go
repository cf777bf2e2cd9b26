package bridge

// Tests of the bridge's life: Close waits for every goroutine of the
// bridge's, none is left once it returns, and none starts after it.

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// find is the child with that pid.
func (r *memChildren) find(t *testing.T, pid int) *memChild {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.all {
		if m.pid == pid {
			return m
		}
	}
	t.Fatalf("no in-memory child has pid %d", pid)
	return nil
}

// bridgeGoroutines are the stacks of the goroutines, the caller's aside,
// that run the bridge's code or an in-memory child's.
func bridgeGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var ours []string
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i > 0 && runsBridge(g) { // the first is the caller's
			ours = append(ours, g)
		}
	}
	return ours
}

// runsBridge reports whether a goroutine's stack has a frame of the
// bridge's (not of its tests) or of an in-memory child. A frame is a
// function line followed by its file line; "created by" lines name where
// a goroutine began, not what it runs.
func runsBridge(stack string) bool {
	lines := strings.Split(stack, "\n")
	for i := 1; i+1 < len(lines); i++ {
		fn, file := lines[i], lines[i+1]
		switch {
		case strings.HasPrefix(fn, "created by "):
		case strings.Contains(fn, "(*memChild)"):
			return true
		case strings.HasPrefix(fn, "github.com/mcp-bridge/mcp-bridge/bridge.") && !strings.Contains(file, "_test.go:"):
			return true
		}
	}
	return false
}

// noBridgeGoroutines waits, up to the safety net, for the goroutines that
// run the bridge's code to be gone: one that has counted itself done may
// still be returning.
func noBridgeGoroutines(t *testing.T) {
	t.Helper()
	deadline := time.NewTimer(safetyNet)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		left := bridgeGoroutines()
		if len(left) == 0 {
			return
		}
		select {
		case <-deadline.C:
			t.Fatalf("%d goroutines of the bridge left after Close:\n\n%s", len(left), strings.Join(left, "\n\n"))
		case <-tick.C:
		}
	}
}

// TestCloseLeavesNoGoroutine: with every kind of goroutine the bridge
// starts under way or done (a child's watcher, the janitor and the
// sessions it ends, the pool's refill, a request's deadline, a stalled
// child's stop, a shared child's answer to a request it cannot route, the
// initialized notification of a child the bridge initialized itself, an
// owner's child retired with its last session), Close returns with none of
// them left, and nothing starts after it.
func TestCloseLeavesNoGoroutine(t *testing.T) {
	for _, tc := range []struct {
		mode string
		cfg  Config
		work func(t *testing.T, b *Bridge, kids *memChildren)
	}{
		{ModePerSession, Config{Prespawn: 1, IdleTimeout: 100 * time.Millisecond, RequestTimeout: 200 * time.Millisecond}, func(t *testing.T, b *Bridge, kids *memChildren) {
			ctx := safety(t)
			timedOut, _, err := join(ctx, t, b, false)
			if err != nil {
				t.Fatal(err)
			}
			wantCode(t, callTool(ctx, t, timedOut, "1", "hang"), CodeRequestTimeout, "--request-timeout")
			stalled, _, err := join(ctx, t, b, false)
			if err != nil {
				t.Fatal(err)
			}
			kids.find(t, stalled.ChildPid()).stall()
			wantCode(t, callTool(ctx, t, stalled, "1", "echo"), CodeChildExited, "stopped reading its input")
			for _, s := range []*Session{timedOut, stalled} { // the first expires
				select {
				case <-s.Done():
				case <-ctx.Done():
					t.Fatal("a session did not end")
				}
			}
			if _, _, err := join(ctx, t, b, false); err != nil { // open at Close
				t.Fatal(err)
			}
		}},
		{ModeShared, Config{}, func(t *testing.T, b *Bridge, kids *memChildren) {
			ctx := safety(t)
			stateless, _, err := join(ctx, t, b, true) // the bridge initializes the child
			if err != nil {
				t.Fatal(err)
			}
			stateless.Close()
			s, _, err := join(ctx, t, b, false)
			if err != nil {
				t.Fatal(err)
			}
			hung := start(t, s, "1", "hang")
			// Two requests in flight: the child's sampling request cannot
			// be routed, and the bridge answers it with an error.
			wantCode(t, callTool(ctx, t, s, "2", "sample"), CodeInternalError, "sampling failed")
			_ = hung // in flight at Close
		}},
		{ModePerIdentity, Config{}, func(t *testing.T, b *Bridge, kids *memChildren) {
			ctx := safety(t)
			for _, owner := range []string{"alice", "bob"} {
				s, st, err := b.Initialize(ctx, InitRequest{Message: initRequest(t), Owner: Owner{Key: owner, Name: owner}})
				if err != nil {
					t.Fatal(err)
				}
				drain(ctx, t, st)
				if owner == "alice" {
					s.Close() // her child retires; bob's is open at Close
				}
			}
			until(t, "alice's child retired", func() bool { return b.Children() == 1 })
		}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			kids := &memChildren{}
			cfg := tc.cfg
			cfg.Mode = tc.mode
			b, _ := peerBridge(t, peer{"memory", kids.start}, cfg)
			tc.work(t, b, kids)
			if err := b.Close(safety(t)); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if b.spawn(func() { t.Error("a goroutine ran after Close") }) {
				t.Error("spawn started a goroutine after Close")
			}
			if n := b.Children(); n != 0 {
				t.Errorf("%d children alive after Close", n)
			}
			noBridgeGoroutines(t)
		})
	}
}

// TestCloseWaits: Close returns only once a goroutine of the bridge's
// that was running when it began has returned, and may be called twice.
func TestCloseWaits(t *testing.T) {
	ctx := safety(t)
	b, _ := peerBridge(t, memoryPeer, Config{})
	release := make(chan struct{})
	var finished atomic.Bool
	if !b.spawn(func() { <-release; finished.Store(true) }) {
		t.Fatal("spawn refused before Close")
	}
	closed := make(chan error, 1)
	go func() { closed <- b.Close(ctx) }()
	until(t, "Close began", func() bool { return b.phaseNow() == phaseClosed })
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a goroutine of the bridge ran", err)
	default:
	}
	close(release)
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("Close never returned")
	}
	if !finished.Load() {
		t.Fatal("Close returned before the goroutine did")
	}
	if err := b.Close(ctx); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
	if _, _, err := join(ctx, t, b, false); err == nil || !strings.Contains(fmt.Sprint(err), ErrClosing.Message) {
		t.Fatalf("a session after Close: %v, want %v", err, ErrClosing)
	}
}
