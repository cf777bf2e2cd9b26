//go:build linux

package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
	"github.com/mcp-bridge/mcp-bridge/stdio"
)

// serverFilesystem is @modelcontextprotocol/server-filesystem's entry
// file in testdata/node; the test skips where it is not installed.
func serverFilesystem(t *testing.T) (modules, entry string) {
	modules = testpeers.NodeModules(t)
	entry = filepath.Join(modules, "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		t.Skip("server-filesystem missing: run `npm ci --prefix testdata/node` (the test script does)")
	}
	return modules, entry
}

// TestSandboxServerFilesystem: @modelcontextprotocol/server-filesystem
// under the node preset, scoped to one directory it may write, serves that
// directory to a real client (the Go SDK's) and is refused everything
// else, even where the server itself would allow it: it is given a second
// directory, outside the sandbox, that the kernel refuses it (EACCES).
// /status shows the sandbox the bridge enforces.
func TestSandboxServerFilesystem(t *testing.T) {
	modules, entry := serverFilesystem(t)
	node := testpeers.Node(t)
	dir := t.TempDir()
	data, outside := filepath.Join(dir, "data"), filepath.Join(dir, "outside")
	for _, d := range []string{data, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(data, "a.txt"), []byte("inside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "b.txt"), []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(environWithout(envPrefix), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"))
	p := startBridge(t, env, "--cwd", dir, "--sandbox", "node", "--sandbox-write", "data", "--sandbox-read", modules,
		"--", node, entry, data, outside)

	ctx := testContext(t)
	client := mcp.NewClient(&mcp.Implementation{Name: "sandbox-test", Version: "0.0.1"}, nil)
	s, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.URL}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, p.Stderr())
	}
	defer s.Close()
	call := func(tool string, args map[string]any) (string, bool) {
		t.Helper()
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		var text []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text = append(text, tc.Text)
			}
		}
		return strings.Join(text, "\n"), res.IsError
	}
	tests := []struct {
		tool   string
		args   map[string]any
		ok     bool
		answer string // what the answer holds
	}{
		{"read_text_file", map[string]any{"path": filepath.Join(data, "a.txt")}, true, "inside"},
		{"write_file", map[string]any{"path": filepath.Join(data, "new.txt"), "content": "written"}, true, ""},
		{"list_directory", map[string]any{"path": data}, true, "new.txt"},
		{"read_text_file", map[string]any{"path": filepath.Join(outside, "b.txt")}, false, "EACCES"},
		{"list_directory", map[string]any{"path": outside}, false, "EACCES"},
		{"write_file", map[string]any{"path": filepath.Join(outside, "c.txt"), "content": "escaped"}, false, ""},
		{"create_directory", map[string]any{"path": filepath.Join(outside, "d")}, false, ""},
	}
	for _, tt := range tests {
		got, isErr := call(tt.tool, tt.args)
		if isErr == tt.ok || !strings.Contains(got, tt.answer) {
			t.Errorf("%s %v: %q (error %v), want ok=%v with %q", tt.tool, tt.args, got, isErr, tt.ok, tt.answer)
		}
	}
	if b, err := os.ReadFile(filepath.Join(data, "new.txt")); err != nil || string(b) != "written" {
		t.Errorf("data/new.txt: %q %v", b, err)
	}
	for _, f := range []string{"c.txt", "d"} {
		if _, err := os.Stat(filepath.Join(outside, f)); err == nil {
			t.Errorf("outside/%s was made", f)
		}
	}

	st := getServerStatus(t, p.Base+"/status")
	if st.Sandbox == nil || st.Sandbox.Preset != "node" || len(st.Sandbox.Write) != 1 || st.Sandbox.Write[0] != data {
		t.Fatalf("/status: %+v", st)
	}
	for _, r := range st.Sandbox.Rights {
		if !r.Enforced {
			t.Errorf("/status: %q not enforced: %s", r.Right, r.Why)
		}
	}
	// The web page's feed has it too.
	req, _ := http.NewRequestWithContext(ctx, "GET", p.Base+"/ui/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() && sc.Text() != "event: snapshot" {
	}
	var snap statusBody
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			if err := json.Unmarshal([]byte(data), &snap); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if snap.Sandbox == nil || snap.Sandbox.Preset != "node" {
		t.Errorf("the web page's snapshot has no sandbox: %+v", snap)
	}
}

type statusBody struct {
	Mode    string `json:"mode"`
	Sandbox *struct {
		Preset string   `json:"preset"`
		Write  []string `json:"write"`
		Net    []string `json:"net"`
		Rights []struct {
			Right    string `json:"right"`
			Enforced bool   `json:"enforced"`
			Why      string `json:"why"`
		} `json:"rights"`
	} `json:"sandbox"`
}

func getServerStatus(t *testing.T, url string) statusBody {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st statusBody
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&st) != nil {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	return st
}

// TestSandboxRefusals: a child that ends because of its sandbox ends its
// session with -32005, and the error says why: a limit it reached (a fork
// bomb stopped at its process limit, a memory hog killed at its memory
// limit), or a file or a port it was refused, with the flag that would
// allow it, next to the last lines of its stderr. The bridge and the
// other sessions keep working. The bridge runs as nobody: RLIMIT_NPROC
// never binds root, whose bridge refuses a process limit instead
// (TestSandboxRequired).
func TestSandboxRefusals(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: cannot run the bridge as nobody")
	}
	const nobody = 65534
	dir, err := os.MkdirTemp("", "mcp-bridge-sandbox-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin, badchild := filepath.Join(dir, "mcp-bridge"), filepath.Join(dir, "badchild")
	testpeers.CopyExecutable(t, testpeers.BuildGo(t, "./cmd/mcp-bridge"), bin)
	testpeers.CopyExecutable(t, testpeers.BuildGo(t, "./testdata/badchild"), badchild)
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())

	p := startBridgeAs(t, bridgeExec{bin: bin, dir: dir, attr: &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}},
		environWithout(envPrefix), "--sandbox", "none", "--sandbox-limit", "procs=40,mem=256M", "--", badchild)
	bystander := openSession(t, p.URL)
	tests := []struct {
		name string
		tool string
		args map[string]any
		want []string // in the error's message
	}{
		{"fork bomb", "forkbomb", map[string]any{}, []string{"it reached its process limit (procs=40"}},
		{"memory hog", "hog", map[string]any{}, []string{"it reached its memory limit (mem=256M"}},
		{"a file", "probe", map[string]any{"op": "read", "target": secret, "exit_on_error": true},
			[]string{"the sandbox may refuse " + secret, "--sandbox-read " + secret}},
		{"a port", "probe", map[string]any{"op": "tcp", "target": l.Addr().String(), "exit_on_error": true},
			[]string{"--sandbox-net " + port}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openSession(t, p.URL)
			ctx := testContext(t)
			r, err := s.call(ctx, tt.tool, tt.args)
			if err != nil || r.Error == nil || r.Error.Code != bridge.CodeChildExited {
				t.Fatalf("%s: %s %v, want JSON-RPC error %d", tt.tool, r.raw, err, bridge.CodeChildExited)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.Error.Message, w) {
					t.Errorf("the error %q does not say %q", r.Error.Message, w)
				}
			}
			if !strings.Contains(string(r.Error.Data), `"stderr"`) {
				t.Errorf("the error has no stderr tail: %s", r.Error.Data)
			}
			if got := bystander.textTool("echo_count"); got != "0" {
				t.Errorf("the other session's server: echo_count %q", got)
			}
		})
	}
	late := openSession(t, p.URL)
	if got := late.textTool("echo_count"); got != "0" {
		t.Errorf("a new session after them: %q", got)
	}
}

// TestSandboxRequired: a bridge whose sandbox asks for a right this system
// cannot enforce does not start under required (the default), and says
// which; under best-effort it starts and logs the right as not enforced.
// The right is a process limit for a bridge run as root, which
// RLIMIT_NPROC never binds.
func TestSandboxRequired(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: RLIMIT_NPROC binds this user")
	}
	bin := testpeers.BuildGo(t, "./cmd/mcp-bridge")
	badchild := testpeers.BuildGo(t, "./testdata/badchild")
	code, out := runBridge(t, bin, nil, "--port", "0", "--sandbox-limit", "procs=64", "--", badchild)
	if code != 2 || !strings.Contains(out, "processes: 64 (RLIMIT_NPROC never binds a process of uid 0") {
		t.Fatalf("exit status %d, want 2 naming the right:\n%s", code, out)
	}
	p := startBridge(t, environWithout(envPrefix), "--sandbox-limit", "procs=64", "--sandbox-enforce", "best-effort", "--", badchild)
	waitLogged(t, p, `msg="sandbox right not enforced \(best-effort\)" server=default right="processes: 64"`)
	s := openSession(t, p.URL)
	if got := s.textTool("echo_count"); got != "0" {
		t.Errorf("echo_count: %q", got)
	}
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestSandboxPin: `mcp-bridge pin` prints the program's hash; a bridge
// pinned to it serves; one pinned to another refuses the start: the
// client gets "binary does not match its pin" and neither hash, while the
// bridge's log and its audit log have both.
func TestSandboxPin(t *testing.T) {
	bin := testpeers.BuildGo(t, "./cmd/mcp-bridge")
	badchild := testpeers.BuildGo(t, "./testdata/badchild")
	sum := sha256File(t, badchild)
	code, out := runBridge(t, bin, nil, "pin", "--", badchild)
	if code != 0 || !strings.HasPrefix(out, sum+"  "+badchild+"\n") || !strings.Contains(out, "--pin-sha256 "+sum) {
		t.Fatalf("pin: status %d:\n%s", code, out)
	}

	p := startBridge(t, environWithout(envPrefix), "--pin-sha256", sum, "--", badchild)
	if got := openSession(t, p.URL).textTool("echo_count"); got != "0" {
		t.Errorf("pinned: echo_count %q", got)
	}

	wrong := strings.Repeat("0f", 32)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	p = startBridge(t, environWithout(envPrefix), "--audit-log", audit, "--pin-sha256", wrong, "--", badchild)
	s := &rawSession{t: t, url: p.URL, hc: &http.Client{}}
	resp, err := s.post(testContext(t), initializeBody)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var r rpcReply
	if err := json.Unmarshal(body, &r); err != nil || r.Error == nil {
		t.Fatalf("initialize with a wrong pin: %s %s", resp.Status, body)
	}
	if r.Error.Message != "server refused to start: binary does not match its pin" || !strings.Contains(string(r.Error.Data), `"pin_mismatch"`) {
		t.Errorf("the client's error: %s", body)
	}
	if strings.Contains(string(body), sum) || strings.Contains(string(body), wrong) {
		t.Errorf("the client's error shows a hash: %s", body)
	}
	log := p.waitLog("binary does not match its pin")
	if !strings.Contains(log, sum) || !strings.Contains(log, wrong) {
		t.Errorf("the log lacks a hash:\n%s", log)
	}
	b, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for sc := bufio.NewScanner(strings.NewReader(string(b))); sc.Scan(); {
		var e struct {
			Event, Reason, SHA256, Pinned string `json:",omitempty"`
			Pin                           string `json:"pinned_sha256"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Event == "server_refused" {
			found = e.Reason == "pin_mismatch" && e.SHA256 == sum && e.Pin == wrong
		}
	}
	if !found {
		t.Errorf("the audit log has no server_refused line with both hashes:\n%s", b)
	}
}

// TestPinWarnings: pin says what a pin of a script or a launcher does not
// cover.
func TestPinWarnings(t *testing.T) {
	bin := testpeers.BuildGo(t, "./cmd/mcp-bridge")
	dir := t.TempDir()
	script := filepath.Join(dir, "server.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec node server.js\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	npx := filepath.Join(dir, "npx")
	if err := os.WriteFile(npx, []byte("#!/usr/bin/env node\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		cmd  []string
		want string
	}{
		{[]string{script}, "is a script: the pin covers its text, not /bin/sh"},
		{[]string{npx, "-y", "pkg"}, "is a launcher: it runs a package it fetches"},
		{[]string{"/bin/sh", "-c", "x"}, "is an interpreter: the pin covers it, not the script it runs"},
	}
	for _, tt := range tests {
		code, out := runBridge(t, bin, nil, append([]string{"pin", "--"}, tt.cmd...)...)
		if code != 0 || !strings.Contains(out, tt.want) {
			t.Errorf("pin %v: status %d, want %q:\n%s", tt.cmd, code, tt.want, out)
		}
	}
	if code, out := runBridge(t, bin, nil, "pin", "--", filepath.Join(dir, "none")); code != 2 || !strings.Contains(out, "mcp-bridge pin:") {
		t.Errorf("pin of a missing file: status %d:\n%s", code, out)
	}
}

// TestSandboxCheck: `mcp-bridge sandbox check` prints what this system
// offers and what it would enforce of a sandbox, starts nothing, and
// says by its exit status whether the server would start: 0, 1 when a
// right would not be enforced under required, 2 for bad flags; with
// --config, for each server of the file.
func TestSandboxCheck(t *testing.T) {
	bin := testpeers.BuildGo(t, "./cmd/mcp-bridge")
	badchild := testpeers.BuildGo(t, "./testdata/badchild")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {
		"open": {"command": "`+badchild+`"},
		"closed": {"command": "`+badchild+`", "sandbox": {"preset": "none", "write": ["`+dir+`"]}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"none", []string{"--sandbox", "none", "--", badchild}, 0, []string{"system: Landlock ABI", "enforced      files: only the program", "would start"}},
		{"a port", []string{"--sandbox-net", "443", "--", badchild}, 0, []string{"network: TCP connections to port 443 only", "would start"}},
		{"a host", []string{"--sandbox-net", "example.com:443", "--sandbox-enforce", "best-effort", "--", badchild}, 0,
			[]string{"NOT ENFORCED  network: only the host of example.com:443: Landlock filters TCP by port", "would start"}},
		{"a read-only hole", []string{"--sandbox-write", dir, "--sandbox-read", filepath.Join(dir), "--sandbox-read", cfg, "--", badchild}, 1,
			[]string{"NOT ENFORCED  read-only " + cfg + " inside writable " + dir, "would be refused"}},
		{"bad flags", []string{"--sandbox", "ruby", "--", badchild}, 2, []string{"--sandbox / MCP_BRIDGE_SANDBOX"}},
		{"the servers of a file", []string{"--config", cfg}, 0, []string{"server open: ", "no sandbox: the server can do whatever", "server closed: ", "would start"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := runBridge(t, bin, nil, append([]string{"sandbox", "check"}, tt.args...)...)
			if code != tt.code {
				t.Errorf("status %d, want %d:\n%s", code, tt.code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("the output does not say %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestSandboxNothingLeftBehind: with the sandbox on, what a server starts
// (a grandchild ignoring SIGTERM, one that called setsid, a daemon whose
// parent exited first) dies with it, whatever ends it: its session's
// DELETE, its crash, the bridge's SIGTERM or SIGKILL. The server's own
// /proc is the sandbox's, so the processes are found from the bridge's
// side: every descendant of the bridge once they are all started.
func TestSandboxNothingLeftBehind(t *testing.T) {
	badchild := testpeers.BuildGo(t, "./testdata/badchild")
	forks := []map[string]any{{"ignore_term": true}, {"setsid": true, "ignore_term": true}, {"daemon": true}}
	tests := []struct {
		containment string
		end         string
	}{
		{"auto", "DELETE"}, {"auto", "crash"}, {"auto", "SIGTERM"}, {"auto", "SIGKILL"},
		{"process-group", "DELETE"}, {"process-group", "crash"}, {"process-group", "SIGTERM"},
	}
	for _, tt := range tests {
		t.Run(tt.containment+" "+tt.end, func(t *testing.T) {
			t.Parallel()
			p := startBridge(t, environWithout(envPrefix), "--stop-grace", "200ms", "--shutdown-timeout", "500ms",
				"--containment", tt.containment, "--sandbox", "none", "--sandbox-limit", "files=512",
				"--", badchild, "-ignore-eof", "-ignore-term")
			s := openSession(t, p.URL)
			for _, args := range forks {
				s.textTool("echo_count") // one call at a time
				ctx := testContext(t)
				if r, err := s.call(ctx, "fork", args); err != nil || r.Error != nil {
					t.Fatalf("fork %v: %s %v", args, r.raw, err)
				}
			}
			// The server and the three it started, at least: the daemon is
			// re-parented as its parent exits, which a walk of /proc
			// during the move can miss, so the walk is made again until
			// all four are seen.
			var procs []int
			deadline := time.NewTimer(safetyNet)
			defer deadline.Stop()
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
			for procs = descendantsOf(t, p.cmd.Process.Pid); len(procs) < 4; procs = descendantsOf(t, p.cmd.Process.Pid) {
				select {
				case <-deadline.C:
					t.Fatalf("the bridge has %d live descendants: %v", len(procs), procs)
				case <-tick.C:
				}
			}
			for _, pid := range procs {
				t.Cleanup(func() { killPid(pid) }) // whatever the test finds
			}
			reapers := append([]int{p.cmd.Process.Pid}, procs...)
			switch tt.end {
			case "DELETE":
				if got := s.delete(); got != http.StatusOK {
					t.Fatalf("DELETE: status %d", got)
				}
			case "crash":
				ctx := testContext(t)
				if r, err := s.call(ctx, "crash", map[string]any{"code": 3}); err != nil || r.Error == nil || r.Error.Code != bridge.CodeChildExited {
					t.Fatalf("crash: %s %v", r.raw, err)
				}
			case "SIGTERM":
				if err := p.Signal(syscall.SIGTERM); err != nil {
					t.Errorf("mcp-bridge after SIGTERM: %v", err)
				}
			case "SIGKILL":
				_ = p.Signal(syscall.SIGKILL)
				reapers = nil
			}
			for _, pid := range procs {
				waitGone(t, pid, reapers...)
			}
		})
	}
}

// descendantsOf lists every live process below pid, from /proc.
func descendantsOf(t *testing.T, pid int) []int {
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", p))
		for _, f := range tasks {
			b, _ := os.ReadFile(f)
			for _, c := range strings.Fields(string(b)) {
				if n, err := strconv.Atoi(c); err == nil {
					if st, _, ok := procState(t, n); ok && st != "Z" {
						out = append(out, n)
					}
					queue = append(queue, n)
				}
			}
		}
	}
	return out
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	t.Cleanup(cancel)
	return ctx
}

// BenchmarkSandboxStart: what the sandbox adds to a session's start
// through a real bridge (the bridge's own executable is the launcher):
// initialize answered, which is the child started and answering (the load
// tool's Go echo child), then DELETE, the child stopped. Under each
// containment, without a sandbox and with the tightest one (preset none:
// Landlock, namespaces, seccomp, an rlimit). docs/performance.md has the
// figures.
func BenchmarkSandboxStart(b *testing.B) {
	child := testpeers.BuildGo(b, "./cmd/mcp-bridge-load")
	for _, cont := range []string{"pid-namespace", "cgroup", "process-group"} {
		for _, sb := range []struct {
			name string
			args []string
		}{{"no sandbox", nil}, {"sandbox", []string{"--sandbox", "none", "--sandbox-limit", "files=256"}}} {
			b.Run(cont+"/"+sb.name, func(b *testing.B) {
				args := append([]string{"--log-level", "info", "--containment", cont}, sb.args...)
				p := startBridgeQuiet(b, append(args, "--", child, "echo-child")...)
				if p == nil {
					b.Skipf("--containment %s: not on this system", cont)
				}
				hc := &http.Client{Transport: &http.Transport{}}
				var toInit time.Duration
				for b.Loop() {
					s := &rawSession{t: b, url: p.URL, hc: hc}
					t0 := time.Now()
					resp, err := s.post(context.Background(), initializeBody)
					if err != nil {
						b.Fatal(err)
					}
					s.sid = resp.Header.Get("Mcp-Session-Id")
					if r, err := readReply(resp, "1"); err != nil || r.Error != nil {
						b.Fatalf("initialize: %s %v", r.raw, err)
					}
					toInit += time.Since(t0)
					if got := s.delete(); got != http.StatusOK {
						b.Fatalf("DELETE: %d", got)
					}
				}
				b.ReportMetric(float64(toInit.Microseconds())/float64(b.N)/1000, "ms-to-initialize/op")
			})
		}
	}
}

// startBridgeQuiet is startBridge for a configuration this system may not
// allow: nil when the bridge refuses it.
func startBridgeQuiet(b *testing.B, args ...string) *bridgeProc {
	bin := testpeers.BuildGo(b, "./cmd/mcp-bridge")
	if code, _ := runBridgeCheck(b, bin, args); code != 0 {
		return nil
	}
	return startBridge(b, environWithout(envPrefix), args...)
}

// runBridgeCheck asks the bridge whether it would start with args: the
// containment probe, run as `--help` would not.
func runBridgeCheck(_ *testing.B, _ string, args []string) (int, string) {
	for i, a := range args {
		if a == "--containment" && i+1 < len(args) {
			if _, _, err := stdio.ProbeContainment(stdio.Containment(args[i+1])); err != nil {
				return 1, err.Error()
			}
		}
	}
	return 0, ""
}
