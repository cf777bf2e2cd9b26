// Command foldchild is a stdio MCP server that reads every message the way
// many Go servers do: encoding/json into structs, which matches keys
// ignoring case (and folds ſ onto s, the Kelvin sign onto k) and keeps the
// last of a key given twice. Through it, mcp-bridge's tests check that what
// the bridge decided on (the method, the tool, the id) is what the server
// ran: a message whose keys fold must not reach it.
//
// Tools: echo {message} answers message; secret {} appends "secret ran" to
// the file named by $FOLDCHILD_LOG (the tests deny it by policy, and read
// the file to see that it never ran) and answers "the secret".
//
// With -modern it is a 2026-07-28 server: it answers server/discover and
// takes requests without initialize, and has a third tool, confirm {...}:
// called without requestState it answers input_required, asking an
// elicitation (key "ok") with a requestState of its own, "child-state-N"
// (logged as "issued child-state-N"); a retry with a requestState answers
// "confirmed STATE ARGUMENTS" (logged as "received STATE"). Like many
// servers, it trusts whatever state it is given.
//
// Every request it runs is appended to $FOLDCHILD_LOG too, as
// "METHOD TOOL", so a test sees what the server acted on.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
)

type message struct {
	JSONRPC string           `json:"jsonrpc"`
	ID      *json.RawMessage `json:"id"`
	Method  string           `json:"method"`
	Params  struct {
		Name            string         `json:"name"`
		RequestState    string         `json:"requestState"`
		URI             string         `json:"uri"`
		ProtocolVersion string         `json:"protocolVersion"`
		Arguments       map[string]any `json:"arguments"`
		Meta            struct {
			ProgressToken any `json:"progressToken"`
		} `json:"_meta"`
	} `json:"params"`
}

var (
	out   = bufio.NewWriter(os.Stdout)
	outMu sync.Mutex
)

func write(v any) {
	b, _ := json.Marshal(v)
	outMu.Lock()
	defer outMu.Unlock()
	out.Write(append(b, '\n'))
	out.Flush()
}

func note(line string) {
	path := os.Getenv("FOLDCHILD_LOG")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "foldchild:", err)
		return
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}

func text(s string) map[string]any {
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}}
}

func main() {
	modern := flag.Bool("modern", false, "speak MCP 2026-07-28")
	flag.Parse()
	tools := []any{
		map[string]any{"name": "echo", "inputSchema": map[string]any{"type": "object"}},
		map[string]any{"name": "secret", "inputSchema": map[string]any{"type": "object"}},
	}
	if *modern {
		tools = append(tools, map[string]any{"name": "confirm", "inputSchema": map[string]any{"type": "object"}})
	}
	states := 0
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	for in.Scan() {
		var m message
		if err := json.Unmarshal(in.Bytes(), &m); err != nil {
			fmt.Fprintln(os.Stderr, "foldchild: undecodable line:", err)
			continue
		}
		if m.ID == nil {
			continue // a notification, or a response
		}
		id := *m.ID
		answer := func(result any) {
			write(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
		}
		if m.Method != "initialize" && m.Method != "server/discover" && m.Method != "ping" {
			note(m.Method + " " + m.Params.Name)
		}
		switch m.Method {
		case "initialize":
			answer(map[string]any{"protocolVersion": m.Params.ProtocolVersion,
				"capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo":   map[string]any{"name": "foldchild", "version": "1"}})
		case "server/discover":
			if !*modern {
				write(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32601, "message": "Method not found"}})
				continue
			}
			answer(map[string]any{"supportedVersions": []string{"2026-07-28"},
				"capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo":   map[string]any{"name": "foldchild", "version": "1"}})
		case "ping":
			answer(map[string]any{})
		case "tools/list":
			r := map[string]any{"tools": tools}
			if *modern {
				r["resultType"] = "complete"
			}
			answer(r)
		case "tools/call":
			var r map[string]any
			switch m.Params.Name {
			case "echo":
				msg, _ := m.Params.Arguments["message"].(string)
				r = text(msg)
			case "secret":
				note("secret ran")
				r = text("the secret")
			case "confirm":
				if !*modern {
					break
				}
				if m.Params.RequestState == "" {
					states++
					state := fmt.Sprintf("child-state-%d", states)
					note("issued " + state)
					answer(map[string]any{"resultType": "input_required", "requestState": state,
						"inputRequests": map[string]any{"ok": map[string]any{"method": "elicitation/create", "params": map[string]any{
							"mode": "form", "message": "Confirm?",
							"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}},
						}}}})
					continue
				}
				note("received " + m.Params.RequestState)
				args, _ := json.Marshal(m.Params.Arguments)
				r = text("confirmed " + m.Params.RequestState + " " + string(args))
			}
			if r == nil {
				write(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32602, "message": "unknown tool " + m.Params.Name}})
				continue
			}
			if *modern {
				r["resultType"] = "complete"
			}
			answer(r)
		default:
			write(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32601, "message": "Method not found: " + m.Method}})
		}
	}
}
