package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
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
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("feed with a token-protected server and no bridge-wide token: %d, want 403", resp.StatusCode)
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
