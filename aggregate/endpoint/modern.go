package endpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/aggregate"
	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// The 2026-07-28 era on the aggregate endpoint: each request on its own,
// through the Server's one Table for them (Server.modern: its ids are
// unique across requests, so one serves them all). server/discover and the lists are answered by
// the aggregate (each server asked through its bridge's Modern); every
// other request goes to the Modern of the server its name or URI names,
// renamed there (params and the Mcp-Name header alike), and what comes
// back is renamed for the client. An MRTR retry names the same tool, so
// it reaches the server whose requestState it carries.

// Modern serves a 2026-07-28 request (nil, nil for a notification).
func (s *Server) Modern(ctx context.Context, req bridge.ModernRequest) (bridge.Call, error) {
	m := &req.Message
	if m.Kind != bridge.Request {
		return nil, nil
	}
	names := s.names.Load()
	switch {
	case m.Method == "server/discover":
		return s.discover(ctx, names, req), nil
	case aggregate.IsList(m.Method):
		return s.modernList(ctx, names, req), nil
	case m.Method == "subscriptions/listen":
		return s.listen(ctx, names, req), nil
	}
	t := s.modern
	r, err := t.FromClient(m.Raw)
	if err != nil {
		return nil, withID(err, m.ID())
	}
	if r.Target != aggregate.ToServer {
		return nil, &bridge.Error{Kind: bridge.KindInvalid, Code: bridge.CodeMethodNotFound, ID: m.ID(),
			Message: "Method not found: " + m.Method + " (not served on the aggregate endpoint)"}
	}
	b := s.o.Bridge(r.Server)
	if b == nil {
		t.Forget(r.ID)
		return answeredCall(aggregate.Unavailable(m.ID(), m.Method, r.Server)), nil
	}
	msgs, _, err := bridge.ParseBody(r.Message)
	if err != nil {
		t.Forget(r.ID)
		return nil, withID(err, m.ID())
	}
	h := req.Headers
	if h.HasName {
		// Mcp-Name mirrors params.name (or uri), which the Table renamed.
		var own string
		key := "name"
		if m.Method == "resources/read" {
			key = "uri"
		}
		if json.Unmarshal(msgs[0].Param(key), &own) == nil {
			h.Name = own
		}
	}
	call, err := b.Modern(ctx, bridge.ModernRequest{Message: msgs[0], Headers: h, Owner: req.Owner, Env: req.Env, Private: req.Private})
	if err != nil || call == nil {
		t.Forget(r.ID)
		return nil, renamedError(err, m.ID())
	}
	return &renamedCall{Call: call, t: t, id: r.ID, server: r.Server, log: s.o.Logger}, nil
}

// renamedError is err answering the client's id (nil for nil).
func renamedError(err error, id []byte) error {
	if err == nil {
		return nil
	}
	return withID(err, id)
}

// Close lets go of the call; an answer that has not come is forgotten
// (Forget does nothing once it came).
func (c *renamedCall) Close() {
	c.Call.Close()
	c.t.Forget(c.id)
}

func withID(err error, id []byte) error {
	if be, ok := err.(*bridge.Error); ok {
		c := *be
		c.ID = append([]byte(nil), id...)
		return &c
	}
	return err
}

// renamedCall is a server's call as the aggregate's client reads it: each
// message through the request's Table (ids back, names and URIs exposed).
type renamedCall struct {
	bridge.Call
	t      *aggregate.Table
	id     int64 // the id the server was sent
	server string
	log    interface {
		Debug(string, ...any)
	}
}

func (c *renamedCall) rename(evs []bridge.Event, from int) []bridge.Event {
	out := evs[:from]
	for _, ev := range evs[from:] {
		if ev.Data == nil {
			out = append(out, ev) // a priming event
			continue
		}
		d, err := c.t.FromServer(c.server, ev.Data)
		if err != nil {
			c.log.Debug("server's message dropped", "server", c.server, "err", err)
		}
		if d.Dest == aggregate.ToClient {
			out = append(out, bridge.Event{ID: ev.ID, Data: d.Message})
		}
	}
	return out
}

func (c *renamedCall) Next(ctx context.Context, tick <-chan time.Time, buf []bridge.Event) ([]bridge.Event, bool, error) {
	n := len(buf)
	buf, final, err := c.Call.Next(ctx, tick, buf)
	return c.rename(buf, n), final, err
}

func (c *renamedCall) TakeOnly() (bridge.Event, bool) {
	ev, ok := c.Call.TakeOnly()
	if !ok {
		return ev, false
	}
	evs := c.rename([]bridge.Event{ev}, 0)
	if len(evs) != 1 {
		return bridge.Event{}, false
	}
	return evs[0], true
}

func (c *renamedCall) Collect(ctx context.Context, buf []bridge.Event) ([]bridge.Event, error) {
	n := len(buf)
	buf, err := c.Call.Collect(ctx, buf)
	return c.rename(buf, n), err
}

// fixedCall is an answer the aggregate gives itself, as a Call.
type fixedCall struct{ *outbox }

func (fixedCall) Listen() bool        { return false }
func (fixedCall) Exchange() string    { return "" }
func (fixedCall) InputRequired() bool { return false }

func answeredCall(msg []byte) bridge.Call {
	o := newReply(1)
	o.push(msg, true)
	return fixedCall{o}
}

// modernHeaders are the headers of a request of the aggregate's own, of
// method, with the client's version.
func modernHeaders(h bridge.ModernHeaders, method string) bridge.ModernHeaders {
	return bridge.ModernHeaders{Version: h.Version, HasVersion: h.HasVersion, Method: method, HasMethod: true}
}

// ask sends method with params (the client's _meta among them) to
// server's bridge, as a request of t's, and returns its result.
func (s *Server) ask(ctx context.Context, t *aggregate.Table, req bridge.ModernRequest, server, method string, params []byte) (json.RawMessage, error) {
	b := s.o.Bridge(server)
	if b == nil {
		return nil, errDown
	}
	id, msg := t.Call(server, method, params)
	msgs, _, err := bridge.ParseBody(msg)
	if err != nil {
		t.Forget(id)
		return nil, err
	}
	call, err := b.Modern(ctx, bridge.ModernRequest{Message: msgs[0], Headers: modernHeaders(req.Headers, method), Owner: req.Owner, Env: req.Env, Private: req.Private})
	if err != nil {
		t.Forget(id)
		return nil, err
	}
	if call == nil {
		return nil, fmt.Errorf("no answer to %s", method)
	}
	defer call.Close()
	evs, err := call.Collect(ctx, nil)
	if err != nil {
		t.Forget(id)
		return nil, err
	}
	for _, ev := range evs {
		if d, err := t.FromServer(server, ev.Data); err == nil && d.Dest == aggregate.ToCaller && d.ID == id {
			return answerResult(d.Message)
		}
	}
	t.Forget(id)
	return nil, fmt.Errorf("no answer to %s", method)
}

// metaParams are params holding the client's _meta (its version and
// capabilities, which every 2026-07-28 request carries), and cursor if set.
func metaParams(m *bridge.Message, cursor string) []byte {
	p := map[string]any{}
	if meta := m.Param("_meta"); meta != nil {
		p["_meta"] = json.RawMessage(meta)
	}
	if cursor != "" {
		p["cursor"] = cursor
	}
	b, _ := json.Marshal(p)
	return b
}

// modernList answers a list, merged by a Catalog of the request's own
// whose Lister asks each server's bridge.
func (s *Server) modernList(ctx context.Context, names *aggregate.Names, req bridge.ModernRequest) bridge.Call {
	m := &req.Message
	t := aggregate.NewTable(names, aggregate.TableOptions{Stats: s.o.Stats})
	cat := aggregate.NewCatalog(names, aggregate.ListerFunc(func(ctx context.Context, server, method, cursor string) (json.RawMessage, error) {
		res, err := s.ask(ctx, t, req, server, method, metaParams(m, cursor))
		if err == nil {
			s.listed(server, method, res)
		}
		return res, err
	}), aggregate.CatalogOptions{ListTimeout: s.o.ListTimeout, CursorKey: s.o.CursorKey, Logger: s.o.Logger, Stats: s.o.Stats})
	var cursor string
	if raw := m.Param("cursor"); raw != nil {
		if json.Unmarshal(raw, &cursor) != nil {
			return answeredCall(errorBody(&bridge.Error{Code: bridge.CodeInvalidParams, Message: "invalid cursor: want a string"}, m.ID()))
		}
	}
	var allowed func(string) bool
	if s.o.Allowed != nil {
		allowed = s.o.Allowed(ctx)
	}
	res, err := cat.List(ctx, aggregate.ListRequest{Method: m.Method, Cursor: cursor, Allowed: allowed,
		Scope: req.Owner.Key, Private: req.Private || allowed != nil, Modern: true})
	if err != nil {
		return answeredCall(errorBody(err, m.ID()))
	}
	s.noteProblems(m.Method, res.Problems)
	return answeredCall(result(m.ID(), withResultType(res.Result)))
}

// listed gives Options.Listed a page a server answered.
func (s *Server) listed(server, method string, res json.RawMessage) {
	if s.o.Listed != nil {
		s.o.Listed(server, method, res)
	}
}

// withResultType marks a result complete, as every 2026-07-28 result
// says what it is.
func withResultType(res []byte) []byte {
	var r map[string]json.RawMessage
	if json.Unmarshal(res, &r) != nil {
		return res
	}
	if _, ok := r["resultType"]; !ok {
		r["resultType"] = json.RawMessage(`"complete"`)
	}
	b, _ := json.Marshal(r)
	return b
}

// discover answers server/discover: what any server can do, asked of
// each within ListTimeout (one that misses it is left out).
func (s *Server) discover(ctx context.Context, names *aggregate.Names, req bridge.ModernRequest) bridge.Call {
	m := &req.Message
	t := aggregate.NewTable(names, aggregate.TableOptions{Stats: s.o.Stats})
	ctx, cancel := context.WithTimeout(ctx, s.o.ListTimeout)
	defer cancel()
	results := map[string]json.RawMessage{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, name := range names.Servers() {
		wg.Go(func() {
			res, err := s.ask(ctx, t, req, name, "server/discover", metaParams(m, ""))
			if err != nil {
				s.o.Logger.Warn("server left out of the aggregate's server/discover", "server", name, "err", err)
				return
			}
			mu.Lock()
			results[name] = res
			mu.Unlock()
		})
	}
	wg.Wait()
	var init map[string]json.RawMessage
	_ = json.Unmarshal(initializeAnswer(m.ID(), "", names.Servers(), results), &init)
	var r map[string]json.RawMessage
	_ = json.Unmarshal(init["result"], &r)
	scope := "public"
	if req.Private {
		scope = "private"
	}
	out := map[string]any{
		"resultType":        "complete",
		"supportedVersions": bridge.ModernVersions,
		"capabilities":      r["capabilities"],
		"ttlMs":             0,
		"cacheScope":        scope,
		"_meta":             map[string]json.RawMessage{"io.modelcontextprotocol/serverInfo": r["serverInfo"]},
	}
	if in := r["instructions"]; in != nil {
		out["instructions"] = in
	}
	b, _ := json.Marshal(out)
	return answeredCall(result(m.ID(), b))
}
