package bridge

import (
	"context"
	"encoding/json"
	"errors"
)

// subscriptions/listen in front of a legacy child, served by the bridge: a
// listen is a party of its own on the pool's base child (listenBox), which
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
// (only those of its subscriptions reach it: routeSubscribers).
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

// startListen opens a listen on the pool's legacy base child: the
// acknowledgement, with the subset the child can honour, comes first;
// then the notifications asked for, each stamped with the listen's id. A
// listen that can honour nothing is acknowledged and ended.
func (mc *ModernCall) startListen(ctx context.Context, m *Message) error {
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
	u := mc.base
	var r struct {
		Capabilities childCaps `json:"capabilities"`
	}
	_ = json.Unmarshal(u.initResult(), &r)
	c := r.Capabilities
	x := &listenBox{filter: listenFilter{
		tools:     want.ToolsListChanged && c.Tools != nil && c.Tools.ListChanged,
		prompts:   want.PromptsListChanged && c.Prompts != nil && c.Prompts.ListChanged,
		resources: want.ResourcesListChanged && c.Resources != nil && c.Resources.ListChanged,
	}}
	x.box = *newBox(mc.b, u, mc.owner, -1)
	if err := u.join(x); err != nil {
		return err
	}
	mc.run = &run{u: u, party: x, inbox: &x.box}
	mc.state = stateListening
	var uris []string
	if c.Resources != nil && c.Resources.Subscribe {
		for _, uri := range want.ResourceSubscriptions {
			if mc.subscribe(ctx, x, uri) {
				uris = append(uris, uri)
			}
		}
	}
	honored := x.filter.honored(uris)
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

// honored is what a listen with filter f and the resource subscriptions
// uris can honour, as its acknowledgement says it.
func (f *listenFilter) honored(uris []string) map[string]any {
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
	return honored
}

// subscribe adds the listen x to the holders of uri on the base child,
// subscribing the child when x is the first, and reports whether the
// child took it.
func (mc *ModernCall) subscribe(ctx context.Context, x party, uri string) bool {
	u := mc.base
	if !u.subscribe(x, uri) {
		return true
	}
	_, err := u.ask(ctx, "resources/subscribe", uriParams(uri), mc.b.requestBound())
	if err == nil || errors.Is(err, errRestarting) {
		return true // (a restarting child is subscribed again when it is up)
	}
	u.unsubscribe(x, uri)
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

// listenBoxesLocked are the boxes of the open listens, which Drain ends.
// Called with b.mu held.
func (b *Bridge) listenBoxesLocked() []*box {
	boxes := make([]*box, 0, len(b.listens))
	for mc := range b.listens {
		boxes = append(boxes, mc.run.inbox)
	}
	return boxes
}
