package main

// Replicas behind a real HAProxy: a session lives on the replica that
// created it, and HAProxy keeps it there by the Mcp-Session-Id it learned
// from the initialize response. The configuration is compose.yaml's
// (deploy/haproxy.cfg) with only its bind and server lines replaced.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
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
		case section == "backend" && strings.HasPrefix(trimmed, "server "):
			if !placed {
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
	var log bytes.Buffer
	w := &lockedWriter{w: &log}
	cmd := exec.Command(bin, "-db", "-f", path)
	cmd.ExtraFiles = []*os.File{f}
	cmd.Stdout, cmd.Stderr = w, w
	runDaemon(t, cmd)
	logs = func() string {
		w.mu.Lock()
		defer w.mu.Unlock()
		return log.String()
	}
	return "http://" + addr, logs
}

// TestReplicasBehindHAProxy: 50 sessions from the official Go SDK client
// through HAProxy to two bridge processes. Every call succeeds, which it
// could not if a request of a session reached the other replica (404),
// and both replicas serve sessions. Most clients pin 2025-11-25; every
// tenth runs the SDK's default, whose 2026-07-28 probe (a POST without a
// session, refused) must pass the proxy too.
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
	replicas := []*bridgeProc{startBridge(t, nil), startBridge(t, nil)}
	var addrs []string
	for _, r := range replicas {
		addrs = append(addrs, strings.TrimPrefix(r.Base, "http://"))
	}
	proxy, haproxyLog := startHAProxy(t, cfg.forTest(addrs))

	const sessions, workers, calls = 50, 10, 3
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a safety net
	defer cancel()
	httpClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	t.Cleanup(httpClient.CloseIdleConnections)
	jobs := make(chan int)
	errs := make(chan error, sessions)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				errs <- replicaSession(ctx, httpClient, proxy+"/mcp", i, calls)
			}
		})
	}
	for i := range sessions {
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

	var created, callsOK, probes float64
	for i, r := range replicas {
		m := scrapeMetrics(t, httpClient, r.Base)
		n := m["mcp_bridge_sessions_created_total"]
		t.Logf("replica %d served %v sessions", i, n)
		if n == 0 {
			t.Errorf("replica %d served no session: HAProxy did not balance", i)
		}
		if started := strings.Count(r.Stderr(), "child started"); float64(started) != n {
			t.Errorf("replica %d: %d children started, %v sessions counted", i, started, n)
		}
		for series, v := range m {
			if strings.HasPrefix(series, "mcp_bridge_http_requests_total{code=\"404\"") && v > 0 {
				t.Errorf("replica %d: %v requests for a session it does not have: %s", i, v, series)
			}
		}
		created += n
		callsOK += m[`mcp_bridge_requests_total{method="tools/call",outcome="ok"}`]
		probes += m[`mcp_bridge_requests_total{method="server/discover",outcome="refused"}`]
	}
	if created != sessions || callsOK != sessions*calls || probes != sessions/10 {
		t.Errorf("replicas counted %v sessions, %v calls, %v probes; want %d, %d, %d", created, callsOK, probes, sessions, sessions*calls, sessions/10)
	}
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
