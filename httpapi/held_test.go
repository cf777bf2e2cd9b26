package httpapi_test

// Calls held for a human's approval, through the transports, with a real
// child (the badchild, whose echo_count says how many echo calls it ran:
// "exactly once" and "never ran" are checked on the server's side).

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/approval"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
)

// heldEnv is an approvalEnv whose server holds every echo call.
func heldEnv(t *testing.T, opts approval.Options, ho httpapi.Options) *approvalEnv {
	t.Helper()
	ho.Approval = approval.NewPolicy("files", []approval.Rule{mustApprovalRule("*=echo")}, false)
	return newApprovalEnv(t, opts, ho)
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
	a := heldEnv(t, approval.Options{ProgressInterval: 20 * time.Millisecond}, httpapi.Options{})
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
		})
	}
}
