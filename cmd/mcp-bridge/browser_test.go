package main

// TestBrowser guards CORS and the Origin guard as a browser meets them: a
// page in a real headless Chromium, served from one loopback origin, uses
// the bridge on another (CORS preflight, Authorization, the exposed
// Mcp-Session-Id and WWW-Authenticate headers), and a page from a refused
// origin cannot: its console shows why, and the bridge logs it.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// chromium is Debian's package, which test.sh installs.
const chromium = "/usr/bin/chromium"

// browserPage talks MCP to the bridge with fetch, as a browser client
// does, and resolves window.mcpResult with what it saw.
var browserPage = template.Must(template.New("page").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>mcp-bridge browser test</title></head>
<body>
<script id="cfg" type="application/json">{{.}}</script>
<script>
const cfg = JSON.parse(document.getElementById("cfg").textContent);

async function rpc(body, {sid, token, method = "POST"} = {}) {
  const headers = {"Accept": "application/json, text/event-stream"};
  if (method === "POST") headers["Content-Type"] = "application/json";
  if (token) headers["Authorization"] = "Bearer " + token;
  if (sid) {
    headers["Mcp-Session-Id"] = sid;
    headers["MCP-Protocol-Version"] = "2025-11-25";
  }
  const r = await fetch(cfg.url, {method, headers, body: body ? JSON.stringify(body) : undefined,
                                  signal: AbortSignal.timeout(20000)});
  const text = await r.text();
  let msgs = [];
  if ((r.headers.get("content-type") || "").startsWith("text/event-stream")) {
    for (const line of text.split("\n")) {
      if (line.startsWith("data:") && line.slice(5).trim()) msgs.push(JSON.parse(line.slice(5)));
    }
  } else if (text) {
    msgs = [JSON.parse(text)];
  }
  return {status: r.status, sid: r.headers.get("mcp-session-id"),
          challenge: r.headers.get("www-authenticate"), msgs};
}

window.mcpResult = (async () => {
  const out = {origin: location.origin};
  try {
    const init = {jsonrpc: "2.0", id: 1, method: "initialize", params: {protocolVersion: "2025-11-25",
                  capabilities: {}, clientInfo: {name: "chromium", version: "1"}}};
    let r = await rpc(init);
    out.unauthorized = {status: r.status, challenge: r.challenge};
    r = await rpc(init, {token: cfg.token});
    out.initialize = r.status;
    out.sessionIdVisible = !!r.sid;
    if (!r.sid) throw new Error("no Mcp-Session-Id in the response: not exposed to the page");
    const sid = r.sid;
    r = await rpc({jsonrpc: "2.0", method: "notifications/initialized"}, {sid, token: cfg.token});
    out.initialized = r.status;
    r = await rpc({jsonrpc: "2.0", id: 2, method: "tools/list"}, {sid, token: cfg.token});
    out.tools = (r.msgs.find((m) => m.id === 2)?.result?.tools || []).map((t) => t.name);
    r = await rpc({jsonrpc: "2.0", id: 3, method: "tools/call",
                   params: {name: "echo", arguments: {message: "hello from " + location.origin}}}, {sid, token: cfg.token});
    out.echo = r.msgs.find((m) => m.id === 3)?.result?.content?.[0]?.text;
    r = await rpc(null, {sid, token: cfg.token, method: "DELETE"});
    out.deleted = r.status;
    out.ok = true;
  } catch (e) {
    out.ok = false;
    out.error = String(e);
  }
  return out;
})();
</script>
</body></html>
`))

type browserResult struct {
	URL    string `json:"url"`
	Error  string `json:"error"`
	Result struct {
		Origin       string `json:"origin"`
		OK           bool   `json:"ok"`
		Error        string `json:"error"`
		Unauthorized struct {
			Status    int    `json:"status"`
			Challenge string `json:"challenge"`
		} `json:"unauthorized"`
		Initialize       int      `json:"initialize"`
		SessionIDVisible bool     `json:"sessionIdVisible"`
		Initialized      int      `json:"initialized"`
		Tools            []string `json:"tools"`
		Echo             string   `json:"echo"`
		Deleted          int      `json:"deleted"`
	} `json:"result"`
	Console []string `json:"console"`
}

// browserPeers skips the test without Debian's chromium and fails it
// without playwright-core; it returns node and the node_modules folder.
func browserPeers(t *testing.T) (node, nodeModules string) {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("%s is not installed (test.sh installs Debian's chromium)", chromium)
	}
	nodeModules = filepath.Join(testpeers.ModuleRoot(t), "testdata", "node", "node_modules")
	if _, err := os.Stat(filepath.Join(nodeModules, "playwright-core", "package.json")); err != nil {
		t.Fatalf("chromium is installed but playwright-core is not: run `npm ci --prefix testdata/node` (test.sh does)")
	}
	return testpeers.Node(t), nodeModules
}

// randomToken is a fresh static token (192 random bits, hex).
func randomToken() string {
	var raw [24]byte
	_, _ = rand.Read(raw[:])
	return hex.EncodeToString(raw[:])
}

func TestBrowser(t *testing.T) {
	node, nodeModules := browserPeers(t)
	token := randomToken()

	// The page server listens first: the allowed non-loopback origin names
	// its port. app.test and evil.test resolve to 127.0.0.1 inside
	// Chromium only (--host-resolver-rules).
	var cfgJSON []byte
	pages := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = browserPage.Execute(w, template.JS(cfgJSON)) // the test's own JSON: a valid JS literal
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pages.Listener = ln
	port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)

	env := append(environWithout(envPrefix), "BROWSER_TOKEN="+token)
	p := startBridge(t, env, "--token-env", "BROWSER_TOKEN", "--metrics-public", "--allow-origin", "http://app.test:"+port)
	cfgJSON, _ = json.Marshal(map[string]string{"url": p.URL, "token": token})
	pages.Start()
	t.Cleanup(pages.Close)

	loopback := "http://127.0.0.1:" + port + "/"
	allowed := "http://app.test:" + port + "/"
	refused := "http://evil.test:" + port + "/"
	results := runBrowser(t, node, nodeModules, loopback, allowed, refused)
	if testing.Verbose() {
		for url, r := range results {
			t.Logf("%s: %+v", url, r)
		}
	}

	for _, url := range []string{loopback, allowed} {
		r := results[url]
		if r.Error != "" || !r.Result.OK {
			t.Errorf("%s: %s%s; console %q", url, r.Error, r.Result.Error, r.Console)
			continue
		}
		res := r.Result
		if res.Unauthorized.Status != 401 || !strings.Contains(res.Unauthorized.Challenge, `resource_metadata="`) {
			t.Errorf("%s: without a token: status %d, challenge %q (WWW-Authenticate must be exposed)", url, res.Unauthorized.Status, res.Unauthorized.Challenge)
		}
		if res.Initialize != 200 || !res.SessionIDVisible || res.Initialized != 202 || res.Deleted != 200 {
			t.Errorf("%s: initialize %d (session id visible: %v), initialized %d, DELETE %d", url, res.Initialize, res.SessionIDVisible, res.Initialized, res.Deleted)
		}
		if !strings.Contains(strings.Join(res.Tools, ","), "echo") || res.Echo != "hello from "+strings.TrimSuffix(url, "/") {
			t.Errorf("%s: tools %v, echo %q", url, res.Tools, res.Echo)
		}
	}
	r := results[refused]
	if r.Error != "" || r.Result.OK || !strings.Contains(r.Result.Error, "Failed to fetch") {
		t.Errorf("%s: a refused origin reached the bridge: %+v", refused, r)
	}
	// The refused page's console shows the bridge's reason, and the bridge
	// logs the refusal with the flag that allows it. Chromium prints the
	// Access-Control-Allow-Origin the refusal carries.
	origin := strings.TrimSuffix(refused, "/")
	reason := "has a value 'refused-by-mcp-bridge:allow-it-with--allow-origin=" + origin + "' that is not equal to the supplied origin"
	if !slices.ContainsFunc(r.Console, func(line string) bool { return strings.Contains(line, reason) }) {
		t.Errorf("%s: the console does not show the bridge's reason (%q): %q", refused, reason, r.Console)
	}
	waitLogged(t, p, `level=WARN msg="request refused: origin not allowed" origin=`+regexp.QuoteMeta(origin)+
		` method=OPTIONS path=/mcp hint="to allow this origin, start the bridge with --allow-origin `+regexp.QuoteMeta(origin)+`"`)
	// No request of the refused page reached a child: the sessions are
	// the two allowed pages'.
	if m := scrapeMetrics(t, http.DefaultClient, p.Base); m["mcp_bridge_sessions_created_total"] != 2 {
		t.Errorf("%v sessions created, want 2 (one per allowed page)", m["mcp_bridge_sessions_created_total"])
	}
	if strings.Contains(p.Stderr(), token) {
		t.Error("the bridge logged the token")
	}
}

// browserTimeout bounds the driver; it has its own 30 s deadline per step,
// so this fires only if Chromium or Node hang.
const browserTimeout = 2 * time.Minute

// runBrowser opens each page in headless Chromium through
// testdata/node/browser.mjs and returns the results by URL.
func runBrowser(t *testing.T, node, nodeModules string, urls ...string) map[string]browserResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join(filepath.Dir(nodeModules), "browser.mjs")}, urls...)...)
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium, "HOST_RULES=MAP app.test 127.0.0.1, MAP evil.test 127.0.0.1")
	// On a hang: SIGTERM lets the script close the browser; WaitDelay
	// then kills what is left.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := map[string]browserResult{}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var r browserResult
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.URL != "" {
			out[r.URL] = r
		}
	}
	if err != nil || len(out) != len(urls) {
		t.Fatalf("browser.mjs: %v; %d results for %d pages\nstdout:\n%s\nstderr:\n%s", err, len(out), len(urls), stdout.Bytes(), stderr.Bytes())
	}
	return out
}
