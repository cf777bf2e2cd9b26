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
