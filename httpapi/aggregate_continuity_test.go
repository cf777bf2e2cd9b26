package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
)

// A session of the aggregate outlives its servers' sessions: these tests
// kill a server's child under a live client session and check what the
// client set up holds, and what it is told.

// TestAggregateResubscribe: a client subscribed to a resource of a
// per-session server whose child dies: the aggregate starts the server's
// session anew at once, without waiting for a request of the client's,
// subscribes the new child to the resource again, and the new child's
// updates reach the client.
func TestAggregateResubscribe(t *testing.T) {
	t.Parallel()
	m, srv := newMounts(t)
	bin := mountSpec(t, "x", "1").Bridge.Command[0]
	// Each child of a says, once initialized, that a resource of its pid
	// was updated: so an update from a new child, with no request of the
	// client's to start one, shows that the aggregate started it.
	serveAggregate(t, m, httpapi.AggregateOptions{},
		mountSpec(t, "a", "1", bin, "-notify-at-init", `notifications/resources/updated {"uri":"test://child/{pid}"}`),
		mountSpec(t, "b", "1"))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	updated := make(chan string, 64)
	cs := connectAggregate(t, ctx, srv, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case updated <- req.Params.URI:
			default:
			}
		},
	}, "2025-11-25")
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	pid := resultText(t, call("a__pid", map[string]any{}))
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "mcp-bridge://a/test://x"}); err != nil {
		t.Fatal(err)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "mcp-bridge://a/test://gone"}); err != nil {
		t.Fatal(err)
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "mcp-bridge://a/test://gone"}); err != nil {
		t.Fatal(err)
	}
	if res := call("a__crash", map[string]any{"code": 3}); !res.IsError {
		t.Fatalf("a__crash answered %q without isError", resultText(t, res))
	}
	// No request of the client's from here until the new child speaks.
	var newPid string
	for newPid == "" {
		select {
		case uri := <-updated:
			if p, ok := strings.CutPrefix(uri, "mcp-bridge://a/test://child/"); ok && p != pid {
				newPid = p
			}
		case <-ctx.Done():
			t.Fatal("no update from a new child of a: its session was not started anew for the client's subscription")
		}
	}
	if got := resultText(t, call("a__pid", map[string]any{})); got != newPid {
		t.Errorf("a__pid answered %q, want the new child %q", got, newPid)
	}
	// The new child was subscribed to what the client holds, and to
	// nothing it let go, before any request of the client's reached it.
	want := `["resources/subscribe {\"uri\":\"test://x\"}"]`
	if got := resultText(t, call("a__state_calls", map[string]any{})); got != want {
		t.Errorf("the new child of a was asked %s, want %s", got, want)
	}
	if res := call("a__notify", map[string]any{"method": "notifications/resources/updated", "params": map[string]any{"uri": "test://x"}}); res.IsError {
		t.Fatalf("a__notify: %s", resultText(t, res))
	}
	for {
		select {
		case uri := <-updated:
			if uri == "mcp-bridge://a/test://x" {
				return
			}
		case <-ctx.Done():
			t.Fatal("the new child's update of the subscribed resource never reached the client")
		}
	}
}

// TestAggregateSharedRestart: a shared server's child that dies is
// restarted inside its bridge, and the aggregate's session on it lives
// on; the client is still told that its lists may have changed, since
// the new child may list other things.
func TestAggregateSharedRestart(t *testing.T) {
	t.Parallel()
	m, srv := newMounts(t)
	a := mountSpec(t, "a", "1")
	a.Bridge.Mode = bridge.ModeShared
	serveAggregate(t, m, httpapi.AggregateOptions{}, a, mountSpec(t, "b", "1"))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	changed := make(chan struct{}, 16)
	cs := connectAggregate(t, ctx, srv, &mcp.ClientOptions{ToolListChangedHandler: onToolsChanged(changed)}, "2025-11-25")
	call := func(name string) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"code": 3}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	pid := resultText(t, call("a__pid"))
	if res := call("a__crash"); !res.IsError {
		t.Fatalf("a__crash answered %q without isError", resultText(t, res))
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no notifications/tools/list_changed after the shared child of a restarted")
	}
	// Told once the new child takes requests: it answers at once.
	if got := resultText(t, call("a__pid")); got == pid || got == "" {
		t.Errorf("a__pid after the restart answered %q, was %q: want the new child", got, pid)
	}
}

// TestAggregateResume: the aggregate's GET stream numbers its events; a
// client whose connection broke resumes with Last-Event-ID and gets what
// it missed after that event, and a Last-Event-ID the stream never gave
// is refused saying what to do.
func TestAggregateResume(t *testing.T) {
	t.Parallel()
	m, srv := newMounts(t)
	serveAggregate(t, m, httpapi.AggregateOptions{}, mountSpec(t, "a", "1"), mountSpec(t, "b", "1"))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	e := &env{t: t, srv: srv, url: srv.URL + "/mcp", client: srv.Client()}
	sid := e.initialize("2025-11-25")
	get := func(last string) *http.Response {
		t.Helper()
		h := map[string]string{}
		if last != "" {
			h["Last-Event-ID"] = last
		}
		// A resume waits for the stream's last connection to be given
		// up (the server may not know yet that it broke).
		gctx, gcancel := context.WithCancel(ctx)
		t.Cleanup(gcancel)
		return e.doCtx(gctx, req{method: http.MethodGet, sid: sid, accept: "text/event-stream", version: "2025-11-25", header: h})
	}
	resp := get("")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: status %d", resp.StatusCode)
	}
	// Two announcements on the GET stream: b's tools changed, then its
	// prompts.
	for i, method := range []string{"notifications/tools/list_changed", "notifications/prompts/list_changed"} {
		if _, msgs := e.call(sid, i+1, "b__notify", map[string]any{"method": method}); len(msgs) != 1 {
			t.Fatalf("b__notify: %v", msgs)
		}
	}
	sse := newSSEReader(resp.Body)
	var evs []sseEvent
	for len(evs) < 2 {
		ev, ok := sse.next()
		if !ok {
			t.Fatalf("the GET stream ended after %d events", len(evs))
		}
		evs = append(evs, ev)
	}
	if evs[0].id == "" || evs[1].id == "" || evs[0].id == evs[1].id {
		t.Fatalf("GET stream's events have ids %q and %q, want two ids", evs[0].id, evs[1].id)
	}
	resp.Body.Close() // the connection breaks: the client saw the first event only
	resp = get(evs[0].id)
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("resume after %s: status %d: %s", evs[0].id, resp.StatusCode, body)
	}
	ev, ok := newSSEReader(resp.Body).next()
	if !ok || ev.id != evs[1].id || ev.data != evs[1].data {
		t.Errorf("resumed with %+v (%v), want the missed %+v", ev, ok, evs[1])
	}
	resp.Body.Close()
	resp = get("99999")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "open the GET stream again without Last-Event-ID") {
		t.Errorf("a Last-Event-ID never given: status %d: %s", resp.StatusCode, body)
	}
}

// TestAggregateStateless: served stateless (--stateless with
// --aggregate), the aggregate endpoint takes 2026-07-28 requests, each on
// its server, and refuses a 2025 initialize saying what to send instead;
// it has no GET stream and no legacy SSE.
func TestAggregateStateless(t *testing.T) {
	t.Parallel()
	m, srv := newMounts(t)
	var specs []httpapi.MountSpec
	for _, name := range []string{"a", "b"} {
		s := mountSpec(t, name, "1")
		s.Bridge.Stateless, s.HTTP.Stateless = true, true
		specs = append(specs, s)
	}
	serveAggregate(t, m, httpapi.AggregateOptions{HTTP: httpapi.Options{Stateless: true}}, specs...)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	e := &env{t: t, srv: srv, url: srv.URL + "/mcp", client: srv.Client()}
	for i, server := range []string{"a", "b"} {
		resp, err := modernPost(ctx, e, i+1, "tools/call", server+"__echo", `"name":"`+server+`__echo","arguments":{"message":"hi `+server+`"},`, "")
		if err != nil {
			t.Fatal(err)
		}
		msgs := readMessages(t, resp)
		if resp.StatusCode != http.StatusOK || len(msgs) != 1 || text(msgs[0]) != "hi "+server {
			t.Errorf("%s__echo (2026-07-28): status %d: %v", server, resp.StatusCode, msgs)
		}
	}
	resp := e.do(req{body: sprintf(initBody, "2025-11-25")})
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "--stateless with --aggregate") ||
		!strings.Contains(string(body), "send protocol version 2026-07-28") {
		t.Errorf("a 2025 initialize: status %d: %s", resp.StatusCode, body)
	}
	for _, r := range []req{{method: http.MethodGet, accept: "text/event-stream"}, {method: http.MethodDelete, sid: "x"}} {
		resp := e.do(r)
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s: status %d, want 405", r.method, resp.StatusCode)
		}
	}
	resp, err := srv.Client().Get(srv.URL + "/sse")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /sse: status %d, want 404 (no legacy SSE)", resp.StatusCode)
	}
}
