package httpapi_test

// The operators' channel of approvals over real HTTP, on a bridge with a
// real child. The held calls of these tests are made by driving the engine
// directly (approval.Engine.Decide, as a transport does), each in a
// goroutine that stands for the request a transport holds; held_test.go
// holds them through the transports.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/approval"
	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
)

// Tokens of the principals of these tests.
var approvalTokens = map[string]string{
	"ALICE_TOKEN": "alice-token-0123456789abcdef", // a caller
	"BOB_TOKEN":   "bob-token-0123456789abcdefgh", // another caller
	"OPS_TOKEN":   "ops-token-0123456789abcdefgh", // an approver
	"ADMIN_TOKEN": "admin-token-0123456789abcdef", // an admin: sees, does not decide
	"EVE_TOKEN":   "eve-token-0123456789abcdefgh", // nobody in particular
}

func principalOf(name string) auth.Principal {
	return auth.Principal{Method: auth.MethodToken, Name: name, Claims: map[string]string{"sub": name}}
}

// approvalEnv is a bridge with token authentication, an approval engine
// whose approvers are OPS (and whoever else opts names), ADMIN an admin,
// its audit log in a buffer, and the engine's events on a channel.
type approvalEnv struct {
	*env
	engine *approval.Engine
	events chan approval.Event

	auditMu sync.Mutex
	audit   bytes.Buffer
	wg      sync.WaitGroup
	// runs is the badchild's -runs file, if it was given one.
	runs string
}

func (a *approvalEnv) Write(p []byte) (int, error) {
	a.auditMu.Lock()
	defer a.auditMu.Unlock()
	return a.audit.Write(p)
}

func (a *approvalEnv) auditLog() string {
	a.auditMu.Lock()
	defer a.auditMu.Unlock()
	return a.audit.String()
}

func newApprovalEnv(t *testing.T, opts approval.Options, ho httpapi.Options) *approvalEnv {
	t.Helper()
	return newApprovalEnvWith(t, opts, envOpts{http: ho})
}

// newApprovalEnvWith is newApprovalEnv on a bridge of eo's (its mode).
func newApprovalEnvWith(t *testing.T, opts approval.Options, eo envOpts) *approvalEnv {
	t.Helper()
	ho := eo.http
	names := make([]string, 0, len(approvalTokens))
	for n := range approvalTokens {
		names = append(names, n)
	}
	v, err := auth.TokensFromEnv(names, func(k string) (string, bool) { s, ok := approvalTokens[k]; return s, ok })
	if err != nil {
		t.Fatal(err)
	}
	a := &approvalEnv{events: make(chan approval.Event, 4096)}
	if opts.Approvers == nil {
		opts.Approvers = auth.Subjects{"token:OPS_TOKEN"}
	}
	opts.Logger = testLogger(t)
	audit := httpapi.ApprovalAudit(a, nil)
	opts.Observe = func(ev approval.Event) {
		audit(ev)
		a.events <- ev
	}
	a.engine = approval.New(opts)
	ho.Auth, ho.Admins, ho.Approvals = v, auth.Subjects{"token:ADMIN_TOKEN"}, a.engine
	eo.http = ho
	a.env = newEnv(t, eo)
	t.Cleanup(func() {
		a.engine.Close() // every held call still waiting returns
		a.wg.Wait()
	})
	return a
}

// hold holds a call as a transport would: Decide, in a goroutine.
func (a *approvalEnv) hold(ctx context.Context, who, tool, args string) <-chan approval.Outcome {
	out := make(chan approval.Outcome, 1)
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		o, _ := a.engine.Decide(ctx, approval.Request{Principal: principalOf(who), Server: "files", Tool: tool,
			Arguments: json.RawMessage(args), Rule: mustApprovalRule("*=delete_*")})
		out <- o
	}()
	return out
}

func mustApprovalRule(s string) approval.Rule {
	r, err := approval.ParseRule(s)
	if err != nil {
		panic(err)
	}
	return r
}

// next waits for the next event of kind, skipping others.
func (a *approvalEnv) next(t *testing.T, kind string) approval.Event {
	t.Helper()
	deadline := time.After(20 * time.Second) // a safety net, not a timing assertion
	for {
		select {
		case ev := <-a.events:
			if ev.Kind == kind {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %s event", kind)
		}
	}
}

func outcome(t *testing.T, ch <-chan approval.Outcome) approval.Outcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(20 * time.Second): // a safety net
		t.Fatal("the held call was not decided")
		return approval.Outcome{}
	}
}

// api makes one request to the operators' channel as the principal of
// token name ("" for none).
func (a *approvalEnv) api(t *testing.T, who, method, path, body string, header ...string) (int, string) {
	t.Helper()
	// A safety net: a stream answered where a refusal is due ends too.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := http.NewRequestWithContext(ctx, method, a.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if who != "" {
		r.Header.Set("Authorization", "Bearer "+approvalTokens[who])
	}
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	resp, err := a.client.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (a *approvalEnv) decide(t *testing.T, who, id, verdict, reason string) (int, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"decision": verdict, "reason": reason})
	return a.api(t, who, "POST", "/approvals/"+id, string(body))
}

type listed struct {
	Approvals []struct {
		approval.View
		CanDecide bool `json:"canDecide"`
	} `json:"approvals"`
	Approver bool `json:"approver"`
}

func (a *approvalEnv) list(t *testing.T, who, query string) listed {
	t.Helper()
	code, body := a.api(t, who, "GET", "/approvals"+query, "")
	if code != http.StatusOK {
		t.Fatalf("list as %s: %d %s", who, code, body)
	}
	var l listed
	if err := json.Unmarshal([]byte(body), &l); err != nil {
		t.Fatal(err)
	}
	return l
}

// TestApprovalsAPIStatuses: who may see and decide, and every refusal of
// the API, by its status and its words.
func TestApprovalsAPIStatuses(t *testing.T) {
	a := newApprovalEnv(t, approval.Options{Timeout: time.Hour}, httpapi.Options{})
	a.hold(context.Background(), "ALICE_TOKEN", "delete_file", `{"path":"/tmp/a","api_key":"sk-live-0123456789abcdefghijkl"}`)
	id := a.next(t, approval.EventRequested).Approval.ID
	for _, tt := range []struct {
		name, who, method, path, body string
		header                        []string
		status                        int
		want                          string
	}{
		{"no token", "", "GET", "/approvals", "", nil, 401, "Unauthorized"},
		{"a caller", "ALICE_TOKEN", "GET", "/approvals", "", nil, 403, "the approvals are for approvers (--approver) and admins (--admin)"},
		{"an admin lists", "ADMIN_TOKEN", "GET", "/approvals", "", nil, 200, `"canDecide":false`},
		{"an approver lists", "OPS_TOKEN", "GET", "/approvals?state=pending", "", nil, 200, `"canDecide":true`},
		{"masked arguments", "OPS_TOKEN", "GET", "/approvals/" + id, "", nil, 200, `\"api_key\":\"****\"`},
		{"a bad state", "OPS_TOKEN", "GET", "/approvals?state=done", "", nil, 400, "state must be pending, approved or all"},
		{"an unknown id", "OPS_TOKEN", "GET", "/approvals/0123", "", nil, 404, "no such approval pending"},
		{"a deeper path", "OPS_TOKEN", "GET", "/approvals/" + id + "/x", "", nil, 404, "no such approval"},
		{"an admin decides", "ADMIN_TOKEN", "POST", "/approvals/" + id, `{"decision":"approve"}`, nil, 403, "only an approver may decide (--approver)"},
		{"no JSON", "OPS_TOKEN", "POST", "/approvals/" + id, `decision=approve`, []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "send application/json"},
		{"an unknown member", "OPS_TOKEN", "POST", "/approvals/" + id, `{"decision":"approve","approve":true}`, nil, 400, `Bad Request: want {\"decision\": \"approve\" or \"deny\"`},
		{"a member twice", "OPS_TOKEN", "POST", "/approvals/" + id, `{"decision":"deny","decision":"approve"}`, nil, 400, "want"},
		{"a member by another case", "OPS_TOKEN", "POST", "/approvals/" + id, `{"Decision":"approve"}`, nil, 400, "want"},
		{"a verdict not known", "OPS_TOKEN", "POST", "/approvals/" + id, `{"decision":"yes"}`, nil, 400, "want"},
		{"a boolean verdict", "OPS_TOKEN", "POST", "/approvals/" + id, `{"decision":true}`, nil, 400, "want"},
		{"two objects", "OPS_TOKEN", "POST", "/approvals/" + id, `{"decision":"approve"}{}`, nil, 400, "want"},
		{"too large", "OPS_TOKEN", "POST", "/approvals/" + id, `{"decision":"approve","reason":"` + strings.Repeat("x", 20<<10) + `"}`, nil, 413, "at most 16384 bytes"},
		{"PUT", "OPS_TOKEN", "PUT", "/approvals/" + id, `{"decision":"approve"}`, nil, 405, "GET, POST only"},
		{"POST the list", "OPS_TOKEN", "POST", "/approvals", `{"decision":"approve"}`, nil, 405, "GET only"},
		{"a token in the query", "", "GET", "/approvals?access_token=" + approvalTokens["OPS_TOKEN"], "", nil, 401, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body := a.api(t, tt.who, tt.method, tt.path, tt.body, tt.header...)
			if code != tt.status || !strings.Contains(body, tt.want) {
				t.Errorf("%d %s, want %d with %q", code, body, tt.status, tt.want)
			}
			if strings.Contains(body, "sk-live") {
				t.Errorf("a secret shows: %s", body)
			}
		})
	}
	if v, ok := a.engine.Get(id); !ok || v.State != "pending" {
		t.Errorf("after the refusals: %+v %v", v, ok)
	}
	code, body := a.decide(t, "OPS_TOKEN", id, "approve", "looks fine")
	if code != 200 || !strings.Contains(body, `"state":"approved"`) || !strings.Contains(body, `"approver":"OPS_TOKEN"`) || !strings.Contains(body, `"channel":"operator"`) {
		t.Errorf("approve: %d %s", code, body)
	}
	a.next(t, approval.EventExecuted)
	// Approval reused: it ran, and is gone.
	if code, body := a.decide(t, "OPS_TOKEN", id, "approve", ""); code != 404 || !strings.Contains(body, "no such approval pending") {
		t.Errorf("approving it again: %d %s", code, body)
	}
}

// TestApprovalsNeedAuthentication: a bridge without authentication
// refuses the whole API: nobody could say who decides.
func TestApprovalsNeedAuthentication(t *testing.T) {
	engine := approval.New(approval.Options{Approvers: auth.Subjects{"*"}, Logger: testLogger(t)})
	t.Cleanup(engine.Close)
	e := newEnv(t, envOpts{http: httpapi.Options{Approvals: engine}})
	resp, err := e.client.Get(e.srv.URL + "/approvals")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(string(b), "the approvals API needs authentication") {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
}

// TestApprovalsAttacks: what an approval covers, through the API: once
// approved it runs one call, of one principal, with its arguments;
// another principal's call, or the same call with other arguments, is
// not covered; a retry attaches to the approval and runs once.
func TestApprovalsAttacks(t *testing.T) {
	a := newApprovalEnv(t, approval.Options{Timeout: time.Hour}, httpapi.Options{})

	// The client leaves; the approval waits for its retry.
	ctx, cancel := context.WithCancel(context.Background())
	gone := a.hold(ctx, "ALICE_TOKEN", "delete_file", `{"path":"/tmp/a"}`)
	id := a.next(t, approval.EventRequested).Approval.ID
	cancel()
	if o := outcome(t, gone); o.Decision != approval.Pending {
		t.Fatalf("the call whose client left: %+v", o)
	}
	if code, body := a.decide(t, "OPS_TOKEN", id, "approve", ""); code != 200 {
		t.Fatalf("approve: %d %s", code, body)
	}
	if l := a.list(t, "OPS_TOKEN", "?state=approved"); len(l.Approvals) != 1 || l.Approvals[0].ID != id {
		t.Fatalf("approved, not run: %+v", l)
	}
	if code, body := a.decide(t, "OPS_TOKEN", id, "approve", ""); code != http.StatusConflict || !strings.Contains(body, "approved already") {
		t.Errorf("approving it twice: %d %s", code, body)
	}

	// Another principal's same call, and the same call with other
	// arguments: each an approval of its own, pending.
	bob := a.hold(context.Background(), "BOB_TOKEN", "delete_file", `{"path":"/tmp/a"}`)
	if ev := a.next(t, approval.EventRequested); ev.Approval.ID == id || ev.Approval.Principal != "BOB_TOKEN" {
		t.Fatalf("another principal's call: %+v", ev.Approval)
	}
	changed := a.hold(context.Background(), "ALICE_TOKEN", "delete_file", `{"path":"/"}`)
	if ev := a.next(t, approval.EventRequested); ev.Approval.ID == id {
		t.Fatal("the call with other arguments took the approval")
	}
	// A model-set confirm is an argument like any other.
	confirm := a.hold(context.Background(), "ALICE_TOKEN", "delete_file", `{"path":"/tmp/a","confirm":true}`)
	if ev := a.next(t, approval.EventRequested); ev.Approval.ID == id {
		t.Fatal("confirm: true took the approval")
	}

	// The retry: it runs on the approval, once.
	if o := outcome(t, a.hold(context.Background(), "ALICE_TOKEN", "delete_file", `{ "path": "/tmp/a" }`)); o.Decision != approval.Approved || o.ID != id {
		t.Fatalf("the retry: %+v", o)
	}
	// The same call again: the approval is spent, so it asks again.
	a.hold(context.Background(), "ALICE_TOKEN", "delete_file", `{"path":"/tmp/a"}`)
	second := a.next(t, approval.EventRequested)
	if second.Approval.ID == id {
		t.Fatal("a second retry reused the spent approval")
	}

	// The others are pending until decided: deny them all.
	for _, v := range a.list(t, "OPS_TOKEN", "").Approvals {
		if code, body := a.decide(t, "OPS_TOKEN", v.ID, "deny", "not now"); code != 200 {
			t.Errorf("deny %s: %d %s", v.ID, code, body)
		}
	}
	for what, ch := range map[string]<-chan approval.Outcome{"another principal": bob, "other arguments": changed, "confirm": confirm} {
		if o := outcome(t, ch); o.Decision != approval.Denied || !strings.Contains(o.Message, "OPS_TOKEN denied it (operator): not now") {
			t.Errorf("%s: %+v", what, o)
		}
	}
	if n := strings.Count(a.auditLog(), `"event":"executed"`); n != 1 {
		t.Errorf("%d calls ran, want 1:\n%s", n, a.auditLog())
	}
}

// TestApprovalsRetryOnce: two requests of the same call wait on one
// approval (a client that retried while its first request was still
// held); one approval through the API runs one of them.
func TestApprovalsRetryOnce(t *testing.T) {
	a := newApprovalEnv(t, approval.Options{Timeout: time.Hour}, httpapi.Options{})
	first := a.hold(context.Background(), "ALICE_TOKEN", "delete_file", `{"path":"/tmp/a"}`)
	id := a.next(t, approval.EventRequested).Approval.ID
	retry := a.hold(context.Background(), "ALICE_TOKEN", "delete_file", `{"path":"/tmp/a"}`)
	// Both wait on it: the list says so once the retry has attached.
	// The stream tells when; here the list is read until it does (each
	// read is a real request; the bound is the safety net).
	deadline := time.Now().Add(20 * time.Second)
	for a.list(t, "OPS_TOKEN", "").Approvals[0].Waiting != 2 {
		if time.Now().After(deadline) {
			t.Fatal("the retry did not attach")
		}
		runtime.Gosched()
	}
	if code, body := a.decide(t, "OPS_TOKEN", id, "approve", "once"); code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	o1, o2 := outcome(t, first), outcome(t, retry)
	ran := 0
	for _, o := range []approval.Outcome{o1, o2} {
		if o.ID != id {
			t.Errorf("a request waited on %s, want %s", o.ID, id)
		}
		if o.Decision == approval.Approved {
			ran++
		} else if !strings.Contains(o.Message, "already ran it for another request") {
			t.Errorf("the other request: %+v", o)
		}
	}
	if ran != 1 || strings.Count(a.auditLog(), `"event":"executed"`) != 1 || strings.Count(a.auditLog(), `"event":"approval_requested"`) != 1 {
		t.Errorf("%d ran; audit:\n%s", ran, a.auditLog())
	}
}

// TestApprovalsSeparateApprover: with --approval-separate-approver, an
// approver cannot approve a call of their own; another approver can.
func TestApprovalsSeparateApprover(t *testing.T) {
	a := newApprovalEnv(t, approval.Options{Timeout: time.Hour, SeparateApprover: true, Approvers: auth.Subjects{"token:OPS_TOKEN", "token:ALICE_TOKEN"}}, httpapi.Options{})
	got := a.hold(context.Background(), "ALICE_TOKEN", "delete_file", `{}`)
	id := a.next(t, approval.EventRequested).Approval.ID
	if l := a.list(t, "ALICE_TOKEN", ""); len(l.Approvals) != 1 || l.Approvals[0].CanDecide || !l.Approver {
		t.Errorf("the caller's list: %+v", l)
	}
	if code, body := a.decide(t, "ALICE_TOKEN", id, "approve", "mine"); code != 403 || !strings.Contains(body, "the approver must not be the caller (--approval-separate-approver)") {
		t.Errorf("the caller approving: %d %s", code, body)
	}
	if code, body := a.decide(t, "OPS_TOKEN", id, "approve", ""); code != 200 {
		t.Fatalf("another approver: %d %s", code, body)
	}
	if o := outcome(t, got); o.Decision != approval.Approved || o.Approver != "OPS_TOKEN" {
		t.Errorf("%+v", o)
	}
	// Without the flag the caller, an approver, may approve its own.
	b := newApprovalEnv(t, approval.Options{Timeout: time.Hour, Approvers: auth.Subjects{"token:ALICE_TOKEN"}}, httpapi.Options{})
	got = b.hold(context.Background(), "ALICE_TOKEN", "delete_file", `{}`)
	id = b.next(t, approval.EventRequested).Approval.ID
	if code, body := b.decide(t, "ALICE_TOKEN", id, "approve", ""); code != 200 {
		t.Errorf("without the flag: %d %s", code, body)
	}
	outcome(t, got)
}

// TestApprovalsStream: the stream sends what is pending when it opens,
// then each new request and each decision as it happens.
func TestApprovalsStream(t *testing.T) {
	a := newApprovalEnv(t, approval.Options{Timeout: time.Hour}, httpapi.Options{})
	a.hold(context.Background(), "ALICE_TOKEN", "delete_file", `{"n":1}`)
	first := a.next(t, approval.EventRequested).Approval.ID

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, _ := http.NewRequestWithContext(ctx, "GET", a.srv.URL+httpapi.ApprovalsEventsPath, nil)
	r.Header.Set("Authorization", "Bearer "+approvalTokens["OPS_TOKEN"])
	resp, err := a.client.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sse := newSSEReader(resp.Body)
	type streamed struct {
		Event    string `json:"event"`
		Approval struct {
			ID, Tool, State, Arguments string
			CanDecide                  bool `json:"canDecide"`
		} `json:"approval"`
		Channel, Approver, Reason string
	}
	read := func() (string, streamed) {
		t.Helper()
		ev, ok := sse.next()
		if !ok {
			t.Fatal("the stream ended")
		}
		var s streamed
		if err := json.Unmarshal([]byte(ev.data), &s); err != nil {
			t.Fatal(err)
		}
		return ev.event, s
	}
	if kind, s := read(); kind != "approval_requested" || s.Approval.ID != first || !s.Approval.CanDecide {
		t.Errorf("the first event, of what was pending: %s %+v", kind, s)
	}
	got := a.hold(context.Background(), "BOB_TOKEN", "delete_dir", `{"path":"/srv","token":"hunter2-value"}`)
	kind, s := read()
	if kind != "approval_requested" || s.Approval.Tool != "delete_dir" || s.Event != "approval_requested" || strings.Contains(s.Approval.Arguments, "hunter2") {
		t.Errorf("a new request: %s %+v", kind, s)
	}
	if code, body := a.decide(t, "OPS_TOKEN", s.Approval.ID, "deny", "no"); code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	if kind, d := read(); kind != "denied" || d.Approval.ID != s.Approval.ID || d.Approver != "OPS_TOKEN" || d.Channel != "operator" || d.Reason != "no" {
		t.Errorf("the decision: %s %+v", kind, d)
	}
	outcome(t, got)
	// A caller may not open it.
	if code, _ := a.api(t, "BOB_TOKEN", "GET", httpapi.ApprovalsEventsPath, ""); code != 403 {
		t.Errorf("a caller's stream: %d", code)
	}
}

// TestApprovalsBound: 100 calls held at once, by ten principals: the API
// lists them all, the stream sends them all, the 101st and a principal's
// 11th are refused saying why; once they are denied through the API,
// nothing is left: no approval, no goroutine.
func TestApprovalsBound(t *testing.T) {
	before := runtime.NumGoroutine()
	a := newApprovalEnv(t, approval.Options{Timeout: time.Hour, MaxPending: 100, MaxPendingPerPrincipal: 10}, httpapi.Options{})
	var held []<-chan approval.Outcome
	for p := range 10 {
		for i := range 10 {
			held = append(held, a.holdAs(fmt.Sprintf("P%d", p), fmt.Sprintf(`{"i":%d}`, i)))
		}
	}
	for range 100 {
		a.next(t, approval.EventRequested)
	}
	if l := a.list(t, "OPS_TOKEN", ""); len(l.Approvals) != 100 {
		t.Fatalf("%d listed, want 100", len(l.Approvals))
	}
	if o := outcome(t, a.holdAs("P10", `{}`)); o.Decision != approval.Refused || !strings.Contains(o.Message, "100 approvals are pending, the most the bridge holds (--max-approvals)") {
		t.Errorf("the 101st: %+v", o)
	}
	// The stream sends every one pending when it opens.
	ctx, cancel := context.WithCancel(context.Background())
	r, _ := http.NewRequestWithContext(ctx, "GET", a.srv.URL+httpapi.ApprovalsEventsPath, nil)
	r.Header.Set("Authorization", "Bearer "+approvalTokens["OPS_TOKEN"])
	resp, err := a.client.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	sse := newSSEReader(resp.Body)
	for i := range 100 {
		if ev, ok := sse.next(); !ok || ev.event != "approval_requested" {
			t.Fatalf("event %d: %+v %v", i, ev, ok)
		}
	}
	cancel()
	resp.Body.Close()

	l := a.list(t, "OPS_TOKEN", "")
	if code, _ := a.decide(t, "OPS_TOKEN", l.Approvals[0].ID, "deny", ""); code != 200 {
		t.Fatal(code)
	}
	p := l.Approvals[1].Principal // still at its bound
	for _, v := range l.Approvals {
		if v.Principal != l.Approvals[0].Principal {
			p = v.Principal
			break
		}
	}
	if o := outcome(t, a.holdAs(p, `{"i":99}`)); o.Decision != approval.Refused || !strings.Contains(o.Message, "10 approvals of this principal are pending") {
		t.Errorf("an 11th of %s: %+v", p, o)
	}
	for _, v := range l.Approvals[1:] {
		if code, body := a.decide(t, "OPS_TOKEN", v.ID, "deny", ""); code != 200 {
			t.Fatalf("%d %s", code, body)
		}
	}
	for _, ch := range held {
		if o := outcome(t, ch); o.Decision != approval.Denied {
			t.Errorf("%+v", o)
		}
	}
	if l := a.list(t, "OPS_TOKEN", "?state=all"); len(l.Approvals) != 0 || a.engine.Stats().Pending != 0 || a.engine.Stats().Watchers != 0 {
		t.Errorf("left: %d listed, %+v", len(l.Approvals), a.engine.Stats())
	}
	a.wg.Wait()
	a.client.CloseIdleConnections()
	// The HTTP server's connections and the bridge's child are the
	// test's own; what the approvals started is gone.
	deadline := time.Now().Add(20 * time.Second)
	for runtime.NumGoroutine() > before+20 && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	if after := runtime.NumGoroutine(); after > before+20 {
		t.Errorf("goroutines: %d before, %d after", before, after)
	}
}

// holdAs holds a call of principal name, who needs no token: the call
// stands for one a transport admitted.
func (a *approvalEnv) holdAs(name, args string) <-chan approval.Outcome {
	return a.hold(context.Background(), name, "delete_file", args)
}

// TestApprovalsAuditAndMetrics: every step of an approval is an audit
// line, with the approver, the channel and the time waited, and never
// the arguments; /metrics counts them.
func TestApprovalsAuditAndMetrics(t *testing.T) {
	a := newApprovalEnv(t, approval.Options{Timeout: time.Hour}, httpapi.Options{MetricsPublic: true})
	got := a.hold(context.Background(), "ALICE_TOKEN", "delete_file", `{"path":"/secret/place"}`)
	id := a.next(t, approval.EventRequested).Approval.ID
	if code, _ := a.decide(t, "OPS_TOKEN", id, "approve", "checked"); code != 200 {
		t.Fatal(code)
	}
	outcome(t, got)
	a.next(t, approval.EventExecuted)
	denied := a.hold(context.Background(), "ALICE_TOKEN", "delete_file", `{"path":"/other"}`)
	id2 := a.next(t, approval.EventRequested).Approval.ID
	if code, _ := a.decide(t, "OPS_TOKEN", id2, "deny", "no"); code != 200 {
		t.Fatal(code)
	}
	outcome(t, denied)

	lines := strings.Split(strings.TrimSpace(a.auditLog()), "\n")
	var events []string
	for _, l := range lines {
		var e struct {
			Event, Approval, Principal, Server, Method, Tool, Rule, Channel, Approver, Reason string
			Digest                                                                            string  `json:"arguments_sha256"`
			WaitMS                                                                            float64 `json:"wait_ms"`
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		if e.Principal != "ALICE_TOKEN" || e.Server != "files" || e.Method != "tools/call" || e.Tool != "delete_file" || e.Rule != "*=delete_*" || len(e.Digest) != 64 {
			t.Errorf("a line: %s", l)
		}
		if !strings.Contains(l, `"channel":`) || !strings.Contains(l, `"approver":`) || !strings.Contains(l, `"wait_ms":`) {
			t.Errorf("a line without the channel, the approver or the time waited: %s", l)
		}
		if e.Event == "approved" && (e.Approver != "OPS_TOKEN" || e.Channel != "operator" || e.Reason != "checked" || e.Approval != id) {
			t.Errorf("the approval's line: %s", l)
		}
		events = append(events, e.Event)
	}
	if got := strings.Join(events, " "); got != "approval_requested approved executed approval_requested denied" {
		t.Errorf("audit events: %s", got)
	}
	if strings.Contains(a.auditLog(), "/secret/place") {
		t.Error("the audit log shows the arguments")
	}
	resp, err := a.client.Get(a.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`mcp_bridge_approvals_total{channel="",event="approval_requested"} 2`,
		`mcp_bridge_approvals_total{channel="operator",event="approved"} 1`,
		`mcp_bridge_approvals_total{channel="operator",event="executed"} 1`,
		`mcp_bridge_approvals_total{channel="operator",event="denied"} 1`,
		`mcp_bridge_approvals_pending 0`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestHeldNoChannel: a call that needs approval, from a client that
// cannot be asked (no form elicitation declared) on a bridge without
// approvers, is denied at once, in both eras, saying why, and never
// reaches the server; a model-set confirm changes nothing; a call the tool
// policy denies is refused by the policy first; other calls run. With
// --approval-fail-open such a call runs, audited as fail-open.
func TestHeldNoChannel(t *testing.T) {
	for _, failOpen := range []bool{false, true} {
		t.Run(map[bool]string{false: "fail closed", true: "fail open"}[failOpen], func(t *testing.T) {
			policy := approval.NewPolicy("", []approval.Rule{mustApprovalRule("*=echo")}, false)
			var requests bytes.Buffer
			a := newApprovalEnv(t, approval.Options{Approvers: auth.Subjects{}, FailOpen: failOpen}, httpapi.Options{Approval: policy, Audit: &requests,
				ToolPolicy: auth.NewToolPolicy([]auth.ToolRule{{Subject: "token:BOB_TOKEN", Glob: "echo", Deny: true}})})
			sid, alice := a.session25(t, "ALICE_TOKEN", `{"sampling":{}}`)
			call := func(tool string, args any) map[string]any {
				t.Helper()
				body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
				msgs := readMessages(t, a.do(req{body: string(body), sid: sid, version: "2025-11-25", header: alice}))
				if len(msgs) != 1 {
					t.Fatalf("%d messages", len(msgs))
				}
				return msgs[0]
			}
			errorOf := func(m map[string]any) string {
				e, _ := m["error"].(map[string]any)
				s, _ := e["message"].(string)
				return s
			}
			const why = `tool "echo" was not run: it needs a human's approval (rule *=echo), and nobody can approve it: the client did not declare form elicitation, and no approver is configured (--approver)`
			check := func(m map[string]any) {
				t.Helper()
				got, isErr := isErrorText(m)
				switch {
				case failOpen && (isErr || got != "x"):
					t.Errorf("fail-open: %v", m)
				case !failOpen && (!isErr || got != why):
					t.Errorf("a held call: %v", m)
				}
			}
			for _, args := range []any{map[string]any{"message": "x"}, map[string]any{"message": "x", "confirm": true, "approved": true, "_meta": map[string]any{"approved": true}}} {
				check(call("echo", args))
			}
			ran := map[bool]string{false: "0", true: "2"}[failOpen]
			if got := text(call("echo_count", map[string]any{})); got != ran {
				t.Errorf("the server answered %s echo calls, want %s", got, ran)
			}
			// 2026-07-28: the same; and the tool policy first.
			m := readMessages(t, a.do(modernRequest{id: 3, method: "tools/call", params: map[string]any{"name": "echo", "arguments": map[string]any{"message": "x"}}, token: approvalTokens["ALICE_TOKEN"]}.req()))
			if len(m) != 1 {
				t.Fatalf("a held 2026-07-28 call: %v", m)
			}
			check(m[0])
			m = readMessages(t, a.do(modernRequest{id: 4, method: "tools/call", params: map[string]any{"name": "echo", "arguments": map[string]any{"message": "x"}}, token: approvalTokens["BOB_TOKEN"]}.req()))
			if len(m) != 1 || !strings.Contains(errorOf(m[0]), "is not allowed for this principal (tool policy)") {
				t.Errorf("a call the tool policy denies: %v", m)
			}
			if got := text(call("echo_count", map[string]any{})); got != ran {
				t.Errorf("the server answered %s echo calls, want %s", got, ran)
			}
			denied := strings.Count(requests.String(), `"tool":"echo","outcome":"denied"`)
			if want := map[bool]int{false: 4, true: 1}[failOpen]; denied != want {
				t.Errorf("%d audit lines of denied echo calls, want %d:\n%s", denied, want, requests.String())
			}
			if failOpen && !strings.Contains(a.auditLog(), `"channel":"fail-open"`) {
				t.Errorf("no fail-open audit line:\n%s", a.auditLog())
			}
		})
	}
}
