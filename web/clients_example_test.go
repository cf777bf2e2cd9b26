package web_test

import (
	"fmt"

	"github.com/mcp-bridge/mcp-bridge/web"
)

// ExampleClientSnippets prints the snippets the web page gives for a
// bridge on its default port, with a token (the README quotes them
// without one).
func ExampleClientSnippets() {
	for _, s := range web.ClientSnippets(web.ClientTarget{URL: "http://127.0.0.1:8080/mcp", Auth: true}) {
		fmt.Printf("## %s (%s)\n%s%s\n\n", s.Title, s.Where, s.Text, s.Note)
	}
	// Output:
	// ## Claude Desktop (claude_desktop_config.json (Settings → Developer → Edit Config; macOS: ~/Library/Application Support/Claude/, Windows: %APPDATA%\Claude\))
	// {
	//   "mcpServers": {
	//     "mcp-bridge": {
	//       "command": "npx",
	//       "args": [
	//         "-y",
	//         "mcp-remote",
	//         "http://127.0.0.1:8080/mcp",
	//         "--header",
	//         "Authorization:${AUTH_HEADER}"
	//       ],
	//       "env": {
	//         "AUTH_HEADER": "Bearer <your token>"
	//       }
	//     }
	//   }
	// }
	// Replace <your token> with your bearer token: the value of one of the bridge's --token-env variables, or a JWT it accepts. Needs Node.js (npx). Restart Claude Desktop after editing the file.
	//
	// ## Cursor (~/.cursor/mcp.json (every project) or .cursor/mcp.json (one project))
	// {
	//   "mcpServers": {
	//     "mcp-bridge": {
	//       "url": "http://127.0.0.1:8080/mcp",
	//       "headers": {
	//         "Authorization": "Bearer ${env:MCP_TOKEN}"
	//       }
	//     }
	//   }
	// }
	// Cursor reads the token from MCP_TOKEN in its environment: set it to your bearer token before starting Cursor.
	//
	// ## VS Code (.vscode/mcp.json (workspace) or MCP: Open User Configuration)
	// {
	//   "servers": {
	//     "mcp-bridge": {
	//       "type": "http",
	//       "url": "http://127.0.0.1:8080/mcp",
	//       "headers": {
	//         "Authorization": "Bearer ${input:mcp-bridge-token}"
	//       }
	//     }
	//   },
	//   "inputs": [
	//     {
	//       "type": "promptString",
	//       "id": "mcp-bridge-token",
	//       "description": "Bearer token of http://127.0.0.1:8080/mcp",
	//       "password": true
	//     }
	//   ]
	// }
	// VS Code asks for the token once and keeps it in its secret storage. Start the server from the file's CodeLens or with MCP: List Servers.
	//
	// ## MCP Inspector (a terminal)
	// npx -y @modelcontextprotocol/inspector --transport http --server-url 'http://127.0.0.1:8080/mcp' --header "Authorization: Bearer $MCP_TOKEN"
	// Set MCP_TOKEN to your bearer token first (sh: export MCP_TOKEN=…, PowerShell: $MCP_TOKEN = '…'). Needs Node.js 22.19 or later; it opens the Inspector in your browser.
	//
	// ## curl (a terminal)
	// # initialize: the response shows the server, and its Mcp-Session-Id header names the session
	// SID=$(curl -sS -i 'http://127.0.0.1:8080/mcp' \
	//   -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
	//   -H "Authorization: Bearer $MCP_TOKEN" \
	//   -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}' \
	//   | tee /dev/stderr | tr -d '\r' | awk 'tolower($1) == "mcp-session-id:" { print $2 }')
	// # then every request carries the session and the protocol version
	// curl -sS 'http://127.0.0.1:8080/mcp' \
	//   -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
	//   -H "Authorization: Bearer $MCP_TOKEN" \
	//   -H "Mcp-Session-Id: $SID" -H 'MCP-Protocol-Version: 2025-11-25' \
	//   -d '{"jsonrpc":"2.0","method":"notifications/initialized"}'
	// curl -sS 'http://127.0.0.1:8080/mcp' \
	//   -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
	//   -H "Authorization: Bearer $MCP_TOKEN" \
	//   -H "Mcp-Session-Id: $SID" -H 'MCP-Protocol-Version: 2025-11-25' \
	//   -d '{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
	// # end the session
	// curl -sS -X DELETE 'http://127.0.0.1:8080/mcp' -H "Authorization: Bearer $MCP_TOKEN" -H "Mcp-Session-Id: $SID"
	// Set MCP_TOKEN to your bearer token first (export MCP_TOKEN=…). For a POSIX shell: macOS, Linux, or on Windows WSL or Git Bash.
}
