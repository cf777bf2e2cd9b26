package bridge_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

func TestSnapshot(t *testing.T) {
	child := testpeers.BuildGo(t, "./testdata/badchild")
	br, err := bridge.New(bridge.Config{Command: []string{child, "-stderr-at-start", "2"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { br.Close(context.Background()) })
	msgs, _, _ := bridge.ParseBody([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	s, st, err := br.Initialize(t.Context(), bridge.InitRequest{Message: msgs[0], Owner: bridge.Owner{Key: "ALICE", Name: "ALICE"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Collect(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	snap := br.Snapshot()
	if len(snap.Sessions) != 1 || snap.Sessions[0].ID != s.ID() || snap.Sessions[0].Principal != "ALICE" ||
		snap.Sessions[0].Version != "2025-11-25" || snap.Sessions[0].ChildPid != s.ChildPid() {
		t.Fatalf("sessions %+v", snap.Sessions)
	}
	if len(snap.Children) != 1 || snap.Children[0].Pid != s.ChildPid() || snap.Children[0].Sessions != 1 {
		t.Fatalf("children %+v", snap.Children)
	}
}

// TestSnapshotFor: a principal's view holds its own sessions and the
// children that serve it only; of the shared child, that it runs, its own
// sessions on it counted, and not its stderr. Names are recorded at
// initialize, never derived from keys.
func TestSnapshotFor(t *testing.T) {
	child := testpeers.BuildGo(t, "./testdata/badchild")
	for _, mode := range []string{bridge.ModePerSession, bridge.ModePerIdentity, bridge.ModeShared} {
		t.Run(mode, func(t *testing.T) {
			br, err := bridge.New(bridge.Config{Command: []string{child}, Mode: mode, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { br.Close(context.Background()) })
			msgs, _, _ := bridge.ParseBody([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
			ids := map[string]string{}
			for _, o := range []bridge.Owner{{Key: "key-a", Name: "Alice"}, {Key: "key-b", Name: "Bob"}} {
				s, st, err := br.Initialize(t.Context(), bridge.InitRequest{Message: msgs[0], Owner: o})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := st.Collect(context.Background(), nil); err != nil {
					t.Fatal(err)
				}
				ids[o.Key] = s.ID()
			}
			all := br.Snapshot()
			wantChildren := 2
			if mode == bridge.ModeShared {
				wantChildren = 1
			}
			if len(all.Sessions) != 2 || len(all.Children) != wantChildren {
				t.Fatalf("all: sessions %+v, children %+v", all.Sessions, all.Children)
			}
			a := all.For("key-a")
			if len(a.Sessions) != 1 || a.Sessions[0].ID != ids["key-a"] || a.Sessions[0].Principal != "Alice" {
				t.Fatalf("Alice's sessions %+v", a.Sessions)
			}
			if len(a.Children) != 1 || a.Children[0].Pid != a.Sessions[0].ChildPid || a.Children[0].Sessions != 1 {
				t.Fatalf("Alice's children %+v", a.Children)
			}
			c := a.Children[0]
			if mode == bridge.ModeShared {
				if !c.StderrHidden || c.StderrTail != nil {
					t.Errorf("the shared child shows its stderr to Alice: %+v", c)
				}
			} else if c.StderrHidden {
				t.Errorf("Alice's own child hides its stderr: %+v", c)
			}
			if mode == bridge.ModePerIdentity && c.Identity != "Alice" {
				t.Errorf("identity %q, want Alice", c.Identity)
			}
			if n := len(br.Snapshot().For("key-c").Sessions); n != 0 {
				t.Errorf("a principal without sessions sees %d", n)
			}
		})
	}
}
