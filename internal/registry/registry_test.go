package registry

// The registry in the process, over a real HTTP server and real children
// (testdata/badchild): every status of the API, the file rewritten and
// read back, a save that fails undone with the sessions of the servers
// it would have replaced untouched, an edit on disk seen as an ETag
// change, and changes and reloads that never interleave. (cmd/mcp-bridge
// runs the same against a real bridge process: load, crashes, restarts,
// the web page and the command line.)

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/httpapi"
	"github.com/mcp-bridge/mcp-bridge/internal/config"
	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

const (
	adminToken  = "admin-token-0123456789abcdef"
	readerToken = "reader-token-0123456789abcdef"
	userToken   = "user-token-0123456789abcdefgh"
	secret      = "s3cr3t-env-value-never-shown"
)

// syncBuffer is a buffer several goroutines write to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fixture is a registry serving the file over a real HTTP server, with
// its log and audit log.
type fixture struct {
	t          *testing.T
	reg        *Registry
	srv        *httptest.Server
	file       string
	log, audit *syncBuffer
	outputs    *syncBuffer // every answer of the API
	child      string      // the badchild
}

// newFixture serves file (its mcpServers, "CHILD" replaced by the
// badchild's path) with a registry admin, a reader and a user; opts may
// set the hooks.
func newFixture(t *testing.T, servers string, opts Options) *fixture {
	t.Helper()
	return newFixtureWith(t, servers, opts, nil)
}

// newFixtureWith is newFixture with more variables and flags.
func newFixtureWith(t *testing.T, servers string, opts Options, env []string, args ...string) *fixture {
	t.Helper()
	child := testpeers.BuildGo(t, "./testdata/badchild")
	q, _ := json.Marshal(child)
	file := filepath.Join(t.TempDir(), "servers.json")
	data := `{"keep": "this top-level key", "mcpServers": {` + strings.ReplaceAll(servers, `"CHILD"`, string(q)) + `}}`
	if err := os.WriteFile(file, []byte(data), 0o640); err != nil {
		t.Fatal(err)
	}
	environ := append(append(os.Environ(), "ADMIN_TOKEN="+adminToken, "READER_TOKEN="+readerToken, "USER_TOKEN="+userToken), env...)
	cfg, err := config.Load(append([]string{"--config", file, "--token-env", "ADMIN_TOKEN", "--token-env", "READER_TOKEN", "--token-env", "USER_TOKEN",
		"--admin", "token:READER_TOKEN", "--registry-admin", "token:ADMIN_TOKEN", "--stop-grace", "500ms", "--shutdown-timeout", "5s", "--audit-log", "-"}, args...), environ, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, file: file, log: &syncBuffer{}, audit: &syncBuffer{}, outputs: &syncBuffer{}, child: child}
	logger := slog.New(slog.NewTextHandler(io.MultiWriter(f.log, verbose{}), &slog.HandlerOptions{Level: slog.LevelDebug}))
	hopts, err := cfg.HTTP()
	if err != nil {
		t.Fatal(err)
	}
	if hopts.Auth, err = cfg.Verifier(context.Background(), environ, logger); err != nil {
		t.Fatal(err)
	}
	hopts.Audit, hopts.Logger = f.audit, logger
	writers, err := cfg.RegistryWriters()
	if err != nil {
		t.Fatal(err)
	}
	bcfg := cfg.Bridge(nil, environ)
	bcfg.Logger = logger
	opts.Config, opts.Environ, opts.Bridge, opts.HTTP, opts.Writers, opts.Logger = cfg, environ, bcfg, hopts, writers, logger
	f.reg, err = Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(f.reg)
	t.Cleanup(func() {
		f.srv.CloseClientConnections()
		f.srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = f.reg.Close(ctx)
		f.noSecret()
	})
	return f
}

type verbose struct{}

func (verbose) Write(p []byte) (int, error) {
	if testing.Verbose() {
		os.Stderr.Write(p)
	}
	return len(p), nil
}

// answer is one response of the API.
type answer struct {
	status int
	header http.Header
	body   string
}

func (a answer) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(a.body), v); err != nil {
		t.Fatalf("%v: %s", err, a.body)
	}
}

// call sends one request to the API as the principal of token.
func (f *fixture) call(token, method, path, body string, header ...string) answer {
	f.t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	f.outputs.Write(b)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// etag is the ETag of server name, from a GET.
func (f *fixture) etag(name string) string {
	f.t.Helper()
	a := f.call(adminToken, "GET", httpapi.RegistryPath+"/"+name, "")
	if a.status != http.StatusOK {
		f.t.Fatalf("GET %s: %d %s", name, a.status, a.body)
	}
	return a.header.Get("ETag")
}

// noSecret: no output the test saw holds the secret of an env value.
func (f *fixture) noSecret() {
	for what, out := range map[string]string{"the log": f.log.String(), "the audit log": f.audit.String(), "an answer": f.outputs.String()} {
		if strings.Contains(out, secret) {
			f.t.Errorf("%s shows an env value:\n%s", what, out)
		}
	}
}

// session is an MCP session on a server of the fixture.
type session struct {
	f        *fixture
	url, sid string
}

func (f *fixture) open(name string) *session {
	f.t.Helper()
	s := &session{f: f, url: f.srv.URL + httpapi.MountPath(name)}
	status, _ := s.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if status != http.StatusOK || s.sid == "" {
		f.t.Fatalf("initialize on %s: status %d", name, status)
	}
	s.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

// post sends one message; it returns the status and the last message of
// the answer.
func (s *session) post(msg string) (int, map[string]any) {
	status, m, err := s.tryPost(msg)
	if err != nil {
		s.f.t.Fatal(err)
	}
	return status, m
}

// tryPost is post for another goroutine than the test's: it returns the
// error.
func (s *session) tryPost(msg string) (int, map[string]any, error) {
	req, _ := http.NewRequest("POST", s.url, strings.NewReader(msg))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+userToken)
	if s.sid != "" {
		req.Header.Set("Mcp-Session-Id", s.sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := s.f.srv.Client().Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		s.sid = sid
	}
	var last map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimPrefix(sc.Text(), "data:")
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			last = m
		}
	}
	return resp.StatusCode, last, nil
}

// pid is the pid of the session's child (badchild's pid tool); 0 and
// the status when the call fails.
func (s *session) pid() (int, int) {
	status, m := s.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"pid","arguments":{}}}`)
	res, _ := m["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if len(content) == 0 {
		return 0, status
	}
	var pid int
	fmt.Sscan(content[0].(map[string]any)["text"].(string), &pid)
	return pid, status
}
