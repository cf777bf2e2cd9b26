package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
)

// TestStatuses is the statuses of docs/spec-rules.md as a table: one raw
// request, the status and JSON-RPC error code it must get.
func TestStatuses(t *testing.T) {
	e := newEnv(t, envOpts{http: httpapi.Options{MaxBodyBytes: 1 << 10, AllowedOrigins: []string{"https://app.example.com", "https://*.trusted.example"}}})
	sid := e.initialize("2025-06-18")
	sid0326 := e.initialize("2025-03-26")
	list := `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`
	cases := []struct {
		name   string
		r      req
		status int
		code   int // JSON-RPC error code in the body; 0: none expected
	}{
		{"no session id", req{body: list}, 400, bridge.CodeSessionRequired},
		{"unknown session id", req{body: list, sid: "nope"}, 404, bridge.CodeSessionNotFound},
		{"unsupported protocol version", req{body: list, sid: sid, version: "1999-01-01"}, 400, bridge.CodeInvalidRequest},
		{"missing protocol version is 2025-03-26", req{body: list, sid: sid}, 200, 0},
		{"negotiated protocol version", req{body: list, sid: sid, version: "2025-06-18"}, 200, 0},
		{"second initialize", req{body: fmt.Sprintf(initBody, "2025-06-18"), sid: sid}, 400, bridge.CodeInvalidRequest},
		{"invalid JSON", req{body: `{"jsonrpc":`, sid: sid}, 400, bridge.CodeParseError},
		{"null id", req{body: `{"jsonrpc":"2.0","id":null,"method":"tools/list"}`, sid: sid}, 400, bridge.CodeInvalidRequest},
		{"not JSON-RPC 2.0", req{body: `{"id":1,"method":"tools/list"}`, sid: sid}, 400, bridge.CodeInvalidRequest},
		{"malformed notification", req{body: `{"jsonrpc":"2.0","method":5}`, sid: sid}, 400, bridge.CodeInvalidRequest},
		{"notification", req{body: `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`, sid: sid}, 202, 0},
		{"cancel of an unknown request", req{body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nope"}}`, sid: sid}, 202, 0},
		{"ping", req{body: `{"jsonrpc":"2.0","id":"ping-1","method":"ping"}`, sid: sid}, 200, 0},
		{"accept only JSON gets JSON", req{body: list, sid: sid, accept: "application/json"}, 200, 0},
		{"accept only SSE gets SSE", req{body: list, sid: sid, accept: "text/event-stream"}, 200, 0},
		{"accept nothing usable", req{body: list, sid: sid, accept: "text/plain"}, 406, bridge.CodeInvalidRequest},
		{"no accept header", req{body: list, sid: sid, accept: "-"}, 406, bridge.CodeInvalidRequest},
		{"wrong content type", req{body: list, sid: sid, ctype: "text/plain"}, 415, bridge.CodeInvalidRequest},
		{"body over the limit", req{body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"` + strings.Repeat("a", 2<<10) + `"}}`, sid: sid}, 413, bridge.CodeInvalidRequest},
		{"batch after 2025-03-26", req{body: "[" + list + "]", sid: sid}, 400, bridge.CodeInvalidRequest},
		{"batch on 2025-03-26", req{body: `[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/roots/list_changed"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`, sid: sid0326}, 200, 0},
		{"empty batch", req{body: `[]`, sid: sid0326}, 400, bridge.CodeInvalidRequest},
		{"batch with initialize", req{body: "[" + fmt.Sprintf(initBody, "2025-03-26") + "]"}, 400, bridge.CodeInvalidRequest},
		{"GET without SSE accept", req{method: "GET", sid: sid, accept: "application/json"}, 406, bridge.CodeInvalidRequest},
		{"GET without session", req{method: "GET"}, 400, bridge.CodeSessionRequired},
		{"GET unknown session", req{method: "GET", sid: "nope"}, 404, bridge.CodeSessionNotFound},
		{"DELETE without session", req{method: "DELETE"}, 400, bridge.CodeSessionRequired},
		{"DELETE unknown session", req{method: "DELETE", sid: "nope"}, 404, bridge.CodeSessionNotFound},
		{"PUT", req{method: "PUT", sid: sid}, 405, bridge.CodeInvalidRequest},
		{"foreign origin", req{body: list, sid: sid, header: map[string]string{"Origin": "https://evil.example"}}, 403, bridge.CodeInvalidRequest},
		{"origin lookalike of a pattern", req{body: list, sid: sid, header: map[string]string{"Origin": "https://evil.com/.trusted.example"}}, 403, bridge.CodeInvalidRequest},
		{"loopback origin", req{body: list, sid: sid, header: map[string]string{"Origin": "http://localhost:3000"}}, 200, 0},
		{"allowed origin", req{body: list, sid: sid, header: map[string]string{"Origin": "https://app.example.com"}}, 200, 0},
		{"allowed origin pattern", req{body: list, sid: sid, header: map[string]string{"Origin": "https://a.trusted.example"}}, 200, 0},
		{"rebinding host", req{body: list, sid: sid, header: map[string]string{"Host": "evil.example.com"}}, 403, bridge.CodeInvalidRequest},
		// MCP 2026-07-28 on the same endpoint (the badchild is a 2025
		// server: the bridge translates).
		{"2026-07-28 probe without capabilities", req{body: `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, version: "2026-07-28", header: map[string]string{"Mcp-Method": "server/discover"}}, 400, bridge.CodeInvalidParams},
		{"2026-07-28 discover", req{body: modern(1, "server/discover", ""), version: "2026-07-28", header: map[string]string{"Mcp-Method": "server/discover"}}, 200, 0},
		{"2026-07-28 list", req{body: modern(2, "tools/list", ""), version: "2026-07-28", header: map[string]string{"Mcp-Method": "tools/list"}}, 200, 0},
		{"2026-07-28 call", req{body: modern(3, "tools/call", `"name":"echo","arguments":{"text":"hi"},`), version: "2026-07-28", header: map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "echo"}}, 200, 0},
		{"2026-07-28 session id ignored", req{body: modern(3, "tools/list", ""), sid: "nope", version: "2026-07-28", header: map[string]string{"Mcp-Method": "tools/list"}}, 200, 0},
		{"2026-07-28 version header differs", req{body: modern(4, "tools/list", ""), version: "2026-09-01", header: map[string]string{"Mcp-Method": "tools/list"}}, 400, bridge.CodeHeaderMismatch},
		{"2026-07-28 no version header", req{body: modern(4, "tools/list", ""), header: map[string]string{"Mcp-Method": "tools/list"}}, 400, bridge.CodeHeaderMismatch},
		{"2026-07-28 no method header", req{body: modern(5, "tools/list", ""), version: "2026-07-28"}, 400, bridge.CodeHeaderMismatch},
		{"2026-07-28 name header differs", req{body: modern(6, "tools/call", `"name":"echo","arguments":{},`), version: "2026-07-28", header: map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "crash"}}, 400, bridge.CodeHeaderMismatch},
		{"2026-07-28 unsupported version", req{body: strings.Replace(modern(7, "tools/list", ""), "2026-07-28", "2099-01-01", 1), version: "2099-01-01", header: map[string]string{"Mcp-Method": "tools/list"}}, 400, bridge.CodeUnsupportedVersion},
		{"2026-07-28 removed method", req{body: modern(8, "ping", ""), version: "2026-07-28", header: map[string]string{"Mcp-Method": "ping"}}, 404, bridge.CodeMethodNotFound},
		{"2026-07-28 unknown method", req{body: modern(9, "tools/frobnicate", ""), version: "2026-07-28", header: map[string]string{"Mcp-Method": "tools/frobnicate"}}, 404, bridge.CodeMethodNotFound},
		{"2026-07-28 notification", req{body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, version: "2026-07-28"}, 202, 0},
		{"2026-07-28 batch", req{body: "[" + modern(10, "tools/list", "") + "]", version: "2026-07-28", header: map[string]string{"Mcp-Method": "tools/list"}}, 400, bridge.CodeInvalidRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r
			if h := r.header["Host"]; h != "" {
				r.header = nil
				resp := e.doHost(r, h)
				checkStatus(t, resp, tc.status, tc.code)
				return
			}
			checkStatus(t, e.do(r), tc.status, tc.code)
		})
	}
}

func checkStatus(t *testing.T, resp *http.Response, status, code int) {
	t.Helper()
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d; body %s", resp.StatusCode, status, body)
	}
	if status == 405 && resp.Header.Get("Allow") == "" {
		t.Error("405 without Allow")
	}
	if status == 202 && len(body) != 0 {
		t.Errorf("202 with a body: %s", body)
	}
	if code == 0 {
		return
	}
	var m struct {
		Error struct{ Code int } `json:"error"`
	}
	if err := json.Unmarshal(body, &m); err != nil || m.Error.Code != code {
		t.Fatalf("body %s: want JSON-RPC error %d", body, code)
	}
}

func (e *env) doHost(r req, host string) *http.Response {
	e.t.Helper()
	hr, _ := http.NewRequest(http.MethodPost, e.url, strings.NewReader(r.body))
	hr.Host = host
	hr.Header.Set("Accept", "application/json, text/event-stream")
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Mcp-Session-Id", r.sid)
	resp, err := e.client.Do(hr)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

func TestSessionIDs(t *testing.T) {
	e := newEnv(t, envOpts{})
	visible := regexp.MustCompile(`^[\x21-\x7e]{22,}$`)
	pids := map[string]bool{}
	sids := map[string]bool{}
	for range 3 {
		sid := e.initialize("2025-11-25")
		if !visible.MatchString(sid) || sids[sid] {
			t.Fatalf("session id %q: want a fresh id of visible ASCII", sid)
		}
		sids[sid] = true
		_, msgs := e.call(sid, 1, "pid", nil)
		pids[text(msgs[0])] = true
	}
	if len(pids) != 3 {
		t.Fatalf("three sessions share children: %v", pids)
	}
}

func TestInitializeNegotiation(t *testing.T) {
	e := newEnv(t, envOpts{})
	resp := e.do(req{body: fmt.Sprintf(initBody, "2099-01-01")})
	msgs := readMessages(t, resp)
	if v := msgs[0]["result"].(map[string]any)["protocolVersion"]; v != "2025-11-25" {
		t.Fatalf("negotiated %v", v)
	}
}

// TestIDsExact: ids come back byte for byte, even ones a JavaScript
// server would round (the bridge gives the child small ids of its own).
func TestIDsExact(t *testing.T) {
	e := newEnv(t, envOpts{})
	sid := e.initialize("2025-11-25")
	for _, id := range []string{`"7"`, `7`, `12345678901234567890`, `"\u00e9t\u00e9"`, `-3`, `"a\"b"`} {
		body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{"message":"m"}}}`
		resp := e.do(req{body: body, sid: sid})
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(raw), `"id":`+id) {
			t.Errorf("id %s came back as %s", id, raw)
		}
	}
}

func TestChildErrorIsHTTP200(t *testing.T) {
	e := newEnv(t, envOpts{})
	sid := e.initialize("2025-11-25")
	resp, msgs := e.call(sid, 1, "no-such-tool", nil)
	if resp.StatusCode != 200 || msgs[0]["error"] == nil {
		t.Fatalf("status %d, %v", resp.StatusCode, msgs)
	}
}

// TestSamplingOnRequestStream: a server->client request while one call is
// in flight goes on that call's stream; the client's answer reaches the
// child with the child's own id.
func TestSamplingOnRequestStream(t *testing.T) {
	e := newEnv(t, envOpts{})
	sid := e.initialize("2025-11-25")
	get := e.do(req{method: "GET", sid: sid})
	defer get.Body.Close()

	resp := e.do(req{sid: sid, body: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"sample","arguments":{"prompt":"p"}}}`})
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("content type %q", resp.Header.Get("Content-Type"))
	}
	sr := newSSEReader(resp.Body)
	ev, ok := sr.next()
	if !ok {
		t.Fatal("stream ended")
	}
	m := decode(t, ev.data)
	if m["method"] != "sampling/createMessage" {
		t.Fatalf("first event %v", m)
	}
	answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"role":"assistant","model":"m","content":{"type":"text","text":"sampled!"}}}`, m["id"])
	ack := e.do(req{sid: sid, body: answer})
	checkStatus(t, ack, 202, 0)
	ev, ok = sr.next()
	if !ok {
		t.Fatal("stream ended before the response")
	}
	if m := decode(t, ev.data); text(m) != "sampled!" {
		t.Fatalf("response %v", m)
	}
}

// TestCancel: the child gets notifications/cancelled with its own id for
// the request, and no response is forwarded.
func TestCancel(t *testing.T) {
	e := newEnv(t, envOpts{})
	sid := e.initialize("2025-11-25")
	resp := e.do(req{sid: sid, body: `{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"slow","arguments":{"ms":60000,"steps":1}}}`})
	done := make(chan []map[string]any)
	go func() { done <- readMessages(t, resp) }()
	checkStatus(t, e.do(req{sid: sid, body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c1","reason":"user"}}`}), 202, 0)
	if msgs := <-done; len(msgs) != 0 {
		for _, m := range msgs {
			if m["id"] == "c1" {
				t.Fatalf("a response was forwarded for a cancelled request: %v", m)
			}
		}
	}
	_, msgs := e.call(sid, 2, "cancels", nil)
	// The child numbers requests itself: the initialize was 1, this call 2.
	if got := text(msgs[0]); got != "[2]" {
		t.Fatalf("child saw cancellations %s, want [2] (its own id for c1)", got)
	}
	if n := e.b.Stats().RequestsCancelled.Load(); n != 1 {
		t.Errorf("RequestsCancelled = %d, want 1", n)
	}
}

// TestDisconnectIsNotCancel: a client that drops a POST stream does not
// cancel its request; the session goes on.
func TestDisconnectIsNotCancel(t *testing.T) {
	e := newEnv(t, envOpts{})
	sid := e.initialize("2025-11-25")
	ctx, cancel := context.WithCancel(context.Background())
	resp := e.doCtx(ctx, req{sid: sid, body: `{"jsonrpc":"2.0","id":"d1","method":"tools/call","params":{"name":"slow","arguments":{"ms":200,"steps":2},"_meta":{"progressToken":1}}}`})
	sr := newSSEReader(resp.Body)
	if _, ok := sr.next(); !ok { // the first progress event: the call runs
		t.Fatal("no progress")
	}
	cancel()
	resp.Body.Close()
	// The slow call's log messages may share this stream (nothing else
	// is open to take them); the response is the last message.
	_, msgs := e.call(sid, 2, "echo", map[string]any{"message": "still here"})
	if text(msgs[len(msgs)-1]) != "still here" {
		t.Fatalf("session broken: %v", msgs)
	}
	_, msgs = e.call(sid, 3, "cancels", nil)
	if got := text(msgs[len(msgs)-1]); got != "[]" {
		t.Fatalf("the child was sent a cancellation: %s", got)
	}
	if n := e.b.Stats().RequestsCancelled.Load(); n != 0 {
		t.Errorf("RequestsCancelled = %d, want 0", n)
	}
}

// TestGETStream: unrelated messages go on the GET stream, exactly once;
// a second GET is a conflict; messages sent while no stream was open
// wait for one.
func TestGETStream(t *testing.T) {
	e := newEnv(t, envOpts{})
	sid := e.initialize("2025-11-25")
	// No stream can take it (the only POST accepts only JSON): the
	// notification waits in the session's queue.
	body := `{"jsonrpc":"2.0","id":"n1","method":"tools/call","params":{"name":"notify","arguments":{"method":"notifications/tools/list_changed","params":{}}}}`
	if msgs := readMessages(t, e.do(req{sid: sid, body: body, accept: "application/json"})); len(msgs) != 1 || text(msgs[0]) != "ok" {
		t.Fatalf("notify: %v", msgs)
	}

	get := e.do(req{method: "GET", sid: sid})
	defer get.Body.Close()
	if get.StatusCode != 200 || get.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET: %d %q", get.StatusCode, get.Header.Get("Content-Type"))
	}
	checkStatus(t, e.do(req{method: "GET", sid: sid}), 409, bridge.CodeInvalidRequest)
	sr := newSSEReader(get.Body)
	ev, _ := sr.next()
	if m := decode(t, ev.data); m["method"] != "notifications/tools/list_changed" {
		t.Fatalf("queued message: %v", m)
	}

	// With the GET stream open, a notification sent while another call's
	// stream is open still goes on GET, and not on the call's stream.
	for i := 2; i < 5; i++ {
		msgs := e.notifyFromChild(sid, i, "notifications/resources/list_changed")
		for _, m := range msgs {
			if m["method"] != nil {
				t.Fatalf("a notification appeared on a POST stream too: %v", m)
			}
		}
		ev, _ := sr.next()
		if m := decode(t, ev.data); m["method"] != "notifications/resources/list_changed" || m["id"] != nil {
			t.Fatalf("GET stream: %v", m)
		}
	}
}

// notifyFromChild makes the child emit a notification (with the notify
// tool) and returns the messages of that call's response.
func (e *env) notifyFromChild(sid string, id int, method string) []map[string]any {
	e.t.Helper()
	_, msgs := e.call(sid, fmt.Sprintf("n%d", id), "notify", map[string]any{"method": method, "params": map[string]any{}})
	return msgs
}

// TestChildCrash: requests in flight fail at once with the exit status and
// stderr; the session is then gone.
func TestChildCrash(t *testing.T) {
	e := newEnv(t, envOpts{})
	sid := e.initialize("2025-11-25")
	resp, msgs := e.call(sid, 1, "crash", map[string]any{"code": 3, "stderr": "boom: out of cheese"})
	if resp.StatusCode != 200 || len(msgs) != 1 {
		t.Fatalf("%d %v", resp.StatusCode, msgs)
	}
	errObj, _ := msgs[0]["error"].(map[string]any)
	raw, _ := json.Marshal(errObj)
	if errObj == nil || !strings.Contains(string(raw), "exit status 3") || !strings.Contains(string(raw), "out of cheese") {
		t.Fatalf("error %s: want the exit status and the stderr tail", raw)
	}
	resp, _ = e.call(sid, 2, "echo", map[string]any{"message": "x"})
	if resp.StatusCode != 404 {
		t.Fatalf("after the crash: %d, want 404", resp.StatusCode)
	}
}

// TestOversizeResponse: a response over the line cap fails that request
// with a clear error; the session lives on.
func TestOversizeResponse(t *testing.T) {
	e := newEnv(t, envOpts{bridge: bridge.Config{MaxLineBytes: 1 << 20}})
	sid := e.initialize("2025-11-25")
	for _, idFirst := range []bool{true, false} {
		_, msgs := e.call(sid, "big", "big", map[string]any{"bytes": 3 << 20, "id_first": idFirst})
		errObj, _ := msgs[0]["error"].(map[string]any)
		if errObj == nil || msgs[0]["id"] != "big" || !strings.Contains(errObj["message"].(string), "size limit") {
			t.Fatalf("id_first=%v: %v", idFirst, msgs)
		}
		_, msgs = e.call(sid, 2, "big", map[string]any{"bytes": 100 << 10})
		if len(text(msgs[0])) != 100<<10 {
			t.Fatal("the session did not survive")
		}
	}
}

func TestMaxSessions(t *testing.T) {
	e := newEnv(t, envOpts{bridge: bridge.Config{MaxSessions: 2}})
	e.initialize("2025-11-25")
	e.initialize("2025-11-25")
	resp := e.do(req{body: fmt.Sprintf(initBody, "2025-11-25")})
	if resp.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	checkStatus(t, resp, 503, bridge.CodeInternalError)
}

func TestIdleExpiry(t *testing.T) {
	e := newEnv(t, envOpts{bridge: bridge.Config{IdleTimeout: 50 * time.Millisecond}})
	sid := e.initialize("2025-11-25")
	s, err := e.b.Session(sid, "")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-time.After(30 * time.Second): // a safety net, not a timing assertion
		t.Fatal("the idle session never ended")
	}
	resp, _ := e.call(sid, 1, "echo", map[string]any{"message": "x"})
	if resp.StatusCode != 404 {
		t.Fatalf("expired session: %d", resp.StatusCode)
	}
}

// TestResponseModes: --response-mode sse always streams; json never does,
// and then progress has nowhere to go but the GET stream.
func TestResponseModes(t *testing.T) {
	for _, mode := range []string{httpapi.ModeSSE, httpapi.ModeJSON} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, envOpts{http: httpapi.Options{ResponseMode: mode}})
			sid := e.initialize("2025-11-25")
			resp, msgs := e.call(sid, 1, "echo", map[string]any{"message": "m"})
			want := map[string]string{httpapi.ModeSSE: "text/event-stream", httpapi.ModeJSON: "application/json"}[mode]
			if ct := resp.Header.Get("Content-Type"); ct != want || text(msgs[0]) != "m" {
				t.Fatalf("content type %q, %v", ct, msgs)
			}
		})
	}
}

func TestHealthz(t *testing.T) {
	e := newEnv(t, envOpts{})
	resp, err := e.client.Get(e.srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	checkStatus(t, resp, 200, 0)
}

// TestResumePOSTStream: on 2025-11-25 a POST stream opens with a priming
// event (an id, empty data, a retry field); a client that loses it before
// the response resumes with GET and Last-Event-ID and gets the rest of
// that stream, response included. Older versions get no empty events,
// but ids all the same: their streams are resumable too.
func TestResumePOSTStream(t *testing.T) {
	e := newEnv(t, envOpts{})
	sid := e.initialize("2025-11-25")
	ctx, cancel := context.WithCancel(context.Background())
	resp := e.doCtx(ctx, req{sid: sid, version: "2025-11-25", body: `{"jsonrpc":"2.0","id":"r1","method":"tools/call","params":{"name":"slow","arguments":{"ms":300,"steps":3},"_meta":{"progressToken":"t"}}}`})
	raw := newRawSSE(resp.Body)
	prime := raw.event()
	if prime.id == "" || prime.data != "" || !prime.retry {
		t.Fatalf("first event %+v: want a priming event with an id, empty data and retry", prime)
	}
	first := raw.event()
	cancel()
	resp.Body.Close()

	get := e.do(req{method: "GET", sid: sid, version: "2025-11-25", header: map[string]string{"Last-Event-ID": first.id}})
	defer get.Body.Close()
	if get.StatusCode != 200 {
		t.Fatalf("resume: %d", get.StatusCode)
	}
	var got []map[string]any
	for _, ev := range readSSE(t, get.Body) {
		if ev.data != "" {
			got = append(got, decode(t, ev.data))
		}
	}
	if len(got) == 0 || got[len(got)-1]["id"] != "r1" || text(got[len(got)-1]) != "slow done" {
		t.Fatalf("resumed stream: %v", got)
	}

	checkStatus(t, e.do(req{method: "GET", sid: sid, header: map[string]string{"Last-Event-ID": "999_1"}}), 400, bridge.CodeInvalidRequest)

	old := e.initialize("2025-06-18")
	resp = e.do(req{sid: old, accept: "text/event-stream", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`})
	for _, ev := range readSSE(t, resp.Body) {
		if ev.data == "" || ev.id == "" {
			t.Fatalf("a 2025-06-18 session got %+v: want data and an id", ev)
		}
	}
}

// rawSSE reads events including empty ones.
type rawSSE struct{ sc *bufio.Scanner }

type rawEvent struct {
	id, data string
	retry    bool
}

func newRawSSE(r io.Reader) *rawSSE { return &rawSSE{sc: bufio.NewScanner(r)} }

func (r *rawSSE) event() rawEvent {
	var ev rawEvent
	seen := false
	for r.sc.Scan() {
		line := r.sc.Text()
		switch {
		case line == "" && seen:
			return ev
		case strings.HasPrefix(line, "id: "):
			ev.id, seen = line[4:], true
		case strings.HasPrefix(line, "retry: "):
			ev.retry, seen = true, true
		case strings.HasPrefix(line, "data:"):
			ev.data, seen = strings.TrimSpace(line[5:]), true
		}
	}
	return ev
}

// modern is a 2026-07-28 request: params (members with a trailing comma,
// or "") and the envelope.
func modern(id int, method, params string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, id, method, params)
}

// TestModernStreamCloseCancels: a 2026-07-28 client that closes a call's
// SSE stream cancels the call ("Closing the SSE response stream MUST be
// treated ... as cancellation"): the child gets notifications/cancelled
// with its own id for the request, and RequestsCancelled counts it, the
// one trace a cancellation leaves.
func TestModernStreamCloseCancels(t *testing.T) {
	e := newEnv(t, envOpts{})
	headers := func(method, name string) map[string]string {
		return map[string]string{"Mcp-Method": method, "Mcp-Name": name}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slow := strings.Replace(modern(1, "tools/call", `"name":"slow","arguments":{"ms":60000,"steps":600},`),
		`"_meta":{`, `"_meta":{"progressToken":"p",`, 1)
	resp := e.doCtx(ctx, req{body: slow, version: "2026-07-28", header: headers("tools/call", "slow")})
	sr := newSSEReader(resp.Body)
	if _, ok := sr.next(); !ok { // the first progress event: the call runs
		t.Fatal("no progress")
	}
	cancel()
	resp.Body.Close()
	eventually(t, "the call was cancelled", func() bool { return e.b.Stats().RequestsCancelled.Load() == 1 })
	// The same child (the client declared no capability a server may ask
	// for: the pool's base child serves both calls), which reads its
	// stdin in order.
	resp = e.do(req{body: modern(2, "tools/call", `"name":"cancels","arguments":{},`), version: "2026-07-28", header: headers("tools/call", "cancels")})
	msgs := readMessages(t, resp)
	if len(msgs) == 0 {
		t.Fatal("no answer to cancels")
	}
	var ids []json.RawMessage
	if err := json.Unmarshal([]byte(text(msgs[len(msgs)-1])), &ids); err != nil || len(ids) != 1 || strings.Trim(string(ids[0]), "0123456789") != "" {
		t.Errorf("the child saw cancellations %s, want one, with its own (numeric) id", text(msgs[len(msgs)-1]))
	}
}

// TestModernMissingCapability: a legacy child asks the bridge's profile
// (which declares every capability) for input the request's client did
// not declare. The child is told the client cannot; the call fails with
// -32021 naming the capability only if it then fails. A server that asks
// on its own and carries on, as server-everything does with the roots it
// asks for 350 ms after it is initialized, during whichever call is in
// flight, must not fail the call: it did, on the pool's base child and
// on a leased one alike.
func TestModernMissingCapability(t *testing.T) {
	e := newEnv(t, envOpts{})
	call := func(id int, caps, tool, args string) *http.Response {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":%s}}}`, id, tool, args, caps)
		return e.do(req{body: body, version: "2026-07-28", header: map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": tool}})
	}
	for i, tc := range []struct {
		name, caps, tool, args string
		status                 int
		want                   []string // in the answer
	}{
		{"roots asked, none declared (base child)", `{}`, "ask", `{"method":"roots/list"}`, 200, []string{`asked roots/list: error`}},
		{"roots asked, sampling declared (leased child)", `{"sampling":{}}`, "ask", `{"method":"roots/list"}`, 200, []string{`asked roots/list: error`}},
		{"sampling needed, none declared (base child)", `{}`, "sample", `{"prompt":"hi"}`, 400, []string{`"code":-32021`, `"data":{"requiredCapabilities":{"sampling":{}}}`}},
		{"sampling needed, roots declared (leased child)", `{"roots":{}}`, "sample", `{"prompt":"hi"}`, 400, []string{`"code":-32021`, `"data":{"requiredCapabilities":{"sampling":{}}}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := call(i+1, tc.caps, tc.tool, tc.args)
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Errorf("%d %s, want %d", resp.StatusCode, body, tc.status)
			}
			for _, want := range tc.want {
				if !strings.Contains(string(body), want) {
					t.Errorf("%s, want %s in it", body, want)
				}
			}
		})
	}
	if n := e.b.Stats().InputMissingCapability.Load(); n != 2 {
		t.Errorf("InputMissingCapability = %d, want 2", n)
	}
}

// TestModernOff: with the modern era off, a 2026-07-28 probe gets the
// answer of a 2025-only server, a 4xx whose code is not a 2026-07-28 one,
// from which dual-era clients fall back to initialize.
func TestModernOff(t *testing.T) {
	e := newEnv(t, envOpts{http: httpapi.Options{DisableModern: true}})
	resp := e.do(req{body: modern(1, "server/discover", ""), version: "2026-07-28", header: map[string]string{"Mcp-Method": "server/discover"}})
	checkStatus(t, resp, 400, bridge.CodeSessionRequired)
}
