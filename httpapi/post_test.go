package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/approval"
	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// TestReadLimited: a body with a Content-Length is read into one buffer
// of its size (io.ReadAll allocated some four times a body of MiBs); one
// without is read too; one over the limit is refused with a
// *http.MaxBytesError, and one shorter than its Content-Length fails.
func TestReadLimited(t *testing.T) {
	const limit = 4 << 20
	body := bytes.Repeat([]byte("x"), limit)
	t.Run("Content-Length", func(t *testing.T) {
		r := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got, err := readLimited(httptest.NewRecorder(), r, limit)
		runtime.ReadMemStats(&after)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("read %d bytes, %v; want the %d-byte body", len(got), err, len(body))
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > limit+16<<10 {
			t.Errorf("reading a %d-byte body allocated %d bytes, want at most its size and 16 KiB", len(body), alloc)
		}
	})
	t.Run("chunked", func(t *testing.T) {
		r := httptest.NewRequest(http.MethodPost, "/mcp", io.NopCloser(bytes.NewReader(body[:1000])))
		r.ContentLength = -1
		if got, err := readLimited(httptest.NewRecorder(), r, limit); err != nil || len(got) != 1000 {
			t.Errorf("read %d bytes, %v; want 1000", len(got), err)
		}
	})
	for _, cl := range []int64{limit + 1, -1} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", io.NopCloser(bytes.NewReader(append(body, 'x'))))
		r.ContentLength = cl
		var mbe *http.MaxBytesError
		if _, err := readLimited(httptest.NewRecorder(), r, limit); !errors.As(err, &mbe) {
			t.Errorf("a body over the limit (Content-Length %d): %v, want a *http.MaxBytesError", cl, err)
		}
	}
	r := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body[:100]))
	r.ContentLength = 200
	if got, err := readLimited(httptest.NewRecorder(), r, limit); err == nil {
		t.Errorf("a body shorter than its Content-Length: read %d bytes (padded?) and no error", len(got))
	}
}

// TestParse: one parse for every transport reads what a POST says about
// itself, its headers and its messages (compacted), once, into a post and
// its record; or refuses it with the status a client can act on.
func TestParse(t *testing.T) {
	const (
		both     = "application/json, text/event-stream"
		initBody = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
		call     = `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"ec\"ho","arguments":{"m":[1, 2]}}}`
	)
	type want struct {
		status  int // 0: parsed
		init    bool
		batch   bool
		probe   bool
		session string
		version string
		takes   accept
		json    bool     // jsonOnly
		calls   []string // "kind method id tool args"
	}
	tests := []struct {
		name   string
		header map[string]string
		body   string
		mode   string
		want   want
	}{
		{"initialize", map[string]string{"Accept": both}, initBody, ModeAuto,
			want{init: true, takes: accept{true, true}, calls: []string{"1 initialize 0  "}}},
		{"a call in a session, pretty-printed", map[string]string{"Accept": both, "Mcp-Session-Id": "s1", "MCP-Protocol-Version": "2025-06-18"},
			"{\n  \"jsonrpc\": \"2.0\", \"id\": 7,\n  \"method\": \"tools/call\", \"params\": {\"name\": \"echo\", \"arguments\": {\"m\": 1}}\n}", ModeAuto,
			want{session: "s1", version: "2025-06-18", takes: accept{true, true}, calls: []string{`1 tools/call 7 echo {"m":1}`}}},
		{"a tool name with an escape", map[string]string{"Accept": both}, call, ModeAuto,
			want{takes: accept{true, true}, calls: []string{`1 tools/call "c" ec"ho {"m":[1,2]}`}}},
		{"JSON only", map[string]string{"Accept": "application/json"}, call, ModeAuto,
			want{takes: accept{json: true}, json: true, calls: []string{`1 tools/call "c" ec"ho {"m":[1,2]}`}}},
		{"SSE only on a JSON bridge", map[string]string{"Accept": "text/event-stream"}, call, ModeJSON,
			want{takes: accept{sse: true}, json: true, calls: []string{`1 tools/call "c" ec"ho {"m":[1,2]}`}}},
		{"a batch", map[string]string{"Accept": "*/*"},
			`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}},{"jsonrpc":"2.0","id":5,"result":{}}]`, ModeAuto,
			want{batch: true, takes: accept{true, true}, calls: []string{"1 ping 1  ", "2 notifications/cancelled   ", "3    "}}},
		{"a 2026-07-28 probe", map[string]string{"Accept": both}, `{"jsonrpc":"2.0","id":1,"method":"server/discover"}`, ModeAuto,
			want{probe: true, takes: accept{true, true}, calls: []string{"1 server/discover 1  "}}},
		{"a version in _meta", map[string]string{"Accept": both},
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, ModeAuto,
			want{probe: true, takes: accept{true, true}, calls: []string{"1 tools/list 1  "}}},
		{"initialize in a batch", map[string]string{"Accept": both}, "[" + initBody + "]", ModeAuto, want{status: 400}},
		{"no usable Accept", map[string]string{"Accept": "text/html"}, call, ModeAuto, want{status: 406}},
		{"not JSON", map[string]string{"Accept": both, "Content-Type": "text/plain"}, call, ModeAuto, want{status: 415}},
		{"too big", map[string]string{"Accept": both}, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"p":"` + strings.Repeat("x", 2<<10) + `"}}`, ModeAuto, want{status: 413}},
		{"not JSON-RPC", map[string]string{"Accept": both}, `{"jsonrpc":"2.0"`, ModeAuto, want{status: 400}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &mcpHandler{opts: Options{MaxBodyBytes: 1 << 10, ResponseMode: tt.mode, Now: time.Now}}
			r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(tt.body))
			r.Header.Set("Content-Type", "application/json")
			for k, v := range tt.header {
				r.Header.Set(k, v)
			}
			p, err := h.parseStreamable(httptest.NewRecorder(), r)
			if tt.want.status != 0 {
				if he := toHTTPError(err); err == nil || he.status != tt.want.status {
					t.Fatalf("got %v, want status %d", err, tt.want.status)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var calls []string
			for i := range p.rec.calls {
				c := &p.rec.calls[i]
				tool, args := c.toolCall()
				calls = append(calls, fmt.Sprintf("%d %s %s %s %s", c.kind, c.method, c.id, tool, args))
			}
			got := want{init: p.init, batch: p.batch, probe: p.probe, session: p.session, version: p.version,
				takes: p.takes, json: p.jsonOnly, calls: calls}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			requests := 0
			for _, c := range p.rec.calls {
				if c.kind == bridge.Request {
					requests++
				}
			}
			if p.rec.left != requests {
				t.Errorf("record: %d requests waiting, want %d", p.rec.left, requests)
			}
		})
	}
}

// TestAdmitHeld: admission sets aside a call the approval rules hold for
// a transport that holds it (admitHolding); a way in that does not hold
// calls (admit) refuses it, so one that knows nothing of approvals never
// lets such a call through unasked; a batch that holds one is refused
// whole. Answers to the bridge's own questions are taken out of the POST,
// whether or not a question is still open.
func TestAdmitHeld(t *testing.T) {
	rule, err := approval.ParseRule("*=echo")
	if err != nil {
		t.Fatal(err)
	}
	h := &mcpHandler{opts: Options{MaxBodyBytes: 1 << 20, ResponseMode: ModeAuto, Now: time.Now,
		Approval: approval.NewPolicy("s", []approval.Rule{rule}, false)}, log: slog.New(slog.DiscardHandler)}
	post := func(body string) *post {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		p, err := h.parseStreamable(httptest.NewRecorder(), r)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	const echo = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"m":1}}}`

	p := post(echo)
	if refusal, err := h.admitHolding(r, p, nil); err != nil || refusal != nil || p.held == nil || p.held.tool != "echo" || string(p.held.args) != `{"m":1}` {
		t.Errorf("admitHolding: %s, %v, %+v", refusal, err, p.held)
	}
	p = post(echo)
	if refusal, err := h.admit(r, p, nil); err != nil || p.held != nil || !strings.Contains(string(refusal), `cannot hold a call for approval: it was not run`) || !strings.Contains(string(refusal), `"id":3`) {
		t.Errorf("admit: %s, %v, %+v", refusal, err, p.held)
	}
	p = post(`[` + echo + `,{"jsonrpc":"2.0","id":4,"method":"ping"}]`)
	if _, err := h.admitHolding(r, p, nil); toHTTPError(err).status != http.StatusForbidden || !strings.Contains(err.Error(), "send it alone") {
		t.Errorf("a batch: %v", err)
	}
	p = post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"other"}}`)
	if refusal, err := h.admit(r, p, nil); err != nil || refusal != nil || p.held != nil {
		t.Errorf("a call no rule holds: %s, %v", refusal, err)
	}

	// The bridge's answers, on a session.
	answers, forget := h.questions.ask("s1", `"mcp-bridge-approval-x"`)
	defer forget()
	p = post(`[{"jsonrpc":"2.0","id":"mcp-bridge-approval-x","result":{"action":"decline"}},{"jsonrpc":"2.0","id":"mcp-bridge-approval-late","result":{}},{"jsonrpc":"2.0","id":"child-1","result":{}}]`)
	h.questions.take(p, "s1")
	if len(p.msgs) != 1 || string(p.msgs[0].ID()) != `"child-1"` {
		t.Errorf("left for the child: %d messages", len(p.msgs))
	}
	select {
	case got := <-answers:
		if !strings.Contains(string(got), "decline") {
			t.Errorf("the answer %s", got)
		}
	default:
		t.Error("the open question got no answer")
	}
	p = post(`{"jsonrpc":"2.0","id":"mcp-bridge-approval-x","result":{}}`)
	h.questions.take(p, "s2") // another session's: not its question, and the bridge's all the same
	if len(p.msgs) != 0 || len(answers) != 0 {
		t.Errorf("another session's answer: %d left, %d delivered", len(p.msgs), len(answers))
	}
}
