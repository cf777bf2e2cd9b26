package httpapi_test

// Calls held for a human's approval, through the transports, with a real
// child (the badchild, whose echo_count says how many echo calls it ran:
// "exactly once" and "never ran" are checked on the server's side).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/approval"
	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// heldEnv is an approvalEnv whose server holds every echo call, and whose
// children record every echo call they run (ran).
func heldEnv(t *testing.T, opts approval.Options, eo envOpts) *approvalEnv {
	t.Helper()
	if eo.http.Approval == nil {
		eo.http.Approval = approval.NewPolicy("files", []approval.Rule{mustApprovalRule("*=echo")}, false)
	}
	runs := filepath.Join(t.TempDir(), "runs")
	eo.command = []string{testpeers.BuildGo(t, "./testdata/badchild"), "-runs", runs}
	a := newApprovalEnvWith(t, opts, eo)
	a.runs = runs
	return a
}

// ran is how many times the server's children ran echo with message, by
// their own record.
func (a *approvalEnv) ran(t *testing.T, message string) int {
	t.Helper()
	b, err := os.ReadFile(a.runs)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return strings.Count(string(b), strconv.Quote(message)+"\n")
}

// session25 starts a 2025-11-25 session of who's, whose client declares
// caps.
func (a *approvalEnv) session25(t *testing.T, who, caps string) (sid string, h map[string]string) {
	t.Helper()
	h = map[string]string{"Authorization": "Bearer " + approvalTokens[who]}
	resp := a.do(req{body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":` + caps + `,"clientInfo":{"name":"raw","version":"1"}}}`, header: h})
	readMessages(t, resp)
	sid = resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatal("no session")
	}
	a.do(req{body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, sid: sid, version: "2025-11-25", header: h}).Body.Close()
	return sid, h
}

// count is how many echo calls the session's child ran.
func (a *approvalEnv) count(t *testing.T, sid string, h map[string]string) string {
	t.Helper()
	msgs := readMessages(t, a.do(req{body: `{"jsonrpc":"2.0","id":"n","method":"tools/call","params":{"name":"echo_count","arguments":{}}}`, sid: sid, version: "2025-11-25", header: h}))
	if len(msgs) != 1 {
		t.Fatalf("echo_count: %v", msgs)
	}
	return text(msgs[0])
}

// heldPost is a held call's POST, read event by event.
type heldPost struct {
	resp *http.Response
	sse  *sseReader
}

func (a *approvalEnv) postCall(ctx context.Context, t *testing.T, sid string, h map[string]string, id int, args string, token string) *heldPost {
	t.Helper()
	meta := ""
	if token != "" {
		meta = `,"_meta":{"progressToken":"` + token + `"}`
	}
	resp := a.doCtx(ctx, req{body: sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":%s%s}}`, id, args, meta), sid: sid, version: "2025-11-25", header: h})
	return &heldPost{resp: resp, sse: newSSEReader(resp.Body)}
}

// next is the next message on the call's stream.
func (hp *heldPost) next(t *testing.T) map[string]any {
	t.Helper()
	if !strings.HasPrefix(hp.resp.Header.Get("Content-Type"), "text/event-stream") {
		msgs := readMessages(t, hp.resp)
		if len(msgs) != 1 {
			t.Fatalf("%d messages", len(msgs))
		}
		return msgs[0]
	}
	ev, ok := hp.sse.next()
	if !ok {
		t.Fatal("the stream ended")
	}
	return decode(t, ev.data)
}

// answer POSTs the client's answer to the bridge's question.
func (a *approvalEnv) answer(t *testing.T, sid string, h map[string]string, id any, result string) int {
	t.Helper()
	raw, _ := json.Marshal(id)
	resp := a.do(req{body: `{"jsonrpc":"2.0","id":` + string(raw) + `,"result":` + result + `}`, sid: sid, version: "2025-11-25", header: h})
	resp.Body.Close()
	return resp.StatusCode
}

func isErrorText(m map[string]any) (string, bool) {
	r, _ := m["result"].(map[string]any)
	isErr, _ := r["isError"].(bool)
	return text(m), isErr
}

// TestHeldCallElicitation: a 2025 client that declared form elicitation is
// asked by the bridge itself, on the call's own stream, with an id of the
// bridge's; only accept with approve: true runs the call, once; anything
// else is an isError result saying which, and the server never sees the
// call. The answer is the bridge's: the child never sees it.
func TestHeldCallElicitation(t *testing.T) {
	tests := []struct {
		name, answer string
		ran          string // echo_count after
		says         string // in the isError text; "" for the call's own answer
	}{
		{"approve", `{"action":"accept","content":{"approve":true}}`, "1", ""},
		{"decline", `{"action":"decline"}`, "0", "declined"},
		{"cancel", `{"action":"cancel"}`, "0", "cancelled"},
		{"approve false", `{"action":"accept","content":{"approve":false}}`, "0", "approve: false"},
		{"a string true", `{"action":"accept","content":{"approve":"true"}}`, "0", "malformed"},
		{"a model's confirm beside it", `{"action":"accept","content":{"approve":true,"confirm":true}}`, "0", "malformed"},
	}
	a := heldEnv(t, approval.Options{ProgressInterval: 20 * time.Millisecond}, envOpts{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sid, h := a.session25(t, "ALICE_TOKEN", `{"elicitation":{}}`)
			hp := a.postCall(t.Context(), t, sid, h, 7, `{"message":"hi"}`, "tok-1")
			defer hp.resp.Body.Close()
			q := hp.next(t)
			for q["method"] == "notifications/progress" {
				q = hp.next(t)
			}
			qid, _ := q["id"].(string)
			if q["method"] != "elicitation/create" || !strings.HasPrefix(qid, "mcp-bridge-approval-") {
				t.Fatalf("asked %v", q)
			}
			params, _ := q["params"].(map[string]any)
			if msg, _ := params["message"].(string); !strings.Contains(msg, "Tool: echo") || !strings.Contains(msg, `"message":"hi"`) {
				t.Errorf("the question says %q", msg)
			}
			// Progress comes while it waits, with the call's token.
			for {
				m := hp.next(t)
				if m["method"] == "notifications/progress" {
					p, _ := m["params"].(map[string]any)
					if p["progressToken"] != "tok-1" {
						t.Errorf("progress %v", m)
					}
					break
				}
			}
			if st := a.answer(t, sid, h, qid, tt.answer); st != http.StatusAccepted {
				t.Fatalf("the answer: %d", st)
			}
			var res map[string]any
			for res = hp.next(t); res["method"] != nil; res = hp.next(t) {
			}
			got, isErr := isErrorText(res)
			if tt.says == "" && (isErr || got != "hi") || tt.says != "" && (!isErr || !strings.Contains(got, tt.says)) {
				t.Errorf("answered %v", res)
			}
			if n := a.count(t, sid, h); n != tt.ran {
				t.Errorf("the server ran echo %s times, want %s", n, tt.ran)
			}
			// The same answer again: nobody is asking any more; it goes
			// nowhere (202) and changes nothing.
			a.answer(t, sid, h, qid, `{"action":"accept","content":{"approve":true}}`)
			if n := a.count(t, sid, h); n != tt.ran {
				t.Errorf("after a replayed answer the server ran echo %s times, want %s", n, tt.ran)
			}
			// The child never saw an answer to a question it did not ask.
			m := readMessages(t, a.do(req{body: `{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"strays","arguments":{}}}`, sid: sid, version: "2025-11-25", header: h}))
			if got := text(m[0]); got != "[]" {
				t.Errorf("the child got answers to the bridge's questions: %s", got)
			}
		})
	}
}

// TestHeldCallModes: the bridge's question and the call it releases, in
// every session mode (the child of one session, shared by every session,
// or one per principal).
func TestHeldCallModes(t *testing.T) {
	for _, mode := range []string{bridge.ModePerSession, bridge.ModeShared, bridge.ModePerIdentity} {
		t.Run(mode, func(t *testing.T) {
			a := heldEnv(t, approval.Options{}, envOpts{bridge: bridge.Config{Mode: mode}})
			sid, h := a.session25(t, "ALICE_TOKEN", `{"elicitation":{"form":{}}}`)
			hp := a.postCall(t.Context(), t, sid, h, 7, `{"message":"hi"}`, "")
			defer hp.resp.Body.Close()
			q := hp.next(t)
			if q["method"] != "elicitation/create" {
				t.Fatalf("asked %v", q)
			}
			a.answer(t, sid, h, q["id"], `{"action":"accept","content":{"approve":true}}`)
			if res := hp.next(t); text(res) != "hi" {
				t.Errorf("answered %v", res)
			}
			if n := a.count(t, sid, h); n != "1" {
				t.Errorf("the server ran echo %s times, want 1", n)
			}
			audit := a.auditLog()
			for _, ev := range []string{`"event":"approval_requested"`, `"event":"approved","approval"`, `"event":"executed"`, `"channel":"caller","approver":"ALICE_TOKEN"`} {
				if !strings.Contains(audit, ev) {
					t.Errorf("no %s in the audit log:\n%s", ev, audit)
				}
			}
		})
	}
}

// modernCall is a 2026-07-28 tools/call of echo by who, with caps, and
// with the retry's requestState and the answer to the bridge's question
// when given.
func (a *approvalEnv) modernCall(t *testing.T, who string, args map[string]any, caps map[string]any, rs string, answer any) map[string]any {
	t.Helper()
	params := map[string]any{"name": "echo", "arguments": args}
	if rs != "" {
		params["requestState"] = rs
		params["inputResponses"] = map[string]any{"mcp-bridge-approval": answer}
	}
	m := readMessages(t, a.do(modernRequest{id: 5, method: "tools/call", params: params, caps: caps, token: approvalTokens[who]}.req()))
	if len(m) != 1 {
		t.Fatalf("%d messages: %v", len(m), m)
	}
	return m[0]
}

// inputRequired is the bridge's question in an input_required result, and
// its requestState.
func inputRequired(t *testing.T, m map[string]any) (question map[string]any, rs string) {
	t.Helper()
	r, _ := m["result"].(map[string]any)
	reqs, _ := r["inputRequests"].(map[string]any)
	question, _ = reqs["mcp-bridge-approval"].(map[string]any)
	rs, _ = r["requestState"].(string)
	if r["resultType"] != "input_required" || question["method"] != "elicitation/create" || !strings.HasPrefix(rs, "mb1.") {
		t.Fatalf("not the bridge's question: %v", m)
	}
	return question, rs
}

// TestHeldModern: a 2026-07-28 client is asked in an input_required
// result; its retry with accept and approve: true runs the call once. The
// requestState is sealed and bound: replayed, with other arguments, or by
// another principal it is refused and runs nothing; a decline denies.
func TestHeldModern(t *testing.T) {
	a := heldEnv(t, approval.Options{}, envOpts{})
	caps := map[string]any{"elicitation": map[string]any{}}
	args := map[string]any{"message": "m1"}
	approve := map[string]any{"action": "accept", "content": map[string]any{"approve": true}}
	modernCount := func() string { return strconv.Itoa(a.ran(t, "m1")) }
	q, rs := inputRequired(t, a.modernCall(t, "ALICE_TOKEN", args, caps, "", nil))
	if p, _ := q["params"].(map[string]any); !strings.Contains(p["message"].(string), `"message":"m1"`) {
		t.Errorf("the question: %v", q)
	}
	// Another principal, other arguments: the binding refuses the state
	// (and the state is single use only once it opens).
	for _, tt := range []struct {
		who  string
		args map[string]any
	}{{"BOB_TOKEN", args}, {"ALICE_TOKEN", map[string]any{"message": "m2"}}, {"ALICE_TOKEN", map[string]any{"message": "m1", "confirm": true}}} {
		m := a.modernCall(t, tt.who, tt.args, caps, rs, approve)
		if e, _ := m["error"].(map[string]any); e == nil || !strings.Contains(e["message"].(string), "does not belong to this request") {
			t.Errorf("%s %v: %v", tt.who, tt.args, m)
		}
	}
	if res := a.modernCall(t, "ALICE_TOKEN", args, caps, rs, approve); text(res) != "m1" {
		t.Fatalf("approved: %v", res)
	}
	if n := modernCount(); n != "1" {
		t.Errorf("the server ran echo %s times, want 1", n)
	}
	// Replayed: single use; the call does not run again.
	if m := a.modernCall(t, "ALICE_TOKEN", args, caps, rs, approve); !strings.Contains(sprintf("%v", m["error"]), "already used") {
		t.Errorf("replayed: %v", m)
	}
	// The same call again asks again; a decline denies it.
	_, rs = inputRequired(t, a.modernCall(t, "ALICE_TOKEN", args, caps, "", nil))
	if got, isErr := isErrorText(a.modernCall(t, "ALICE_TOKEN", args, caps, rs, map[string]any{"action": "decline"})); !isErr || !strings.Contains(got, "declined") {
		t.Errorf("declined: %q", got)
	}
	// A model's consent in the arguments or _meta counts for nothing:
	// asked like any other.
	inputRequired(t, a.modernCall(t, "ALICE_TOKEN", map[string]any{"message": "m1", "approved": true, "_meta": map[string]any{"approved": true}}, caps, "", nil))
	if n := modernCount(); n != "1" {
		t.Errorf("the server ran echo %s times, want 1", n)
	}
}

// TestHeldOperator: a held 2025 call whose client cannot be asked waits
// for an operator, with progress, keeping its session; an approval
// through the API, found on its event stream, releases it, and it runs
// once; a denial answers it without running it.
func TestHeldOperator(t *testing.T) {
	for _, verdict := range []string{"approve", "deny"} {
		t.Run(verdict, func(t *testing.T) {
			a := heldEnv(t, approval.Options{ProgressInterval: 20 * time.Millisecond}, envOpts{})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			r, _ := http.NewRequestWithContext(ctx, "GET", a.srv.URL+httpapi.ApprovalsEventsPath, nil)
			r.Header.Set("Authorization", "Bearer "+approvalTokens["OPS_TOKEN"])
			events, err := a.client.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			defer events.Body.Close()
			stream := newSSEReader(events.Body)

			sid, h := a.session25(t, "ALICE_TOKEN", `{}`)
			hp := a.postCall(t.Context(), t, sid, h, 7, `{"message":"op"}`, "p1")
			defer hp.resp.Body.Close()
			if m := hp.next(t); m["method"] != "notifications/progress" {
				t.Fatalf("first on the call's stream: %v", m)
			}
			var id string
			for id == "" {
				ev, ok := stream.next()
				if !ok {
					t.Fatal("the operators' stream ended")
				}
				var e struct {
					Event    string `json:"event"`
					Approval struct{ ID, Tool string }
				}
				_ = json.Unmarshal([]byte(ev.data), &e)
				if e.Event == approval.EventRequested && e.Approval.Tool == "echo" {
					id = e.Approval.ID
				}
			}
			if code, body := a.decide(t, "OPS_TOKEN", id, verdict, "checked"); code != http.StatusOK {
				t.Fatalf("decide: %d %s", code, body)
			}
			var res map[string]any
			for res = hp.next(t); res["method"] != nil; res = hp.next(t) {
			}
			got, isErr := isErrorText(res)
			want := map[string]string{"approve": "1", "deny": "0"}[verdict]
			if verdict == "approve" && (isErr || got != "op") || verdict == "deny" && (!isErr || !strings.Contains(got, "checked")) {
				t.Errorf("answered %v", res)
			}
			if n := a.count(t, sid, h); n != want {
				t.Errorf("the server ran echo %s times, want %s", n, want)
			}
		})
	}
}

// TestHeldRetry: a client that drops its connection while its call waits,
// and sends the same call again, waits on the same approval: one approval
// runs the tool exactly once. Its session lives on meanwhile.
func TestHeldRetry(t *testing.T) {
	a := heldEnv(t, approval.Options{}, envOpts{})
	sid, h := a.session25(t, "ALICE_TOKEN", `{}`)
	ctx, drop := context.WithCancel(t.Context())
	first := a.postCall(ctx, t, sid, h, 7, `{"message":"again"}`, "")
	id := a.next(t, approval.EventRequested).Approval.ID
	drop()
	first.resp.Body.Close()
	retry := a.postCall(t.Context(), t, sid, h, 8, `{"message":"again"}`, "")
	defer retry.resp.Body.Close()
	// The retry waits on the approval the first call made: one pending.
	for {
		if l := a.list(t, "OPS_TOKEN", "?state=pending"); len(l.Approvals) == 1 && l.Approvals[0].ID == id && l.Approvals[0].Waiting == 1 {
			break
		}
		select {
		case <-time.After(10 * time.Millisecond): // polling the API, not a timed assertion
		case <-t.Context().Done():
			t.Fatal("the retry never waited")
		}
	}
	if code, body := a.decide(t, "OPS_TOKEN", id, "approve", ""); code != http.StatusOK {
		t.Fatalf("decide: %d %s", code, body)
	}
	if res := retry.next(t); text(res) != "again" || res["id"] != json.Number("8") {
		t.Errorf("the retry got %v", res)
	}
	if n := a.count(t, sid, h); n != "1" {
		t.Errorf("the server ran echo %s times, want 1", n)
	}
	if l := a.list(t, "OPS_TOKEN", "?state=all"); len(l.Approvals) != 0 {
		t.Errorf("left: %+v", l.Approvals)
	}

	// A client that can be asked: the question withdrawn with the dropped
	// connection is asked again on the retry's stream, under the same
	// approval; approved there, the call runs once.
	asked, ah := a.session25(t, "ALICE_TOKEN", `{"elicitation":{}}`)
	ctx, drop = context.WithCancel(t.Context())
	first = a.postCall(ctx, t, asked, ah, 7, `{"message":"asked again"}`, "")
	if q := first.next(t); q["method"] != "elicitation/create" {
		t.Fatalf("asked %v", q)
	}
	id = a.requested(t, "asked again")
	drop()
	first.resp.Body.Close()
	retry2 := a.postCall(t.Context(), t, asked, ah, 8, `{"message":"asked again"}`, "")
	defer retry2.resp.Body.Close()
	q := retry2.next(t)
	if q["method"] != "elicitation/create" {
		t.Fatalf("the retry was asked %v", q)
	}
	if l := a.list(t, "OPS_TOKEN", "?state=pending"); len(l.Approvals) != 1 || l.Approvals[0].ID != id {
		t.Errorf("pending: %+v, want the first call's approval %s alone", l.Approvals, id)
	}
	a.answer(t, asked, ah, q["id"], `{"action":"accept","content":{"approve":true}}`)
	if res := retry2.next(t); text(res) != "asked again" {
		t.Errorf("the retry got %v", res)
	}
	if n := a.ran(t, "asked again"); n != 1 {
		t.Errorf("the server ran it %d times, want 1", n)
	}
}

// TestHeldBound: 100 held calls through HTTP, of two principals, at the
// bounds: the 101st is answered at once saying which bound; clients that
// leave leave their approvals pending, and nothing else: once those are
// denied through the API, no approval, held reader, question or goroutine
// is left, and the server ran none of them.
func TestHeldBound(t *testing.T) {
	a := heldEnv(t, approval.Options{Timeout: time.Hour, MaxPending: 100, MaxPendingPerPrincipal: 60}, envOpts{})
	type who struct {
		sid string
		h   map[string]string
	}
	callers := []who{}
	for _, name := range []string{"ALICE_TOKEN", "BOB_TOKEN"} {
		sid, h := a.session25(t, name, `{"elicitation":{}}`)
		callers = append(callers, who{sid, h})
	}
	a.count(t, callers[0].sid, callers[0].h) // every child started, every connection made
	a.count(t, callers[1].sid, callers[1].h)
	before := runtime.NumGoroutine()
	ctx, drop := context.WithCancel(t.Context())
	var posts []*heldPost
	for i := range 100 {
		c := callers[min(i/60, 1)]
		hp := a.postCall(ctx, t, c.sid, c.h, 100+i, sprintf(`{"message":"b%d"}`, i), "")
		posts = append(posts, hp)
		if q := hp.next(t); q["method"] != "elicitation/create" {
			t.Fatalf("call %d: %v", i, q)
		}
	}
	if st := a.engine.Stats(); st.Pending != 100 {
		t.Fatalf("%d pending, want 100", st.Pending)
	}
	for _, tt := range []struct {
		c    who
		says string
	}{
		{callers[1], "100 approvals are pending, the most the bridge holds (--max-approvals)"},
		{callers[0], "100 approvals are pending"},
	} {
		hp := a.postCall(t.Context(), t, tt.c.sid, tt.c.h, 999, `{"message":"over"}`, "")
		if got, isErr := isErrorText(hp.next(t)); !isErr || !strings.Contains(got, tt.says) {
			t.Errorf("past the bound: %q", got)
		}
		hp.resp.Body.Close()
	}
	// Every client leaves; the approvals wait for a retry, alone.
	drop()
	for _, hp := range posts {
		hp.resp.Body.Close()
	}
	for _, v := range a.list(t, "OPS_TOKEN", "").Approvals {
		if code, body := a.decide(t, "OPS_TOKEN", v.ID, "deny", ""); code != http.StatusOK {
			t.Fatalf("%d %s", code, body)
		}
	}
	if st := a.engine.Stats(); st.Pending != 0 {
		t.Errorf("left: %+v", st)
	}
	a.client.CloseIdleConnections()
	deadline := time.Now().Add(20 * time.Second)
	for runtime.NumGoroutine() > before+5 && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	after := runtime.NumGoroutine()
	if after > before+5 {
		t.Errorf("goroutines: %d before the calls, %d after", before, after)
	}
	t.Logf("goroutines: %d before the calls, %d after", before, after)
	for i := range 100 {
		if n := a.ran(t, sprintf("b%d", i)); n != 0 {
			t.Errorf("b%d ran %d times", i, n)
		}
	}
}

// TestHeldStateless: in stateless mode (no session to ask in), a held call
// waits for an operator and, approved, runs once on a request of its own.
func TestHeldStateless(t *testing.T) {
	a := heldEnv(t, approval.Options{}, envOpts{http: httpapi.Options{Stateless: true}})
	type result struct {
		resp *http.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := a.try(t.Context(), req{body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"st"}}}`,
			version: "2025-11-25", header: map[string]string{"Authorization": "Bearer " + approvalTokens["ALICE_TOKEN"]}})
		done <- result{resp, err}
	}()
	id := a.next(t, approval.EventRequested).Approval.ID
	if code, body := a.decide(t, "OPS_TOKEN", id, "approve", ""); code != http.StatusOK {
		t.Fatalf("decide: %d %s", code, body)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if msgs := readMessages(t, r.resp); len(msgs) != 1 || text(msgs[0]) != "st" {
		t.Errorf("answered %v", msgs)
	}
	if n := a.ran(t, "st"); n != 1 {
		t.Errorf("ran %d times, want 1", n)
	}
}

// TestHeldCatalog: a rule's annotation counts only for a server the
// operator trusts, and only once the bridge has relayed the server's
// tools/list: echo_count, which its server says is read-only, is held by
// "*=echo*@destructiveHint" until then, and on an untrusted server always.
func TestHeldCatalog(t *testing.T) {
	for _, trusted := range []bool{true, false} {
		t.Run(map[bool]string{true: "trusted", false: "untrusted"}[trusted], func(t *testing.T) {
			policy := approval.NewPolicy("files", []approval.Rule{mustApprovalRule("*=echo*@destructiveHint")}, trusted)
			a := heldEnv(t, approval.Options{Approvers: auth.Subjects{}}, envOpts{http: httpapi.Options{Approval: policy}})
			sid, h := a.session25(t, "ALICE_TOKEN", `{}`)
			held := func(tool string) bool {
				t.Helper()
				m := readMessages(t, a.do(req{body: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"message":"c"}}}`, sid: sid, version: "2025-11-25", header: h}))
				got, isErr := isErrorText(m[0])
				return isErr && strings.Contains(got, "needs a human's approval")
			}
			if !held("echo_count") {
				t.Error("echo_count ran before its server described it")
			}
			readMessages(t, a.do(req{body: `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, sid: sid, version: "2025-11-25", header: h}))
			if got := held("echo_count"); got != !trusted {
				t.Errorf("echo_count held %v after tools/list, want %v", got, !trusted)
			}
			if !held("echo") {
				t.Error("echo, which says nothing (destructive by default), ran")
			}
		})
	}
}

// approvalClientResult is what testdata/node/approvalclient.mjs saw.
type approvalClientResult struct {
	Asked     []string        `json:"asked"`
	Schema    json.RawMessage `json:"schema"`
	Withdrawn int             `json:"withdrawn"`
	Progress  int             `json:"progress"`
	Text      string          `json:"text"`
	IsError   bool            `json:"isError"`
	Error     string          `json:"error"`
	Retries   int             `json:"retries"`
	Errors    []string        `json:"errors"`
}

// runApprovalClient runs approvalclient.mjs in mode against url, as
// ALICE, with env added.
func runApprovalClient(t *testing.T, mode, url string, env ...string) approvalClientResult {
	t.Helper()
	node, modules := testpeers.Node(t), testpeers.NodeModules(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(filepath.Dir(modules), "approvalclient.mjs"), mode, url)
	cmd.Env = append(os.Environ(), append(env, "APPROVAL_TOKEN="+approvalTokens["ALICE_TOKEN"])...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	lines := bytes.Split(bytes.TrimSpace(stdout.Bytes()), []byte("\n"))
	var res approvalClientResult
	if perr := json.Unmarshal(lines[len(lines)-1], &res); perr != nil || err != nil {
		t.Fatalf("approvalclient %s: %v (%v)\nstderr:\n%s\nstdout:\n%s", mode, err, perr, stderr.Bytes(), stdout.Bytes())
	}
	return res
}

// TestHeldRealClients: the caller's channel with the official TypeScript
// SDK clients: v1 over Streamable HTTP and the legacy HTTP+SSE transport,
// answering the bridge's elicitation/create; v2 pinned to 2026-07-28,
// answering the bridge's input_required through MRTR. Approve runs the
// call once; deny and decline answer isError, saying which; a user who
// never answers sees the question withdrawn at the expiry (2025), or
// answers too late to a sealed state that has expired (2026-07-28); the
// server runs nothing but the approved calls.
func TestHeldRealClients(t *testing.T) {
	tests := []struct {
		mode, answer string
		timeout      time.Duration // --approval-timeout; 0: the default
		ran          int
		says         string // the isError text or the error holds it; "" for the call's own answer
	}{
		{"v1-streamable", "approve", 0, 1, ""},
		{"v1-streamable", "deny", 0, 0, "approve: false"},
		{"v1-streamable", "decline", 0, 0, "declined"},
		{"v1-streamable", "wait", 2 * time.Second, 0, "nobody approved it within 2s"},
		{"v1-sse", "wait", 2 * time.Second, 0, "nobody approved it within 2s"},
		{"v1-sse", "approve", 0, 1, ""},
		{"v1-sse", "deny", 0, 0, "approve: false"},
		{"v2", "approve", 0, 1, ""},
		{"v2", "deny", 0, 0, "approve: false"},
		{"v2", "late", 2 * time.Second, 0, "requestState is invalid, expired or already used"},
	}
	for _, tt := range tests {
		t.Run(tt.mode+"/"+tt.answer, func(t *testing.T) {
			// Progress every 100 ms: a client that resets its timeout on
			// progress sees some while its user is asked.
			a := heldEnv(t, approval.Options{Timeout: tt.timeout, ProgressInterval: 100 * time.Millisecond}, envOpts{})
			url := a.url
			if tt.mode == "v1-sse" {
				url = a.srv.URL + "/sse"
			}
			msg := "approved call " + tt.mode + " " + tt.answer
			res := runApprovalClient(t, tt.mode, url, `APPROVAL_ARGS={"message":"`+msg+`"}`, "APPROVAL_ANSWER="+tt.answer, "APPROVAL_DELAY_MS=3000")
			if len(res.Asked) != 1 || !strings.Contains(res.Asked[0], "Tool: echo") || !strings.Contains(res.Asked[0], msg) {
				t.Errorf("asked %q", res.Asked)
			}
			if !strings.Contains(string(res.Schema), `"approve":{"type":"boolean"`) {
				t.Errorf("the form %s", res.Schema)
			}
			switch {
			case tt.says == "" && (res.IsError || res.Text != msg || res.Error != ""):
				t.Errorf("approved: %+v", res)
			case tt.says != "" && !strings.Contains(res.Text+res.Error, tt.says):
				t.Errorf("want %q: %+v", tt.says, res)
			}
			if tt.answer == "wait" && (res.Withdrawn != 1 || res.Progress == 0) {
				t.Errorf("the question was not withdrawn, or no progress came while it waited: %+v", res)
			}
			if tt.mode == "v2" && res.Retries != 1 {
				t.Errorf("%d retries, want 1", res.Retries)
			}
			if n := a.ran(t, msg); n != tt.ran {
				t.Errorf("the server ran it %d times, want %d", n, tt.ran)
			}
		})
	}
}

// TestHeldAttacks: what an approval covers, through the transports. An
// answer to the bridge's question counts only from the session it was
// asked on; an approval covers its arguments only (a call changed after
// it waits for one of its own); an approval runs one call, and the same
// call again asks again.
func TestHeldAttacks(t *testing.T) {
	a := heldEnv(t, approval.Options{}, envOpts{})
	approve := `{"action":"accept","content":{"approve":true}}`

	// Another principal's answer, on its own session, to Alice's
	// question, comes first; Alice's own decline is what counts.
	alice, ah := a.session25(t, "ALICE_TOKEN", `{"elicitation":{}}`)
	bob, bh := a.session25(t, "BOB_TOKEN", `{"elicitation":{}}`)
	ask := func(id int) (*heldPost, any) {
		t.Helper()
		hp := a.postCall(t.Context(), t, alice, ah, id, `{"message":"a1"}`, "")
		q := hp.next(t)
		if q["method"] != "elicitation/create" {
			t.Fatalf("asked %v", q)
		}
		return hp, q["id"]
	}
	hp, qid := ask(7)
	if st := a.answer(t, bob, bh, qid, approve); st != http.StatusAccepted {
		t.Fatalf("bob's answer: %d", st)
	}
	a.answer(t, alice, ah, qid, `{"action":"decline"}`)
	if got, isErr := isErrorText(hp.next(t)); !isErr || !strings.Contains(got, "declined") {
		t.Errorf("after bob's approval and alice's decline: %q", got)
	}
	hp.resp.Body.Close()
	// Approved, it runs once; the same call again is asked again, under
	// a new question: an approval is not reused.
	hp, qid = ask(8)
	a.answer(t, alice, ah, qid, approve)
	if res := hp.next(t); text(res) != "a1" {
		t.Errorf("alice's approved call: %v", res)
	}
	hp.resp.Body.Close()
	hp, again := ask(9)
	if again == qid {
		t.Errorf("asked again under the same id %v", qid)
	}
	a.answer(t, alice, ah, again, `{"action":"decline"}`)
	if _, isErr := isErrorText(hp.next(t)); !isErr {
		t.Error("a declined repeat ran")
	}
	hp.resp.Body.Close()
	if n := a.ran(t, "a1"); n != 1 {
		t.Errorf("a1 ran %d times, want 1", n)
	}

	// Arguments changed after the approval: the operator approves the
	// call with v1, whose client has left; the client sends v2 instead,
	// which waits for an approval of its own and never runs on v1's.
	plain, ph := a.session25(t, "ALICE_TOKEN", `{}`)
	ctx, drop := context.WithCancel(t.Context())
	first := a.postCall(ctx, t, plain, ph, 9, `{"message":"v1"}`, "")
	v1 := a.requested(t, "v1")
	drop()
	first.resp.Body.Close()
	changed := a.postCall(t.Context(), t, plain, ph, 10, `{"message":"v2"}`, "")
	v2 := a.requested(t, "v2")
	if code, body := a.decide(t, "OPS_TOKEN", v1, "approve", ""); code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	if code, body := a.decide(t, "OPS_TOKEN", v2, "deny", "not what was approved"); code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	if got, isErr := isErrorText(changed.next(t)); !isErr || !strings.Contains(got, "not what was approved") {
		t.Errorf("the changed call: %q", got)
	}
	changed.resp.Body.Close()
	if n := a.ran(t, "v2"); n != 0 {
		t.Errorf("v2 ran %d times", n)
	}
	// v1's approval is still v1's: its retry runs it, once.
	retry := a.postCall(t.Context(), t, plain, ph, 11, `{"message":"v1"}`, "")
	if res := retry.next(t); text(res) != "v1" {
		t.Errorf("v1's retry: %v", res)
	}
	retry.resp.Body.Close()
	if n := a.ran(t, "v1"); n != 1 {
		t.Errorf("v1 ran %d times, want 1", n)
	}
}

// requested is the id of the next approval requested for a call whose
// arguments show message.
func (a *approvalEnv) requested(t *testing.T, message string) string {
	t.Helper()
	for {
		ev := a.next(t, approval.EventRequested)
		if strings.Contains(ev.Approval.Arguments, `"`+message+`"`) {
			return ev.Approval.ID
		}
	}
}

// TestHeldKeepsSession: a held call keeps its session, though the child
// has not seen it: a client that opened no GET stream and said nothing
// but its held call is not taken for one that left (--unreachable-timeout)
// while its user decides. A session abandoned after it, and so due after
// it, is ended first: the janitor has passed.
func TestHeldKeepsSession(t *testing.T) {
	a := heldEnv(t, approval.Options{}, envOpts{bridge: bridge.Config{UnreachableTimeout: 100 * time.Millisecond}})
	sid, h := a.session25(t, "ALICE_TOKEN", `{}`)
	hp := a.postCall(t.Context(), t, sid, h, 7, `{"message":"kept"}`, "")
	defer hp.resp.Body.Close()
	id := a.requested(t, "kept")
	a.session25(t, "BOB_TOKEN", `{}`) // abandoned at once
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for a.b.Len() > 1 {
		select {
		case <-tick.C: // polling the bridge, not a timed assertion
		case <-t.Context().Done():
			t.Fatal("the abandoned session was never ended")
		}
	}
	if code, body := a.decide(t, "OPS_TOKEN", id, "approve", ""); code != http.StatusOK {
		t.Fatalf("decide: %d %s", code, body)
	}
	if res := hp.next(t); text(res) != "kept" {
		t.Errorf("the held call, approved: %v", res)
	}
	if n := a.ran(t, "kept"); n != 1 {
		t.Errorf("ran %d times, want 1", n)
	}
}
