package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-bridge/mcp-bridge/httpapi"
)

// TestAggregateListen: a 2026-07-28 client's subscriptions/listen on the
// aggregate endpoint is a listen on each of its servers. The
// acknowledgement comes first, once, with what any server honours (the
// resource under its exposed URI); then each server's list change, and
// the update of the one resource subscribed to (its URI exposed), each
// stamped with the client's listen id, and nothing it did not ask for. A
// server removed leaves the other listening; the client closing its
// stream ends every server's listen.
func TestAggregateListen(t *testing.T) {
	t.Parallel()
	m, srv := newMounts(t)
	a, b := mountSpec(t, "a", "1"), mountSpec(t, "b", "1")
	serveAggregate(t, m, httpapi.AggregateOptions{}, a, b)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second) // a safety net
	defer cancel()
	e := &env{t: t, srv: srv, url: srv.URL + "/mcp", client: srv.Client()}
	lctx, closeListen := context.WithCancel(ctx)
	defer closeListen()
	resp, err := modernPost(lctx, e, 41, "subscriptions/listen", "",
		`"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourceSubscriptions":["mcp-bridge://a/test://a","mcp-bridge://nope/x"]},`, "")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sr := newMessages(t, resp)
	ack := sr.next()
	params, _ := ack["params"].(map[string]any)
	honored, _ := json.Marshal(params["notifications"])
	if ack["method"] != "notifications/subscriptions/acknowledged" || subscriptionID(ack) != "41" ||
		string(honored) != `{"resourceSubscriptions":["mcp-bridge://a/test://a"],"toolsListChanged":true}` {
		t.Fatalf("first message %v (notifications %s), want the acknowledgement of tools and a's test://a (no server has prompts)", ack, honored)
	}
	id := 100
	notify := func(server, method, params string) {
		t.Helper()
		id++
		notifyThrough(t, e, id, server+"__notify", method, params)
	}
	want := func(method, uri string) {
		t.Helper()
		msg := sr.next()
		p, _ := msg["params"].(map[string]any)
		if msg["method"] != method || subscriptionID(msg) != "41" || uri != "" && p["uri"] != uri {
			t.Fatalf("got %v, want %s %s stamped with the listen's id", msg, method, uri)
		}
	}
	// What it did not ask for never comes: each unwanted notification is
	// followed by a wanted one, which must be next.
	notify("a", "notifications/prompts/list_changed", "")
	notify("b", "notifications/resources/updated", `{"uri":"test://a"}`) // b's test://a: not subscribed
	notify("a", "notifications/resources/updated", `{"uri":"test://b"}`)
	notify("a", "notifications/tools/list_changed", "")
	want("notifications/tools/list_changed", "")
	notify("b", "notifications/tools/list_changed", "")
	want("notifications/tools/list_changed", "")
	notify("a", "notifications/resources/updated", `{"uri":"test://a"}`)
	want("notifications/resources/updated", "mcp-bridge://a/test://a")

	// b is no longer served: its listen ends, a's goes on.
	if _, err := m.Apply([]httpapi.MountSpec{a}); err != nil {
		t.Fatal(err)
	}
	notify("a", "notifications/tools/list_changed", "")
	want("notifications/tools/list_changed", "")

	// The client closes its stream: every server's listen ends.
	closeListen()
	resp.Body.Close()
	for {
		if got := listenStreams(t, e); got == `mcp_bridge_listen_streams{server="a"} 0` {
			break
		} else if ctx.Err() != nil {
			t.Fatalf("after the client closed its listen: %s", got)
		}
	}
}

// TestAggregateListenEnds: a listen without params.notifications, an
// object, is refused with -32602; the client's listen ends with its
// completion result when every server's listen has ended (their bridges
// stop).
func TestAggregateListenEnds(t *testing.T) {
	t.Parallel()
	m, srv := newMounts(t)
	serveAggregate(t, m, httpapi.AggregateOptions{}, mountSpec(t, "a", "1"), mountSpec(t, "b", "1"))
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second) // a safety net
	defer cancel()
	e := &env{t: t, srv: srv, url: srv.URL + "/mcp", client: srv.Client()}
	for _, bad := range []string{``, `"notifications":[],`, `"notifications":{"resourceSubscriptions":"x"},`} {
		resp, err := modernPost(ctx, e, 6, "subscriptions/listen", "", bad, "")
		if err != nil {
			t.Fatal(err)
		}
		msgs := readMessages(t, resp)
		if len(msgs) != 1 || !strings.Contains(fmt.Sprint(msgs[0]["error"]), "-32602") {
			t.Errorf("a listen with params %q: %v, want -32602", bad, msgs)
		}
	}
	resp, err := modernPost(ctx, e, 7, "subscriptions/listen", "", `"notifications":{"toolsListChanged":true},`, "")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sr := newMessages(t, resp)
	if ack := sr.next(); ack["method"] != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first message %v", ack)
	}
	if got := listenStreams(t, e); got != `mcp_bridge_listen_streams{server="a"} 1; mcp_bridge_listen_streams{server="b"} 1` {
		t.Errorf("listening: %s, want one listen on each server", got)
	}
	if _, err := m.Apply(nil); err != nil {
		t.Fatal(err)
	}
	end := sr.next()
	res, _ := end["result"].(map[string]any)
	if fmt.Sprint(end["id"]) != "7" || res["resultType"] != "complete" || subscriptionID(map[string]any{"params": res}) != "7" {
		t.Fatalf("with no server left: %v, want the listen's completion result", end)
	}
	if m := sr.next(); m != nil {
		t.Fatalf("after the completion result: %v", m)
	}
}

// listenStreams are the servers' open listens, as /metrics counts them.
func listenStreams(t *testing.T, e *env) string {
	t.Helper()
	resp, err := e.client.Get(e.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var out []string
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "mcp_bridge_listen_streams{") {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

// notifyThrough is notifyVia through the notify tool of another name
// (the aggregate's server__notify).
func notifyThrough(t *testing.T, e *env, id int, tool, method, params string) {
	t.Helper()
	args := `{"method":"` + method + `"`
	if params != "" {
		args += `,"params":` + params
	}
	resp, err := modernPost(context.Background(), e, id, "tools/call", tool, `"name":"`+tool+`","arguments":`+args+`},`, "")
	if err != nil {
		t.Fatal(err)
	}
	msgs := readMessages(t, resp)
	if len(msgs) != 1 || msgs[0]["result"] == nil {
		t.Fatalf("%s %s: %v", tool, method, msgs)
	}
}

// TestAggregateListenGoSDK: the Go SDK's client, unpinned, negotiates
// 2026-07-28 with the aggregate and opens its listen for tool list
// changes at connect; each server's tools/list_changed reaches it. (The
// client does not wait for the acknowledgement, so a change is announced
// until one arrives: one sent before the listen is up is not the
// listen's.)
func TestAggregateListenGoSDK(t *testing.T) {
	t.Parallel()
	m, srv := newMounts(t)
	serveAggregate(t, m, httpapi.AggregateOptions{}, mountSpec(t, "a", "1"), mountSpec(t, "b", "1"))
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second) // a safety net
	defer cancel()
	changed := make(chan struct{}, 1024)
	cs := connectAggregate(t, ctx, srv, &mcp.ClientOptions{ToolListChangedHandler: onToolsChanged(changed)}, "")
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %q, want 2026-07-28", v)
	}
	for _, server := range []string{"a", "b"} {
		for len(changed) > 0 {
			<-changed
		}
		for got := false; !got; {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: server + "__notify", Arguments: map[string]any{"method": "notifications/tools/list_changed", "params": map[string]any{}}})
			if err != nil || res.IsError {
				t.Fatalf("%s__notify: %v %v", server, res, err)
			}
			select {
			case <-changed:
				got = true
			default:
				if ctx.Err() != nil {
					t.Fatalf("no tools/list_changed of %s reached the client", server)
				}
			}
		}
	}
}

// TestAggregateListenServerDown: a server that never starts (it never
// answers initialize) or dies at once is left out of a listen, within
// the list timeout (long enough for the others to start on a loaded
// machine), and the others listen.
func TestAggregateListenServerDown(t *testing.T) {
	t.Parallel()
	m, srv := newMounts(t)
	bin := mountSpec(t, "x", "1").Bridge.Command[0]
	serveAggregate(t, m, httpapi.AggregateOptions{ListTimeout: 5 * time.Second}, mountSpec(t, "a", "1"),
		mountSpec(t, "hangs", "1", bin, "-never-init"), mountSpec(t, "dies", "1", bin, "-exit-at-start"))
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second) // a safety net
	defer cancel()
	e := &env{t: t, srv: srv, url: srv.URL + "/mcp", client: srv.Client()}
	resp, err := modernPost(ctx, e, 3, "subscriptions/listen", "", `"notifications":{"toolsListChanged":true},`, "")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sr := newMessages(t, resp)
	ack := sr.next()
	params, _ := ack["params"].(map[string]any)
	if honored, _ := json.Marshal(params["notifications"]); ack["method"] != "notifications/subscriptions/acknowledged" || string(honored) != `{"toolsListChanged":true}` {
		t.Fatalf("first message %v, want the acknowledgement of tools", ack)
	}
	notifyThrough(t, e, 4, "a__notify", "notifications/tools/list_changed", "")
	if msg := sr.next(); msg["method"] != "notifications/tools/list_changed" || subscriptionID(msg) != "3" {
		t.Fatalf("got %v, want a's tools/list_changed", msg)
	}
}

// TestAggregateListenLateServer: a server still starting when the
// client's acknowledgement goes (its child answers initialize only once
// the test lets it) joins the listen once it is up: the client is told
// its tools may have changed, then gets the server's own changes, but no
// update of a resource its acknowledgement did not promise.
func TestAggregateListenLateServer(t *testing.T) {
	t.Parallel()
	m, srv := newMounts(t)
	gate := filepath.Join(t.TempDir(), "gate")
	bin := mountSpec(t, "x", "1").Bridge.Command[0]
	serveAggregate(t, m, httpapi.AggregateOptions{ListTimeout: 200 * time.Millisecond}, mountSpec(t, "a", "1"),
		mountSpec(t, "late", "1", bin, "-init-gate", gate))
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second) // a safety net
	defer cancel()
	e := &env{t: t, srv: srv, url: srv.URL + "/mcp", client: srv.Client()}
	resp, err := modernPost(ctx, e, 5, "subscriptions/listen", "",
		`"notifications":{"toolsListChanged":true,"resourceSubscriptions":["mcp-bridge://a/test://a","mcp-bridge://late/test://a"]},`, "")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sr := newMessages(t, resp)
	ack := sr.next()
	params, _ := ack["params"].(map[string]any)
	if honored, _ := json.Marshal(params["notifications"]); string(honored) != `{"resourceSubscriptions":["mcp-bridge://a/test://a"],"toolsListChanged":true}` {
		t.Fatalf("first message %v, want the acknowledgement of a alone", ack)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if msg := sr.next(); msg["method"] != "notifications/tools/list_changed" || subscriptionID(msg) != "5" {
		t.Fatalf("got %v, want tools/list_changed as the late server joins", msg)
	}
	notifyThrough(t, e, 6, "late__notify", "notifications/resources/updated", `{"uri":"test://a"}`)
	notifyThrough(t, e, 7, "late__notify", "notifications/tools/list_changed", "")
	if msg := sr.next(); msg["method"] != "notifications/tools/list_changed" || subscriptionID(msg) != "5" {
		t.Fatalf("got %v, want the late server's tools/list_changed", msg)
	}
}
