package httpapi_test

// Calls that may ask their client for input (MRTR) and the process
// budget: each runs on a child leased to it and may park there while its
// client answers, so --max-parked is checked before its process starts,
// and one principal's parked calls cannot leave another with nothing.

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// TestMaxParkedBeforeSpawn: alice floods 20 input-asking calls at once
// with --max-parked 3: three park, the other 17 get 429 with Retry-After
// and start no process (before, each started a process, ran its tool,
// and was killed when it asked, with 503). Bob, another principal, parks
// his own meanwhile.
func TestMaxParkedBeforeSpawn(t *testing.T) {
	for _, m := range []mode{perSession, shared, perIdentity} {
		t.Run(m.name, func(t *testing.T) {
			e := twoPrincipals(t, m, bridge.Config{MaxParked: 3})
			// The pool's base child first, so what follows starts leases
			// only.
			echo := modernRequest{id: 1, method: "tools/call", token: aliceToken,
				params: map[string]any{"name": "echo", "arguments": map[string]any{"message": "hi"}}}
			if got := e.modernText(echo); got != "hi" {
				t.Fatalf("echo: %q", got)
			}
			spawned := e.b.Stats().ChildrenSpawned.Load()
			const flood = 20
			var wg sync.WaitGroup
			var mu sync.Mutex
			got := map[string]int{}
			for i := range flood {
				wg.Go(func() {
					resp, err := e.try(t.Context(), sampleCall(100+i, aliceToken, fmt.Sprint("p", i), "", "", "").req())
					if err != nil {
						t.Error(err)
						return
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					outcome := fmt.Sprint(resp.StatusCode)
					switch {
					case resp.StatusCode == http.StatusOK && bytes.Contains(body, []byte(`"input_required"`)):
						outcome = "parked"
					case resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "" && bytes.Contains(body, []byte("--max-parked")):
						outcome = "429"
					default:
						t.Errorf("status %d: %s", resp.StatusCode, body)
					}
					mu.Lock()
					got[outcome]++
					mu.Unlock()
				})
			}
			wg.Wait()
			if got["parked"] != 3 || got["429"] != flood-3 {
				t.Fatalf("outcomes %v; want 3 parked and %d refused with 429", got, flood-3)
			}
			if n := e.b.Stats().ChildrenSpawned.Load() - spawned; n != 3 {
				t.Errorf("%d processes started for the flood, want 3: a refused call must cost none", n)
			}
			e.startSample(200, bobToken, "bob's")
		})
	}
}

// TestParkedFairShare: alice's three parked calls hold every process
// --max-children leaves for leases; bob's call takes one back (alice's
// parked longest, whose retry then finds nothing and is told to send the
// request again) rather than getting 503. Then alice holds 2 and bob 1:
// neither can take another from the other, and both get 503 for a
// fourth; alice's other calls complete.
func TestParkedFairShare(t *testing.T) {
	for _, m := range []mode{perSession, shared, perIdentity} {
		t.Run(m.name, func(t *testing.T) {
			// The pools' base children (alice's and bob's, or the shared
			// one) and three leases.
			bound := 5
			if m.bridge.Mode == bridge.ModeShared {
				bound = 4
			}
			e := twoPrincipals(t, m, bridge.Config{MaxChildren: bound})
			var alice []parked
			for i := range 3 {
				alice = append(alice, e.startSample(1+i, aliceToken, fmt.Sprint("alice ", i)))
			}
			bob := e.startSample(10, bobToken, "bob 0")
			if n := e.b.Stats().InputPreempted.Load(); n != 1 {
				t.Fatalf("InputPreempted = %d, want 1", n)
			}
			e.refused(sampleCall(11, aliceToken, "alice 0", alice[0].handle, alice[0].key, "late"), "requestState is invalid, expired or already used")
			for _, tc := range []struct {
				token, who string
			}{{aliceToken, "alice"}, {bobToken, "bob"}} {
				resp := e.do(sampleCall(20, tc.token, tc.who+" 3", "", "", "").req())
				checkStatus(t, resp, http.StatusServiceUnavailable, bridge.CodeInternalError)
			}
			for i, p := range alice[1:] {
				e.completes(sampleCall(30+i, aliceToken, fmt.Sprint("alice ", i+1), p.handle, p.key, "sampled"), "sampled")
			}
			e.completes(sampleCall(40, bobToken, "bob 0", bob.handle, bob.key, "sampled"), "sampled")
		})
	}
}
