package httpapi_test

// Closing a 2026-07-28 request's response stream cancels the request
// ("Closing the SSE response stream MUST be treated ... as cancellation"):
// in front of a legacy child, the child gets notifications/cancelled for
// it, and a leased child whose call was cancelled is stopped rather than
// given to the next call. A call that has sent nothing yet has its stream
// too, once --sse-delay has passed: there is something to close.

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// cancelAfterFirstEvent sends r, reads the first event of its SSE answer
// (or none, with first false), then closes the stream.
func (e *env) cancelAfterFirstEvent(r modernRequest, first bool) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.t.Context(), waitsSafety)
	defer cancel()
	resp := e.doCtx(ctx, r.req())
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		e.t.Fatalf("status %d, %s; want an SSE stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if first {
		if _, ok := newSSEReader(resp.Body).next(); !ok {
			e.t.Fatal("the stream ended before its first event")
		}
	}
	cancel()
	resp.Body.Close()
}

// modernText is the text of a modern call's answer, failing the test on
// anything else.
func (e *env) modernText(r modernRequest) string {
	e.t.Helper()
	msgs := readMessages(e.t, e.do(r.req()))
	if len(msgs) == 0 || text(msgs[len(msgs)-1]) == "" {
		e.t.Fatalf("%s: %v", r.params["name"], msgs)
	}
	return text(msgs[len(msgs)-1])
}

func TestModernCancelOnSharedChild(t *testing.T) {
	e := newEnv(t, envOpts{bridge: bridge.Config{Mode: bridge.ModeShared}})
	cancels := func() []json.RawMessage {
		var ids []json.RawMessage
		if err := json.Unmarshal([]byte(e.modernText(modernRequest{id: 2, method: "tools/call", params: map[string]any{"name": "cancels", "arguments": map[string]any{}}})), &ids); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	if got := cancels(); len(got) != 0 {
		t.Fatalf("cancels before: %s", got)
	}
	// A client that declares nothing is served by the shared child, which
	// other calls (here, cancels) reach too.
	e.cancelAfterFirstEvent(modernRequest{id: 1, method: "tools/call", meta: map[string]any{"progressToken": "p"},
		params: map[string]any{"name": "slow", "arguments": map[string]any{"ms": 600000, "steps": 6000}}}, true)
	deadline := time.Now().Add(waitsSafety)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for got := cancels(); len(got) != 1; got = cancels() {
		if len(got) > 1 || time.Now().After(deadline) {
			t.Fatalf("the child saw notifications/cancelled for %s, want one request", got)
		}
		<-tick.C
	}
}

func TestModernCancelStopsLease(t *testing.T) {
	for _, m := range []mode{perSession, shared, perIdentity} {
		t.Run(m.name, func(t *testing.T) {
			e := modeEnv(t, m, bridge.Config{})
			sampling := map[string]any{"sampling": map[string]any{}}
			call := func(id int, tool string) modernRequest {
				return modernRequest{id: id, method: "tools/call", caps: sampling, params: map[string]any{"name": tool, "arguments": map[string]any{}}}
			}
			// A client that may be asked for sampling gets a child leased to
			// its call; answered, the lease goes back for the next call.
			pid := e.modernText(call(1, "pid"))
			if again := e.modernText(call(2, "pid")); again != pid {
				t.Fatalf("pids %s then %s: want the warm lease again", pid, again)
			}
			e.cancelAfterFirstEvent(call(3, "hang"), false)
			n, _ := strconv.Atoi(pid)
			waitFor(t, func() bool { return processGone(n) })
			if next := e.modernText(call(4, "pid")); next == pid {
				t.Errorf("the next call got the cancelled call's child %s", pid)
			}
		})
	}
}
