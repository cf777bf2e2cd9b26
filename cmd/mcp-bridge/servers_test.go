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
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

func TestServersFileInvalid(t *testing.T) {
	dir := t.TempDir()
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	environ := []string{
		"PATH=/usr/bin",
		"HOST_KEY=hostvalue",
		"GLOBAL_TOKEN=globaltokenvalue-0123456789",
		"SERVER_TOKEN=servertokenvalue-0123456789",
		"SAME_TOKEN=globaltokenvalue-0123456789",
		"SHORT_TOKEN=shortsecret",
	}
	tests := []struct {
		name    string
		args    []string // flags
		file    string
		want    []string // each must be in the error
		notWant []string // none may be: values, which could be secrets
	}{
		{name: "not JSON", file: `{"mcpServers": {"a": {"command": "x",}}}`, want: []string{"servers.json: not valid JSON (line 1, column"}},
		{name: "no mcpServers", file: `{"servers": {}}`, want: []string{`servers.json: no "mcpServers" object`}},
		{name: "mcpServers not an object", file: `{"mcpServers": ["a"]}`, want: []string{`"mcpServers" must be an object`}},
		{name: "server name", file: `{"mcpServers": {"a/b": {"command": "x"}}}`, want: []string{`servers.json: server name "a/b"`}},
		{name: "server name too long", file: `{"mcpServers": {"` + strings.Repeat("n", 65) + `": {"command": "x"}}}`, want: []string{"server name"}},
		{name: "no command", file: `{"mcpServers": {"github": {"args": ["x"]}}}`, want: []string{`servers.json: server "github": field "command": required`}},
		{name: "entry not an object", file: `{"mcpServers": {"github": "npx server"}}`, want: []string{`server "github": want an object`}, notWant: []string{"npx server"}},
		{name: "unknown field", file: `{"mcpServers": {"github": {"command": "x", "idle_timeout": "5m"}}}`, want: []string{`server "github": field "idle_timeout": unknown field`}},
		{
			name:    "args of the wrong type",
			file:    `{"mcpServers": {"github": {"command": "x", "args": "--token=supersecret"}}}`,
			want:    []string{`server "github": field "args": want an array of strings`},
			notWant: []string{"supersecret"},
		},
		{
			name:    "env value of the wrong type",
			file:    `{"mcpServers": {"github": {"command": "x", "env": {"TOKEN": 987654321}}}}`,
			want:    []string{`server "github": field "env": want an object whose values are strings`},
			notWant: []string{"987654321"},
		},
		{
			name:    "env with a bad name",
			file:    `{"mcpServers": {"github": {"command": "x", "env": {"BAD-NAME": "supersecret"}}}}`,
			want:    []string{`server "github": field "env": "BAD-NAME" is not a valid variable name`},
			notWant: []string{"supersecret"},
		},
		{
			name:    "env of the bridge's own prefix",
			file:    `{"mcpServers": {"github": {"command": "x", "env": {"MCP_BRIDGE_PORT": "supersecret"}}}}`,
			want:    []string{`server "github": field "env": "MCP_BRIDGE_PORT" is named like the bridge's own settings`},
			notWant: []string{"supersecret"},
		},
		// A name that is not set is not shown: it may be the secret,
		// written where its variable's name belongs.
		{name: "envFrom unset", file: `{"mcpServers": {"github": {"command": "x", "envFrom": {"KEY": "ghp_NotSetAnywhere0123456789"}}}}`, want: []string{`server "github": field "envFrom": KEY: the variable it names is not set in the bridge's environment: give the NAME of a variable`}, notWant: []string{"ghp_NotSetAnywhere0123456789"}},
		{name: "envFrom bad source", file: `{"mcpServers": {"github": {"command": "x", "envFrom": {"KEY": "not a name"}}}}`, want: []string{`field "envFrom": KEY:`}},
		{
			name:    "envFrom of a --token-env variable",
			args:    []string{"--token-env", "GLOBAL_TOKEN"},
			file:    `{"mcpServers": {"github": {"command": "x", "envFrom": {"KEY": "GLOBAL_TOKEN"}}}}`,
			want:    []string{`server "github": field "envFrom": KEY: GLOBAL_TOKEN holds a token of the bridge`},
			notWant: []string{"globaltokenvalue"},
		},
		{
			name:    "envFrom of another server's token variable",
			file:    `{"mcpServers": {"a": {"command": "x", "tokenEnvs": ["SERVER_TOKEN"]}, "b": {"command": "x", "envFrom": {"KEY": "SERVER_TOKEN"}}}}`,
			want:    []string{`server "b": field "envFrom": KEY: SERVER_TOKEN holds a token of the bridge`},
			notWant: []string{"servertokenvalue"},
		},
		{name: "envFrom and env both set one variable", file: `{"mcpServers": {"github": {"command": "x", "env": {"KEY": "a"}, "envFrom": {"KEY": "HOST_KEY"}}}}`, want: []string{`field "envFrom": KEY is in "env" too`}, notWant: []string{"hostvalue"}},
		{name: "remote server", file: `{"mcpServers": {"remote": {"url": "https://example.com/mcp"}}}`, want: []string{`server "remote": field "url"`}, notWant: []string{"example.com"}},
		{name: "type", file: `{"mcpServers": {"remote": {"type": "sse", "command": "x"}}}`, want: []string{`server "remote": field "type"`}},
		{name: "cwd not a directory", file: `{"mcpServers": {"a": {"command": "x", "cwd": "` + notDir + `"}}}`, want: []string{`server "a": field "cwd": not a directory`}, notWant: []string{notDir}},
		{name: "mode", file: `{"mcpServers": {"a": {"command": "x", "mode": "bogus"}}}`, want: []string{`server "a": field "mode": want per-session, shared or per-identity`}},
		{name: "claim-env with a shared server", args: []string{"--claim-env", "sub=USER"}, file: `{"mcpServers": {"a": {"command": "x", "mode": "shared"}}}`, want: []string{`server "a": field "mode": --claim-env`}},
		{name: "prespawn negative", file: `{"mcpServers": {"a": {"command": "x", "prespawn": -1}}}`, want: []string{`server "a": field "prespawn": must not be negative`}},
		{name: "prespawn of a shared server", file: `{"mcpServers": {"a": {"command": "x", "mode": "shared", "prespawn": 2}}}`, want: []string{`server "a": field "prespawn": a warm pool serves per-session mode only`}},
		{name: "prespawn not an integer", file: `{"mcpServers": {"a": {"command": "x", "prespawn": 1.5}}}`, want: []string{`server "a": field "prespawn": want an integer`}},
		{name: "idle timeout", file: `{"mcpServers": {"a": {"command": "x", "idleTimeout": "forever"}}}`, want: []string{`server "a": field "idleTimeout": want a duration`}, notWant: []string{"forever"}},
		{name: "idle timeout zero", file: `{"mcpServers": {"a": {"command": "x", "idleTimeout": "0s"}}}`, want: []string{`server "a": field "idleTimeout"`}},
		{name: "max sessions", file: `{"mcpServers": {"a": {"command": "x", "maxSessions": 0}}}`, want: []string{`server "a": field "maxSessions": must be greater than zero`}},
		{name: "token variable unset", file: `{"mcpServers": {"a": {"command": "x", "tokenEnvs": ["NO_SUCH_TOKEN"]}}}`, want: []string{`server "a": field "tokenEnvs": the name given is not a variable set in the environment: give the NAME of a variable`}, notWant: []string{"NO_SUCH_TOKEN"}},
		{name: "token variable of the bridge's prefix", file: `{"mcpServers": {"a": {"command": "x", "tokenEnvs": ["MCP_BRIDGE_TOKEN"]}}}`, want: []string{`server "a": field "tokenEnvs"`}},
		{
			name:    "token too short",
			file:    `{"mcpServers": {"a": {"command": "x", "tokenEnvs": ["SHORT_TOKEN"]}}}`,
			want:    []string{`server "a": field "tokenEnvs": the token in SHORT_TOKEN is shorter than`},
			notWant: []string{"shortsecret"},
		},
		{
			name:    "token equal to a --token-env token",
			args:    []string{"--token-env", "GLOBAL_TOKEN"},
			file:    `{"mcpServers": {"a": {"command": "x", "tokenEnvs": ["SAME_TOKEN"]}}}`,
			want:    []string{`server "a": field "tokenEnvs": token variables GLOBAL_TOKEN and SAME_TOKEN hold the same token`},
			notWant: []string{"globaltokenvalue"},
		},
		{name: "tool rule", file: `{"mcpServers": {"a": {"command": "x", "toolDeny": ["no-equals"]}}}`, want: []string{`server "a": field "toolDeny": tool rule`}},
		{
			name: "every error at once",
			file: `{"mcpServers": {"a": {"command": "", "mode": "bogus"}, "b": {"command": "x", "maxSessions": -1}, "c": {"command": "x"}}}`,
			want: []string{`server "a": field "command"`, `server "a": field "mode"`, `server "b": field "maxSessions"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := loadConfig(append([]string{"--config", "servers.json"}, tt.args...), envMap(environ), io.Discard)
			if err != nil {
				t.Fatalf("flags: %v", err)
			}
			specs, err := parseServers("servers.json", []byte(tt.file), &cfg, environ)
			if err == nil {
				t.Fatalf("accepted, want an error; servers: %+v", specs)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not say %q:\n%v", w, err)
				}
			}
			for _, nw := range tt.notWant {
				if strings.Contains(err.Error(), nw) {
					t.Errorf("the error shows the value %q:\n%v", nw, err)
				}
			}
		})
	}
}

// TestServersFileResolved checks what a valid file resolves to: the
// flags give the defaults, single values replace them, env adds to
// --env, and a token or a variable given by envFrom reaches no child by
// inheritance.
func TestServersFileResolved(t *testing.T) {
	environ := []string{
		"PATH=/usr/bin",
		"OTHER=visible",
		"HIDDEN=by-hide-env",
		"HOST_API_KEY=k3y",
		"A_TOKEN=aaaaaaaaaaaaaaaaaaaaaaaa",
		"GLOBAL_TOKEN=gggggggggggggggggggggggg",
		"MCP_BRIDGE_QUEUE_LIMIT=77",
	}
	args := []string{"--config", "servers.json", "--env", "SHARED=flag", "--env", "FLAGONLY=1",
		"--prespawn", "2", "--hide-env", "HIDDEN", "--token-env", "GLOBAL_TOKEN", "--tool-deny", "*=rm"}
	cfg, err := loadConfig(args, envMap(environ), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	file := `{
	  "globalShortcut": "ignored: a client's whole config file may be given",
	  "mcpServers": {
	    "a": {"type": "stdio", "command": "srv", "args": ["--x", "y z"], "cwd": "` + t.TempDir() + `",
	          "env": {"PLAIN": "literal", "SHARED": "server"}, "envFrom": {"API_KEY": "HOST_API_KEY"},
	          "mode": "shared", "idleTimeout": "5m", "maxSessions": 3,
	          "tokenEnvs": ["A_TOKEN"], "toolAllow": ["*=echo"]},
	    "b": {"command": "other"},
	    "off": {"disabled": true}
	  }
	}`
	specs, err := parseServers("servers.json", []byte(file), &cfg, environ)
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 || specs[0].Name != "a" || specs[1].Name != "b" {
		t.Fatalf("servers: %+v, want a and b (off is disabled)", specs)
	}
	a, b := specs[0], specs[1]
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"a: command", a.Command, []string{"srv", "--x", "y z"}},
		{"a: mode", a.Mode, "shared"},
		{"a: prespawn (--prespawn is for per-session servers)", a.Prespawn, 0},
		{"a: idle timeout", a.IdleTimeout, 5 * time.Minute},
		{"a: max sessions", a.MaxSessions, 3},
		{"a: token variables", a.TokenEnvs, []string{"A_TOKEN"}},
		{"a: tool allow", a.ToolAllow, []string{"*=echo"}},
		{"b: command", b.Command, []string{"other"}},
		{"b: mode", b.Mode, "per-session"},
		{"b: prespawn", b.Prespawn, 2},
		{"b: idle timeout", b.IdleTimeout, 30 * time.Minute},
		{"b: max sessions", b.MaxSessions, 1000},
	} {
		if !equalJSON(c.got, c.want) {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
	envOf := func(s serverSpec) map[string][]string {
		m := map[string][]string{}
		for _, kv := range s.Env {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = append(m[k], v)
		}
		return m
	}
	for _, c := range []struct {
		spec serverSpec
		want map[string]string // "" for absent
	}{
		{a, map[string]string{"PATH": "/usr/bin", "OTHER": "visible", "FLAGONLY": "1", "SHARED": "server", "PLAIN": "literal", "API_KEY": "k3y",
			"HOST_API_KEY": "", "A_TOKEN": "", "GLOBAL_TOKEN": "", "HIDDEN": "", "MCP_BRIDGE_QUEUE_LIMIT": ""}},
		{b, map[string]string{"PATH": "/usr/bin", "OTHER": "visible", "FLAGONLY": "1", "SHARED": "flag",
			"PLAIN": "", "API_KEY": "", "HOST_API_KEY": "", "A_TOKEN": "", "GLOBAL_TOKEN": "", "HIDDEN": ""}},
	} {
		got := envOf(c.spec)
		for k, want := range c.want {
			switch v := got[k]; {
			case want == "" && v != nil:
				t.Errorf("server %s: the child sees %s", c.spec.Name, k)
			case want != "" && !slices.Equal(v, []string{want}):
				t.Errorf("server %s: the child's %s: %q, want exactly [%q]", c.spec.Name, k, v, want)
			}
		}
	}
	if a.fingerprint() == b.fingerprint() {
		t.Error("two different servers have the same fingerprint")
	}
	again, err := parseServers("servers.json", []byte(file), &cfg, environ)
	if err != nil || again[0].fingerprint() != a.fingerprint() {
		t.Errorf("the same file resolves to another fingerprint (%v)", err)
	}
}

func equalJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

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
	if want := p.Base + "/servers/{name}/mcp"; p.URL != want {
		t.Errorf("the bridge logged it listens at %s, want %s", p.URL, want)
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
