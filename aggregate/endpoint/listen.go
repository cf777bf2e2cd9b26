package endpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/aggregate"
	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// subscriptions/listen (2026-07-28) on the aggregate endpoint: the
// client's one listen is a listen on each server it concerns (every
// server for a list change asked for; for a resource, the server its URI
// names), each through that server's bridge, which serves it in front of
// any child. Their notifications are merged onto the client's one stream,
// URIs exposed and each stamped with the client's listen id. The
// acknowledgement comes first and says what any server honoured; a server
// that does not acknowledge within ListTimeout, or is down, is left out
// and the others listen on. The client's stream ending ends every
// server's listen; every server's listen ending (their bridges draining)
// ends the client's with its completion result.

// listenWant is what a listen asks for.
type listenWant struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
}

func (w listenWant) lists() bool {
	return w.ToolsListChanged || w.PromptsListChanged || w.ResourcesListChanged
}

// any reports whether w asks for (or honours) anything.
func (w listenWant) any() bool { return w.lists() || len(w.ResourceSubscriptions) > 0 }

// perServer splits a client's listen by server: the list changes go to
// every server, each URI to the server it names, as that server names it.
// A server asked for nothing is not listened to; a URI no server has is
// not honoured.
func perServer(names *aggregate.Names, w listenWant) map[string]listenWant {
	out := map[string]listenWant{}
	if w.lists() {
		for _, s := range names.Servers() {
			out[s] = listenWant{ToolsListChanged: w.ToolsListChanged, PromptsListChanged: w.PromptsListChanged, ResourcesListChanged: w.ResourcesListChanged}
		}
	}
	for _, uri := range w.ResourceSubscriptions {
		server, own, err := names.ResolveURI(uri)
		if err != nil {
			continue
		}
		sw := out[server]
		sw.ResourceSubscriptions = append(sw.ResourceSubscriptions, own)
		out[server] = sw
	}
	return out
}

// listenCall is the client's listen as its transport reads it: a stream
// the servers' listens push into, until the client lets go (Close ends
// them all and waits for their goroutines).
type listenCall struct {
	*outbox
	cancel context.CancelFunc
	done   chan struct{} // closed when the listen's goroutines have all ended
	once   sync.Once
}

func (*listenCall) Listen() bool        { return true }
func (*listenCall) Exchange() string    { return "" }
func (*listenCall) InputRequired() bool { return false }

func (c *listenCall) Close() {
	c.once.Do(func() {
		c.cancel()
		<-c.done
		c.outbox.Close()
	})
}

// serverListen is one server's acknowledgement: what it honours (nil:
// nothing, or it is down).
type serverListen struct {
	server  string
	honored *listenWant
}

// listen serves a client's subscriptions/listen.
func (s *Server) listen(ctx context.Context, names *aggregate.Names, req bridge.ModernRequest) bridge.Call {
	m := &req.Message
	id := bytes.Clone(m.ID()) // the listen outlives this call
	raw := m.Param("notifications")
	var want listenWant
	if raw == nil || raw[0] != '{' || json.Unmarshal(raw, &want) != nil {
		return answeredCall(errorBody(&bridge.Error{Code: bridge.CodeInvalidParams,
			Message: "Invalid params: subscriptions/listen needs params.notifications, an object"}, id))
	}
	// The servers' listens outlive the POST's handler only as long as the
	// transport reads the call: Close cancels them.
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &listenCall{outbox: newStream(), cancel: cancel, done: make(chan struct{})}
	plan := perServer(names, want)
	l := &fanListen{s: s, t: aggregate.NewTable(names, aggregate.TableOptions{Stats: s.o.Stats}), req: req, meta: bytes.Clone(m.Param("_meta")),
		id: id, box: c.outbox, acks: make(chan serverListen, len(plan)), start: make(chan struct{}), counted: map[string]bool{}}
	var wg sync.WaitGroup
	for server, sw := range plan {
		wg.Go(func() { l.listenOne(lctx, server, sw) })
	}
	go func() {
		defer close(c.done)
		defer cancel()
		l.acknowledge(lctx, names, len(plan))
		if !l.acked.any() {
			cancel() // nothing to listen for: it ends at once, as on a server's own endpoint
		}
		close(l.start)
		wg.Wait()
		// Every server's listen ended (or the client let go, and this
		// goes nowhere): the client's ends, as a server's own does.
		c.outbox.push(listenEnd(id), true)
		c.outbox.end()
	}()
	return c
}

// fanListen is one client's listen over its servers'.
type fanListen struct {
	s    *Server
	t    *aggregate.Table
	req  bridge.ModernRequest
	meta json.RawMessage // the client's _meta, which each server's listen carries
	id   []byte          // the client's listen id
	box  *outbox
	acks chan serverListen
	// start is closed once the client's acknowledgement is out; acked
	// (what it says, URIs exposed) and counted (the servers in it) are
	// written before, and only read after.
	start   chan struct{}
	acked   listenWant
	counted map[string]bool
}

// acknowledge gives the client its acknowledgement: what the servers
// that acknowledged within ListTimeout honour, or, if none of them
// honours anything by then, what the first one to honour something does
// (a cold start of every server must not end the listen). A server still
// starting then joins later (listenOne).
func (l *fanListen) acknowledge(ctx context.Context, names *aggregate.Names, servers int) {
	timer := time.NewTimer(l.s.o.ListTimeout)
	defer timer.Stop()
	timeout := timer.C
	for n := 0; n < servers; {
		var a serverListen
		select {
		case a = <-l.acks:
			n++
		case <-timeout:
			if l.acked.any() {
				l.box.push(listenAck(l.id, l.acked), false)
				return
			}
			timeout = nil
			continue
		case <-ctx.Done():
			return // the client let go
		}
		l.counted[a.server] = true
		if h := a.honored; h != nil {
			l.acked.ToolsListChanged = l.acked.ToolsListChanged || h.ToolsListChanged
			l.acked.PromptsListChanged = l.acked.PromptsListChanged || h.PromptsListChanged
			l.acked.ResourcesListChanged = l.acked.ResourcesListChanged || h.ResourcesListChanged
			for _, uri := range h.ResourceSubscriptions {
				l.acked.ResourceSubscriptions = append(l.acked.ResourceSubscriptions, names.ExposeURI(a.server, uri))
			}
		}
		if timeout == nil && l.acked.any() {
			break
		}
	}
	l.box.push(listenAck(l.id, l.acked), false)
}

// listenOne is server's part of a listen: it opens the server's listen
// for sw, reports its acknowledgement on acks (once, whatever happens),
// then, once the client's acknowledgement is out, passes on its
// notifications until the server's listen ends or ctx does. A server
// that acknowledges too late for the client's acknowledgement (its child
// was slow to start) joins then: the client is told the lists it
// listens to may have changed, as a list that left a starting server out
// is, and gets from it what its acknowledgement promised.
func (l *fanListen) listenOne(ctx context.Context, server string, sw listenWant) {
	log := l.s.o.Logger
	reported := false
	report := func(h *listenWant) {
		if !reported {
			reported = true
			l.acks <- serverListen{server: server, honored: h}
		}
	}
	defer report(nil)
	b := l.s.o.Bridge(server)
	if b == nil {
		log.Warn("server left out of a subscriptions/listen: not served", "server", server)
		return
	}
	p := map[string]any{"notifications": sw}
	if l.meta != nil {
		p["_meta"] = l.meta
	}
	params, _ := json.Marshal(p)
	sid, msg := l.t.Call(server, "subscriptions/listen", params)
	defer l.t.Forget(sid)
	msgs, _, err := bridge.ParseBody(msg)
	if err != nil {
		return
	}
	// No deadline of its own: a server slow to start joins late, and one
	// that never starts ends with its bridge's init timeout, the
	// client's going, or the bridge's shutdown.
	call, err := b.Modern(ctx, bridge.ModernRequest{Message: msgs[0], Headers: modernHeaders(l.req.Headers, "subscriptions/listen"),
		Owner: l.req.Owner, Env: l.req.Env, Private: l.req.Private})
	if err != nil || call == nil {
		log.Warn("server left out of a subscriptions/listen", "server", server, "err", err)
		return
	}
	defer call.Close()
	call.Begin(bridge.ServeOptions{Plain: true}) // an error after this is the stream's final message
	var honored listenWant
	var pending [][]byte
	var buf []bridge.Event
	for !reported {
		evs, final, err := call.Next(ctx, nil, buf[:0])
		buf = evs
		if err != nil {
			return
		}
		for _, ev := range evs {
			if h, ok := ackOf(ev.Data); ok && !reported {
				honored = h
				report(&h)
			} else if ev.Data != nil {
				pending = append(pending, bytes.Clone(ev.Data))
			}
		}
		if final {
			return // it ended (honouring nothing, or refused)
		}
	}
	select {
	case <-l.start:
	case <-ctx.Done():
		return
	}
	if !l.counted[server] {
		log.Info("a server joined a subscriptions/listen late (it was starting)", "server", server)
		for _, ch := range []struct {
			on     bool
			method string
		}{
			{honored.ToolsListChanged && l.acked.ToolsListChanged, "notifications/tools/list_changed"},
			{honored.PromptsListChanged && l.acked.PromptsListChanged, "notifications/prompts/list_changed"},
			{honored.ResourcesListChanged && l.acked.ResourcesListChanged, "notifications/resources/list_changed"},
		} {
			if ch.on {
				l.box.push(stamped([]byte(`{"jsonrpc":"2.0","method":"`+ch.method+`"}`), l.id), false)
			}
		}
	}
	for _, msg := range pending {
		if out := l.notification(server, msg); out != nil {
			l.box.push(out, false)
		}
	}
	for {
		evs, final, err := call.Next(ctx, nil, buf[:0])
		buf = evs
		if err != nil {
			return
		}
		for _, ev := range evs {
			if out := l.notification(server, ev.Data); out != nil {
				l.box.push(out, false)
			}
		}
		if final {
			log.Info("a server's subscriptions/listen ended; the others listen on", "server", server)
			return
		}
	}
}

// ackOf reads a server's acknowledgement: what it honours.
func ackOf(msg []byte) (listenWant, bool) {
	var m struct {
		Method string `json:"method"`
		Params struct {
			Notifications listenWant `json:"notifications"`
		} `json:"params"`
	}
	if msg == nil || json.Unmarshal(msg, &m) != nil || m.Method != "notifications/subscriptions/acknowledged" {
		return listenWant{}, false
	}
	return m.Params.Notifications, true
}

// notification is a server's listen message as the client's listen
// passes it on, nil for none: a list change or a resource's update (its
// URI exposed) that the client's acknowledgement promised, stamped with
// the client's listen id. The server's own completion result ends only
// its part, and is not passed on.
func (l *fanListen) notification(server string, msg []byte) []byte {
	if msg == nil {
		return nil
	}
	var head struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(msg, &head) != nil {
		return nil
	}
	a := &l.acked
	switch head.Method {
	case "notifications/tools/list_changed":
		if !a.ToolsListChanged {
			return nil
		}
	case "notifications/prompts/list_changed":
		if !a.PromptsListChanged {
			return nil
		}
	case "notifications/resources/list_changed":
		if !a.ResourcesListChanged {
			return nil
		}
	case "notifications/resources/updated":
		d, err := l.t.FromServer(server, msg)
		if err != nil || d.Dest != aggregate.ToClient {
			l.s.o.Logger.Debug("server's resource update dropped", "server", server, "err", err)
			return nil
		}
		var u struct {
			Params struct {
				URI string `json:"uri"`
			} `json:"params"`
		}
		if json.Unmarshal(d.Message, &u) != nil || !slices.Contains(a.ResourceSubscriptions, u.Params.URI) {
			return nil
		}
		msg = d.Message
	default:
		return nil
	}
	return stamped(msg, l.id)
}

// stamped is the notification msg with params._meta's subscription id
// set to id.
func stamped(msg, id []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil {
		return nil
	}
	params := map[string]json.RawMessage{}
	if raw := m["params"]; raw != nil {
		_ = json.Unmarshal(raw, &params)
	}
	meta := map[string]json.RawMessage{}
	if raw := params["_meta"]; raw != nil {
		_ = json.Unmarshal(raw, &meta)
	}
	meta[subscriptionIDKey] = id
	params["_meta"], _ = json.Marshal(meta)
	m["params"], _ = json.Marshal(params)
	out, _ := json.Marshal(m)
	return out
}

const subscriptionIDKey = "io.modelcontextprotocol/subscriptionId"

// listenAck is the client's acknowledgement: what any server honours.
func listenAck(id []byte, honored listenWant) []byte {
	out, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"method":  "notifications/subscriptions/acknowledged",
		"params": map[string]any{
			"_meta":         map[string]json.RawMessage{subscriptionIDKey: id},
			"notifications": honored,
		},
	})
	return out
}

// listenEnd is the listen's completion result, its stream's last message.
func listenEnd(id []byte) []byte {
	res, _ := json.Marshal(map[string]any{"resultType": "complete", "_meta": map[string]json.RawMessage{subscriptionIDKey: id}})
	return result(id, res)
}
