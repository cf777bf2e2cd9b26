//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// TestRegistryUndoUnprivileged: a bridge run as nobody, whose config
// file it may read but not replace (the directory is root's), is asked
// for changes: each is undone, 500 saying why (the file could not be
// written), with the file as it was and the session of the server the
// change would have restarted on its child.
func TestRegistryUndoUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: cannot run the bridge as another user")
	}
	const nobody = 65534
	dir, err := os.MkdirTemp("", "mcp-bridge-registry-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin, child := filepath.Join(dir, "mcp-bridge"), filepath.Join(dir, "badchild")
	testpeers.CopyExecutable(t, testpeers.BuildGo(t, "./cmd/mcp-bridge"), bin)
	testpeers.CopyExecutable(t, testpeers.BuildGo(t, "./testdata/badchild"), child)
	file := filepath.Join(dir, "servers.json")
	q, _ := json.Marshal(child)
	before := []byte(`{"mcpServers": {"a": {"command": ` + string(q) + `}}}`)
	if err := os.WriteFile(file, before, 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(environWithout(envPrefix), "ADMIN_TOKEN="+regAdminToken)
	p := startBridgeAs(t, bridgeExec{bin: bin, dir: dir, attr: &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}},
		env, "--config", file, "--token-env", "ADMIN_TOKEN", "--registry-admin", "token:ADMIN_TOKEN", "--stop-grace", "500ms")
	rb := &registryBridge{bridgeProc: p, file: file, child: child}
	s := openSessionAs(t, p.Base+"/servers/a/mcp", regAdminToken)
	pid := s.intTool("pid")
	_, h, _ := rb.api(t, regAdminToken, "GET", "/a", "")
	for _, c := range []struct{ method, path, body string }{
		{"PATCH", "/a", `{"args": ["-stderr-at-start", "1"]}`},
		{"POST", "", `{"name": "b", "command": ` + string(q) + `}`},
		{"POST", "/a:disable", ""},
	} {
		code, _, body := rb.api(t, regAdminToken, c.method, c.path, c.body, "If-Match", h.Get("ETag"))
		if code != http.StatusInternalServerError || !strings.Contains(body, "the change is undone: the config file could not be written") || !strings.Contains(body, "permission denied") {
			t.Errorf("%s %s: %d %s, want 500 saying the change is undone and why", c.method, c.path, code, body)
		}
		if got := s.intTool("pid"); got != pid {
			t.Errorf("%s %s: the session of a is on child %d, want its child %d", c.method, c.path, got, pid)
		}
	}
	if after, _ := os.ReadFile(file); !bytes.Equal(after, before) {
		t.Errorf("the file changed:\n%s", after)
	}
	if _, _, body := rb.api(t, regAdminToken, "GET", "", ""); strings.Count(body, `"name"`) != 1 || !strings.Contains(body, `"health":{"status":"ready"}`) {
		t.Errorf("the servers after the undone changes: %s", body)
	}
	p.waitLog("the config file could not be written; the change is undone")
}
