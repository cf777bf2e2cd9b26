package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func sharedEnv(t *testing.T) *env {
	return newEnv(t, envOpts{bridge: bridge.Config{Mode: bridge.ModeShared}})
}

// TestSharedOneChild: every session is served by one child, initialized
// once; each session gets its own negotiated version where the child
// speaks it.
func TestSharedOneChild(t *testing.T) {
	e := sharedEnv(t)
	a := e.initialize("2025-11-25")
	resp := e.do(req{body: fmt.Sprintf(initBody, "2025-06-18")})
	msgs := readMessages(t, resp)
	b := resp.Header.Get("Mcp-Session-Id")
	if v := msgs[0]["result"].(map[string]any)["protocolVersion"]; v != "2025-06-18" || msgs[0]["id"].(json.Number) != "1" {
		t.Fatalf("second session's initialize: %v", msgs)
	}
	_, pa := e.call(a, 1, "pid", nil)
	_, pb := e.call(b, 1, "pid", nil)
	if text(pa[0]) == "" || text(pa[0]) != text(pb[0]) {
		t.Fatalf("pids %q and %q: want one shared child", text(pa[0]), text(pb[0]))
	}
	// Deleting one session leaves the other and the child alone.
	checkStatus(t, e.do(req{method: "DELETE", sid: a}), 200, 0)
	_, again := e.call(b, 2, "pid", nil)
	if text(again[0]) != text(pb[0]) {
		t.Fatalf("the child changed after a DELETE: %q", text(again[0]))
	}
}

// TestSharedCollidingIDs: 50 sessions use the same request ids and
// progress tokens at the same time; every answer and every progress
// notification reaches its own session and request.
func TestSharedCollidingIDs(t *testing.T) {
	e := sharedEnv(t)
	const sessions, calls = 50, 20
	sids := make([]string, sessions)
	for i := range sids {
		sids[i] = e.initialize("2025-11-25")
	}
	var wg sync.WaitGroup
	errs := make(chan error, sessions*2)
	for i, sid := range sids {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for n := range calls {
				want := fmt.Sprintf("session %d call %d", i, n)
				body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": n, "method": "tools/call",
					"params": map[string]any{"name": "echo", "arguments": map[string]any{"message": want}}})
				msgs := readMessages(t, e.do(req{sid: sid, body: string(body)}))
				last := msgs[len(msgs)-1]
				if text(last) != want || last["id"].(json.Number).String() != fmt.Sprint(n) {
					errs <- fmt.Errorf("session %d call %d got %v", i, n, last)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			steps := 1 + i%4
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":"p","method":"tools/call","params":{"name":"slow","arguments":{"ms":%d,"steps":%d},"_meta":{"progressToken":"tok"}}}`, steps*5, steps)
			msgs := readMessages(t, e.do(req{sid: sid, body: body, accept: "text/event-stream"}))
			progress := 0
			for _, m := range msgs {
				if m["method"] == "notifications/progress" {
					p := m["params"].(map[string]any)
					if p["progressToken"] != "tok" || p["total"].(json.Number).String() != fmt.Sprint(steps) {
						errs <- fmt.Errorf("session %d got foreign progress %v", i, p)
						return
					}
					progress++
				}
			}
			if last := msgs[len(msgs)-1]; last["id"] != "p" || text(last) != "slow done" || progress != steps {
				errs <- fmt.Errorf("session %d: %d progress of %d, last %v", i, progress, steps, last)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestSharedListChanged: a list change reaches every session, once each.
func TestSharedListChanged(t *testing.T) {
	e := sharedEnv(t)
	var gets []*sseReader
	var sids []string
	for range 3 {
		sid := e.initialize("2025-11-25")
		get := e.do(req{method: "GET", sid: sid})
		t.Cleanup(func() { get.Body.Close() })
		gets = append(gets, newSSEReader(get.Body))
		sids = append(sids, sid)
	}
	e.notifyFromChild(sids[0], 1, "notifications/tools/list_changed")
	e.notifyFromChild(sids[1], 2, "notifications/prompts/list_changed")
	for i, g := range gets {
		for _, want := range []string{"notifications/tools/list_changed", "notifications/prompts/list_changed"} {
			ev, ok := g.next()
			if !ok {
				t.Fatalf("session %d: stream ended", i)
			}
			if m := decode(t, ev.data); m["method"] != want {
				t.Fatalf("session %d got %v, want %s once", i, m, want)
			}
		}
	}
}

// TestSharedLogLevels: each session receives log messages at or above its
// own level.
func TestSharedLogLevels(t *testing.T) {
	e := sharedEnv(t)
	quiet := e.initialize("2025-11-25")
	loud := e.initialize("2025-11-25")
	for sid, level := range map[string]string{quiet: "error", loud: "debug"} {
		msgs := readMessages(t, e.do(req{sid: sid, body: `{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"` + level + `"}}`}))
		if len(msgs) != 1 || msgs[0]["result"] == nil {
			t.Fatalf("setLevel: %v", msgs)
		}
	}
	count := func(sid string) int {
		msgs := readMessages(t, e.do(req{sid: sid, accept: "text/event-stream", body: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{"ms":10,"steps":2}}}`}))
		n := 0
		for _, m := range msgs {
			if m["method"] == "notifications/message" {
				n++
			}
		}
		return n
	}
	if n := count(quiet); n != 0 {
		t.Errorf("a session at level error got %d info messages", n)
	}
	if n := count(loud); n != 2 {
		t.Errorf("a session at level debug got %d of 2 info messages", n)
	}
}

// TestSharedSampling: a server request while one call is in flight goes
// to that call's session; with two in flight it is refused, not guessed.
func TestSharedSampling(t *testing.T) {
	e := sharedEnv(t)
	a := e.initialize("2025-11-25")
	b := e.initialize("2025-11-25")

	resp := e.do(req{sid: a, accept: "text/event-stream", body: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"sample","arguments":{"prompt":"p"}}}`})
	sr := newSSEReader(resp.Body)
	ev, _ := sr.next()
	m := decode(t, ev.data)
	if m["method"] != "sampling/createMessage" {
		t.Fatalf("first event %v", m)
	}
	answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"role":"assistant","model":"m","content":{"type":"text","text":"sampled!"}}}`, m["id"])
	// Another session cannot answer it.
	checkStatus(t, e.do(req{sid: b, body: strings.Replace(answer, "sampled!", "wrong session", 1)}), 202, 0)
	checkStatus(t, e.do(req{sid: a, body: answer}), 202, 0)
	ev, _ = sr.next()
	if m := decode(t, ev.data); text(m) != "sampled!" {
		t.Fatalf("response %v", m)
	}
	resp.Body.Close()

	// Ambiguous: a long call of a's in flight when b's tool asks.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slow := e.doCtx(ctx, req{sid: a, accept: "text/event-stream", body: `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"slow","arguments":{"ms":60000,"steps":1}}}`})
	defer slow.Body.Close()
	waitInFlight(t, e, a, 1)
	_, msgs := e.call(b, 7, "sample", map[string]any{"prompt": "p"})
	last := msgs[len(msgs)-1]
	raw, _ := json.Marshal(last)
	if last["error"] == nil || !strings.Contains(string(raw), "per-session") {
		t.Fatalf("ambiguous sampling: %s", raw)
	}
}

// waitInFlight polls (with a hard deadline) until the child has n
// requests in flight: a condition, not a timing.
func waitInFlight(t *testing.T, e *env, sid string, n int) {
	t.Helper()
	s, err := e.b.Session(sid, "")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for s.InFlight() < n {
		if time.Now().After(deadline) {
			t.Fatalf("never %d requests in flight", n)
		}
		runtime.Gosched()
	}
}

// TestSharedRestart: a crashed shared child fails what was in flight, is
// restarted and re-initialized, and sessions go on.
func TestSharedRestart(t *testing.T) {
	e := sharedEnv(t)
	a := e.initialize("2025-11-25")
	b := e.initialize("2025-11-25")
	sa, _ := e.b.Session(a, "")
	old := sa.ChildPid()
	_, msgs := e.call(a, 1, "crash", map[string]any{"code": 9})
	if msgs[0]["error"] == nil {
		t.Fatalf("crash: %v", msgs)
	}
	deadline := time.Now().Add(20 * time.Second)
	for pid := sa.ChildPid(); pid == 0 || pid == old; pid = sa.ChildPid() {
		if time.Now().After(deadline) {
			t.Fatal("the shared child was not restarted")
		}
		runtime.Gosched()
	}
	for _, sid := range []string{a, b} {
		_, msgs := e.call(sid, 2, "echo", map[string]any{"message": "after"})
		if text(msgs[len(msgs)-1]) != "after" {
			t.Fatalf("session after restart: %v", msgs)
		}
	}
}

// TestStateless: no sessions; every POST stands alone on one
// already-initialized child; GET and DELETE are 405.
func TestStateless(t *testing.T) {
	e := newEnv(t, envOpts{http: httpapi.Options{Stateless: true}})
	resp := e.do(req{body: fmt.Sprintf(initBody, "2025-06-18")})
	msgs := readMessages(t, resp)
	if resp.Header.Get("Mcp-Session-Id") != "" || msgs[0]["result"].(map[string]any)["protocolVersion"] != "2025-06-18" {
		t.Fatalf("initialize: %v %v", resp.Header, msgs)
	}
	var pids []string
	for i := range 3 {
		resp, msgs := e.call("", i, "pid", nil)
		if resp.StatusCode != 200 || resp.Header.Get("Mcp-Session-Id") != "" {
			t.Fatalf("call: %d %v", resp.StatusCode, resp.Header)
		}
		pids = append(pids, text(msgs[0]))
	}
	if pids[0] == "" || pids[0] != pids[1] || pids[1] != pids[2] {
		t.Fatalf("pids %v: want one child for every request", pids)
	}
	// An SSE answer has no event ids and no priming event: no GET could
	// resume it, so a client must not be invited to try.
	slow := e.do(req{version: "2025-11-25", accept: "text/event-stream",
		body: `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"slow","arguments":{"ms":10,"steps":2},"_meta":{"progressToken":"p"}}}`})
	events := readSSE(t, slow.Body)
	for _, ev := range events {
		if ev.id != "" || ev.data == "" {
			t.Fatalf("stateless SSE event %+v: want data and no id", ev)
		}
	}
	if len(events) < 2 {
		t.Fatalf("stateless SSE: %+v", events)
	}
	checkStatus(t, e.do(req{body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`}), 202, 0)
	checkStatus(t, e.do(req{method: "GET"}), 405, bridge.CodeInvalidRequest)
	checkStatus(t, e.do(req{method: "DELETE"}), 405, bridge.CodeInvalidRequest)
	if n := e.b.Len(); n != 0 {
		t.Fatalf("%d sessions registered", n)
	}
}

// TestStatelessAudit: a stateless POST goes through the same admission
// as any other, so the audit log has its line too (with no session), and
// the tool policy answers for the child.
func TestStatelessAudit(t *testing.T) {
	rule, err := auth.ParseToolRule("*=crash", true)
	if err != nil {
		t.Fatal(err)
	}
	audit := &syncBuffer{}
	e := newEnv(t, envOpts{http: httpapi.Options{Stateless: true, Audit: audit, ToolPolicy: auth.NewToolPolicy([]auth.ToolRule{rule})}})
	readMessages(t, e.do(req{body: fmt.Sprintf(initBody, "2025-06-18")}))
	if _, msgs := e.call("", 1, "echo", map[string]any{"message": "hi"}); text(msgs[0]) != "hi" {
		t.Fatalf("echo: %v", msgs)
	}
	if _, msgs := e.call("", 2, "crash", map[string]any{"code": 3}); msgs[0]["error"] == nil {
		t.Fatalf("a denied call: %v", msgs)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(audit.String()), "\n") {
		var ln struct{ Session, Method, Tool, Outcome string }
		if err := json.Unmarshal([]byte(l), &ln); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		got = append(got, strings.Join([]string{ln.Session, ln.Method, ln.Tool, ln.Outcome}, " "))
	}
	want := []string{" initialize  ok", " tools/call echo ok", " tools/call crash denied"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestWarmPool: with --prespawn, a new session gets a child that was
// already running, and the pool refills; --max-children caps processes.
func TestWarmPool(t *testing.T) {
	e := newEnv(t, envOpts{bridge: bridge.Config{Prespawn: 2, MaxChildren: 3}})
	waitFor(t, func() bool { return e.b.WaitingChildren() == 2 })
	before := childPids(t)
	sid := e.initialize("2025-11-25")
	s, _ := e.b.Session(sid, "")
	if !before[s.ChildPid()] {
		t.Fatalf("the session's child %d was not one of the waiting ones %v", s.ChildPid(), before)
	}
	// One taken, one waiting, one more started: the cap of 3 is reached.
	waitFor(t, func() bool { return e.b.WaitingChildren() == 2 && e.b.Children() == 3 })
	e.initialize("2025-11-25")
	e.initialize("2025-11-25")
	resp := e.do(req{body: fmt.Sprintf(initBody, "2025-11-25")})
	if resp.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	checkStatus(t, resp, 503, bridge.CodeInternalError)
}

// waitFor polls a condition with a hard deadline.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never met")
		}
		runtime.Gosched()
	}
}

// childPids lists this process's child processes and theirs.
func childPids(t *testing.T) map[int]bool {
	t.Helper()
	out := map[int]bool{}
	var add func(pid string, depth int)
	add = func(pid string, depth int) {
		tasks, _ := os.ReadDir("/proc/" + pid + "/task")
		for _, task := range tasks {
			b, _ := os.ReadFile("/proc/" + pid + "/task/" + task.Name() + "/children")
			for _, f := range strings.Fields(string(b)) {
				c, _ := strconv.Atoi(f)
				out[c] = true
				if depth > 0 {
					add(f, depth-1)
				}
			}
		}
	}
	// Their children too: under stdio.ContainPIDNamespace a child is the
	// command's init, and the command (what ChildPid names) its child.
	add("self", 1)
	return out
}

// TestSharedSubscriptions: the child sees subscribe from the first
// subscriber and unsubscribe when the last one leaves (also by ending its
// session); updates reach only the sessions subscribed to that resource.
func TestSharedSubscriptions(t *testing.T) {
	e := sharedEnv(t)
	a := e.initialize("2025-11-25")
	b := e.initialize("2025-11-25")
	sub := func(sid, method string) {
		t.Helper()
		msgs := readMessages(t, e.do(req{sid: sid, body: `{"jsonrpc":"2.0","id":"s","method":"` + method + `","params":{"uri":"test://x"}}`}))
		if len(msgs) != 1 || msgs[0]["result"] == nil {
			t.Fatalf("%s: %v", method, msgs)
		}
	}
	stateCalls := func() string {
		t.Helper()
		_, msgs := e.call(a, "q", "state_calls", nil)
		return text(msgs[len(msgs)-1])
	}
	sub(a, "resources/subscribe")
	sub(b, "resources/subscribe")
	if got := stateCalls(); got != `["resources/subscribe {\"uri\":\"test://x\"}"]` {
		t.Fatalf("after two subscribers the child saw %s", got)
	}
	sub(a, "resources/unsubscribe")
	if got := stateCalls(); strings.Contains(got, "unsubscribe") {
		t.Fatalf("the child was unsubscribed while b still subscribes: %s", got)
	}

	// An update goes to b (subscribed), not to a; the list change after
	// it, to both, marks the end of what each stream gets.
	getA := e.do(req{method: "GET", sid: a})
	defer getA.Body.Close()
	getB := e.do(req{method: "GET", sid: b})
	defer getB.Body.Close()
	body := `{"jsonrpc":"2.0","id":"u","method":"tools/call","params":{"name":"notify","arguments":{"method":"notifications/resources/updated","params":{"uri":"test://x"}}}}`
	readMessages(t, e.do(req{sid: a, body: body, accept: "application/json"}))
	e.notifyFromChild(a, 1, "notifications/tools/list_changed")
	for sid, want := range map[*http.Response][]string{
		getA: {"notifications/tools/list_changed"},
		getB: {"notifications/resources/updated", "notifications/tools/list_changed"},
	} {
		sr := newSSEReader(sid.Body)
		for _, w := range want {
			ev, _ := sr.next()
			if m := decode(t, ev.data); m["method"] != w {
				t.Fatalf("got %v, want %s", m, w)
			}
		}
	}

	checkStatus(t, e.do(req{method: "DELETE", sid: b}), 200, 0)
	if got := stateCalls(); !strings.Contains(got, `"resources/unsubscribe {\"uri\":\"test://x\"}"`) {
		t.Fatalf("the last subscriber left but the child was not unsubscribed: %s", got)
	}
}

// TestSharedRestartResubscribes: the child that replaces a crashed shared
// one is initialized with the first session's parameters and asked again
// for the subscriptions sessions hold, so an update of a subscribed
// resource still reaches the subscriber's GET stream, and only it.
func TestSharedRestartResubscribes(t *testing.T) {
	e := sharedEnv(t)
	a := e.initialize("2025-11-25") // subscribes
	b := e.initialize("2025-11-25") // does not
	msgs := readMessages(t, e.do(req{sid: a, body: `{"jsonrpc":"2.0","id":"s","method":"resources/subscribe","params":{"uri":"test://x"}}`}))
	if len(msgs) != 1 || msgs[0]["result"] == nil {
		t.Fatalf("subscribe: %v", msgs)
	}
	// The GET streams are opened before the crash: they outlive the child.
	getA := e.do(req{method: "GET", sid: a})
	defer getA.Body.Close()
	getB := e.do(req{method: "GET", sid: b})
	defer getB.Body.Close()

	sa, _ := e.b.Session(a, "")
	old := sa.ChildPid()
	if _, msgs := e.call(b, 1, "crash", map[string]any{"code": 9}); msgs[0]["error"] == nil {
		t.Fatalf("crash: %v", msgs)
	}
	waitFor(t, func() bool { pid := sa.ChildPid(); return pid != 0 && pid != old })
	// The new child's state as it now is; see waitRestarted for why this
	// waits for it.
	if got := waitRestarted(t, e, b); got != `["resources/subscribe {\"uri\":\"test://x\"}"]` {
		t.Fatalf("the restarted child saw %s, want the one subscription again", got)
	}
	var lifecycle []string
	_, msgs = e.call(b, "l", "lifecycle", nil)
	if err := json.Unmarshal([]byte(text(msgs[len(msgs)-1])), &lifecycle); err != nil {
		t.Fatalf("lifecycle: %v", msgs)
	}
	firstParams := strings.TrimSuffix(strings.TrimPrefix(fmt.Sprintf(initBody, "2025-11-25"), `{"jsonrpc":"2.0","id":1,"method":"initialize","params":`), "}")
	if want := []string{"initialize " + firstParams, "notifications/initialized"}; !slices.Equal(lifecycle, want) {
		t.Fatalf("the restarted child saw %q, want %q", lifecycle, want)
	}

	body := `{"jsonrpc":"2.0","id":"u","method":"tools/call","params":{"name":"notify","arguments":{"method":"notifications/resources/updated","params":{"uri":"test://x"}}}}`
	readMessages(t, e.do(req{sid: b, body: body, accept: "application/json"}))
	e.notifyFromChild(b, 2, "notifications/tools/list_changed") // marks the end of what each stream gets
	for name, tc := range map[string]struct {
		get  *http.Response
		want []string
	}{
		"subscriber": {getA, []string{"notifications/resources/updated", "notifications/tools/list_changed"}},
		"other":      {getB, []string{"notifications/tools/list_changed"}},
	} {
		sr := newSSEReader(tc.get.Body)
		for _, w := range tc.want {
			ev, ok := sr.next()
			if !ok {
				t.Fatalf("%s: GET stream ended, want %s", name, w)
			}
			if m := decode(t, ev.data); m["method"] != w {
				t.Fatalf("%s got %v, want %s", name, m, w)
			}
		}
	}
}

// waitRestarted returns the restarted shared child's state_calls once the
// child has recorded any. The bridge publishes the new child before it
// writes the re-initialize and re-subscribe lines, so a call sent at once
// may overtake them; polling (with a hard deadline) waits for the
// condition instead.
func waitRestarted(t *testing.T, e *env, sid string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for n := 0; ; n++ {
		_, msgs := e.call(sid, fmt.Sprintf("state-%d", n), "state_calls", nil)
		if got := text(msgs[len(msgs)-1]); got != "null" {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatal("the restarted child never saw a state call")
		}
	}
}

// TestSharedCancel: two sessions have a call in flight under the same
// client id; one cancels it. The child is told to cancel exactly one
// request, the canceller's stream ends without a response, and the other
// session's call goes on to its response.
func TestSharedCancel(t *testing.T) {
	e := sharedEnv(t)
	a := e.initialize("2025-11-25")
	b := e.initialize("2025-11-25")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // bounds the reads below
	defer cancel()
	// a's call would take a minute, and is in flight once its response
	// has begun; b's reports progress every 100 ms for 2 s, so its first
	// progress shows it in flight on the child too.
	slowA := e.doCtx(ctx, req{sid: a, accept: "text/event-stream", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{"ms":60000,"steps":1}}}`})
	defer slowA.Body.Close()
	slowB := e.doCtx(ctx, req{sid: b, accept: "text/event-stream", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{"ms":2000,"steps":20},"_meta":{"progressToken":"b"}}}`})
	defer slowB.Body.Close()
	srB := newSSEReader(slowB.Body)
	ev, ok := srB.next()
	if !ok {
		t.Fatal("b's stream ended at once")
	}
	if m := decode(t, ev.data); m["method"] != "notifications/progress" {
		t.Fatalf("b's first event: %v", m)
	}

	checkStatus(t, e.do(req{sid: a, body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"test"}}`}), 202, 0)
	for _, m := range readMessages(t, slowA) {
		// Log messages of b's call may pass here: with two calls in
		// flight they go to every session. A response may not.
		if m["method"] == nil {
			t.Errorf("the cancelled call was answered: %v", m)
		}
	}
	if ctx.Err() != nil {
		t.Fatal("a's stream did not end after the cancel")
	}
	// The child reads its stdin in order: the cancel is in by now.
	_, msgs := e.call(a, "c", "cancels", nil)
	var cancelled []json.RawMessage
	if err := json.Unmarshal([]byte(text(msgs[len(msgs)-1])), &cancelled); err != nil || len(cancelled) != 1 {
		t.Fatalf("the child was told to cancel %s, want one request", text(msgs[len(msgs)-1]))
	}

	// Had the cancel named b's call on the child, b would get no answer.
	var last map[string]any
	for {
		ev, ok := srB.next()
		if !ok {
			break
		}
		last = decode(t, ev.data)
	}
	if ctx.Err() != nil || last == nil || last["id"] != json.Number("7") || text(last) != "slow done" {
		t.Fatalf("b's call ended with %v (context: %v), want its response", last, ctx.Err())
	}
}

// TestMaxChildren: without a warm pool, --max-children caps the sessions'
// children; over it initialize gets 503 with Retry-After, and a DELETE
// frees a place at once (it returns once the child is reaped).
func TestMaxChildren(t *testing.T) {
	e := newEnv(t, envOpts{bridge: bridge.Config{MaxChildren: 2}})
	first := e.initialize("2025-11-25")
	e.initialize("2025-11-25")
	resp := e.do(req{body: fmt.Sprintf(initBody, "2025-11-25")})
	if resp.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	checkStatus(t, resp, 503, bridge.CodeInternalError)
	if n := e.b.Children(); n != 2 {
		t.Fatalf("%d children, want the cap of 2", n)
	}
	checkStatus(t, e.do(req{method: "DELETE", sid: first}), 200, 0)
	sid := e.initialize("2025-11-25")
	if _, msgs := e.call(sid, 1, "echo", map[string]any{"message": "in"}); text(msgs[len(msgs)-1]) != "in" {
		t.Fatalf("the session after the DELETE: %v", msgs)
	}
}

// TestStatelessGoSDK: the official Go SDK client works against a stateless
// bridge. It gets no Mcp-Session-Id, so it sends none; its GET stream is
// refused with 405, which the SDK takes as "no such stream"; its Close
// sends no DELETE, as there is no session to end. An unpinned client first
// probes with server/discover and falls back to initialize.
func TestStatelessGoSDK(t *testing.T) {
	e := newEnv(t, envOpts{http: httpapi.Options{Stateless: true}})
	for _, tc := range []struct {
		name string
		opts *mcp.ClientSessionOptions
		want string
	}{
		{"2025-11-25", &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}, "2025-11-25"},
		{"2025-06-18", &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"}, "2025-06-18"},
		// go-sdk's default is 2026-07-28: it asks server/discover first,
		// and is served the modern era.
		{"unpinned", nil, "2026-07-28"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			var methods []string // of the HTTP requests the client sent
			var mu sync.Mutex
			hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				mu.Lock()
				methods = append(methods, r.Method)
				mu.Unlock()
				return e.client.Transport.RoundTrip(r)
			})}
			client := mcp.NewClient(&mcp.Implementation{Name: "stateless-test", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.url, HTTPClient: hc}, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != tc.want {
				t.Errorf("negotiated %s, want %s", got, tc.want)
			}
			if id := cs.ID(); id != "" {
				t.Errorf("session id %q, want none", id)
			}
			var tools []string
			for tool, err := range cs.Tools(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				tools = append(tools, tool.Name)
			}
			if !slices.Contains(tools, "echo") {
				t.Errorf("tools %q lack echo", tools)
			}
			for i := range 3 {
				msg := fmt.Sprintf("%s stateless %d", tc.name, i)
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": msg}})
				if err != nil {
					t.Fatal(err)
				}
				if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != msg || res.IsError {
					t.Errorf("echo %q answered %v", msg, res.Content[0])
				}
			}
			if err := cs.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if slices.Contains(methods, http.MethodDelete) {
				t.Errorf("the client sent %v: a DELETE without a session", methods)
			}
		})
	}
	if n := e.b.Len(); n != 0 {
		t.Errorf("%d sessions registered", n)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
