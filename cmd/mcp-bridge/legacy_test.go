package main

// The legacy HTTP+SSE transport (MCP 2024-11-05) with clients the bridge's
// authors did not write: the Go SDK's SSEClientTransport and the
// TypeScript SDK's SSEClientTransport, against the demo and against the
// reference server-everything.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// connectLegacyGo connects a Go SDK client over the legacy transport to
// sseURL, with the same handlers as connectGo's peers, and closes it on
// cleanup.
func connectLegacyGo(ctx context.Context, t *testing.T, sseURL string, opts *mcp.ClientSessionOptions) *goPeer {
	t.Helper()
	p, client := newGoPeer(t, "mcp-bridge-legacy-e2e")
	cs, err := client.Connect(ctx, &mcp.SSEClientTransport{Endpoint: sseURL, HTTPClient: &http.Client{Transport: p.wire}}, opts)
	if err != nil {
		t.Fatalf("connect over HTTP+SSE: %v", err)
	}
	p.cs = cs
	t.Cleanup(func() { cs.Close() })
	return p
}

// legacyEvent is one event of a legacy stream as it crossed the wire.
type legacyEvent struct {
	name, id, data string
}

// stream returns the events of the peer's one SSE stream read so far.
func (p *goPeer) stream(t *testing.T) []legacyEvent {
	t.Helper()
	var gets []*exchange
	for _, ex := range p.wire.all() {
		if ex.method == http.MethodGet {
			gets = append(gets, ex)
		}
	}
	if len(gets) != 1 {
		t.Fatalf("%d GETs on the wire, want the one stream", len(gets))
	}
	gets[0].mu.Lock()
	body := bytes.Clone(gets[0].response.Bytes())
	gets[0].mu.Unlock()
	var out []legacyEvent
	var ev legacyEvent
	for line := range strings.Lines(string(body)) {
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if ev != (legacyEvent{}) {
				out = append(out, ev)
			}
			ev = legacyEvent{}
		case strings.HasPrefix(line, "event:"):
			ev.name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "id:"):
			ev.id = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
		case strings.HasPrefix(line, "data:"):
			ev.data += strings.TrimSpace(strings.TrimPrefix(line, "data:"))
		}
	}
	return out
}

// TestLegacyGoSDKClient drives the demo behind the bridge with the Go
// SDK's HTTP+SSE client, at several protocol versions (docs/spec-rules.md,
// "Legacy HTTP+SSE", rule 6: a legacy-transport client may negotiate a
// 2025 version), through every
// feature that crosses the bridge in both directions; all of it travels
// on the one stream.
func TestLegacyGoSDKClient(t *testing.T) { forEachMode(t, testLegacyGoSDKClient) }

func testLegacyGoSDKClient(t *testing.T, mode string) {
	p := startBridge(t, nil, withFixtures(t, "--mode", mode)...)
	for _, tc := range []struct {
		name string
		opts *mcp.ClientSessionOptions
		want string
	}{
		// Newest first: in shared mode the first session sets the version
		// the child speaks, and later sessions may pick it or an older one.
		// Unpinned, the SDK first probes with 2026-07-28's server/discover,
		// whose error on the stream makes it fall back to initialize.
		{"unpinned", nil, "2025-11-25"},
		{"2025-11-25", &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}, "2025-11-25"},
		{"2025-06-18", &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"}, "2025-06-18"},
		{"2024-11-05", &mcp.ClientSessionOptions{ProtocolVersion: "2024-11-05"}, "2024-11-05"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), e2eTimeout)
			defer cancel()
			c := connectLegacyGo(ctx, t, p.Base+"/sse", tc.opts)
			if got := c.cs.InitializeResult().ProtocolVersion; got != tc.want {
				t.Fatalf("negotiated %s, want %s", got, tc.want)
			}
			tools := c.toolNames(ctx, t)
			for _, want := range []string{"echo", "slow", "sample", "elicit", "touch_resource"} {
				if !slices.Contains(tools, want) {
					t.Errorf("tools %q lack %q", tools, want)
				}
			}
			msg := "hello over HTTP+SSE " + tc.name
			if got := c.callText(ctx, t, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": msg}}); got != msg {
				t.Errorf("echo = %q, want %q", got, msg)
			}

			checkSlow(ctx, t, c)

			const prompt = "what is 6*7?"
			if got, want := c.callText(ctx, t, &mcp.CallToolParams{Name: "sample", Arguments: map[string]any{"prompt": prompt}}), "LLM response: "+sampled(prompt); got != want {
				t.Errorf("sample = %q, want %q", got, want)
			}
			if asked := receive(ctx, t, c.prompts, "sampling request"); asked != prompt {
				t.Errorf("the client was asked %q", asked)
			}
			if tc.want != "2024-11-05" { // elicitation came with 2025-06-18
				const question = "Who are you?"
				c.callText(ctx, t, &mcp.CallToolParams{Name: "elicit", Arguments: map[string]any{"message": question}})
				if asked := receive(ctx, t, c.asked, "elicitation request"); asked != question {
					t.Errorf("the user was asked %q", asked)
				}
			}
			const uri = "test://watched-resource"
			if err := c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
				t.Fatal(err)
			}
			c.callText(ctx, t, &mcp.CallToolParams{Name: "touch_resource"})
			if got := receive(ctx, t, c.updated, "resources/updated"); got != uri {
				t.Errorf("updated %q, want %q", got, uri)
			}

			// The wire: an endpoint event, then only message events, none
			// with an id; the slow call's progress before its result.
			var slowID json.RawMessage
			for _, ex := range c.wire.all() {
				var m rpcMessage
				if ex.method == http.MethodPost && json.Unmarshal(ex.request, &m) == nil && m.progressToken() == `"slow-1"` {
					slowID = m.ID
				}
				if ex.method == http.MethodPost && ex.status != http.StatusAccepted {
					t.Errorf("a POST answered %d, want 202: %s", ex.status, ex.request)
				}
			}
			events := c.stream(t)
			if len(events) == 0 || events[0].name != "endpoint" || !strings.HasPrefix(events[0].data, "message?sessionId=") {
				t.Fatalf("first event %+v, want the endpoint", events)
			}
			var order []string
			for _, ev := range events[1:] {
				if ev.name != "message" || ev.id != "" {
					t.Errorf("event %+v: want a message event without id", ev)
				}
				var m rpcMessage
				if err := json.Unmarshal([]byte(ev.data), &m); err != nil {
					t.Fatalf("event data %q: %v", ev.data, err)
				}
				switch {
				case m.Method == "notifications/progress" && strings.Contains(ev.data, `"slow-1"`):
					order = append(order, "progress")
				case m.Method == "" && slowID != nil && bytes.Equal(m.ID, slowID):
					order = append(order, "result")
				}
			}
			if want := []string{"progress", "progress", "progress", "progress", "result"}; !slices.Equal(order, want) {
				t.Errorf("the slow call's events on the stream: %q, want %q", order, want)
			}
			if err := c.cs.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		})
	}
}

// TestLegacyTypeScriptSDKClient drives the demo behind the bridge with
// the TypeScript SDK's SSEClientTransport.
func TestLegacyTypeScriptSDKClient(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode string) {
		testpeers.NodeModules(t)
		p := startBridge(t, nil, "--mode", mode)
		res := testpeers.RunTSClient(t, "sse", p.Base+"/sse")
		checkTSResult(t, res, "hello from ts", "slow", "sample")
		checkLegacyTSResult(t, res)
		if want := "LLM response: sampled:hi"; res.Sample != want {
			t.Errorf("sample = %q, want %q", res.Sample, want)
		}
	})
}

// TestLegacyServerEverything serves the reference server-everything
// (Node, stdio) over the legacy transport to both SDKs' HTTP+SSE clients.
func TestLegacyServerEverything(t *testing.T) {
	entry := filepath.Join(testpeers.NodeModules(t), "@modelcontextprotocol", "server-everything", "dist", "index.js")
	p := startBridge(t, nil, "--", testpeers.Node(t), entry, "stdio")

	t.Run("typescript client", func(t *testing.T) {
		res := testpeers.RunTSClient(t, "sse", p.Base+"/sse")
		checkTSResult(t, res, "Echo: hello from ts", "trigger-long-running-operation", "trigger-sampling-request")
		checkLegacyTSResult(t, res)
		if res.ServerName != "mcp-servers/everything" {
			t.Errorf("server name = %q", res.ServerName)
		}
	})

	t.Run("go client", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), e2eTimeout)
		defer cancel()
		c := connectLegacyGo(ctx, t, p.Base+"/sse", nil)
		checkEverything(ctx, t, c)
	})
}

// checkLegacyTSResult: the script found its session id in the endpoint's
// query, and the version came from the InitializeResult.
func checkLegacyTSResult(t *testing.T, res testpeers.TSResult) {
	t.Helper()
	if res.Mode != "sse" || res.SessionID == "" || res.ProtocolVersion == "" {
		t.Errorf("mode %q, session %q, version %q", res.Mode, res.SessionID, res.ProtocolVersion)
	}
}

// TestLegacyClaimEnv: a legacy HTTP+SSE session starts its child with the
// --claim-env variables of its principal, as a Streamable HTTP session
// does. The Go SDK's two client transports each start a session as the same
// token principal, and the badchild reports its environment.
func TestLegacyClaimEnv(t *testing.T) {
	badchild := testpeers.BuildGo(t, "./testdata/badchild")
	for _, mode := range []string{"per-session", "per-identity"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			env := append(environWithout(envPrefix), "ALICE_TOKEN="+tokenAlice)
			p := startBridge(t, env, "--mode", mode, "--token-env", "ALICE_TOKEN", "--claim-env", "sub=MCP_USER", "--", badchild)
			ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
			defer cancel()
			hc := &http.Client{Transport: bearerTransport{tokenAlice, http.DefaultTransport}}
			sseURL := strings.TrimSuffix(p.URL, "/mcp") + "/sse"
			for _, tc := range []struct {
				name      string
				transport mcp.Transport
			}{
				{"legacy HTTP+SSE", &mcp.SSEClientTransport{Endpoint: sseURL, HTTPClient: hc}},
				{"Streamable HTTP", &mcp.StreamableClientTransport{Endpoint: p.URL, HTTPClient: hc}},
			} {
				client := mcp.NewClient(&mcp.Implementation{Name: "claim-env", Version: "1"}, nil)
				cs, err := client.Connect(ctx, tc.transport, nil)
				if err != nil {
					t.Fatalf("%s: connect: %v", tc.name, err)
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "env", Arguments: map[string]any{}})
				if err != nil || len(res.Content) != 1 {
					t.Fatalf("%s: env: %v %v", tc.name, err, res)
				}
				text := res.Content[0].(*mcp.TextContent).Text
				var user []string
				for _, kv := range strings.Split(text, "\n") {
					if strings.HasPrefix(kv, "MCP_USER=") {
						user = append(user, kv)
					}
				}
				if !slices.Equal(user, []string{"MCP_USER=ALICE_TOKEN"}) {
					t.Errorf("%s: the child's MCP_USER: %q, want exactly MCP_USER=ALICE_TOKEN (--claim-env sub=MCP_USER)", tc.name, user)
				}
				cs.Close()
			}
		})
	}
}
