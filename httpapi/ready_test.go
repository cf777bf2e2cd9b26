package httpapi

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// TestReadyz: 200 while a new session could start; 503 with a reason
// when it could not, and 200 again once it can. /healthz stays 200
// throughout: the process is alive.
func TestReadyz(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "server"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		cfg    bridge.Config
		before func(o *opsServer) // brings the bridge into the state tested
		reason string             // "" means ready
	}{
		{name: "fresh", cfg: bridge.Config{}},
		{name: "a command on PATH", cfg: bridge.Config{Command: []string{"sh", "-c", "exit 0"}}},
		{name: "relative to its working directory", cfg: bridge.Config{Command: []string{"./server"}, Dir: dir}},
		{name: "command not found", cfg: bridge.Config{Command: []string{"no-such-mcp-server-xyz"}}, reason: "command_not_found"},
		{name: "absolute path missing", cfg: bridge.Config{Command: []string{filepath.Join(dir, "missing")}}, reason: "command_not_found"},
		{name: "at max sessions", cfg: bridge.Config{MaxSessions: 1},
			before: func(o *opsServer) { o.session("2025-11-25") }, reason: "max_sessions"},
		{name: "below max sessions again", cfg: bridge.Config{MaxSessions: 1},
			before: func(o *opsServer) {
				sid := o.session("2025-11-25")
				r, _ := http.NewRequest(http.MethodDelete, o.srv.URL+DefaultPath, nil)
				r.Header.Set("Mcp-Session-Id", sid)
				o.send(r)
			}},
		{name: "draining", cfg: bridge.Config{}, before: func(o *opsServer) { o.b.Drain() }, reason: "closing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newOpsServer(t, tt.cfg)
			if tt.before != nil {
				tt.before(o)
			}
			r, _ := http.NewRequest(http.MethodGet, o.srv.URL+"/readyz", nil)
			resp, body := o.send(r)
			var got readiness
			if err := json.Unmarshal([]byte(body), &got); err != nil {
				t.Fatalf("body %q: %v", body, err)
			}
			switch {
			case tt.reason == "" && (resp.StatusCode != 200 || got.Status != "ready"):
				t.Errorf("%d %s, want 200 ready", resp.StatusCode, body)
			case tt.reason != "" && (resp.StatusCode != 503 || got.Status != "unavailable" || got.Reason != tt.reason || got.Message == ""):
				t.Errorf("%d %s, want 503 with reason %s and a message", resp.StatusCode, body, tt.reason)
			}
			if resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("Content-Type %q", resp.Header.Get("Content-Type"))
			}
			r, _ = http.NewRequest(http.MethodGet, o.srv.URL+"/healthz", nil)
			if resp, _ := o.send(r); resp.StatusCode != 200 {
				t.Errorf("/healthz: %d", resp.StatusCode)
			}
		})
	}
}

// TestReadyzHidesDetails: the unauthenticated probe never shows the
// command or the paths it looked in.
func TestReadyzHidesDetails(t *testing.T) {
	o := newOpsServer(t, bridge.Config{Command: []string{"/secret/place/mcp-server"}})
	r, _ := http.NewRequest(http.MethodGet, o.srv.URL+"/readyz", nil)
	_, body := o.send(r)
	if want := `{"status":"unavailable","reason":"command_not_found","message":"the MCP server's command cannot be found"}` + "\n"; body != want {
		t.Errorf("body %q, want %q", body, want)
	}
}
