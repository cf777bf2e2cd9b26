package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
)

// TestStatuses runs the transcripts of testdata/statuses
// (docs/spec-rules.md, "The statuses"): one raw HTTP request each, and the
// response it must get. Every transcript runs against one bridge of the
// badchild, with a body limit of 1 KiB and two allowed origins besides
// loopback ones (https://app.example.com, https://*.trusted.example);
// ${session V} in a request header names a session the test initializes
// at version V beforehand.
func TestStatuses(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "statuses", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts in testdata/statuses (%v)", err)
	}
	var trs []*transcript
	for _, f := range files {
		tr, err := loadTranscript(f)
		if err != nil {
			t.Fatal(err)
		}
		trs = append(trs, tr)
	}
	e := newEnv(t, envOpts{http: httpapi.Options{MaxBodyBytes: 1 << 10, AllowedOrigins: []string{"https://app.example.com", "https://*.trusted.example"}}})
	// The sessions the transcripts name, started before any of them runs.
	sessions := map[string]string{}
	for _, tr := range trs {
		for _, v := range tr.sessions() {
			if sessions[v] == "" {
				sessions[v] = e.initialize(v)
			}
		}
	}
	for _, tr := range trs {
		t.Run(tr.name, func(t *testing.T) { tr.run(t, e, sessions) })
	}
}

// transcript is one exchange of testdata/statuses: a txtar archive whose
// comment names the bug it guards, with two files. "request" is the
// request line ("POST /mcp"), its headers, a blank line and the body, sent
// exactly as written (no header is added but those Go's client always
// sends: Host, User-Agent, Content-Length, Accept-Encoding). "response" is
// the status line, the headers the response must have with those values,
// a blank line, and the JSON-RPC messages it must carry, in any order, as
// JSON values: each must be contained in a message of the response (an
// object's members in the message's, recursively; {} is any object). A
// response without messages must have an empty body.
type transcript struct {
	name   string
	method string
	path   string
	header http.Header // values may name ${session V}
	host   string
	body   []byte
	status int
	want   http.Header
	msgs   []any
}

func loadTranscript(path string) (*transcript, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	ar := txtar.Parse(data)
	tr := &transcript{name: strings.TrimSuffix(filepath.Base(path), ".txtar")}
	if len(bytes.TrimSpace(ar.Comment)) == 0 {
		return nil, fmt.Errorf("%s: no comment naming the bug it guards", path)
	}
	seen := map[string]bool{}
	for _, f := range ar.Files {
		if seen[f.Name] {
			return nil, fmt.Errorf("%s: two %q sections", path, f.Name)
		}
		seen[f.Name] = true
		switch f.Name {
		case "request":
			err = tr.parseRequest(f.Data)
		case "response":
			err = tr.parseResponse(f.Data)
		default:
			err = fmt.Errorf("unknown section %q", f.Name)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
	}
	if !seen["request"] || !seen["response"] {
		return nil, fmt.Errorf("%s: want a request and a response section", path)
	}
	return tr, nil
}

// parseRequest reads "METHOD PATH", the headers, and the body.
func (tr *transcript) parseRequest(data []byte) error {
	r := textproto.NewReader(bufio.NewReader(bytes.NewReader(data)))
	line, err := r.ReadLine()
	if err != nil {
		return fmt.Errorf("request line: %v", err)
	}
	var ok bool
	if tr.method, tr.path, ok = strings.Cut(line, " "); !ok || !strings.HasPrefix(tr.path, "/") {
		return fmt.Errorf("request line %q: want METHOD /path", line)
	}
	h, err := r.ReadMIMEHeader()
	if err != nil && err != io.EOF {
		return fmt.Errorf("request headers: %v", err)
	}
	tr.header = http.Header(h)
	tr.host = tr.header.Get("Host")
	tr.header.Del("Host")
	body, err := io.ReadAll(r.R)
	tr.body = bytes.TrimSuffix(body, []byte("\n"))
	return err
}

// parseResponse reads "STATUS Reason", the wanted headers, and the wanted
// messages.
func (tr *transcript) parseResponse(data []byte) error {
	r := textproto.NewReader(bufio.NewReader(bytes.NewReader(data)))
	line, err := r.ReadLine()
	if err != nil {
		return fmt.Errorf("status line: %v", err)
	}
	code, reason, _ := strings.Cut(line, " ")
	if tr.status, err = strconv.Atoi(code); err != nil || reason != http.StatusText(tr.status) {
		return fmt.Errorf("status line %q: want a status code and its reason phrase", line)
	}
	h, err := r.ReadMIMEHeader()
	if err != nil && err != io.EOF {
		return fmt.Errorf("response headers: %v", err)
	}
	tr.want = http.Header(h)
	d := json.NewDecoder(r.R)
	d.UseNumber()
	for d.More() {
		var m any
		if err := d.Decode(&m); err != nil {
			return fmt.Errorf("response messages: %v", err)
		}
		tr.msgs = append(tr.msgs, m)
	}
	return nil
}

// sessions lists the versions of the sessions the request names.
func (tr *transcript) sessions() []string {
	var vs []string
	for _, values := range tr.header {
		for _, v := range values {
			os.Expand(v, func(name string) string {
				if v, ok := strings.CutPrefix(name, "session "); ok {
					vs = append(vs, v)
				}
				return ""
			})
		}
	}
	return vs
}

func (tr *transcript) run(t *testing.T, e *env, sessions map[string]string) {
	hr, err := http.NewRequest(tr.method, e.srv.URL+tr.path, bytes.NewReader(tr.body))
	if err != nil {
		t.Fatal(err)
	}
	for k, values := range tr.header {
		for _, v := range values {
			hr.Header.Add(k, os.Expand(v, func(name string) string {
				v, ok := strings.CutPrefix(name, "session ")
				if !ok || sessions[v] == "" {
					t.Fatalf("header %s: unknown ${%s}", k, name)
				}
				return sessions[v]
			}))
		}
	}
	if tr.host != "" {
		hr.Host = tr.host
	}
	resp, err := e.client.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != tr.status {
		t.Fatalf("status %d, want %d; body %s", resp.StatusCode, tr.status, body)
	}
	for k := range tr.want {
		if got, want := resp.Header.Values(k), tr.want.Values(k); !slices.Equal(got, want) {
			t.Errorf("header %s: %q, want %q", k, got, want)
		}
	}
	// What every transcript must keep, whatever it says: a 405 names what
	// the path allows, a 202 has no body, and no error code is one that
	// 2026-07-28 reserves but in an answer to a 2026-07-28 request (the
	// transcripts named modern-*): a 2025 client must never read one.
	if tr.status == http.StatusMethodNotAllowed && resp.Header.Get("Allow") == "" {
		t.Error("405 without Allow")
	}
	if (tr.status == http.StatusAccepted || len(tr.msgs) == 0) && len(body) != 0 {
		t.Fatalf("a body, want none: %s", body)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	got := readMessages(t, resp)
	for _, m := range got {
		errObj, _ := m["error"].(map[string]any)
		code, _ := errObj["code"].(json.Number)
		if c, err := code.Int64(); err == nil && c <= -32020 && c >= -32099 && !strings.HasPrefix(tr.name, "modern-") {
			t.Errorf("code %d is one 2026-07-28 reserves", c)
		}
	}
	if len(got) != len(tr.msgs) {
		t.Fatalf("%d messages, want %d; body %s", len(got), len(tr.msgs), body)
	}
	used := make([]bool, len(got))
next:
	for _, want := range tr.msgs {
		for i, m := range got {
			if !used[i] && contains(want, any(m)) {
				used[i] = true
				continue next
			}
		}
		w, _ := json.Marshal(want)
		t.Fatalf("no message of the response is like %s; body %s", w, body)
	}
}

// contains reports whether got has everything want has: an object's
// members (recursively; got may have more), an array's elements in order,
// or the same value.
func contains(want, got any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok || !contains(wv, gv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !contains(w[i], g[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(want, got)
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
	if m.Error.Code <= -32020 && m.Error.Code >= -32099 {
		t.Errorf("code %d is one 2026-07-28 reserves", m.Error.Code)
	}
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
// from which dual-era clients fall back to initialize (docs/spec-rules.md,
// "MCP 2026-07-28: era detection by clients").
func TestModernOff(t *testing.T) {
	e := newEnv(t, envOpts{http: httpapi.Options{DisableModern: true}})
	resp := e.do(req{body: modern(1, "server/discover", ""), version: "2026-07-28", header: map[string]string{"Mcp-Method": "server/discover"}})
	checkStatus(t, resp, 400, bridge.CodeSessionRequired)
}
