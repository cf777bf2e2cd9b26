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
	s, st, err := br.Initialize("ALICE", msgs[0], false)
	if err != nil {
		t.Fatal(err)
	}
	for final := false; !final; {
		if err := st.Wait(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		_, final = st.Take(nil)
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
