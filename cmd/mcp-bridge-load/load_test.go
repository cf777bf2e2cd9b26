package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
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
func runChurn(t *testing.T, ep endpoint, n int) {
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
		accept         string
		sessions, conc int
	}{
		{"both", 2, 1},
		{"json", 2, 3},
		{"sse", 2, 2},
	} {
		t.Run(tc.accept, func(t *testing.T) {
			tgt, err := newHTTPTarget(srv.URL+"/mcp", tc.accept, tc.sessions*tc.conc)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(tgt.close)
			ep := &httpEndpoint{t: tgt}
			runLoad(t, ep, tc.sessions, tc.conc)
			runChurn(t, ep, tc.sessions)
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
// so it covers the floor subprocesses, /proc reading and the JSON report.
func TestRun(t *testing.T) {
	var out, errOut bytes.Buffer
	cfg := &config{
		url:         "floor",
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
		cmdline:     "mcp-bridge-load -url floor",
		out:         &out,
		errOut:      &errOut,
	}
	if err := run(t.Context(), cfg); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errOut.String())
	}
	var rep report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("decode report: %v\n%s", err, out.String())
	}
	if len(rep.Results) != 1 {
		t.Fatalf("got %d results, want 1", len(rep.Results))
	}
	res := rep.Results[0]
	wantModes := []string{"target", "http-floor", "pipe-floor"}
	for _, rows := range [][]row{res.Load, res.Churn} {
		if len(rows) != len(wantModes) {
			t.Fatalf("got %d rows, want %d", len(rows), len(wantModes))
		}
		for i, r := range rows {
			if r.Mode != wantModes[i] {
				t.Errorf("row %d is %q, want %q", i, r.Mode, wantModes[i])
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
	for _, rs := range [][]ratio{res.LoadRatios, res.ChurnRatios} {
		var floors []string
		for _, r := range rs {
			floors = append(floors, r.Floor)
		}
		if !slices.Equal(floors, []string{"http-floor", "pipe-floor", "composite"}) {
			t.Errorf("ratios against %q, want http-floor, pipe-floor, composite", floors)
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
