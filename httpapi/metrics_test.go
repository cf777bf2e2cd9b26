package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// opsServer is a bridge serving the badchild behind Handler, on a real
// HTTP server: the metrics and readiness tests' own small harness.
type opsServer struct {
	t   *testing.T
	b   *bridge.Bridge
	srv *httptest.Server
}

func newOpsServer(t *testing.T, cfg bridge.Config) *opsServer {
	t.Helper()
	if cfg.Command == nil {
		cfg.Command = []string{testpeers.BuildGo(t, "./testdata/badchild")}
	}
	cfg.Env = os.Environ()
	cfg.StopGrace = 500 * time.Millisecond
	cfg.Logger = slog.New(slog.DiscardHandler)
	b, err := bridge.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h, err := Handler(Options{Bridge: b, Logger: cfg.Logger, LoopbackOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			t.Errorf("bridge close: %v", err)
		}
	})
	return &opsServer{t: t, b: b, srv: srv}
}

// post sends body to the MCP endpoint and reads the whole response.
func (o *opsServer) post(ctx context.Context, sid, accept, body string) (*http.Response, string) {
	o.t.Helper()
	r, _ := http.NewRequestWithContext(ctx, http.MethodPost, o.srv.URL+DefaultPath, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", accept)
	if sid != "" {
		r.Header.Set("Mcp-Session-Id", sid)
	}
	return o.send(r)
}

func (o *opsServer) send(r *http.Request) (*http.Response, string) {
	o.t.Helper()
	resp, err := o.srv.Client().Do(r)
	if err != nil {
		o.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil && r.Context().Err() == nil {
		o.t.Fatal(err)
	}
	return resp, string(b)
}

const bothTypes = "application/json, text/event-stream"

// session starts a session at version and sends notifications/initialized.
func (o *opsServer) session(version string) string {
	o.t.Helper()
	resp, body := o.post(context.Background(), "", bothTypes, fmt.Sprintf(
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, version))
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		o.t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	if resp, _ := o.post(context.Background(), sid, bothTypes, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != 202 {
		o.t.Fatalf("initialized: %d", resp.StatusCode)
	}
	return sid
}

func toolCall(id any, tool string, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"method":"tools/call","params":{"name":%q,"arguments":%s,"_meta":{"progressToken":"p%v"}}}`, id, tool, args, id)
}

// scrape reads /metrics into series (`name{label="v",...}`, labels in
// the order the exposition prints them: sorted) and values.
func (o *opsServer) scrape() map[string]float64 {
	o.t.Helper()
	r, _ := http.NewRequest(http.MethodGet, o.srv.URL+"/metrics", nil)
	resp, body := o.send(r)
	if resp.StatusCode != 200 {
		o.t.Fatalf("/metrics: %d %s", resp.StatusCode, body)
	}
	return parseExposition(o.t, body)
}

// scrapeUntil scrapes until cond holds: for counters the bridge bumps
// after the HTTP response that caused them has gone out.
func (o *opsServer) scrapeUntil(what string, cond func(map[string]float64) bool) map[string]float64 {
	o.t.Helper()
	deadline := time.Now().Add(30 * time.Second) // a safety net, not a timing assertion
	for {
		m := o.scrape()
		if cond(m) {
			return m
		}
		if time.Now().After(deadline) {
			o.t.Fatalf("metrics never showed %s", what)
		}
	}
}

func parseExposition(t *testing.T, text string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if i < 0 || err != nil {
			t.Fatalf("bad exposition line %q", line)
		}
		out[line[:i]] = v
	}
	return out
}

func reqs(method, outcome string) string {
	return fmt.Sprintf(`mcp_bridge_requests_total{era="2025",method=%q,outcome=%q}`, method, outcome)
}

func exited(reason string) string {
	return fmt.Sprintf(`mcp_bridge_children_exited_total{reason=%q}`, reason)
}

// TestMetrics drives real sessions through every outcome and checks each
// series that should have moved, and that nothing else did.
func TestMetrics(t *testing.T) {
	o := newOpsServer(t, bridge.Config{})
	bg := context.Background()

	a := o.session("2025-11-25")
	for _, step := range []struct {
		name, body, accept string
		status             int
	}{
		{"echo", toolCall(1, "echo", `{"message":"hi"}`), bothTypes, 200},
		{"progress first makes it SSE", toolCall(2, "slow", `{"ms":20,"steps":2}`), bothTypes, 200},
		{"unknown tool", toolCall(3, "nope", `{}`), bothTypes, 200},
		{"unknown method", `{"jsonrpc":"2.0","id":4,"method":"foo/bar"}`, bothTypes, 200},
		{"SSE only", `{"jsonrpc":"2.0","id":5,"method":"ping"}`, "text/event-stream", 200},
		{"no usable Accept", `{"jsonrpc":"2.0","id":6,"method":"ping"}`, "text/plain", 406},
	} {
		if resp, body := o.post(bg, a, step.accept, step.body); resp.StatusCode != step.status {
			t.Fatalf("%s: %d %s", step.name, resp.StatusCode, body)
		}
	}
	if resp, _ := o.post(bg, "no-such-session", bothTypes, toolCall(7, "echo", `{"message":"x"}`)); resp.StatusCode != 404 {
		t.Fatalf("unknown session: %d", resp.StatusCode)
	}

	// A 2025-03-26 session may batch: two pings and a notification.
	b := o.session("2025-03-26")
	if resp, body := o.post(bg, b, bothTypes, `[{"jsonrpc":"2.0","id":"x","method":"ping"},{"jsonrpc":"2.0","method":"notifications/roots/list_changed"},{"jsonrpc":"2.0","id":"y","method":"ping"}]`); resp.StatusCode != 200 || strings.Count(body, `"result"`) != 2 {
		t.Fatalf("batch: %d %s", resp.StatusCode, body)
	}

	// A client that leaves before its answer.
	ctx, cancel := context.WithCancel(bg)
	r, _ := http.NewRequestWithContext(ctx, http.MethodPost, o.srv.URL+DefaultPath, strings.NewReader(toolCall(8, "slow", `{"ms":600000,"steps":6000}`)))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", bothTypes)
	r.Header.Set("Mcp-Session-Id", b)
	resp, err := o.srv.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil { // the stream has begun
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	o.scrapeUntil("the abandoned call", func(m map[string]float64) bool { return m[reqs("tools/call", "unanswered")] == 1 })

	// The child of b crashes; a is deleted.
	if resp, body := o.post(bg, b, bothTypes, toolCall(9, "crash", `{"code":3}`)); resp.StatusCode != 200 || !strings.Contains(body, "exit status 3") {
		t.Fatalf("crash: %d %s", resp.StatusCode, body)
	}
	del, _ := http.NewRequest(http.MethodDelete, o.srv.URL+DefaultPath, nil)
	del.Header.Set("Mcp-Session-Id", a)
	if resp, _ := o.send(del); resp.StatusCode != 200 {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	got := o.scrapeUntil("the crash", func(m map[string]float64) bool { return m[exited("crashed")] == 1 && m["mcp_bridge_sessions"] == 0 })

	want := map[string]float64{
		reqs("initialize", "ok"):                       2,
		reqs("notifications/initialized", "ok"):        2,
		reqs("tools/call", "ok"):                       2, // echo, slow
		reqs("tools/call", "error"):                    2, // unknown tool, crash
		reqs("tools/call", "refused"):                  1, // unknown session
		reqs("tools/call", "unanswered"):               1,
		reqs("other", "error"):                         1, // foo/bar
		reqs("other", "refused"):                       1, // 406: the body was never read
		reqs("ping", "ok"):                             3,
		reqs("notifications/roots/list_changed", "ok"): 1,
		reqs("initialize", "error"):                    0,
		`mcp_bridge_request_duration_seconds_count{era="2025",method="tools/call"}`: 4,
		`mcp_bridge_request_duration_seconds_count{era="2025",method="ping"}`:       3,
		`mcp_bridge_http_requests_total{code="200",method="POST"}`:                  10,
		`mcp_bridge_http_requests_total{code="202",method="POST"}`:                  2,
		`mcp_bridge_http_requests_total{code="404",method="POST"}`:                  1,
		`mcp_bridge_http_requests_total{code="406",method="POST"}`:                  1,
		`mcp_bridge_http_requests_total{code="200",method="DELETE"}`:                1,
		"mcp_bridge_sessions":                      0,
		"mcp_bridge_sessions_created_total":        2,
		"mcp_bridge_sessions_ended_total":          2,
		"mcp_bridge_children_spawned_total":        2,
		"mcp_bridge_children_start_failures_total": 0,
		exited("deleted"):                          1,
		exited("crashed"):                          1,
		exited("idle"):                             0,
		exited("shutdown"):                         0,
		exited("unresponsive"):                     0,
		"mcp_bridge_requests_timed_out_total":      0,
		"mcp_bridge_late_progress_total":           0,
		"mcp_bridge_requests_cancelled_total":      0,
		"mcp_bridge_queue_drops_total":             0,
		"mcp_bridge_oversize_lines_total":          0,
		"mcp_bridge_unroutable_responses_total":    0,
	}
	for series, v := range want {
		if got[series] != v {
			t.Errorf("%s = %v, want %v", series, got[series], v)
		}
	}
	for _, series := range []string{"mcp_bridge_http_received_bytes_total", "mcp_bridge_http_sent_bytes_total", "go_goroutines", "process_resident_memory_bytes"} {
		if got[series] <= 0 {
			t.Errorf("%s = %v, want > 0", series, got[series])
		}
	}
	for series := range got {
		if strings.HasPrefix(series, "mcp_bridge_requests_total{") && !strings.Contains(series, `method="`) {
			t.Errorf("unbounded or missing method label: %s", series)
		}
	}
}

// TestMetricsExitReasons: a child stopped because its session expired
// counts as idle, one stopped by Close as shutdown.
func TestMetricsExitReasons(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		o := newOpsServer(t, bridge.Config{IdleTimeout: 50 * time.Millisecond})
		o.session("2025-11-25")
		got := o.scrapeUntil("the idle exit", func(m map[string]float64) bool { return m[exited("idle")] == 1 })
		if got["mcp_bridge_sessions"] != 0 || got[exited("shutdown")] != 0 {
			t.Errorf("after expiry: %v sessions, %v shutdown exits", got["mcp_bridge_sessions"], got[exited("shutdown")])
		}
	})
	t.Run("shutdown", func(t *testing.T) {
		o := newOpsServer(t, bridge.Config{})
		o.session("2025-11-25")
		o.session("2025-11-25")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := o.b.Close(ctx); err != nil {
			t.Fatal(err)
		}
		got := o.scrape()
		if got[exited("shutdown")] != 2 || got[exited("deleted")] != 0 || got["mcp_bridge_sessions"] != 0 {
			t.Errorf("after Close: shutdown %v, deleted %v, sessions %v", got[exited("shutdown")], got[exited("deleted")], got["mcp_bridge_sessions"])
		}
	})
}

// TestMetricsTimeoutsAndLateProgress: a call the server never answers
// counts as timed out, a server that closes its stdout as an unresponsive
// exit, and progress after its answer as late progress.
func TestMetricsTimeoutsAndLateProgress(t *testing.T) {
	// Longer than the stop grace (500 ms), which a child whose stdout
	// closed has to show it is not simply exiting.
	o := newOpsServer(t, bridge.Config{RequestTimeout: time.Second})
	bg := context.Background()
	a := o.session("2025-11-25")
	for i, step := range []struct{ tool, want string }{
		{"progress_after", `"ok"`},
		{"echo", `"after"`}, // the child writes the late progress with its answer: it is in before this
		{"hang", "--request-timeout"},
		{"close_stdout", "closed its stdout"},
	} {
		if resp, body := o.post(bg, a, "application/json", toolCall(i+1, step.tool, `{"message":"after"}`)); resp.StatusCode != 200 || !strings.Contains(body, step.want) {
			t.Fatalf("%s: %d %s", step.tool, resp.StatusCode, body)
		}
	}
	got := o.scrapeUntil("the unresponsive exit", func(m map[string]float64) bool { return m[exited("unresponsive")] == 1 })
	for series, v := range map[string]float64{
		"mcp_bridge_late_progress_total":      1,
		"mcp_bridge_requests_timed_out_total": 1,
		exited("crashed"):                     0,
		"mcp_bridge_sessions":                 0,
	} {
		if got[series] != v {
			t.Errorf("%s = %v, want %v", series, got[series], v)
		}
	}
}

// TestObserver: one record per POST, filled from the messages the
// pipeline parsed and told each message written back, gives the metrics
// every outcome and latency and the audit log its lines, whether the
// answers went as JSON or as SSE events, and whatever the POST's end.
func TestObserver(t *testing.T) {
	const (
		req1   = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"m":1}}}`
		ok1    = `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`
		err1   = `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"no"}}`
		prog   = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`
		batch  = `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}]`
		pong2  = `{"jsonrpc":"2.0","id":2,"result":{}}`
		pong1e = `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}`
	)
	big := `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + strings.Repeat("x", 2*bigEvent) + `"}}`
	tests := []struct {
		name   string
		body   string
		deny   int // index of a call the policy denies; -1: none
		status int // 0: the handler writes nothing
		sse    bool
		sent   []string // messages written back
		want   map[string]float64
		audit  []string // "method tool outcome code"
	}{
		{"JSON result", req1, -1, 200, false, []string{ok1},
			map[string]float64{reqs("tools/call", "ok"): 1}, []string{"tools/call echo ok 0"}},
		{"JSON error", req1, -1, 200, false, []string{err1},
			map[string]float64{reqs("tools/call", "error"): 1}, []string{"tools/call echo error -32602"}},
		{"SSE, progress then result", req1, -1, 200, true, []string{prog, ok1},
			map[string]float64{reqs("tools/call", "ok"): 1}, []string{"tools/call echo ok 0"}},
		{"SSE, a big message then the error", req1, -1, 200, true, []string{big, err1},
			map[string]float64{reqs("tools/call", "error"): 1}, []string{"tools/call echo error -32602"}},
		{"SSE, client gone before the result", req1, -1, 200, true, []string{prog},
			map[string]float64{reqs("tools/call", "unanswered"): 1}, []string{"tools/call echo no_response 0"}},
		{"nothing written", req1, -1, 0, false, nil,
			map[string]float64{reqs("tools/call", "unanswered"): 1}, []string{"tools/call echo no_response 0"}},
		{"a batch answered out of order", batch, -1, 200, false, []string{pong2, pong1e},
			map[string]float64{reqs("ping", "ok"): 1, reqs("ping", "error"): 1, reqs("notifications/cancelled", "ok"): 1},
			[]string{"ping  error 1", "ping  ok 0"}},
		{"refused batch", batch, -1, 400, false, nil,
			map[string]float64{reqs("ping", "refused"): 2, reqs("notifications/cancelled", "refused"): 1},
			[]string{"ping  no_response 0", "ping  no_response 0"}},
		{"refused, not JSON", `{"jsonrpc":`, -1, 400, false, nil,
			map[string]float64{reqs("other", "refused"): 1}, nil},
		{"an unknown method is other", `{"jsonrpc":"2.0","id":"q","method":"vendor/thing"}`, -1, 200, false,
			[]string{`{"jsonrpc":"2.0","id":"q","result":{}}`},
			map[string]float64{reqs("other", "ok"): 1}, []string{"vendor/thing  ok 0"}},
		{"a client's response", `{"jsonrpc":"2.0","id":5,"result":{}}`, -1, 202, false, nil,
			map[string]float64{reqs("response", "ok"): 1}, nil},
		{"a denied call, answered by the bridge", req1, 0, 200, false, nil,
			map[string]float64{reqs("tools/call", "error"): 1}, []string{"tools/call echo denied -32602"}},
		{"a batch with a denied call, refused whole", `[` + req1 + `,{"jsonrpc":"2.0","id":2,"method":"ping"}]`, 0, 403, false, nil,
			map[string]float64{reqs("tools/call", "refused"): 1, reqs("ping", "refused"): 1},
			[]string{"tools/call echo denied -32602", "ping  no_response 0"}},
	}
	b, err := bridge.New(bridge.Config{Command: []string{"true"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMetrics(Options{Bridge: b, Path: DefaultPath})
			var lines bytes.Buffer
			audit := &auditLog{w: &lines, now: time.Now}
			h := m.middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, err := io.ReadAll(r.Body)
				if err != nil {
					t.Error(err)
				}
				rec := recordOf(r)
				if msgs, batch, err := bridge.ParseBody(body); err == nil {
					rec.parsed(msgs, batch) // as parse does
					rec.audit = audit       // as admit does
				}
				if tt.deny >= 0 {
					rec.deny(tt.deny)
				}
				out := outbound{rec: rec}
				switch {
				case tt.status == 0:
				case tt.sse:
					sw, err := startSSE(r.Context(), w, time.Minute)
					if err != nil {
						t.Fatal(err)
					}
					for i, m := range tt.sent {
						if err := sw.events([]bridge.Event{{ID: fmt.Sprintf("1_%d", i+1), Data: []byte(m)}}, out); err != nil {
							t.Fatal(err)
						}
					}
				default:
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(tt.status)
					for _, m := range tt.sent {
						_, _ = w.Write(out.message(bridge.Event{Data: []byte(m)}))
					}
				}
			}))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, DefaultPath, strings.NewReader(tt.body)))
			sent := rec.Body.Len()
			rec = httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			got := parseExposition(t, rec.Body.String())
			for series, v := range got {
				if strings.HasPrefix(series, "mcp_bridge_requests_total{") && v != tt.want[series] {
					t.Errorf("%s = %v, want %v", series, v, tt.want[series])
				}
			}
			if got["mcp_bridge_http_received_bytes_total"] != float64(len(tt.body)) {
				t.Errorf("received %v bytes, want %d", got["mcp_bridge_http_received_bytes_total"], len(tt.body))
			}
			if got["mcp_bridge_http_sent_bytes_total"] != float64(sent) {
				t.Errorf("sent %v bytes, want %d", got["mcp_bridge_http_sent_bytes_total"], sent)
			}
			var auditGot []string
			for _, l := range strings.Split(strings.TrimSpace(lines.String()), "\n") {
				if l == "" {
					continue
				}
				var e auditEntry
				if err := json.Unmarshal([]byte(l), &e); err != nil {
					t.Fatalf("audit line %q: %v", l, err)
				}
				auditGot = append(auditGot, fmt.Sprintf("%s %s %s %d", e.Method, e.Tool, e.Outcome, e.ErrorCode))
			}
			if strings.Join(auditGot, "\n") != strings.Join(tt.audit, "\n") {
				t.Errorf("audit:\n%s\nwant:\n%s", strings.Join(auditGot, "\n"), strings.Join(tt.audit, "\n"))
			}
		})
	}
}

// TestRecordCompleteBeforeWrite: the record is complete, and read, when
// its last response is told, before that response is written, so a
// client that has read its answer finds the audit line written and the
// metrics counted; and once only, however often it is finished.
func TestRecordCompleteBeforeWrite(t *testing.T) {
	var lines bytes.Buffer
	rec := &record{now: time.Now, start: time.Now(), audit: &auditLog{w: &lines, now: time.Now}}
	msgs, batch, err := bridge.ParseBody([]byte(`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`))
	if err != nil {
		t.Fatal(err)
	}
	rec.parsed(msgs, batch)
	out := outbound{rec: rec}
	out.message(bridge.Event{Data: []byte(`{"jsonrpc":"2.0","id":2,"result":{}}`)})
	if lines.Len() != 0 {
		t.Fatalf("audited with a request still waiting: %s", lines.String())
	}
	out.message(bridge.Event{Data: []byte(`{"jsonrpc":"2.0","id":2,"result":{}}`)}) // a second answer to 2 is no answer to 1
	if lines.Len() != 0 {
		t.Fatalf("a repeated response completed the record: %s", lines.String())
	}
	out.message(bridge.Event{Data: []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)})
	if n := strings.Count(lines.String(), "\n"); n != 2 {
		t.Fatalf("%d audit lines once both were answered, want 2: %s", n, lines.String())
	}
	rec.finish()
	if n := strings.Count(lines.String(), "\n"); n != 2 {
		t.Fatalf("%d audit lines after finish, want still 2", n)
	}
}

// BenchmarkMetricsMiddleware is what observing costs one JSON call, next to
// the same call unobserved (go test -bench Metrics ./httpapi).
func BenchmarkMetricsMiddleware(b *testing.B) {
	const body = `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"}}}`
	const answer = `{"jsonrpc":"2.0","id":12,"result":{"content":[{"type":"text","text":"hello"}]}}`
	br, err := bridge.New(bridge.Config{Command: []string{"true"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = br.Close(context.Background()) })
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
		w.WriteHeader(200)
		_, _ = w.Write([]byte(answer))
	})
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{
		{"bare", inner},
		{"observed", newMetrics(Options{Bridge: br, Path: DefaultPath}).middleware(inner)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest(http.MethodPost, DefaultPath, strings.NewReader(body))
				bc.h.ServeHTTP(httptest.NewRecorder(), r)
			}
		})
	}
}
