package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// newMounts serves an empty Mounts over a real HTTP server; it is closed
// on cleanup.
func newMounts(t *testing.T) (*httpapi.Mounts, *httptest.Server) {
	t.Helper()
	m := httpapi.NewMounts(httpapi.MountsOptions{DrainTimeout: 10 * time.Second, StopTimeout: 2 * time.Second, Logger: testLogger(t)})
	srv := httptest.NewServer(m)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Errorf("mounts close: %v", err)
		}
	})
	return m, srv
}

// mountSpec is a server running the badchild (or command).
func mountSpec(t *testing.T, name, fingerprint string, command ...string) httpapi.MountSpec {
	if command == nil {
		command = []string{testpeers.BuildGo(t, "./testdata/badchild")}
	}
	return httpapi.MountSpec{
		Name:        name,
		Fingerprint: fingerprint,
		Bridge:      bridge.Config{Command: command, Env: os.Environ(), StopGrace: 500 * time.Millisecond, Logger: testLogger(t)},
		HTTP:        httpapi.Options{LoopbackOnly: true, Logger: testLogger(t)},
	}
}

// endpoint is the env of the server name behind srv.
func endpoint(t *testing.T, srv *httptest.Server, name string) *env {
	return &env{t: t, srv: srv, url: srv.URL + httpapi.MountPath(name), client: srv.Client()}
}

// TestMountsDrain: a request in flight on a server that a new set
// removes is answered by that server before its children stop, while new
// requests for it get 404 at once.
func TestMountsDrain(t *testing.T) {
	t.Parallel()
	m, srv := newMounts(t)
	if _, err := m.Apply([]httpapi.MountSpec{mountSpec(t, "a", "1")}); err != nil {
		t.Fatal(err)
	}
	a := endpoint(t, srv, "a")
	sid := a.initialize("2025-11-25")
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call",
		"params": map[string]any{"name": "slow", "arguments": map[string]any{"ms": 1000, "steps": 3}}})
	// Longer than the stop grace: stopping the child at once would cut
	// it. Its headers are in: the request is being served.
	resp := a.do(req{body: string(body), sid: sid})

	ch, err := m.Apply(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ch.Removed, []string{"a"}) {
		t.Errorf("changes %+v, want a removed", ch)
	}
	if r := a.do(req{body: sprintf(initBody, "2025-11-25")}); r.StatusCode != http.StatusNotFound {
		t.Errorf("initialize on the removed server: status %d, want 404", r.StatusCode)
	} else {
		r.Body.Close()
	}
	msgs := readMessages(t, resp)
	if len(msgs) == 0 || msgs[len(msgs)-1]["result"] == nil {
		t.Errorf("the call in flight was not answered by its server: %v", msgs)
	}
}

// TestMountsApply: an unchanged fingerprint keeps the server's bridge
// and sessions, a changed one restarts it, and a set that cannot be built
// changes nothing.
func TestMountsApply(t *testing.T) {
	t.Parallel()
	m, srv := newMounts(t)
	if _, err := m.Apply([]httpapi.MountSpec{mountSpec(t, "keep", "1"), mountSpec(t, "change", "1")}); err != nil {
		t.Fatal(err)
	}
	keep, change := endpoint(t, srv, "keep"), endpoint(t, srv, "change")
	keepSID, changeSID := keep.initialize("2025-11-25"), change.initialize("2025-11-25")
	ping := func(e *env, sid string) int {
		resp := e.do(req{body: `{"jsonrpc":"2.0","id":2,"method":"ping"}`, sid: sid, version: "2025-11-25"})
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}

	bad := mountSpec(t, "broken", "1")
	bad.Bridge.Mode = "bogus"
	for _, set := range [][]httpapi.MountSpec{
		{mountSpec(t, "keep", "1"), bad},
		{mountSpec(t, "keep", "1"), mountSpec(t, "a/b", "1")},
		{mountSpec(t, "keep", "1"), mountSpec(t, "keep", "2")},
	} {
		if _, err := m.Apply(set); err == nil {
			t.Errorf("Apply accepted a set that cannot be served")
		}
	}
	if got := m.Names(); !slices.Equal(got, []string{"change", "keep"}) {
		t.Errorf("after failed Applies the servers are %q, want change and keep", got)
	}
	if got := ping(change, changeSID); got != http.StatusOK {
		t.Errorf("after failed Applies a session: status %d, want 200", got)
	}

	ch, err := m.Apply([]httpapi.MountSpec{mountSpec(t, "keep", "1"), mountSpec(t, "change", "2"), mountSpec(t, "new", "1")})
	if err != nil {
		t.Fatal(err)
	}
	want := httpapi.Changes{Added: []string{"new"}, Restarted: []string{"change"}, Unchanged: []string{"keep"}}
	if !slices.Equal(ch.Added, want.Added) || !slices.Equal(ch.Restarted, want.Restarted) || !slices.Equal(ch.Unchanged, want.Unchanged) || len(ch.Removed) != 0 {
		t.Errorf("changes %+v, want %+v", ch, want)
	}
	if got := ping(keep, keepSID); got != http.StatusOK {
		t.Errorf("a session of the unchanged server: status %d, want 200", got)
	}
	if got := ping(change, changeSID); got != http.StatusNotFound {
		t.Errorf("a session of the restarted server's old bridge: status %d, want 404", got)
	}
	change.initialize("2025-11-25")
	endpoint(t, srv, "new").initialize("2025-11-25")
}

// TestMountsReady: /readyz is ready only when every server is, and says
// which is not; each server's own /readyz is under its path.
func TestMountsReady(t *testing.T) {
	t.Parallel()
	m, srv := newMounts(t)
	if _, err := m.Apply([]httpapi.MountSpec{mountSpec(t, "ok", "1"), mountSpec(t, "missing", "1", "/nonexistent/mcp-server")}); err != nil {
		t.Fatal(err)
	}
	get := func(path string) (int, map[string]any) {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}
	code, body := get("/readyz")
	servers, _ := body["servers"].(map[string]any)
	missing, _ := servers["missing"].(map[string]any)
	ok, _ := servers["ok"].(map[string]any)
	if code != http.StatusServiceUnavailable || missing["reason"] != "command_not_found" || ok["status"] != "ready" {
		t.Errorf("/readyz: %d %v, want 503 naming the missing command's server", code, body)
	}
	if code, _ := get("/servers/ok/readyz"); code != http.StatusOK {
		t.Errorf("/servers/ok/readyz: %d, want 200", code)
	}
	if code, _ := get("/servers/missing/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/servers/missing/readyz: %d, want 503", code)
	}
	if code, _ := get("/servers/none/readyz"); code != http.StatusNotFound {
		t.Errorf("/servers/none/readyz: %d, want 404", code)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d, want 200", code)
	}
}

// TestMountsModern: with several servers, a 2026-07-28 request to each
// server's endpoint is served by that server's own bridge: its own child,
// its own discovery.
func TestMountsModern(t *testing.T) {
	t.Parallel()
	m, srv := newMounts(t)
	if _, err := m.Apply([]httpapi.MountSpec{mountSpec(t, "a", "1"), mountSpec(t, "b", "1")}); err != nil {
		t.Fatal(err)
	}
	pids := map[string]string{}
	for _, name := range []string{"a", "b"} {
		e := endpoint(t, srv, name)
		msgs := readMessages(t, e.do(req{body: modern(1, "server/discover", ""), version: "2026-07-28", header: map[string]string{"Mcp-Method": "server/discover"}}))
		if res, _ := msgs[0]["result"].(map[string]any); res["resultType"] != "complete" {
			t.Fatalf("%s: discover %v", name, msgs)
		}
		msgs = readMessages(t, e.do(req{body: modern(2, "tools/call", `"name":"pid","arguments":{},`), version: "2026-07-28",
			header: map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "pid"}}))
		pids[name] = text(msgs[0])
	}
	if pids["a"] == "" || pids["a"] == pids["b"] {
		t.Errorf("the servers' children: %q; want one each", pids)
	}
}

// TestMountsMetrics: the set's /metrics is every server's metrics, each
// series labelled with its server, and the process's once; it follows
// the set as Apply changes it, and MetricsAuth guards it.
func TestMountsMetrics(t *testing.T) {
	t.Parallel()
	const scrapeToken = "scrape-0123456789abcdef-secret"
	m := httpapi.NewMounts(httpapi.MountsOptions{DrainTimeout: 10 * time.Second, StopTimeout: 2 * time.Second, Logger: testLogger(t),
		MetricsAuth: staticTokens(t, map[string]string{"METRICS_TOKEN": scrapeToken})})
	srv := httptest.NewServer(m)
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = m.Close(ctx)
	})
	if _, err := m.Apply([]httpapi.MountSpec{mountSpec(t, "a", "1"), mountSpec(t, "b", "1")}); err != nil {
		t.Fatal(err)
	}
	endpoint(t, srv, "a").initialize("2025-11-25")
	scrape := func(token string) (int, string) {
		t.Helper()
		r, _ := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := srv.Client().Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := scrape(""); code != http.StatusUnauthorized || strings.Contains(body, "mcp_bridge_") {
		t.Errorf("without the token: status %d, want 401 and no metrics", code)
	}
	code, body := scrape(scrapeToken)
	if code != http.StatusOK {
		t.Fatalf("status %d, want 200", code)
	}
	for _, want := range []string{
		`mcp_bridge_sessions_created_total{server="a"} 1`,
		`mcp_bridge_sessions_created_total{server="b"} 0`,
		`mcp_bridge_requests_total{era="2025",method="initialize",outcome="ok",server="a"} 1`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %s:\n%s", want, grepLines(body, "mcp_bridge_sessions_created_total"))
		}
	}
	if n := strings.Count(body, "\ngo_goroutines "); n != 1 {
		t.Errorf("go_goroutines appears %d times, want once, unlabelled", n)
	}

	if _, err := m.Apply([]httpapi.MountSpec{mountSpec(t, "b", "1")}); err != nil {
		t.Fatal(err)
	}
	if _, body := scrape(scrapeToken); strings.Contains(body, `server="a"`) || !strings.Contains(body, `server="b"`) {
		t.Errorf("after a's removal, /metrics:\n%s", grepLines(body, "mcp_bridge_sessions_created_total"))
	}
}

// grepLines are the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestMountsStage: a staged change is served at once; rolled back, the
// servers it replaced serve again with the sessions they had (it never
// touched them); committed, they are stopped and Wait sees it. A server
// named in Restart gets a new bridge though its fingerprint is the same,
// and a request for an absent server gets the reason it was given.
func TestMountsStage(t *testing.T) {
	t.Parallel()
	m, srv := newMounts(t)
	if _, err := m.Apply([]httpapi.MountSpec{mountSpec(t, "a", "1"), mountSpec(t, "b", "1")}); err != nil {
		t.Fatal(err)
	}
	a, b := endpoint(t, srv, "a"), endpoint(t, srv, "b")
	aSID, bSID := a.initialize("2025-11-25"), b.initialize("2025-11-25")
	ping := func(e *env, sid string) (int, string) {
		resp := e.do(req{body: `{"jsonrpc":"2.0","id":2,"method":"ping"}`, sid: sid, version: "2025-11-25"})
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(body)
	}

	st, err := m.Stage([]httpapi.MountSpec{mountSpec(t, "b", "1"), mountSpec(t, "c", "1")}, httpapi.StageOptions{Absent: map[string]string{"a": `server "a" was removed`}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Stage(nil, httpapi.StageOptions{}); err == nil {
		t.Error("a second change was staged over the first")
	}
	if code, body := ping(a, aSID); code != http.StatusNotFound || !strings.Contains(body, `Not Found: server \"a\" was removed`) {
		t.Errorf("staged: a session of the removed server: %d %s, want 404 saying it was removed", code, body)
	}
	if code, _ := ping(b, bSID); code != http.StatusOK {
		t.Errorf("staged: a session of the unchanged server: %d, want 200", code)
	}
	endpoint(t, srv, "c").initialize("2025-11-25")
	if err := st.Rollback(); err != nil {
		t.Fatal(err)
	}
	if code, body := ping(a, aSID); code != http.StatusOK {
		t.Errorf("rolled back: the session of a: %d %s, want 200", code, body)
	}
	if got := m.Names(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("rolled back: servers %q, want a and b", got)
	}
	if err := st.Rollback(); err == nil {
		t.Error("a second Rollback did something")
	}

	st, err = m.Stage([]httpapi.MountSpec{mountSpec(t, "b", "1")}, httpapi.StageOptions{Restart: []string{"b"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := (httpapi.Changes{Removed: []string{"a"}, Restarted: []string{"b"}}); !slices.Equal(st.Changes.Removed, want.Removed) || !slices.Equal(st.Changes.Restarted, want.Restarted) || st.Changes.Unchanged != nil {
		t.Errorf("changes %+v, want %+v", st.Changes, want)
	}
	st.Commit()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := st.Wait(ctx); err != nil {
		t.Fatalf("the replaced servers were not stopped: %v", err)
	}
	if code, body := ping(a, aSID); code != http.StatusNotFound || !strings.Contains(body, "no such server") {
		t.Errorf("committed: a session of a: %d %s, want 404", code, body)
	}
	if code, _ := ping(b, bSID); code != http.StatusNotFound {
		t.Errorf("committed: a session of the restarted server: %d, want 404", code)
	}
	if err := st.Rollback(); err == nil {
		t.Error("Rollback after Commit did something")
	}
	if h, served := m.Health("b"); !served || h.Status != "ready" {
		t.Errorf("Health(b): %+v %v", h, served)
	}
	if _, served := m.Health("a"); served {
		t.Error("Health(a): served")
	}
}
