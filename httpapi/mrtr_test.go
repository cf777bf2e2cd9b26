package httpapi_test

// The attacks on requestState, with raw HTTP against the bridge in front of
// a legacy child (the badchild, whose sample tool asks its client for
// sampling/createMessage): a retry whose requestState is forged, tampered
// with, another principal's, already used, expired, or bound to other
// arguments, another tool or another method gets HTTP 200 with JSON-RPC
// -32602, and the call it names stays parked: the genuine retry still
// completes it afterwards (but for expiry, which ends it).

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
)

// modernRequest is a 2026-07-28 request as raw HTTP: the body with its
// _meta envelope, and the headers that mirror it.
type modernRequest struct {
	id     int
	method string
	params map[string]any // without _meta
	caps   map[string]any // the client's capabilities; nil: none
	meta   map[string]any // _meta besides the envelope (a progressToken)
	token  string         // bearer token, if any
}

func (m modernRequest) req() req {
	meta := map[string]any{
		"io.modelcontextprotocol/protocolVersion":    bridge.ModernVersion,
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	}
	if m.caps != nil {
		meta["io.modelcontextprotocol/clientCapabilities"] = m.caps
	}
	for k, v := range m.meta {
		meta[k] = v
	}
	params := map[string]any{"_meta": meta}
	for k, v := range m.params {
		params[k] = v
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.id, "method": m.method, "params": params})
	h := map[string]string{"Mcp-Method": m.method}
	if name, ok := m.params["name"].(string); ok {
		h["Mcp-Name"] = name
	}
	if m.token != "" {
		h["Authorization"] = "Bearer " + m.token
	}
	return req{body: string(body), version: bridge.ModernVersion, header: h}
}

// sampleCall is a tools/call of the badchild's sample tool from a client
// that declares sampling; with a handle, the retry that answers its input
// request key with text.
func sampleCall(id int, token, prompt, handle, key, text string) modernRequest {
	p := map[string]any{"name": "sample", "arguments": map[string]any{"prompt": prompt}}
	if handle != "" {
		p["requestState"] = handle
		p["inputResponses"] = map[string]any{key: samplingAnswer(text)}
	}
	return modernRequest{id: id, method: "tools/call", params: p, caps: map[string]any{"sampling": map[string]any{}}, token: token}
}

func samplingAnswer(text string) map[string]any {
	return map[string]any{"role": "assistant", "model": "test", "content": map[string]any{"type": "text", "text": text}}
}

// parked is an input_required result: its handle and the key of its one
// input request.
type parked struct{ handle, key string }

// startSample calls sample and returns the input_required result it gets.
func (e *env) startSample(id int, token, prompt string) parked {
	e.t.Helper()
	msgs := readMessages(e.t, e.do(sampleCall(id, token, prompt, "", "", "").req()))
	if len(msgs) != 1 {
		e.t.Fatalf("sample: %d messages, want the input_required result alone", len(msgs))
	}
	res, _ := msgs[0]["result"].(map[string]any)
	handle, _ := res["requestState"].(string)
	asks, _ := res["inputRequests"].(map[string]any)
	if res["resultType"] != "input_required" || handle == "" || len(asks) != 1 {
		e.t.Fatalf("sample: %v, want an input_required result with one input request and a requestState", msgs[0])
	}
	var p parked
	p.handle = handle
	for k := range asks {
		p.key = k
	}
	return p
}

// refused checks that r got HTTP 200 and the JSON-RPC error -32602 for
// its id, with a message that contains want.
func (e *env) refused(r modernRequest, want string) {
	e.t.Helper()
	resp := e.do(r.req())
	msgs := readMessages(e.t, resp)
	if resp.StatusCode != http.StatusOK || len(msgs) != 1 {
		e.t.Fatalf("status %d, %d messages; want 200 and one error", resp.StatusCode, len(msgs))
	}
	errObj, _ := msgs[0]["error"].(map[string]any)
	code, _ := errObj["code"].(json.Number)
	msg, _ := errObj["message"].(string)
	if code.String() != "-32602" || !strings.Contains(msg, want) || msgs[0]["id"] != json.Number(fmt.Sprint(r.id)) {
		e.t.Errorf("got %v; want error -32602 for id %d whose message contains %q", msgs[0], r.id, want)
	}
}

// completes checks that the genuine retry r completes the call with text.
func (e *env) completes(r modernRequest, want string) {
	e.t.Helper()
	msgs := readMessages(e.t, e.do(r.req()))
	if len(msgs) != 1 || text(msgs[0]) != want {
		e.t.Fatalf("genuine retry: %v; want the call's answer %q", msgs, want)
	}
	if res, _ := msgs[0]["result"].(map[string]any); res["resultType"] != "complete" {
		e.t.Errorf("genuine retry: resultType %v, want complete", res["resultType"])
	}
}

// twoPrincipals is an env whose requests authenticate with aliceTokenen or
// bobTokenen (auth_test.go), in mode m.
func twoPrincipals(t *testing.T, m mode, cfg bridge.Config) *env {
	t.Helper()
	tokens := map[string]string{"ALICE_TOKEN": aliceToken, "BOB_TOKEN": bobToken}
	v, err := auth.TokensFromEnv([]string{"ALICE_TOKEN", "BOB_TOKEN"}, func(k string) (string, bool) { v, ok := tokens[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Mode = m.bridge.Mode
	return newEnv(t, envOpts{bridge: cfg, http: httpapi.Options{Auth: v}})
}

func TestRequestStateAttacks(t *testing.T) {
	for _, m := range []mode{perSession, shared, perIdentity} {
		t.Run(m.name, func(t *testing.T) {
			e := twoPrincipals(t, m, bridge.Config{ReplicaID: "replica-a"})
			p := e.startSample(1, aliceToken, "first")
			rest := strings.TrimPrefix(p.handle, "mb1.replica-a.")
			if rest == p.handle {
				t.Fatalf("handle %q does not name the replica", p.handle)
			}
			flipped := []byte(p.handle)
			flipped[len(flipped)-1] ^= 1 // stays a base64url character
			retry := func(id int, token, prompt, handle string) modernRequest {
				return sampleCall(id, token, prompt, handle, p.key, "sampled "+prompt)
			}
			const notFound = "requestState is invalid, expired or already used"
			const foreign = "requestState does not belong to this request"
			for _, tc := range []struct {
				name string
				r    modernRequest
				want string
			}{
				{"forged", retry(2, aliceToken, "first", "mb1.replica-a."+strings.Repeat("A", len(rest))), notFound},
				{"not a handle", retry(3, aliceToken, "first", "eyJzdGF0ZSI6MX0"), notFound},
				{"tampered", retry(4, aliceToken, "first", string(flipped)), notFound},
				{"another principal's", retry(5, bobToken, "first", p.handle), foreign},
				{"other arguments", retry(6, aliceToken, "second", p.handle), foreign},
				{"another tool", func() modernRequest {
					r := retry(7, aliceToken, "first", p.handle)
					r.params["name"] = "echo"
					return r
				}(), foreign},
				{"another method", modernRequest{id: 8, method: "tools/list", token: aliceToken,
					params: map[string]any{"requestState": p.handle, "inputResponses": map[string]any{p.key: samplingAnswer("x")}}}, foreign},
				{"another replica's", retry(9, aliceToken, "first", "mb1.replica-b."+rest), `issued by the bridge replica "replica-b" and this is "replica-a"`},
				{"an answer that is no sampling result", func() modernRequest {
					r := retry(10, aliceToken, "first", p.handle)
					r.params["inputResponses"] = map[string]any{p.key: map[string]any{"text": "no role, no content"}}
					return r
				}(), "inputResponses[" + fmt.Sprintf("%q", p.key) + "]"},
			} {
				t.Run(tc.name, func(t *testing.T) { e.refused(tc.r, tc.want) })
			}
			if n := e.b.Stats().InputRefused.Load(); n != 9 {
				t.Errorf("InputRefused = %d, want 9", n)
			}
			// (11: inputResponses without a requestState answer no question
			// the bridge asked: "servers SHOULD ignore any information
			// [they do] not recognize", so it is a new call, asked anew, and
			// the parked one is untouched.)
			t.Run("no requestState", func(t *testing.T) {
				r := retry(11, aliceToken, "first", p.handle)
				delete(r.params, "requestState")
				msgs := readMessages(t, e.do(r.req()))
				res, _ := msgs[0]["result"].(map[string]any)
				if len(msgs) != 1 || res["resultType"] != "input_required" || res["requestState"] == p.handle {
					t.Fatalf("got %v; want a new call's input_required", msgs)
				}
			})
			// (12: a retry of the first round that answers nothing.)
			// Nothing touched the parked call. A retry that answers none of
			// its questions is asked them again, under a new handle; the
			// old one is spent.
			msgs := readMessages(t, e.do(func() modernRequest {
				r := retry(12, aliceToken, "first", p.handle)
				r.params["inputResponses"] = map[string]any{}
				return r
			}().req()))
			res, _ := msgs[0]["result"].(map[string]any)
			again, _ := res["requestState"].(string)
			if asks, _ := res["inputRequests"].(map[string]any); len(msgs) != 1 || res["resultType"] != "input_required" || asks[p.key] == nil || again == "" || again == p.handle {
				t.Fatalf("a retry without answers: %v; want input_required asking %q again under a new requestState", msgs, p.key)
			}
			t.Run("replayed after a new round", func(t *testing.T) { e.refused(retry(13, aliceToken, "first", p.handle), notFound) })
			// The genuine retry completes the call, and then its handle is
			// spent too.
			e.completes(retry(14, aliceToken, "first", again), "sampled first")
			t.Run("replayed", func(t *testing.T) { e.refused(retry(15, aliceToken, "first", again), notFound) })
			if n := e.b.Stats().InputRequired.Load(); n != 3 {
				t.Errorf("InputRequired = %d, want 3 (the first, 11's new call, and 12's round)", n)
			}
		})
	}
}

// TestRequestStateExpired: a call parked past --input-ttl is ended: its
// handle then finds nothing, and it frees its place under --max-parked.
func TestRequestStateExpired(t *testing.T) {
	for _, m := range []mode{perSession, shared, perIdentity} {
		t.Run(m.name, func(t *testing.T) {
			e := twoPrincipals(t, m, bridge.Config{InputTTL: 50 * time.Millisecond, MaxParked: 1})
			p := e.startSample(1, aliceToken, "first")
			waitFor(t, func() bool { return e.b.Stats().InputExpired.Load() == 1 })
			e.refused(sampleCall(2, aliceToken, "first", p.handle, p.key, "late"), "requestState is invalid, expired or already used")
			// The expired call no longer holds alice's one place
			// (--max-parked 1): she can park another.
			e.startSample(3, aliceToken, "second")
		})
	}
}

// TestRequestStateRace: the same genuine retry sent twice at once (a
// client's own retry on a lost connection, or an attacker who copied it)
// completes the call exactly once; the other gets -32602.
func TestRequestStateRace(t *testing.T) {
	e := twoPrincipals(t, shared, bridge.Config{})
	const rounds = 10
	for i := range rounds {
		prompt := fmt.Sprintf("race %d", i)
		p := e.startSample(100*i, aliceToken, prompt)
		type outcome struct {
			resp *http.Response
			err  error
		}
		out := make(chan outcome, 2)
		for j := range 2 {
			go func() {
				resp, err := e.try(t.Context(), sampleCall(100*i+1+j, aliceToken, prompt, p.handle, p.key, "sampled "+prompt).req())
				out <- outcome{resp, err}
			}()
		}
		var answered, refused int
		for range 2 {
			o := <-out
			if o.err != nil {
				t.Fatal(o.err)
			}
			switch msgs := readMessages(t, o.resp); {
			case len(msgs) == 1 && text(msgs[0]) == "sampled "+prompt:
				answered++
			case len(msgs) == 1 && msgs[0]["error"] != nil:
				refused++
			default:
				t.Errorf("round %d: %v", i, msgs)
			}
		}
		if answered != 1 || refused != 1 {
			t.Fatalf("round %d: %d answered, %d refused; want one of each", i, answered, refused)
		}
	}
}

// TestLeaseAskedBetweenCalls: a leased child that asks its client
// something after its call was answered (server-everything's roots/list,
// 350 ms after initialized) is told at once that nobody can answer,
// rather than left waiting.
func TestLeaseAskedBetweenCalls(t *testing.T) {
	for _, m := range []mode{perSession, shared, perIdentity} {
		t.Run(m.name, func(t *testing.T) {
			logs := &syncBuffer{}
			e := modeEnv(t, m, bridge.Config{Logger: slog.New(slog.NewTextHandler(logs, nil))})
			r := modernRequest{id: 1, method: "tools/call", caps: map[string]any{"roots": map[string]any{}},
				params: map[string]any{"name": "ask_after", "arguments": map[string]any{"method": "roots/list"}}}
			if got := e.modernText(r); got != "ok" {
				t.Fatalf("ask_after = %q", got)
			}
			waitFor(t, func() bool {
				return strings.Contains(logs.String(), `badchild: roots/list after the answer got error`)
			})
		})
	}
}
