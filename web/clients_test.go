package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/web"
)

// TestClientSnippets: every client gets the full URL; a token only as a
// reference (a variable, an input, a placeholder), never a value; what
// depends on the endpoint (auth, plain http off loopback, sessions)
// shows.
func TestClientSnippets(t *testing.T) {
	const u = "https://bridge.example.com/servers/github/mcp"
	for _, tt := range []struct {
		name    string
		target  web.ClientTarget
		want    map[string][]string // by snippet id
		notWant map[string][]string
	}{
		{
			name:   "with a token",
			target: web.ClientTarget{Name: "github", URL: u, Auth: true},
			want: map[string][]string{
				"claude-desktop": {`"github": {`, `"mcp-remote",`, `"` + u + `",`, `"Authorization:${AUTH_HEADER}"`, `"AUTH_HEADER": "Bearer <your token>"`},
				"cursor":         {`"github": {`, `"url": "` + u + `"`, `"Authorization": "Bearer ${env:MCP_TOKEN}"`},
				"vscode":         {`"github": {`, `"type": "http"`, `"url": "` + u + `"`, `"Authorization": "Bearer ${input:mcp-bridge-token}"`, `"password": true`},
				"inspector":      {`--transport http --server-url '` + u + `' --header "Authorization: Bearer $MCP_TOKEN"`},
				"curl":           {`'` + u + `'`, `"Authorization: Bearer $MCP_TOKEN"`, `"method":"initialize"`, `-H "Mcp-Session-Id: $SID" -H 'MCP-Protocol-Version: 2025-11-25'`, `"method":"notifications/initialized"`, `"method":"tools/list"`, `-X DELETE`},
			},
			notWant: map[string][]string{"claude-desktop": {"--allow-http"}},
		},
		{
			name:   "without a token",
			target: web.ClientTarget{URL: "http://127.0.0.1:8080/mcp"},
			want: map[string][]string{
				"claude-desktop": {`"mcp-bridge": {`, `"http://127.0.0.1:8080/mcp"`},
				"cursor":         {`"mcp-bridge": {`},
				"vscode":         {`"mcp-bridge": {`},
			},
			notWant: map[string][]string{
				"claude-desktop": {"Authorization", "AUTH_HEADER", "--allow-http"},
				"cursor":         {"Authorization", "headers"},
				"vscode":         {"Authorization", "inputs"},
				"inspector":      {"Authorization"},
				"curl":           {"Authorization"},
			},
		},
		{
			name:   "plain http off loopback",
			target: web.ClientTarget{URL: "http://10.0.0.5:8080/mcp", Auth: true},
			want:   map[string][]string{"claude-desktop": {`"--allow-http"`}},
		},
		{
			name:    "stateless",
			target:  web.ClientTarget{URL: u, Stateless: true},
			want:    map[string][]string{"curl": {`"method":"initialize"`, `"method":"tools/list"`}},
			notWant: map[string][]string{"curl": {"Mcp-Session-Id", "SID", "DELETE"}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			snippets := web.ClientSnippets(tt.target)
			ids := []string{}
			for _, s := range snippets {
				ids = append(ids, s.ID)
				if s.Title == "" || s.Where == "" || s.Note == "" || s.Text == "" {
					t.Errorf("%s: incomplete: %+v", s.ID, s)
				}
				if s.Lang == "json" && !json.Valid([]byte(s.Text)) {
					t.Errorf("%s: not valid JSON:\n%s", s.ID, s.Text)
				}
				if !strings.Contains(s.Text, tt.target.URL) {
					t.Errorf("%s: no URL %s:\n%s", s.ID, tt.target.URL, s.Text)
				}
				for _, w := range tt.want[s.ID] {
					if !strings.Contains(s.Text, w) {
						t.Errorf("%s: lacks %q:\n%s", s.ID, w, s.Text)
					}
				}
				for _, w := range tt.notWant[s.ID] {
					if strings.Contains(s.Text, w) {
						t.Errorf("%s: has %q:\n%s", s.ID, w, s.Text)
					}
				}
			}
			if got := strings.Join(ids, ","); got != "claude-desktop,cursor,vscode,inspector,curl" {
				t.Errorf("snippets %s", got)
			}
		})
	}
}

func TestCheckClientURL(t *testing.T) {
	for _, tt := range []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:8080/mcp", true},
		{"https://bridge.example.com/prefix/servers/a-b_c/mcp", true},
		{"http://[::1]:8080/mcp", true},
		{"ftp://h/mcp", false},
		{"/mcp", false},
		{"http:///mcp", false},
		{"http://u:p@h/mcp", false},
		{"http://h/mcp?x=1", false},
		{"http://h/mcp#x", false},
		{"http://h/m'cp", false},
		{"http://h/m cp", false},
		{"http://h/m%20cp", true},
	} {
		if err := web.CheckClientURL(tt.url); (err == nil) != tt.ok {
			t.Errorf("CheckClientURL(%q) = %v, want ok %v", tt.url, err, tt.ok)
		}
	}
}

// TestClientsEndpoint: GET /ui/clients.json renders the snippets of a
// server of the page at the URL the page gives, and nothing else.
func TestClientsEndpoint(t *testing.T) {
	h, err := web.Handler(web.Page{Servers: []web.Server{
		{Name: "default", Path: "/mcp", Auth: true},
		{Name: "open", Path: "/servers/open/mcp", Stateless: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	get := func(server, u string) (int, []web.Snippet) {
		t.Helper()
		resp, err := srv.Client().Get(srv.URL + "/ui/clients.json?" + url.Values{"server": {server}, "url": {u}}.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var out []web.Snippet
		if resp.StatusCode == http.StatusOK {
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("Content-Type %q, nosniff %q", ct, resp.Header.Get("X-Content-Type-Options"))
			}
			if err := json.Unmarshal(body, &out); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
		}
		return resp.StatusCode, out
	}
	status, snippets := get("default", "http://127.0.0.1:1234/mcp")
	if status != 200 || len(snippets) != 5 || !strings.Contains(snippets[1].Text, `"mcp-bridge": {`) || !strings.Contains(snippets[1].Text, "Bearer ${env:MCP_TOKEN}") {
		t.Errorf("default: %d %+v", status, snippets)
	}
	status, snippets = get("open", "https://h.example/servers/open/mcp")
	if status != 200 || len(snippets) != 5 || !strings.Contains(snippets[1].Text, `"open": {`) || strings.Contains(snippets[4].Text, "Mcp-Session-Id") || strings.Contains(snippets[1].Text, "Authorization") {
		t.Errorf("open: %d %+v", status, snippets)
	}
	for _, tt := range []struct{ server, url string }{
		{"nope", "http://127.0.0.1:1234/mcp"},
		{"default", "javascript:alert(1)"},
		{"default", "http://127.0.0.1:1234/mcp'; rm -rf ~; '"},
		{"default", "http://h/" + strings.Repeat("a", 3000)},
	} {
		if status, _ := get(tt.server, tt.url); status < 400 {
			t.Errorf("server %q, url %q: status %d, want refused", tt.server, tt.url, status)
		}
	}
}
