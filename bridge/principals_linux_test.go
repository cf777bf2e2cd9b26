package bridge_test

// The bridge keeps state per principal (a 2026-07-28 pool per principal,
// warm leases by owner, the count of calls on leased children) only while
// the principal has something live: 10,000 JWT subjects, each with a call
// that asks its client for input and the retry that completes it, leave
// no entry behind once their children are reclaimed, and the process's
// memory returns to where it was. Children are in memory (memchild_test.go):
// the state under test is the bridge's, and 20,000 process starts would
// take minutes.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/auth/authtest"
	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
)

const (
	jwtIssuer = "https://issuer.example"
	publicURL = "https://bridge.example/mcp"
)

// rssKiB is the process's resident set, from /proc/self/status.
func rssKiB(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// sampleBody is a 2026-07-28 tools/call of the sample tool from a client
// that declared sampling; with state, the retry answering key.
func sampleBody(id int, state, key string) []byte {
	params := map[string]any{
		"name":      "sample",
		"arguments": map[string]any{"prompt": "p"},
		"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    bridge.ModernVersion,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{"sampling": map[string]any{}},
		},
	}
	if state != "" {
		params["requestState"] = state
		params["inputResponses"] = map[string]any{key: map[string]any{
			"role": "assistant", "model": "m", "content": map[string]any{"type": "text", "text": "sampled"}}}
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
	return b
}

// post sends body as token's and decodes the one JSON answer's result.
func post(client *http.Client, url, token string, body []byte) (map[string]any, error) {
	r, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json")
	r.Header.Set("MCP-Protocol-Version", bridge.ModernVersion)
	r.Header.Set("Mcp-Method", "tools/call")
	r.Header.Set("Mcp-Name", "sample")
	r.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var msg struct {
		Result map[string]any  `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil || resp.StatusCode != http.StatusOK || msg.Result == nil {
		return nil, fmt.Errorf("status %d, error %s (%v)", resp.StatusCode, msg.Error, err)
	}
	return msg.Result, nil
}

// exchange is one subject's call: input_required, then the retry that
// completes it.
func exchange(client *http.Client, url, token string) error {
	res, err := post(client, url, token, sampleBody(1, "", ""))
	if err != nil {
		return fmt.Errorf("call: %w", err)
	}
	state, _ := res["requestState"].(string)
	asks, _ := res["inputRequests"].(map[string]any)
	if res["resultType"] != "input_required" || state == "" || len(asks) != 1 {
		return fmt.Errorf("call: %v, want input_required", res)
	}
	var key string
	for k := range asks {
		key = k
	}
	if res, err = post(client, url, token, sampleBody(2, state, key)); err != nil {
		return fmt.Errorf("retry: %w", err)
	}
	if res["resultType"] != "complete" {
		return fmt.Errorf("retry: %v, want the call's answer", res)
	}
	return nil
}

func TestPrincipalsForgotten(t *testing.T) {
	const (
		warmup  = 500
		workers = 64
	)
	// Under the race detector, which makes each 7 times slower, a tenth:
	// test.sh runs the whole without it, and checks RSS there.
	subjects := 10000
	if raceDetector {
		subjects = 1000
	}
	is := authtest.NewIssuer(t)
	tokens := make([]string, warmup+subjects)
	for i := range tokens {
		tokens[i] = authtest.Sign(t, "HS256", is.Secret, "", authtest.Claims(jwtIssuer, "subject-"+strconv.Itoa(i), publicURL))
	}
	for _, mode := range []string{bridge.ModePerSession, bridge.ModeShared} {
		t.Run(mode, func(t *testing.T) {
			discard := slog.New(slog.DiscardHandler)
			b, err := bridge.NewInMemory(bridge.Config{Command: []string{"badchild"}, Mode: mode,
				ChildProtocol: bridge.ChildProtocolLegacy, IdleTimeout: 20 * time.Millisecond, Logger: discard})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			j, err := auth.NewJWT(ctx, auth.JWTConfig{Secret: is.Secret, Issuer: jwtIssuer, Audiences: []string{publicURL}, Logger: discard})
			if err != nil {
				t.Fatal(err)
			}
			h, err := httpapi.Handler(httpapi.Options{Bridge: b, Auth: j, PublicURL: publicURL, LoopbackOnly: true, Logger: discard})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h)
			t.Cleanup(func() {
				srv.Close()
				cancel()
				b.Close(context.Background())
			})
			url, client := srv.URL+"/mcp", srv.Client()
			run := func(tokens []string) {
				t.Helper()
				next := make(chan string)
				errs := make(chan error, workers)
				var wg sync.WaitGroup
				for range workers {
					wg.Go(func() {
						for tok := range next {
							if err := exchange(client, url, tok); err != nil {
								errs <- err
								return
							}
						}
					})
				}
			feed:
				for _, tok := range tokens {
					select {
					case next <- tok:
					case err := <-errs:
						t.Error(err)
						break feed
					}
				}
				close(next)
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Error(err)
				}
				if t.Failed() {
					t.FailNow()
				}
			}
			rest := 0 // what stays: the shared child
			if mode == bridge.ModeShared {
				rest = 1
			}
			// settle waits for the janitor to reclaim every child (every
			// 10 ms), then returns the process's RSS and the Go heap in
			// use, in KiB.
			settle := func() (rss, heap uint64) {
				t.Helper()
				deadline := time.NewTimer(30 * time.Second) // a safety net
				defer deadline.Stop()
				tick := time.NewTicker(5 * time.Millisecond)
				defer tick.Stop()
				for b.PrincipalEntries() != 0 || b.Children() != rest {
					select {
					case <-deadline.C:
						t.Fatalf("never empty: %d entries by principal, %d children", b.PrincipalEntries(), b.Children())
					case <-tick.C:
					}
				}
				srv.CloseClientConnections()
				runtime.GC()
				debug.FreeOSMemory()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				return uint64(rssKiB(t)), ms.HeapInuse >> 10
			}
			// The warm-up brings the process to its working size: the
			// HTTP connections, buffers and goroutine stacks every later
			// subject reuses.
			run(tokens[:warmup])
			rss0, heap0 := settle()
			run(tokens[warmup:])
			rss1, heap1 := settle()
			grew := func(a, b uint64) float64 { return 100 * (float64(b) - float64(a)) / float64(a) }
			t.Logf("after %d subjects, then %d more: RSS %d then %d KiB (%+.1f%%), Go heap in use %d then %d KiB (%+.1f%%), %d goroutines",
				warmup, subjects, rss0, rss1, grew(rss0, rss1), heap0, heap1, grew(heap0, heap1), runtime.NumGoroutine())
			switch {
			case raceDetector:
				// Under the race detector the maps are checked (settle
				// waits for them to empty), and memory is not: its own
				// memory grows with every goroutine, and at this scale
				// the heap moves by a megabyte either way (seen +35% in
				// a CI run on a loaded machine). test.sh runs this test
				// without it, where the bounds below hold over 10,000.
				t.Log("memory not checked: the race detector's own memory grows with every goroutine (test.sh runs this test without it)")
			case grew(heap0, heap1) > 10:
				t.Errorf("the Go heap grew by more than 10%% over %d subjects", subjects)
			case grew(rss0, rss1) > 25:
				// RSS holds what the heap does not (goroutine stacks,
				// threads, the runtime's own tables), and moves more
				// between runs: +11% was seen once on CI with the heap
				// at +1.6%. What it is here to catch is a goroutine or a
				// thread kept per subject: at 2 KiB of stack at least,
				// 10,000 of them are 20 MB, +75% on a working size of
				// about 26 MB. The heap's bound above catches 64 bytes a
				// subject.
				t.Errorf("RSS grew by more than 25%% over %d subjects", subjects)
			}
		})
	}
}
