package httpapi_test

// The two eras on one bridge and one shared child under load: every
// answer arrives exactly once, on the right request, whichever era asked.
// Go SDK sessions pinned to 2025-11-25, go-sdk clients speaking
// 2026-07-28, and raw 2026-07-28 POSTs that all use the same JSON-RPC id
// and the same progress token call the shared badchild at once, each call
// with a payload of its own, while raw 2026-07-28 clients that declare
// sampling answer the badchild's sampling requests through MRTR on leased
// children, and a subscriptions/listen takes the tool list changes the
// raw callers make the shared child send. Every call must get its own
// answer, every progress notification must reach the call it belongs to,
// the child must have answered exactly as many echo calls as were made,
// and the listen must have had each list change exactly once.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestBothErasUnderLoad(t *testing.T) {
	const (
		workers = 4  // goroutines of each kind
		calls   = 25 // echo calls per goroutine, then one slow call with progress
		token   = "tok"
	)
	e := newEnv(t, envOpts{bridge: bridge.Config{Mode: bridge.ModeShared}})
	ctx, cancel := context.WithTimeout(t.Context(), waitsSafety)
	defer cancel()
	var echoes atomic.Int64  // echo calls answered correctly
	var changes atomic.Int64 // list changes the raw callers made the child send
	listen := openListen(ctx, t, e, 99)

	// steps gives every slow call its own step count, so a progress
	// notification that reached the wrong call shows in the count.
	steps := func(kind, worker int) int { return 2 + kind*workers + worker }

	kinds := []struct {
		name string
		run  func(kind, worker int) error
	}{
		{"2025 session", func(kind, w int) error {
			return sdkWorker(ctx, e, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}, "2025-11-25", kind, w, calls, steps(kind, w), &echoes)
		}},
		{"2026-07-28 go-sdk", func(kind, w int) error {
			return sdkWorker(ctx, e, nil, bridge.ModernVersion, kind, w, calls, steps(kind, w), &echoes)
		}},
		{"2026-07-28 raw", func(kind, w int) error {
			for i := range calls {
				msg := fmt.Sprintf("raw %d/%d call %d", kind, w, i)
				msgs, err := rawModern(ctx, e, modernRequest{id: 1, method: "tools/call",
					params: map[string]any{"name": "echo", "arguments": map[string]any{"message": msg}}})
				if err != nil {
					return err
				}
				if len(msgs) != 1 || text(msgs[0]) != msg || msgs[0]["id"] != json.Number("1") {
					return fmt.Errorf("echo %q answered %v", msg, msgs)
				}
				echoes.Add(1)
				if i%5 == 0 {
					msgs, err := rawModern(ctx, e, modernRequest{id: 1, method: "tools/call",
						params: map[string]any{"name": "notify", "arguments": map[string]any{"method": "notifications/tools/list_changed"}}})
					if err != nil || text(msgs[len(msgs)-1]) != "ok" {
						return fmt.Errorf("notify: %v %v", msgs, err)
					}
					changes.Add(1)
				}
			}
			n := steps(kind, w)
			msgs, err := rawModern(ctx, e, modernRequest{id: 1, method: "tools/call", meta: map[string]any{"progressToken": token},
				params: map[string]any{"name": "slow", "arguments": map[string]any{"ms": 20, "steps": n}}})
			if err != nil {
				return err
			}
			var progress int
			for _, m := range msgs[:len(msgs)-1] {
				p, _ := m["params"].(map[string]any)
				if m["method"] != "notifications/progress" || p["progressToken"] != token || p["total"] != json.Number(fmt.Sprint(n)) {
					return fmt.Errorf("slow with %d steps got %v", n, m)
				}
				progress++
			}
			if last := msgs[len(msgs)-1]; text(last) != "slow done" || last["id"] != json.Number("1") || progress != n {
				return fmt.Errorf("slow with %d steps: %d progress notifications, then %v", n, progress, last)
			}
			return nil
		}},
		{"2026-07-28 MRTR", func(kind, w int) error {
			for i := range calls / 5 {
				prompt := fmt.Sprintf("mrtr %d/%d call %d", kind, w, i)
				msgs, err := rawModern(ctx, e, sampleCall(1, "", prompt, "", "", ""))
				if err != nil {
					return err
				}
				res, _ := msgs[len(msgs)-1]["result"].(map[string]any)
				handle, _ := res["requestState"].(string)
				asks, _ := res["inputRequests"].(map[string]any)
				if len(msgs) != 1 || res["resultType"] != "input_required" || len(asks) != 1 || !strings.Contains(fmt.Sprint(asks), prompt) {
					return fmt.Errorf("sample %q: %v", prompt, msgs)
				}
				for key := range asks {
					msgs, err = rawModern(ctx, e, sampleCall(2, "", prompt, handle, key, "sampled "+prompt))
				}
				if err != nil {
					return err
				}
				if len(msgs) != 1 || text(msgs[0]) != "sampled "+prompt || msgs[0]["id"] != json.Number("2") {
					return fmt.Errorf("sample %q, retried: %v", prompt, msgs)
				}
			}
			return nil
		}},
	}
	var wg sync.WaitGroup
	for k, kind := range kinds {
		for w := range workers {
			wg.Go(func() {
				if err := kind.run(k, w); err != nil {
					t.Errorf("%s %d: %v", kind.name, w, err)
				}
			})
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if want := int64(3 * workers * calls); echoes.Load() != want { // the echoing kinds
		t.Fatalf("%d echo calls answered right, want %d", echoes.Load(), want)
	}
	// The child saw each call exactly once.
	msgs, err := rawModern(ctx, e, modernRequest{id: 2, method: "tools/call", params: map[string]any{"name": "echo_count", "arguments": map[string]any{}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := text(msgs[len(msgs)-1]), fmt.Sprint(echoes.Load()); got != want {
		t.Errorf("the child answered %s echo calls, want %s", got, want)
	}
	// Every list change was in the child's output before the answer to
	// the call that made it, and so in the listen's stream: Drain ends
	// the listen now, with its completion result after them.
	e.b.Drain()
	got := listen.changes(t)
	if want := int(changes.Load()); got != want {
		t.Errorf("the listen got %d tools/list_changed, want %d", got, want)
	}
}

// listenStream is a raw subscriptions/listen whose events are read as
// they come.
type listenStream struct {
	id     int
	events chan map[string]any // closed at the stream's end
}

// openListen opens a listen for tool list changes with the given id and
// waits for its acknowledgement.
func openListen(ctx context.Context, t *testing.T, e *env, id int) *listenStream {
	t.Helper()
	resp, err := e.try(ctx, modernRequest{id: id, method: "subscriptions/listen",
		params: map[string]any{"notifications": map[string]any{"toolsListChanged": true}}}.req())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("listen: status %d, %s", resp.StatusCode, ct)
	}
	l := &listenStream{id: id, events: make(chan map[string]any, 1024)}
	go func() {
		defer close(l.events)
		r := newSSEReader(resp.Body)
		for {
			ev, ok := r.next()
			if !ok {
				return
			}
			var m map[string]any
			d := json.NewDecoder(strings.NewReader(ev.data))
			d.UseNumber()
			if d.Decode(&m) != nil {
				m = map[string]any{"undecodable": ev.data}
			}
			l.events <- m
		}
	}()
	select {
	case ack := <-l.events:
		if ack["method"] != "notifications/subscriptions/acknowledged" {
			t.Fatalf("listen: first event %v, want the acknowledgement", ack)
		}
	case <-ctx.Done():
		t.Fatal("listen: no acknowledgement")
	}
	return l
}

// changes reads the listen to its end and returns how many tool list
// changes it carried, checking that each names the listen and that the
// stream ends with the listen's completion result.
func (l *listenStream) changes(t *testing.T) int {
	t.Helper()
	var n int
	var last map[string]any
	for m := range l.events {
		last = m
		if m["method"] != "notifications/tools/list_changed" {
			continue
		}
		n++
		p, _ := m["params"].(map[string]any)
		meta, _ := p["_meta"].(map[string]any)
		if meta["io.modelcontextprotocol/subscriptionId"] != json.Number(fmt.Sprint(l.id)) {
			t.Errorf("a list change without the listen's id: %v", m)
		}
	}
	if res, _ := last["result"].(map[string]any); res["resultType"] != "complete" || last["id"] != json.Number(fmt.Sprint(l.id)) {
		t.Errorf("the listen ended with %v, want its completion result", last)
	}
	return n
}

// sdkWorker connects a go-sdk client (opts nil: unpinned, so 2026-07-28)
// that declares no capability, checks the version it negotiated, makes
// calls echo calls, each with its own message, then one slow call of n
// steps with the progress token every worker uses, and checks that it got
// exactly its own n progress notifications.
func sdkWorker(ctx context.Context, e *env, opts *mcp.ClientSessionOptions, version string, kind, w, calls, n int, echoes *atomic.Int64) error {
	progress := make(chan *mcp.ProgressNotificationParams, 100)
	client := mcp.NewClient(&mcp.Implementation{Name: "eras", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			select {
			case progress <- req.Params:
			default:
			}
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.url, HTTPClient: e.client}, opts)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		return fmt.Errorf("negotiated %s, want %s", got, version)
	}
	for i := range calls {
		msg := fmt.Sprintf("sdk %d/%d (%s) call %d", kind, w, version, i)
		got, err := sdkText(ctx, cs, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": msg}})
		if err != nil {
			return err
		}
		if got != msg {
			return fmt.Errorf("echo %q answered %q", msg, got)
		}
		echoes.Add(1)
	}
	params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"ms": 20, "steps": n}}
	params.SetProgressToken("tok")
	if got, err := sdkText(ctx, cs, params); err != nil || got != "slow done" {
		return fmt.Errorf("slow: %q, %v", got, err)
	}
	for i := 1; i <= n; i++ {
		select {
		case p := <-progress:
			if p.ProgressToken != "tok" || p.Total != float64(n) || p.Progress != float64(i) {
				return fmt.Errorf("slow with %d steps: progress #%d is %+v", n, i, p)
			}
		case <-ctx.Done():
			return fmt.Errorf("slow with %d steps: progress #%d never came", n, i)
		}
	}
	return nil
}

// sdkText calls a tool and returns its text.
func sdkText(ctx context.Context, cs *mcp.ClientSession, params *mcp.CallToolParams) (string, error) {
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		return "", fmt.Errorf("call %s: %w", params.Name, err)
	}
	if len(res.Content) != 1 {
		return "", fmt.Errorf("call %s: %d contents", params.Name, len(res.Content))
	}
	tc, _ := res.Content[0].(*mcp.TextContent)
	if tc == nil || res.IsError {
		return "", fmt.Errorf("call %s: %+v", params.Name, res)
	}
	return tc.Text, nil
}

// rawModern sends r and returns every message of its answer (JSON or SSE),
// without failing the test: for goroutines other than the test's.
func rawModern(ctx context.Context, e *env, r modernRequest) ([]map[string]any, error) {
	resp, err := e.try(ctx, r.req())
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, body)
	}
	var raws []string
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for line := range strings.Lines(string(body)) {
			if data, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data:"); ok && strings.TrimSpace(data) != "" {
				raws = append(raws, data)
			}
		}
	} else {
		raws = []string{string(body)}
	}
	var out []map[string]any
	for _, raw := range raws {
		var m map[string]any
		d := json.NewDecoder(bytes.NewReader([]byte(raw)))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			return nil, fmt.Errorf("bad message %q: %w", raw, err)
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("an empty answer")
	}
	return out, nil
}
