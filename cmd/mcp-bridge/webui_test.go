package main

// The web page, tested in a real headless Chromium against a real bridge
// and its demo server (testdata/node/webui.mjs drives the page; these tests
// judge what it showed):
//
//   - the "Connect a client" panel: every endpoint as a full URL (the MCP
//     endpoint, legacy /sse and /message, /metrics, /healthz, /readyz) with
//     a copy button; the client configurations (Claude Desktop, Cursor,
//     VS Code, the MCP Inspector, curl), each with the full URL and no
//     token; with --config, per server;
//   - the Server panel: the whole command, its secret-looking arguments
//     masked;
//   - the progress bar: shown only while a call that reports progress
//     runs, hidden when it ends (result, error, cancel);
//   - prompts and resources: a prompt fetched with arguments, resources
//     read (text, blob, template), a subscription's update shown;
//   - the layout at 1440, 768 and 360 px: the Logs selector and the
//     Connect and Disconnect buttons on one line, nothing wider than the
//     window. Screenshots of each width are left in /tmp for people.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// uiBox is an element's bounding box as webui.mjs measured it.
type uiBox struct {
	Visible             bool
	X, Y, Width, Height float64
}

func (b uiBox) right() float64  { return b.X + b.Width }
func (b uiBox) bottom() float64 { return b.Y + b.Height }

// sameLine: the boxes share a line (their vertical extents overlap by
// more than half of the smaller one).
func sameLine(a, b uiBox) bool {
	overlap := min(a.bottom(), b.bottom()) - max(a.Y, b.Y)
	return overlap > min(a.Height, b.Height)/2
}

type uiLayout struct {
	LogsLabel, Logs, Connect, Disconnect, Console, Clients, FirstURL, FirstCopy, Snippet, Server uiBox
	ScrollWidth, InnerWidth                                                                      float64
}

type uiSnippet struct {
	ID, Title, Selected, Where, Text, Note string
	Visible                                bool
}

type uiCall struct {
	During, Result                          string
	ProgressHidden, CancelHidden            bool
	CallEnabled                             bool
	ProgressLog                             []string
	Form, URI                               string
	Visible, ImageVisible, ImageDecoded     bool
	Button, Pressed, Notifications, Snippet string
	Endpoints                               string
}

type webuiResult struct {
	Steps struct {
		Endpoints []struct {
			Name, URL string
			Copy      bool
		}
		TokenHint                         string
		Snippets                          []uiSnippet
		CopiedURL, CopiedSnippet          string
		Server, Tabs                      string
		Echo, Slow, Cancel, Error         uiCall
		PromptList                        string
		Prompt, PromptImage               uiCall
		ResourceList, TemplateList        string
		ResourceText, ResourceBlob        uiCall
		ResourceTemplate                  uiCall
		Subscribed, Updated, Unsubscribed uiCall
		First, Second                     uiCall
		Disconnected                      string
	}
	Layout     map[string]uiLayout
	Failed     string
	Console    []string
	PageErrors []string
}

func (r *webuiResult) failed() string { return r.Failed }

// webuiWidths are the widths the page is laid out and photographed at.
var webuiWidths = []string{"1440", "768", "360"}

// runWebui runs webui.mjs with plan (shots added: one screenshot per
// width, in a temporary folder) and returns its report and the
// screenshots by width.
func runWebui(t *testing.T, plan map[string]any) (webuiResult, map[string]string) {
	t.Helper()
	node, nodeModules := browserPeers(t)
	dir := t.TempDir()
	shots := map[string]string{}
	for _, w := range webuiWidths {
		shots[w] = filepath.Join(dir, "web-"+w+".png")
	}
	plan["shots"] = shots
	failShot := filepath.Join(os.TempDir(), "mcp-bridge-web-failed.png")
	plan["failShot"] = failShot
	arg, _ := json.Marshal(plan)
	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	defer cancel()
	var res webuiResult
	runPageScript(t, ctx, node, nodeModules, "webui.mjs", &res, string(arg))
	if res.Failed != "" {
		t.Fatalf("the page failed at %s\nconsole: %q\npage errors: %q\nscreenshot: %s", res.Failed, res.Console, res.PageErrors, failShot)
	}
	if len(res.PageErrors) > 0 {
		t.Errorf("uncaught errors in the page: %q", res.PageErrors)
	}
	return res, shots
}

// checkScreens checks each width's screenshot (a PNG of that width) and
// layout: nothing wider than the window; at every width the Logs selector
// and the Connect and Disconnect buttons on one line, inside the console;
// the first endpoint's URL and its copy button visible and inside the
// panel. It copies the screenshots to /tmp/mcp-bridge-web-NAME-WIDTH.png.
func checkScreens(t *testing.T, name string, res webuiResult, shots map[string]string) {
	t.Helper()
	for _, w := range webuiWidths {
		l, ok := res.Layout[w]
		if !ok {
			t.Errorf("%s px: not laid out", w)
			continue
		}
		png, err := os.ReadFile(shots[w])
		if err != nil || len(png) < 24 || !bytes.HasPrefix(png, []byte("\x89PNG")) {
			t.Errorf("%s px: screenshot %s: %v", w, shots[w], err)
			continue
		}
		if got := binary.BigEndian.Uint32(png[16:20]); strings.TrimSpace(w) != "" && float64(got) != l.InnerWidth {
			t.Errorf("%s px: the screenshot is %d px wide, the window %v", w, got, l.InnerWidth)
		}
		copyTo := filepath.Join(os.TempDir(), "mcp-bridge-web-"+name+"-"+w+".png")
		if err := os.WriteFile(copyTo, png, 0o644); err == nil {
			t.Logf("screenshot at %s px: %s", w, copyTo)
		}
		if l.ScrollWidth > l.InnerWidth {
			t.Errorf("%s px: the page is %v px wide, wider than the window", w, l.ScrollWidth)
		}
		row := []uiBox{l.LogsLabel, l.Logs, l.Connect, l.Disconnect}
		for i, b := range row {
			if !b.Visible || b.X < l.Console.X || b.right() > l.Console.right() {
				t.Errorf("%s px: console control %d (Logs label, Logs, Connect, Disconnect) %+v is not visible inside the console %+v", w, i, b, l.Console)
			}
			if i > 0 && (!sameLine(row[i-1], b) || b.X <= row[i-1].X) {
				t.Errorf("%s px: the Logs selector and the Connect and Disconnect buttons are not on one line: %+v", w, row)
			}
		}
		// A button whose text wrapped is taller than its neighbour.
		if l.Disconnect.Height > l.Connect.Height+1 {
			t.Errorf("%s px: Disconnect wraps: %v px high, Connect %v", w, l.Disconnect.Height, l.Connect.Height)
		}
		for what, b := range map[string]uiBox{"first URL": l.FirstURL, "its copy button": l.FirstCopy, "snippet": l.Snippet, "server panel": l.Server} {
			if !b.Visible || b.Width == 0 || b.X < l.Clients.X-1 || b.right() > l.Clients.right()+1 && what != "server panel" {
				t.Errorf("%s px: %s %+v is not visible inside the panel %+v", w, what, b, l.Clients)
			}
		}
		if !sameLine(l.FirstURL, l.FirstCopy) {
			t.Errorf("%s px: the copy button is not beside its URL: %+v %+v", w, l.FirstURL, l.FirstCopy)
		}
	}
}

func TestWebPageClientsAndConsole(t *testing.T) {
	token := randomToken()
	bin := testpeers.BuildGo(t, "./cmd/mcp-bridge")
	const apiKey, flagToken, envSecret = "s3cr3t-api-key-value", "tok-hunter2-value", "env-secret-value"
	p := startBridge(t, append(environWithout(envPrefix), "WEB_TOKEN="+token), "--token-env", "WEB_TOKEN",
		"--", bin, "conformance-server", "--api-key="+apiKey, "--verbose", "--token", flagToken, "API_KEY="+envSecret)
	resourcesShot := filepath.Join(t.TempDir(), "web-resources.png")
	res, shots := runWebui(t, map[string]any{"scenario": "single", "url": p.Base + "/", "token": token, "resourcesShot": resourcesShot})
	s := res.Steps
	if png, err := os.ReadFile(resourcesShot); err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("screenshot of the Resources tab: %v", err)
	} else if err := os.WriteFile(filepath.Join(os.TempDir(), "mcp-bridge-web-console-resources.png"), png, 0o644); err == nil {
		t.Logf("screenshot of the Resources tab: %s", filepath.Join(os.TempDir(), "mcp-bridge-web-console-resources.png"))
	}
	mcpURL := p.Base + "/mcp"

	t.Run("endpoints", func(t *testing.T) {
		var got []string
		for _, e := range s.Endpoints {
			got = append(got, e.URL)
			if !e.Copy || e.Name == "" {
				t.Errorf("endpoint %+v: no name or no copy button", e)
			}
		}
		want := []string{mcpURL, p.Base + "/sse", p.Base + "/message", p.Base + "/metrics", p.Base + "/healthz", p.Base + "/readyz"}
		if !slices.Equal(got, want) {
			t.Errorf("endpoints %q, want %q", got, want)
		}
		if s.CopiedURL != mcpURL {
			t.Errorf("the copy button copied %q, want %q", s.CopiedURL, mcpURL)
		}
		if !strings.Contains(s.TokenHint, "--token-env") {
			t.Errorf("token hint %q", s.TokenHint)
		}
	})

	t.Run("client configurations", func(t *testing.T) {
		want := map[string][]string{
			"claude-desktop": {`"mcp-remote"`, `"` + mcpURL + `"`, `"Authorization:${AUTH_HEADER}"`, "<your token>"},
			"cursor":         {`"url": "` + mcpURL + `"`, "${env:MCP_TOKEN}"},
			"vscode":         {`"type": "http"`, `"url": "` + mcpURL + `"`, "${input:mcp-bridge-token}"},
			"inspector":      {"@modelcontextprotocol/inspector", "--server-url '" + mcpURL + "'", "$MCP_TOKEN"},
			"curl":           {"'" + mcpURL + "'", "Mcp-Session-Id: $SID", "MCP-Protocol-Version: 2025-11-25", "tools/list"},
		}
		var ids []string
		for _, sn := range s.Snippets {
			ids = append(ids, sn.ID)
			if !sn.Visible || sn.Selected != "true" || sn.Title == "" || sn.Where == "" || sn.Note == "" {
				t.Errorf("%s: not shown when chosen: %+v", sn.ID, sn)
			}
			for _, w := range want[sn.ID] {
				if !strings.Contains(sn.Text, w) {
					t.Errorf("%s: lacks %q:\n%s", sn.ID, w, sn.Text)
				}
			}
			if strings.Contains(sn.Text, token) {
				t.Errorf("%s: holds the token", sn.ID)
			}
			if len(s.Snippets) > 0 && sn.ID == s.Snippets[len(s.Snippets)-1].ID && s.CopiedSnippet != sn.Text {
				t.Errorf("the copy button copied %q, want the %s configuration", s.CopiedSnippet, sn.ID)
			}
		}
		if got := strings.Join(ids, ","); got != "claude-desktop,cursor,vscode,inspector,curl" {
			t.Errorf("configurations %s", got)
		}
	})

	t.Run("server panel", func(t *testing.T) {
		for _, w := range []string{bin + " conformance-server --api-key=**** --verbose --token **** API_KEY=****", "per-session"} {
			if !strings.Contains(s.Server, w) {
				t.Errorf("the Server panel shows %q, want %q", s.Server, w)
			}
		}
	})

	t.Run("progress", func(t *testing.T) {
		if !s.Echo.ProgressHidden || len(s.Echo.ProgressLog) != 0 || !strings.Contains(s.Echo.Result, "hello from chromium") {
			t.Errorf("echo: progress hidden %v, shown and hidden %q (want never shown); result %q", s.Echo.ProgressHidden, s.Echo.ProgressLog, s.Echo.Result)
		}
		if !strings.Contains(s.Slow.During, "of 3") || !s.Slow.ProgressHidden || !slices.Equal(s.Slow.ProgressLog, []string{"shown", "hidden"}) {
			t.Errorf("slow: during %q, hidden after %v, log %q (want shown, hidden)", s.Slow.During, s.Slow.ProgressHidden, s.Slow.ProgressLog)
		}
		c := s.Cancel
		if !strings.Contains(c.Result, "slow cancelled") || !c.ProgressHidden || !c.CancelHidden || !c.CallEnabled || !slices.Equal(c.ProgressLog, []string{"shown", "hidden"}) {
			t.Errorf("cancel: %+v", c)
		}
		if !strings.Contains(s.Error.Result, "returned an error") || !s.Error.ProgressHidden || len(s.Error.ProgressLog) != 0 {
			t.Errorf("error: %+v", s.Error)
		}
	})

	t.Run("prompts", func(t *testing.T) {
		if !strings.Contains(s.Tabs, "Prompts (5)") || !strings.Contains(s.Tabs, "Resources (4)") {
			t.Errorf("tabs %q", s.Tabs)
		}
		if !strings.Contains(s.PromptList, "test_prompt_with_arguments") {
			t.Errorf("prompts %q", s.PromptList)
		}
		if !strings.Contains(s.Prompt.Form, "arg1 *") || !s.Prompt.Visible || !strings.Contains(s.Prompt.Result, "Prompt with arguments: arg1='alpha', arg2='beta'") || !strings.Contains(s.Prompt.Result, "USER") {
			t.Errorf("prompt: %+v", s.Prompt)
		}
		if !s.PromptImage.ImageVisible || !strings.Contains(s.PromptImage.Result, "Please analyze the image above.") {
			t.Errorf("prompt with an image: %+v", s.PromptImage)
		}
	})

	t.Run("resources", func(t *testing.T) {
		for _, w := range []string{"static-text", "static-binary", "watched-resource"} {
			if !strings.Contains(s.ResourceList, w) {
				t.Errorf("resources %q lack %s", s.ResourceList, w)
			}
		}
		if !strings.Contains(s.TemplateList, "template") {
			t.Errorf("templates %q", s.TemplateList)
		}
		if s.ResourceText.URI != "test://static-text" || !strings.Contains(s.ResourceText.Result, "This is the content of the static text resource.") {
			t.Errorf("text: %+v", s.ResourceText)
		}
		if s.ResourceBlob.URI != "test://static-binary" || !strings.Contains(s.ResourceBlob.Result, "(image/png)") || !s.ResourceBlob.ImageVisible || !s.ResourceBlob.ImageDecoded {
			t.Errorf("blob: %+v", s.ResourceBlob)
		}
		if s.ResourceTemplate.URI != "test://template/42/data" || !strings.Contains(s.ResourceTemplate.Result, `"Data for ID: 42"`) {
			t.Errorf("template: %+v", s.ResourceTemplate)
		}
		if s.Subscribed.Button != "Unsubscribe" || s.Subscribed.Pressed != "true" {
			t.Errorf("subscribed: %+v", s.Subscribed)
		}
		if !strings.Contains(s.Updated.Result, "revision 1") || !strings.Contains(s.Updated.Notifications, "notifications/resources/updated test://watched-resource") {
			t.Errorf("updated: %+v", s.Updated)
		}
		if s.Unsubscribed.Button != "Subscribe" || s.Unsubscribed.Pressed != "false" {
			t.Errorf("unsubscribed: %+v", s.Unsubscribed)
		}
	})

	t.Run("layout", func(t *testing.T) { checkScreens(t, "console", res, shots) })

	t.Run("no secret", func(t *testing.T) {
		all, _ := json.Marshal(res)
		for _, secret := range []string{token, apiKey, flagToken, envSecret} {
			if bytes.Contains(all, []byte(secret)) {
				t.Errorf("the page shows %q", secret)
			}
		}
		if strings.Contains(p.Stderr(), token) {
			t.Error("the bridge logged the token")
		}
	})
}

// TestWebPageSeveralServers: with --config, the Server panel shows each
// server's command, and the "Connect a client" panel each server's
// endpoints and configurations.
func TestWebPageSeveralServers(t *testing.T) {
	bin := testpeers.BuildGo(t, "./cmd/mcp-bridge")
	const secret = "pw-of-server-a"
	servers := filepath.Join(t.TempDir(), "servers.json")
	file, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"a": map[string]any{"command": bin, "args": []string{"demo-server", "--db-password", secret}},
		"b": map[string]any{"command": bin, "args": []string{"demo-server", "--name=b"}},
	}})
	if err := os.WriteFile(servers, file, 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBridge(t, environWithout(envPrefix), "--config", servers)
	res, shots := runWebui(t, map[string]any{"scenario": "several", "url": p.Base + "/"})
	s := res.Steps
	for _, w := range []string{"a\n" + bin + " demo-server --db-password ****", "b\n" + bin + " demo-server --name=b"} {
		if !strings.Contains(s.Server, w) {
			t.Errorf("the Server panel shows %q, want %q", s.Server, w)
		}
	}
	for _, tt := range []struct {
		name string
		got  uiCall
		want []string
	}{
		{"a", s.First, []string{p.Base + "/servers/a/mcp", p.Base + "/servers/a/sse", p.Base + "/servers/a/metrics", p.Base + "/healthz", `"a": {`}},
		{"b", s.Second, []string{p.Base + "/servers/b/mcp", p.Base + "/servers/b/sse", p.Base + "/servers/b/readyz", `"b": {`, `"url": "` + p.Base + `/servers/b/mcp"`}},
	} {
		for _, w := range tt.want {
			if !strings.Contains(tt.got.Endpoints+tt.got.Snippet, w) {
				t.Errorf("server %s: the panel lacks %q:\n%s\n%s", tt.name, w, tt.got.Endpoints, tt.got.Snippet)
			}
		}
		if strings.Contains(tt.got.Snippet, "Authorization") {
			t.Errorf("server %s needs no token, the configuration sends one:\n%s", tt.name, tt.got.Snippet)
		}
	}
	if all, _ := json.Marshal(res); bytes.Contains(all, []byte(secret)) {
		t.Error("the page shows the secret argument")
	}
	checkScreens(t, "several", res, shots)
}

// TestClientSnippetCurl runs the page's curl configuration, as a user
// would paste it into a shell, against a real bridge: initialize,
// notifications/initialized, tools/list and DELETE all succeed.
func TestClientSnippetCurl(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	token := randomToken()
	p := startBridge(t, append(environWithout(envPrefix), "CURL_TOKEN="+token), "--token-env", "CURL_TOKEN")
	resp, err := http.Get(p.Base + "/ui/clients.json?server=default&url=" + p.URL)
	if err != nil {
		t.Fatal(err)
	}
	var snippets []struct{ ID, Text string }
	err = json.NewDecoder(resp.Body).Decode(&snippets)
	resp.Body.Close()
	i := slices.IndexFunc(snippets, func(s struct{ ID, Text string }) bool { return s.ID == "curl" })
	if err != nil || i < 0 {
		t.Fatalf("no curl configuration: %v %+v", err, snippets)
	}
	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, sh, "-e", "-c", snippets[i].Text)
	cmd.Env = append(os.Environ(), "MCP_TOKEN="+token)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s\nstdout:\n%s\nstderr:\n%s", err, snippets[i].Text, stdout.Bytes(), stderr.Bytes())
	}
	// stderr: the initialize response (tee); stdout: tools/list.
	for _, w := range []string{"HTTP/1.1 200", "Mcp-Session-Id: ", `"serverInfo"`} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("initialize: no %q in\n%s", w, stderr.Bytes())
		}
	}
	if !strings.Contains(stdout.String(), `"name":"echo"`) {
		t.Errorf("tools/list: no echo in\n%s", stdout.Bytes())
	}
	waitLogged(t, p, `msg="session ended" session=\S+ reason="the session was deleted"`)
}
