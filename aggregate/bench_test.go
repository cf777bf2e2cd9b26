package aggregate

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// BenchmarkTableCall measures what the aggregate adds to one tools/call:
// the request routed (name resolved, id and token replaced) and its
// answer put back (id restored), without any transport.
func BenchmarkTableCall(b *testing.B) {
	n, err := NewNames([]Member{{Name: "everything"}, {Name: "fs"}, {Name: "memory"}})
	if err != nil {
		b.Fatal(err)
	}
	tb := NewTable(n, TableOptions{})
	req := []byte(`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"everything__echo","arguments":{"message":"hello","count":3},"_meta":{"progressToken":12}}}`)
	b.ReportAllocs()
	for b.Loop() {
		r, err := tb.FromClient(req)
		if err != nil {
			b.Fatal(err)
		}
		answer := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"Echo: hello"}]}}`, r.ID)
		if d, err := tb.FromServer(r.Server, answer); err != nil || d.Dest != ToClient {
			b.Fatal(d, err)
		}
	}
}

// BenchmarkCatalogList measures a merged tools/list of three servers of
// 100 tools each, their lists already read (a Lister that answers at
// once): the merge, sort and encoding the aggregate adds.
func BenchmarkCatalogList(b *testing.B) {
	var members []Member
	servers := map[string]string{}
	for _, s := range []string{"everything", "fs", "memory"} {
		members = append(members, Member{Name: s})
		var tools []string
		for i := range 100 {
			tools = append(tools, fmt.Sprintf(`{"name":"tool_%03d","description":"%s","inputSchema":{"type":"object","properties":{"a":{"type":"string"}}},"annotations":{"readOnlyHint":true}}`, i, strings.Repeat("d", 200)))
		}
		servers[s] = `{"tools":[` + strings.Join(tools, ",") + `]}`
	}
	n, err := NewNames(members)
	if err != nil {
		b.Fatal(err)
	}
	l := ListerFunc(func(_ context.Context, server, _, _ string) (json.RawMessage, error) {
		return json.RawMessage(servers[server]), nil
	})
	c := NewCatalog(n, l, CatalogOptions{Logger: slog.New(slog.DiscardHandler)})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.List(context.Background(), ListRequest{Method: "tools/list"}); err != nil {
			b.Fatal(err)
		}
	}
}
