package httpapi_test

// The per-principal cap on open streams (--max-streams-per-principal):
// every kind of stream a principal can hold open counts, together, and
// what is over the cap gets 429 before anything starts.

import (
	"context"
	"encoding/json"

	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
)

// streamKind opens one stream of a kind as token's, and returns its
// response once the headers are in.
type streamKind struct {
	name string
	open func(ctx context.Context, e *env, token string, i int) (*http.Response, error)
}

var streamKinds = []streamKind{
	{"a session's GET stream", func(ctx context.Context, e *env, token string, i int) (*http.Response, error) {
		sid := e.initializeAs(bearer(token))
		return e.try(ctx, req{method: http.MethodGet, sid: sid, version: "2025-11-25", header: bearer(token)})
	}},
	{"a legacy SSE stream", func(ctx context.Context, e *env, token string, i int) (*http.Response, error) {
		r, err := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+"/sse", nil)
		if err != nil {
			return nil, err
		}
		r.Header.Set("Accept", "text/event-stream")
		r.Header.Set("Authorization", "Bearer "+token)
		return e.client.Do(r)
	}},
	{"a 2026-07-28 listen", func(ctx context.Context, e *env, token string, i int) (*http.Response, error) {
		return e.try(ctx, modernRequest{id: i, method: "subscriptions/listen", token: token,
			params: map[string]any{"notifications": map[string]any{"toolsListChanged": true}}}.req())
	}},
	{"a 2026-07-28 answer sent as SSE", func(ctx context.Context, e *env, token string, i int) (*http.Response, error) {
		// It never answers: past --sse-delay its answer becomes a stream.
		return e.try(ctx, modernRequest{id: i, method: "tools/call", token: token,
			params: map[string]any{"name": "hang", "arguments": map[string]any{}}}.req())
	}},
}

// openStream is a stream held open, and how to close it.
type openStream struct {
	resp  *http.Response
	close context.CancelFunc
}

// open opens a stream of kind k as token's and checks it is one (200,
// text/event-stream).
func open(t *testing.T, e *env, k streamKind, token string, i int) openStream {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	resp, err := k.open(ctx, e, token, i)
	if err != nil {
		cancel()
		t.Fatalf("%s: %v", k.name, err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		t.Fatalf("%s: status %d %s, want an open stream", k.name, resp.StatusCode, body)
	}
	s := openStream{resp, cancel}
	t.Cleanup(s.close)
	return s
}

// refusedStream checks that a stream of kind k is refused with 429, a
// Retry-After and a JSON-RPC error naming the flag.
func refusedStream(t *testing.T, e *env, k streamKind, token string, i int) {
	t.Helper()
	resp, err := k.open(t.Context(), e, token, i)
	if err != nil {
		t.Fatalf("%s: %v", k.name, err)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body.Close()
		t.Fatalf("%s over the cap: a stream opened, want 429", k.name)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var msg struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &msg)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" ||
		msg.Error.Code != bridge.CodeInvalidRequest || !strings.Contains(msg.Error.Message, "--max-streams-per-principal") {
		t.Fatalf("%s over the cap: status %d, Retry-After %q, %s; want 429 naming --max-streams-per-principal",
			k.name, resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
}

// TestStreamCap: with --max-streams-per-principal 3, alice's fourth
// stream of each kind is refused with 429 while bob opens his; once she
// closes one, she may open another. Streams of different kinds count
// together.
func TestStreamCap(t *testing.T) {
	const limit = 3
	opts := httpapi.Options{MaxStreamsPerPrincipal: limit}
	for _, k := range streamKinds {
		t.Run(k.name, func(t *testing.T) {
			e := newAuthFixture(t, opts).env
			var held []openStream
			for i := range limit {
				held = append(held, open(t, e, k, aliceToken, i))
			}
			refusedStream(t, e, k, aliceToken, limit)
			open(t, e, k, bobToken, 100)
			held[0].close()
			eventually(t, "alice's closed stream gave its place back", func() bool {
				resp, err := k.open(t.Context(), e, aliceToken, 200)
				if err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode == http.StatusTooManyRequests {
					resp.Body.Close()
					return false
				}
				t.Cleanup(func() { resp.Body.Close() })
				return resp.StatusCode == http.StatusOK
			})
		})
	}
	t.Run("every kind together", func(t *testing.T) {
		e := newAuthFixture(t, opts).env
		for i, k := range streamKinds[:limit] {
			open(t, e, k, aliceToken, i)
		}
		for i, k := range streamKinds {
			refusedStream(t, e, k, aliceToken, 10+i)
		}
	})
}

// TestStreamFlood: 40 listens at once from one token, with the cap at 5:
// exactly 5 open, every other one is refused with 429, and another
// principal is not affected.
func TestStreamFlood(t *testing.T) {
	const limit, flood = 5, 40
	e := newAuthFixture(t, httpapi.Options{MaxStreamsPerPrincipal: limit}).env
	listen := streamKinds[2]
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[int]int{}
	for i := range flood {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(t.Context())
			t.Cleanup(cancel)
			resp, err := listen.open(ctx, e, aliceToken, i)
			if err != nil {
				t.Error(err)
				return
			}
			if resp.StatusCode != http.StatusOK {
				resp.Body.Close()
			}
			mu.Lock()
			got[resp.StatusCode]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if got[http.StatusOK] != limit || got[http.StatusTooManyRequests] != flood-limit {
		t.Fatalf("statuses %v; want %d open and %d refused with 429", got, limit, flood-limit)
	}
	open(t, e, listen, bobToken, 1000)
	if n := e.b.ModernSnapshot().Listens; n != limit+1 {
		t.Errorf("%d listens open, want %d", n, limit+1)
	}
}
