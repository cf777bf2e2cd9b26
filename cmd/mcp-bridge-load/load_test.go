package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// TestMain lets the test binary stand in for mcp-bridge-load: run as
// "<test binary> echo-child" or "... http-floor" it is that subcommand, so
// the tests spawn real children without building anything.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && (os.Args[1] == "echo-child" || os.Args[1] == "http-floor") {
		os.Exit(realMain(context.Background(), os.Args, os.Stdin, os.Stdout, os.Stderr))
	}
	// Under -race every child would sleep a second at exit waiting for
	// race reports; children inherit this and exit at once.
	if err := os.Setenv("GORACE", "atexit_sleep_ms=0"); err != nil {
		fmt.Fprintln(os.Stderr, "set GORACE:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// self is how tests run this binary's subcommands.
func self(t *testing.T) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{exe}
}

const (
	testDuration = 200 * time.Millisecond
	testTimeout  = 5 * time.Second
)

// runLoad opens sessions on ep, drives them for testDuration and closes
// them, failing the test on any error.
func runLoad(t *testing.T, ep endpoint, sessions, conc int) phaseResult {
	t.Helper()
	set, err := ep.open(t.Context(), sessions, conc)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	res := runPhase(t.Context(), set.callers, testDuration, testTimeout, set.abort)
	if err := set.close(); err != nil {
		t.Errorf("close: %v", err)
	}
	checkPhase(t, res)
	return res
}

// runChurn runs n churners for testDuration.
func runChurn(t *testing.T, ep churnEndpoint, n int) {
	t.Helper()
	callers := make([]caller, n)
	for i := range callers {
		callers[i] = ep.churner()
	}
	checkPhase(t, runPhase(t.Context(), callers, testDuration, testTimeout, nil))
}

func checkPhase(t *testing.T, res phaseResult) {
	t.Helper()
	if res.errors != 0 {
		t.Errorf("%d errors, first: %v", res.errors, res.firstErr)
	}
	if res.calls == 0 {
		t.Error("no calls completed")
	}
	if res.hist.n != res.calls {
		t.Errorf("histogram holds %d calls, want %d", res.hist.n, res.calls)
	}
}

func TestHTTPFloor(t *testing.T) {
	srv := httptest.NewServer(newFloorHandler())
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		era, accept    string
		sessions, conc int
	}{
		{era2025, "both", 2, 1},
		{era2025, "json", 2, 3},
		{era2025, "sse", 2, 2},
		{eraModern, "both", 2, 1},
		{eraModern, "json", 2, 3},
		{eraModern, "sse", 2, 2},
	} {
		t.Run(tc.era+"/"+tc.accept, func(t *testing.T) {
			tgt, err := newHTTPTarget(srv.URL+"/mcp", tc.accept, tc.sessions*tc.conc)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(tgt.close)
			ep := httpEndpointFor(tgt, tc.era)
			runLoad(t, ep, tc.sessions, tc.conc)
			if ce, ok := ep.(churnEndpoint); ok {
				runChurn(t, ce, tc.sessions)
			} else if tc.era == era2025 {
				t.Error("a 2025 endpoint cannot churn sessions")
			}
		})
	}
}

// TestModernFloor is the HTTP floor's answer to single 2026-07-28
// requests: the load tool's own, and each way one can break the spec's
// validation rules. A floor that took anything would be cheaper than a
// server can honestly be.
func TestModernFloor(t *testing.T) {
	srv := httptest.NewServer(newFloorHandler())
	t.Cleanup(srv.Close)
	const good = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	headers := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}
	for _, tc := range []struct {
		name   string
		header map[string]string // changes to headers; "" deletes
		body   string
		status int
		want   string // the whole body
	}{
		{
			name:   "echo",
			body:   good,
			status: http.StatusOK,
			want: `{"jsonrpc":"2.0","id":7,"result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp-bridge-load-echo","version":"1.0.0"}},` +
				`"resultType":"complete","content":[{"type":"text","text":"hi"}]}}`,
		},
		{
			name:   "the load tool's own request",
			body:   string(appendModernEchoCall(nil, 7, "echo", []byte("hi"))),
			status: http.StatusOK,
			want: `{"jsonrpc":"2.0","id":7,"result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp-bridge-load-echo","version":"1.0.0"}},` +
				`"resultType":"complete","content":[{"type":"text","text":"hi"}]}}`,
		},
		{
			name:   "no clientCapabilities",
			body:   strings.Replace(good, `,"io.modelcontextprotocol/clientCapabilities":{}`, "", 1),
			status: http.StatusBadRequest,
			want:   `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"_meta io.modelcontextprotocol/clientCapabilities is required"}}`,
		},
		{
			name:   "no _meta version",
			body:   strings.Replace(good, `"io.modelcontextprotocol/protocolVersion":"2026-07-28",`, "", 1),
			status: http.StatusBadRequest,
			want:   `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"_meta io.modelcontextprotocol/protocolVersion is required"}}`,
		},
		{
			name:   "Mcp-Method missing",
			header: map[string]string{"Mcp-Method": ""},
			body:   good,
			status: http.StatusBadRequest,
			want:   `{"jsonrpc":"2.0","id":7,"error":{"code":-32020,"message":"Mcp-Method differs from the body's method"}}`,
		},
		{
			name:   "Mcp-Name differs",
			header: map[string]string{"Mcp-Name": "other"},
			body:   good,
			status: http.StatusBadRequest,
			want:   `{"jsonrpc":"2.0","id":7,"error":{"code":-32020,"message":"Mcp-Name differs from params.name"}}`,
		},
		{
			name:   "a later version",
			header: map[string]string{"MCP-Protocol-Version": "2027-01-01"},
			body:   strings.Replace(good, `"2026-07-28"`, `"2027-01-01"`, 1),
			status: http.StatusBadRequest,
			want: `{"jsonrpc":"2.0","id":7,"error":{"code":-32022,"message":"unsupported protocol version",` +
				`"data":{"requested":"2027-01-01","supported":["2026-07-28"]}}}`,
		},
		{
			name:   "initialize was removed",
			header: map[string]string{"Mcp-Method": "initialize"},
			body:   strings.Replace(good, `"tools/call"`, `"initialize"`, 1),
			status: http.StatusNotFound,
			want:   `{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"method not found: \"initialize\""}}`,
		},
		{
			name:   "unknown tool",
			header: map[string]string{"Mcp-Name": "nope"},
			body:   strings.Replace(good, `"name":"echo"`, `"name":"nope"`, 1),
			status: http.StatusOK,
			want:   `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"unknown tool \"nope\""}}`,
		},
		{
			name:   "notification",
			body:   `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`,
			status: http.StatusAccepted,
		},
		{
			name:   "a 2025 call still needs its session",
			header: map[string]string{"MCP-Protocol-Version": "2025-11-25"},
			body:   good,
			status: http.StatusBadRequest,
			want:   "missing Mcp-Session-Id\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/mcp", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", acceptValues["both"])
			for k, v := range headers {
				req.Header.Set(k, v)
			}
			for k, v := range tc.header {
				if v == "" {
					req.Header.Del(k)
				} else {
					req.Header.Set(k, v)
				}
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tc.status || string(b) != tc.want {
				t.Errorf("got %d %s\nwant %d %s", res.StatusCode, b, tc.status, tc.want)
			}
		})
	}
}

// TestCheckModernEcho is the load tool's verdict on a modern answer: only
// the complete echo of the message, on the request's id, passes.
func TestCheckModernEcho(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		ok           bool
	}{
		{"complete", `{"jsonrpc":"2.0","id":3,"result":{"resultType":"complete","content":[{"type":"text","text":"m"}]}}`, true},
		{"no resultType", `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"m"}]}}`, false},
		{"input_required", `{"jsonrpc":"2.0","id":3,"result":{"resultType":"input_required","content":[{"type":"text","text":"m"}]}}`, false},
		{"another message", `{"jsonrpc":"2.0","id":3,"result":{"resultType":"complete","content":[{"type":"text","text":"n"}]}}`, false},
		{"another id", `{"jsonrpc":"2.0","id":4,"result":{"resultType":"complete","content":[{"type":"text","text":"m"}]}}`, false},
		{"an error", `{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"x"}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r rpcResponse
			if err := r.decode([]byte(tc.answer)); err != nil {
				t.Fatal(err)
			}
			if err := r.checkModernEcho([]byte("3"), []byte("m")); (err == nil) != tc.ok {
				t.Errorf("checkModernEcho = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

func TestPipeFloor(t *testing.T) {
	ep := &pipeEndpoint{argv: append(self(t), "echo-child"), stderr: os.Stderr}
	for _, tc := range []struct {
		name           string
		sessions, conc int
	}{
		{"ping-pong", 2, 1},
		{"pipelined", 2, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runLoad(t, ep, tc.sessions, tc.conc)
		})
	}
	t.Run("churn", func(t *testing.T) { runChurn(t, ep, 2) })
}

// TestRun is the whole command against a second HTTP floor as the target,
// in both eras, so it covers the floor subprocesses, /proc reading and the
// JSON report.
func TestRun(t *testing.T) {
	var out, errOut bytes.Buffer
	cfg := &config{
		url:         "floor",
		eras:        []string{era2025, eraModern},
		sessions:    []int{2},
		concurrency: 1,
		duration:    testDuration,
		churn:       testDuration,
		timeout:     testTimeout,
		accept:      "both",
		child:       append(self(t), "echo-child"),
		jsonOut:     true,
		floors:      true,
		self:        self(t),
		cmdline:     "mcp-bridge-load -url floor -era both",
		out:         &out,
		errOut:      &errOut,
	}
	if err := run(t.Context(), cfg); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errOut.String())
	}
	rep := decodeReport(t, &out, []string{era2025, eraModern})
	wantModes := []string{"target", "http-floor", "pipe-floor"}
	wantRatios := []string{"http-floor", "pipe-floor", "composite"}
	old, modern := rep.Results[0], rep.Results[1]
	checkRows(t, old.Load, wantModes)
	checkRows(t, old.Churn, wantModes)
	checkRatios(t, old.LoadRatios, wantRatios)
	checkRatios(t, old.ChurnRatios, wantRatios)
	checkRows(t, modern.Load, wantModes)
	checkRatios(t, modern.LoadRatios, wantRatios)
	if len(modern.Churn) != 0 || len(modern.ChurnRatios) != 0 || modern.ChurnSkipped == "" {
		t.Errorf("modern churn: %d rows, %d ratios, skipped %q; want none, and why", len(modern.Churn), len(modern.ChurnRatios), modern.ChurnSkipped)
	}
	if old.ChurnSkipped != "" {
		t.Errorf("2025 churn skipped: %s", old.ChurnSkipped)
	}
	if !reflect.DeepEqual(old.Load[2], modern.Load[2]) {
		t.Errorf("the eras have different pipe floors: %+v and %+v, want the one measurement", old.Load[2], modern.Load[2])
	}
}

// TestBridge is the tool against a real mcp-bridge in front of the echo
// child, in both eras: every answer must be the echo of its own request.
// In per-session mode the modern calls share the bridge's own child,
// initialized by the bridge; in shared mode, the 2025 sessions' child.
func TestBridge(t *testing.T) {
	for _, mode := range []string{"per-session", "shared"} {
		t.Run(mode, func(t *testing.T) {
			url, pid := startBridge(t, "--mode", mode)
			var out, errOut bytes.Buffer
			cfg := &config{
				url:         url,
				eras:        []string{era2025, eraModern},
				sessions:    []int{2},
				concurrency: 2,
				duration:    testDuration,
				// A warmup starts the children the modern calls need
				// before the meter looks for them.
				warmup:    testDuration,
				churn:     testDuration,
				timeout:   testTimeout,
				accept:    "both",
				targetPID: pid,
				jsonOut:   true,
				self:      self(t),
				cmdline:   "mcp-bridge-load -url " + url + " -era both -floors=false",
				out:       &out,
				errOut:    &errOut,
			}
			if err := run(t.Context(), cfg); err != nil {
				t.Fatalf("run: %v\nstderr: %s", err, errOut.String())
			}
			rep := decodeReport(t, &out, []string{era2025, eraModern})
			old, modern := rep.Results[0], rep.Results[1]
			checkRows(t, old.Load, []string{"target"})
			checkRows(t, old.Churn, []string{"target"})
			checkRows(t, modern.Load, []string{"target"})
			if modern.ChurnSkipped == "" {
				t.Error("modern churn: not said why it is skipped")
			}
			for _, r := range []row{old.Load[0], modern.Load[0]} {
				if r.ChildCPUPerCallUS == nil || r.RSSPeak == 0 {
					t.Errorf("%+v: the child's CPU or the bridge's RSS not measured", r)
				}
			}
		})
	}
}

// TestAggregate is the tool against mcp-bridge's aggregate endpoint in
// front of three servers, each this binary's echo child: 64 sessions (and
// 64 clients of 2026-07-28), each calling the echo of one of the three
// servers in turn. Every answer must be the echo of its own request, and
// the aggregate must have dropped no answer as misrouted.
func TestAggregate(t *testing.T) {
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	var servers []string
	for _, name := range []string{"a", "b", "c"} {
		servers = append(servers, quote(name)+`: {"command": `+quote(self(t)[0])+`, "args": ["echo-child"], "env": {"GORACE": "atexit_sleep_ms=0"}}`)
	}
	file := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(file, []byte(`{"aggregate": true, "mcpServers": {`+strings.Join(servers, ", ")+`}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	url, pid := startBridgeWith(t, []string{"--config", file, "--max-children", "256"})
	base, _, _ := strings.Cut(strings.TrimPrefix(url, "http://"), "/")
	url = "http://" + base + "/mcp"
	var out, errOut bytes.Buffer
	cfg := &config{
		url: url, eras: []string{era2025, eraModern}, sessions: []int{64}, concurrency: 1,
		duration: testDuration, warmup: testDuration, churn: 0, timeout: testTimeout, accept: "both",
		tools: []string{"a__echo", "b__echo", "c__echo"}, targetPID: pid, jsonOut: true, self: self(t),
		cmdline: "mcp-bridge-load -url " + url + " -sessions 64 -tools a__echo,b__echo,c__echo -era both -floors=false",
		out:     &out, errOut: &errOut,
	}
	if err := run(t.Context(), cfg); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errOut.String())
	}
	rep := decodeReport(t, &out, []string{era2025, eraModern})
	checkRows(t, rep.Results[0].Load, []string{"target"})
	checkRows(t, rep.Results[1].Load, []string{"target"})
	resp, err := http.Get("http://" + base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "mcp_bridge_aggregate_misrouted_total 0") {
		t.Errorf("/metrics: the aggregate dropped misrouted answers:\n%s", body)
	}
}

// startBridge starts mcp-bridge (built once) on a free port with args, in
// front of this binary's echo child, and returns its endpoint and pid. It
// is stopped on cleanup.
func startBridge(t *testing.T, args ...string) (string, int) {
	t.Helper()
	return startBridgeWith(t, append(append(append([]string{
		// The bridge gives its children no environment of its own: this
		// one spares each child's exit the race detector's wait.
		"--env", "GORACE=atexit_sleep_ms=0"}, args...), "--"), append(self(t), "echo-child")...))
}

// startBridgeWith starts mcp-bridge (built once) on a free port with args
// and returns the first endpoint it logs and its pid. It is stopped on
// cleanup.
func startBridgeWith(t *testing.T, args []string) (string, int) {
	t.Helper()
	bin := testpeers.BuildGo(t, "./cmd/mcp-bridge")
	args = append([]string{"--port", "0", "--log-level", "info"}, args...)
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	urls := make(chan string, 1)
	// Owner: the test. Exit: the bridge's stderr closing when it exits,
	// which the cleanup below makes happen.
	go func() {
		listening := regexp.MustCompile(`url=(http://\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
			if testing.Verbose() {
				t.Log(sc.Text())
			}
		}
		exited <- cmd.Wait() // after the last read, as StderrPipe asks
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second): // a safety net, not a timing assertion
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	select {
	case u := <-urls:
		return u, cmd.Process.Pid
	case err := <-exited:
		t.Fatalf("mcp-bridge exited before listening: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("mcp-bridge did not start listening")
	}
	return "", 0
}

// decodeReport decodes a JSON report, failing unless it has one result
// per era, in order.
func decodeReport(t *testing.T, out *bytes.Buffer, eras []string) report {
	t.Helper()
	var rep report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("decode report: %v\n%s", err, out.String())
	}
	var got []string
	for _, res := range rep.Results {
		got = append(got, res.Era)
	}
	if !slices.Equal(got, eras) || !slices.Equal(rep.Eras, eras) {
		t.Fatalf("results for eras %q (report: %q), want %q", got, rep.Eras, eras)
	}
	return rep
}

// checkRows fails unless rows are of modes, in order, each with calls, no
// error and the server's CPU measured.
func checkRows(t *testing.T, rows []row, modes []string) {
	t.Helper()
	if len(rows) != len(modes) {
		t.Fatalf("got %d rows, want %d", len(rows), len(modes))
	}
	for i, r := range rows {
		if r.Mode != modes[i] {
			t.Errorf("row %d is %q, want %q", i, r.Mode, modes[i])
		}
		if r.Errors != 0 || r.FirstError != "" {
			t.Errorf("%s: %d errors, first: %s", r.Mode, r.Errors, r.FirstError)
		}
		if r.Calls == 0 {
			t.Errorf("%s: no calls", r.Mode)
		}
		if r.CPUPerCallUS == nil {
			t.Errorf("%s: cpu per call not measured", r.Mode)
		}
	}
}

func checkRatios(t *testing.T, rs []ratio, floors []string) {
	t.Helper()
	var got []string
	for _, r := range rs {
		got = append(got, r.Floor)
	}
	if !slices.Equal(got, floors) {
		t.Errorf("ratios against %q, want %q", got, floors)
	}
}

// TestPrintModern is the text report of a modern result: clients, not
// sessions, and why churn is missing.
func TestPrintModern(t *testing.T) {
	var out bytes.Buffer
	printResult(&out, &sessionResult{
		Era: eraModern, Sessions: 64, Concurrency: 1,
		Load:         []row{{Mode: "target", PerSec: 1000, P50US: 900}},
		ChurnSkipped: "no session",
	})
	for _, want := range []string{"era=2026-07-28 clients=64 concurrency=1", "churn not measured: no session"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// TestComposite checks the composite floor's arithmetic: a call that
// crosses both halves takes the sum of their times.
func TestComposite(t *testing.T) {
	rows := []row{
		{Mode: "target", PerSec: 300, P50US: 500},
		{Mode: "http-floor", PerSec: 1000, P50US: 200},
		{Mode: "pipe-floor", PerSec: 4000, P50US: 50},
	}
	rs := ratios(rows)
	if len(rs) != 3 || rs[2].Floor != "composite" {
		t.Fatalf("ratios = %+v, want the composite last", rs)
	}
	c := rs[2]
	if c.FloorPerSec != 800 { // 1/(1/1000 + 1/4000)
		t.Errorf("composite floor = %v/s, want 800", c.FloorPerSec)
	}
	if c.PerSec != 300.0/800 || c.P50 != 2 || c.P99 != 0 {
		t.Errorf("target/composite = %+v, want per_sec 0.375, p50 2, no p99", c)
	}
	if _, ok := composite(rows[1:2]); ok {
		t.Error("a composite from the HTTP floor alone")
	}
}

// TestEchoChild is a transcript of the echo child: one request per line
// in, the exact line out.
func TestEchoChild(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{
			name: "initialize echoes a known version",
			in:   `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`,
			want: `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18"` + initResultTail,
		},
		{
			name: "initialize answers the latest for an unknown version",
			in:   `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1999-01-01"}}`,
			want: `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"` + initResultTail,
		},
		{
			name: "notification gets no answer",
			in:   `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			want: "",
		},
		{
			name: "echo with a string id and escapes",
			in:   `{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"echo","arguments":{"message":"a\"b"}}}`,
			want: `{"jsonrpc":"2.0","id":"x","result":{"content":[{"type":"text","text":"a\"b"}]}}`,
		},
		{
			name: "ping",
			in:   `{"jsonrpc":"2.0","id":2,"method":"ping"}`,
			want: `{"jsonrpc":"2.0","id":2,"result":{}}`,
		},
		{
			name: "unknown method",
			in:   `{"jsonrpc":"2.0","id":3,"method":"nope"}`,
			want: `{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"method not found: \"nope\""}}`,
		},
		{
			name: "unknown tool",
			in:   `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x"}}`,
			want: `{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"unknown tool \"x\""}}`,
		},
		{
			name: "parse error",
			in:   `{oops`,
			want: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := runEchoChild(strings.NewReader(tc.in+"\n"), &out); err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSuffix(out.String(), "\n"); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestHistogram(t *testing.T) {
	var h histogram
	for i := 1; i <= 1000; i++ {
		h.record(time.Duration(i) * time.Microsecond)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{
		{0.5, 500 * time.Microsecond},
		{0.99, 990 * time.Microsecond},
		{1, 1000 * time.Microsecond},
	} {
		got := h.quantile(tc.q)
		if d := got - tc.want; d < -tc.want/50 || d > tc.want/50 {
			t.Errorf("quantile(%v) = %v, want %v within 2%%", tc.q, got, tc.want)
		}
	}
}
