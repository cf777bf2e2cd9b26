package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-bridge/mcp-bridge/aggregate"
	"github.com/mcp-bridge/mcp-bridge/approval"
	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
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

	// The hanging server never answers: the list comes at all only
	// because its deadline ends the wait for it.
	tools := toolNames(t, ctx, cs)
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

// onToolsChanged is a client's handler of tools/list_changed that tells
// changed, without ever blocking the client.
func onToolsChanged(changed chan<- struct{}) func(context.Context, *mcp.ToolListChangedRequest) {
	return func(context.Context, *mcp.ToolListChangedRequest) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
}

// TestAggregateServerDown: a server's child dies under a call: the call
// gets a result with isError naming the server, the other server goes on
// answering, the client is told its tools may have changed, and the
// server comes back at the next call.
func TestAggregateServerDown(t *testing.T) {
	t.Parallel()
	m, srv := newMounts(t)
	serveAggregate(t, m, httpapi.AggregateOptions{}, mountSpec(t, "a", "1"), mountSpec(t, "b", "1"))
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	changed := make(chan struct{}, 16)
	cs := connectAggregate(t, ctx, srv, &mcp.ClientOptions{ToolListChangedHandler: onToolsChanged(changed)}, "2025-11-25")
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	pid := resultText(t, call("a__pid", map[string]any{}))
	if res := call("b__echo", map[string]any{"message": "before"}); resultText(t, res) != "before" {
		t.Fatalf("b__echo answered %q", resultText(t, res))
	}
	res := call("a__crash", map[string]any{"code": 3})
	if got := resultText(t, res); !res.IsError || !strings.Contains(got, `server "a"`) {
		t.Errorf("a call whose server died answered %q (isError %v), want isError naming server a", got, res.IsError)
	}
	if res := call("b__echo", map[string]any{"message": "after"}); resultText(t, res) != "after" || res.IsError {
		t.Errorf("b__echo after a died answered %q", resultText(t, res))
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no notifications/tools/list_changed after a server went down")
	}
	if got := resultText(t, call("a__pid", map[string]any{})); got == pid || got == "" {
		t.Errorf("a came back on pid %q, was %q: want a new child", got, pid)
	}
	if res := call("a__echo", map[string]any{"message": "back"}); resultText(t, res) != "back" {
		t.Errorf("a__echo after a came back answered %q", resultText(t, res))
	}
}

// TestAggregateRemovedServer: a server no longer served answers its
// tools' calls with isError naming it, and the others keep working.
func TestAggregateRemovedServer(t *testing.T) {
	t.Parallel()
	m, srv := newMounts(t)
	a, b := mountSpec(t, "a", "1"), mountSpec(t, "b", "1")
	serveAggregate(t, m, httpapi.AggregateOptions{}, a, b)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cs := connectAggregate(t, ctx, srv, nil, "2025-11-25")
	if _, err := m.Apply([]httpapi.MountSpec{b}); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__echo", Arguments: map[string]any{"message": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); !res.IsError || !strings.Contains(got, `server "a"`) {
		t.Errorf("a__echo with a removed answered %q (isError %v)", got, res.IsError)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "b__echo", Arguments: map[string]any{"message": "x"}})
	if err != nil || resultText(t, res) != "x" {
		t.Errorf("b__echo: %v %v", res, err)
	}
	tools := toolNames(t, ctx, cs)
	if slices.ContainsFunc(tools, func(n string) bool { return strings.HasPrefix(n, "a__") }) || !slices.Contains(tools, "b__echo") {
		t.Errorf("tools with a removed: %q", tools)
	}
}

// TestAggregateHeldCall: a call a server's approval rule holds is never
// sent to the server from the aggregate endpoint, and a call its tool
// policy denies neither; each is answered with why, and the audit line
// names the server.
func TestAggregateHeldCall(t *testing.T) {
	t.Parallel()
	m, srv := newMounts(t)
	a := mountSpec(t, "a", "1")
	a.HTTP.Approval = approval.NewPolicy("a", []approval.Rule{mustApprovalRule("*=echo")}, false)
	a.HTTP.ToolPolicy = auth.NewToolPolicy([]auth.ToolRule{{Subject: "*", Glob: "crash", Deny: true}})
	var audit syncBuffer
	if _, err := m.Apply([]httpapi.MountSpec{a}); err != nil {
		t.Fatal(err)
	}
	names, _ := aggregate.NewNames([]aggregate.Member{{Name: "a"}})
	if err := m.ServeAggregate(httpapi.AggregateOptions{Names: names, HTTP: httpapi.Options{LoopbackOnly: true, Logger: testLogger(t), Audit: &audit}}); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, srv: srv, url: srv.URL + "/mcp", client: srv.Client()}
	sid := e.initialize("2025-11-25")
	for _, c := range []struct{ tool, want string }{
		// Rules without an engine to ask: nobody could say yes.
		{"a__echo", "needs a human's approval"},
		{"a__crash", "not allowed for this principal"},
	} {
		_, msgs := e.call(sid, 1, c.tool, map[string]any{"message": "held"})
		if len(msgs) != 1 || !strings.Contains(fmt.Sprint(msgs[0]["error"], msgs[0]["result"]), c.want) {
			t.Errorf("%s answered %v, want an error saying %q", c.tool, msgs, c.want)
		}
	}
	// The tool policy hides what it denies from the list too.
	list := fmt.Sprint(readMessages(t, e.do(req{sid: sid, body: `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`})))
	if !strings.Contains(list, "a__echo_count") || strings.Contains(list, "a__crash") {
		t.Errorf("tools/list with crash denied: %s", list)
	}
	_, msgs := e.call(sid, 2, "a__echo_count", map[string]any{})
	if got := fmt.Sprint(msgs); !strings.Contains(got, `text:0`) {
		t.Errorf("a__echo_count after a held echo: %s, want 0: the held call reached the server", got)
	}
	if lines := audit.String(); !strings.Contains(lines, `"tool":"a__echo","server":"a","outcome":"denied"`) {
		t.Errorf("audit log lacks the denied a__echo with its server:\n%s", lines)
	}
}

// TestAggregateCursor: the aggregate's own cursors page its list, and a
// cursor it did not give gets -32602.
func TestAggregateCursor(t *testing.T) {
	t.Parallel()
	m, srv := newMounts(t)
	serveAggregate(t, m, httpapi.AggregateOptions{}, mountSpec(t, "a", "1"))
	e := &env{t: t, srv: srv, url: srv.URL + "/mcp", client: srv.Client()}
	sid := e.initialize("2025-11-25")
	for _, cursor := range []string{"bogus", "page-2"} {
		resp := e.do(req{sid: sid, body: `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"` + cursor + `"}}`})
		msgs := readMessages(t, resp)
		if len(msgs) != 1 || fmt.Sprint(msgs[0]["error"]) == "<nil>" || fmt.Sprint(msgs[0]["error"].(map[string]any)["code"]) != "-32602" {
			t.Errorf("cursor %q answered %v, want -32602", cursor, msgs)
		}
	}
}

// TestAggregateWebAndMetrics: the web page offers the aggregate endpoint
// and its feed shows its servers, their state and what its lists dropped
// (a rename that shadows another of the server's tools), with the fix;
// /metrics counts its lists and its problems.
func TestAggregateWebAndMetrics(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := httpapi.NewMounts(httpapi.MountsOptions{Logger: testLogger(t), Web: &httpapi.MountsWeb{Context: ctx}})
	srv := httptest.NewServer(m)
	t.Cleanup(func() {
		cancel()
		srv.CloseClientConnections()
		srv.Close()
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		_ = m.Close(cctx)
	})
	if _, err := m.Apply([]httpapi.MountSpec{mountSpec(t, "a", "1"), mountSpec(t, "b", "1")}); err != nil {
		t.Fatal(err)
	}
	names, err := aggregate.NewNames([]aggregate.Member{{Name: "a", Rename: map[string]string{"echo": "pid"}}, {Name: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.ServeAggregate(httpapi.AggregateOptions{Names: names, HTTP: httpapi.Options{LoopbackOnly: true, Logger: testLogger(t)}}); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, srv: srv, url: srv.URL + "/mcp", client: srv.Client()}
	sid := e.initialize("2025-11-25")
	msgs := readMessages(t, e.do(req{sid: sid, body: `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`}))
	if got := fmt.Sprint(msgs); !strings.Contains(got, "a__pid") || !strings.Contains(got, "b__echo") {
		t.Fatalf("tools/list: %s", got)
	}

	resp, err := srv.Client().Get(srv.URL + "/ui/config.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(cfg), `"name":"aggregate","path":"/mcp"`) {
		t.Errorf("config.json does not offer the aggregate: %s", cfg)
	}
	seen := watchFeed(t, srv.Client(), srv.URL+"/ui/events", nil, func(v feedView) bool {
		return strings.Contains(v.raw, `"problems":[{`)
	})
	last := seen[len(seen)-1].raw
	for _, want := range []string{`"aggregate":{"path":"/mcp","sessions":1`, `{"name":"a","state":"ready"}`, `"reason":"shadowed"`, `rename it too to expose it`} {
		if !strings.Contains(last, want) {
			t.Errorf("the feed's aggregate lacks %s: %s", want, last)
		}
	}

	resp, err = srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`mcp_bridge_requests_total{era="2025",method="tools/list",outcome="ok",server="/mcp"} 1`, "mcp_bridge_aggregate_problems 1", "mcp_bridge_aggregate_lists_total 1", "mcp_bridge_aggregate_sessions 1", "mcp_bridge_aggregate_misrouted_total 0"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestAggregateServerListChanged: a server's own tools/list_changed
// reaches the aggregate's client as the aggregate's.
func TestAggregateServerListChanged(t *testing.T) {
	t.Parallel()
	m, srv := newMounts(t)
	serveAggregate(t, m, httpapi.AggregateOptions{}, mountSpec(t, "a", "1"), mountSpec(t, "b", "1"))
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	changed := make(chan struct{}, 16)
	cs := connectAggregate(t, ctx, srv, &mcp.ClientOptions{ToolListChangedHandler: onToolsChanged(changed)}, "2025-11-25")
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "b__notify", Arguments: map[string]any{"method": "notifications/tools/list_changed", "params": map[string]any{}}})
	if err != nil || res.IsError {
		t.Fatalf("b__notify: %v %v", res, err)
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no notifications/tools/list_changed after a server's own")
	}
}

// TestAggregateFirstUse: a client's initialize starts no session of any
// server (the first one's probes end at once); a call starts its server's
// session alone, and DELETE ends it.
func TestAggregateFirstUse(t *testing.T) {
	t.Parallel()
	m, srv := newMounts(t)
	serveAggregate(t, m, httpapi.AggregateOptions{}, mountSpec(t, "a", "1"), mountSpec(t, "b", "1"))
	sessions := func() string {
		t.Helper()
		resp, err := srv.Client().Get(srv.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var out []string
		for _, l := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(l, "mcp_bridge_sessions{") {
				out = append(out, l)
			}
		}
		slices.Sort(out)
		return strings.Join(out, "; ")
	}
	e := &env{t: t, srv: srv, url: srv.URL + "/mcp", client: srv.Client()}
	e.initialize("2025-11-25") // the first: the servers' capabilities are learnt
	sid := e.initialize("2025-11-25")
	const none = `mcp_bridge_sessions{server="a"} 0; mcp_bridge_sessions{server="b"} 0`
	if got := sessions(); got != none {
		t.Errorf("after initialize: %s, want %s", got, none)
	}
	if _, msgs := e.call(sid, 1, "a__echo", map[string]any{"message": "x"}); len(msgs) != 1 {
		t.Fatalf("a__echo: %v", msgs)
	}
	if got, want := sessions(), `mcp_bridge_sessions{server="a"} 1; mcp_bridge_sessions{server="b"} 0`; got != want {
		t.Errorf("after a call of a: %s, want %s", got, want)
	}
	resp := e.do(req{method: http.MethodDelete, sid: sid})
	resp.Body.Close()
	if got := sessions(); got != none {
		t.Errorf("after DELETE: %s, want %s", got, none)
	}
}

// TestAggregateApproval: a call its server's approval rule holds is held
// on the aggregate endpoint as on the server's own: the bridge asks the
// client (form elicitation) on the call's stream, the server's approval
// engine decides, bound to the server and the tool's own name, and only a
// yes sends the call on to its server, once.
func TestAggregateApproval(t *testing.T) {
	t.Parallel()
	m, srv := newMounts(t)
	var events []approval.Event
	var mu sync.Mutex
	engine := approval.New(approval.Options{Logger: testLogger(t), Observe: func(ev approval.Event) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, ev)
	}})
	t.Cleanup(engine.Close)
	runs := filepath.Join(t.TempDir(), "runs") // every echo the server's children run
	a := mountSpec(t, "a", "1", testpeers.BuildGo(t, "./testdata/badchild"), "-runs", runs)
	a.HTTP.Approval = approval.NewPolicy("a", []approval.Rule{mustApprovalRule("*=echo")}, false)
	a.HTTP.Approvals = engine
	if _, err := m.Apply([]httpapi.MountSpec{a}); err != nil {
		t.Fatal(err)
	}
	names, _ := aggregate.NewNames([]aggregate.Member{{Name: "a"}})
	if err := m.ServeAggregate(httpapi.AggregateOptions{Names: names, HTTP: httpapi.Options{LoopbackOnly: true, Logger: testLogger(t)}}); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, srv: srv, url: srv.URL + "/mcp", client: srv.Client()}
	resp := e.do(req{body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`})
	readMessages(t, resp)
	sid := resp.Header.Get("Mcp-Session-Id")
	e.do(req{body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, sid: sid}).Body.Close()
	for _, tt := range []struct {
		name, answer, ran string
	}{
		{"decline", `{"action":"decline"}`, "0"},
		{"approve", `{"action":"accept","content":{"approve":true}}`, "1"},
	} {
		resp := e.do(req{body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a__echo","arguments":{"message":"hi"}}}`, sid: sid})
		hp := &heldPost{resp: resp, sse: newSSEReader(resp.Body)}
		q := hp.next(t)
		qid, _ := q["id"].(string)
		params, _ := q["params"].(map[string]any)
		if msg, _ := params["message"].(string); q["method"] != "elicitation/create" || !strings.Contains(msg, "Tool: echo") {
			t.Fatalf("%s: asked %v", tt.name, q)
		}
		answer := e.do(req{body: `{"jsonrpc":"2.0","id":"` + qid + `","result":` + tt.answer + `}`, sid: sid})
		answer.Body.Close()
		if answer.StatusCode != http.StatusAccepted {
			t.Fatalf("%s: the answer: %d", tt.name, answer.StatusCode)
		}
		var res map[string]any
		for res = hp.next(t); res["method"] != nil; res = hp.next(t) {
		}
		resp.Body.Close()
		got, isErr := isErrorText(res)
		if tt.ran == "1" && (isErr || got != "hi") || tt.ran == "0" && !isErr {
			t.Errorf("%s: answered %v", tt.name, res)
		}
		_, msgs := e.call(sid, 8, "a__echo_count", map[string]any{})
		if n := text(msgs[0]); n != tt.ran {
			t.Errorf("%s: the server ran echo %s times, want %s", tt.name, n, tt.ran)
		}
	}
	// A 2026-07-28 request: asked in an input_required result, its
	// retry with the answer runs the call on its server, once.
	caps := map[string]any{"elicitation": map[string]any{}}
	modern := func(rs string, answer any) map[string]any {
		params := map[string]any{"name": "a__echo", "arguments": map[string]any{"message": "m1"}}
		if rs != "" {
			params["requestState"] = rs
			params["inputResponses"] = map[string]any{"mcp-bridge-approval": answer}
		}
		m := readMessages(t, e.do(modernRequest{id: 5, method: "tools/call", params: params, caps: caps}.req()))
		if len(m) != 1 {
			t.Fatalf("%d messages: %v", len(m), m)
		}
		return m[0]
	}
	ran := func() int {
		b, _ := os.ReadFile(runs)
		return strings.Count(string(b), `"m1"`+"\n")
	}
	_, rs := inputRequired(t, modern("", nil))
	if n := ran(); n != 0 {
		t.Fatalf("asked, the server ran echo %d times", n)
	}
	if res := modern(rs, map[string]any{"action": "accept", "content": map[string]any{"approve": true}}); text(res) != "m1" {
		t.Fatalf("approved: %v", res)
	}
	if n := ran(); n != 1 {
		t.Errorf("approved, the server ran echo %d times, want 1", n)
	}
	mu.Lock()
	defer mu.Unlock()
	var seen int
	for _, ev := range events {
		if ev.Kind == approval.EventRequested {
			seen++
			if ev.Approval.Server != "a" || ev.Approval.Tool != "echo" {
				t.Errorf("requested %+v, want server a, tool echo", ev.Approval)
			}
		}
	}
	if seen != 3 {
		t.Errorf("%d approvals requested, want 3", seen)
	}
}

// TestAggregateCatalog: the tools/list the aggregate reads of a trusted
// server teaches that server's approval rules its tools' annotations, as
// its own endpoint's lists do: before it, a rule naming a hint holds
// every call its glob matches; after it, a tool the server says is
// read-only is spared, and one it says nothing of is still held.
func TestAggregateCatalog(t *testing.T) {
	t.Parallel()
	m, srv := newMounts(t)
	engine := approval.New(approval.Options{Logger: testLogger(t)})
	t.Cleanup(engine.Close)
	a := mountSpec(t, "a", "1")
	a.HTTP.Approval = approval.NewPolicy("a", []approval.Rule{mustApprovalRule("*=echo*@destructiveHint")}, true)
	a.HTTP.Approvals = engine
	if _, err := m.Apply([]httpapi.MountSpec{a}); err != nil {
		t.Fatal(err)
	}
	names, _ := aggregate.NewNames([]aggregate.Member{{Name: "a"}})
	if err := m.ServeAggregate(httpapi.AggregateOptions{Names: names, HTTP: httpapi.Options{LoopbackOnly: true, Logger: testLogger(t)}}); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, srv: srv, url: srv.URL + "/mcp", client: srv.Client()}
	sid := e.initialize("2025-11-25")
	held := func(tool string) bool {
		t.Helper()
		_, msgs := e.call(sid, 2, tool, map[string]any{"message": "c"})
		got, isErr := isErrorText(msgs[0])
		return isErr && strings.Contains(got, "needs a human's approval")
	}
	if !held("a__echo_count") {
		t.Error("a__echo_count ran before its server described it")
	}
	readMessages(t, e.do(req{sid: sid, body: `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`}))
	if held("a__echo_count") {
		t.Error("a__echo_count, which its trusted server says is read-only, is still held after the aggregate's tools/list")
	}
	if !held("a__echo") {
		t.Error("a__echo, which says nothing (destructive by default), ran")
	}
}
