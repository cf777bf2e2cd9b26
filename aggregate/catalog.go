package aggregate

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// Defaults of CatalogOptions.
const (
	// DefaultListTimeout is how long a list waits for each server: a
	// server that has not given all its pages by then is left out of that
	// list, so one hanging server delays a list by this much at most.
	DefaultListTimeout = 3 * time.Second
	// DefaultMaxPages is how many pages of one server's list are read
	// (agentgateway stops at 64 too); a longer list is cut there.
	DefaultMaxPages = 64
	// DefaultPageSize is how many entries a page of the merged list holds.
	// Large, because some clients read the first page only.
	DefaultPageSize = 1000
)

// A Lister lists one page of a list method (tools/list, prompts/list,
// resources/list, resources/templates/list) on one server: the request
// with params {"cursor": cursor} ({} for "") sent to server, and the
// result of its answer, as the server gave it. An error answer, a server
// that is down and a transport failure are errors. List must return once
// ctx is done.
type Lister interface {
	List(ctx context.Context, server, method, cursor string) (json.RawMessage, error)
}

// ListerFunc is a function as a Lister.
type ListerFunc func(ctx context.Context, server, method, cursor string) (json.RawMessage, error)

func (f ListerFunc) List(ctx context.Context, server, method, cursor string) (json.RawMessage, error) {
	return f(ctx, server, method, cursor)
}

// CatalogOptions configure a Catalog. The zero value works.
type CatalogOptions struct {
	// ListTimeout bounds the wait for each server's whole list (all its
	// pages); a server past it is left out of that list, with a log line.
	// Default DefaultListTimeout.
	ListTimeout time.Duration
	// MaxPages bounds the pages read of one server's list. Default
	// DefaultMaxPages.
	MaxPages int
	// PageSize is the entries of a page of the merged list. Default
	// DefaultPageSize.
	PageSize int
	// CursorKey is the key the cursors given to clients are MACed with
	// (HMAC-SHA256): a cursor is good on the catalogs of the same key.
	// Default: a random key of this catalog. Give every catalog of a
	// process (or of a replica set) the same, so a cursor outlives the
	// session or request that gave it.
	CursorKey []byte
	// Logger gets a line per server left out of a list and per entry
	// dropped (once, until it is fixed). Default slog.Default().
	Logger *slog.Logger
	// Stats counts what the log tells; nil gives the catalog its own.
	Stats *Stats
}

// Stats are the aggregate's counters, for /metrics. Safe for concurrent
// use.
type Stats struct {
	Lists     atomic.Int64 // merged lists served
	Dropped   atomic.Int64 // entries dropped (Problems), each counted once when it first appears
	LeftOut   atomic.Int64 // servers left out of a list: down, past the deadline, or failed
	Truncated atomic.Int64 // servers whose list was cut at MaxPages, or repeated a cursor
	Misrouted atomic.Int64 // messages of a server that answer what was not sent to it (Table)
	Refused   atomic.Int64 // server requests refused over a Table's bound
}

// A Catalog merges the lists of an aggregate's servers into one, sorted
// by exposed name, and pages it for clients. Each List reads every
// server's list afresh (its pages concurrently with the other servers'),
// so a Catalog holds no list between calls: only the problems of the last
// one, for the web page. Safe for concurrent use.
type Catalog struct {
	names  atomic.Pointer[Names] // replaced whole by SetNames (a reload)
	lister Lister
	o      CatalogOptions
	mac    cursorKey
	stats  *Stats

	mu       sync.Mutex
	problems map[string][]Problem // by method, those of its last list
}

// NewCatalog is the catalog of names' servers, whose lists lister reads.
func NewCatalog(names *Names, lister Lister, o CatalogOptions) *Catalog {
	if o.ListTimeout <= 0 {
		o.ListTimeout = DefaultListTimeout
	}
	if o.MaxPages <= 0 {
		o.MaxPages = DefaultMaxPages
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	st := o.Stats
	if st == nil {
		st = &Stats{}
	}
	c := &Catalog{lister: lister, o: o, mac: newCursorKey(o.CursorKey), stats: st,
		problems: map[string][]Problem{}}
	c.names.Store(names)
	return c
}

// SetNames makes the Catalog list by n from now on (a reload).
func (c *Catalog) SetNames(n *Names) { c.names.Store(n) }

// Stats are the catalog's counters.
func (c *Catalog) Stats() *Stats { return c.stats }

// listKind is what a list method lists.
type listKind struct {
	items string // the result's member holding the entries
	key   string // each entry's member that names it
	kind  Kind
}

var lists = map[string]listKind{
	"tools/list":               {"tools", "name", KindTool},
	"prompts/list":             {"prompts", "name", KindPrompt},
	"resources/list":           {"resources", "uri", KindResource},
	"resources/templates/list": {"resourceTemplates", "uriTemplate", KindTemplate},
}

// IsList reports whether method is one of the lists a Catalog merges.
func IsList(method string) bool { _, ok := lists[method]; return ok }

// ListRequest is a client's request for a page of a list.
type ListRequest struct {
	Method string // tools/list, prompts/list, resources/list or resources/templates/list
	Cursor string // params.cursor, "" for the first page
	// Allowed says which exposed tools the client's principal may see
	// (its tool policy, on the exposed names); nil for all. Tools only.
	Allowed func(exposed string) bool
	// Scope names who the list is for (a principal's key): a cursor is
	// good only for the scope and the method it was given for.
	Scope string
	// Private says the list may differ per principal (the endpoint
	// authenticates, or Allowed filters): cacheScope is then "private".
	Private bool
	// Modern asks for the caching hints of MCP 2026-07-28 (ttlMs and
	// cacheScope) in the result.
	Modern bool
}

// ListResult is a page of a merged list.
type ListResult struct {
	// Result is the JSON-RPC result: the entries, nextCursor if more
	// follow, and for a modern request ttlMs and cacheScope.
	Result json.RawMessage
	// LeftOut are the servers not in the list (down, past the deadline,
	// or failing), sorted.
	LeftOut []string
	// Problems are the entries dropped, sorted by server, then name.
	Problems []Problem
}

// errUnknownList: List was asked for a method that is not a list.
var errUnknownList = errors.New("not a list method")

// List is a page of the merged list req asks for. Every server's list is
// read, up to MaxPages pages, within ListTimeout; a server that fails or
// is late is left out and logged. Entries are exposed by Names (dropped
// ones are Problems), sorted by exposed name (or URI), those that collide
// dropped, then filtered by req.Allowed and paged. An invalid cursor is a
// -32602 error, a method that is no list -32601 (IsList says which are).
// The error of ctx ends it early.
func (c *Catalog) List(ctx context.Context, req ListRequest) (ListResult, error) {
	lk, ok := lists[req.Method]
	if !ok {
		return ListResult{}, &bridge.Error{Kind: bridge.KindInvalid, Code: bridge.CodeMethodNotFound,
			Message: "Method not found: " + req.Method, Err: errUnknownList}
	}
	var cur cursor
	if req.Cursor != "" {
		var err error
		if cur, err = c.mac.open(req.Cursor, req.Method, req.Scope); err != nil {
			return ListResult{}, invalidParams("invalid cursor: it was not given by this server for this list; list again without one")
		}
	}
	pages := c.fanOut(ctx, req.Method)
	if err := ctx.Err(); err != nil {
		return ListResult{}, err
	}
	entries, problems := c.merge(lk, pages)
	c.report(req.Method, problems)
	if lk.kind == KindTool && req.Allowed != nil {
		entries = slices.DeleteFunc(entries, func(e entry) bool { return !req.Allowed(e.key) })
	}
	if req.Cursor == "" {
		cur.TTL, cur.Private = hints(pages, req.Private)
	}
	start := sort.Search(len(entries), func(i int) bool { return entries[i].key > cur.After })
	end := min(start+c.o.PageSize, len(entries))
	var next string
	if end < len(entries) {
		next = c.mac.seal(cursor{After: entries[end-1].key, TTL: cur.TTL, Private: cur.Private}, req.Method, req.Scope)
	}
	c.stats.Lists.Add(1)
	res := ListResult{Result: listResult(lk.items, entries[start:end], next, req.Modern, cur), Problems: problems}
	for _, p := range pages {
		if p.err != nil {
			res.LeftOut = append(res.LeftOut, p.server)
		}
	}
	return res, nil
}

// serverList is one server's whole list, or why it has none.
type serverList struct {
	server  string
	items   []json.RawMessage
	ttl     int64 // the least ttlMs of its pages; 0 when a page had none
	private bool  // a page said cacheScope "private"
	err     error
}

// fanOut reads the list method of every server at once, within
// ListTimeout, in the servers' order. One goroutine per server, owned by
// this call: each ends when its Lister returns, which it must once the
// deadline's context is done; fanOut waits for them up to that deadline
// and no longer, and a result that comes after it is dropped (the channel
// has room for every result, so no goroutine blocks on it).
func (c *Catalog) fanOut(ctx context.Context, method string) []serverList {
	servers := c.names.Load().Servers()
	ctx, cancel := context.WithTimeout(ctx, c.o.ListTimeout)
	defer cancel()
	type indexed struct {
		i int
		l serverList
	}
	done := make(chan indexed, len(servers))
	for i, s := range servers {
		go func() { done <- indexed{i, c.listServer(ctx, s, method)} }()
	}
	out := make([]serverList, len(servers))
	for i, s := range servers {
		out[i] = serverList{server: s, err: context.DeadlineExceeded}
	}
wait:
	for range servers {
		select {
		case r := <-done:
			out[r.i] = r.l
		case <-ctx.Done():
			break wait // those not in are late: left out below
		}
	}
	for _, l := range out {
		if l.err != nil {
			c.stats.LeftOut.Add(1)
			c.o.Logger.Warn("server left out of the aggregate's list", "server", l.server, "method", method, "err", l.err)
		}
	}
	return out
}

// listServer reads every page of server's list, following its cursors
// up to MaxPages.
func (c *Catalog) listServer(ctx context.Context, server, method string) serverList {
	l := serverList{server: server, ttl: -1}
	seen := map[string]bool{}
	cursor := ""
	for page := 0; ; page++ {
		if page == c.o.MaxPages {
			c.stats.Truncated.Add(1)
			c.o.Logger.Warn("server's list cut: it has more pages than the aggregate reads", "server", server, "method", method, "pages", page)
			break
		}
		raw, err := c.lister.List(ctx, server, method, cursor)
		if err == nil && ctx.Err() != nil {
			err = ctx.Err() // an answer that came too late counts as none
		}
		if err != nil {
			return serverList{server: server, err: err}
		}
		p, err := parsePage(raw, lists[method].items)
		if err != nil {
			return serverList{server: server, err: fmt.Errorf("page %d: %w", page+1, err)}
		}
		l.items = append(l.items, p.items...)
		switch {
		case p.ttl == nil:
			l.ttl = 0
		case l.ttl < 0 || *p.ttl < l.ttl:
			l.ttl = *p.ttl
		}
		l.private = l.private || p.scope == "private"
		if p.next == "" {
			break
		}
		if seen[p.next] {
			c.stats.Truncated.Add(1)
			c.o.Logger.Warn("server's list cut: it gave a cursor it gave before", "server", server, "method", method, "pages", page+1)
			break
		}
		seen[p.next] = true
		cursor = p.next
	}
	l.ttl = max(l.ttl, 0)
	return l
}

// page is one page of a server's list.
type page struct {
	items []json.RawMessage
	next  string
	ttl   *int64 // ttlMs, if the page has it
	scope string // cacheScope
}

// parsePage reads the entries (the member items), nextCursor and the
// caching hints of a list result.
func parsePage(raw json.RawMessage, items string) (page, error) {
	s, f, err := members(raw, items, "nextCursor", "ttlMs", "cacheScope")
	if err != nil {
		return page{}, fmt.Errorf("not a list result: %w", err)
	}
	if !f[0] {
		return page{}, fmt.Errorf("no %q in the result", items)
	}
	var p page
	arr := s[0].of(raw)
	if err := eachElement(arr, func(e span) error {
		p.items = append(p.items, json.RawMessage(e.of(arr)))
		return nil
	}); err != nil {
		return page{}, fmt.Errorf("%q is not an array", items)
	}
	if f[1] {
		var ok bool
		if p.next, ok = stringValue(s[1].of(raw)); !ok && string(s[1].of(raw)) != "null" {
			return page{}, errors.New("nextCursor is not a string")
		}
	}
	if f[2] {
		ttl, err := strconv.ParseInt(string(s[2].of(raw)), 10, 64)
		if err != nil || ttl < 0 {
			return page{}, errors.New("ttlMs is not a whole number of milliseconds")
		}
		p.ttl = &ttl
	}
	if f[3] {
		p.scope, _ = stringValue(s[3].of(raw))
	}
	return p, nil
}

// entry is one entry of the merged list.
type entry struct {
	key    string // the exposed name or URI
	server string
	name   string // as the server lists it
	item   []byte // as the server lists it, its name replaced by key
}

// merge exposes every entry of the servers' lists, sorted by key, and
// drops those it cannot expose and those whose keys collide.
func (c *Catalog) merge(lk listKind, lists []serverList) ([]entry, []Problem) {
	var entries []entry
	var problems []Problem
	for _, l := range lists {
		for _, item := range l.items {
			e, p, ok := c.expose(lk, l.server, item)
			if p != nil {
				problems = append(problems, *p)
			}
			if ok {
				entries = append(entries, e)
			}
		}
	}
	// A fix names a name no other entry of the list has.
	keys := make(map[string]bool, len(entries))
	for _, e := range entries {
		keys[e.key] = true
	}
	for i, p := range problems {
		if p.Fix != "" {
			taken := func(s string) bool { return keys[p.Server+Separator+s] || s == p.Name }
			problems[i].Fix = suggest(p.Server, p.Fix, taken)
		}
	}
	slices.SortStableFunc(entries, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	kept := entries[:0]
	for i := 0; i < len(entries); {
		j := i + 1
		for j < len(entries) && entries[j].key == entries[i].key {
			j++
		}
		if j == i+1 {
			kept = append(kept, entries[i])
		} else {
			for k := i; k < j; k++ {
				other := entries[i]
				if k == i {
					other = entries[i+1]
				}
				problems = append(problems, Problem{Kind: lk.kind, Server: entries[k].server, Name: entries[k].name,
					Exposed: entries[k].key, Reason: ReasonCollision, Other: other.server, OtherName: other.name})
			}
		}
		i = j
	}
	slices.SortFunc(problems, func(a, b Problem) int {
		return cmp.Or(strings.Compare(a.Server, b.Server), strings.Compare(a.Name, b.Name), strings.Compare(string(a.Reason), string(b.Reason)),
			strings.Compare(a.Other, b.Other), strings.Compare(a.OtherName, b.OtherName))
	})
	// A server that lists a name twice collides with itself: one problem.
	return kept, slices.Compact(problems)
}

// expose is server's list entry item as the aggregate lists it; ok is
// false when it is not listed: hidden by the server's filter (no
// Problem), or not exposable (a Problem). An entry that is not an object
// with a string name is left out and logged.
func (c *Catalog) expose(lk listKind, server string, item []byte) (e entry, p *Problem, ok bool) {
	s, found, err := member(item, lk.key)
	name, isString := "", false
	if err == nil && found {
		name, isString = stringValue(s.of(item))
	}
	if !isString {
		c.o.Logger.Warn("entry left out of the aggregate's list: not an object with a string "+lk.key, "server", server, "kind", lk.kind)
		return entry{}, nil, false
	}
	var key string
	switch lk.kind {
	case KindTool, KindPrompt:
		key, p = c.names.Load().Expose(lk.kind, server, name)
		if key == "" {
			return entry{}, p, false
		}
	default:
		key = c.names.Load().ExposeURI(server, name)
	}
	return entry{key: key, server: server, name: name, item: splice(item, s, quote(key))}, nil, true
}

// report keeps the problems of method's last list and logs those that
// were not in the one before.
func (c *Catalog) report(method string, problems []Problem) {
	c.mu.Lock()
	before := map[string]bool{}
	for _, p := range c.problems[method] {
		before[p.key()] = true
	}
	c.problems[method] = problems
	c.mu.Unlock()
	for _, p := range problems {
		if !before[p.key()] {
			c.stats.Dropped.Add(1)
			c.o.Logger.Warn("entry dropped from the aggregate's list", "server", p.Server, "kind", p.Kind, "name", p.Name,
				"reason", p.Reason, "problem", p.Message())
		}
	}
}

// Problems are the entries the last list of each method dropped, sorted
// by server, kind and name: what the web page and /metrics show.
func (c *Catalog) Problems() []Problem {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Problem
	for _, ps := range c.problems {
		out = append(out, ps...)
	}
	slices.SortFunc(out, func(a, b Problem) int {
		return cmp.Or(strings.Compare(a.Server, b.Server), strings.Compare(string(a.Kind), string(b.Kind)), strings.Compare(a.Name, b.Name))
	})
	return out
}

// hints are the caching hints of a merged list (MCP 2026-07-28): ttlMs
// the least of the servers', a server without one counting as 0, and 0
// when a server was left out (a list missing a server is to be read
// again soon); cacheScope "private" when the list may differ per
// principal or a server said so.
func hints(lists []serverList, private bool) (ttl int64, priv bool) {
	ttl = -1
	for _, l := range lists {
		if l.err != nil {
			return 0, private || anyPrivate(lists)
		}
		if ttl < 0 || l.ttl < ttl {
			ttl = l.ttl
		}
	}
	return max(ttl, 0), private || anyPrivate(lists)
}

func anyPrivate(lists []serverList) bool {
	return slices.ContainsFunc(lists, func(l serverList) bool { return l.err == nil && l.private })
}

// listResult is the JSON of a page: its entries under items, nextCursor
// if more follow, and for modern the caching hints (the same on every
// page, from the cursor).
func listResult(items string, entries []entry, next string, modern bool, cur cursor) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{`)
	b.Write(quote(items))
	b.WriteString(`:[`)
	for i, e := range entries {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(e.item)
	}
	b.WriteByte(']')
	if next != "" {
		b.WriteString(`,"nextCursor":`)
		b.Write(quote(next))
	}
	if modern {
		scope := "public"
		if cur.Private {
			scope = "private"
		}
		b.WriteString(`,"ttlMs":` + strconv.FormatInt(cur.TTL, 10) + `,"cacheScope":"` + scope + `"`)
	}
	b.WriteByte('}')
	return b.Bytes()
}
