package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// TestTriesAreReclaimed: four quick tries of a server, as a person makes
// them with the Inspector's CLI (three) and mcp-remote (one, which leaves
// a second session behind), with the official TypeScript SDK client,
// whose process ends without DELETE. Every session they leave is ended
// once --unreachable-timeout has passed, not after --idle-timeout, and its
// process stopped; a quiet client that holds its GET stream keeps its
// session and its process.
func TestTriesAreReclaimed(t *testing.T) {
	node := testpeers.Node(t)
	script := filepath.Join(filepath.Dir(testpeers.NodeModules(t)), "trynodelete.mjs")
	badchild := testpeers.BuildGo(t, "./testdata/badchild")
	p := startBridge(t, environWithout(envPrefix), "--unreachable-timeout", "1s", "--idle-timeout", "30m", "--", badchild)

	quiet := openSession(t, p.URL)
	quiet.holdOpen()
	quietPid := quiet.intTool("pid")

	var left []string
	for _, mode := range []string{"", "", "", "abandon"} {
		ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
		out, err := exec.CommandContext(ctx, node, script, p.URL, mode).Output()
		cancel()
		if err != nil {
			t.Fatalf("trynodelete %s: %v\n%s", mode, err, out)
		}
		var res struct {
			SessionIDs []string `json:"sessionIds"`
			Tools      int      `json:"tools"`
		}
		if err := json.Unmarshal(out, &res); err != nil || res.Tools == 0 {
			t.Fatalf("trynodelete %s: %s (%v)", mode, out, err)
		}
		left = append(left, res.SessionIDs...)
	}
	if len(left) != 5 {
		t.Fatalf("sessions left behind: %q, want 5", left)
	}
	for _, sid := range left {
		waitLogged(t, p, `msg="no client can reach the session any more; ending it" session=`+regexp.QuoteMeta(sid)+` `)
		waitLogged(t, p, `msg="child stopped" session=`+regexp.QuoteMeta(sid)+` `)
	}
	// Only the quiet client's process is left, and its session serves.
	deadline := time.NewTimer(safetyNet)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		m := scrapeMetrics(t, http.DefaultClient, p.Base)
		if m["mcp_bridge_children"] == 1 && m["mcp_bridge_sessions"] == 1 {
			break
		}
		select {
		case <-deadline.C:
			t.Fatalf("children %v, sessions %v, want 1 each", m["mcp_bridge_children"], m["mcp_bridge_sessions"])
		case <-tick.C:
		}
	}
	if pid := quiet.intTool("pid"); pid != quietPid {
		t.Errorf("the quiet session is on child %d, want its child %d", pid, quietPid)
	}
	if strings.Contains(p.Stderr(), `ending it" session=`+quiet.sid) {
		t.Error("the quiet session, which holds its GET stream, was ended")
	}
}
