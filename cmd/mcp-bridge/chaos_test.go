//go:build linux

package main

// Nothing lost and nothing left running under chaos, at the process
// level: in each mode, every request gets its answer and no process
// outlives its session or the bridge.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// TestChaosSignals: in each mode, clients call concurrently, each call
// with a payload of its own, while the child writes garbage lines and
// forks grandchildren that call setsid and ignore SIGTERM, and daemons
// whose parent exits first; a hung call waits on each client. Then the
// bridge is stopped:
//   - with SIGTERM, every call the clients made got its own answer or a
//     JSON-RPC error: none is lost (a stream that ends without its
//     answer, no answer at all for a request the bridge took, which its
//     audit log says it took), none misrouted (another call's payload);
//     and once the bridge has exited no process it started is left;
//   - with SIGKILL, no process it started is left.
//
// httpapi's TestChaos covers crashes, a closed stdout and hung calls in
// the same modes; TestNothingOutlivesTheBridge each kind of process one
// by one.
func TestChaosSignals(t *testing.T) {
	modes := []struct {
		name    string
		args    []string
		clients func(t *testing.T, url string) []*rawSession
	}{
		{"per-session", nil, func(t *testing.T, url string) []*rawSession {
			return []*rawSession{openSession(t, url), openSession(t, url), openSession(t, url)}
		}},
		{"shared", []string{"--mode", "shared"}, func(t *testing.T, url string) []*rawSession {
			return []*rawSession{openSession(t, url), openSession(t, url), openSession(t, url)}
		}},
		// Two principals: two children, one with two sessions.
		{"per-identity", []string{"--mode", "per-identity", "--token-env", "ALICE_TOKEN", "--token-env", "BOB_TOKEN"}, func(t *testing.T, url string) []*rawSession {
			return []*rawSession{openSessionAs(t, url, tokenAlice), openSessionAs(t, url, tokenAlice), openSessionAs(t, url, tokenBob)}
		}},
		{"stateless", []string{"--stateless"}, func(t *testing.T, url string) []*rawSession {
			c := make([]*rawSession, 3)
			for i := range c {
				tr := &http.Transport{}
				t.Cleanup(tr.CloseIdleConnections)
				c[i] = &rawSession{t: t, url: url, hc: &http.Client{Transport: tr}}
			}
			return c
		}},
	}
	for _, m := range modes {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
			t.Run(m.name+" "+sig.String(), func(t *testing.T) {
				t.Parallel()
				testChaosSignal(t, m.args, m.clients, sig)
			})
		}
	}
}

func testChaosSignal(t *testing.T, modeArgs []string, open func(*testing.T, string) []*rawSession, sig syscall.Signal) {
	// A copy of badchild of this test's own: whatever runs from its
	// directory once the bridge has gone (the children, their grandchildren
	// and daemons, the init of their namespace, which names it) was left
	// behind by this bridge.
	dir := t.TempDir()
	badchild := filepath.Join(dir, "badchild")
	testpeers.CopyExecutable(t, testpeers.BuildGo(t, "./testdata/badchild"), badchild)
	audit := filepath.Join(dir, "audit.jsonl")
	t.Cleanup(func() { killRunningFrom(dir) })

	args := append([]string{"--stop-grace", "200ms", "--shutdown-timeout", "500ms",
		"--audit-log", audit, "--audit-arguments"}, modeArgs...)
	env := append(environWithout(envPrefix), "ALICE_TOKEN="+tokenAlice, "BOB_TOKEN="+tokenBob)
	p := startBridge(t, env, append(args, "--", badchild, "-ignore-eof", "-ignore-term")...)
	clients := open(t, p.URL)

	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	var (
		signalled atomic.Bool
		mu        sync.Mutex
		failures  []string
		refused   = map[string]error{}  // nonce: why the call got no response
		got       = map[string]string{} // nonce: "answer" or "error"
		warm      sync.WaitGroup        // each worker has been through the chaos once
		workers   sync.WaitGroup
	)
	// call makes one call with a nonce of its own (badchild ignores an
	// argument it does not know; the audit log records it) and records
	// what became of it; false once the bridge no longer takes calls.
	call := func(s *rawSession, nonce, tool string, args map[string]any, want func(text string) bool) bool {
		args["nonce"] = nonce
		res, err := chaosCall(ctx, s, tool, args, want)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil && signalled.Load() && sig == syscall.SIGKILL:
			return false // a killed bridge answers nothing: what it leaves running is what counts
		case res == notTaken && signalled.Load():
			refused[nonce] = err
			return false
		case err != nil:
			failures = append(failures, fmt.Sprintf("%s %s: %v", tool, nonce, err))
			return false
		}
		got[nonce] = res.String()
		return true
	}
	for c, s := range clients {
		// A call that hangs until the bridge stops, on each client.
		workers.Go(func() {
			call(s, fmt.Sprintf("c%d-hang", c), "hang", map[string]any{}, func(string) bool { return false })
		})
		for w := range 2 {
			warm.Add(1)
			workers.Go(func() {
				warmed := false
				defer func() {
					if !warmed {
						warm.Done()
					}
				}()
				for i := 0; ; i++ {
					nonce := fmt.Sprintf("c%d-w%d-%d", c, w, i)
					var ok bool
					switch {
					case i%4 == 1:
						ok = call(s, nonce, "garbage", map[string]any{"lines": 3}, func(text string) bool { return text == "wrote 3 garbage lines" })
					case i == 2:
						ok = call(s, nonce, "fork", map[string]any{"setsid": true, "ignore_term": true}, isNumber)
					case i == 4:
						ok = call(s, nonce, "fork", map[string]any{"daemon": true}, isNumber)
					default:
						ok = call(s, nonce, "echo", map[string]any{"message": nonce}, func(text string) bool { return text == nonce })
					}
					if i == 6 {
						warmed = true
						warm.Done()
					}
					// Until the bridge no longer takes calls, or one fails.
					if !ok {
						return
					}
				}
			})
		}
	}
	// Stop the bridge once every worker has been through the chaos and
	// every hung call is with a child, while the workers go on calling.
	warm.Wait()
	hung := regexp.MustCompile(`line="badchild: hang received"`)
	deadline := time.NewTimer(safetyNet)
	defer deadline.Stop()
	for len(hung.FindAllStringIndex(p.Stderr(), -1)) < len(clients) {
		select {
		case <-p.line:
		case <-deadline.C:
			t.Fatalf("the hung calls never reached the children:\n%s", p.Stderr())
		}
	}
	signalled.Store(true)
	err := p.Signal(sig)
	if sig == syscall.SIGTERM && err != nil {
		t.Errorf("mcp-bridge after SIGTERM: %v, want exit status 0", err)
	}
	workers.Wait()
	if left := waitNoneRunningFrom(t, dir); len(left) > 0 {
		t.Errorf("processes left running after %v of the bridge: %q", sig, left)
	}
	for _, f := range failures {
		t.Error(f)
	}
	if sig == syscall.SIGKILL {
		return
	}

	// What the bridge took, by its audit log: each has its answer.
	taken := auditNonces(t, audit)
	for nonce, outcome := range taken {
		if _, ok := got[nonce]; !ok {
			t.Errorf("the bridge took call %s (audit outcome %s), and its client got no answer (%v)", nonce, outcome, refused[nonce])
		}
		if outcome == "no_response" {
			t.Errorf("call %s: the audit log says it was never answered", nonce)
		}
	}
	answers, errs := 0, 0
	for _, r := range got {
		if r == "answer" {
			answers++
		} else {
			errs++
		}
	}
	t.Logf("%d calls answered, %d JSON-RPC errors, %d not taken after SIGTERM; %d in the audit log", answers, errs, len(refused), len(taken))
	if errs < len(clients) {
		t.Errorf("%d JSON-RPC errors, want at least one for each client's hung call (%d)", errs, len(clients))
	}
}

// chaosResult is what became of a call.
type chaosResult int

const (
	answered chaosResult = iota // its own result
	rpcError                    // a JSON-RPC error for it
	notTaken                    // no response at all: a connection refused or closed before one
)

func (r chaosResult) String() string {
	return [...]string{"answer", "error", "not taken"}[r]
}

// chaosCall calls tool on s and says what became of the call: its own
// answer (want says whether a result's text is the call's), a JSON-RPC
// error for it (in a 200 response, or with an HTTP error status), or no
// response at all (with the error). An error with answered means the
// call was lost (a response without its answer) or misrouted.
func chaosCall(ctx context.Context, s *rawSession, tool string, args map[string]any, want func(string) bool) (chaosResult, error) {
	resp, id, err := s.start(ctx, tool, args)
	if err != nil {
		return notTaken, err
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var r rpcReply
		if json.Unmarshal(body, &r) != nil || r.Error == nil || (r.ID != nil && string(r.ID) != "null" && string(r.ID) != id) {
			return answered, fmt.Errorf("status %d without a JSON-RPC error for id %s: %s", resp.StatusCode, id, body)
		}
		return rpcError, nil
	}
	r, err := readReply(resp, id)
	if err != nil {
		return answered, fmt.Errorf("lost: %w", err)
	}
	if r.Error != nil {
		return rpcError, nil
	}
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(r.Result, &res) != nil || len(res.Content) != 1 || !want(res.Content[0].Text) {
		return answered, fmt.Errorf("misrouted: got %s", r.raw)
	}
	return answered, nil
}

func isNumber(s string) bool { _, err := strconv.Atoi(s); return err == nil }

// auditNonces reads the audit log: the nonce of each tools/call, and its
// outcome.
func auditNonces(t *testing.T, file string) map[string]string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e struct {
			Method    string `json:"method"`
			Outcome   string `json:"outcome"`
			Arguments struct {
				Nonce string `json:"nonce"`
			} `json:"arguments"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit log: %v: %s", err, sc.Bytes())
		}
		if e.Method == "tools/call" {
			out[e.Arguments.Nonce] = e.Outcome
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// runningFrom lists the processes whose command line names dir, as
// "pid: command line".
func runningFrom(dir string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(b), dir+"/") {
			continue
		}
		out = append(out, fmt.Sprintf("%d: %s", pid, strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ")))
	}
	return out
}

// waitNoneRunningFrom polls until no process runs from dir, and returns
// those still running at a generous deadline: the kernel and the reapers
// take a moment to clear what a signal killed, and nobody announces it.
func waitNoneRunningFrom(t *testing.T, dir string) []string {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		left := runningFrom(dir)
		if len(left) == 0 {
			return nil
		}
		select {
		case <-deadline.C:
			return left
		case <-tick.C:
		}
	}
}

// killRunningFrom kills whatever a failed test left running from dir.
func killRunningFrom(dir string) {
	for _, p := range runningFrom(dir) {
		pid, _ := strconv.Atoi(p[:strings.IndexByte(p, ':')])
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
