package httpapi_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-bridge/mcp-bridge/aggregate"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
)

// serveAggregate serves specs behind m, and the aggregate of them at
// /mcp.
func serveAggregate(t *testing.T, m *httpapi.Mounts, opts httpapi.AggregateOptions, specs ...httpapi.MountSpec) {
	t.Helper()
	if _, err := m.Apply(specs); err != nil {
		t.Fatal(err)
	}
	var members []aggregate.Member
	for _, s := range specs {
		members = append(members, aggregate.Member{Name: s.Name})
	}
	names, err := aggregate.NewNames(members)
	if err != nil {
		t.Fatal(err)
	}
	opts.Names = names
	opts.HTTP.LoopbackOnly = true
	opts.HTTP.Logger = testLogger(t)
	if err := m.ServeAggregate(opts); err != nil {
		t.Fatal(err)
	}
}

// connectAggregate connects the Go SDK's client to the aggregate at srv.
func connectAggregate(t *testing.T, ctx context.Context, srv *httptest.Server, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "aggregate-test", Version: "1"}, opts)
	var so *mcp.ClientSessionOptions
	if version != "" {
		so = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: srv.Client()}, so)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func toolNames(t *testing.T, ctx context.Context, cs *mcp.ClientSession) []string {
	t.Helper()
	var out []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tool.Name)
	}
	return out
}

func resultText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// TestAggregateGoSDK: four badchilds behind /mcp, met by the Go SDK's
// client. Two servers with a tool echo are both reached, each call on its
// own server; a server whose list comes in three pages is merged whole; a
// server that never answers a list is left out of it within the deadline;
// a server's request for sampling reaches the client and its answer the
// server.
func TestAggregateGoSDK(t *testing.T) {
	t.Parallel()
	m, srv := newMounts(t)
	bin := mountSpec(t, "x", "1").Bridge.Command[0]
	serveAggregate(t, m, httpapi.AggregateOptions{ListTimeout: time.Second},
		mountSpec(t, "a", "1"), mountSpec(t, "b", "1"),
		mountSpec(t, "paged", "1", bin, "-tool-pages", "3"),
		mountSpec(t, "hangs", "1", bin, "-hang-lists"))
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cs := connectAggregate(t, ctx, srv, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "test", Role: "assistant", Content: &mcp.TextContent{Text: "sampled for the aggregate"}}, nil
		},
	}, "2025-11-25")

	start := time.Now()
	tools := toolNames(t, ctx, cs)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("tools/list took %v with a server that hangs", took)
	}
	for _, want := range []string{"a__echo", "b__echo", "paged__echo", "a__sample"} {
		if !slices.Contains(tools, want) {
			t.Errorf("tools lack %s: %q", want, tools)
		}
	}
	if slices.ContainsFunc(tools, func(n string) bool { return strings.HasPrefix(n, "hangs__") }) {
		t.Errorf("the hanging server's tools were listed: %q", tools)
	}
	for _, server := range []string{"a", "b", "paged"} {
		msg := "hello " + server
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: server + "__echo", Arguments: map[string]any{"message": msg}})
		if err != nil {
			t.Fatal(err)
		}
		if got := resultText(t, res); got != msg || res.IsError {
			t.Errorf("%s__echo answered %q (isError %v)", server, got, res.IsError)
		}
	}
	// Each echo reached its own server: each counts one.
	for _, server := range []string{"a", "b"} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: server + "__echo_count", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		if got := resultText(t, res); got != "1" {
			t.Errorf("%s__echo_count = %q, want 1", server, got)
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "b__sample", Arguments: map[string]any{"prompt": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); !strings.Contains(got, "sampled for the aggregate") {
		t.Errorf("b__sample answered %q", got)
	}

}
