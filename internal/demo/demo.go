// Package demo owns the built-in demo MCP servers: the child that
// mcp-bridge spawns as `mcp-bridge demo-server` when it is started without
// a command, and `mcp-bridge conformance-server`, which the tests run.
//
// The demo (NewServer) is what a person meets first, in the web page's
// console or a client's tool list: a handful of things to try, each showing
// one thing the bridge carries: echo, a slow call that reports progress, an
// elicitation, sampling, a resource and a prompt.
//
// The conformance server (NewConformanceServer) exercises every feature the
// bridge must carry: tools that answer at once, tools that stream progress
// and log messages, tools that call back into the client (sampling,
// elicitation, roots), static and templated resources with subscriptions,
// prompts, completion and logging. It implements every server fixture of
// the official conformance suite (@modelcontextprotocol/conformance: 0.1.16,
// and 0.2.0-alpha.12 for 2025-11-25 and 2026-07-28), so that running the
// suite through the bridge grades the bridge, not the child.
//
// Both speak both eras of MCP, as the go-sdk does: a 2025 client
// initializes a session and gets sampling, elicitation and roots as
// requests of their own; a 2026-07-28 client sends its version and
// capabilities in each request's _meta, and gets them as input requests in
// an input_required result (SEP-2322), which its retry answers. A process
// takes the era of its first message. Either way, a tool never asks a
// client for what the client did not declare: it fails with -32021 instead.
package demo

import (
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// implementation names both servers: the same program, two sets.
var implementation = &mcp.Implementation{
	Name:    "mcp-bridge-demo",
	Title:   "mcp-bridge demo server",
	Version: "1.0.0",
}

// NewServer returns the demo: four tools (echo, slow, elicit, sample), a
// resource and a prompt. Each call returns an independent server.
func NewServer() *mcp.Server {
	srv := mcp.NewServer(implementation, &mcp.ServerOptions{
		Instructions: "Demo server of mcp-bridge. Try echo; slow, which reports its progress; elicit, which asks you " +
			"a question; sample, which asks your client's model; read " + aboutURI + "; and the greet prompt.",
	})
	addDemoTools(srv)
	addAbout(srv)
	addGreet(srv)
	return srv
}

// NewConformanceServer returns the conformance server: the demo's tools
// and more, and every fixture of the conformance suite's server scenarios,
// with its resources, prompts and completion. Each call returns an
// independent server, with its own resource revisions and subscriptions.
func NewConformanceServer() *mcp.Server {
	srv := mcp.NewServer(implementation, &mcp.ServerOptions{
		Instructions: "Conformance server of mcp-bridge: the demo's tools and the fixtures of the conformance suite. " +
			"Subscribe to " + watchedURI + " before calling touch_resource.",
		CompletionHandler: complete,
		// The SDK records subscriptions itself and only needs these hooks to
		// advertise resources.subscribe and accept (un)subscribe requests.
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	w := &watched{srv: srv}
	addDemoTools(srv)
	addFixtureTools(srv, w)
	addResources(srv, w)
	addPrompts(srv)
	return srv
}

// Run serves srv (NewServer or NewConformanceServer) over stdin and
// stdout until the client closes stdin or ctx ends. Both are the ordinary
// ways for the bridge to stop its child, so neither is reported as an
// error.
func Run(ctx context.Context, srv *mcp.Server) error {
	err := srv.Run(ctx, &mcp.StdioTransport{})
	if err == nil || ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("demo server: %w", err)
}

// completionKey names one completable argument: a prompt argument
// ("ref/prompt", prompt name) or a resource template variable
// ("ref/resource", URI template).
type completionKey struct{ refType, ref, arg string }

// completions holds the candidate values of every completable argument.
var completions = map[completionKey][]string{
	{"ref/prompt", "test_prompt_with_arguments", "arg1"}:                {"hello", "help", "helium"},
	{"ref/prompt", "test_prompt_with_arguments", "arg2"}:                {"world", "word", "work"},
	{"ref/prompt", "test_prompt_with_embedded_resource", "resourceUri"}: {staticTextURI, staticBinaryURI, watchedURI},
	{"ref/resource", templateURI, "id"}:                                 {"1", "2", "3", "123"},
}

// complete answers completion/complete with the candidates that start with
// what the user has typed so far.
func complete(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	ref, arg := req.Params.Ref, req.Params.Argument
	// The schema requires "values" to be an array: an unknown argument gets
	// an empty one, never null.
	values := []string{}
	for _, v := range completions[completionKey{ref.Type, cmp.Or(ref.Name, ref.URI), arg.Name}] {
		if strings.HasPrefix(v, arg.Value) {
			values = append(values, v)
		}
	}
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: values, Total: len(values)}}, nil
}

// pause waits for d or until ctx ends. Tools use it to take time on purpose,
// the way real work would; it never orders events between goroutines.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Media served by tools, prompts and resources: a 1x1 red PNG and a
// silent WAV, the smallest valid files of their types.
var (
	pngPixel   = mustDecode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")
	wavSilence = mustDecode("UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=")
)

func mustDecode(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic(fmt.Sprintf("demo: bad embedded media: %v", err))
	}
	return b
}
