package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// TestMountsWeb: with several servers, one page offers them all and one
// feed shows every server's sessions, labelled with the server; a server
// with tokens of its own keeps the feed closed to a bridge without a
// bridge-wide token.
func TestMountsWeb(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := httpapi.NewMounts(httpapi.MountsOptions{Logger: testLogger(t), Web: &httpapi.MountsWeb{Context: ctx}})
	srv := httptest.NewServer(m)
	t.Cleanup(func() {
		cancel()
		srv.CloseClientConnections()
		srv.Close()
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		_ = m.Close(cctx)
	})
	if _, err := m.Apply([]httpapi.MountSpec{mountSpec(t, "alpha", "1"), mountSpec(t, "beta", "1")}); err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Get(srv.URL + "/ui/config.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, p := range []string{httpapi.MountPath("alpha"), httpapi.MountPath("beta")} {
		if !strings.Contains(string(cfg), p) {
			t.Fatalf("config.json %s does not offer %s", cfg, p)
		}
	}
	endpoint(t, srv, "beta").initialize("2025-11-25")

	fctx, fcancel := context.WithTimeout(context.Background(), 30*time.Second) // a safety net
	defer fcancel()
	req, _ := http.NewRequestWithContext(fctx, http.MethodGet, srv.URL+"/ui/events", nil)
	feedResp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer feedResp.Body.Close()
	feed := newSSEReader(feedResp.Body)
	for {
		ev, ok := feed.next()
		if !ok {
			t.Fatal("the feed ended before showing beta's session")
		}
		var snap bridge.Snapshot
		if err := json.Unmarshal([]byte(ev.data), &snap); err != nil {
			t.Fatalf("event %+v", ev)
		}
		if len(snap.Sessions) == 1 && snap.Sessions[0].Server == "beta" && len(snap.Children) == 1 && snap.Children[0].Server == "beta" {
			break
		}
	}

	// A server with its own tokens: no bridge-wide token, no feed.
	spec := mountSpec(t, "gamma", "1")
	spec.HTTP.Auth = staticTokens(t, map[string]string{"GAMMA_TOKEN": "gamma-secret-0123456789"})
	if _, err := m.Apply([]httpapi.MountSpec{mountSpec(t, "alpha", "1"), mountSpec(t, "beta", "1"), spec}); err != nil {
		t.Fatal(err)
	}
	resp, err = srv.Client().Get(srv.URL + "/ui/events")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("feed with a token-protected server and no bridge-wide token: %d, want 403", resp.StatusCode)
	}
	// Why, and what to do: in the refusal, and told to the page up front.
	const why = "server gamma requires tokens of its own (tokenEnvs), which open it only; give the bridge a bridge-wide token (--token-env or a JWT key)"
	if !strings.Contains(string(body), why) || !strings.Contains(m.LiveViewRefused(), why) {
		t.Errorf("the refusal %s, LiveViewRefused %q: want them to say %q", body, m.LiveViewRefused(), why)
	}
	resp, err = srv.Client().Get(srv.URL + "/ui/config.json")
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		FeedRefused string `json:"feedRefused"`
	}
	err = json.NewDecoder(resp.Body).Decode(&page)
	resp.Body.Close()
	if err != nil || !strings.Contains(page.FeedRefused, why) {
		t.Errorf("the page's config: feedRefused %q (%v), want the reason", page.FeedRefused, err)
	}
}

func staticTokens(t *testing.T, tokens map[string]string) auth.Verifier {
	t.Helper()
	names := make([]string, 0, len(tokens))
	for k := range tokens {
		names = append(names, k)
	}
	v, err := auth.TokensFromEnv(names, func(k string) (string, bool) { v, ok := tokens[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestMountsWebTenancy: with several servers, the one feed shows each
// principal its own sessions on every server and the children that serve
// them (the shared child of a shared server without its stderr), and an
// admin (a bare principal name, ROOT_TOKEN) every server's everything.
func TestMountsWebTenancy(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tokens := map[string]string{"ALICE_TOKEN": aliceToken, "BOB_TOKEN": bobToken, "ROOT_TOKEN": "root-0123456789abcdef-secret"}
	v := staticTokens(t, tokens)
	m := httpapi.NewMounts(httpapi.MountsOptions{Logger: testLogger(t),
		Web: &httpapi.MountsWeb{Auth: v, Admins: auth.Subjects{"ROOT_TOKEN"}, Context: ctx}})
	srv := httptest.NewServer(m)
	t.Cleanup(func() {
		cancel()
		srv.CloseClientConnections()
		srv.Close()
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		_ = m.Close(cctx)
	})
	alpha, beta := mountSpec(t, "alpha", "1"), mountSpec(t, "beta", "1")
	alpha.HTTP.Auth, beta.HTTP.Auth = v, v
	beta.Bridge.Mode = bridge.ModeShared
	if _, err := m.Apply([]httpapi.MountSpec{alpha, beta}); err != nil {
		t.Fatal(err)
	}

	// Alice and Bob each have a session on both servers, and leave a
	// secret on each child's stderr.
	sids := map[string][]string{}
	for _, u := range []struct{ name, token string }{{"ALICE_TOKEN", aliceToken}, {"BOB_TOKEN", bobToken}} {
		for _, server := range []string{"alpha", "beta"} {
			e := endpoint(t, srv, server)
			h := bearer(u.token)
			sid := e.initializeAs(h)
			sids[u.name] = append(sids[u.name], sid[:8])
			body := sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"stderr","arguments":{"stderr":"%s-secret-on-%s"}}}`, u.name, server)
			resp := e.do(req{body: body, sid: sid, header: h})
			if msgs := readMessages(t, resp); len(msgs) != 1 || text(msgs[0]) != "ok" {
				t.Fatalf("%s on %s: stderr tool: %v", u.name, server, msgs)
			}
		}
	}

	feedURL := srv.URL + "/ui/events"
	seen := watchFeed(t, srv.Client(), feedURL, bearer(tokens["ROOT_TOKEN"]), func(v feedView) bool {
		return len(v.snap.Sessions) == 4 && len(v.snap.Children) == 3 &&
			strings.Count(v.raw, "-secret-on-") == 4
	})
	var sharedPid int
	for _, c := range seen[len(seen)-1].snap.Children {
		if c.Server == "beta" {
			sharedPid = c.Pid
		}
	}

	for _, u := range []struct{ name, other, token string }{{"ALICE_TOKEN", "BOB_TOKEN", aliceToken}, {"BOB_TOKEN", "ALICE_TOKEN", bobToken}} {
		seen := watchFeed(t, srv.Client(), feedURL, bearer(u.token), func(v feedView) bool {
			return strings.Contains(v.raw, sids[u.name][0]) && strings.Contains(v.raw, sids[u.name][1]) &&
				strings.Contains(v.raw, u.name+"-secret-on-alpha") &&
				slices.ContainsFunc(v.snap.Children, func(c bridge.ChildSnapshot) bool { return c.Pid == sharedPid })
		})
		for _, v := range seen {
			for _, leak := range append([]string{u.other, "-secret-on-beta"}, sids[u.other]...) {
				if strings.Contains(v.raw, leak) {
					t.Fatalf("%s's feed shows %q: %s", u.name, leak, v.raw)
				}
			}
		}
		mine := seen[len(seen)-1].snap
		if len(mine.Sessions) != 2 || len(mine.Children) != 2 {
			t.Fatalf("%s: sessions %+v, children %+v: want their two, their alpha child and beta's shared one", u.name, mine.Sessions, mine.Children)
		}
		for _, c := range mine.Children {
			if c.Server == "beta" && (!c.StderrHidden || c.Sessions != 1) {
				t.Errorf("%s: beta's shared child %+v: want its stderr hidden and their one session counted", u.name, c)
			}
		}
	}
}

// TestMountsGuard: with several servers, the listener's own paths (the
// web page, its feed, /healthz, /readyz) meet the DNS-rebinding checks
// of every endpoint: a Host that is not loopback, or a browser Origin
// that is not allowed, gets 403; a loopback Host and an allowed Origin
// pass. Before, only the servers' endpoints were guarded, so a rebinding
// page could read the feed of a bridge without authentication.
func TestMountsGuard(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := httpapi.NewMounts(httpapi.MountsOptions{Logger: testLogger(t), Web: &httpapi.MountsWeb{Context: ctx},
		LoopbackOnly: true, AllowedOrigins: []string{"https://app.example"}})
	srv := httptest.NewServer(m)
	t.Cleanup(func() {
		cancel()
		srv.CloseClientConnections()
		srv.Close()
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		_ = m.Close(cctx)
	})
	if _, err := m.Apply([]httpapi.MountSpec{mountSpec(t, "alpha", "1")}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, host, origin string
		want               int
	}{
		{"loopback", "", "", http.StatusOK},
		{"allowed origin", "", "https://app.example", http.StatusOK},
		{"rebinding host", "evil.example:80", "", http.StatusForbidden},
		{"foreign origin", "", "https://evil.example", http.StatusForbidden},
	} {
		for _, path := range []string{"/", "/ui/config.json", "/healthz", "/readyz"} {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
			if tc.host != "" {
				req.Host = tc.host
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("%s: GET %s: %d, want %d", tc.name, path, resp.StatusCode, tc.want)
			}
		}
	}
}

// TestMountsWebServers: the page is told each server's endpoints (legacy
// ones only where served) and the public base URL; the feed says what
// each server runs, secrets masked.
func TestMountsWebServers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := httpapi.NewMounts(httpapi.MountsOptions{Logger: testLogger(t), Web: &httpapi.MountsWeb{Context: ctx, PublicURL: "https://Bridge.Example.com/x/"}})
	srv := httptest.NewServer(m)
	t.Cleanup(func() {
		cancel()
		srv.CloseClientConnections()
		srv.Close()
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		_ = m.Close(cctx)
	})
	badchild := testpeers.BuildGo(t, "./testdata/badchild")
	a := mountSpec(t, "alpha", "1", badchild, "--api-key=alpha-secret")
	b := mountSpec(t, "beta", "1")
	b.HTTP.Stateless = true
	b.HTTP.Auth = staticTokens(t, map[string]string{"BETA_TOKEN": "beta-secret-0123456789"})
	if _, err := m.Apply([]httpapi.MountSpec{a, b}); err != nil {
		t.Fatal(err)
	}
	cfg := getPageConfig(t, srv.Client(), srv.URL)
	paths := func(i int) string {
		var p []string
		for _, e := range cfg.Servers[i].Endpoints {
			p = append(p, e.Path)
		}
		return strings.Join(p, " ")
	}
	if len(cfg.Servers) != 2 || cfg.PublicBase != "https://bridge.example.com/x" || !cfg.Auth ||
		cfg.Servers[0].Name != "alpha" || cfg.Servers[0].Auth || cfg.Servers[0].Stateless ||
		paths(0) != "/servers/alpha/sse /servers/alpha/message /servers/alpha/metrics /healthz /servers/alpha/readyz" ||
		cfg.Servers[1].Name != "beta" || !cfg.Servers[1].Auth || !cfg.Servers[1].Stateless ||
		paths(1) != "/servers/beta/metrics /healthz /servers/beta/readyz" {
		t.Errorf("config %+v", cfg)
	}
	// The endpoints are where the page says.
	for _, p := range []string{"/servers/alpha/metrics", "/healthz", "/servers/alpha/readyz"} {
		resp, err := srv.Client().Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d", p, resp.StatusCode)
		}
	}

	// Without a bridge-wide token the feed is refused (beta has tokens of
	// its own): read the snapshot with one.
	m2 := httpapi.NewMounts(httpapi.MountsOptions{Logger: testLogger(t), Web: &httpapi.MountsWeb{Context: ctx}})
	srv2 := httptest.NewServer(m2)
	t.Cleanup(func() {
		srv2.CloseClientConnections()
		srv2.Close()
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		_ = m2.Close(cctx)
	})
	if _, err := m2.Apply([]httpapi.MountSpec{mountSpec(t, "alpha", "1", badchild, "--api-key=alpha-secret"), mountSpec(t, "beta", "1")}); err != nil {
		t.Fatal(err)
	}
	fctx, fcancel := context.WithTimeout(context.Background(), 30*time.Second) // a safety net
	defer fcancel()
	req, _ := http.NewRequestWithContext(fctx, http.MethodGet, srv2.URL+"/ui/events", nil)
	feedResp, err := srv2.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer feedResp.Body.Close()
	ev, ok := newSSEReader(feedResp.Body).next()
	if !ok {
		t.Fatal("no snapshot")
	}
	if strings.Contains(ev.data, "alpha-secret") {
		t.Errorf("the feed shows the secret: %s", ev.data)
	}
	var snap bridge.Snapshot
	if err := json.Unmarshal([]byte(ev.data), &snap); err != nil {
		t.Fatal(err)
	}
	if len(snap.Servers) != 2 || snap.Servers[0].Name != "alpha" || strings.Join(snap.Servers[0].Argv, " ") != badchild+" --api-key=****" ||
		snap.Servers[1].Name != "beta" || strings.Join(snap.Servers[1].Argv, " ") != badchild || snap.Servers[1].Mode != "per-session" {
		t.Errorf("servers %+v", snap.Servers)
	}
}
