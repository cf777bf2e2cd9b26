package main

// Issue 10, what a new user meets at start: a command that cannot be found
// stops the bridge with a message naming it (point 8), and so does, in a
// --config file, a server whose command cannot be found, alone.

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

func TestCommandNotFound(t *testing.T) {
	bin := testpeers.BuildGo(t, "./cmd/mcp-bridge")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notexec"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"bare name not on PATH", []string{"--", "nonexistent-server"}, nil, `mcp-bridge: command "nonexistent-server" not found: no executable of that name in the server's PATH`},
		{"from MCP_BRIDGE_COMMAND", nil, []string{`MCP_BRIDGE_COMMAND=["nonexistent-server","--flag"]`}, `command "nonexistent-server" not found`},
		{"absolute path", []string{"--", filepath.Join(dir, "missing-server")}, nil, `command "` + filepath.Join(dir, "missing-server") + `" not found: no such file`},
		{"relative to --cwd", []string{"--cwd", dir, "--", "./missing-server"}, nil, `command "./missing-server" not found: no such file (relative to --cwd)`},
		{"not executable", []string{"--cwd", dir, "--", "./notexec"}, nil, `command "./notexec" is not an executable file`},
		// The server's PATH, not the bridge's: sh is on the bridge's.
		{"not on the server's PATH", []string{"--env", "PATH=" + dir, "--", "sh"}, nil, `command "sh" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out := runBridge(t, bin, tt.env, append([]string{"--port", "0"}, tt.args...)...)
			if code != 2 {
				t.Errorf("exit status %d, want 2", code)
			}
			if !strings.Contains(out, tt.want) {
				t.Errorf("stderr does not say %q:\n%s", tt.want, out)
			}
			if strings.Contains(out, "listening") {
				t.Errorf("the bridge listened before refusing:\n%s", out)
			}
		})
	}

	t.Run("found on the server's PATH only", func(t *testing.T) {
		t.Parallel()
		badchild := testpeers.BuildGo(t, "./testdata/badchild")
		pathDir := t.TempDir()
		if err := os.Symlink(badchild, filepath.Join(pathDir, "my-mcp-server")); err != nil {
			t.Fatal(err)
		}
		p := startBridge(t, environWithout(envPrefix), "--env", "PATH="+pathDir, "--", "my-mcp-server")
		s := openSession(t, p.URL)
		if got := s.textTool("env"); !strings.Contains(got, "PATH="+pathDir) {
			t.Errorf("the child's environment:\n%s\nwant PATH=%s", got, pathDir)
		}
	})
}

// TestServersCommandNotFound: in a --config file, a server whose command
// cannot be found is refused by name, at start and at reload, and the
// others serve; one already served keeps its settings and its sessions.
func TestServersCommandNotFound(t *testing.T) {
	t.Parallel()
	bin := testpeers.BuildGo(t, "./cmd/mcp-bridge")
	badchild := testpeers.BuildGo(t, "./testdata/badchild")
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	file := filepath.Join(t.TempDir(), "servers.json")
	write := func(servers string) {
		t.Helper()
		tmp := file + ".tmp"
		if err := os.WriteFile(tmp, []byte(`{"mcpServers": {`+servers+`}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, file); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("none can start", func(t *testing.T) {
		t.Parallel()
		none := filepath.Join(t.TempDir(), "none.json")
		if err := os.WriteFile(none, []byte(`{"mcpServers": {"a": {"command": "nonexistent-a"}, "b": {"command": "nonexistent-b"}}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		code, out := runBridge(t, bin, nil, "--port", "0", "--config", none)
		if code != 2 {
			t.Errorf("exit status %d, want 2", code)
		}
		for _, want := range []string{"none.json: no server can start", `server "a": command "nonexistent-a" not found`, `server "b": command "nonexistent-b" not found`} {
			if !strings.Contains(out, want) {
				t.Errorf("stderr does not say %q:\n%s", want, out)
			}
		}
	})

	write(`"good": {"command": ` + quote(badchild) + `}, "bad": {"command": "nonexistent-server"}`)
	p := startBridge(t, environWithout(envPrefix), "--config", file)
	url := func(name string) string { return p.Base + "/servers/" + name + "/mcp" }
	waitLogged(t, p, `level=ERROR msg="server refused; it is not served" server=bad err="command \\"nonexistent-server\\" not found`)
	waitLogged(t, p, `msg="servers loaded" config=\S+ added=good removed="" restarted="" unchanged="" refused=bad`)
	good := openSession(t, url("good"))
	goodPid := good.intTool("pid")
	if got := getStatus(t, url("bad")); got != http.StatusNotFound {
		t.Errorf("the refused server: status %d, want 404", got)
	}

	// The good server's command goes missing, the bad one's is fixed.
	write(`"good": {"command": "gone-missing"}, "bad": {"command": ` + quote(badchild) + `}`)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLogged(t, p, `msg="servers loaded" config=\S+ added=bad removed="" restarted="" unchanged=good refused=good`)
	waitLogged(t, p, `level=ERROR msg="server refused; it keeps its current settings" server=good err="command \\"gone-missing\\" not found`)
	if got := good.intTool("pid"); got != goodPid {
		t.Errorf("the good server's session is on child %d, want its child %d", got, goodPid)
	}
	if s := openSession(t, url("bad")); s.intTool("pid") <= 0 {
		t.Error("the fixed server does not serve")
	}
	if s := openSession(t, url("good")); s.intTool("pid") <= 0 {
		t.Error("the server kept with its current settings does not serve new sessions")
	}
}
