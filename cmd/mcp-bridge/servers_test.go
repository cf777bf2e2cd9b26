package main

// Tests of --config: the file is checked with messages that name the
// server and the field and never a value; a real bridge serves each
// server at its own path; SIGHUP adds, removes and restarts servers and
// leaves the sessions and children of the others alone.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// TestServersReload runs a bridge with a config file of four servers,
// rewrites the file and sends SIGHUP.
func TestServersReload(t *testing.T) {
	t.Parallel()
	bin := testpeers.BuildGo(t, "./cmd/mcp-bridge")
	badchild := testpeers.BuildGo(t, "./testdata/badchild")
	file := filepath.Join(t.TempDir(), "servers.json")
	write := func(servers string) {
		t.Helper()
		// Written aside and renamed in, as an editor or a config
		// manager would: a reload never reads half a file.
		tmp := file + ".tmp"
		if err := os.WriteFile(tmp, []byte(`{"mcpServers": {`+servers+`}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, file); err != nil {
			t.Fatal(err)
		}
	}
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	demo := `"demo": {"command": ` + quote(bin) + `, "args": ["demo-server"]}`
	same := `"same": {"command": ` + quote(badchild) + `}`
	write(demo + `, ` + same + `,
		"gone": {"command": ` + quote(badchild) + `},
		"changed": {"command": ` + quote(badchild) + `, "env": {"VERSION": "1"}}`)

	p := startBridge(t, environWithout(envPrefix), "--config", file, "--stop-grace", "500ms")
	url := func(name string) string { return p.Base + "/servers/" + name + "/mcp" }
	if want := url("changed"); p.URL != want {
		t.Errorf("the bridge logged the first server at %s, want %s", p.URL, want)
	}
	pid := p.cmd.Process.Pid

	demoS := openSession(t, url("demo"))
	echo := func(s *rawSession) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
		defer cancel()
		r, err := s.call(ctx, "echo", map[string]any{"message": "hi"})
		if err != nil || r.Error != nil {
			t.Fatalf("echo on %s: %v %s", s.url, err, r.raw)
		}
	}
	echo(demoS)
	sameS := openSession(t, url("same"))
	samePid := sameS.intTool("pid")
	goneS := openSession(t, url("gone"))
	gonePid := goneS.intTool("pid")
	changedS := openSession(t, url("changed"))
	changedPid := changedS.intTool("pid")
	if env := changedS.textTool("env"); !slices.Contains(strings.Split(env, "\n"), "VERSION=1") {
		t.Fatalf("the changed server's child does not have VERSION=1:\n%s", env)
	}
	if got := getStatus(t, p.Base+"/servers/nope/mcp"); got != http.StatusNotFound {
		t.Errorf("an unknown server: status %d, want 404", got)
	}

	write(demo + `, ` + same + `,
		"changed": {"command": ` + quote(badchild) + `, "env": {"VERSION": "2"}},
		"added": {"command": ` + quote(badchild) + `}`)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLogged(t, p, `msg="servers loaded" config=\S+ added=added removed=gone restarted=changed unchanged=demo,same`)
	// A reload logs where the servers it starts are served.
	for _, name := range []string{"added", "changed"} {
		waitLogged(t, p, `msg="serving MCP endpoint" server=`+name+` url=`+regexp.QuoteMeta(url(name)))
	}

	t.Run("removed", func(t *testing.T) {
		if got := goneS.status(`{"jsonrpc":"2.0","id":50,"method":"ping"}`); got != http.StatusNotFound {
			t.Errorf("a session of the removed server: status %d, want 404", got)
		}
		fresh := &rawSession{t: t, url: url("gone"), hc: http.DefaultClient}
		if got := fresh.status(initializeBody); got != http.StatusNotFound {
			t.Errorf("initialize on the removed server: status %d, want 404", got)
		}
		waitGone(t, gonePid, pid)
	})
	t.Run("changed", func(t *testing.T) {
		if got := changedS.status(`{"jsonrpc":"2.0","id":50,"method":"ping"}`); got != http.StatusNotFound {
			t.Errorf("a session of the old server: status %d, want 404", got)
		}
		waitGone(t, changedPid, pid)
		s := openSession(t, url("changed"))
		if env := s.textTool("env"); !slices.Contains(strings.Split(env, "\n"), "VERSION=2") {
			t.Errorf("the restarted server's child does not have VERSION=2:\n%s", env)
		}
	})
	t.Run("unchanged", func(t *testing.T) {
		if got := sameS.intTool("pid"); got != samePid {
			t.Errorf("the unchanged server's session is on child %d, want the same child %d", got, samePid)
		}
		echo(demoS)
	})
	t.Run("added", func(t *testing.T) {
		if s := openSession(t, url("added")); s.intTool("pid") <= 0 {
			t.Error("no pid from the added server")
		}
	})
	t.Run("readiness", func(t *testing.T) {
		if got := getStatus(t, p.Base+"/readyz"); got != http.StatusOK {
			t.Errorf("/readyz: status %d, want 200", got)
		}
		if got := getStatus(t, p.Base+"/servers/added/readyz"); got != http.StatusOK {
			t.Errorf("/servers/added/readyz: status %d, want 200", got)
		}
		if got := getStatus(t, p.Base+"/servers/gone/readyz"); got != http.StatusNotFound {
			t.Errorf("/servers/gone/readyz: status %d, want 404", got)
		}
	})

	t.Run("invalid file", func(t *testing.T) {
		// Valid, this file would remove every server but "same".
		write(`"same": {"command": ` + quote(badchild) + `, "env": {"BAD-NAME": "supersecretvalue"}}`)
		if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		waitLogged(t, p, `msg="reload failed; the servers stay as they were"`)
		if log := p.Stderr(); !strings.Contains(log, `server \"same\": field \"env\": \"BAD-NAME\" is not a valid variable name`) {
			t.Errorf("the log does not name the server and the field:\n%s", log)
		}
		if strings.Contains(p.Stderr(), "supersecretvalue") {
			t.Error("the log shows a value of the file")
		}
		if got := sameS.intTool("pid"); got != samePid {
			t.Errorf("after a failed reload the session is on child %d, want %d", got, samePid)
		}
		echo(demoS)
	})

	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Errorf("mcp-bridge after SIGTERM: %v, want exit status 0", err)
	}
	waitGone(t, samePid, pid)
}

func getStatus(t *testing.T, url string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestServersConfigRefused: the bridge does not start on a config it
// cannot serve, and says why without a value.
func TestServersConfigRefused(t *testing.T) {
	t.Parallel()
	bin := testpeers.BuildGo(t, "./cmd/mcp-bridge")
	dir := t.TempDir()
	invalid := filepath.Join(dir, "invalid.json")
	if err := os.WriteFile(invalid, []byte(`{"mcpServers": {"github": {"args": ["--token", "supersecret"], "env": {"BAD-NAME": "supersecret"}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"invalid file", []string{"--config", invalid}, []string{`server "github": field "command": required`, `server "github": field "env"`}},
		{"missing file", []string{"--config", filepath.Join(dir, "none.json")}, []string{"--config / MCP_BRIDGE_CONFIG", "no such file"}},
		{"file and command", []string{"--config", invalid, "--", "server"}, []string{"--config / MCP_BRIDGE_CONFIG", "not both"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := runBridge(t, bin, nil, append([]string{"--port", "0"}, tt.args...)...)
			if code != 2 {
				t.Errorf("exit status %d, want 2:\n%s", code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("the bridge does not say %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "supersecret") {
				t.Errorf("the bridge shows a value of the file:\n%s", out)
			}
		})
	}
}

// TestServersTokens: a server's tokenEnvs lock that server alone, its
// protected-resource metadata names its own endpoint, and no child sees
// a token.
func TestServersTokens(t *testing.T) {
	t.Parallel()
	badchild := testpeers.BuildGo(t, "./testdata/badchild")
	file := filepath.Join(t.TempDir(), "servers.json")
	cmd, _ := json.Marshal(badchild)
	if err := os.WriteFile(file, []byte(`{"mcpServers": {
		"locked": {"command": `+string(cmd)+`, "tokenEnvs": ["LOCK_TOKEN"]},
		"open": {"command": `+string(cmd)+`}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	const token = "lock-token-0123456789abcdef"
	p := startBridge(t, append(environWithout(envPrefix), "LOCK_TOKEN="+token), "--config", file)

	initialize := func(name, bearer string) *http.Response {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
		t.Cleanup(cancel)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.Base+"/servers/"+name+"/mcp", strings.NewReader(initializeBody))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	resp := initialize("locked", "")
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("locked server without a token: status %d, want 401", resp.StatusCode)
	}
	meta := p.Base + "/.well-known/oauth-protected-resource/servers/locked/mcp"
	if got := resp.Header.Get("WWW-Authenticate"); !strings.Contains(got, `resource_metadata="`+meta+`"`) {
		t.Errorf("challenge %q does not point at %s", got, meta)
	}
	mresp, err := http.Get(meta)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Resource string `json:"resource"`
	}
	_ = json.NewDecoder(mresp.Body).Decode(&doc)
	mresp.Body.Close()
	if want := p.Base + "/servers/locked/mcp"; mresp.StatusCode != http.StatusOK || doc.Resource != want {
		t.Errorf("metadata: status %d, resource %q, want 200 and %q", mresp.StatusCode, doc.Resource, want)
	}
	if got := initialize("locked", token).StatusCode; got != http.StatusOK {
		t.Errorf("locked server with its token: status %d, want 200", got)
	}
	if got := initialize("open", "").StatusCode; got != http.StatusOK {
		t.Errorf("open server without a token: status %d, want 200", got)
	}
	s := openSession(t, p.Base+"/servers/open/mcp")
	if env := s.textTool("env"); strings.Contains(env, "LOCK_TOKEN") || strings.Contains(env, token) {
		t.Error("the open server's child sees the locked server's token")
	}
}
