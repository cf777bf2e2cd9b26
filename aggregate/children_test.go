package aggregate_test

// The aggregate with real servers behind it: child processes (badchild,
// server-everything) reached through the bridge's public API, a session
// per server, as the endpoint will reach them. The Lister here is what the
// wiring's will be: the Table's own call on the server's session.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/aggregate"
	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// server is one server of the aggregate under test: a bridge with one
// session, whose child is the server's process.
type server struct {
	name    string
	session *bridge.Session
}

// startServer starts argv behind a bridge and opens a session on it. The
// bridge (and its child) is closed when the test ends.
func startServer(t *testing.T, name string, argv ...string) server {
	t.Helper()
	br, err := bridge.New(bridge.Config{
		Command: argv,
		Env:     []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()},
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = br.Close(ctx)
	})
	msgs, _, err := bridge.ParseBody([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"aggregate-test","version":"1"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, st, err := br.Initialize(ctx, bridge.InitRequest{Message: msgs[0], JSONOnly: true})
	if err != nil {
		t.Fatalf("%s: initialize: %v", name, err)
	}
	if _, err := st.Collect(ctx, nil); err != nil {
		t.Fatalf("%s: initialize: %v", name, err)
	}
	msgs, _, _ = bridge.ParseBody([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if _, err := s.Send(msgs, true); err != nil {
		t.Fatalf("%s: initialized: %v", name, err)
	}
	return server{name: name, session: s}
}

// send sends one request to the server and returns its answer.
func (s server) send(ctx context.Context, msg []byte) ([]byte, error) {
	msgs, _, err := bridge.ParseBody(msg)
	if err != nil {
		return nil, err
	}
	st, err := s.session.Send(msgs, true)
	if err != nil {
		return nil, err
	}
	out, err := st.Collect(ctx, nil)
	if err != nil {
		return nil, err
	}
	if len(out) != 1 {
		return nil, fmt.Errorf("%d answers", len(out))
	}
	return out[0], nil
}

// sessionLister lists on the servers' sessions with the Table's own calls.
type sessionLister struct {
	table   *aggregate.Table
	servers map[string]server
}

func (l sessionLister) List(ctx context.Context, name, method, cursor string) (json.RawMessage, error) {
	params := []byte(`{}`)
	if cursor != "" {
		params, _ = json.Marshal(map[string]string{"cursor": cursor})
	}
	id, msg := l.table.Call(name, method, params)
	answer, err := l.servers[name].send(ctx, msg)
	if err != nil {
		l.table.Forget(id)
		return nil, err
	}
	d, err := l.table.FromServer(name, answer)
	if err != nil || d.Dest != aggregate.ToCaller || d.ID != id {
		return nil, fmt.Errorf("answer %s: %+v, %v", answer, d, err)
	}
	var r struct {
		Result json.RawMessage
		Error  *struct{ Message string }
	}
	if err := json.Unmarshal(d.Message, &r); err != nil {
		return nil, err
	}
	if r.Error != nil {
		return nil, errors.New(r.Error.Message)
	}
	return r.Result, nil
}

// call routes a client's request through the Table to its server and
// returns the answer as the client gets it.
func call(t *testing.T, table *aggregate.Table, servers map[string]server, msg string) string {
	t.Helper()
	r, err := table.FromClient([]byte(msg))
	if err != nil {
		t.Fatalf("route %s: %v", msg, err)
	}
	if r.Target != aggregate.ToServer {
		t.Fatalf("route %s: %+v", msg, r)
	}
	answer, err := servers[r.Server].send(t.Context(), r.Message)
	if err != nil {
		t.Fatalf("%s: %s: %v", r.Server, r.Message, err)
	}
	d, err := table.FromServer(r.Server, answer)
	if err != nil || d.Dest != aggregate.ToClient {
		t.Fatalf("answer of %s: %s: %+v, %v", r.Server, answer, d, err)
	}
	return string(d.Message)
}

// names lists method through the catalog, following its cursors.
func names(t *testing.T, c *aggregate.Catalog, method, key string) ([]string, aggregate.ListResult) {
	t.Helper()
	req := aggregate.ListRequest{Method: method}
	var out []string
	for {
		res, err := c.List(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		var page map[string]json.RawMessage
		if err := json.Unmarshal(res.Result, &page); err != nil {
			t.Fatal(err)
		}
		for k, v := range page {
			var items []map[string]any
			if json.Unmarshal(v, &items) == nil && k != "nextCursor" {
				for _, it := range items {
					out = append(out, it[key].(string))
				}
			}
		}
		var next string
		_ = json.Unmarshal(page["nextCursor"], &next)
		if next == "" {
			return out, res
		}
		req.Cursor = next
	}
}

// TestRealServers: two badchilds, one answering tools/list in three pages,
// and one that never answers a list. Every page is merged, the hanging
// server is left out of the list within its deadline, both servers' echo
// are reachable as a__echo and b__echo, each call reaching its own
// server, and the aggregate's own cursors page the merged list.
func TestRealServers(t *testing.T) {
	bin := testpeers.BuildGo(t, "./testdata/badchild")
	servers := map[string]server{
		"a":     startServer(t, "a", bin, "-tool-pages", "3"),
		"b":     startServer(t, "b", bin),
		"hangs": startServer(t, "hangs", bin, "-hang-lists"),
	}
	n, err := aggregate.NewNames([]aggregate.Member{{Name: "a"}, {Name: "b"}, {Name: "hangs"}})
	if err != nil {
		t.Fatal(err)
	}
	table := aggregate.NewTable(n, aggregate.TableOptions{})
	lister := sessionLister{table: table, servers: servers}
	c := aggregate.NewCatalog(n, lister, aggregate.CatalogOptions{ListTimeout: time.Second, Logger: slog.New(slog.DiscardHandler)})

	// The badchild's own list, in one page: what each server has.
	own, err := lister.List(t.Context(), "b", "tools/list", "")
	if err != nil {
		t.Fatal(err)
	}
	var ownTools struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal(own, &ownTools); err != nil || len(ownTools.Tools) < 10 {
		t.Fatalf("badchild's tools: %s, %v", own, err)
	}
	var want []string
	for _, s := range []string{"a", "b"} {
		for _, tool := range ownTools.Tools {
			want = append(want, s+"__"+tool.Name)
		}
	}
	slices.Sort(want)

	got, res := names(t, c, "tools/list", "name")
	if !slices.Equal(got, want) {
		t.Errorf("merged %d tools %v\nwant %d %v", len(got), got, len(want), want)
	}
	if !slices.Equal(res.LeftOut, []string{"hangs"}) {
		t.Errorf("left out %v, want the hanging server", res.LeftOut)
	}

	// The aggregate's own pages: every tool once, in order.
	paged := aggregate.NewCatalog(n, lister, aggregate.CatalogOptions{ListTimeout: time.Second, PageSize: 7, Logger: slog.New(slog.DiscardHandler)})
	if got, _ := names(t, paged, "tools/list", "name"); !slices.Equal(got, want) {
		t.Errorf("paged by 7: %v", got)
	}
	_, err = paged.List(t.Context(), aggregate.ListRequest{Method: "tools/list", Cursor: "page-2"})
	var be *bridge.Error
	if !errors.As(err, &be) || be.Code != bridge.CodeInvalidParams {
		t.Errorf("a server's cursor given to the aggregate: %v, want -32602", err)
	}

	// Both echo tools, each on its own server; pid says which answered.
	for _, s := range []string{"a", "b"} {
		answer := call(t, table, servers, `{"jsonrpc":"2.0","id":"pid-`+s+`","method":"tools/call","params":{"name":"`+s+`__pid","arguments":{}}}`)
		if want := fmt.Sprintf(`"text":"%d"`, servers[s].session.ChildPid()); !strings.Contains(answer, want) || !strings.Contains(answer, `"id":"pid-`+s+`"`) {
			t.Errorf("%s__pid: %s, want %s from %s's child", s, answer, want, s)
		}
		answer = call(t, table, servers, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"`+s+`__echo","arguments":{"message":"to `+s+`"}}}`)
		if !strings.Contains(answer, `to `+s) || !strings.Contains(answer, `"id":7`) {
			t.Errorf("%s__echo: %s", s, answer)
		}
	}
}

// TestRealResources: two server-everything behind one aggregate list the
// same resource URIs; each stays reachable under its server's URI, a read
// answers with the URI the client asked for, and a completion of a
// template reaches the server that listed it.
func TestRealResources(t *testing.T) {
	node := testpeers.Node(t)
	entry := filepath.Join(testpeers.NodeModules(t), "@modelcontextprotocol", "server-everything", "dist", "index.js")
	servers := map[string]server{
		"e1": startServer(t, "e1", node, entry, "stdio"),
		"e2": startServer(t, "e2", node, entry, "stdio"),
	}
	n, err := aggregate.NewNames([]aggregate.Member{{Name: "e1"}, {Name: "e2"}})
	if err != nil {
		t.Fatal(err)
	}
	table := aggregate.NewTable(n, aggregate.TableOptions{})
	c := aggregate.NewCatalog(n, sessionLister{table: table, servers: servers}, aggregate.CatalogOptions{ListTimeout: 10 * time.Second})

	uris, res := names(t, c, "resources/list", "uri")
	if len(res.LeftOut) != 0 || len(uris) == 0 {
		t.Fatalf("resources %v, left out %v", uris, res.LeftOut)
	}
	var shared string // a URI both list
	for _, u := range uris {
		if own, ok := strings.CutPrefix(u, "mcp-bridge://e1/"); ok && slices.Contains(uris, "mcp-bridge://e2/"+own) {
			shared = own
			break
		}
	}
	if shared == "" {
		t.Fatalf("no URI listed by both: %v", uris)
	}
	var texts []string
	for _, s := range []string{"e1", "e2"} {
		exposed := "mcp-bridge://" + s + "/" + shared
		answer := call(t, table, servers, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":`+string(mustJSON(exposed))+`}}`)
		var r struct {
			Result struct {
				Contents []struct{ URI, Text, Blob string }
			}
		}
		if err := json.Unmarshal([]byte(answer), &r); err != nil || len(r.Result.Contents) == 0 {
			t.Fatalf("read %s: %s", exposed, answer)
		}
		if got := r.Result.Contents[0].URI; got != exposed {
			t.Errorf("read %s answered for %s", exposed, got)
		}
		texts = append(texts, r.Result.Contents[0].Text+r.Result.Contents[0].Blob)
	}
	if texts[0] == "" || texts[0] != texts[1] {
		t.Errorf("the two servers' %s: %q", shared, texts)
	}

	templates, _ := names(t, c, "resources/templates/list", "uriTemplate")
	var tmpl string
	for _, u := range templates {
		if strings.HasPrefix(u, "mcp-bridge://e2/") && strings.Contains(u, "{") {
			tmpl = u
			break
		}
	}
	if tmpl == "" {
		t.Fatalf("no template of e2: %v", templates)
	}
	arg := tmpl[strings.LastIndex(tmpl, "{")+1 : strings.LastIndex(tmpl, "}")]
	answer := call(t, table, servers, `{"jsonrpc":"2.0","id":2,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":`+string(mustJSON(tmpl))+`},"argument":{"name":`+string(mustJSON(arg))+`,"value":"1"}}}`)
	if !strings.Contains(answer, `"completion"`) {
		t.Errorf("completion of %s: %s", tmpl, answer)
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
