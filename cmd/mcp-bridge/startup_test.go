package main

// What a new user meets at start: a command that cannot be found stops
// the bridge with a message naming it, and in a --config file such a
// server is refused alone; version and --version, and no stray word taken
// for the command; no error shows a value.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
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

// TestVersion: mcp-bridge version and --version print the version, the
// commit and the Go version, and a release build's stamped version wins.
func TestVersion(t *testing.T) {
	bin := testpeers.BuildGo(t, "./cmd/mcp-bridge")
	line := regexp.MustCompile(`^mcp-bridge (\S+) \(commit [^)]+\) (go\S+) (\S+/\S+)\n$`)
	for _, args := range [][]string{{"version"}, {"--version"}, {"--port", "0", "--version"}} {
		code, out := runBridge(t, bin, nil, args...)
		m := line.FindStringSubmatch(out)
		if code != 0 || m == nil || m[2] != runtime.Version() || m[3] != runtime.GOOS+"/"+runtime.GOARCH {
			t.Errorf("mcp-bridge %s: exit status %d, output %q; want one line: mcp-bridge VERSION (commit ...) %s %s/%s",
				strings.Join(args, " "), code, out, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		}
	}

	stamped := filepath.Join(t.TempDir(), "mcp-bridge")
	build := exec.Command("go", "build", "-ldflags", "-X main.version=v1.2.3-test", "-o", stamped, "./cmd/mcp-bridge")
	build.Dir = testpeers.ModuleRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if code, out := runBridge(t, stamped, nil, "version"); code != 0 || !strings.HasPrefix(out, "mcp-bridge v1.2.3-test (commit ") {
		t.Errorf("a build stamped with -X main.version=v1.2.3-test: exit status %d, %q", code, out)
	}
}

func TestVersionLine(t *testing.T) {
	info := func(version string, settings ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/mcp-bridge/mcp-bridge", Version: version}}
		for i := 0; i+1 < len(settings); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return bi
	}
	goVersion := ") " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
	tests := []struct {
		name    string
		stamped string
		bi      *debug.BuildInfo
		want    string
	}{
		{"no build info", "", nil, "mcp-bridge devel (commit unknown" + goVersion},
		{"a local build", "", info("(devel)"), "mcp-bridge devel (commit unknown" + goVersion},
		{"the module version", "", info("v0.3.0", "vcs.revision", "0123abcd", "vcs.modified", "false"), "mcp-bridge v0.3.0 (commit 0123abcd" + goVersion},
		{"a modified tree", "", info("(devel)", "vcs.revision", "0123abcd", "vcs.modified", "true"), "mcp-bridge devel (commit 0123abcd, modified" + goVersion},
		{"the stamped version wins", "v1.2.3", info("v0.3.0", "vcs.revision", "0123abcd"), "mcp-bridge v1.2.3 (commit 0123abcd" + goVersion},
	}
	for _, tt := range tests {
		if got := versionLine(tt.stamped, tt.bi); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestStrayWords: a word before -- is refused with a message saying the
// command goes after --, instead of becoming the command; the command after
// -- and MCP_BRIDGE_COMMAND still work.
func TestStrayWords(t *testing.T) {
	bin := testpeers.BuildGo(t, "./cmd/mcp-bridge")
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"version after a flag", []string{"--port", "0", "version"}, []string{`"version" is not a flag: the MCP server's command goes after --`, "mcp-bridge version"}},
		{"a command without --", []string{"--port", "0", "npx", "-y", "server-everything"}, []string{`"npx" is not a flag: the MCP server's command goes after --, as in mcp-bridge [flags] -- npx`}},
		{"a value after a true/false flag", []string{"--port", "0", "--stateless", "false"}, []string{"--stateless takes no separate value", "--stateless=false"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out := runBridge(t, bin, nil, tt.args...)
			if code != 2 {
				t.Errorf("exit status %d, want 2", code)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("stderr does not say %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "listening") || strings.Contains(out, "Usage:") {
				t.Errorf("want one line of error, not a bridge or the whole help:\n%s", out)
			}
		})
	}
	t.Run("MCP_BRIDGE_COMMAND", func(t *testing.T) {
		t.Parallel()
		badchild := testpeers.BuildGo(t, "./testdata/badchild")
		cmd, _ := json.Marshal([]string{badchild})
		p := startBridge(t, append(environWithout(envPrefix), "MCP_BRIDGE_COMMAND="+string(cmd)))
		if pid := openSession(t, p.URL).intTool("pid"); pid <= 0 {
			t.Errorf("the command of MCP_BRIDGE_COMMAND does not serve")
		}
	})
}

// TestFlagErrorsShowNoValue: for every flag, given as a flag and as its
// variable, a bad value that looks like a token is refused with a message
// naming the flag and the variable, and the value never appears; flags that
// take a variable's name say so. The flag package's own messages (which
// quote the value) and its whole usage are never printed.
func TestFlagErrorsShowNoValue(t *testing.T) {
	bin := testpeers.BuildGo(t, "./cmd/mcp-bridge")
	// Token-shaped, and with an underscore, so it is no host name either.
	const secret = "sEcReT_t0k3n_0123456789abcdef"
	jwt := []string{"--jwt-issuer", "https://issuer.example", "--public-url", "https://bridge.example/mcp"}
	type badValue struct {
		value string
		extra []string // more flags, so that the check of this one is reached
		want  string   // besides the flag and the variable
	}
	nameHint := "NAME of a variable"
	values := map[string]badValue{
		"host":              {value: secret},
		"path":              {value: secret},
		"sse-path":          {value: secret},
		"message-path":      {value: secret},
		"config":            {value: "/nonexistent/" + secret},
		"mode":              {value: secret},
		"claim-env":         {value: secret, want: nameHint},
		"cwd":               {value: "/nonexistent/" + secret},
		"env":               {value: "BAD-NAME=" + secret},
		"hide-env":          {value: "bad-" + secret, want: nameHint},
		"response-mode":     {value: secret},
		"allow-origin":      {value: secret},
		"log-format":        {value: secret},
		"log-level":         {value: secret},
		"token-env":         {value: secret, want: nameHint},
		"jwt-secret-env":    {value: secret, extra: jwt, want: nameHint},
		"jwt-public-key":    {value: "/nonexistent/" + secret, extra: jwt},
		"jwks-url":          {value: "https://127.0.0.1:1/jwks?key=" + secret, extra: jwt},
		"jwt-issuer":        {value: secret},
		"jwt-audience":      {value: secret},
		"require-scope":     {value: secret},
		"public-url":        {value: secret},
		"auth-server":       {value: secret},
		"tool-allow":        {value: secret},
		"tool-deny":         {value: secret},
		"tool-approve":      {value: secret},
		"approver":          {value: secret},
		"audit-log":         {value: "/nonexistent/" + secret},
		"admin":             {value: secret},
		"registry-admin":    {value: secret},
		"metrics-token-env": {value: secret, want: nameHint},
		"containment":       {value: secret},
		"child-protocol":    {value: secret},
		"replica-id":        {value: "bad." + secret},
		"sandbox":           {value: secret},
		"sandbox-read":      {value: "/nonexistent/" + secret},
		"sandbox-write":     {value: "/nonexistent/" + secret},
		"sandbox-exec":      {value: "/nonexistent/" + secret},
		"sandbox-net":       {value: secret},
		"sandbox-limit":     {value: "mem=" + secret},
		"pin-sha256":        {value: secret},
	}
	var tests []refusal
	ct := reflect.TypeFor[Config]()
	for i := range ct.NumField() {
		f := ct.Field(i)
		name, variable := f.Tag.Get("flag"), envPrefix+f.Tag.Get("env")
		if name == "" || name == "-" {
			continue
		}
		bv := badValue{value: secret}
		switch f.Type.Kind() {
		case reflect.String, reflect.Slice:
			var ok bool
			if bv, ok = values[name]; !ok {
				t.Errorf("no bad value for --%s: add one to this test", name)
				continue
			}
		}
		want := []string{"--" + name + " / " + variable}
		if bv.want != "" {
			want = append(want, bv.want)
		}
		notWant := []string{secret, "Usage:", "invalid value"}
		tests = append(tests,
			refusal{name: "--" + name, args: append([]string{"--port", "0", "--" + name + "=" + bv.value}, bv.extra...), want: want, notWant: notWant},
			refusal{name: variable, env: []string{variable + "=" + bv.value}, args: append([]string{"--port", "0"}, bv.extra...), want: want, notWant: notWant},
		)
	}
	tests = append(tests,
		refusal{name: "a token given to --token-env", args: []string{"--token-env", "sk-" + secret + "=="}, want: []string{"--token-env / MCP_BRIDGE_TOKEN_ENVS", nameHint}, notWant: []string{secret}},
		refusal{name: "the second of two --token-env", env: []string{"A_TOKEN=" + tokenAlice}, args: []string{"--token-env", "A_TOKEN", "--token-env", secret}, want: []string{"2nd name given", nameHint}, notWant: []string{secret}},
		refusal{name: "an unknown flag with a value", args: []string{"--tokne-env=" + secret}, want: []string{"unknown flag --tokne-env (did you mean --token-env?); run mcp-bridge --help"}, notWant: []string{secret, "Usage:"}},
		refusal{name: "an unknown flag that is a token", args: []string{"--" + secret}, want: []string{"unknown flag; run mcp-bridge --help"}, notWant: []string{secret, "Usage:"}},
		refusal{name: "a value after a true/false flag", args: []string{"--stateless", secret}, want: []string{"--stateless takes no separate value"}, notWant: []string{secret}},
	)
	checkRefusals(t, bin, tests)

	t.Run("--help shows no value of the environment", func(t *testing.T) {
		t.Parallel()
		code, out := runBridge(t, bin, []string{"MCP_BRIDGE_ENV=API_KEY=" + secret, "MCP_BRIDGE_TOKEN_ENVS=" + secret}, "--help")
		if code != 0 || !strings.Contains(out, "Usage:") || strings.Contains(out, secret) {
			t.Errorf("--help: exit status %d; shows the value: %v\n%s", code, strings.Contains(out, secret), out)
		}
	})
}

// TestStartupLogMasksSecrets: the startup line that names the server's
// command shows a secret-looking argument masked, as the web page does;
// the secret is nowhere in the log.
func TestStartupLogMasksSecrets(t *testing.T) {
	badchild := testpeers.BuildGo(t, "./testdata/badchild")
	const secret = "sEcReT_t0k3n_0123456789abcdef"
	p := startBridge(t, nil, "--", badchild, "-banner", "--", "--api-key="+secret) // badchild ignores what follows its own --
	openSession(t, p.URL).intTool("pid")
	p.stop()
	log := p.Stderr()
	if strings.Contains(log, secret) {
		t.Errorf("the log shows the secret argument:\n%s", log)
	}
	if !strings.Contains(log, "--api-key=") {
		t.Errorf("the log does not name the masked argument:\n%s", log)
	}
}

// TestStartupURLs: on start the bridge logs, as full URLs a person can
// paste, what it serves, and each answers: an MCP endpoint starts a
// session, the legacy stream opens, the web page and /metrics are 200.
// With --config it names every server's own URLs (no template), and the
// one /metrics holds every server's metrics, labelled by server. What is
// turned off is not announced.
func TestStartupURLs(t *testing.T) {
	bin := testpeers.BuildGo(t, "./cmd/mcp-bridge")
	badchild := testpeers.BuildGo(t, "./testdata/badchild")
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	file := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(file, []byte(`{"mcpServers": {
		"bad": {"command": `+quote(badchild)+`},
		"demo": {"command": `+quote(bin)+`, "args": ["demo-server"], "mode": "shared"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string // paths announced, in order
	}{
		{"default", nil, []string{"/mcp", "/sse", "/", "/metrics"}},
		{"no page, no legacy", []string{"--web=false", "--legacy-sse=false"}, []string{"/mcp", "/metrics"}},
		{"--config", []string{"--config", file}, []string{"/servers/bad/mcp", "/servers/bad/sse", "/servers/demo/mcp", "/servers/demo/sse", "/", "/metrics"}},
		{"--config, no page, no legacy", []string{"--config", file, "--web=false", "--legacy-sse=false"}, []string{"/servers/bad/mcp", "/servers/demo/mcp", "/metrics"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := startBridge(t, environWithout(envPrefix), tc.args...)
			out := p.waitLog("also serving metrics")
			re := regexp.MustCompile(`msg="([^"]+)"(?: \S+=\S+)* url=(\S+)`)
			var got []string
			for _, m := range re.FindAllStringSubmatch(out, -1) {
				msg, u := m[1], m[2]
				got = append(got, strings.TrimPrefix(u, p.Base))
				if strings.Contains(u, "{") {
					t.Errorf("%s: a template, not a URL", u)
				}
				if msg == "mcp-bridge listening" || msg == "serving MCP endpoint" {
					if s := openSession(t, u); s.sid == "" {
						t.Errorf("%s: no session", u)
					}
					continue
				}
				r, _ := http.NewRequest(http.MethodGet, u, nil)
				r.Header.Set("Accept", "text/event-stream, text/html, text/plain")
				ctx, cancel := context.WithCancel(context.Background())
				resp, err := http.DefaultClient.Do(r.WithContext(ctx))
				if err != nil || resp.StatusCode != 200 {
					t.Errorf("%s (%s): %v %v", u, msg, resp, err)
				}
				if resp != nil && strings.HasSuffix(u, "/metrics") && slices.Contains(tc.args, "--config") {
					body, _ := io.ReadAll(resp.Body)
					for _, name := range []string{"bad", "demo"} {
						if want := `mcp_bridge_sessions_created_total{server="` + name + `"} 1`; !strings.Contains(string(body), want) {
							t.Errorf("%s lacks %s", u, want)
						}
					}
				}
				if resp != nil {
					resp.Body.Close()
				}
				cancel()
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("announced %q, want %q", got, tc.want)
			}
		})
	}
}
