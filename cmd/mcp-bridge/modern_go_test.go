package main

// A second independent modern client: the official Go SDK (go-sdk v1.8.0),
// unpinned, speaks MCP 2026-07-28 (server/discover first, no session, _meta
// on every request) to a real bridge process. In front of
// @modelcontextprotocol/server-everything, a 2025-only stdio server, the
// bridge translates: discovery, decorated results, MRTR for the child's
// sampling, elicitation and roots requests, subscriptions/listen, and
// cancellation by closing the stream. In front of the built-in demo, which
// speaks 2026-07-28 itself, requests pass through.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// modernRoot is the root the modern peers expose to servers.
const modernRoot = "file:///srv/modern-go-root"

// elicitedContent is what the modern peers' elicitation handler accepts with:
// a value for every field the servers here ask (server-everything's name,
// the demo's name, color and ok). A handler returns a copy: the SDK's
// client fills the schema's defaults into the map it is given, and peers
// answer their questions concurrently.
var elicitedContent = map[string]any{"name": "Ada Lovelace", "color": "teal", "ok": true}

// modernPeer is a Go SDK client that speaks 2026-07-28 through the
// bridge: a goPeer (its handlers hand what the server sends to buffered
// channels; wire keeps what crossed HTTP) that also takes tool list
// changes.
type modernPeer struct {
	*goPeer
	toolsChanged chan struct{}
}

// connectModern connects an unpinned Go SDK client to url, sending token
// as a bearer token unless it is "", and closes it on cleanup. With asks,
// the client declares sampling, elicitation and roots (so its calls get a
// leased child, and MRTR); without, it declares no capability at all (its
// calls go to the pool's base child). go-sdk opens a listen for tool list
// changes at Connect, as the server offers them and the client has a
// handler.
func connectModern(ctx context.Context, t *testing.T, url, token string, asks bool) *modernPeer {
	t.Helper()
	p := &modernPeer{goPeer: &goPeer{
		wire:     newWireLog(t),
		progress: make(chan *mcp.ProgressNotificationParams, peerBuffer),
		logs:     make(chan *mcp.LoggingMessageParams, peerBuffer),
		updated:  make(chan string, peerBuffer),
		prompts:  make(chan string, peerBuffer),
		asked:    make(chan string, peerBuffer),
	}, toolsChanged: make(chan struct{}, peerBuffer)}
	opts := &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			offer(p.goPeer, p.progress, req.Params)
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) { offer(p.goPeer, p.logs, req.Params) },
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			offer(p.goPeer, p.updated, req.Params.URI)
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { offer(p.goPeer, p.toolsChanged, struct{}{}) },
	}
	if asks {
		opts.CreateMessageHandler = func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			var prompt string
			for _, m := range req.Params.Messages {
				if tc, ok := m.Content.(*mcp.TextContent); ok {
					prompt += tc.Text
				}
			}
			offer(p.goPeer, p.prompts, prompt)
			return &mcp.CreateMessageResult{Role: "assistant", Model: "modern-go", Content: &mcp.TextContent{Text: sampled(prompt)}}, nil
		}
		opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			offer(p.goPeer, p.asked, req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: maps.Clone(elicitedContent)}, nil
		}
	} else {
		opts.Capabilities = &mcp.ClientCapabilities{} // not even roots
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "modern-go", Version: "0.0.1"}, opts)
	if asks {
		client.AddRoots(&mcp.Root{URI: modernRoot, Name: "project"})
	}
	var rt http.RoundTripper = p.wire
	if token != "" {
		rt = bearerTransport{token, p.wire}
	}
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rt}}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	p.cs = cs
	t.Cleanup(func() { cs.Close() })
	return p
}

// checkHandshake: the client negotiated 2026-07-28 with
// server/discover, no initialize crossed the wire, and there is no session.
func (p *modernPeer) checkHandshake(t *testing.T, server string) {
	t.Helper()
	res := p.cs.InitializeResult()
	if res.ProtocolVersion != "2026-07-28" {
		t.Errorf("negotiated %q, want 2026-07-28", res.ProtocolVersion)
	}
	if res.ServerInfo == nil || res.ServerInfo.Name != server {
		t.Errorf("server info %+v, want %q", res.ServerInfo, server)
	}
	if id := p.cs.ID(); id != "" {
		t.Errorf("session id %q, want none", id)
	}
	for _, ex := range p.wire.all() {
		var m rpcMessage
		if json.Unmarshal(ex.request, &m) == nil && m.Method == "initialize" {
			t.Errorf("the client sent initialize: %s", ex.request)
		}
		if ex.method != http.MethodPost {
			t.Errorf("the client sent %s: a 2026-07-28 client only POSTs", ex.method)
		}
	}
}

// mrtrRounds counts the input_required results given to calls of tool,
// and the retries that answered them, and returns the requestState of each
// result ("" for none: a server may keep no state).
func (p *modernPeer) mrtrRounds(t *testing.T, tool string) (inputRequired, retries int, states []string) {
	t.Helper()
	for _, ex := range p.wire.all() {
		var req struct {
			Method string `json:"method"`
			Params struct {
				Name         string          `json:"name"`
				RequestState string          `json:"requestState"`
				Responses    json.RawMessage `json:"inputResponses"`
			} `json:"params"`
		}
		if json.Unmarshal(ex.request, &req) != nil || req.Method != "tools/call" || req.Params.Name != tool {
			continue
		}
		if len(req.Params.Responses) > 0 {
			retries++
		}
		for _, raw := range ex.responseData() {
			var m struct {
				Result struct {
					ResultType    string          `json:"resultType"`
					InputRequests json.RawMessage `json:"inputRequests"`
					RequestState  string          `json:"requestState"`
				} `json:"result"`
			}
			if json.Unmarshal(raw, &m) == nil && m.Result.ResultType == "input_required" {
				if len(m.Result.InputRequests) == 0 {
					t.Errorf("an input_required result without inputRequests: %s", raw)
				}
				inputRequired++
				states = append(states, m.Result.RequestState)
			}
		}
	}
	return inputRequired, retries, states
}

// wantBridgeMRTR checks that calls of tool were asked for input through
// MRTR by the bridge: input_required results, each answered by a retry,
// each with a requestState handle of the bridge's ("mb1.<replica>.…").
func (p *modernPeer) wantBridgeMRTR(t *testing.T, tool string) {
	t.Helper()
	ir, retries, states := p.mrtrRounds(t, tool)
	if ir < 1 || retries != ir {
		t.Errorf("%s: %d input_required results, %d retries; want the child's question asked through MRTR", tool, ir, retries)
	}
	for _, s := range states {
		if !strings.HasPrefix(s, "mb1.") {
			t.Errorf("%s: requestState %q is not a handle of the bridge's", tool, s)
		}
	}
}

// responseData is every JSON-RPC message of the response read so far.
func (ex *exchange) responseData() [][]byte {
	ex.mu.Lock()
	body := slices.Clone(ex.response.Bytes())
	ex.mu.Unlock()
	if !strings.HasPrefix(ex.contentType, "text/event-stream") {
		return [][]byte{body}
	}
	var out [][]byte
	for _, line := range strings.Split(string(body), "\n") {
		if data, ok := strings.CutPrefix(line, "data:"); ok && strings.TrimSpace(data) != "" {
			out = append(out, []byte(strings.TrimSpace(data)))
		}
	}
	return out
}

// waitAcknowledged waits until a subscriptions/listen of the peer has its
// acknowledgement on the wire: go-sdk opens listens without waiting for
// it, and what the server sends before it is not the listen's.
func (p *modernPeer) waitAcknowledged(ctx context.Context, t *testing.T, what string) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, ex := range p.wire.all() {
			var m rpcMessage
			if json.Unmarshal(ex.request, &m) != nil || m.Method != "subscriptions/listen" || !strings.Contains(string(ex.request), what) {
				continue
			}
			for _, raw := range ex.responseData() {
				if strings.Contains(string(raw), `"notifications/subscriptions/acknowledged"`) && strings.Contains(string(raw), what) {
					return
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no acknowledged subscriptions/listen for %s: %v", what, ctx.Err())
		case <-tick.C:
		}
	}
}

// everythingEntry is server-everything's stdio entry point.
func everythingEntry(t *testing.T) string {
	return filepath.Join(testpeers.NodeModules(t), "@modelcontextprotocol", "server-everything", "dist", "index.js")
}

// TestModernGoClientEverything: go-sdk, unpinned, against the bridge in
// front of server-everything (legacy) in each mode; in per-identity mode
// two principals at once.
func TestModernGoClientEverything(t *testing.T) {
	entry := everythingEntry(t)
	node := testpeers.Node(t)
	env := append(environWithout(envPrefix), "ALICE_TOKEN="+tokenAlice, "BOB_TOKEN="+tokenBob)
	for _, tc := range []struct {
		mode   string
		tokens []string
	}{
		{"per-session", []string{""}},
		{"shared", []string{""}},
		{"per-identity", []string{tokenAlice, tokenBob}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			args := []string{"--mode", tc.mode}
			if tc.tokens[0] != "" {
				args = append(args, "--token-env", "ALICE_TOKEN", "--token-env", "BOB_TOKEN")
			}
			p := startBridge(t, env, append(args, "--", node, entry, "stdio")...)
			for i, token := range tc.tokens {
				t.Run(fmt.Sprintf("principal %d", i), func(t *testing.T) {
					t.Parallel()
					checkModernEverything(t, p, token)
				})
			}
		})
	}
}

func checkModernEverything(t *testing.T, p *bridgeProc, token string) {
	ctx, cancel := context.WithTimeout(t.Context(), e2eTimeout)
	defer cancel()
	c := connectModern(ctx, t, p.URL, token, true)
	c.checkHandshake(t, "mcp-servers/everything")

	t.Run("lists", func(t *testing.T) {
		var tools []string
		for tool, err := range c.cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			tools = append(tools, tool.Name)
		}
		for _, want := range []string{"echo", "trigger-long-running-operation", "trigger-sampling-request", "trigger-elicitation-request", "get-roots-list"} {
			if !slices.Contains(tools, want) {
				t.Errorf("tools %q lack %q", tools, want)
			}
		}
		prompts, err := c.cs.ListPrompts(ctx, nil)
		if err != nil || len(prompts.Prompts) == 0 {
			t.Errorf("prompts: %v, %d", err, len(prompts.Prompts))
		}
		resources, err := c.cs.ListResources(ctx, nil)
		if err != nil || len(resources.Resources) == 0 {
			t.Errorf("resources: %v, %d", err, len(resources.Resources))
		}
	})

	t.Run("echo", func(t *testing.T) {
		if got := c.callText(ctx, t, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "modern"}}); got != "Echo: modern" {
			t.Errorf("echo = %q", got)
		}
	})

	t.Run("progress", func(t *testing.T) {
		const steps = 3
		params := &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 0.03, "steps": steps}}
		params.SetProgressToken("modern-1")
		if got := c.callText(ctx, t, params); !strings.Contains(got, "Long running operation completed") {
			t.Errorf("long running operation = %q", got)
		}
		c.wantProgress(ctx, t, "modern-1", steps, steps, steps)
	})

	t.Run("sampling", func(t *testing.T) {
		const prompt = "what is 6*7?"
		got := c.callText(ctx, t, &mcp.CallToolParams{Name: "trigger-sampling-request", Arguments: map[string]any{"prompt": prompt, "maxTokens": 10}})
		asked := receive(ctx, t, c.prompts, "sampling request")
		if !strings.Contains(asked, prompt) || !strings.Contains(got, sampled(asked)) {
			t.Errorf("asked %q, answered %q; want the prompt asked and the handler's answer in the result", asked, got)
		}
		c.wantBridgeMRTR(t, "trigger-sampling-request")
	})

	t.Run("elicitation", func(t *testing.T) {
		got := c.callText(ctx, t, &mcp.CallToolParams{Name: "trigger-elicitation-request"})
		receive(ctx, t, c.asked, "elicitation request")
		if !strings.Contains(got, "Ada Lovelace") {
			t.Errorf("elicitation tool = %q, want the accepted name in it", got)
		}
		c.wantBridgeMRTR(t, "trigger-elicitation-request")
	})

	t.Run("roots", func(t *testing.T) {
		if got := c.callText(ctx, t, &mcp.CallToolParams{Name: "get-roots-list"}); !strings.Contains(got, modernRoot) {
			t.Errorf("get-roots-list = %q, want the client's root %s", got, modernRoot)
		}
	})

	t.Run("listen resource updates", func(t *testing.T) {
		const uri = "demo://resource/static/document/architecture.md"
		if err := c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
		c.waitAcknowledged(ctx, t, uri)
		// server-everything sends updates to what its process was
		// subscribed to when toggle-subscriber-updates runs there: on the
		// pool's base child, where the bridge subscribed for the listen, so
		// from a client that declares nothing (no leased child).
		plain := connectModern(ctx, t, p.URL, token, false)
		plain.callText(ctx, t, &mcp.CallToolParams{Name: "toggle-subscriber-updates"})
		defer plain.callText(ctx, t, &mcp.CallToolParams{Name: "toggle-subscriber-updates"}) // stop them
		if got := receive(ctx, t, c.updated, "resource update"); got != uri {
			t.Errorf("updated %q, want %q", got, uri)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		callCtx, stop := context.WithCancel(ctx)
		params := &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 60, "steps": 600}}
		params.SetProgressToken("modern-cancel")
		done := make(chan error, 1)
		go func() {
			_, err := c.cs.CallTool(callCtx, params)
			done <- err
		}()
		for got := receive(ctx, t, c.progress, "progress of the call to cancel"); got.ProgressToken != "modern-cancel"; {
			got = receive(ctx, t, c.progress, "progress of the call to cancel")
		}
		stop()
		if err := receive(ctx, t, done, "the cancelled call's end"); !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled call: %v, want context.Canceled", err)
		}
		// The bridge cancels the call on its leased child, which is then
		// stopped rather than given to the next call: its late messages
		// could reach it. (Nothing else stops a lease here: every lease
		// stop of this bridge is a cancelled call's.)
		waitLoggedN(t, p, regexp.MustCompile(`msg="child stopped".*leased=true`), int(cancelsOf(p).Add(1)))
		if got := c.callText(ctx, t, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "after"}}); got != "Echo: after" {
			t.Errorf("echo after the cancel = %q", got)
		}
	})
}

// cancels counts the calls the tests cancelled, by bridge.
var cancels sync.Map // *bridgeProc -> *atomic.Int64

func cancelsOf(p *bridgeProc) *atomic.Int64 {
	n, _ := cancels.LoadOrStore(p, new(atomic.Int64))
	return n.(*atomic.Int64)
}

// waitLoggedN waits until the bridge's log has n lines matching rx.
func waitLoggedN(t *testing.T, p *bridgeProc, rx *regexp.Regexp, n int) {
	t.Helper()
	deadline := time.NewTimer(safetyNet)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for len(rx.FindAllString(p.Stderr(), -1)) < n {
		select {
		case <-deadline.C:
			t.Fatalf("the bridge logged fewer than %d lines matching %q; its log:\n%s", n, rx, p.Stderr())
		case <-tick.C:
		}
	}
}

// TestModernGoClientDemo: go-sdk, unpinned, against the bridge in front
// of its built-in conformance server, which speaks 2026-07-28 itself: the bridge finds
// that out with its probe and passes requests through, MRTR and listens
// included, in each mode.
func TestModernGoClientDemo(t *testing.T) {
	for _, mode := range []string{"per-session", "shared", "per-identity"} {
		t.Run(mode, func(t *testing.T) {
			p := startBridge(t, nil, withFixtures(t, "--mode", mode)...)
			checkModernDemo(t, p)
		})
	}
}

func checkModernDemo(t *testing.T, p *bridgeProc) {
	ctx, cancel := context.WithTimeout(t.Context(), e2eTimeout)
	defer cancel()
	c := connectModern(ctx, t, p.URL, "", true)
	c.checkHandshake(t, "mcp-bridge-demo")

	t.Run("progress", func(t *testing.T) {
		params := &mcp.CallToolParams{Name: "test_tool_with_progress"}
		params.SetProgressToken("demo-1")
		c.callText(ctx, t, params)
		c.wantProgress(ctx, t, "demo-1", 3, 100, 100)
	})

	for _, tc := range []struct {
		tool, want string
		rounds     int
	}{
		{"test_input_required_result_elicitation", "Hello, Ada Lovelace!", 1},
		{"test_input_required_result_sampling", "Sampling response: " + sampled("What is the capital of France?"), 1},
		{"test_input_required_result_list_roots", "Client exposed 1 root(s): " + modernRoot, 1},
		{"test_input_required_result_multi_round", "Multi-round complete: Ada Lovelace likes teal", 2},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			if got := c.callText(ctx, t, &mcp.CallToolParams{Name: tc.tool}); got != tc.want {
				t.Errorf("%s = %q, want %q", tc.tool, got, tc.want)
			}
			if ir, retries, _ := c.mrtrRounds(t, tc.tool); ir != tc.rounds || retries != tc.rounds {
				t.Errorf("%d input_required results, %d retries; want %d of each", ir, retries, tc.rounds)
			}
		})
	}

	t.Run("logging", func(t *testing.T) {
		// Without a logLevel the request gets no log message on its
		// stream; with one, it does.
		c.callText(ctx, t, &mcp.CallToolParams{Name: "test_logging_tool"})
		for _, ex := range c.wire.all() {
			if strings.Contains(string(ex.request), `"test_logging_tool"`) {
				for _, raw := range ex.responseData() {
					if strings.Contains(string(raw), `"notifications/message"`) {
						t.Errorf("a log message for a request that asked for none: %s", raw)
					}
				}
			}
		}
		c.callText(ctx, t, &mcp.CallToolParams{Name: "test_logging_tool", Meta: mcp.Meta{mcp.MetaKeyLogLevel: "info"}})
		if got := receive(ctx, t, c.logs, "log message"); got.Data != "test_logging_tool executed" {
			t.Errorf("log %+v", got)
		}
	})

	t.Run("listen tool change", func(t *testing.T) {
		c.waitAcknowledged(ctx, t, "toolsListChanged")
		c.callText(ctx, t, &mcp.CallToolParams{Name: "test_trigger_tool_change"})
		receive(ctx, t, c.toolsChanged, "tools/list_changed")
	})

	t.Run("listen resource updates", func(t *testing.T) {
		const uri = "test://watched-resource"
		if err := c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
		c.waitAcknowledged(ctx, t, uri)
		c.callText(ctx, t, &mcp.CallToolParams{Name: "touch_resource"})
		if got := receive(ctx, t, c.updated, "resource update"); got != uri {
			t.Errorf("updated %q, want %q", got, uri)
		}
	})
}
