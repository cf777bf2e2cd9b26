package httpapi_test

// --max-children is a hard bound: in every mode, for both eras and many
// principals at once, the processes alive never outnumber it, not even for
// a moment. The processes are counted from /proc (this process's children,
// a PID namespace's init included) by a sampler that reads the table
// without pause for the whole flood.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// liveChildren counts this process's children whose command line holds
// marker (the badchild's path: the child itself, or the init of its PID
// namespace, which runs it).
func liveChildren(marker []byte) int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0
	}
	n := 0
	for _, task := range tasks {
		b, _ := os.ReadFile("/proc/self/task/" + task.Name() + "/children")
		for _, f := range strings.Fields(string(b)) {
			if cmd, err := os.ReadFile("/proc/" + f + "/cmdline"); err == nil && bytes.Contains(cmd, marker) {
				n++
			}
		}
	}
	return n
}

// processSampler counts the live children without pause until stopped,
// and keeps the most it saw.
type processSampler struct {
	most atomic.Int64
	stop chan struct{}
	done chan struct{}
}

func sampleProcesses(marker string) *processSampler {
	s := &processSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			if n := int64(liveChildren([]byte(marker))); n > s.most.Load() {
				s.most.Store(n)
			}
			select {
			case <-s.stop:
				return
			default:
				runtime.Gosched()
			}
		}
	}()
	return s
}

// max stops the sampler and returns the most processes it saw at once.
func (s *processSampler) max() int {
	close(s.stop)
	<-s.done
	return int(s.most.Load())
}

// TestMaxChildrenHardBound: 30 JWT subjects at once, each starting 2025
// sessions, 2026-07-28 calls that run on their principal's pool and
// calls that ask their client for input (each on a child leased to it,
// left parked), 300 requests in all, against --max-children 5: the
// processes alive never exceed 5, in any mode, warm pool included, and
// what could not get a process is refused with 503 and Retry-After. Once
// everything has ended, the bridge's count and the process table agree:
// every slot was given back exactly once.
func TestMaxChildrenHardBound(t *testing.T) {
	const (
		bound    = 5
		subjects = 30
		requests = 300
	)
	withPool := mode{name: "per-session with a warm pool", bridge: bridge.Config{Prespawn: 2}}
	for _, m := range []mode{perSession, withPool, shared, perIdentity, stateless} {
		t.Run(m.name, func(t *testing.T) {
			// Short enough for sessions, pools and parked calls to end by
			// themselves once the flood is over.
			cfg := m.bridge
			cfg.MaxChildren = bound
			cfg.Stateless = m.http.Stateless
			cfg.IdleTimeout = 300 * time.Millisecond
			cfg.InputTTL = 300 * time.Millisecond
			f := newAuthFixtureBridge(t, m.http, cfg)
			marker := testpeers.BuildGo(t, "./testdata/badchild")
			tokens := make([]string, subjects)
			for i := range tokens {
				tokens[i] = f.jwt(t, "subject-"+strconv.Itoa(i), nil)
			}
			ctx, cancel := context.WithTimeout(t.Context(), waitsSafety)
			defer cancel()

			sampler := sampleProcesses(marker)
			var (
				wg       sync.WaitGroup
				mu       sync.Mutex
				statuses = map[string]int{}
			)
			for i := range requests {
				wg.Go(func() {
					tok := tokens[i%subjects]
					var r req
					kind := []string{"2025 session", "2026-07-28 call", "2026-07-28 call asking for input"}[i%3]
					switch kind {
					case "2025 session":
						r = req{body: sprintf(initBody, "2025-11-25"), header: bearer(tok)}
					case "2026-07-28 call":
						r = modernRequest{id: i, method: "tools/call", token: tok,
							params: map[string]any{"name": "echo", "arguments": map[string]any{"message": "hi"}}}.req()
					default:
						r = sampleCall(i, tok, "p"+strconv.Itoa(i), "", "", "").req()
					}
					resp, err := f.try(ctx, r)
					if err != nil {
						t.Errorf("%s: %v", kind, err)
						return
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
						t.Errorf("%s: 503 without Retry-After", kind)
					}
					if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusServiceUnavailable {
						t.Errorf("%s: status %d: %s", kind, resp.StatusCode, body)
					}
					mu.Lock()
					statuses[fmt.Sprintf("%s %d", kind, resp.StatusCode)]++
					mu.Unlock()
				})
			}
			wg.Wait()
			most := sampler.max()
			t.Logf("most processes at once: %d (bound %d); answers: %v", most, bound, statuses)
			if most > bound {
				t.Fatalf("%d processes alive at once, over --max-children %d", most, bound)
			}
			if most < 2 {
				t.Fatalf("the sampler saw at most %d process: it did not see the flood", most)
			}

			// Sessions idle out, pools are reclaimed and parked calls
			// expire: what is left is the shared child (shared, stateless)
			// or the warm pool, and the bridge counts exactly what runs.
			rest := 0
			switch {
			case m.bridge.Mode == bridge.ModeShared || m.http.Stateless:
				rest = 1
			case cfg.Prespawn > 0:
				rest = cfg.Prespawn
			}
			eventually(t, "every session, pool and parked call ended", func() bool {
				return f.b.Len() == 0 && f.b.Children() == rest && liveChildren([]byte(marker)) == rest
			})
		})
	}
}
