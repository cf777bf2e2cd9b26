package main

// The registry API on a real bridge process: its web page in a real
// Chromium, the command line, changes under load with the load tool,
// a kill between the write and the rename of a save, a restart from the
// file it wrote, and a secret that appears in no output.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
// and removes it; a principal who is no admin sees nothing of it. The
// secret shows nowhere: not on the page, in its form, the bridge's log,
// the audit log or the file once the server is removed.
func TestWebRegistry(t *testing.T) {
	node, nodeModules := browserPeers(t)
	const secret, secret2 = "web-secret-value-0123456789", "web-secret-value-second-9876"
	rb := startRegistryBridge(t, `"a": {"command": "CHILD"}`, nil)
	shot := filepath.Join(os.TempDir(), "mcp-bridge-web-registry.png")
	plan, _ := json.Marshal(map[string]any{"url": rb.Base + "/", "userToken": regUserToken, "adminToken": regAdminToken,
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
