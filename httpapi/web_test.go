package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
)

// TestWebPage: the page is public, its feed is authenticated like the MCP
// endpoint and shows a live session by principal and id prefix (never the
// whole id), and ending Options.Context ends the feed.
func TestWebPage(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	f := newAuthFixture(t, httpapi.Options{Web: true, Context: ctx})
	base := f.srv.URL

	get := func(t *testing.T, ctx context.Context, path string, h map[string]string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "GET", base+path, nil)
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := f.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}

	for _, tt := range []struct {
		name   string
		path   string
		header map[string]string
		status int
		ctype  string
	}{
		{"page without a token", "/", nil, 200, "text/html; charset=utf-8"},
		{"script without a token", "/ui/app.js", nil, 200, "text/javascript; charset=utf-8"},
		{"config says auth", "/ui/config.json", nil, 200, "application/json"},
		{"feed without a token", "/ui/events", nil, 401, "application/json"},
		{"feed with a bad token", "/ui/events", bearer(eveToken), 401, "application/json"},
		{"unknown asset", "/ui/nope.js", nil, 404, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := get(t, context.Background(), tt.path, tt.header)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if tt.ctype != "" && resp.Header.Get("Content-Type") != tt.ctype {
				t.Errorf("Content-Type %q, want %q", resp.Header.Get("Content-Type"), tt.ctype)
			}
			if tt.status == 401 && !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata=") {
				t.Errorf("401 without the MCP challenge: %q", resp.Header.Get("WWW-Authenticate"))
			}
			if tt.path == "/ui/config.json" {
				body, _ := io.ReadAll(resp.Body)
				if !strings.Contains(string(body), `"auth":true`) || !strings.Contains(string(body), `"path":"/mcp"`) {
					t.Errorf("config %s", body)
				}
			}
		})
	}

	// A safety net for a broken feed, not a timing assertion.
	rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp := get(t, rctx, "/ui/events", bearer(aliceToken))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("feed: status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	feed := newSSEReader(resp.Body)
	next := func() (bridge.Snapshot, string) {
		t.Helper()
		ev, ok := feed.next()
		if !ok {
			t.Fatal("the feed ended")
		}
		var snap bridge.Snapshot
		if ev.event != "snapshot" || json.Unmarshal([]byte(ev.data), &snap) != nil {
			t.Fatalf("event %+v", ev)
		}
		return snap, ev.data
	}
	if snap, _ := next(); len(snap.Sessions) != 0 {
		t.Fatalf("first snapshot: %+v, want no sessions", snap)
	}
	sid := f.initializeAs(bearer(aliceToken))
	for {
		snap, raw := next()
		if len(snap.Sessions) == 0 {
			continue
		}
		s := snap.Sessions[0]
		if s.ID != sid[:8] || s.Principal != "ALICE_TOKEN" || s.ChildPid == 0 || len(snap.Children) != 1 {
			t.Fatalf("session %+v, children %+v: want id %s, ALICE_TOKEN, a child", s, snap.Children, sid[:8])
		}
		if strings.Contains(raw, sid) {
			t.Fatal("the feed shows a whole session id")
		}
		break
	}

	// The end of Options.Context (the bridge's shutdown) ends the feed.
	stop()
	for {
		if _, ok := feed.next(); !ok {
			break
		}
	}
	resp = get(t, rctx, "/ui/events", bearer(aliceToken))
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("feed after shutdown: status %d, want 503", resp.StatusCode)
	}
}

func TestWebPageOptions(t *testing.T) {
	t.Run("off by default", func(t *testing.T) {
		e := newEnv(t, envOpts{})
		resp, err := e.client.Get(e.srv.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET / without Options.Web: status %d, want 404", resp.StatusCode)
		}
	})
	t.Run("no auth: the page does not ask for a token", func(t *testing.T) {
		e := newEnv(t, envOpts{http: httpapi.Options{Web: true, Context: t.Context()}})
		resp, err := e.client.Get(e.srv.URL + "/ui/config.json")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), `"auth":false`) {
			t.Errorf("config %s", body)
		}
	})
	for _, path := range []string{"/", "/ui", "/ui/mcp"} {
		t.Run("endpoint at "+path, func(t *testing.T) {
			b, err := bridge.New(bridge.Config{Command: []string{"true"}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close(context.Background()) })
			_, err = httpapi.Handler(httpapi.Options{Bridge: b, Path: path, Web: true, DisableLegacySSE: true})
			if err == nil || !strings.Contains(err.Error(), "web page") {
				t.Errorf("err %v, want the path refused for the web page", err)
			}
		})
	}
}

// pageConfig is GET /ui/config.json as the page reads it.
type pageConfig struct {
	Servers []struct {
		Name, Path, URL string
		Auth, Stateless bool
		Endpoints       []struct{ Name, Path string }
	}
	Auth       bool
	PublicBase string
}

func getPageConfig(t *testing.T, client *http.Client, base string) pageConfig {
	t.Helper()
	resp, err := client.Get(base + "/ui/config.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var cfg pageConfig
	if err := json.NewDecoder(resp.Body).Decode(&cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestWebPageEndpoints: the page is told every endpoint it lists (the
// legacy ones only when served) and, from --public-url, where clients
// reach them.
func TestWebPageEndpoints(t *testing.T) {
	for _, tt := range []struct {
		name      string
		opts      httpapi.Options
		paths     []string
		url, base string
		stateless bool
	}{
		{"default", httpapi.Options{}, []string{"/sse", "/message", "/metrics", "/healthz", "/readyz"}, "", "", false},
		{"legacy off", httpapi.Options{DisableLegacySSE: true}, []string{"/metrics", "/healthz", "/readyz"}, "", "", false},
		{"stateless", httpapi.Options{Stateless: true}, []string{"/metrics", "/healthz", "/readyz"}, "", "", true},
		{"other paths", httpapi.Options{Path: "/api/mcp"}, []string{"/api/sse", "/api/message", "/metrics", "/healthz", "/readyz"}, "", "", false},
		{"public URL", httpapi.Options{PublicURL: "https://Bridge.Example.com/prefix/mcp"}, []string{"/sse", "/message", "/metrics", "/healthz", "/readyz"},
			"https://bridge.example.com/prefix/mcp", "https://bridge.example.com/prefix", false},
		{"public URL a proxy maps", httpapi.Options{PublicURL: "https://bridge.example.com/api"}, []string{"/sse", "/message", "/metrics", "/healthz", "/readyz"},
			"https://bridge.example.com/api", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.opts
			o.Web, o.Context = true, t.Context()
			e := newEnv(t, envOpts{http: o})
			cfg := getPageConfig(t, e.client, e.srv.URL)
			if len(cfg.Servers) != 1 {
				t.Fatalf("config %+v", cfg)
			}
			s := cfg.Servers[0]
			var paths []string
			for _, ep := range s.Endpoints {
				paths = append(paths, ep.Path)
				if ep.Name == "" {
					t.Errorf("endpoint %s has no name", ep.Path)
				}
			}
			if strings.Join(paths, " ") != strings.Join(tt.paths, " ") || s.URL != tt.url || cfg.PublicBase != tt.base || s.Stateless != tt.stateless || s.Auth || cfg.Auth {
				t.Errorf("config %+v\nwant endpoints %q, url %q, base %q, stateless %v", cfg, tt.paths, tt.url, tt.base, tt.stateless)
			}
		})
	}
	t.Run("auth", func(t *testing.T) {
		f := newAuthFixture(t, httpapi.Options{Web: true, Context: t.Context()})
		if cfg := getPageConfig(t, f.client, f.srv.URL); !cfg.Auth || len(cfg.Servers) != 1 || !cfg.Servers[0].Auth {
			t.Errorf("config %+v", cfg)
		}
	})
}
