package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// This file holds the one copy of the client configurations mcp-bridge
// gives its users: the web page's "Connect a client" panel shows them
// (GET /ui/clients.json), and the README quotes them for a bridge without
// a token (cmd/mcp-bridge's TestREADMEClients holds it to them). Change
// them here.

// TokenVar is the environment variable the snippets read the bearer
// token from, on the client's machine. Nothing sets it for the user: it
// holds the value of one of the bridge's --token-env variables (or a JWT
// the bridge accepts), which the page never knows. A bridge started with
// --token-env MCP_TOKEN reads the same variable, which makes the quick
// start one export on one machine.
const TokenVar = "MCP_TOKEN"

// tokenPlaceholder stands for the token where a client cannot read an
// environment variable (Claude Desktop's config file).
const tokenPlaceholder = "<your token>"

// ProtocolVersion is the MCP version the curl snippet asks for.
const ProtocolVersion = "2025-11-25"

// ClientTarget is the MCP endpoint the snippets point at.
type ClientTarget struct {
	// Name is the server's key in the clients' configuration files.
	// Default "mcp-bridge".
	Name string
	// URL is the full URL of the MCP endpoint (Streamable HTTP), as the
	// client reaches it: http(s), no user info, no query, no fragment.
	URL string
	// Auth: the endpoint requires a bearer token; each snippet sends
	// one, read from TokenVar (or a placeholder), never a real token.
	Auth bool
	// Stateless: the endpoint has no sessions, so curl sends no
	// Mcp-Session-Id.
	Stateless bool
}

// Snippet is one client's configuration.
type Snippet struct {
	ID    string `json:"id"`    // stable: "claude-desktop", "cursor", "vscode", "inspector", "curl"
	Title string `json:"title"` // the client's name
	Where string `json:"where"` // where the text goes
	Lang  string `json:"lang"`  // "json" or "sh"
	Text  string `json:"text"`  // the text to copy, verbatim
	Note  string `json:"note"`  // what to do with the token, and anything else to know
}

// ClientSnippets returns the configurations of Claude Desktop (through
// mcp-remote), Cursor, VS Code, the MCP Inspector and curl for t, in that
// order. t.URL must be valid (CheckClientURL).
func ClientSnippets(t ClientTarget) []Snippet {
	if t.Name == "" {
		t.Name = "mcp-bridge"
	}
	return []Snippet{claudeDesktop(t), cursor(t), vscode(t), inspector(t), curl(t)}
}

// CheckClientURL checks that u can go into the snippets: an absolute
// http(s) URL with a host and no user info, query or fragment (curl and
// the shell snippets quote it in single quotes, which a canonical URL
// never holds: url.URL.String escapes them).
func CheckClientURL(u string) error {
	p, err := url.Parse(u)
	switch {
	case err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || p.Opaque != "":
		return fmt.Errorf("want an absolute http or https URL")
	case p.User != nil || p.RawQuery != "" || p.Fragment != "" || strings.HasSuffix(u, "?") || strings.HasSuffix(u, "#"):
		return fmt.Errorf("want no user info, query or fragment")
	case strings.ContainsAny(u, "'\"\\ \t\r\n") || p.String() != u:
		return fmt.Errorf("want a canonical URL")
	}
	return nil
}

// claudeDesktop: Claude Desktop runs only local (stdio) servers from its
// config file, so mcp-remote (npm) bridges it to the URL. Its README
// (github.com/geelen/mcp-remote, "Custom Headers") passes the token
// through env as "Authorization:${AUTH_HEADER}", with no space, because
// Claude Desktop on Windows does not escape spaces inside args; and it
// accepts plain http only for localhost and 127.0.0.1 unless given
// --allow-http ("Flags").
func claudeDesktop(t ClientTarget) Snippet {
	type server struct {
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env,omitempty"`
	}
	s := server{Command: "npx", Args: []string{"-y", "mcp-remote", t.URL}}
	if u, _ := url.Parse(t.URL); u != nil && u.Scheme == "http" && u.Hostname() != "localhost" && u.Hostname() != "127.0.0.1" {
		s.Args = append(s.Args, "--allow-http")
	}
	note := "Needs Node.js (npx). Restart Claude Desktop after editing the file."
	if t.Auth {
		s.Args = append(s.Args, "--header", "Authorization:${AUTH_HEADER}")
		s.Env = map[string]string{"AUTH_HEADER": "Bearer " + tokenPlaceholder}
		note = "Replace " + tokenPlaceholder + " with your bearer token: the value of one of the bridge's --token-env variables, or a JWT it accepts. " + note
	}
	return Snippet{
		ID: "claude-desktop", Title: "Claude Desktop",
		Where: "claude_desktop_config.json (Settings → Developer → Edit Config; macOS: ~/Library/Application Support/Claude/, Windows: %APPDATA%\\Claude\\)",
		Lang:  "json", Text: jsonText(map[string]any{"mcpServers": map[string]server{t.Name: s}}), Note: note,
	}
}

// cursor: Cursor's mcp.json takes a remote server as "url" plus
// "headers", and interpolates ${env:NAME} in both (cursor.com/docs/mcp,
// "Config interpolation").
func cursor(t ClientTarget) Snippet {
	type server struct {
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers,omitempty"`
	}
	s := server{URL: t.URL}
	note := "Cursor connects over Streamable HTTP."
	if t.Auth {
		s.Headers = map[string]string{"Authorization": "Bearer ${env:" + TokenVar + "}"}
		note = "Cursor reads the token from " + TokenVar + " in its environment: set it to your bearer token before starting Cursor."
	}
	return Snippet{
		ID: "cursor", Title: "Cursor", Where: "~/.cursor/mcp.json (every project) or .cursor/mcp.json (one project)",
		Lang: "json", Text: jsonText(map[string]any{"mcpServers": map[string]server{t.Name: s}}), Note: note,
	}
}

// vscode: VS Code's mcp.json has "servers" (type "http", "url",
// "headers") and "inputs", whose ${input:id} VS Code asks the user for
// once and keeps in its secret storage
// (code.visualstudio.com/docs/copilot/reference/mcp-configuration).
func vscode(t ClientTarget) Snippet {
	type server struct {
		Type    string            `json:"type"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers,omitempty"`
	}
	type input struct {
		Type        string `json:"type"`
		ID          string `json:"id"`
		Description string `json:"description"`
		Password    bool   `json:"password"`
	}
	type file struct {
		Servers map[string]server `json:"servers"`
		Inputs  []input           `json:"inputs,omitempty"`
	}
	f := file{Servers: map[string]server{t.Name: {Type: "http", URL: t.URL}}}
	note := "Start the server from the file's CodeLens or with MCP: List Servers."
	if t.Auth {
		id := "mcp-bridge-token"
		f.Servers[t.Name] = server{Type: "http", URL: t.URL, Headers: map[string]string{"Authorization": "Bearer ${input:" + id + "}"}}
		f.Inputs = []input{{Type: "promptString", ID: id, Description: "Bearer token of " + t.URL, Password: true}}
		note = "VS Code asks for the token once and keeps it in its secret storage. " + note
	}
	return Snippet{
		ID: "vscode", Title: "VS Code", Where: ".vscode/mcp.json (workspace) or MCP: Open User Configuration",
		Lang: "json", Text: jsonText(f), Note: note,
	}
}

// inspector: the MCP Inspector (npm @modelcontextprotocol/inspector)
// connects to a remote server with --transport http --server-url, and
// sends each --header "Name: Value" (its docs/mcp-server-configuration.md,
// "The shared flags").
func inspector(t ClientTarget) Snippet {
	text := "npx -y @modelcontextprotocol/inspector --transport http --server-url " + shellQuote(t.URL)
	note := "Needs Node.js 22.19 or later; it opens the Inspector in your browser."
	if t.Auth {
		text += ` --header "Authorization: Bearer $` + TokenVar + `"`
		note = "Set " + TokenVar + " to your bearer token first (sh: export " + TokenVar + "=…, PowerShell: $" + TokenVar + " = '…'). " + note
	}
	return Snippet{ID: "inspector", Title: "MCP Inspector", Where: "a terminal", Lang: "sh", Text: text + "\n", Note: note}
}

// curl: the whole Streamable HTTP exchange by hand: initialize (whose
// response names the session in Mcp-Session-Id), then every request with
// Mcp-Session-Id and MCP-Protocol-Version, as the spec asks of a client
// after initialization, and DELETE to end the session.
func curl(t ClientTarget) Snippet {
	u := shellQuote(t.URL)
	var b strings.Builder
	common := " \\\n  -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream'"
	if t.Auth {
		common += " \\\n  -H \"Authorization: Bearer $" + TokenVar + "\""
	}
	session := ""
	if !t.Stateless {
		session = " -H \"Mcp-Session-Id: $SID\""
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + ProtocolVersion + `","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`
	if t.Stateless {
		b.WriteString("# initialize (this endpoint is stateless: no session to keep)\n")
		fmt.Fprintf(&b, "curl -sS -i %s%s \\\n  -d '%s'\n", u, common, init)
	} else {
		b.WriteString("# initialize: the response shows the server, and its Mcp-Session-Id header names the session\n")
		fmt.Fprintf(&b, "SID=$(curl -sS -i %s%s \\\n  -d '%s' \\\n  | tee /dev/stderr | tr -d '\\r' | awk 'tolower($1) == \"mcp-session-id:\" { print $2 }')\n", u, common, init)
	}
	b.WriteString("# then every request carries the session and the protocol version\n")
	for _, msg := range []string{
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	} {
		fmt.Fprintf(&b, "curl -sS %s%s \\\n  %s-H 'MCP-Protocol-Version: %s' \\\n  -d '%s'\n", u, common, strings.TrimPrefix(session+" ", " "), ProtocolVersion, msg)
	}
	note := "For a POSIX shell: macOS, Linux, or on Windows WSL or Git Bash."
	if t.Auth {
		note = "Set " + TokenVar + " to your bearer token first (export " + TokenVar + "=…). " + note
	}
	if !t.Stateless {
		b.WriteString("# end the session\n")
		auth := ""
		if t.Auth {
			auth = " -H \"Authorization: Bearer $" + TokenVar + "\""
		}
		fmt.Fprintf(&b, "curl -sS -X DELETE %s%s -H \"Mcp-Session-Id: $SID\"\n", u, auth)
	}
	return Snippet{ID: "curl", Title: "curl", Where: "a terminal", Lang: "sh", Text: b.String(), Note: note}
}

// jsonText is v as indented JSON, <, > and & left as they are.
func jsonText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		panic(err) // maps and structs of strings always encode
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell (and PowerShell) in single quotes.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
