package aggregate

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// fakeServer is a server's lists as a fake Lister serves them: for each
// method, its pages by cursor ("" the first), raw results.
type fakeServer struct {
	pages map[string]map[string]string
	hang  bool  // never answers: waits for the context
	err   error // answers this error
}

// fakeLister serves fake servers and records what it was asked.
type fakeLister struct {
	servers map[string]fakeServer
	mu      sync.Mutex
	asked   []string // "server method cursor"
}

func (f *fakeLister) List(ctx context.Context, server, method, cursor string) (json.RawMessage, error) {
	f.mu.Lock()
	f.asked = append(f.asked, server+" "+method+" "+cursor)
	f.mu.Unlock()
	s := f.servers[server]
	switch {
	case s.hang:
		<-ctx.Done()
		return nil, ctx.Err()
	case s.err != nil:
		return nil, s.err
	}
	p, ok := s.pages[method][cursor]
	if !ok {
		return nil, fmt.Errorf("fake: no page %q of %s", cursor, method)
	}
	return json.RawMessage(p), nil
}

// tools is a tools/list result of tools of these names, each with a
// description naming its server, and next as its nextCursor.
func tools(server, next string, names ...string) string {
	var items []string
	for _, n := range names {
		items = append(items, fmt.Sprintf(`{"name":%q,"description":"%s's %s","inputSchema":{"type":"object"}}`, n, server, n))
	}
	r := `{"tools":[` + strings.Join(items, ",") + `]`
	if next != "" {
		r += `,"nextCursor":` + string(quote(next))
	}
	return r + "}"
}

// listNames lists method through c, following every cursor, and returns
// the exposed names (or URIs) in order, and the last result.
func listNames(t *testing.T, c *Catalog, req ListRequest) ([]string, ListResult) {
	t.Helper()
	var names []string
	var last ListResult
	for range 100 {
		res, err := c.List(t.Context(), req)
		if err != nil {
			t.Fatalf("List(%+v): %v", req, err)
		}
		last = res
		var r struct {
			NextCursor string            `json:"nextCursor"`
			Items      []json.RawMessage `json:"-"`
		}
		if err := json.Unmarshal(res.Result, &r); err != nil {
			t.Fatalf("result %s: %v", res.Result, err)
		}
		var all map[string]json.RawMessage
		_ = json.Unmarshal(res.Result, &all)
		lk := lists[req.Method]
		var items []map[string]any
		if err := json.Unmarshal(all[lk.items], &items); err != nil {
			t.Fatalf("result %s: %v", res.Result, err)
		}
		for _, it := range items {
			names = append(names, it[lk.key].(string))
		}
		if r.NextCursor == "" {
			return names, last
		}
		req.Cursor = r.NextCursor
	}
	t.Fatal("more than 100 pages")
	return nil, last
}

func newTestCatalog(t *testing.T, members []Member, servers map[string]fakeServer, o CatalogOptions) (*Catalog, *fakeLister) {
	t.Helper()
	n, err := NewNames(members)
	if err != nil {
		t.Fatal(err)
	}
	l := &fakeLister{servers: servers}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return NewCatalog(n, l, o), l
}

// TestCatalogMerge: two servers that both have echo keep both, as a__echo
// and b__echo; the merged list is sorted by exposed name; each entry is
// the server's own, byte for byte, but for its name.
func TestCatalogMerge(t *testing.T) {
	c, _ := newTestCatalog(t, []Member{{Name: "b"}, {Name: "a", Rename: map[string]string{"zeta": "alpha"}, Deny: []string{"secret*"}}},
		map[string]fakeServer{
			"a": {pages: map[string]map[string]string{"tools/list": {"": `{"tools":[` +
				`{"name":"echo","annotations":{"readOnlyHint":true,"title":"Échö"},"inputSchema":{"type":"object","properties":{"n":{"type":"number","default":1.0}}}},` +
				`{"name":"zeta","inputSchema":{}},{"name":"secret_key","inputSchema":{}}]}`}}},
			"b": {pages: map[string]map[string]string{"tools/list": {"": tools("b", "", "search", "echo")}}},
		}, CatalogOptions{})
	res, err := c.List(t.Context(), ListRequest{Method: "tools/list"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"tools":[` +
		`{"name":"a__alpha","inputSchema":{}},` +
		`{"name":"a__echo","annotations":{"readOnlyHint":true,"title":"Échö"},"inputSchema":{"type":"object","properties":{"n":{"type":"number","default":1.0}}}},` +
		`{"name":"b__echo","description":"b's echo","inputSchema":{"type":"object"}},` +
		`{"name":"b__search","description":"b's search","inputSchema":{"type":"object"}}]}`
	if string(res.Result) != want {
		t.Errorf("merged\n got %s\nwant %s", res.Result, want)
	}
	if len(res.LeftOut) != 0 || len(res.Problems) != 0 {
		t.Errorf("left out %v, problems %v", res.LeftOut, res.Problems)
	}
}

// TestCatalogFollowsPages: every page of a server's list is read, its
// cursors passed back to it as it gave them.
func TestCatalogFollowsPages(t *testing.T) {
	c, l := newTestCatalog(t, []Member{{Name: "p"}, {Name: "q"}}, map[string]fakeServer{
		"p": {pages: map[string]map[string]string{"tools/list": {
			"":       tools("p", "page 2", "c", "a"),
			"page 2": tools("p", "page/3", "e", "d"),
			"page/3": tools("p", "", "b"),
		}}},
		"q": {pages: map[string]map[string]string{"tools/list": {"": tools("q", "", "a")}}},
	}, CatalogOptions{})
	names, _ := listNames(t, c, ListRequest{Method: "tools/list"})
	want := []string{"p__a", "p__b", "p__c", "p__d", "p__e", "q__a"}
	if !slices.Equal(names, want) {
		t.Errorf("names %v, want %v", names, want)
	}
	slices.Sort(l.asked)
	if want := []string{"p tools/list ", "p tools/list page 2", "p tools/list page/3", "q tools/list "}; !slices.Equal(l.asked, want) {
		t.Errorf("asked %q, want %q", l.asked, want)
	}
}

// TestCatalogClientPages: the merged list is paged toward the client with
// the catalog's own cursors, which give every entry once, in order; a
// cursor that is not the catalog's, or not for this list and principal,
// is -32602.
func TestCatalogClientPages(t *testing.T) {
	servers := map[string]fakeServer{
		"a": {pages: map[string]map[string]string{"tools/list": {"": tools("a", "2", "t1", "t3", "t5"), "2": tools("a", "", "t7", "t9")}}},
		"b": {pages: map[string]map[string]string{"tools/list": {"": tools("b", "", "t2", "t4", "t6")}}},
	}
	c, _ := newTestCatalog(t, []Member{{Name: "a"}, {Name: "b"}}, servers, CatalogOptions{PageSize: 3})
	names, _ := listNames(t, c, ListRequest{Method: "tools/list", Scope: "alice"})
	want := []string{"a__t1", "a__t3", "a__t5", "a__t7", "a__t9", "b__t2", "b__t4", "b__t6"}
	if !slices.Equal(names, want) {
		t.Errorf("names %v, want %v", names, want)
	}

	first, err := c.List(t.Context(), ListRequest{Method: "tools/list", Scope: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	var r struct{ NextCursor string }
	_ = json.Unmarshal(first.Result, &r)
	if r.NextCursor == "" {
		t.Fatal("no nextCursor on the first of three pages")
	}
	payload, mac, _ := strings.Cut(r.NextCursor, ".")
	forged := cursor{After: "b__t2"}
	fb, _ := json.Marshal(forged)
	other, _ := newTestCatalog(t, []Member{{Name: "a"}, {Name: "b"}}, servers, CatalogOptions{PageSize: 3})
	otherRes, err := other.List(t.Context(), ListRequest{Method: "tools/list", Scope: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	var or struct{ NextCursor string }
	_ = json.Unmarshal(otherRes.Result, &or)
	for _, tt := range []struct {
		name   string
		cursor string
		method string
		scope  string
	}{
		{"not a cursor", "garbage", "tools/list", "alice"},
		{"empty MAC", payload + ".", "tools/list", "alice"},
		{"payload altered", base64URL(fb) + "." + mac, "tools/list", "alice"},
		{"MAC altered", payload + "." + flip(mac), "tools/list", "alice"},
		{"another list's", r.NextCursor, "prompts/list", "alice"},
		{"another principal's", r.NextCursor, "tools/list", "bob"},
		{"another catalog key's", or.NextCursor, "tools/list", "alice"},
		{"a server's own cursor", "2", "tools/list", "alice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.List(t.Context(), ListRequest{Method: tt.method, Cursor: tt.cursor, Scope: tt.scope})
			var be *bridge.Error
			if !errors.As(err, &be) || be.Code != bridge.CodeInvalidParams || be.Kind != bridge.KindInvalid {
				t.Fatalf("List with cursor %q: %v, want -32602", tt.cursor, err)
			}
		})
	}
	// A catalog of the same key takes the cursor: a session's cursor
	// outlives the catalog that gave it.
	key := []byte("0123456789abcdef0123456789abcdef")
	c1, _ := newTestCatalog(t, []Member{{Name: "a"}, {Name: "b"}}, servers, CatalogOptions{PageSize: 3, CursorKey: key})
	c2, _ := newTestCatalog(t, []Member{{Name: "a"}, {Name: "b"}}, servers, CatalogOptions{PageSize: 3, CursorKey: key})
	res, err := c1.List(t.Context(), ListRequest{Method: "tools/list"})
	if err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(res.Result, &r)
	if _, err := c2.List(t.Context(), ListRequest{Method: "tools/list", Cursor: r.NextCursor}); err != nil {
		t.Errorf("a cursor of the same key: %v", err)
	}
}

func base64URL(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// flip changes the first character of a base64url string.
func flip(s string) string {
	if s == "" {
		return "A"
	}
	c := byte('A')
	if s[0] == 'A' {
		c = 'B'
	}
	return string(c) + s[1:]
}

// TestCatalogCursorAfterChange: a cursor says where the client is in the
// merged order, so entries added or removed between pages neither repeat
// nor skip those after it.
func TestCatalogCursorAfterChange(t *testing.T) {
	servers := map[string]fakeServer{
		"a": {pages: map[string]map[string]string{"tools/list": {"": tools("a", "", "t1", "t2", "t3", "t4")}}},
	}
	c, l := newTestCatalog(t, []Member{{Name: "a"}}, servers, CatalogOptions{PageSize: 2})
	res, err := c.List(t.Context(), ListRequest{Method: "tools/list"})
	if err != nil {
		t.Fatal(err)
	}
	var r struct{ NextCursor string }
	_ = json.Unmarshal(res.Result, &r)
	l.servers["a"] = fakeServer{pages: map[string]map[string]string{"tools/list": {"": tools("a", "", "t0", "t2", "t3", "t5")}}}
	names, _ := listNames(t, c, ListRequest{Method: "tools/list", Cursor: r.NextCursor})
	if want := []string{"a__t3", "a__t5"}; !slices.Equal(names, want) {
		t.Errorf("after the change: %v, want %v", names, want)
	}
}

// TestCatalogLeftOut: a server that hangs, fails, answers what is no list
// or is no member is left out of the list, with a log line, and every
// other server's entries are served.
func TestCatalogLeftOut(t *testing.T) {
	var logs bytes.Buffer
	c, _ := newTestCatalog(t, []Member{{Name: "ok"}, {Name: "hangs"}, {Name: "fails"}, {Name: "odd"}, {Name: "unknown"}}, map[string]fakeServer{
		"ok":    {pages: map[string]map[string]string{"tools/list": {"": tools("ok", "", "x")}}},
		"hangs": {hang: true},
		"fails": {err: errors.New("server down")},
		"odd":   {pages: map[string]map[string]string{"tools/list": {"": `{"tools":{"name":"x"}}`}}},
	}, CatalogOptions{ListTimeout: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	res, err := c.List(t.Context(), ListRequest{Method: "tools/list"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"tools":[{"name":"ok__x","description":"ok's x","inputSchema":{"type":"object"}}]}`; string(res.Result) != want {
		t.Errorf("result %s, want %s", res.Result, want)
	}
	if want := []string{"fails", "hangs", "odd", "unknown"}; !slices.Equal(res.LeftOut, want) {
		t.Errorf("left out %v, want %v", res.LeftOut, want)
	}
	for _, want := range []string{
		`msg="server left out of the aggregate's list" server=hangs method=tools/list err="context deadline exceeded"`,
		`server=fails method=tools/list err="server down"`,
		`server=odd method=tools/list err="page 1: \"tools\" is not an array"`,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, logs.String())
		}
	}
	if got := c.Stats().LeftOut.Load(); got != 4 {
		t.Errorf("LeftOut = %d, want 4", got)
	}
}

// TestCatalogCut: a server's list is read up to MaxPages pages, and not
// past a cursor it gave before; what was read is served.
func TestCatalogCut(t *testing.T) {
	endless := map[string]string{}
	for i := range 10 {
		endless[fmt.Sprint(i)] = tools("e", fmt.Sprint(i+1), fmt.Sprintf("t%d", i))
	}
	endless[""] = endless["0"]
	c, _ := newTestCatalog(t, []Member{{Name: "e"}, {Name: "loop"}}, map[string]fakeServer{
		"e":    {pages: map[string]map[string]string{"tools/list": endless}},
		"loop": {pages: map[string]map[string]string{"tools/list": {"": tools("loop", "x", "a"), "x": tools("loop", "x", "b")}}},
	}, CatalogOptions{MaxPages: 3})
	names, _ := listNames(t, c, ListRequest{Method: "tools/list"})
	if want := []string{"e__t0", "e__t1", "e__t2", "loop__a", "loop__b"}; !slices.Equal(names, want) {
		t.Errorf("names %v, want %v", names, want)
	}
	if got := c.Stats().Truncated.Load(); got != 2 {
		t.Errorf("Truncated = %d, want 2", got)
	}
}

// TestCatalogProblems: entries that cannot be exposed, or collide, are
// dropped and reported once; everything else is served.
func TestCatalogProblems(t *testing.T) {
	var logs bytes.Buffer
	long := strings.Repeat("x", 62)
	c, _ := newTestCatalog(t, []Member{{Name: "a", Rename: map[string]string{"old": "new"}}, {Name: "b"}}, map[string]fakeServer{
		"a": {pages: map[string]map[string]string{"tools/list": {"": tools("a", "", "ok", "dup", "dup", "new", "old", "has.dot", long, "x.y", "x_y")}}},
		"b": {pages: map[string]map[string]string{"tools/list": {"": tools("b", "", "dup")}}},
	}, CatalogOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	names, res := listNames(t, c, ListRequest{Method: "tools/list"})
	if want := []string{"a__new", "a__ok", "a__x_y", "b__dup"}; !slices.Equal(names, want) {
		t.Errorf("names %v, want %v", names, want)
	}
	want := []Problem{
		{Kind: KindTool, Server: "a", Name: "dup", Exposed: "a__dup", Reason: ReasonCollision, Other: "a", OtherName: "dup"},
		{Kind: KindTool, Server: "a", Name: "has.dot", Exposed: "a__has.dot", Reason: ReasonBadName, Fix: "has_dot"},
		{Kind: KindTool, Server: "a", Name: "new", Exposed: "a__new", Reason: ReasonShadowed, Other: "a", OtherName: "old", Fix: "new_2"},
		// Its fix is not the name of another tool of the server.
		{Kind: KindTool, Server: "a", Name: "x.y", Exposed: "a__x.y", Reason: ReasonBadName, Fix: "x_y_2"},
		{Kind: KindTool, Server: "a", Name: long, Exposed: "a__" + long, Reason: ReasonBadName, Fix: long[:61]},
	}
	if !slices.Equal(res.Problems, want) {
		t.Errorf("problems\n got %+v\nwant %+v", res.Problems, want)
	}
	if !slices.Equal(c.Problems(), want) {
		t.Errorf("Problems() = %+v", c.Problems())
	}
	if !strings.Contains(logs.String(), `add \"rename\": {\"has.dot\": \"has_dot\"} to the server \"a\"`) {
		t.Errorf("the log does not name the fix:\n%s", logs.String())
	}
	n := strings.Count(logs.String(), "entry dropped")
	if _, err := c.List(t.Context(), ListRequest{Method: "tools/list"}); err != nil {
		t.Fatal(err)
	}
	if again := strings.Count(logs.String(), "entry dropped"); again != n || n != len(want) {
		t.Errorf("%d lines for the problems, %d after listing again; want %d, once", n, again, len(want))
	}
	if got := c.Stats().Dropped.Load(); got != int64(len(want)) {
		t.Errorf("Dropped = %d, want %d", got, len(want))
	}
}

// TestCatalogURIs: resources and templates are listed under the
// aggregate's URIs, so two servers' same URI are two entries.
func TestCatalogURIs(t *testing.T) {
	c, _ := newTestCatalog(t, []Member{{Name: "fs1"}, {Name: "fs2"}}, map[string]fakeServer{
		"fs1": {pages: map[string]map[string]string{
			"resources/list":           {"": `{"resources":[{"uri":"file:///tmp/a.txt","name":"a.txt"}]}`},
			"resources/templates/list": {"": `{"resourceTemplates":[{"uriTemplate":"file:///{path}","name":"files"}]}`},
		}},
		"fs2": {pages: map[string]map[string]string{
			"resources/list":           {"": `{"resources":[{"uri":"file:///tmp/a.txt","name":"a.txt"}]}`},
			"resources/templates/list": {"": `{"resourceTemplates":[]}`},
		}},
	}, CatalogOptions{})
	res, err := c.List(t.Context(), ListRequest{Method: "resources/list"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"resources":[{"uri":"mcp-bridge://fs1/file:///tmp/a.txt","name":"a.txt"},{"uri":"mcp-bridge://fs2/file:///tmp/a.txt","name":"a.txt"}]}`; string(res.Result) != want {
		t.Errorf("resources %s, want %s", res.Result, want)
	}
	res, err = c.List(t.Context(), ListRequest{Method: "resources/templates/list"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"resourceTemplates":[{"uriTemplate":"mcp-bridge://fs1/file:///{path}","name":"files"}]}`; string(res.Result) != want {
		t.Errorf("templates %s, want %s", res.Result, want)
	}
}

// TestCatalogPolicy: a principal's tool policy filters the exposed names,
// after collisions are found on the whole list.
func TestCatalogPolicy(t *testing.T) {
	c, _ := newTestCatalog(t, []Member{{Name: "a"}, {Name: "b"}}, map[string]fakeServer{
		"a": {pages: map[string]map[string]string{"tools/list": {"": tools("a", "", "read", "write")}}},
		"b": {pages: map[string]map[string]string{"tools/list": {"": tools("b", "", "read")}}},
	}, CatalogOptions{PageSize: 1})
	allowed := func(name string) bool { return strings.HasSuffix(name, "__read") }
	names, _ := listNames(t, c, ListRequest{Method: "tools/list", Allowed: allowed})
	if want := []string{"a__read", "b__read"}; !slices.Equal(names, want) {
		t.Errorf("names %v, want %v", names, want)
	}
}

// TestCatalogHints: a 2026-07-28 list has ttlMs (the least of the
// servers', 0 for a server without, 0 when a server is left out) and
// cacheScope (private when it may differ per principal, or a server said
// so), the same on every page.
func TestCatalogHints(t *testing.T) {
	page := func(names, extra string) string { return `{"tools":[` + names + `]` + extra + `}` }
	for _, tt := range []struct {
		name    string
		a, b    fakeServer
		private bool
		ttl     int64
		scope   string
	}{
		{"legacy servers", fs(page(`{"name":"x"}`, "")), fs(page(`{"name":"y"}`, "")), false, 0, "public"},
		{"the least ttl", fs(page(`{"name":"x"}`, `,"ttlMs":60000,"cacheScope":"public"`)), fs(page(`{"name":"y"}`, `,"ttlMs":5000`)), false, 5000, "public"},
		{"a server without one", fs(page(`{"name":"x"}`, `,"ttlMs":60000`)), fs(page(`{"name":"y"}`, "")), false, 0, "public"},
		{"a server left out", fs(page(`{"name":"x"}`, `,"ttlMs":60000`)), fakeServer{err: errors.New("down")}, false, 0, "public"},
		{"filtered per principal", fs(page(`{"name":"x"}`, `,"ttlMs":60000`)), fs(page(`{"name":"y"}`, `,"ttlMs":60000`)), true, 60000, "private"},
		{"a server's private list", fs(page(`{"name":"x"}`, `,"ttlMs":60000,"cacheScope":"private"`)), fs(page(`{"name":"y"}`, `,"ttlMs":60000`)), false, 60000, "private"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, l := newTestCatalog(t, []Member{{Name: "a"}, {Name: "b"}}, map[string]fakeServer{"a": tt.a, "b": tt.b}, CatalogOptions{PageSize: 1})
			req := ListRequest{Method: "tools/list", Modern: true, Private: tt.private}
			var pages int
			for {
				res, err := c.List(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				var r struct {
					NextCursor string
					TTLMs      *int64 `json:"ttlMs"`
					CacheScope string `json:"cacheScope"`
				}
				_ = json.Unmarshal(res.Result, &r)
				if r.TTLMs == nil || *r.TTLMs != tt.ttl || r.CacheScope != tt.scope {
					t.Errorf("page %d: %s; want ttlMs %d, cacheScope %s", pages+1, res.Result, tt.ttl, tt.scope)
				}
				pages++
				// The second page's hints are the first's, whatever the
				// servers say by then.
				l.servers["b"] = fs(page(`{"name":"y"}`, `,"ttlMs":1,"cacheScope":"private"`))
				if r.NextCursor == "" {
					break
				}
				req.Cursor = r.NextCursor
			}
			if pages < 1 {
				t.Error("no page")
			}
		})
	}
	c, _ := newTestCatalog(t, []Member{{Name: "a"}}, map[string]fakeServer{"a": fs(page(`{"name":"x"}`, `,"ttlMs":60000`))}, CatalogOptions{})
	res, err := c.List(t.Context(), ListRequest{Method: "tools/list"})
	if err != nil || bytes.Contains(res.Result, []byte("ttlMs")) || bytes.Contains(res.Result, []byte("cacheScope")) {
		t.Errorf("a 2025 list: %s, %v; want no caching hints", res.Result, err)
	}
}

func fs(toolsList string) fakeServer {
	return fakeServer{pages: map[string]map[string]string{"tools/list": {"": toolsList}}}
}

// TestCatalogEnds: a list ends with its caller's context, and an unknown
// method is an error.
func TestCatalogEnds(t *testing.T) {
	c, _ := newTestCatalog(t, []Member{{Name: "a"}}, map[string]fakeServer{"a": {hang: true}}, CatalogOptions{ListTimeout: time.Hour})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.List(ctx, ListRequest{Method: "tools/list"}); !errors.Is(err, context.Canceled) {
		t.Errorf("List after the client left: %v", err)
	}
	if _, err := c.List(t.Context(), ListRequest{Method: "tools/call"}); !errors.Is(err, errUnknownList) {
		t.Errorf("List of tools/call: %v", err)
	}
}
