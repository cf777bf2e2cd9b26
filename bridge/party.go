package bridge

import (
	"bytes"
	"encoding/json"
	"log/slog"
)

// The seam between the core (upstream, routing, the child's lifecycle)
// and what serves clients on a child: a 2025 Session, or one of the
// 2026-07-28 layer's boxes (box.go), a call's or a listen's. The core
// knows each only as a party; it never knows which era a request came
// from.
//
// A layer above the core uses a child through these, and nothing else:
//
//   - join puts a party on the child: it hears what the child sends that
//     relates to no request, and the child runs at the most verbose log
//     level any party asked for;
//   - submit puts a request of the party's in flight, under a child-side
//     id (and progress token) of the bridge's own, with its deadline;
//   - pause stops that deadline while the request waits for its client's
//     input (MRTR), and resume gives the request to the retry that takes
//     it over (its id, token and log level) with a deadline again;
//   - cancel tells the child the request is abandoned and settles it
//     with no answer;
//   - reply answers a request of the child's that was routed to the
//     party;
//   - leave takes the party off the child: its subscriptions are
//     withdrawn (the child unsubscribed when it was the last holder) and
//     the child's log level follows those left.
//
// What the child sends comes back through the party's methods.

// party is a client side of a child. The router hands it what the child
// sends; its Locked methods are called with the upstream's lock held, and
// none blocks or calls back into the upstream.
type party interface {
	// party is what the upstream reads of it.
	party() *partyState
	// takeAnswerLocked takes the child's response to c, one of its
	// requests, with the client's id back in place (nil: no answer
	// comes, the request was cancelled). c is settled.
	takeAnswerLocked(c *call, m *childMsg)
	// takeFailureLocked answers c, settled, with an error of the
	// bridge's: code, and reason unless the party knows better why (its
	// end reason). It reports whether the party ends with it.
	takeFailureLocked(c *call, code int, reason string, data any) bool
	// takeRelatedLocked takes what the child sends for c while it runs
	// (rel says how it relates to c), with the client's token or id in
	// place.
	takeRelatedLocked(c *call, m *childMsg, rel relation)
	// hearLocked takes, if it wants it, what the child sends that relates
	// to no request.
	hearLocked(m *childMsg)
	// end ends the party: its child is gone for good, or the party is
	// done. Called without the upstream's lock; it may be called again.
	end()
}

// partyState is what the upstream reads of each of its parties. Guarded
// by the upstream's lock.
type partyState struct {
	log       *slog.Logger
	owner     string // the principal's key (Owner.Key), for Snapshot
	closed    bool   // ended: nothing reaches it any more
	endReason string // why it is ending, for the errors of its requests still in flight; "" while it is not
	logLevel  int    // the least severe log level it wants (index in logLevels); -1: none set
}

func (p *partyState) party() *partyState { return p }

// relation is how a message of the child's relates to the request it is
// routed to.
type relation uint8

const (
	relProgress relation = iota // its progress
	relNamed                    // a notification that names it (a 2026-07-28 child's listen)
	relAsked                    // a request or log message of the child's while it is the only request in flight
)

// join puts p on u's child. It fails when the child is going for good.
func (u *upstream) join(p party) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.deadLocked() || u.stopping {
		return &Error{Kind: KindUnavailable, Code: CodeChildExited, Message: "the MCP server is stopping; try again shortly"}
	}
	u.parties[p] = true
	return nil
}

// leave takes p off u's child, once: it is closed, and what it held on
// the child is given back (leaveLocked).
func (u *upstream) leave(p party) {
	u.mu.Lock()
	if p.party().closed {
		u.mu.Unlock()
		return
	}
	p.party().closed = true
	lines := u.leaveLocked(p)
	child := u.child
	u.mu.Unlock()
	if child != nil && len(lines) > 0 {
		u.write(child, lines)
	}
}

// leaveLocked takes p off the child: on a shared child its subscriptions
// are withdrawn, the level recomputed and the child's requests routed to
// it forgotten. It returns what the child is to be told. Called with mu
// held.
func (u *upstream) leaveLocked(p party) [][]byte {
	delete(u.parties, p)
	if u.mux == nil {
		return nil
	}
	var lines [][]byte
	for uri, holders := range u.mux.subs {
		if !holders[p] {
			continue
		}
		if u.unsubscribeLocked(p, uri) {
			lines = append(lines, u.ownRequestLocked("resources/unsubscribe", uriParams(uri), nil))
		}
	}
	if p.party().logLevel >= 0 {
		if line := u.levelLocked(); line != nil {
			lines = append(lines, line)
		}
	}
	for id, q := range u.mux.serverReqs {
		if q == p {
			delete(u.mux.serverReqs, id)
		}
	}
	return lines
}

// childLocked is the child requests may be written to: not while it
// restarts, and, for requests, not while it is being stopped as unable
// to answer. Called with mu held.
func (u *upstream) childLocked(requests bool) (child, error) {
	switch {
	case u.child == nil:
		return nil, errRestarting
	case requests && u.child == u.unresponsive:
		// It is being stopped because it can no longer answer: a request
		// now would only fail when it is gone, with its exit status
		// rather than the reason.
		return nil, &Error{Kind: KindUnavailable, Code: CodeChildExited, Message: u.unresponsiveWhy + "; try again shortly"}
	}
	return u.child, nil
}

// submit puts m, a request of p's, in flight on u's child and writes it.
// quiet says it takes nothing the child sends but its answer and what
// names it (a listen): it never makes another request the only one in
// flight ambiguous.
func (u *upstream) submit(p party, m *Message, quiet bool) (*call, error) {
	u.mu.Lock()
	child, err := u.childLocked(true)
	if err != nil {
		u.mu.Unlock()
		return nil, err
	}
	c := &call{party: p, clientID: bytes.Clone(m.ID()), quiet: quiet}
	line := u.register(c, m)
	u.mu.Unlock()
	u.write(child, [][]byte{line})
	return c, nil
}

// pause stops c's deadline while its request waits for its client's
// input (MRTR).
func (u *upstream) pause(c *call) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.calls[c.id] == c {
		u.pauseLocked(c)
	}
}

// resume gives c, still in flight, to the retry m that takes it over:
// its id, its progress token, the log level it wants, and a deadline
// again. It reports whether c was still in flight (if not, its answer
// came meanwhile).
func (u *upstream) resume(c *call, m *Message, level int) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	c.party.party().logLevel = level
	if u.calls[c.id] != c {
		return false
	}
	c.clientID = bytes.Clone(m.ID())
	c.token = nil
	if tok := m.progressToken(); tok != nil {
		c.token = bytes.Clone(tok)
	}
	u.rearmLocked(c)
	return true
}

// cancel tells the child that c, still in flight, is abandoned
// ("notifications/cancelled"), and settles it with no answer: one that
// comes late is dropped. An initialize is never cancelled ("MUST NOT be
// cancelled").
func (u *upstream) cancel(c *call, reason string) {
	u.mu.Lock()
	if u.calls[c.id] != c || c.init {
		u.mu.Unlock()
		return
	}
	u.dropLocked(c)
	child := u.child
	u.mu.Unlock()
	if child != nil {
		u.write(child, [][]byte{cancelNotification(c.id, reason)})
	}
}

// dropLocked settles c, cancelled, with no answer. Called with mu held.
func (u *upstream) dropLocked(c *call) {
	u.settleLocked(c.id)
	c.party.takeAnswerLocked(c, nil)
	u.b.stats.RequestsCancelled.Add(1)
}

// reply writes raw, p's answer to the child's request id. On a shared
// child only the party the request was routed to may answer it.
func (u *upstream) reply(p party, id, raw []byte) {
	u.mu.Lock()
	if u.mux != nil {
		if q, ok := u.mux.serverReqs[string(id)]; !ok || q != p {
			u.mu.Unlock()
			p.party().log.Warn("dropped a response to a request the MCP server did not send to this client", "id", string(id))
			return
		}
		delete(u.mux.serverReqs, string(id))
	}
	child := u.child
	u.mu.Unlock()
	if child != nil {
		u.write(child, [][]byte{raw})
	}
}

// uriParams is {"uri":uri}.
func uriParams(uri string) []byte {
	p, _ := json.Marshal(map[string]string{"uri": uri})
	return p
}
