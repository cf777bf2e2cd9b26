package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// auditLine is what these tests read of an audit line.
type auditLine struct {
	Method, Tool, Outcome, Reason, Exchange, Principal string
	ErrorCode                                          int `json:"error_code"`
	HTTPStatus                                         int `json:"http_status"`
}

func auditLines(t *testing.T, b *syncBuffer) []auditLine {
	t.Helper()
	var out []auditLine
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if l == "" {
			continue
		}
		var a auditLine
		if err := json.Unmarshal([]byte(l), &a); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		out = append(out, a)
	}
	return out
}

// TestAuditRefusals: what the bridge refuses itself is audited as refused,
// with its JSON-RPC code, HTTP status and the reason its client was
// given: a header that differs from the body (400), a session that does
// not exist (404), a call over --max-parked (429), a body that is not
// JSON (400).
func TestAuditRefusals(t *testing.T) {
	audit := &syncBuffer{}
	tokens := map[string]string{"ALICE_TOKEN": aliceToken}
	v, err := auth.TokensFromEnv([]string{"ALICE_TOKEN"}, func(k string) (string, bool) { s, ok := tokens[k]; return s, ok })
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOpts{bridge: bridge.Config{MaxParked: 1}, http: httpapi.Options{Audit: audit, Auth: v}})
	bearer := map[string]string{"Authorization": "Bearer " + aliceToken}

	// 400: Mcp-Name differs from params.name.
	r := modernRequest{id: 1, method: "tools/call", params: map[string]any{"name": "echo", "arguments": map[string]any{"message": "x"}}, token: aliceToken}.req()
	r.header["Mcp-Name"] = "crash"
	if resp := e.do(r); resp.StatusCode != 400 {
		t.Fatalf("header mismatch: %d", resp.StatusCode)
	}
	// 404: no such session.
	if resp := e.do(req{sid: "no-such-session", header: bearer, body: `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`}); resp.StatusCode != 404 {
		t.Fatalf("unknown session: %d", resp.StatusCode)
	}
	// 429: the second parked call of alice, over --max-parked 1.
	e.startSample(3, aliceToken, "first")
	if resp := e.do(sampleCall(4, aliceToken, "second", "", "", "").req()); resp.StatusCode != 429 {
		t.Fatalf("over --max-parked: %d", resp.StatusCode)
	}
	// 400: not JSON.
	if resp := e.do(req{header: bearer, body: `{"jsonrpc":`}); resp.StatusCode != 400 {
		t.Fatalf("not JSON: %d", resp.StatusCode)
	}
	var got []string
	for _, a := range auditLines(t, audit) {
		if a.Principal == "" {
			t.Errorf("audit line without its principal: %+v", a)
		}
		got = append(got, fmt.Sprintf("%s %s %d %d", a.Method, a.Outcome, a.ErrorCode, a.HTTPStatus))
		if a.Outcome == "refused" && a.Reason == "" {
			t.Errorf("a refusal without its reason: %+v", a)
		}
	}
	want := []string{
		"tools/call refused -32020 400",
		"tools/list refused -32001 404",
		"tools/call input_required 0 0",
		"tools/call refused -32603 429",
		" refused -32700 400",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit:\n%s\nwant:\n%s\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), audit.String())
	}
}

// TestAuditExchanges: every round of one MRTR call is audited with the
// same exchange id, the rounds that ask as input_required and the last as
// ok; another call has another id. For a legacy child, whose questions
// the bridge holds, and for a 2026-07-28 child, whose state it relays.
func TestAuditExchanges(t *testing.T) {
	t.Run("legacy child", func(t *testing.T) {
		audit := &syncBuffer{}
		e := newEnv(t, envOpts{http: httpapi.Options{Audit: audit}})
		p := e.startSample(1, "", "first")
		// A retry that answers nothing is asked again: a second round.
		msgs := readMessages(t, e.do(func() modernRequest {
			r := sampleCall(2, "", "first", p.handle, p.key, "")
			r.params["inputResponses"] = map[string]any{}
			return r
		}().req()))
		res, _ := msgs[0]["result"].(map[string]any)
		again, _ := res["requestState"].(string)
		e.completes(sampleCall(3, "", "first", again, p.key, "sampled"), "sampled")
		e.startSample(4, "", "other")
		checkExchanges(t, auditLines(t, audit), []string{"input_required", "input_required", "ok", "input_required"})
	})
	t.Run("modern child", func(t *testing.T) {
		audit := &syncBuffer{}
		cfg := bridge.Config{ReplicaID: "replica-a", InputTTL: time.Minute}
		e := newEnv(t, envOpts{command: []string{testpeers.BuildGo(t, "./testdata/foldchild"), "-modern"}, bridge: cfg, http: httpapi.Options{Audit: audit}})
		w := &wrapEnv{env: e}
		st := w.start(1, "", map[string]any{"a": 1})
		if msgs := readMessages(t, e.do(confirmCall(2, "", map[string]any{"a": 1}, st).req())); len(msgs) != 1 || !strings.HasPrefix(text(msgs[0]), "confirmed") {
			t.Fatalf("retry: %v", msgs)
		}
		w.start(3, "", map[string]any{"a": 2})
		checkExchanges(t, auditLines(t, audit), []string{"input_required", "ok", "input_required"})
	})
}

// checkExchanges: lines are one exchange's rounds with outcomes want,
// except the last, which is another exchange's first.
func checkExchanges(t *testing.T, lines []auditLine, want []string) {
	t.Helper()
	if len(lines) != len(want) {
		t.Fatalf("%d audit lines, want %d: %+v", len(lines), len(want), lines)
	}
	first := lines[0].Exchange
	if first == "" {
		t.Fatalf("no exchange id: %+v", lines[0])
	}
	for i, l := range lines {
		if l.Outcome != want[i] {
			t.Errorf("line %d: outcome %q, want %q", i, l.Outcome, want[i])
		}
		last := i == len(lines)-1
		if same := l.Exchange == first; same == last {
			t.Errorf("line %d: exchange %q (first %q): want the same for one call's rounds, another for another call", i, l.Exchange, first)
		}
	}
}

// TestRepeatedModernHeaders: Mcp-Method, Mcp-Name or an Mcp-Param-{Name}
// sent twice (in any case) is refused with 400 and -32020: the bridge
// would check one value, and a gateway in front of it might read another.
func TestRepeatedModernHeaders(t *testing.T) {
	e := newEnv(t, envOpts{})
	for _, tc := range []struct {
		name   string
		header http.Header
	}{
		{"Mcp-Method", http.Header{"Mcp-Method": {"tools/call", "tools/list"}}},
		{"Mcp-Name", http.Header{"Mcp-Name": {"echo", "crash"}}},
		{"Mcp-Param", http.Header{"Mcp-Param-Region": {"eu", "us"}}},
		{"Mcp-Param in two cases", http.Header{"Mcp-Param-Region": {"eu"}, "mcp-param-REGION": {"us"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := modernRequest{id: 1, method: "tools/call", params: map[string]any{"name": "echo", "arguments": map[string]any{"message": "x"}}}.req()
			hr, err := http.NewRequest(http.MethodPost, e.url, strings.NewReader(r.body))
			if err != nil {
				t.Fatal(err)
			}
			hr.Header.Set("Content-Type", "application/json")
			hr.Header.Set("Accept", "application/json, text/event-stream")
			hr.Header.Set("MCP-Protocol-Version", r.version)
			for k, v := range r.header {
				hr.Header.Set(k, v)
			}
			for k := range tc.header {
				delete(hr.Header, http.CanonicalHeaderKey(k))
			}
			for k, v := range tc.header {
				hr.Header[k] = append(hr.Header[k], v...)
			}
			resp, err := e.client.Do(hr)
			if err != nil {
				t.Fatal(err)
			}
			msgs := readMessages(t, resp)
			errObj, _ := msgs[0]["error"].(map[string]any)
			if resp.StatusCode != http.StatusBadRequest || fmt.Sprint(errObj["code"]) != "-32020" || !strings.Contains(fmt.Sprint(errObj["message"]), "more than once") {
				t.Fatalf("%d %v; want 400 -32020", resp.StatusCode, msgs)
			}
		})
	}
}

// TestMetricsClosedWithAuthentication: when MCP clients must authenticate
// and the scraper has no token of its own, /metrics is closed (403, saying
// how to open it) unless the operator opened it with MetricsPublic; the
// MCP clients' own tokens do not open it either.
func TestMetricsClosedWithAuthentication(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   httpapi.Options
		status int
	}{
		{"tokens, no metrics token", httpapi.Options{}, http.StatusForbidden},
		{"tokens, --metrics-public", httpapi.Options{MetricsPublic: true}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newAuthFixture(t, tc.opts)
			for _, bearer := range []string{"", aliceToken} {
				r, _ := http.NewRequest(http.MethodGet, strings.TrimSuffix(f.url, "/mcp")+"/metrics", nil)
				if bearer != "" {
					r.Header.Set("Authorization", "Bearer "+bearer)
				}
				resp, err := http.DefaultClient.Do(r)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tc.status {
					t.Fatalf("GET /metrics (bearer %v): %d %s; want %d", bearer != "", resp.StatusCode, body, tc.status)
				}
				if tc.status == http.StatusForbidden && (!strings.Contains(string(body), "--metrics-public") || !strings.Contains(string(body), "--metrics-token-env")) {
					t.Errorf("403 body %q does not say how to open /metrics", body)
				}
			}
		})
	}
}
