package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// e2eTimeout bounds each end-to-end test; it only stops a hung bridge from
// stalling the run, and nothing waits for it to pass.
const e2eTimeout = 2 * time.Minute

// TestConformanceThroughBridge runs every server scenario of the official
// conformance suite against the demo server behind the real bridge. Unlike
// the demo's own TestConformance, which borrows the SDK's transport, no
// warning is allowed: the bridge's transport is what is graded here.
//
// The default "auto" response mode answers the sse-polling scenario's quick
// tool call as plain JSON, where the suite finds its priming checks "not
// applicable"; the "sse" mode makes every answer a stream, so the priming
// event and its retry field are graded too.
func TestConformanceThroughBridge(t *testing.T) {
	testpeers.NodeModules(t) // skip before starting a bridge for nothing
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"auto", nil},
		{"sse", []string{"--response-mode", "sse"}},
		{"shared", []string{"--mode", "shared"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startBridge(t, nil, withFixtures(t, tc.args...)...)
			testpeers.RunConformance(t, p.URL)
		})
	}
}

// goPeer is a Go SDK client session through the bridge. Its handlers hand
// what the server sends to buffered channels, which tests drain; wire keeps
// what went over HTTP.
type goPeer struct {
	cs       *mcp.ClientSession
	wire     *wireLog
	progress chan *mcp.ProgressNotificationParams
	logs     chan *mcp.LoggingMessageParams
	updated  chan string
	prompts  chan string // the text of each sampling request
	asked    chan string // the message of each elicitation request
	// dropped counts notifications lost to a full channel, which would
	// otherwise show up as a confusing wait.
	dropped atomic.Int64
}

// peerBuffer is the room in each channel of a goPeer: more than any test
// here makes the server send before draining.
const peerBuffer = 1024

// offer hands v to ch without ever blocking the client's reader.
func offer[T any](p *goPeer, ch chan T, v T) {
	select {
	case ch <- v:
	default:
		p.dropped.Add(1)
	}
}

// sampled is what the peers' sampling handler answers to prompt.
func sampled(prompt string) string { return "sampled: " + prompt }

// contact is what the peers' elicitation handler answers.
var contact = map[string]any{"username": "ada", "email": "ada@example.com"}

// connectGo connects a Go SDK client to url with opts (nil: the SDK's
// defaults) and closes it on cleanup.
func connectGo(ctx context.Context, t *testing.T, url string, opts *mcp.ClientSessionOptions) *goPeer {
	t.Helper()
	p, err := dialGo(ctx, t, url, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// newGoPeer is a peer whose client's handlers hand what the server sends
// to the peer's channels, and answer sampling and elicitation; the caller
// connects it over the transport under test.
func newGoPeer(t *testing.T, name string) (*goPeer, *mcp.Client) {
	p := &goPeer{
		wire:     newWireLog(t),
		progress: make(chan *mcp.ProgressNotificationParams, peerBuffer),
		logs:     make(chan *mcp.LoggingMessageParams, peerBuffer),
		updated:  make(chan string, peerBuffer),
		prompts:  make(chan string, peerBuffer),
		asked:    make(chan string, peerBuffer),
	}
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "0.0.1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			var prompt string
			for _, m := range req.Params.Messages {
				if tc, ok := m.Content.(*mcp.TextContent); ok {
					prompt += tc.Text
				}
			}
			offer(p, p.prompts, prompt)
			return &mcp.CreateMessageResult{Role: "assistant", Model: "e2e-model", Content: &mcp.TextContent{Text: sampled(prompt)}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			offer(p, p.asked, req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: maps.Clone(contact)}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			offer(p, p.progress, req.Params)
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) { offer(p, p.logs, req.Params) },
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			offer(p, p.updated, req.Params.URI)
		},
	})
	return p, client
}

// dialGo is connectGo for goroutines other than the test's, which must not
// call t.Fatal.
func dialGo(ctx context.Context, t *testing.T, url string, opts *mcp.ClientSessionOptions) (*goPeer, error) {
	p, client := newGoPeer(t, "mcp-bridge-e2e")
	transport := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: p.wire}}
	cs, err := client.Connect(ctx, transport, opts)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	p.cs = cs
	t.Cleanup(func() { cs.Close() }) // a second Close is a no-op
	return p, nil
}

// callText calls a tool and returns the text of its result, failing the
// test on an error of either kind.
func (p *goPeer) callText(ctx context.Context, t testing.TB, params *mcp.CallToolParams) string {
	t.Helper()
	text, err := p.call(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// call is callText for goroutines other than the test's.
func (p *goPeer) call(ctx context.Context, params *mcp.CallToolParams) (string, error) {
	res, err := p.cs.CallTool(ctx, params)
	if err != nil {
		return "", fmt.Errorf("call %s: %w", params.Name, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return "", fmt.Errorf("call %s: tool error: %s", params.Name, text.String())
	}
	return text.String(), nil
}

// toolNames lists the server's tools, all pages.
func (p *goPeer) toolNames(ctx context.Context, t testing.TB) []string {
	t.Helper()
	var names []string
	for tool, err := range p.cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("list tools: %v", err)
		}
		names = append(names, tool.Name)
	}
	return names
}

// receive returns the next value of ch, failing the test if ctx ends first.
func receive[T any](ctx context.Context, t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	v, err := recv(ctx, ch, what)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// recv is receive for goroutines other than the test's.
func recv[T any](ctx context.Context, ch <-chan T, what string) (T, error) {
	select {
	case v := <-ch:
		return v, nil
	case <-ctx.Done():
		var zero T
		return zero, fmt.Errorf("waiting for %s: %w", what, ctx.Err())
	}
}

// wantProgress receives n progress notifications of the call with token
// and checks that they increase, each of total, ending at last.
func (p *goPeer) wantProgress(ctx context.Context, t testing.TB, token any, n int, total, last float64) {
	t.Helper()
	prev := -1.0
	for i := range n {
		got := receive(ctx, t, p.progress, fmt.Sprintf("progress #%d (%d dropped)", i, p.dropped.Load()))
		if got.ProgressToken != token || got.Total != total || got.Progress <= prev {
			t.Errorf("progress #%d = token %v, %v of %v; want token %v, more than %v of %v",
				i, got.ProgressToken, got.Progress, got.Total, token, prev, total)
		}
		prev = got.Progress
	}
	if prev != last {
		t.Errorf("last progress = %v, want %v", prev, last)
	}
}

// TestGoSDKClient drives the conformance server behind the bridge with the official Go
// SDK client, at each protocol version the bridge serves, through every
// feature that crosses it in both directions.
func TestGoSDKClient(t *testing.T) { forEachMode(t, testGoSDKClient) }

func testGoSDKClient(t *testing.T, mode string) {
	p := startBridge(t, nil, withFixtures(t, "--mode", mode)...)
	for _, tc := range []struct {
		name string
		opts *mcp.ClientSessionOptions
		want string // negotiated protocol version
		// probe: the SDK first sends 2026-07-28's server/discover, which
		// the bridge serves: the SDK then stays in that era, without a
		// session.
		probe bool
	}{
		{"2025-11-25", &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}, "2025-11-25", false},
		{"2025-06-18", &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"}, "2025-06-18", false},
		{"2025-03-26", &mcp.ClientSessionOptions{ProtocolVersion: "2025-03-26"}, "2025-03-26", false},
		{"unpinned", nil, "2026-07-28", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), e2eTimeout)
			defer cancel()
			c := connectGo(ctx, t, p.URL, tc.opts)
			if got := c.cs.InitializeResult().ProtocolVersion; got != tc.want {
				t.Fatalf("negotiated %s, want %s", got, tc.want)
			}
			t.Run("handshake", func(t *testing.T) { testHandshake(t, c, tc.probe) })
			t.Run("tools", func(t *testing.T) {
				tools := c.toolNames(ctx, t)
				for _, want := range []string{"echo", "slow", "sample", "elicit", "touch_resource"} {
					if !slices.Contains(tools, want) {
						t.Errorf("tools %q lack %q", tools, want)
					}
				}
			})
			t.Run("echo", func(t *testing.T) {
				msg := "hello over " + tc.name
				if got := c.callText(ctx, t, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": msg}}); got != msg {
					t.Errorf("echo = %q, want %q", got, msg)
				}
			})
			if tc.probe {
				// 2026-07-28 has no logging/setLevel (a request asks for
				// logs in its _meta), no session to close.
				t.Run("progress", func(t *testing.T) {
					params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"steps": 3, "delay_ms": 1}}
					params.SetProgressToken("slow-1")
					if got, want := c.callText(ctx, t, params), "Completed 3 steps"; got != want {
						t.Errorf("slow = %q, want %q", got, want)
					}
					c.wantProgress(ctx, t, "slow-1", 4, 3, 3)
				})
			} else {
				t.Run("progress and logging", func(t *testing.T) { testSlow(ctx, t, c) })
			}
			t.Run("sampling", func(t *testing.T) {
				const prompt = "what is 6*7?"
				got := c.callText(ctx, t, &mcp.CallToolParams{Name: "sample", Arguments: map[string]any{"prompt": prompt}})
				if asked := receive(ctx, t, c.prompts, "sampling request"); asked != prompt {
					t.Errorf("the client was asked %q, want %q", asked, prompt)
				}
				if want := "LLM response: " + sampled(prompt); got != want {
					t.Errorf("sample = %q, want %q", got, want)
				}
			})
			t.Run("elicitation", func(t *testing.T) {
				const question = "Who are you?"
				got := c.callText(ctx, t, &mcp.CallToolParams{Name: "elicit", Arguments: map[string]any{"message": question}})
				if asked := receive(ctx, t, c.asked, "elicitation request"); asked != question {
					t.Errorf("the user was asked %q, want %q", asked, question)
				}
				if want := `User response: action=accept, content={"email":"ada@example.com","username":"ada"}`; got != want {
					t.Errorf("elicit = %q, want %q", got, want)
				}
			})
			t.Run("subscription", func(t *testing.T) {
				const uri = "test://watched-resource"
				if err := c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
					t.Fatal(err)
				}
				c.callText(ctx, t, &mcp.CallToolParams{Name: "touch_resource"})
				if got := receive(ctx, t, c.updated, "resources/updated"); got != uri {
					t.Errorf("updated %q, want %q", got, uri)
				}
			})
			if tc.probe {
				t.Run("close", func(t *testing.T) {
					if err := c.cs.Close(); err != nil {
						t.Fatalf("close: %v", err)
					}
					for _, ex := range c.wire.all() {
						if ex.method == http.MethodDelete || ex.method == http.MethodGet {
							t.Errorf("a 2026-07-28 client sent %s: it has no session", ex.method)
						}
					}
				})
				return
			}
			t.Run("close", func(t *testing.T) { testClose(ctx, t, p, c) })
		})
	}
}

// testHandshake checks the first exchanges on the wire: with probe, a
// server/discover the bridge refuses with a 400, then initialize.
func testHandshake(t *testing.T, c *goPeer, probe bool) {
	var methods []string
	var statuses []int
	for _, ex := range c.wire.all() {
		if ex.method != http.MethodPost {
			continue
		}
		var req rpcMessage
		if json.Unmarshal(ex.request, &req) == nil && req.Method != "" {
			methods = append(methods, req.Method)
			statuses = append(statuses, ex.status)
		}
	}
	want := []string{"initialize", "notifications/initialized"}
	wantStatus := []int{http.StatusOK, http.StatusAccepted}
	if probe {
		// Discovery answered, and no initialize after it.
		want, wantStatus = []string{"server/discover"}, []int{http.StatusOK}
		if slices.Contains(methods, "initialize") {
			t.Errorf("a 2026-07-28 client initialized: %q", methods)
		}
	}
	if len(methods) < len(want) || !slices.Equal(methods[:len(want)], want) || !slices.Equal(statuses[:len(want)], wantStatus) {
		t.Errorf("first POSTs = %q with statuses %v, want %q with %v", methods, statuses, want, wantStatus)
	}
}

// testSlow calls slow with a progress token after raising the logging
// level, and checks what the client saw and the order on the wire: every
// progress notification before the result, on the call's own stream.
func testSlow(ctx context.Context, t *testing.T, c *goPeer) {
	checkSlow(ctx, t, c)

	// The client's handlers may run after CallTool returns; the wire says
	// what the bridge sent, and in which order.
	ex := c.wire.find(t, func(m rpcMessage) bool { return m.progressToken() == `"slow-1"` })
	var order []string
	for _, m := range ex.messages(t) {
		switch {
		case m.Method == "notifications/progress":
			order = append(order, "progress")
		case m.Method == "":
			order = append(order, "result")
		}
	}
	want := []string{"progress", "progress", "progress", "progress", "result"}
	if !slices.Equal(order, want) {
		t.Errorf("the slow call's stream (%s) carried %q, want %q", ex.contentType, order, want)
	}
}

// checkSlow calls slow (token "slow-1") after raising the logging level
// and checks what the client saw: the result, increasing progress, and
// one info log per step.
func checkSlow(ctx context.Context, t *testing.T, c *goPeer) {
	const steps = 3
	if err := c.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"steps": steps, "delay_ms": 1}}
	params.SetProgressToken("slow-1")
	if got, want := c.callText(ctx, t, params), "Completed 3 steps"; got != want {
		t.Errorf("slow = %q, want %q", got, want)
	}
	c.wantProgress(ctx, t, "slow-1", steps+1, steps, steps)
	for i := range steps + 1 {
		l := receive(ctx, t, c.logs, "log message")
		if want := fmt.Sprintf("step %d of %d", i, steps); l.Level != "info" || l.Data != want {
			t.Errorf("log #%d = %s %v, want info %q", i, l.Level, l.Data, want)
		}
	}
}

// testClose closes the session and checks that the bridge deleted it: the
// client's DELETE succeeded and the old session id is now unknown.
func testClose(ctx context.Context, t *testing.T, p *bridgeProc, c *goPeer) {
	sid := c.cs.ID()
	if sid == "" {
		t.Fatal("no session id")
	}
	if err := c.cs.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	var deleted []int
	for _, ex := range c.wire.all() {
		if ex.method == http.MethodDelete {
			deleted = append(deleted, ex.status)
		}
	}
	if !slices.Equal(deleted, []int{http.StatusOK}) {
		t.Errorf("DELETE statuses = %v, want [200]", deleted)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST with the closed session's id: %s %s, want 404", resp.Status, body)
	}
}

// TestTypeScriptSDKClient drives the demo behind the bridge with the
// official TypeScript SDK client (testdata/node/tsclient.mjs).
func TestTypeScriptSDKClient(t *testing.T) { forEachMode(t, testTypeScriptSDKClient) }

func testTypeScriptSDKClient(t *testing.T, mode string) {
	testpeers.NodeModules(t)
	p := startBridge(t, nil, "--mode", mode)
	res := testpeers.RunTSClient(t, "streamable", p.URL)
	checkTSResult(t, res, "hello from ts", "slow", "sample")
	if want := "LLM response: sampled:hi"; res.Sample != want {
		t.Errorf("sample = %q, want %q", res.Sample, want)
	}
}

// TestTypeScriptSDKClientsShared runs real TypeScript SDK clients at once
// against one shared child: 2, then 10. Every client numbers its requests
// alike (the SDK counts from 0) and uses a request's id as its progress
// token, so ids and tokens collide on purpose; each client echoes a message
// of its own, which must come back to it exactly. Sampling is skipped: with
// several sessions' requests in flight the bridge refuses a server's
// request as ambiguous, by design (TestSharedSampling).
func TestTypeScriptSDKClientsShared(t *testing.T) {
	ts := testpeers.NewTSClient(t)
	p := startBridge(t, nil, "--mode", "shared")
	ctx, cancel := context.WithTimeout(t.Context(), e2eTimeout)
	defer cancel()
	var shared []int // the bridge's children: the shared one, the same every round
	for _, clients := range []int{2, 10} {
		t.Run(fmt.Sprintf("%d clients", clients), func(t *testing.T) {
			results := make([]testpeers.TSResult, clients)
			errs := make([]error, clients)
			var wg sync.WaitGroup
			for i := range clients {
				wg.Go(func() {
					results[i], errs[i] = ts.Run(ctx, "streamable", p.URL, []string{
						"TSCLIENT_SKIP=sample",
						fmt.Sprintf("TSCLIENT_MESSAGE=hello from ts client %d of %d", i, clients),
					})
				})
			}
			wg.Wait()
			var sids []string
			for i, res := range results {
				if errs[i] != nil {
					t.Errorf("client %d: %v", i, errs[i])
					continue
				}
				if len(res.Errors) > 0 {
					t.Errorf("client %d errors: %q", i, res.Errors)
				}
				if res.ProtocolVersion != "2025-11-25" {
					t.Errorf("client %d negotiated %q, want 2025-11-25", i, res.ProtocolVersion)
				}
				if want := fmt.Sprintf("hello from ts client %d of %d", i, clients); res.Echo != want {
					t.Errorf("client %d: echo = %q, want %q", i, res.Echo, want)
				}
				if res.Sample != "" {
					t.Errorf("client %d called sample although told to skip it: %q", i, res.Sample)
				}
				// The demo's slow reports 0..3 of 3; the client may miss
				// the last (typescript-sdk#2580). Another client's,
				// under the same token, would break the order or the count.
				if len(res.Progress) == 0 || len(res.Progress) > 4 || !slices.IsSorted(res.Progress) ||
					len(slices.Compact(slices.Clone(res.Progress))) != len(res.Progress) || res.Progress[len(res.Progress)-1] > 3 {
					t.Errorf("client %d: progress %v, want some of 0, 1, 2, 3 in order", i, res.Progress)
				}
				for _, w := range res.Warnings {
					t.Logf("client %d warning: %s", i, w)
				}
				sids = append(sids, res.SessionID)
			}
			slices.Sort(sids)
			if len(slices.Compact(sids)) != clients || sids[0] == "" {
				t.Errorf("session ids %q: want %d distinct", sids, clients)
			}
			children := childrenOf(t, p.cmd.Process.Pid)
			if len(children) != 1 || (shared != nil && !slices.Equal(children, shared)) {
				t.Errorf("the bridge runs children %v (before: %v); want one shared child, the same throughout", children, shared)
			}
			shared = children
		})
	}
}

// childrenOf lists the child processes of pid, sorted.
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue // the thread ended meanwhile
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range strings.Fields(string(b)) {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("/proc/%d/task/%s/children: %v", pid, task.Name(), err)
			}
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// checkTSResult checks what tsclient.mjs saw: the echo, the tools it
// needs, some progress, a sampled answer. The TS SDK may drop the last
// progress notification (typescript-sdk#2580), so no exact values.
func checkTSResult(t *testing.T, res testpeers.TSResult, echo string, tools ...string) {
	t.Helper()
	if len(res.Errors) > 0 {
		t.Errorf("tsclient errors: %q", res.Errors)
	}
	if res.SessionID == "" {
		t.Error("tsclient got no session id")
	}
	if res.ProtocolVersion != "2025-11-25" {
		t.Errorf("tsclient negotiated %q, want 2025-11-25", res.ProtocolVersion)
	}
	if !strings.Contains(res.Echo, echo) {
		t.Errorf("echo = %q, want it to contain %q", res.Echo, echo)
	}
	for _, want := range tools {
		if !slices.Contains(res.Tools, want) {
			t.Errorf("tools %q lack %q", res.Tools, want)
		}
	}
	if len(res.Progress) == 0 {
		t.Error("no progress notifications")
	}
	if !strings.Contains(res.Sample, "sampled:") {
		t.Errorf("sample = %q, want the sampling handler's answer", res.Sample)
	}
	for _, w := range res.Warnings {
		t.Logf("tsclient warning: %s", w)
	}
}

// TestServerEverything serves the reference server-everything (Node, stdio)
// behind the bridge, a server the bridge's authors did not write, to the
// Go and TypeScript SDK clients and to many Go sessions at once.
// checkEverything calls server-everything's echo, a long-running
// operation with progress, and a tool that asks the client for sampling.
func checkEverything(ctx context.Context, t *testing.T, c *goPeer) {
	t.Helper()
	if got := c.callText(ctx, t, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}); got != "Echo: hi" {
		t.Errorf("echo = %q, want %q", got, "Echo: hi")
	}

	const steps = 3
	params := &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 0.03, "steps": steps}}
	params.SetProgressToken("everything-1")
	if got := c.callText(ctx, t, params); !strings.Contains(got, "Long running operation completed") {
		t.Errorf("long running operation = %q", got)
	}
	c.wantProgress(ctx, t, "everything-1", steps, steps, steps) // 1..steps

	const prompt = "what is 6*7?"
	got := c.callText(ctx, t, &mcp.CallToolParams{Name: "trigger-sampling-request", Arguments: map[string]any{"prompt": prompt, "maxTokens": 10}})
	asked := receive(ctx, t, c.prompts, "sampling request")
	if !strings.Contains(asked, prompt) {
		t.Errorf("the client was asked %q, want it to contain %q", asked, prompt)
	}
	if !strings.Contains(got, sampled(asked)) {
		t.Errorf("sampling tool = %q, want it to contain the handler's answer %q", got, sampled(asked))
	}
}

func TestServerEverything(t *testing.T) {
	entry := filepath.Join(testpeers.NodeModules(t), "@modelcontextprotocol", "server-everything", "dist", "index.js")
	p := startBridge(t, nil, "--", testpeers.Node(t), entry, "stdio")
	ctx, cancel := context.WithTimeout(t.Context(), e2eTimeout)
	defer cancel()

	t.Run("go client", func(t *testing.T) {
		c := connectGo(ctx, t, p.URL, nil)
		tools := c.toolNames(ctx, t)
		for _, want := range []string{"echo", "trigger-long-running-operation", "trigger-sampling-request"} {
			if !slices.Contains(tools, want) {
				t.Errorf("tools %q lack %q", tools, want)
			}
		}
		checkEverything(ctx, t, c)
	})

	t.Run("typescript client", func(t *testing.T) {
		res := testpeers.RunTSClient(t, "streamable", p.URL)
		checkTSResult(t, res, "Echo: hello from ts", "trigger-long-running-operation", "trigger-sampling-request")
		if res.ServerName != "mcp-servers/everything" {
			t.Errorf("server name = %q", res.ServerName)
		}
	})

	t.Run("concurrent sessions", func(t *testing.T) {
		const sessions, calls = 10, 20
		var wg sync.WaitGroup
		for s := range sessions {
			wg.Go(func() {
				c, err := dialGo(ctx, t, p.URL, nil)
				if err != nil {
					t.Errorf("session %d: %v", s, err)
					return
				}
				defer c.cs.Close() // here rather than on cleanup: the sessions end in parallel
				for i := range calls {
					msg := fmt.Sprintf("session %d (%s) call %d", s, c.cs.ID(), i)
					got, err := c.call(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": msg}})
					if err != nil {
						t.Errorf("session %d: %v", s, err)
						return
					}
					if got != "Echo: "+msg {
						t.Errorf("session %d: echo %q answered %q", s, msg, got)
					}
				}
			})
		}
		wg.Wait()
	})
}

// TestConcurrentSessions runs many demo sessions at once, each with calls
// in parallel, and checks that nothing crosses between sessions or calls:
// every echo answer is the caller's own, and every progress notification
// reaches the session and call it belongs to, although all sessions use
// the same progress token.
func TestConcurrentSessions(t *testing.T) { forEachMode(t, testConcurrentSessions) }

func testConcurrentSessions(t *testing.T, mode string) {
	const (
		sessions  = 50
		echoes    = 50
		workers   = 5     // echo calls in flight per session
		slowCalls = 1     // each slow call has its own step count, and the demo allows 100 at most
		token     = "tok" // the same in every session, on purpose
	)
	p := startBridge(t, nil, "--mode", mode)
	ctx, cancel := context.WithTimeout(t.Context(), e2eTimeout)
	defer cancel()

	// stepsOf gives every slow call of the run its own step count, which is
	// also the total of its progress notifications: a notification names
	// the call it belongs to.
	stepsOf := func(session, call int) int { return 2 + session*slowCalls + call }

	var wg sync.WaitGroup
	sids := make([]string, sessions)
	for s := range sessions {
		wg.Go(func() {
			c, err := dialGo(ctx, t, p.URL, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Errorf("session %d: %v", s, err)
				return
			}
			defer c.cs.Close() // here rather than on cleanup: the sessions end in parallel
			sids[s] = c.cs.ID()

			var calls sync.WaitGroup
			next := make(chan int)
			for range workers {
				calls.Go(func() {
					for i := range next {
						msg := fmt.Sprintf("session %d (%s) echo %d", s, c.cs.ID(), i)
						got, err := c.call(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": msg}})
						if err != nil {
							t.Errorf("session %d: %v", s, err)
						} else if got != msg {
							t.Errorf("echo %q answered %q", msg, got)
						}
					}
				})
			}
			// The slow calls run one after another, since a token must be
			// unique among a session's requests in flight, but alongside
			// the echoes.
			calls.Go(func() {
				for call := range slowCalls {
					steps := stepsOf(s, call)
					params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"steps": steps, "delay_ms": 1}}
					params.SetProgressToken(token)
					got, err := c.call(ctx, params)
					if err != nil {
						t.Errorf("session %d: %v", s, err)
					} else if want := fmt.Sprintf("Completed %d steps", steps); got != want {
						t.Errorf("session %d slow call %d = %q, want %q", s, call, got, want)
					}
				}
			})
			for i := range echoes {
				next <- i
			}
			close(next)
			calls.Wait()

			// Each call's notifications, in order: progress 0..steps of
			// total steps. One of any other total is another session's.
			seen := make(map[float64]float64) // total -> last progress
			want := 0
			for call := range slowCalls {
				want += stepsOf(s, call) + 1
				seen[float64(stepsOf(s, call))] = -1
			}
			for i := range want {
				n, err := recv(ctx, c.progress, fmt.Sprintf("session %d progress #%d (%d dropped)", s, i, c.dropped.Load()))
				if err != nil {
					t.Error(err)
					return
				}
				last, mine := seen[n.Total]
				switch {
				case !mine || n.ProgressToken != token:
					t.Errorf("session %d got a foreign progress notification: token %v, %v of %v", s, n.ProgressToken, n.Progress, n.Total)
				case n.Progress != last+1:
					t.Errorf("session %d: progress %v of %v after %v", s, n.Progress, n.Total, last)
				default:
					seen[n.Total] = n.Progress
				}
			}
		})
	}
	wg.Wait()
	slices.Sort(sids)
	if len(slices.Compact(sids)) != sessions {
		t.Errorf("session ids are not distinct: %q", sids)
	}
}

// wireLog is an http.RoundTripper that keeps, for every request a client
// sends, its body and every byte of the response the client has read, in
// order: what went over the wire, whatever the client's handlers did with it.
type wireLog struct {
	tr *http.Transport

	mu        sync.Mutex
	exchanges []*exchange
}

// exchange is one HTTP request and its response.
type exchange struct {
	method      string // HTTP method
	request     []byte // body
	status      int
	contentType string

	mu       sync.Mutex
	response bytes.Buffer // the part of the body read so far
}

func newWireLog(t *testing.T) *wireLog {
	w := &wireLog{tr: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(w.tr.CloseIdleConnections)
	return w
}

func (w *wireLog) RoundTrip(req *http.Request) (*http.Response, error) {
	ex := &exchange{method: req.Method}
	if req.Body != nil {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		ex.request = body
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := w.tr.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	ex.status, ex.contentType = resp.StatusCode, resp.Header.Get("Content-Type")
	resp.Body = &teeBody{ReadCloser: resp.Body, ex: ex}
	w.mu.Lock()
	w.exchanges = append(w.exchanges, ex)
	w.mu.Unlock()
	return resp, nil
}

func (w *wireLog) all() []*exchange {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.exchanges)
}

// find returns the one POST whose JSON-RPC request matches.
func (w *wireLog) find(t *testing.T, match func(rpcMessage) bool) *exchange {
	t.Helper()
	var found []*exchange
	for _, ex := range w.all() {
		var m rpcMessage
		if ex.method == http.MethodPost && json.Unmarshal(ex.request, &m) == nil && match(m) {
			found = append(found, ex)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d matching requests on the wire, want 1", len(found))
	}
	return found[0]
}

// messages parses the JSON-RPC messages of the response read so far: a
// JSON body, or the data of each SSE event (the bridge writes one line of
// JSON per event; priming events have empty data).
func (ex *exchange) messages(t *testing.T) []rpcMessage {
	t.Helper()
	ex.mu.Lock()
	body := bytes.Clone(ex.response.Bytes())
	ex.mu.Unlock()
	var datas [][]byte
	if strings.HasPrefix(ex.contentType, "text/event-stream") {
		for line := range bytes.Lines(body) {
			if data, ok := bytes.CutPrefix(line, []byte("data:")); ok && len(bytes.TrimSpace(data)) > 0 {
				datas = append(datas, data)
			}
		}
	} else {
		datas = append(datas, body)
	}
	var msgs []rpcMessage
	for _, d := range datas {
		var m rpcMessage
		if err := json.Unmarshal(d, &m); err != nil {
			t.Fatalf("response event %q: %v", d, err)
		}
		msgs = append(msgs, m)
	}
	return msgs
}

type teeBody struct {
	io.ReadCloser
	ex *exchange
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.ex.mu.Lock()
	b.ex.response.Write(p[:n])
	b.ex.mu.Unlock()
	return n, err
}

// rpcMessage is the part of a JSON-RPC message the wire checks look at.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Meta struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	} `json:"params"`
}

// progressToken is the request's progress token as raw JSON, or "".
func (m rpcMessage) progressToken() string { return string(m.Params.Meta.ProgressToken) }

// forEachMode runs a test against a bridge in each session mode: a child
// per session, and one child shared by every session.
func forEachMode(t *testing.T, test func(*testing.T, string)) {
	for _, mode := range []string{"per-session", "shared"} {
		t.Run(mode, func(t *testing.T) { test(t, mode) })
	}
}
