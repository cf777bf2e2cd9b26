package main

// What an idle stream costs the bridge, which --max-streams-per-principal
// multiplies: docs/performance.md ("Idle streams") quotes this test's
// figures, and the test holds them to a bound.

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// idleStreamBound is the most an idle stream may cost the bridge: resident
// memory and Go heap, each.
const idleStreamBound = 64 << 10

// vmRSS is the resident set size of process pid, in bytes.
func vmRSS(t testing.TB, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatalf("VmRSS %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// bridgeMemory is what the bridge holds: its resident set, its Go heap
// and goroutine stacks in use, and its goroutines.
type bridgeMemory struct{ rss, heap, goroutines float64 }

func measureBridge(t *testing.T, p *bridgeProc) bridgeMemory {
	t.Helper()
	m := scrapeMetrics(t, http.DefaultClient, p.Base)
	return bridgeMemory{
		rss:        float64(vmRSS(t, p.cmd.Process.Pid)),
		heap:       m["go_memstats_heap_inuse_bytes"] + m["go_memstats_stack_inuse_bytes"],
		goroutines: m["go_goroutines"],
	}
}

// idleStream opens one stream of a kind, given what prepare made for it.
// quiet: the stream writes nothing until its first keep-alive, so its
// open headers say it is set up.
type idleStream struct {
	name    string
	quiet   bool
	prepare func(t *testing.T, p *bridgeProc, n int) []string // per stream: a session id, or nothing
	open    func(ctx context.Context, p *bridgeProc, i int, prep string) (*http.Request, error)
}

func modernListen(ctx context.Context, url string, id int, method, name, params string) (*http.Request, error) {
	body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"` + method + `","params":{` + params +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("MCP-Protocol-Version", "2026-07-28")
	r.Header.Set("Mcp-Method", method)
	if name != "" {
		r.Header.Set("Mcp-Name", name)
	}
	return r, nil
}

var idleStreams = []idleStream{
	{name: "2026-07-28 listen", open: func(ctx context.Context, p *bridgeProc, i int, _ string) (*http.Request, error) {
		return modernListen(ctx, p.URL, i, "subscriptions/listen", "", `"notifications":{"toolsListChanged":true},`)
	}},
	{name: "2026-07-28 answer as SSE", quiet: true, open: func(ctx context.Context, p *bridgeProc, i int, _ string) (*http.Request, error) {
		return modernListen(ctx, p.URL, i, "tools/call", "hang", `"name":"hang","arguments":{},`)
	}},
	{name: "session GET stream",
		prepare: func(t *testing.T, p *bridgeProc, n int) []string {
			sids := make([]string, n)
			for i := range sids {
				sids[i] = openSession(t, p.URL).sid
			}
			return sids
		},
		open: func(ctx context.Context, p *bridgeProc, i int, sid string) (*http.Request, error) {
			r, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL, nil)
			if err != nil {
				return nil, err
			}
			r.Header.Set("Accept", "text/event-stream")
			r.Header.Set("Mcp-Session-Id", sid)
			r.Header.Set("MCP-Protocol-Version", "2025-11-25")
			return r, nil
		}},
	{name: "legacy SSE stream", open: func(ctx context.Context, p *bridgeProc, i int, _ string) (*http.Request, error) {
		r, err := http.NewRequestWithContext(ctx, http.MethodGet, p.Base+"/sse", nil)
		if err != nil {
			return nil, err
		}
		r.Header.Set("Accept", "text/event-stream")
		return r, nil
	}},
}

// TestIdleStreamMemory opens 400 idle streams of each kind on a real
// bridge (shared mode, so sessions cost no process each) and reads what
// they cost it: resident memory and Go heap (with goroutine stacks) per
// stream, each at most 64 KiB, and the goroutines each holds.
func TestIdleStreamMemory(t *testing.T) {
	const n = 400
	badchild := testpeers.BuildGo(t, "./testdata/badchild")
	for _, k := range idleStreams {
		t.Run(k.name, func(t *testing.T) {
			p := startBridge(t, nil, "--mode", "shared", "--max-streams-per-principal", "0", "--log-level", "info", "--", badchild)
			prep := make([]string, n+1)
			if k.prepare != nil {
				prep = k.prepare(t, p, n+1)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			tr := &http.Transport{MaxConnsPerHost: 0}
			defer tr.CloseIdleConnections()
			hc := &http.Client{Transport: tr}
			var mu sync.Mutex
			var open []*http.Response
			defer func() {
				for _, r := range open {
					r.Body.Close()
				}
			}()
			// openOne opens stream i and reads its first line (unless it is
			// quiet): the bridge has set it up and written to it.
			openOne := func(i int) error {
				r, err := k.open(ctx, p, i, prep[i])
				if err != nil {
					return err
				}
				resp, err := hc.Do(r)
				if err != nil {
					return err
				}
				mu.Lock()
				open = append(open, resp)
				mu.Unlock()
				if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
					return fmt.Errorf("stream %d: status %d %s", i, resp.StatusCode, resp.Header.Get("Content-Type"))
				}
				if k.quiet {
					return nil
				}
				if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
					return fmt.Errorf("stream %d: %v", i, err)
				}
				return nil
			}
			// One first, so what is made once (the 2026-07-28 pool, the
			// era probe, the tool list) is in the baseline.
			if err := openOne(n); err != nil {
				t.Fatal(err)
			}
			before := measureBridge(t, p)
			var wg sync.WaitGroup
			errs := make(chan error, n)
			sem := make(chan struct{}, 16)
			for i := range n {
				wg.Go(func() {
					sem <- struct{}{}
					defer func() { <-sem }()
					if err := openOne(i); err != nil {
						errs <- err
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			after := measureBridge(t, p)
			rss := (after.rss - before.rss) / n
			heap := (after.heap - before.heap) / n
			g := (after.goroutines - before.goroutines) / n
			t.Logf("%s: per idle stream %.1f KiB resident, %.1f KiB Go heap and stacks, %.2f goroutines (%d streams)",
				k.name, rss/1024, heap/1024, g, n)
			if rss > idleStreamBound || heap > idleStreamBound {
				t.Errorf("an idle %s costs %.1f KiB resident and %.1f KiB of Go heap, want at most %d KiB each",
					k.name, rss/1024, heap/1024, idleStreamBound>>10)
			}
		})
	}
}
