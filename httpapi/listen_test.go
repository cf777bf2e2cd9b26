package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
)

// messages reads the JSON-RPC messages of an SSE response one at a time:
// next is the stream's next message, nil when it ends.
type messages struct {
	t  *testing.T
	sr *sseReader
}

func newMessages(t *testing.T, resp *http.Response) *messages {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("%s, Content-Type %q: not a stream", resp.Status, ct)
	}
	return &messages{t: t, sr: newSSEReader(resp.Body)}
}

func (m *messages) next() map[string]any {
	m.t.Helper()
	ev, ok := m.sr.next()
	if !ok {
		return nil
	}
	return decode(m.t, ev.data)
}

// modernPost sends a 2026-07-28 request: method, target (Mcp-Name; "" for
// none), params (members with a trailing comma, or "") with capabilities.
func modernPost(ctx context.Context, e *env, id int, method, name, params, caps string) (*http.Response, error) {
	if caps == "" {
		caps = "{}"
	}
	body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"` + method + `","params":{` + params +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}}}`
	r := req{body: body, version: "2026-07-28", header: map[string]string{"Mcp-Method": method}}
	if name != "" {
		r.header["Mcp-Name"] = name
	}
	return e.try(ctx, r)
}

// notifyVia has the child send a notification, by a 2026-07-28 call of the
// badchild's notify tool, and waits for the call's answer.
func notifyVia(t *testing.T, e *env, id int, method, params string) {
	t.Helper()
	args := `{"method":"` + method + `"`
	if params != "" {
		args += `,"params":` + params
	}
	resp, err := modernPost(context.Background(), e, id, "tools/call", "notify", `"name":"notify","arguments":`+args+`},`, "")
	if err != nil {
		t.Fatal(err)
	}
	msgs := readMessages(t, resp)
	if len(msgs) != 1 || msgs[0]["result"] == nil {
		t.Fatalf("notify %s: %v", method, msgs)
	}
}

// TestListen: subscriptions/listen in front of a 2025 child, served by the
// bridge. The acknowledgement comes first, with the subset the child can
// honour; then only the notifications asked for, each stamped with the
// listen's id, never one it did not ask for; resource updates only for
// its URIs. The child's subscription is renewed when it restarts, and the
// listen goes on; at shutdown the listen ends with its completion result.
func TestListen(t *testing.T) {
	for _, mode := range []string{bridge.ModePerSession, bridge.ModeShared} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, envOpts{bridge: bridge.Config{Mode: mode}})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a safety net
			defer cancel()
			resp, err := modernPost(ctx, e, 1, "subscriptions/listen", "",
				`"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourceSubscriptions":["test://a"]},`, "")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.Header.Get("X-Accel-Buffering") != "no" {
				t.Error("a listen stream without X-Accel-Buffering: no")
			}
			sr := newMessages(t, resp)
			ack := sr.next()
			params, _ := ack["params"].(map[string]any)
			honored, _ := json.Marshal(params["notifications"])
			if ack["method"] != "notifications/subscriptions/acknowledged" || subscriptionID(ack) != "1" ||
				string(honored) != `{"resourceSubscriptions":["test://a"],"toolsListChanged":true}` {
				t.Fatalf("first message %v, want the acknowledgement of tools and test://a (the child has no prompts)", ack)
			}
			// What it did not ask for never comes: each unwanted
			// notification is followed by a wanted one, which must be next.
			notifyVia(t, e, 2, "notifications/prompts/list_changed", "")
			notifyVia(t, e, 3, "notifications/resources/updated", `{"uri":"test://b"}`)
			notifyVia(t, e, 4, "notifications/message", `{"level":"error","data":"x"}`)
			notifyVia(t, e, 5, "notifications/tools/list_changed", "")
			if m := sr.next(); m["method"] != "notifications/tools/list_changed" || subscriptionID(m) != "1" {
				t.Fatalf("got %v, want tools/list_changed stamped with the listen's id", m)
			}
			notifyVia(t, e, 6, "notifications/resources/updated", `{"uri":"test://a"}`)
			if m := sr.next(); m["method"] != "notifications/resources/updated" || subscriptionID(m) != "1" {
				t.Fatalf("got %v, want the update of test://a", m)
			}

			// The child crashes and is restarted: it is subscribed again,
			// and the listen goes on.
			resp2, err := modernPost(ctx, e, 7, "tools/call", "crash", `"name":"crash","arguments":{},`, "")
			if err != nil {
				t.Fatal(err)
			}
			resp2.Body.Close()
			for id := 8; ; id++ {
				r, err := modernPost(ctx, e, id, "tools/call", "state_calls", `"name":"state_calls","arguments":{},`, "")
				if err != nil {
					t.Fatal(err)
				}
				msgs := readMessages(t, r)
				if len(msgs) == 1 && strings.Contains(text(msgs[0]), `resources/subscribe {\"uri\":\"test://a\"}`) {
					break // the restarted child's own calls: subscribed again
				}
				if ctx.Err() != nil {
					t.Fatalf("the restarted child was never subscribed again: %v", msgs)
				}
			}
			notifyVia(t, e, 100, "notifications/resources/updated", `{"uri":"test://a"}`)
			if m := sr.next(); m["method"] != "notifications/resources/updated" || subscriptionID(m) != "1" {
				t.Fatalf("after the restart: %v, want the update of test://a", m)
			}

			// Shutdown: the listen ends with its completion result.
			e.b.Drain()
			end := sr.next()
			res, _ := end["result"].(map[string]any)
			if fmt.Sprint(end["id"]) != "1" || res["resultType"] != "complete" || subscriptionID(map[string]any{"params": res}) != "1" {
				t.Fatalf("at shutdown: %v, want the listen's completion result", end)
			}
			if m := sr.next(); m != nil {
				t.Fatalf("after the completion result: %v", m)
			}
		})
	}
}

// subscriptionID is the io.modelcontextprotocol/subscriptionId of a
// message's params._meta, as JSON.
func subscriptionID(m map[string]any) string {
	p, _ := m["params"].(map[string]any)
	meta, _ := p["_meta"].(map[string]any)
	b, _ := json.Marshal(meta["io.modelcontextprotocol/subscriptionId"])
	return string(b)
}

// TestModernCancelOnClose: closing the SSE response of a 2026-07-28 call
// cancels it: the child gets notifications/cancelled with its own id for
// the request, and the next call is served.
func TestModernCancelOnClose(t *testing.T) {
	e := newEnv(t, envOpts{http: httpapi.Options{ResponseMode: httpapi.ModeSSE}})
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := modernPost(ctx, e, 1, "tools/call", "hang", `"name":"hang","arguments":{},`, "")
	if err != nil {
		t.Fatal(err)
	}
	// The stream is open (its headers are here); the child has the call.
	cancel()
	resp.Body.Close()
	deadline, stop := context.WithTimeout(context.Background(), 30*time.Second) // a safety net
	defer stop()
	for id := 2; ; id++ {
		r, err := modernPost(deadline, e, id, "tools/call", "cancels", `"name":"cancels","arguments":{},`, "")
		if err != nil {
			t.Fatal(err)
		}
		msgs := readMessages(t, r)
		if len(msgs) == 1 && strings.Contains(text(msgs[0]), "[") && text(msgs[0]) != "[]" {
			break // the child saw a cancellation
		}
		if deadline.Err() != nil {
			t.Fatalf("the child never saw notifications/cancelled: %v", msgs)
		}
	}
}
