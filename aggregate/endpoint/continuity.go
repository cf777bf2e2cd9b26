package endpoint

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/mcp-bridge/mcp-bridge/aggregate"
	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// A session of the aggregate outlives its servers' sessions: a server's
// child that dies (per-session mode) ends that server's session, which the
// aggregate starts anew, and a shared child restarted inside its bridge
// keeps it but may list other things. What the client set up on the old
// one must hold on the new one, and the client must hear of the change.

// maxRevivals bounds the times a server's session is started anew on its
// own (for its subscriptions) without a request of the client's between:
// a server that dies at every start is then left for the next use.
const maxRevivals = 3

// noteSubscription records the client's resources/subscribe (or
// unsubscribe) to server, by the server's own URI, so that the server's
// next session is subscribed again. msg is what goes to the server.
func (ss *Session) noteSubscription(server, method string, msg []byte) {
	if method != "resources/subscribe" && method != "resources/unsubscribe" {
		return
	}
	msgs, _, err := bridge.ParseBody(msg)
	if err != nil || len(msgs) != 1 {
		return
	}
	uri := msgs[0].Param("uri")
	if len(uri) == 0 || uri[0] != '"' {
		return // the server answers it with its own error; nothing to renew
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if method == "resources/unsubscribe" {
		delete(ss.subs[server], string(uri))
		return
	}
	if ss.subs == nil {
		ss.subs = map[string]map[string]bool{}
	}
	if ss.subs[server] == nil {
		ss.subs[server] = map[string]bool{}
	}
	ss.subs[server][string(uri)] = true
}

// renew subscribes m, a server's new session, to what the client
// subscribed to on the server's sessions before. The client's requests
// to the server wait for it, so a server that does not answer holds them
// for ListTimeout at most.
func (ss *Session) renew(m *member) {
	ss.mu.Lock()
	uris := slices.Sorted(maps.Keys(ss.subs[m.server]))
	ss.mu.Unlock()
	if len(uris) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ss.ctx, ss.srv.o.ListTimeout)
	defer cancel()
	for _, uri := range uris {
		if _, err := ss.call(ctx, m, "resources/subscribe", fmt.Appendf(nil, `{"uri":%s}`, uri)); err != nil {
			ss.log.Warn("subscription not renewed on the server's new session", "server", m.server, "uri", uri, "err", err)
		}
	}
}

// revive starts server's session anew after old ended, if the client
// holds subscriptions on it: their updates come only from a session that
// is up, and the client may send nothing that would start it.
func (ss *Session) revive(old *member) {
	b := ss.srv.o.Bridge(old.server)
	if b == nil {
		return
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.ended || ss.members[old.server] != old || len(ss.subs[old.server]) == 0 || old.revivals >= maxRevivals {
		return // ended, started anew already, nothing to renew, or dying at every start
	}
	m := &member{server: old.server, b: b, ready: make(chan struct{}), revivals: old.revivals + 1}
	ss.members[old.server] = m
	ss.log.Info("server's session started anew for the client's subscriptions", "server", m.server)
	ss.spawnLocked(func() { ss.start(m) })
}

// watchRestarts tells the client that its lists may have changed each
// time m's bridge restarts a shared (or per-identity) child, which m's
// session outlives, until that session or the aggregate's ends. The
// bridge subscribes the new child again itself.
func (ss *Session) watchRestarts(m *member, restarted <-chan struct{}) {
	for {
		select {
		case <-restarted:
		case <-m.conn.Done():
			return
		case <-ss.ctx.Done():
			return
		}
		restarted = m.b.ChildRestarted()
		ss.log.Info("server of the aggregate restarted its child", "server", m.server)
		ss.coal.Signal(aggregate.AllChanged)
	}
}
