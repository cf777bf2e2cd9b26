package bridge

import (
	"context"
	"path/filepath"
	"testing"
)

// TestBudgetSlotGivenBack: a process that cannot start gives its slot of
// --max-children back at once, so failed starts never use the budget up:
// each attempt is the start's own failure, never "too many processes".
func TestBudgetSlotGivenBack(t *testing.T) {
	b, err := New(Config{Command: []string{filepath.Join(t.TempDir(), "no-such-server")}, MaxChildren: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(context.Background()) })
	for i := range 3 {
		_, _, err := b.Initialize(safety(t), InitRequest{Message: initRequest(t)})
		if kindOf(err) != KindInternal {
			t.Fatalf("start %d: %v, want the process's own failure to start", i, err)
		}
		if n := b.Children(); n != 0 {
			t.Fatalf("after start %d: %d slots taken, want 0", i, n)
		}
	}
}

// TestBudgetRestartKeepsSlot: a per-identity child that crashed keeps its
// slot of --max-children until its restart, so another principal's start
// in between cannot spend the budget: before, bob's child started in the
// backoff and alice's restart made one process more than the bound.
func TestBudgetRestartKeepsSlot(t *testing.T) { forPeers(t, testBudgetRestartKeepsSlot) }

func testBudgetRestartKeepsSlot(t *testing.T, p peer) {
	ctx := safety(t)
	b, _ := peerBridge(t, p, Config{Mode: ModePerIdentity, MaxChildren: 1})
	as := func(owner string) (*Session, error) {
		s, st, err := b.Initialize(ctx, InitRequest{Message: initRequest(t), Owner: Owner{Key: owner, Name: owner}})
		if err == nil {
			drain(ctx, t, st)
		}
		return s, err
	}
	alice, err := as("alice")
	if err != nil {
		t.Fatal(err)
	}
	if r := callTool(ctx, t, alice, "2", "crash"); r.Error == nil || r.Error.Code != CodeChildExited {
		t.Fatalf("crash: %+v, want -32005", r)
	}
	// Crashed, restarting or restarted: alice's child holds the one slot.
	if _, err := as("bob"); kindOf(err) != KindUnavailable {
		t.Fatalf("bob's session while alice's child restarts: %v, want too many processes", err)
	}
	until(t, "alice's child restarted", func() bool { return b.Stats().ChildrenRestarted.Load() == 1 && alice.ChildPid() != 0 })
	if got := callTool(ctx, t, alice, "3", "pid"); got.text() == "" {
		t.Fatalf("alice's call after the restart: %+v", got)
	}
	if n := b.Children(); n != 1 {
		t.Errorf("%d slots taken, want alice's child's", n)
	}
}
