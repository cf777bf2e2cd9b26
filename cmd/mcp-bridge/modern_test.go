package main

import (
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// TestModernTypeScriptClient guards the translation between the eras: the
// official TypeScript SDK v2 client, pinned to MCP 2026-07-28 (stateless:
// no initialize, no session), against the reference server-everything, a
// legacy (2025) stdio server, behind the bridge in each mode
// (testdata/node/modernclient.mjs). It covers discovery, the lists, calls
// with progress, a sampling, an elicitation and a roots request answered
// through MRTR (input_required results that the SDK fulfils and retries),
// -32021 for a client that cannot answer, subscriptions/listen with a
// resource update, and cancellation by closing a call's stream, on a leased
// child and on the pool's base child; the bridge counts both cancellations
// it sent the children.
func TestModernTypeScriptClient(t *testing.T) {
	entry := filepath.Join(testpeers.NodeModules(t), "@modelcontextprotocol", "server-everything", "dist", "index.js")
	node := testpeers.Node(t)
	for _, tc := range []struct {
		mode string
		auth bool // per-identity needs principals: --token-env
	}{
		{mode: "per-session"},
		{mode: "shared"},
		{mode: "per-identity", auth: true},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			var env, clientEnv []string
			args := []string{"--mode", tc.mode}
			if tc.auth {
				env = append(environWithout(envPrefix), "ALICE_TOKEN="+tokenAlice)
				args = append(args, "--token-env", "ALICE_TOKEN", "--metrics-public")
				clientEnv = []string{"MODERNCLIENT_TOKEN=" + tokenAlice}
			}
			p := startBridge(t, env, append(args, "--", node, entry, "stdio")...)
			res := testpeers.RunModernClient(t, p.URL, clientEnv)
			// "cacheScope private" where answers may differ per principal.
			scope := "public"
			if tc.auth {
				scope = "private"
			}
			checkModernResult(t, res, scope)

			// The bridge told the children: the leased child of the first
			// client's call, the base child of the plain client's. It
			// learns of a closed stream on its own, so it may count a
			// moment after the client has moved on.
			hc := &http.Client{Timeout: 10 * time.Second}
			var m map[string]float64
			poll(t, "the bridge to count two cancellations", func() bool {
				m = scrapeMetrics(t, hc, p.Base)
				return m["mcp_bridge_requests_cancelled_total"] >= 2
			})
			if got := m["mcp_bridge_requests_cancelled_total"]; got != 2 {
				t.Errorf("mcp_bridge_requests_cancelled_total = %v, want 2 (one call on a leased child, one on the base child)", got)
			}
			if got := m["mcp_bridge_sessions_created_total"]; got != 0 {
				t.Errorf("mcp_bridge_sessions_created_total = %v, want 0: a 2026-07-28 client has no session", got)
			}
		})
	}
}

// checkModernResult checks what modernclient.mjs saw against
// server-everything behind the bridge; scope is the cacheScope the
// cacheable results must carry.
func checkModernResult(t *testing.T, res testpeers.ModernResult, scope string) {
	t.Helper()
	if len(res.Errors) > 0 {
		t.Errorf("modernclient errors: %q", res.Errors)
	}

	// Discovery: the pinned version, offered by server/discover, built
	// from the child's InitializeResult; no session, ever.
	if res.ProtocolVersion != "2026-07-28" || res.Era != "modern" {
		t.Errorf("negotiated %q (era %q), want 2026-07-28 (modern)", res.ProtocolVersion, res.Era)
	}
	if !slices.Equal(res.SupportedVersions, []string{"2026-07-28"}) {
		t.Errorf("server/discover supportedVersions = %q", res.SupportedVersions)
	}
	if res.ServerName != "mcp-servers/everything" {
		t.Errorf("server name = %q, want the child's serverInfo", res.ServerName)
	}
	if want := []string{"completions", "logging", "prompts", "resources", "tools"}; !slices.Equal(res.Capabilities, want) {
		t.Errorf("discovered capabilities %q, want %q (the child's, without tasks)", res.Capabilities, want)
	}
	if len(res.SessionIDs) > 0 {
		t.Errorf("responses carried Mcp-Session-Id %q: a 2026-07-28 client has no session", res.SessionIDs)
	}

	// Lists and plain calls.
	for _, want := range []string{"echo", "get-sum", "trigger-long-running-operation", "trigger-sampling-request",
		"trigger-elicitation-request", "get-roots-list", "toggle-subscriber-updates"} {
		if !slices.Contains(res.Tools, want) {
			t.Errorf("tools %q lack %q", res.Tools, want)
		}
	}
	if !slices.Contains(res.Prompts, "simple-prompt") {
		t.Errorf("prompts %q lack simple-prompt", res.Prompts)
	}
	if !slices.Contains(res.Resources, "demo://resource/static/document/features.md") {
		t.Errorf("resources %q lack features.md", res.Resources)
	}
	if !slices.Contains(res.Templates, "demo://resource/dynamic/text/{resourceId}") {
		t.Errorf("templates %q lack the dynamic text one", res.Templates)
	}
	if !strings.HasPrefix(res.Read, "Resource 1: ") {
		t.Errorf("resources/read = %q", res.Read)
	}
	if res.Echo != "Echo: hello modern" {
		t.Errorf("echo = %q", res.Echo)
	}
	if res.Sum != "The sum of 19 and 23 is 42." {
		t.Errorf("get-sum = %q", res.Sum)
	}
	// server-everything asks for roots on its own, 350 ms after it is
	// initialized, during whichever call a fresh leased child serves
	// then: if that is this one, the call is parked while the client
	// answers, and the progress the child sends meanwhile is dropped
	// (bridge.Stats.ParkedDrops). What arrives is in order, each value
	// once.
	if len(res.Progress) == 0 || !slices.IsSorted(res.Progress) || len(slices.Compact(slices.Clone(res.Progress))) != len(res.Progress) ||
		res.Progress[0] < 1 || res.Progress[len(res.Progress)-1] > 3 || !strings.Contains(res.LongRunning, "Long running operation completed") {
		t.Errorf("long-running operation: progress %v, want some of 1, 2, 3 in order; result %q", res.Progress, res.LongRunning)
	}

	// MRTR: the child's questions reached the SDK's handlers, their
	// answers the child. server-everything caches the roots it got, so
	// they may have been asked during another call than get-roots-list
	// (see above).
	if !strings.Contains(res.SampleAsked, "what is 6*7?") || !strings.Contains(res.Sample, "sampled by modernclient") {
		t.Errorf("sampling: asked %q, result %q", res.SampleAsked, res.Sample)
	}
	if res.ElicitAsked == "" || !strings.Contains(res.Elicit, "- Name: Ada Lovelace") {
		t.Errorf("elicitation: asked %q, result %q", res.ElicitAsked, res.Elicit)
	}
	if res.RootsAsked < 1 || !strings.Contains(res.Roots, "URI: file:///modernclient/root") {
		t.Errorf("roots: asked %d times, result %q", res.RootsAsked, res.Roots)
	}
	// The plain client cannot answer the sampling tool's question: the
	// call fails with -32021, naming what it lacks.
	if res.Missing == nil || res.Missing.Code != -32021 || string(res.Missing.RequiredCapabilities) != `{"sampling":{}}` {
		t.Errorf("sampling tool from a client without sampling: %+v, want -32021 requiring sampling", res.Missing)
	}
	// The roots question rides in whichever round is open when the child
	// asks it (350 ms after it starts): its own retry, or the sampling
	// call's, answered with the sampling one. Either way it came as
	// input_required (RootsAsked above), the only way a 2026-07-28 client
	// is asked anything.
	if res.Retries["trigger-sampling-request"] < 1 || res.Retries["trigger-elicitation-request"] < 1 {
		t.Errorf("MRTR retries %v: want the sampling and elicitation calls retried with requestState", res.Retries)
	}

	// Every result says what it is and who answered; the cacheable ones
	// how long and for whom.
	for method, w := range res.Wire {
		if w.ServerInfo != w.Results {
			t.Errorf("%s: %d of %d results carry _meta serverInfo", method, w.ServerInfo, w.Results)
		}
		wantTypes := []string{"complete"}
		if method == "tools/call" {
			wantTypes = append(wantTypes, "input_required")
		}
		got := slices.Clone(w.ResultTypes)
		slices.Sort(got)
		if !slices.Equal(got, wantTypes) {
			t.Errorf("%s: resultTypes %q, want %q", method, got, wantTypes)
		}
		cacheable := method != "tools/call"
		if cacheable && (w.CacheHints != w.Results || !slices.Equal(w.CacheScopes, []string{scope})) {
			t.Errorf("%s: %d of %d results carry ttlMs and cacheScope, scopes %q, want all, %q", method, w.CacheHints, w.Results, w.CacheScopes, scope)
		}
	}
	for _, method := range []string{"server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read", "tools/call"} {
		if res.Wire[method].Results == 0 {
			t.Errorf("no %s result seen on the wire", method)
		}
	}

	// subscriptions/listen: acknowledged with the URI, then its update,
	// stamped with the listen's id.
	const uri = "demo://resource/dynamic/text/1"
	if !slices.Equal(res.Listen.Honored.ResourceSubscriptions, []string{uri}) {
		t.Errorf("listen honored %q, want [%s]", res.Listen.Honored.ResourceSubscriptions, uri)
	}
	if len(res.Listen.Updates) == 0 {
		t.Error("no notifications/resources/updated on the listen")
	}
	for _, u := range res.Listen.Updates {
		if u.URI != uri || string(u.SubscriptionID) != `"listen:0"` {
			t.Errorf("update %s with subscriptionId %s, want %s with the listen's id", u.URI, u.SubscriptionID, uri)
		}
	}
	if res.Listen.Closed != "local" {
		t.Errorf("listen closed %q, want local (the client closed it)", res.Listen.Closed)
	}

	// Cancellation by closing the stream, then the next call works.
	for name, c := range map[string]testpeers.ModernCancel{"leased child": res.Cancel, "base child": res.CancelPlain} {
		if len(c.Progress) == 0 || !strings.Contains(c.Error, "modernclient cancels") || c.After != "Echo: after cancel" {
			t.Errorf("cancel on the %s: progress %v, error %q, then %q", name, c.Progress, c.Error, c.After)
		}
	}
}
