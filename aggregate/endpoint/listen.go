package endpoint

import (
	"context"
	"encoding/json"
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
// nothing, or it is down, or it missed ListTimeout).
type serverListen struct {
	server  string
	honored *listenWant
}

// listen serves a client's subscriptions/listen.
func (s *Server) listen(ctx context.Context, names *aggregate.Names, req bridge.ModernRequest) bridge.Call {
	m := &req.Message
	id := m.ID()
	raw := m.Param("notifications")
	var want listenWant
	if raw == nil || raw[0] != '{' || json.Unmarshal(raw, &want) != nil {
		return answeredCall(errorBody(&bridge.Error{Code: bridge.CodeInvalidParams,
			Message: "Invalid params: subscriptions/listen needs params.notifications, an object"}, id))
	}
	var meta json.RawMessage
	if raw := m.Param("_meta"); raw != nil {
		meta = raw
	}
	t := aggregate.NewTable(names, aggregate.TableOptions{Stats: s.o.Stats})
	// The servers' listens outlive the POST's handler only as long as the
	// transport reads the call: Close cancels them.
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &listenCall{outbox: newStream(), cancel: cancel, done: make(chan struct{})}
	plan := perServer(names, want)
	acks := make(chan serverListen, len(plan))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for server, sw := range plan {
		wg.Go(func() {
			s.listenOne(lctx, t, req, meta, server, sw, id, acks, start, c.outbox)
		})
	}
	go func() {
		defer close(c.done)
		defer cancel()
		honored := listenWant{}
		for range plan {
			a := <-acks
			if a.honored == nil {
				continue
			}
			h := a.honored
			honored.ToolsListChanged = honored.ToolsListChanged || h.ToolsListChanged
			honored.PromptsListChanged = honored.PromptsListChanged || h.PromptsListChanged
			honored.ResourcesListChanged = honored.ResourcesListChanged || h.ResourcesListChanged
			for _, uri := range h.ResourceSubscriptions {
				honored.ResourceSubscriptions = append(honored.ResourceSubscriptions, names.ExposeURI(a.server, uri))
			}
		}
		c.outbox.push(listenAck(id, honored), false)
		if !honored.lists() && len(honored.ResourceSubscriptions) == 0 {
			cancel() // nothing to listen for: it ends at once, as on a server's own endpoint
		}
		close(start)
		wg.Wait()
		// Every server's listen ended (or the client let go, and this
		// goes nowhere): the client's ends, as a server's own does.
		c.outbox.push(listenEnd(id), true)
		c.outbox.end()
	}()
	return c
}

// listenOne is server's part of a listen: it opens the server's listen
// for sw, reports its acknowledgement on acks (once, whatever happens),
// then, once start is closed, passes its notifications to box until the
// server's listen ends or ctx does.
func (s *Server) listenOne(ctx context.Context, t *aggregate.Table, req bridge.ModernRequest, meta json.RawMessage,
	server string, sw listenWant, clientID []byte, acks chan<- serverListen, start <-chan struct{}, box *outbox) {
	reported := false
	report := func(h *listenWant) {
		if !reported {
			reported = true
			acks <- serverListen{server: server, honored: h}
		}
	}
	defer report(nil)
	b := s.o.Bridge(server)
	if b == nil {
		s.o.Logger.Warn("server left out of a subscriptions/listen: not served", "server", server)
		return
	}
	p := map[string]any{"notifications": sw}
	if meta != nil {
		p["_meta"] = meta
	}
	params, _ := json.Marshal(p)
	sid, msg := t.Call(server, "subscriptions/listen", params)
	defer t.Forget(sid)
	msgs, _, err := bridge.ParseBody(msg)
	if err != nil {
		return
	}
	// Its acknowledgement, within ListTimeout: a server whose child is
	// slow to start must not hold the others' back.
	deadline := time.NewTimer(s.o.ListTimeout)
	defer deadline.Stop()
	startCtx, stop := context.WithTimeout(ctx, s.o.ListTimeout)
	call, err := b.Modern(startCtx, bridge.ModernRequest{Message: msgs[0], Headers: modernHeaders(req.Headers, "subscriptions/listen"),
		Owner: req.Owner, Env: req.Env, Private: req.Private})
	stop()
	if err != nil || call == nil {
		s.o.Logger.Warn("server left out of a subscriptions/listen", "server", server, "err", err)
		return
	}
	defer call.Close()
	call.Begin(bridge.ServeOptions{Plain: true}) // an error after this is the stream's final message
	var pending [][]byte
	var buf []bridge.Event
	for !reported {
		evs, final, err := call.Next(ctx, deadline.C, buf[:0])
		buf = evs
		if err != nil {
			return
		}
		if len(evs) == 0 && !final {
			s.o.Logger.Warn("server left out of a subscriptions/listen: no acknowledgement in time", "server", server)
			return
		}
		for _, ev := range evs {
			if h, ok := ackOf(ev.Data); ok && !reported {
				report(&h)
				continue
			}
			if out := s.listenNotification(t, server, ev.Data, clientID); out != nil {
				pending = append(pending, out)
			}
		}
		if final {
			return // it ended (honouring nothing, or refused)
		}
	}
	select {
	case <-start:
	case <-ctx.Done():
		return
	}
	for _, msg := range pending {
		box.push(msg, false)
	}
	for {
		evs, final, err := call.Next(ctx, nil, buf[:0])
		buf = evs
		if err != nil {
			return
		}
		for _, ev := range evs {
			if out := s.listenNotification(t, server, ev.Data, clientID); out != nil {
				box.push(out, false)
			}
		}
		if final {
			s.o.Logger.Info("a server's subscriptions/listen ended; the others listen on", "server", server)
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

// listenNotification is a server's listen message as the client's listen
// passes it on, nil for none: a list change or a resource's update (its
// URI exposed), stamped with the client's listen id. The server's own
// completion result ends only its part, and is not passed on.
func (s *Server) listenNotification(t *aggregate.Table, server string, msg, clientID []byte) []byte {
	if msg == nil {
		return nil
	}
	var head struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(msg, &head) != nil {
		return nil
	}
	switch head.Method {
	case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
	case "notifications/resources/updated":
		d, err := t.FromServer(server, msg)
		if err != nil || d.Dest != aggregate.ToClient {
			s.o.Logger.Debug("server's resource update dropped", "server", server, "err", err)
			return nil
		}
		msg = d.Message
	default:
		return nil
	}
	return stamped(msg, clientID)
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
