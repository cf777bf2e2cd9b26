package bridge

import (
	"context"
	"encoding/json"
	"errors"
)

// subscriptions/listen in front of a legacy child, served by the bridge: a
// listen is a session of the bridge's own on the pool's base child, which
// takes the list changes and resource updates the child sends (for every
// listener) and nothing else. Resource URIs are counted onto the child's
// resources/subscribe, with the 2025 sessions' own subscriptions: the
// first holder subscribes, the last one's going unsubscribes, and a
// restarted child is subscribed again (reinitialize). A leased child's
// list changes reach the listens of its pool too (upstream.hub).

// listenFilter is what one listen takes.
type listenFilter struct {
	tools, prompts, resources bool
}

// wants reports whether a notification of method goes to the listen: a
// list change it asked for, or an update of a resource it subscribed to
// (only those reach it: Session.subs).
func (f *listenFilter) wants(method string) bool {
	switch method {
	case "notifications/tools/list_changed":
		return f.tools
	case "notifications/prompts/list_changed":
		return f.prompts
	case "notifications/resources/list_changed":
		return f.resources
	case "notifications/resources/updated":
		return true
	}
	return false
}

// childCaps are the capabilities of a legacy child that a listen can use.
type childCaps struct {
	Tools     *struct{ ListChanged bool } `json:"tools"`
	Prompts   *struct{ ListChanged bool } `json:"prompts"`
	Resources *struct {
		ListChanged bool `json:"listChanged"`
		Subscribe   bool `json:"subscribe"`
	} `json:"resources"`
}

// startListen opens a listen on u, the pool's legacy base child: the
// acknowledgement, with the subset the child can honour, comes first;
// then the notifications asked for, each stamped with the listen's id.
// A listen that can honour nothing is acknowledged and ended.
func (mc *ModernCall) startListen(ctx context.Context, u *upstream, m *Message) error {
	raw := m.Param("notifications")
	var want struct {
		ToolsListChanged      bool     `json:"toolsListChanged"`
		PromptsListChanged    bool     `json:"promptsListChanged"`
		ResourcesListChanged  bool     `json:"resourcesListChanged"`
		ResourceSubscriptions []string `json:"resourceSubscriptions"`
	}
	if raw == nil || raw[0] != '{' || json.Unmarshal(raw, &want) != nil {
		mc.answer(errorResponse(mc.id, CodeInvalidParams, "Invalid params: subscriptions/listen needs params.notifications, an object", nil))
		return nil
	}
	u.mu.Lock()
	var r struct {
		Capabilities childCaps `json:"capabilities"`
	}
	_ = json.Unmarshal(u.mux.initResult, &r)
	u.mu.Unlock()
	c := r.Capabilities
	f := &listenFilter{
		tools:     want.ToolsListChanged && c.Tools != nil && c.Tools.ListChanged,
		prompts:   want.PromptsListChanged && c.Prompts != nil && c.Prompts.ListChanged,
		resources: want.ResourcesListChanged && c.Resources != nil && c.Resources.ListChanged,
	}
	s := newSession(mc.b, "listen")
	s.up, s.stateless, s.modern, s.listen = u, true, true, f
	s.owner, s.ownerName = mc.owner.Key, mc.owner.Name
	u.mu.Lock()
	if u.mux.dead || u.stopping {
		u.mu.Unlock()
		return &Error{Kind: KindUnavailable, Code: CodeChildExited, Message: "the MCP server is stopping; try again shortly"}
	}
	u.sessions[s] = true
	st := newStream(s, true, 0, false)
	s.get = st
	u.mu.Unlock()
	mc.sess, mc.st, mc.listen = s, st, f

	var uris []string
	if c.Resources != nil && c.Resources.Subscribe {
		for _, uri := range want.ResourceSubscriptions {
			if mc.subscribe(ctx, u, s, uri) {
				uris = append(uris, uri)
			}
		}
	}
	honored := map[string]any{}
	if f.tools {
		honored["toolsListChanged"] = true
	}
	if f.prompts {
		honored["promptsListChanged"] = true
	}
	if f.resources {
		honored["resourcesListChanged"] = true
	}
	if len(uris) > 0 {
		honored["resourceSubscriptions"] = uris
	}
	ack, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"method":  "notifications/subscriptions/acknowledged",
		"params": map[string]any{
			"_meta":         map[string]json.RawMessage{metaSubscriptionID: mc.id},
			"notifications": honored,
		},
	})
	mc.queued = append(mc.queued, ack)
	if len(honored) == 0 {
		mc.answer(mc.listenEnd())
		return nil
	}
	mc.b.addListen(mc)
	return nil
}

// subscribe adds s to the holders of uri on u, subscribing the child when
// s is the first, and reports whether the child took it.
func (mc *ModernCall) subscribe(ctx context.Context, u *upstream, s *Session, uri string) bool {
	u.mu.Lock()
	holders := u.mux.subs[uri]
	if holders == nil {
		holders = map[*Session]bool{}
		u.mux.subs[uri] = holders
	}
	first := len(holders) == 0
	holders[s] = true
	s.subs[uri] = true
	if !first {
		u.mu.Unlock()
		return true
	}
	u.mu.Unlock()
	p, _ := json.Marshal(map[string]string{"uri": uri})
	_, err := u.ask(ctx, "resources/subscribe", p, mc.b.requestBound())
	if err == nil || errors.Is(err, errRestarting) {
		return true // (a restarting child is subscribed again when it is up)
	}
	u.mu.Lock()
	delete(holders, s)
	delete(s.subs, uri)
	if len(holders) == 0 {
		delete(u.mux.subs, uri)
	}
	u.mu.Unlock()
	mc.b.log.Info("the MCP server refused a listen's resource subscription", "uri", uri, "err", err)
	return false
}

// listenEnd is the graceful end of a listen: "a successful
// subscriptions/listen response ... then close the stream".
func (mc *ModernCall) listenEnd() []byte {
	meta := map[string]json.RawMessage{metaSubscriptionID: mc.id}
	if mc.hints.serverInfo != nil {
		meta[metaServerInfo] = mc.hints.serverInfo
	}
	return resultMessage(mc.id, map[string]any{"resultType": "complete", "_meta": meta})
}

// publish hands a list change or resource update that a leased child sent
// to the listens of its pool's base child u.
func (u *upstream) publish(m *childMsg) {
	u.mu.Lock()
	defer u.mu.Unlock()
	msg := m.keep()
	if m.method == methodResourceUpdated {
		for s := range u.mux.subs[uriOf(m.params())] {
			if s.listen != nil {
				s.deliverLocked(msg)
			}
		}
		return
	}
	for s := range u.sessions {
		if s.listen != nil {
			s.deliverLocked(msg)
		}
	}
}

// addListen registers a listen for Drain.
func (b *Bridge) addListen(mc *ModernCall) {
	b.mu.Lock()
	b.listens[mc] = true
	b.mu.Unlock()
}

// removeListen forgets a listen that ended.
func (b *Bridge) removeListen(mc *ModernCall) {
	b.mu.Lock()
	delete(b.listens, mc)
	b.mu.Unlock()
}
