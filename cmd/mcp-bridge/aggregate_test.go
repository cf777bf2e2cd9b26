package main

// The aggregate endpoint with real servers behind one /mcp: two
// server-everything, server-filesystem and the badchild, met by the Go
// SDK's client, the TypeScript SDK's v1 client and its v2 client pinned
// to 2026-07-28.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-bridge/mcp-bridge/aggregate"
	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// slowStarts is the flag whose 30 s lets every list wait for the Node
// servers' first start, seconds on a loaded machine: these tests are about
// reaching every server (httpapi's TestAggregateGoSDK holds the list's
// deadline against a server that hangs).
const slowStarts = "--aggregate-list-timeout"

// aggregateConfig writes a --config file whose servers are all served at
// /mcp too, and returns its path and the directory server-filesystem
// serves (holding hello.txt).
func aggregateConfig(t *testing.T, extra string) (file, dir string) {
	t.Helper()
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	node := testpeers.Node(t)
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from the filesystem"), 0o600); err != nil {
		t.Fatal(err)
	}
	fsEntry := filepath.Join(testpeers.NodeModules(t), "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
	everything := `{"command": ` + quote(node) + `, "args": [` + quote(everythingEntry(t)) + `]}`
	file = filepath.Join(t.TempDir(), "servers.json")
	cfg := `{"aggregate": true, "mcpServers": {
		"everything": ` + everything + `,
		"everything2": ` + everything + `,
		"fs": {"command": ` + quote(node) + `, "args": [` + quote(fsEntry) + `, ` + quote(dir) + `]},
		"child": {"command": ` + quote(testpeers.BuildGo(t, "./testdata/badchild")) + `}` + memoryServer(t) + extra + `}}`
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return file, dir
}

// memoryServer is server-memory's entry of a --config file (with its
// leading comma), "" when it is not installed: the pinned Node modules
// gained it with the aggregate, and a checkout whose modules predate it
// runs the tests without it.
func memoryServer(t *testing.T) string {
	entry := filepath.Join(testpeers.NodeModules(t), "@modelcontextprotocol", "server-memory", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		t.Log("server-memory is not installed (npm ci --prefix testdata/node): left out")
		return ""
	}
	b, _ := json.Marshal(map[string]any{"command": testpeers.Node(t), "args": []string{entry},
		"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}})
	return `, "memory": ` + string(b)
}

// callText calls the tool name and returns its result's text and isError.
func callText(ctx context.Context, t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return strings.Join(out, "\n"), res.IsError
}

// TestAggregateRealServers: the Go SDK's client lists the tools of every
// server behind /mcp and calls one of each, with sampling and elicitation
// from server-everything; the same resource URI of two servers reaches
// each.
func TestAggregateRealServers(t *testing.T) {
	t.Parallel()
	file, dir := aggregateConfig(t, "")
	p := startBridge(t, environWithout(envPrefix), "--config", file, "--stop-grace", "500ms", slowStarts, "30s")
	p.waitLog(`msg="the aggregate endpoint serves these servers as one"`)
	ctx, cancel := context.WithTimeout(t.Context(), 2*safetyNet)
	defer cancel()
	sampled, elicited := make(chan string, 4), make(chan string, 4)
	client := mcp.NewClient(&mcp.Implementation{Name: "aggregate-go", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			sampled <- "asked"
			return &mcp.CreateMessageResult{Role: "assistant", Model: "aggregate", Content: &mcp.TextContent{Text: "sampled through the aggregate"}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			elicited <- req.Params.Message
			return &mcp.ElicitResult{Action: "accept", Content: maps.Clone(elicitedContent)}, nil
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.Base + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if caps := cs.InitializeResult().Capabilities; caps.Tools == nil || !caps.Tools.ListChanged || caps.Resources == nil || caps.Prompts == nil {
		t.Errorf("merged capabilities %+v: want tools (listChanged), resources and prompts", caps)
	}
	if in := cs.InitializeResult().Instructions; in != "" && !strings.Contains(in, "## ") {
		t.Errorf("instructions not headed by server: %q", in)
	}

	var tools []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tool.Name)
	}
	for _, want := range []string{"everything__echo", "everything2__echo", "child__echo", "fs__read_text_file", "everything__trigger-sampling-request"} {
		if !slices.Contains(tools, want) {
			t.Errorf("tools/list lacks %s: %q", want, tools)
		}
	}
	call := func(name string, args map[string]any) string {
		t.Helper()
		out, isError := callText(ctx, t, cs, name, args)
		if isError {
			t.Errorf("%s: isError: %q", name, out)
		}
		return out
	}
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"everything__echo", map[string]any{"message": "one"}, "one"},
		{"everything2__echo", map[string]any{"message": "two"}, "two"},
		{"child__echo", map[string]any{"message": "three"}, "three"},
		{"fs__read_text_file", map[string]any{"path": filepath.Join(dir, "hello.txt")}, "hello from the filesystem"},
		{"everything__trigger-sampling-request", map[string]any{"prompt": "hi", "maxTokens": 10}, "sampled through the aggregate"},
		{"everything__trigger-elicitation-request", map[string]any{}, "Ada Lovelace"},
	} {
		if got := call(c.tool, c.args); !strings.Contains(got, c.want) {
			t.Errorf("%s answered %q, want %q in it", c.tool, got, c.want)
		}
	}
	if slices.Contains(tools, "memory__create_entities") {
		call("memory__create_entities", map[string]any{"entities": []map[string]any{{"name": "Ada", "entityType": "person", "observations": []string{"wrote the first program"}}}})
		if got := call("memory__read_graph", map[string]any{}); !strings.Contains(got, "wrote the first program") {
			t.Errorf("memory__read_graph after create_entities: %q", got)
		}
	} else if cfg, _ := os.ReadFile(file); strings.Contains(string(cfg), `"memory":`) {
		t.Errorf("server-memory is configured but its tools are not listed: %q", tools)
	}
	if len(sampled) != 1 || len(elicited) != 1 {
		t.Errorf("the client was asked %d samplings and %d elicitations, want 1 each", len(sampled), len(elicited))
	}

	// The same URI on two servers: each reached, each answer its own.
	var uri string
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if rest, ok := strings.CutPrefix(r.URI, "mcp-bridge://everything/"); ok && strings.HasPrefix(rest, "demo://resource/static/document/") {
			uri = rest
			break
		}
	}
	if uri == "" {
		t.Fatal("no static document of server-everything listed")
	}
	for _, server := range []string{"everything", "everything2"} {
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mcp-bridge://" + server + "/" + uri})
		if err != nil {
			t.Fatalf("read %s of %s: %v", uri, server, err)
		}
		if len(res.Contents) != 1 || res.Contents[0].URI != "mcp-bridge://"+server+"/"+uri || res.Contents[0].Text == "" {
			t.Errorf("read %s of %s: %+v", uri, server, res.Contents)
		}
	}
}

// TestAggregateTSClient: the TypeScript SDK's v1 client, on Streamable
// HTTP and on the legacy HTTP+SSE transport, lists the tools behind /mcp
// (and /sse) and calls echo, a tool with progress and a tool that asks it
// for sampling, of server-everything and of the badchild.
func TestAggregateTSClient(t *testing.T) {
	t.Parallel()
	file, _ := aggregateConfig(t, "")
	p := startBridge(t, environWithout(envPrefix), "--config", file, "--stop-grace", "500ms", slowStarts, "30s")
	p.waitLog(`msg="the aggregate endpoint serves these servers as one"`)
	for _, mode := range []struct{ name, path string }{{"streamable", "/mcp"}, {"sse", "/sse"}} {
		for _, server := range []string{"everything", "child"} {
			t.Run(mode.name+"/"+server, func(t *testing.T) {
				res := testpeers.RunTSClientEnv(t, mode.name, p.Base+mode.path, []string{"TSCLIENT_PREFIX=" + server + "__", "TSCLIENT_MESSAGE=hello " + server})
				if !slices.Contains(res.Tools, server+"__echo") || !slices.Contains(res.Tools, "fs__read_text_file") {
					t.Errorf("tools %q", res.Tools)
				}
				if res.Echo != "hello "+server && !strings.Contains(res.Echo, "hello "+server) {
					t.Errorf("echo %q", res.Echo)
				}
				if len(res.Progress) == 0 || !strings.Contains(res.Sample, "sampled:") {
					t.Errorf("progress %v, sample %q", res.Progress, res.Sample)
				}
			})
		}
	}
}

// TestAggregateModernClient: the TypeScript SDK's v2 client pinned to
// 2026-07-28 discovers the aggregate, lists its tools, calls each
// server's echo, answers server-everything's sampling and elicitation
// through MRTR retries (which must reach the server whose requestState
// they carry), and reads a resource by its aggregate URI.
func TestAggregateModernClient(t *testing.T) {
	t.Parallel()
	// Stateless too (--stateless): the endpoint takes 2026-07-28
	// requests without sessions, sampling and elicitation included.
	for _, flags := range [][]string{nil, {"--stateless"}} {
		t.Run(strings.Join(append([]string{"flags"}, flags...), " "), func(t *testing.T) {
			t.Parallel()
			testAggregateModernClient(t, flags)
		})
	}
}

func testAggregateModernClient(t *testing.T, flags []string) {
	file, _ := aggregateConfig(t, "")
	p := startBridge(t, environWithout(envPrefix), append([]string{"--config", file, "--stop-grace", "500ms", slowStarts, "30s"}, flags...)...)
	p.waitLog(`msg="the aggregate endpoint serves these servers as one"`)
	if len(flags) > 0 {
		p.waitLog(`msg="the aggregate endpoint is stateless (--stateless): it serves MCP 2026-07-28 requests only"`)
	}
	node := testpeers.Node(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*safetyNet)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(filepath.Dir(testpeers.NodeModules(t)), "aggregateclient.mjs"), p.Base+"/mcp", "everything", "everything2", "child")
	cmd.WaitDelay = 5 * time.Second
	stdout, err := cmd.Output()
	var res struct {
		ProtocolVersion string
		ServerName      string
		Tools           []string
		Echo            map[string]string
		Sample, Elicit  string
		Read            struct{ URI, Text string }
		Errors          []string
	}
	lines := strings.Split(strings.TrimSpace(string(stdout)), "\n")
	if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &res); jerr != nil || err != nil {
		t.Fatalf("aggregateclient: %v %v\n%s", err, jerr, stdout)
	}
	if res.ProtocolVersion != "2026-07-28" {
		t.Errorf("negotiated %q", res.ProtocolVersion)
	}
	for _, server := range []string{"everything", "everything2", "child"} {
		if !strings.Contains(res.Echo[server], "hello "+server) {
			t.Errorf("%s__echo answered %q", server, res.Echo[server])
		}
	}
	if !strings.Contains(res.Sample, "sampled by aggregateclient") || !strings.Contains(res.Elicit, "Ada Lovelace") {
		t.Errorf("sampling answered %q, elicitation %q", res.Sample, res.Elicit)
	}
	if !strings.HasPrefix(res.Read.URI, "mcp-bridge://") || res.Read.Text == "" {
		t.Errorf("read %+v", res.Read)
	}
}

// TestAggregateReload: a reload that renames a tool, removes a server and
// adds one reaches a session already open on /mcp: it is told its tools
// changed, lists the new names, the new server's tools answer, and the
// removed server's are unknown. The unchanged server keeps its child.
func TestAggregateReload(t *testing.T) {
	t.Parallel()
	badchild := testpeers.BuildGo(t, "./testdata/badchild")
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	file := filepath.Join(t.TempDir(), "servers.json")
	write := func(servers string) {
		t.Helper()
		tmp := file + ".tmp"
		if err := os.WriteFile(tmp, []byte(`{"aggregate": true, "mcpServers": {`+servers+`}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, file); err != nil {
			t.Fatal(err)
		}
	}
	write(`"a": {"command": ` + quote(badchild) + `}, "gone": {"command": ` + quote(badchild) + `}`)
	p := startBridge(t, environWithout(envPrefix), "--config", file, "--stop-grace", "500ms", slowStarts, "30s")
	ctx, cancel := context.WithTimeout(t.Context(), 2*safetyNet)
	defer cancel()
	changed := make(chan struct{}, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "aggregate-reload", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.Base + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(name string, args map[string]any) (string, bool) {
		t.Helper()
		return callText(ctx, t, cs, name, args)
	}
	pid, _ := call("a__pid", map[string]any{})
	tools := func() []string {
		var out []string
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, tool.Name)
		}
		return out
	}
	if got := tools(); !slices.Contains(got, "a__echo") || !slices.Contains(got, "gone__echo") {
		t.Fatalf("tools before the reload: %q", got)
	}

	write(`"a": {"command": ` + quote(badchild) + `, "rename": {"echo": "say"}}, "added": {"command": ` + quote(badchild) + `}`)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no notifications/tools/list_changed after the reload")
	}
	got := tools()
	for _, want := range []string{"a__say", "added__echo"} {
		if !slices.Contains(got, want) {
			t.Errorf("tools after the reload lack %s: %q", want, got)
		}
	}
	for _, gone := range []string{"a__echo", "gone__echo"} {
		if slices.Contains(got, gone) {
			t.Errorf("tools after the reload still hold %s", gone)
		}
	}
	if out, isErr := call("a__say", map[string]any{"message": "renamed"}); out != "renamed" || isErr {
		t.Errorf("a__say answered %q", out)
	}
	if out, isErr := call("added__echo", map[string]any{"message": "new"}); out != "new" || isErr {
		t.Errorf("added__echo answered %q", out)
	}
	// A removed server's tools are no longer the aggregate's: unknown.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "gone__pid", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), "Unknown tool") {
		t.Errorf("gone__pid after its removal: %v, want Unknown tool", err)
	}
	if got, _ := call("a__pid", map[string]any{}); got != pid {
		t.Errorf("a's child changed from %s to %s: a rename restarted it", pid, got)
	}
}

// TestREADMEAggregate: the README's aggregate example, its servers run
// from the pinned Node modules instead of npx (server-memory is not among
// them, and is left out), is a file the bridge takes, and its one URL
// lists the tools the README names.
func TestREADMEAggregate(t *testing.T) {
	t.Parallel()
	_, section, _ := strings.Cut(readme(t), "\n## One URL for many servers\n")
	blocks := codeBlocks(section)
	if len(blocks) < 4 || blocks[0].lang != "json" || !strings.Contains(blocks[1].text, "mcp-bridge --config servers.json") ||
		!strings.Contains(blocks[2].text, "http://127.0.0.1:8080/mcp") || !strings.Contains(blocks[3].text, "http://127.0.0.1:8080/mcp") {
		t.Fatalf("the aggregate section lacks its file, command and client configurations: %v", blocks)
	}
	if says := fmt.Sprintf("(`--aggregate-list-timeout`, %g s)", aggregate.DefaultListTimeout.Seconds()); !strings.Contains(section, says) {
		t.Errorf("the aggregate section does not say %s", says)
	}
	var file struct {
		Aggregate  bool `json:"aggregate"`
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(blocks[0].text), &file); err != nil || !file.Aggregate {
		t.Fatalf("the example: %v, aggregate %v", err, file.Aggregate)
	}
	node, modules := testpeers.Node(t), testpeers.NodeModules(t)
	dir := t.TempDir()
	servers := map[string]any{}
	for name, s := range file.MCPServers {
		if len(s.Args) < 2 || s.Command != "npx" {
			t.Fatalf("server %s: %+v", name, s)
		}
		entry := filepath.Join(modules, s.Args[1], "dist", "index.js")
		if _, err := os.Stat(entry); err != nil {
			t.Logf("%s (%s) is not installed: left out", name, s.Args[1])
			continue
		}
		args := append([]string{entry}, s.Args[2:]...)
		if name == "filesystem" {
			args[1] = dir // the example's /srv/data
		}
		servers[name] = map[string]any{"command": node, "args": args}
	}
	b, _ := json.Marshal(map[string]any{"aggregate": true, "mcpServers": servers})
	path := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBridge(t, environWithout(envPrefix), "--config", path, slowStarts, "30s")
	ctx, cancel := context.WithTimeout(t.Context(), 2*safetyNet)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "readme", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: p.Base + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var tools []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tool.Name)
	}
	for _, want := range regexp.MustCompile("`([a-z]+__[a-z_]+)`").FindAllStringSubmatch(section[:strings.Index(section, "\n## ")], -1) {
		if strings.HasPrefix(want[1], "memory__") && servers["memory"] == nil {
			continue
		}
		if !slices.Contains(tools, want[1]) {
			t.Errorf("the README names %s; the tools are %q", want[1], tools)
		}
	}
}
