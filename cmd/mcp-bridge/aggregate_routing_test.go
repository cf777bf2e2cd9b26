package main

// What travels beside the calls on the aggregate endpoint: completions,
// cancellation, the logging level and log messages, the servers' roots
// requests and progress, each to and from the server it concerns, met by
// the Go SDK's client with server-everything and the badchild behind /mcp.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// TestAggregateRouting: through one /mcp, a completion reaches the server
// whose prompt or template it names; a cancelled call ends on its own
// server while the other's call runs on; the logging level reaches every
// server, started before or after it was set, and their log messages the
// client; server-everything's roots/list is answered by the client, at its
// start and after the client's roots changed; and each call's progress
// comes back with the client's own token.
func TestAggregateRouting(t *testing.T) {
	t.Parallel()
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	file := filepath.Join(t.TempDir(), "servers.json")
	cfg := `{"aggregate": true, "mcpServers": {
		"everything": {"command": ` + quote(testpeers.Node(t)) + `, "args": [` + quote(everythingEntry(t)) + `]},
		"child": {"command": ` + quote(testpeers.BuildGo(t, "./testdata/badchild")) + `}}}`
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBridge(t, environWithout(envPrefix), "--config", file, "--stop-grace", "500ms", slowStarts, "30s")
	p.waitLog(`msg="the aggregate endpoint serves these servers as one"`)
	ctx, cancel := context.WithTimeout(t.Context(), 2*safetyNet)
	defer cancel()

	// The handlers hand on what they are sent; a full channel is a test
	// that stopped reading, so what does not fit is dropped, not waited on.
	logs := make(chan string, 256)
	progress := make(chan *mcp.ProgressNotificationParams, 256)
	client := mcp.NewClient(&mcp.Implementation{Name: "aggregate-routing", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			data, _ := json.Marshal(req.Params.Data)
			select {
			case logs <- string(req.Params.Level) + " " + string(data):
			default:
			}
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			select {
			case progress <- req.Params:
			default:
			}
		},
	})
	client.AddRoots(&mcp.Root{URI: "file:///routing/one", Name: "one"})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.Base + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(ctx context.Context, name string, args map[string]any) string {
		t.Helper()
		out, isError := callText(ctx, t, cs, name, args)
		if isError {
			t.Errorf("%s: isError: %q", name, out)
		}
		return out
	}
	// nextLog waits for the next log message the client is sent that
	// holds want.
	nextLog := func(want string) string {
		t.Helper()
		for {
			select {
			case l := <-logs:
				if strings.Contains(l, want) {
					return l
				}
			case <-ctx.Done():
				t.Fatalf("no log message with %q reached the client", want)
			}
		}
	}

	// The level is set before any server's session starts: each gets it
	// when it starts, before the request that started it. At "warning",
	// server-everything's report of the roots it is sent at its start
	// (at "info") is not sent.
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "warning"}); err != nil {
		t.Fatal(err)
	}
	// server-everything asks the client for its roots when it starts, and
	// get-roots-list shows what it was answered.
	if got := call(ctx, "everything__get-roots-list", map[string]any{}); !strings.Contains(got, "file:///routing/one") {
		t.Errorf("everything__get-roots-list: %q, want the client's root", got)
	}
	levels := func() string {
		var calls []string
		_ = json.Unmarshal([]byte(call(ctx, "child__state_calls", map[string]any{})), &calls)
		return strings.Join(calls, "; ")
	}
	if got := levels(); got != `logging/setLevel {"level":"warning"}` {
		t.Errorf("the badchild, started after the level was set, got %s", got)
	}
	// Set again, the level reaches both servers' sessions, up now.
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	if got := levels(); got != `logging/setLevel {"level":"warning"}; logging/setLevel {"level":"info"}` {
		t.Errorf("the badchild's setLevel requests: %s, want info after warning", got)
	}
	// The client's roots change: server-everything is told, asks again and
	// reports it (at "info", now sent). Its report of the first roots,
	// had its level not been "warning" then, would have come first.
	client.AddRoots(&mcp.Root{URI: "file:///routing/two", Name: "two"})
	if got := nextLog("Roots updated"); !strings.Contains(got, "2 root(s)") {
		t.Errorf("server-everything's first roots report to reach the client: %s, want the second roots' (the first was below the level)", got)
	}
	if got := call(ctx, "everything__get-roots-list", map[string]any{}); !strings.Contains(got, "file:///routing/two") {
		t.Errorf("everything__get-roots-list after the roots changed: %q", got)
	}

	// Completions: a prompt's argument and a resource template's variable,
	// each completed by server-everything's own completer.
	comp, err := cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "everything__completable-prompt"},
		Argument: mcp.CompleteParamsArgument{Name: "name", Value: ""},
		Context:  &mcp.CompleteContext{Arguments: map[string]string{"department": "Sales"}},
	})
	if err != nil {
		t.Fatalf("complete a prompt argument: %v", err)
	}
	if got := comp.Completion.Values; !slices.Equal(got, []string{"David", "Eve", "Frank"}) {
		t.Errorf("completable-prompt's name in Sales: %q", got)
	}
	var template string
	for tm, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tm.URITemplate == "mcp-bridge://everything/demo://resource/dynamic/text/{resourceId}" {
			template = tm.URITemplate
		}
	}
	if template == "" {
		t.Fatal("server-everything's text template is not listed")
	}
	for _, c := range []struct {
		value string
		want  []string
	}{{"7", []string{"7"}}, {"x", nil}} {
		comp, err := cs.Complete(ctx, &mcp.CompleteParams{
			Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: template},
			Argument: mcp.CompleteParamsArgument{Name: "resourceId", Value: c.value},
		})
		if err != nil {
			t.Fatalf("complete %s of %s: %v", c.value, template, err)
		}
		if got := comp.Completion.Values; !slices.Equal(got, c.want) {
			t.Errorf("complete resourceId %q: %q, want %q", c.value, got, c.want)
		}
	}

	// Two calls at once, one of each server, each with a progress token of
	// the client's; the badchild's is cancelled after its first step.
	long := make(chan string, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "everything__trigger-long-running-operation", Arguments: map[string]any{"duration": 2, "steps": 2}}
		params.SetProgressToken("everything's")
		res, err := cs.CallTool(ctx, params)
		if err != nil {
			long <- err.Error()
			return
		}
		var out []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				out = append(out, tc.Text)
			}
		}
		long <- strings.Join(out, "\n")
	}()
	slowCtx, stopSlow := context.WithCancel(ctx)
	defer stopSlow()
	slow := make(chan error, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "child__slow", Arguments: map[string]any{"ms": 600_000, "steps": 600}}
		params.SetProgressToken("child's")
		_, err := cs.CallTool(slowCtx, params)
		slow <- err
	}()
	seen := map[any][]float64{}
	for len(seen["child's"]) == 0 {
		select {
		case pr := <-progress:
			seen[pr.ProgressToken] = append(seen[pr.ProgressToken], pr.Progress)
		case <-ctx.Done():
			t.Fatalf("no progress of the badchild's call reached the client: %v", seen)
		}
	}
	if got := nextLog("slow step 1"); !strings.HasPrefix(got, "info ") {
		t.Errorf("the badchild's log message: %s", got)
	}
	stopSlow()
	if err := <-slow; err == nil {
		t.Error("the cancelled call answered")
	}
	// The Go SDK sends notifications/cancelled off the caller's path: the
	// badchild is asked until it has been told.
	var cancels []json.RawMessage
	poll(t, "the badchild to be told of the cancelled call", func() bool {
		got := call(ctx, "child__cancels", map[string]any{})
		return json.Unmarshal([]byte(got), &cancels) == nil && len(cancels) > 0
	})
	if len(cancels) != 1 {
		t.Errorf("the badchild was told to cancel %s, want its one call", cancels)
	}
	if got := <-long; !strings.Contains(got, "Long running operation completed") {
		t.Errorf("server-everything's call beside the cancelled one: %q", got)
	}
	if got := call(ctx, "child__echo", map[string]any{"message": "after"}); got != "after" {
		t.Errorf("the badchild after the cancel: %q", got)
	}
	// The progress of both calls came back with the client's tokens, and
	// only with those.
	for len(seen["everything's"]) < 2 {
		select {
		case pr := <-progress:
			seen[pr.ProgressToken] = append(seen[pr.ProgressToken], pr.Progress)
		case <-ctx.Done():
			t.Fatalf("server-everything's progress did not all reach the client: %v", seen)
		}
	}
	for token := range seen {
		if token != "everything's" && token != "child's" {
			t.Errorf("progress with a token the client never sent: %v", seen)
		}
	}
	if got := seen["everything's"]; !slices.Equal(got, []float64{1, 2}) {
		t.Errorf("server-everything's progress: %v, want steps 1 and 2", got)
	}
}
