package endpoint

import (
	"bytes"
	"context"
	"time"

	"github.com/mcp-bridge/mcp-bridge/aggregate"
	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// The common case, read without a goroutine of its own: a POST of one
// request to a server whose session is up. Its reader is the server
// session's, each message renamed on its way through (relay), so that the
// answer costs no hand-over between goroutines.

// sendOne sends m, a POST's only request, to its server's session if that
// session is up, and returns the reader of its answer; false when m is
// for the aggregate or the server's session is not up (Send's general
// path then takes it).
func (ss *Session) sendOne(m *bridge.Message, jsonOnly bool) (bridge.Reader, bool) {
	r, err := ss.table.FromClient(m.Raw)
	if err != nil || r.Target != aggregate.ToServer {
		return nil, false // read again by the general path, which answers it
	}
	ss.mu.Lock()
	mb := ss.members[r.Server]
	ss.mu.Unlock()
	if mb == nil || !mb.started() || mb.err != nil || mb.b != ss.srv.o.Bridge(r.Server) || !mb.conn.Alive() {
		ss.table.Forget(r.ID)
		return nil, false
	}
	msgs, _, err := bridge.ParseBody(r.Message)
	if err != nil {
		ss.table.Forget(r.ID)
		return nil, false
	}
	ss.noteSubscription(r.Server, m.Method, r.Message)
	rd, err := mb.conn.Send(msgs, jsonOnly)
	if err != nil {
		ss.table.Forget(r.ID)
		return nil, false
	}
	ss.touch(1) // in flight until Close: the session does not idle out under it
	return &relay{rd: rd, ss: ss, m: mb, route: r, clientID: bytes.Clone(m.ID()), method: m.Method}, true
}

// relay is a server session's reader as the aggregate's client reads it:
// each message through the Table, a server that died under the request
// answered as down, and an answer that never came said so.
type relay struct {
	rd       bridge.Reader
	ss       *Session
	m        *member
	route    aggregate.Route
	clientID []byte
	method   string
	answered bool
	closed   bool
}

// rename appends to out what evs are for the client.
func (x *relay) rename(out, evs []bridge.Event) []bridge.Event {
	for _, ev := range evs {
		if ev.Data == nil {
			continue // the server session's priming event: the aggregate's streams have none
		}
		if rep, ok := bridge.ReplyOf(ev.Data); ok && rep.Error && rep.Code == bridge.CodeChildExited {
			_, _ = x.ss.table.FromServer(x.m.server, ev.Data)
			out = append(out, bridge.Event{Data: aggregate.Unavailable(x.clientID, x.method, x.route.Server)})
			x.answered = true
			continue
		}
		d, err := x.ss.table.FromServer(x.m.server, ev.Data)
		if err != nil {
			x.ss.log.Debug("server's message dropped", "server", x.m.server, "err", err)
		}
		switch d.Dest {
		case aggregate.ToClient:
			out = append(out, bridge.Event{Data: d.Message})
			x.answered = x.answered || d.Method != ""
		case aggregate.BackToServer:
			x.ss.pass(x.m.server, d.Message)
		case aggregate.Dropped:
			if d.Changed != 0 {
				x.ss.coal.Signal(d.Changed)
			}
		}
	}
	return out
}

// ending is what ends the client's answer when the server's reader ended
// without one: the server went down under it.
func (x *relay) ending(out []bridge.Event) []bridge.Event {
	if x.answered {
		return out
	}
	x.answered = true
	x.ss.table.Forget(x.route.ID)
	return append(out, bridge.Event{Data: aggregate.Unavailable(x.clientID, x.method, x.route.Server)})
}

func (x *relay) Await(ctx context.Context, d time.Duration) error { return x.rd.Await(ctx, d) }

func (x *relay) TakeOnly() (bridge.Event, bool) {
	ev, ok := x.rd.TakeOnly()
	if !ok {
		return ev, false
	}
	out := x.ending(x.rename(nil, []bridge.Event{ev}))
	return out[len(out)-1], true
}

func (x *relay) Collect(ctx context.Context, buf []bridge.Event) ([]bridge.Event, error) {
	evs, err := x.rd.Collect(ctx, nil)
	if err != nil {
		return buf, err
	}
	return x.ending(x.rename(buf, evs)), nil
}

func (x *relay) Begin(o bridge.ServeOptions) (bridge.Event, bool) {
	o.Plain = true // no ids: the aggregate's streams are not resumed
	x.rd.Begin(o)
	return bridge.Event{}, false
}

func (x *relay) Next(ctx context.Context, tick <-chan time.Time, buf []bridge.Event) ([]bridge.Event, bool, error) {
	evs, final, err := x.rd.Next(ctx, tick, nil)
	buf = x.rename(buf, evs)
	if final {
		buf = x.ending(buf)
	}
	return buf, final, err
}

func (x *relay) Close() {
	x.rd.Close()
	if x.closed {
		return
	}
	x.closed = true
	x.ss.touch(-1)
	if !x.answered {
		// The client left before the answer: a late one is dropped, and
		// the client's cancellation of it, which follows, still reaches
		// the server.
		x.ss.table.Leave(x.route.ID)
	}
}
