package main

// Replicas behind a real HAProxy: a session lives on the replica that
// created it, and HAProxy keeps it there by the Mcp-Session-Id it learned
// from the initialize response; a 2026-07-28 retry goes to the replica its
// requestState names. The configuration is compose.yaml's
// (deploy/haproxy.cfg) with only its bind, server and use-server lines
// replaced.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// stickiness are the rules that keep a session on its replica; the
// backend of deploy/haproxy.cfg must have lines starting with each.
var stickiness = []string{
	"stick-table type string len 64",
	"stick store-response res.hdr(Mcp-Session-Id)",
	"stick match req.hdr(Mcp-Session-Id)",
	"option http-buffer-request",
	"use-server ",
}

// haproxyConfig is deploy/haproxy.cfg, with the lines of its backend
// (trimmed) and its server lines picked out.
type haproxyConfig struct {
	lines   []string
	backend []string
	servers []string
}

func readHAProxyConfig(t *testing.T) haproxyConfig {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testpeers.ModuleRoot(t), "deploy", "haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	var c haproxyConfig
	section := ""
	for _, line := range strings.Split(string(b), "\n") {
		c.lines = append(c.lines, line)
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
		case line[0] != ' ' && line[0] != '\t':
			section = strings.Fields(trimmed)[0]
		case section == "backend":
			c.backend = append(c.backend, trimmed)
			if strings.HasPrefix(trimmed, "server ") {
				c.servers = append(c.servers, trimmed)
			}
		}
	}
	return c
}

// forTest is the configuration with the frontend bound to an inherited
// listening socket (fd@3) and the servers replaced by addrs; everything
// else, stickiness and health checks included, is as compose runs it.
func (c haproxyConfig) forTest(addrs []string) string {
	var out strings.Builder
	section, placed := "", false
	for _, line := range c.lines {
		trimmed := strings.TrimSpace(line)
		if trimmed != "" && line[0] != ' ' && line[0] != '\t' && !strings.HasPrefix(trimmed, "#") {
			section = strings.Fields(trimmed)[0]
		}
		switch {
		case section == "frontend" && strings.HasPrefix(trimmed, "bind "):
			out.WriteString("    bind fd@3\n")
			continue
		case section == "backend" && strings.HasPrefix(trimmed, "use-server "):
			continue // written with the servers, for their names
		case section == "backend" && strings.HasPrefix(trimmed, "server "):
			if !placed {
				// The first server's use-server rule of deploy/haproxy.cfg,
				// for each test server's name.
				first := strings.Fields(c.servers[0])[1]
				for _, l := range c.backend {
					if strings.HasPrefix(l, "use-server "+first+" ") {
						for i := range addrs {
							out.WriteString("    " + strings.ReplaceAll(l, first, fmt.Sprintf("replica-%d", i)) + "\n")
						}
						break
					}
				}
				for i, a := range addrs {
					fmt.Fprintf(&out, "    server replica-%d %s\n", i, a)
				}
				placed = true
			}
			continue
		}
		out.WriteString(line + "\n")
	}
	return out.String()
}

// startHAProxy runs haproxy in the foreground with cfg, listening on a
// socket of 127.0.0.1 that the test opened and hands it as fd 3, so it
// accepts (the kernel queues connections) before haproxy has even
// started. It is stopped on cleanup.
func startHAProxy(t *testing.T, cfg string) (url string, logs func() string) {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Skip("haproxy is not installed (test.sh installs the Debian package)")
	}
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	f, addr := loopbackListener(t)
	defer f.Close() // haproxy has its own copy once started
	check := exec.Command(bin, "-c", "-q", "-f", path)
	check.ExtraFiles = []*os.File{f}
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v\n%s\n%s", err, out, cfg)
	}
	var log lockedBuffer
	cmd := exec.Command(bin, "-db", "-f", path)
	cmd.ExtraFiles = []*os.File{f}
	cmd.Stdout, cmd.Stderr = &log, &log
	runDaemon(t, cmd)
	logs = log.String
	return "http://" + addr, logs
}

// TestReplicasBehindHAProxy: 50 sessions from the official Go SDK client
// through HAProxy to two bridge processes. Every call succeeds, which it
// could not if a request of a session reached the other replica (404),
// and both replicas serve sessions. Most clients pin 2025-11-25; every
// tenth runs the SDK's default, 2026-07-28, and has no session at all.
// Meanwhile 2026-07-28 calls ask their client for input (MRTR): each call
// is parked on the replica that took it (the demo server is run as a 2025
// one, so the bridge holds the call), and its retry, balanced round robin
// like everything else, must reach that replica: HAProxy routes it by
// the replica named in its requestState. Sent straight to the other
// replica instead, a retry gets an error naming the right one.
func TestReplicasBehindHAProxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy is not installed (test.sh installs the Debian package)")
	}
	cfg := readHAProxyConfig(t)
	for _, rule := range stickiness {
		if !slices.ContainsFunc(cfg.backend, func(l string) bool { return strings.HasPrefix(l, rule) }) {
			t.Fatalf("deploy/haproxy.cfg's backend has no %q", rule)
		}
	}
	var replicas []*bridgeProc
	for i := range 2 {
		replicas = append(replicas, startBridge(t, nil, withFixtures(t, "--replica-id", fmt.Sprintf("replica-%d", i), "--child-protocol", "legacy")...))
	}
	var addrs []string
	for _, r := range replicas {
		addrs = append(addrs, strings.TrimPrefix(r.Base, "http://"))
	}
	proxy, haproxyLog := startHAProxy(t, cfg.forTest(addrs))

	const sessions, workers, calls, retries = 50, 10, 3, 20
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a safety net
	defer cancel()
	httpClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	t.Cleanup(httpClient.CloseIdleConnections)
	jobs := make(chan int)
	errs := make(chan error, sessions+retries)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				if i >= sessions {
					errs <- modernRetry(ctx, httpClient, proxy+"/mcp", i)
					continue
				}
				errs <- replicaSession(ctx, httpClient, proxy+"/mcp", i, calls)
			}
		})
	}
	for i := range sessions + retries {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if err != nil {
			failed++
			t.Error(err)
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d sessions failed\nHAProxy:\n%s", failed, sessions, haproxyLog())
	}

	var created, callsOK, modernOK, parked float64
	for i, r := range replicas {
		m := scrapeMetrics(t, httpClient, r.Base)
		n := m["mcp_bridge_sessions_created_total"]
		t.Logf("replica %d served %v sessions", i, n)
		if n == 0 {
			t.Errorf("replica %d served no session: HAProxy did not balance", i)
		}
		if m["mcp_bridge_input_required_total"] == 0 {
			t.Errorf("replica %d parked no call: HAProxy did not balance", i)
		}
		for series, v := range m {
			if strings.HasPrefix(series, "mcp_bridge_http_requests_total{code=\"404\"") && v > 0 {
				t.Errorf("replica %d: %v requests for a session it does not have: %s", i, v, series)
			}
		}
		created += n
		callsOK += m[`mcp_bridge_requests_total{era="2025",method="tools/call",outcome="ok"}`]
		modernOK += m[`mcp_bridge_requests_total{era="2026-07-28",method="tools/call",outcome="ok"}`]
		parked += m["mcp_bridge_input_required_total"]
		if refused := m["mcp_bridge_input_refused_total"]; refused != 0 {
			t.Errorf("replica %d refused %v retries: one reached the wrong replica", i, refused)
		}
	}
	// Every tenth client is modern: no session, its calls in the other era.
	// Each MRTR call is two POSTs, the call and its retry, both answered.
	modernClients := float64(sessions / 10)
	if created != sessions-modernClients || callsOK != (sessions-modernClients)*calls ||
		modernOK != modernClients*calls+2*retries || parked != retries {
		t.Errorf("replicas counted %v sessions, %v calls, %v modern calls, %v parked; want %v, %v, %v, %v",
			created, callsOK, modernOK, parked, sessions-modernClients, (sessions-modernClients)*calls, modernClients*calls+2*retries, retries)
	}

	// A retry that reaches a replica that does not hold its call is told
	// which one does, and the call stays parked for the right retry.
	res, err := modernCall(ctx, httpClient, replicas[0].URL, 1, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	other := replicas[1].URL
	msg, err := modernCall(ctx, httpClient, other, 2, res.Inputs(), res.State)
	if err != nil || msg.Error == nil || msg.Error.Code != -32602 || !strings.Contains(msg.Error.Message, `"replica-0"`) {
		t.Errorf("retry at the wrong replica: %+v, %v; want -32602 naming replica-0", msg, err)
	}
	if done, err := modernCall(ctx, httpClient, replicas[0].URL, 3, res.Inputs(), res.State); err != nil || done.Text() != "Hello, user 1!" {
		t.Errorf("retry at the right replica: %+v, %v", done, err)
	}
}

// modernRetry is one 2026-07-28 call through the proxy that asks its
// client for a name (the demo's test_input_required_result_elicitation, a
// 2025 child's elicitation/create the bridge parks) and its retry with the
// answer.
func modernRetry(ctx context.Context, hc *http.Client, url string, i int) error {
	first, err := modernCall(ctx, hc, url, 1, nil, "")
	if err != nil {
		return fmt.Errorf("modern call %d: %w", i, err)
	}
	if first.State == "" || len(first.Requests) != 1 {
		return fmt.Errorf("modern call %d: not input_required: %+v", i, first)
	}
	done, err := modernCall(ctx, hc, url, 2, first.inputsFor(fmt.Sprintf("user %d", i)), first.State)
	if err != nil {
		return fmt.Errorf("modern call %d: retry: %w", i, err)
	}
	if want := fmt.Sprintf("Hello, user %d!", i); done.Text() != want {
		return fmt.Errorf("modern call %d: retry answered %+v, want %q", i, done, want)
	}
	return nil
}

// modernAnswer is what modernCall reads of a response.
type modernAnswer struct {
	Requests map[string]json.RawMessage // inputRequests of an input_required result
	State    string                     // its requestState
	Content  []struct{ Text string }
	Error    *struct {
		Code    int
		Message string
	}
}

func (a modernAnswer) Text() string {
	if len(a.Content) == 0 {
		return ""
	}
	return a.Content[0].Text
}

// inputsFor answers every question of an input_required result with name.
func (a modernAnswer) inputsFor(name string) map[string]any {
	in := map[string]any{}
	for k := range a.Requests {
		in[k] = map[string]any{"action": "accept", "content": map[string]any{"name": name}}
	}
	return in
}

// Inputs answers with the name "user 1".
func (a modernAnswer) Inputs() map[string]any { return a.inputsFor("user 1") }

// modernCall POSTs a 2026-07-28 tools/call of the demo's
// test_input_required_result_elicitation, with inputResponses and
// requestState when given, and reads the one JSON answer.
func modernCall(ctx context.Context, hc *http.Client, url string, id int, inputs map[string]any, state string) (modernAnswer, error) {
	const tool = "test_input_required_result_elicitation"
	params := map[string]any{"name": tool, "arguments": map[string]any{}, "_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}},
	}}
	if inputs != nil {
		params["inputResponses"], params["requestState"] = inputs, state
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
	r, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool} {
		r.Header.Set(k, v)
	}
	resp, err := hc.Do(r)
	if err != nil {
		return modernAnswer{}, err
	}
	defer resp.Body.Close()
	var msg struct {
		Result struct {
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  string                     `json:"requestState"`
			Content       []struct{ Text string }    `json:"content"`
		} `json:"result"`
		Error *struct {
			Code    int
			Message string
		} `json:"error"`
	}
	body, err = io.ReadAll(resp.Body)
	if err != nil {
		return modernAnswer{}, err
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// An answer that took longer than --sse-delay comes as a stream:
		// its last event is the answer.
		i := bytes.LastIndex(body, []byte("data: "))
		if i < 0 {
			return modernAnswer{}, fmt.Errorf("%s: a stream without an event: %s", resp.Status, body)
		}
		body, _, _ = bytes.Cut(body[i+len("data: "):], []byte("\n"))
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		return modernAnswer{}, fmt.Errorf("%s: %w: %s", resp.Status, err, body)
	}
	return modernAnswer{Requests: msg.Result.InputRequests, State: msg.Result.RequestState, Content: msg.Result.Content, Error: msg.Error}, nil
}

// replicaSession is one client session through the proxy: connect, a few
// calls, close (DELETE).
func replicaSession(ctx context.Context, hc *http.Client, url string, i, calls int) error {
	client := mcp.NewClient(&mcp.Implementation{Name: "replica-test", Version: "0.0.1"}, nil)
	opts := &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
	if i%10 == 0 {
		opts = nil // the SDK's default: probes with server/discover first
	}
	s, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1}, opts)
	if err != nil {
		return fmt.Errorf("session %d: connect: %w", i, err)
	}
	defer s.Close()
	for c := range calls {
		msg := fmt.Sprintf("session %d call %d", i, c)
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": msg}})
		if err != nil {
			return fmt.Errorf("session %d (%s): call %d: %w", i, s.ID(), c, err)
		}
		if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != msg || res.IsError {
			return fmt.Errorf("session %d: call %d answered %+v", i, c, res.Content)
		}
	}
	if err := s.Close(); err != nil {
		return fmt.Errorf("session %d: close: %w", i, err)
	}
	return nil
}

// scrapeMetrics reads a bridge's /metrics into series and values.
func scrapeMetrics(t testing.TB, hc *http.Client, base string) map[string]float64 {
	t.Helper()
	resp, err := hc.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, body)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// loopbackListener is a listening socket on 127.0.0.1, as a file to hand
// to a child (ExtraFiles): no port is chosen and freed, so none can be
// taken in between. The caller closes it once the child has its copy.
func loopbackListener(t *testing.T) (f *os.File, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f, err = ln.(*net.TCPListener).File()
	addr = ln.Addr().String()
	ln.Close() // f holds the socket now
	if err != nil {
		t.Fatal(err)
	}
	return f, addr
}

// lockedBuffer is the log of a daemon: exec copies its stdout and stderr
// in goroutines of their own while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
