package main

// TestWebPageInBrowser guards the web page as a browser shows it: in a real
// headless Chromium, the bridge's own page asks for the token (and turns a
// wrong one away), shows live a session that a Go SDK client holds open,
// and its console connects through the bridge's MCP endpoint, lists the
// tools and calls two of them, showing the result and the progress as it
// arrives.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// screenshotCopy is where the test also leaves its screenshot, for people
// to look at.
const screenshotCopy = "/tmp/mcp-bridge-web.png"

// webpageResult is what testdata/node/webpage.mjs reports.
type webpageResult struct {
	Steps      map[string]string `json:"steps"`
	Failed     string            `json:"failed"`
	Console    []string          `json:"console"`
	PageErrors []string          `json:"pageErrors"`
}

func (r *webpageResult) failed() string { return r.Failed }

func TestWebPageInBrowser(t *testing.T) {
	node, nodeModules := browserPeers(t)
	token := randomToken()
	p := startBridge(t, append(environWithout(envPrefix), "WEB_TOKEN="+token), "--token-env", "WEB_TOKEN")

	// A live session held by a real SDK client: the page must show it.
	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "web-test", Version: "1"}, nil)
	hc := &http.Client{Transport: bearerTransport{token, http.DefaultTransport}}
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.URL, HTTPClient: hc, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}) // a session, for the page to show
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "from go"}}); err != nil {
		t.Fatal(err)
	}
	prefix := cs.ID()[:8]
	// A session abandoned after initialized: the page shows when it ends,
	// and that its client is gone.
	openSessionAs(t, p.URL, token)

	shot := filepath.Join(t.TempDir(), "web.png")
	res := runWebpage(t, ctx, node, nodeModules, p.Base+"/", token, prefix, shot)
	if testing.Verbose() {
		for k, v := range res.Steps {
			t.Logf("%s: %q", k, v)
		}
	}
	if res.Failed != "" {
		t.Errorf("the page failed at %s\nsteps so far: %q\nconsole: %q\npage errors: %q", res.Failed, res.Steps, res.Console, res.PageErrors)
	}
	if len(res.PageErrors) > 0 {
		t.Errorf("uncaught errors in the page: %q", res.PageErrors)
	}

	// Each step, by the text the page showed.
	for _, tt := range []struct {
		step string
		want []string
	}{
		{"login", []string{"Bearer token"}},
		{"badToken", []string{"The bridge refused this token: Unauthorized: a valid bearer token is required"}},
		{"feedStatus", []string{"live"}},
		{"session", []string{prefix, "WEB_TOKEN", "2025-11-25"}}, // the SDK client's session, by principal
		{"children", []string{"pid ", "Uptime", "Restarts"}},
		{"connected", []string{"connected to default", "session ", "protocol "}},
		{"tools", []string{"echo", "slow", "sample", "elicit"}}, // the demo's few, not the conformance fixtures
		{"echoForm", []string{"message *", "string"}},           // required and marked so
		{"echo", []string{"echo returned", "hello from chromium"}},
		{"slowForm", []string{"steps", "delay_ms", "integer"}},
		{"progressSeen", []string{"of 4"}},
		{"slow", []string{"Completed 4 steps"}},
		{"progress", []string{"4/4", "step 4 of 4"}},
		{"notifications", []string{"notifications/progress", "1/4 step 1 of 4", "notifications/message"}},
		{"sessions", []string{prefix, "this console", "Ends in", "client gone"}},
		{"disconnected", []string{"disconnected"}},
	} {
		got, ok := res.Steps[tt.step]
		if !ok {
			if res.Failed == "" {
				t.Errorf("step %s: not reported", tt.step)
			}
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("step %s: the page shows %q, want it to contain %q", tt.step, got, w)
			}
		}
	}
	if strings.Contains(res.Steps["tools"], "test_") {
		t.Errorf("the demo's tools include conformance fixtures: %q", res.Steps["tools"])
	}
	if strings.Contains(strings.Join(mapValues(res.Steps), "\n"), cs.ID()) {
		t.Error("the page shows a whole session id")
	}

	png, err := os.ReadFile(shot)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	if err := os.WriteFile(screenshotCopy, png, 0o644); err != nil {
		t.Logf("cannot copy the screenshot to %s: %v", screenshotCopy, err)
	}
	t.Logf("screenshot: %s (and %s)", shot, screenshotCopy)
	if strings.Contains(p.Stderr(), token) {
		t.Error("the bridge logged the token")
	}
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// runWebpage runs testdata/node/webpage.mjs against the page and returns
// its report.
func runWebpage(t *testing.T, ctx context.Context, node, nodeModules string, args ...string) webpageResult {
	t.Helper()
	var res webpageResult
	runPageScript(t, ctx, node, nodeModules, "webpage.mjs", &res, args...)
	return res
}

// runPageScript runs a script of testdata/node that drives the page in
// Chromium and prints one JSON report as its last line, and decodes that
// line into res (which has a Failed field the script sets when a step
// failed).
func runPageScript(t *testing.T, ctx context.Context, node, nodeModules, script string, res interface{ failed() string }, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join(filepath.Dir(nodeModules), script)}, args...)...)
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium)
	// On a hang: SIGTERM lets the script close the browser; WaitDelay
	// then kills what is left.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	line := bytes.TrimSpace(stdout.Bytes())
	if i := bytes.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	if jerr := json.Unmarshal(line, res); jerr != nil {
		t.Fatalf("%s: %v (%v)\nstdout:\n%s\nstderr:\n%s", script, err, jerr, stdout.Bytes(), stderr.Bytes())
	}
	if err != nil && res.failed() == "" {
		t.Errorf("%s: %v\nstderr:\n%s", script, err, stderr.Bytes())
	}
}

// TestWebFeedShutdown: a page watching the live feed does not hold up the
// bridge's shutdown. With a shutdown timeout longer than Signal waits, a
// feed that outlived SIGTERM would fail the test.
func TestWebFeedShutdown(t *testing.T) {
	p := startBridge(t, environWithout(envPrefix), "--shutdown-timeout", "10m")
	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", p.Base+"/ui/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("feed: status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && sc.Text() != "event: snapshot" {
	}
	if sc.Err() != nil || sc.Text() != "event: snapshot" {
		t.Fatalf("no snapshot on the feed: %v", sc.Err())
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("exit: %v\n%s", err, p.Stderr())
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Errorf("the feed did not end cleanly: %v", err)
	}
}

// TestWebPageModern: the page shows the 2026-07-28 requests in progress,
// in a real headless Chromium: a call parked while its client answers what
// the server asked (with the time left before it expires) and a listen,
// with their principal, and the children that serve them.
func TestWebPageModern(t *testing.T) {
	node, nodeModules := browserPeers(t)
	token := randomToken()
	p := startBridge(t, append(environWithout(envPrefix), "WEB_TOKEN="+token), withFixtures(t, "--token-env", "WEB_TOKEN", "--child-protocol", "legacy")...)
	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	defer cancel()
	hc := &http.Client{Transport: bearerTransport{token, http.DefaultTransport}}

	// A call parked for its client's input (the demo, taken for a 2025
	// server, asks for a name)...
	res, err := modernCall(ctx, hc, p.URL, 1, nil, "")
	if err != nil || res.State == "" {
		t.Fatalf("modern call: %+v, %v", res, err)
	}
	// ...and a listen, open until the test ends.
	listenCtx, stopListen := context.WithCancel(ctx)
	defer stopListen()
	body := `{"jsonrpc":"2.0","id":"L1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	r, _ := http.NewRequestWithContext(listenCtx, http.MethodPost, p.URL, strings.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"} {
		r.Header.Set(k, v)
	}
	resp, err := hc.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("listen: %s %q %v", resp.Status, line, err)
	}

	shot := filepath.Join(t.TempDir(), "modern.png")
	var page webpageResult
	runPageScript(t, ctx, node, nodeModules, "modernview.mjs", &page, p.Base+"/", token, shot)
	if page.Failed != "" || len(page.PageErrors) > 0 {
		t.Fatalf("the page failed at %s (steps %q, page errors %q)", page.Failed, page.Steps, page.PageErrors)
	}
	for step, want := range map[string][]string{
		"parked":    {"tools/call test_input_required_result_elicitation", "WEB_TOKEN", "waiting for input", "expires in", "leased"},
		"listening": {"subscriptions/listen", "WEB_TOKEN", "listening"},
		"count":     {"(2)"},
		"children":  {"pid "},
	} {
		for _, w := range want {
			if !strings.Contains(page.Steps[step], w) {
				t.Errorf("%s: the page shows %q, want %q", step, page.Steps[step], w)
			}
		}
	}
	if png, err := os.ReadFile(shot); err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("screenshot %s: %v", shot, err)
	} else if err := os.WriteFile("/tmp/mcp-bridge-web-modern.png", png, 0o644); err == nil {
		t.Logf("screenshot: /tmp/mcp-bridge-web-modern.png")
	}
	// The parked call, answered, is gone from the page's snapshot too.
	if done, err := modernCall(ctx, hc, p.URL, 2, res.Inputs(), res.State); err != nil || done.Text() != "Hello, user 1!" {
		t.Errorf("retry: %+v, %v", done, err)
	}
}

// pageReasonResult is what testdata/node/pagereason.mjs reports.
type pageReasonResult struct {
	Shown struct {
		Where          string `json:"where"`
		Clients        string `json:"clients"`
		ClientsVisible bool   `json:"clientsVisible"`
		LoginVisible   bool   `json:"loginVisible"`
		LiveVisible    bool   `json:"liveVisible"`
		FeedStatus     string `json:"feedStatus"`
	} `json:"shown"`
	Failed     string   `json:"failed"`
	PageErrors []string `json:"pageErrors"`
}

func (r *pageReasonResult) failed() string { return r.Failed }

// TestPageShowsReason: in Chromium, a page the bridge refuses says why in
// the bridge's own words, and keeps showing what needs no token: the
// client configurations. With --config, a server with tokens of its own
// and no bridge-wide token, no token can open the live view: the page
// says so without asking for one, and the start-up log warns of it. A
// wrong token on the sign-in form is refused with the bridge's reason.
func TestPageShowsReason(t *testing.T) {
	node, nodeModules := browserPeers(t)
	badchild := testpeers.BuildGo(t, "./testdata/badchild")
	token := randomToken()
	env := append(environWithout(envPrefix), "TEAM_TOKEN="+token, "WEB_TOKEN="+token[:len(token)-1]+"x")
	file := filepath.Join(t.TempDir(), "servers.json")
	servers, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"open": map[string]any{"command": badchild},
		"team": map[string]any{"command": badchild, "tokenEnvs": []string{"TEAM_TOKEN"}},
	}})
	if err := os.WriteFile(file, servers, 0o600); err != nil {
		t.Fatal(err)
	}
	const bridgeWide = "give the bridge a bridge-wide token (--token-env or a JWT key)"
	several := startBridge(t, env, "--config", file)
	several.waitLog(`level=WARN msg="the web page's live view cannot be opened"`)
	if !strings.Contains(several.Stderr(), bridgeWide) {
		t.Errorf("the warning does not say what to do:\n%s", several.Stderr())
	}
	single := startBridge(t, env, "--token-env", "WEB_TOKEN", "--", badchild)

	for _, tc := range []struct {
		name, url, token, where, text string
		login, live                   bool
	}{
		{"no token opens the live view", several.Base + "/", "", "#feed-error", bridgeWide, false, true},
		{"a wrong token", single.Base + "/", "wrong-token-0123456789abcdef", "#login-error", "The bridge refused this token: Unauthorized: a valid bearer token is required", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
			defer cancel()
			arg, _ := json.Marshal(map[string]string{"url": tc.url, "token": tc.token, "where": tc.where, "text": tc.text})
			var res pageReasonResult
			runPageScript(t, ctx, node, nodeModules, "pagereason.mjs", &res, string(arg))
			if res.Failed != "" {
				t.Fatalf("%s\nshown: %+v\npage errors: %q", res.Failed, res.Shown, res.PageErrors)
			}
			if len(res.PageErrors) > 0 {
				t.Errorf("uncaught errors in the page: %q", res.PageErrors)
			}
			s := res.Shown
			if !s.ClientsVisible || !strings.Contains(s.Clients, "/mcp") {
				t.Errorf("the client configurations are not shown:\n%s", s.Clients)
			}
			if s.LoginVisible != tc.login || s.LiveVisible != tc.live {
				t.Errorf("sign-in shown %v, live view shown %v; want %v, %v", s.LoginVisible, s.LiveVisible, tc.login, tc.live)
			}
		})
	}
}
