package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcp-bridge/mcp-bridge/stdio"
)

// Routing what a child writes. stdio gives no hint of which client
// request a message relates to (docs/decisions.md, "Routing without a
// hint from the child"), so where a message goes is decided from the
// message itself, scanned once here at the edge, and from whom the child
// serves (its role): routeOf, a pure function of the two, table-tested;
// fromChild reads the message and its child's situation, and the
// upstream then carries the route out.

// childMsg is one message a child wrote, scanned once at the edge: the
// places of its members, its method, and whether its bytes are the
// bridge's to keep and change (stdio.Options.OnMessage).
type childMsg struct {
	raw    []byte
	f      fields
	kind   MsgKind
	method string
	owned  bool
	kept   []byte // raw, copied once if it is not owned (keep)
	// leased: a leased child of the pool sent it, not the child of the
	// upstream it is handed to (publish): news for that child's listens
	// only.
	leased bool
}

// keep returns the message's bytes for the bridge to keep: a line in the
// reader's buffer is copied once, however many clients get it.
func (m *childMsg) keep() []byte {
	if m.kept == nil {
		m.kept = m.raw
		if !m.owned {
			m.kept = bytes.Clone(m.raw)
		}
	}
	return m.kept
}

// params is the message's params, nil for none.
func (m *childMsg) params() []byte { return m.f.params.of(m.raw) }

// replaced replaces the bytes at s by repl (in place when m owns its
// bytes and they fit), moves its members' places to match, and returns
// m: the message the bridge hands on, scanned still. What m was is gone.
func (m *childMsg) replaced(s span, repl []byte) *childMsg {
	m.f = m.f.moved(s, len(repl))
	m.raw = replace(m.raw, s, repl, m.owned)
	m.owned, m.kept = true, nil
	return m
}

// rescan is raw, a changed copy of m, scanned again: for what changes
// more than a member's value (rare: a listen's notification).
func rescan(raw []byte, m *childMsg) *childMsg {
	f, _ := scanFields(raw)
	return &childMsg{raw: raw, f: f, kind: m.kind, method: m.method, owned: true}
}

// route is where a message of the child's goes.
type route uint8

const (
	// routeDrop: nowhere, and nothing to say (a leased child's change
	// while it serves no call is no news to anyone).
	routeDrop route = iota
	// routeAnswer: a response, to the request its id names.
	routeAnswer
	// routeProgress: to the request its progress token names.
	routeProgress
	// routeNamed: a notification that names its request in
	// _meta.subscriptionId (a 2026-07-28 child's listen), to that request.
	routeNamed
	// routePublish: a list change or resource update of a leased child,
	// to the listens of its pool, while it serves a call.
	routePublish
	// routeOnly: a request or log message of the child's, to the one
	// request in flight: one in flight is unambiguous.
	routeOnly
	// routeAll: to every client of the child, each taking what it wants.
	routeAll
	// routeSubscribers: a resource update, to the clients subscribed to
	// the resource.
	routeSubscribers
	// routeRefuse: a request of the child's that no client can answer,
	// answered with an error saying so.
	routeRefuse
	// routeAmbiguous: a request of a shared child's with no single
	// request in flight: guessing would hand one client's question to
	// another, so it is refused, saying what would carry it.
	routeAmbiguous
	// routeStray: a notification of a shared child that belongs to no
	// single client: dropped, with a warning.
	routeStray
)

var routeNames = [...]string{"drop", "answer", "progress", "named", "publish", "only", "all", "subscribers", "refuse", "ambiguous", "stray"}

func (r route) String() string {
	if int(r) < len(routeNames) {
		return routeNames[r]
	}
	return "route(" + strconv.Itoa(int(r)) + ")"
}

// routeIn is what routing a message reads: what the message is, and the
// situation of the child that sent it.
type routeIn struct {
	kind   MsgKind
	method string
	// named: a notification's params._meta names a request
	// (subscriptionId). Read only of a child that speaks 2026-07-28.
	named bool
	role  role
	era   childEra
	// one: exactly one request of a client is in flight (a listen, which
	// takes nothing but what names it, not counted), and its client is
	// still there.
	one bool
	// busy: some request of a client is in flight.
	busy bool
	// listeners is how many clients of the child take what relates to no
	// request (its 2025 sessions).
	listeners int
}

// routeOf is where a message goes: a pure function of what it is and of
// the child's situation.
func routeOf(in routeIn) route {
	switch {
	case in.kind == Response:
		return routeAnswer
	case in.role == roleLease && in.kind == Notification && changeNotification(in.method):
		if in.busy {
			return routePublish
		}
		// What it says on its own (server-everything announces its
		// lists as it starts) is no news to anyone.
		return routeDrop
	case in.era == eraModern && in.kind == Notification && in.method != methodProgress && in.named:
		return routeNamed
	case in.method == methodProgress:
		return routeProgress
	case (in.kind == Request || in.method == methodLogMessage) && in.one:
		return routeOnly
	case !in.role.multiplexed():
		if in.kind == Request && in.listeners == 0 {
			// A leased child asking while no call runs on it (on its own,
			// like server-everything's roots/list after initialize), or a
			// waiting one: no client can answer, and it is told so now,
			// not left to its own timeout.
			return routeRefuse
		}
		return routeAll
	case in.kind == Request:
		return routeAmbiguous
	case strings.HasSuffix(in.method, "/list_changed"), in.method == methodLogMessage:
		return routeAll
	case in.method == methodResourceUpdated:
		return routeSubscribers
	}
	return routeStray
}

// methodResourceUpdated is a resource's change, for its subscribers.
const methodResourceUpdated = "notifications/resources/updated"

// changeNotification reports whether method is one a listen can take.
func changeNotification(method string) bool {
	return method == methodResourceUpdated || strings.HasSuffix(method, "/list_changed")
}

// fromChild routes one message the child wrote. It runs on the child's
// reader goroutine, so it never blocks on a client. owned says whether
// line is the bridge's to keep and change (stdio.Options.OnMessage): a
// big message then goes to the session as it is, its id replaced in
// place, and is never copied; a short one, which lives in the reader's
// buffer, is copied once.
func (u *upstream) fromChild(line []byte, owned bool) {
	if !json.Valid(line) {
		u.logger().Warn("child wrote invalid JSON; skipped it", "line", string(line[:min(len(line), 200)]))
		return
	}
	if line[0] == '[' { // a 2025-03-26 child may batch
		_ = eachElement(line, func(elem []byte) error {
			// Not owned: splicing one in place would move the bytes
			// of the next, and keeping one would pin the whole batch.
			u.fromChild(elem, false)
			return nil
		})
		return
	}
	f, err := scanFields(line)
	if err != nil {
		u.logger().Warn("child wrote a message that is not an object; skipped it")
		return
	}
	m := &childMsg{raw: line, f: f, owned: owned, kind: Response}
	if !f.method.ok() {
		// A response: the usual message, routed before anything else is
		// read of it (method, which escapes, would cost it an allocation).
		u.mu.Lock()
		u.answerLocked(m)
		u.mu.Unlock()
		return
	}
	_ = unquote(f.method.of(line), &m.method)
	m.kind = Notification
	if f.id.ok() {
		m.kind = Request
	}
	u.mu.Lock()
	r, only := u.routeLocked(m)
	if r == routePublish {
		// To another upstream's clients: its lock, not this one's.
		u.mu.Unlock()
		u.hub.publish(m)
		return
	}
	defer u.mu.Unlock()
	u.deliverLocked(r, m, only)
}

// routeLocked reads the child's situation for m and routes it; only is
// the one request in flight, if there is one. Called with mu held.
func (u *upstream) routeLocked(m *childMsg) (route, *call) {
	in := routeIn{kind: m.kind, method: m.method, role: u.role, era: u.era}
	if u.era == eraModern && m.kind == Notification && m.method != methodProgress {
		_, in.named = subscriptionOf(m.raw, m.f.params)
	}
	var only *call
	n := 0
	for _, c := range u.calls {
		if c.party == nil {
			continue // the bridge's own request (a ping, a subscription)
		}
		in.busy = true
		if c.quiet {
			// A modern child's listen, open for as long as its client
			// stays: it takes "never progress or logs", nor any request,
			// so it must not make the call beside it ambiguous (go-sdk
			// clients keep one open from Connect on).
			continue
		}
		n++
		only = c
	}
	in.one = n == 1 && !only.party.party().closed
	if u.role == roleOwn {
		// Its session, if it has one yet, takes everything. The clients
		// of the other children take only what they ask for.
		in.listeners = len(u.parties)
	}
	return routeOf(in), only
}

// deliverLocked carries out route r for m; only is the one request in
// flight, for routeOnly. Called with mu held.
func (u *upstream) deliverLocked(r route, m *childMsg, only *call) {
	switch r {
	case routeProgress:
		u.progressLocked(m)
	case routeNamed:
		sid, _ := subscriptionOf(m.raw, m.f.params)
		// A modern child's listen notification: it names the listen by
		// the id the child knows; the client knows its own.
		if c := u.calls[sid]; c != nil && c.party != nil {
			c.party.takeRelatedLocked(c, rescan(replaceSubscription(bytes.Clone(m.raw), m.f.params, c.clientID), m), relNamed)
		}
	case routeOnly:
		if m.kind == Request && u.role.multiplexed() {
			u.mux.serverReqs[string(m.f.id.of(m.raw))] = only.party
		}
		only.party.takeRelatedLocked(only, m, relAsked)
	case routeAll:
		for p := range u.parties {
			p.hearLocked(m)
		}
	case routeSubscribers:
		for p := range u.mux.subs[uriOf(m.params())] {
			p.hearLocked(m)
		}
	case routeRefuse:
		u.refuseLocked(m.f.id.of(m.raw), m.method, "no request of a client is in flight on this server process, so no client can answer it")
	case routeAmbiguous:
		u.ambiguousLocked(m)
	case routeStray:
		u.logger().Warn("the shared MCP server sent a notification that belongs to no single session; dropped it", "method", m.method)
	}
}

// answerMark marks m, a response, for the event it becomes: its id's
// place and its error's code, as ReplyOf reads them.
func answerMark(m *childMsg) mark {
	if m.f.method.ok() || !m.f.id.ok() || m.f.result.ok() == m.f.error.ok() {
		return markOther
	}
	code := 0
	if e := m.f.error.of(m.raw); e != nil && e[0] == '{' {
		code, _ = strconv.Atoi(string(member(e, "code").of(e)))
	}
	return markOf(m.f.id, m.f.error.ok(), code)
}

// uriOf is params.uri, "" for none.
func uriOf(params []byte) string {
	var uri string
	if params != nil && params[0] == '{' {
		_ = unquote(member(params, "uri").of(params), &uri)
	}
	return uri
}

// progressLocked puts a progress notification on the request its token
// names, with the client's own token in place of the child-side one.
func (u *upstream) progressLocked(m *childMsg) {
	params := m.params()
	tok := member(params, "progressToken")
	id, err := strconv.ParseInt(string(tok.of(params)), 10, 64)
	c := u.calls[id]
	if err != nil || c == nil || c.party == nil {
		u.droppedProgressLocked(id, err == nil && c == nil)
		return
	}
	at := span{m.f.params.start + tok.start, m.f.params.start + tok.end} // the token, in the line
	c.party.takeRelatedLocked(c, m.replaced(at, c.token), relProgress)
}

// refuseLocked answers the child's request id (of method) with an error
// saying why no client answers it. The write is not done under u.mu: it
// may block. Called with u.mu held.
func (u *upstream) refuseLocked(id []byte, method, why string) {
	u.logger().Info("the MCP server asked its client something that no client can answer; refused it", "method", method, "why", why)
	u.replyLocked(errorResponse(id, CodeInternalError, "mcp-bridge: cannot route "+method+": "+why, nil))
}

// replyLocked writes a response of the bridge's own to the child, on a
// goroutine of the bridge's: a write may block, and u.mu is held.
func (u *upstream) replyLocked(reply []byte) {
	if child := u.child; child != nil {
		u.b.spawn(func() { u.write(child, [][]byte{reply}) })
	}
}

// ambiguousLocked refuses a shared child's request (sampling,
// elicitation or roots) with no single request in flight, saying what
// would carry it.
func (u *upstream) ambiguousLocked(m *childMsg) {
	n := len(u.calls)
	// What would carry it: for a 2025 client a session with a child of
	// its own (per-session mode); for a 2026-07-28 client, which no mode
	// gives a child of its own, declaring the capability (its calls then
	// get a leased child each). A modern pool's own child serves only the
	// latter, in a bridge that may already run in per-session mode.
	cure := "a 2026-07-28 client that declares the capability gets a child of its own for each call"
	if u.role != roleModernBase {
		cure = "run the bridge with --mode per-session for 2025 clients; " + cure
	}
	u.logger().Warn("the shared MCP server sent a request that cannot be attributed to one client's request; refused it",
		"method", m.method, "requests_in_flight", n, "remedy", cure)
	u.replyLocked(errorResponse(m.f.id.of(m.raw), CodeInternalError,
		fmt.Sprintf("mcp-bridge: cannot route %s: this server is shared by several clients and %d requests are in flight, so it is ambiguous which client should answer; %s", m.method, n, cure), nil))
}

// droppedProgressLocked accounts for a progress notification that goes
// nowhere. "Progress notifications MUST stop after completion": one for a
// request that is over (answered, cancelled, timed out) breaks that rule,
// and is dropped, logged and counted; one with a token the bridge never
// gave out is dropped and logged.
func (u *upstream) droppedProgressLocked(id int64, over bool) {
	if over && id > 0 && id <= u.nextID {
		u.b.stats.LateProgress.Add(1)
		u.logger().Debug("dropped a progress notification that came after its request was over", "child_id", id)
		return
	}
	u.logger().Debug("dropped a progress notification for no request of a client", "child_id", id)
}

// answerLocked settles the request a response answers, by the child-side
// id, and hands the response on with the client's id back in place.
func (u *upstream) answerLocked(m *childMsg) {
	line, f := m.raw, m.f
	id, err := strconv.ParseInt(string(f.id.of(line)), 10, 64)
	c := u.settleLocked(id)
	if err != nil || c == nil {
		if err == nil && id > 0 && id <= u.nextID {
			// A late answer to a request that was cancelled or whose
			// session ended.
			u.logger().Debug("dropped the response to a request that is over", "child_id", id)
			return
		}
		u.b.stats.UnroutableDrops.Add(1)
		u.logger().Warn("child answered an id nobody asked; dropped it", "id", string(f.id.of(line)))
		return
	}
	if c.init {
		u.initializedLocked(c, line, f)
	}
	if c.party == nil {
		u.ownAnswerLocked(c, m)
		return
	}
	// Last use of m: an owned line is changed in place.
	c.party.takeAnswerLocked(c, m.replaced(f.id, c.clientID))
}

// ownAnswerLocked takes the answer to a request of the bridge's own: to
// whoever waits for it, if anyone does.
func (u *upstream) ownAnswerLocked(c *call, m *childMsg) {
	line, f := m.raw, m.f
	if c.answered != nil {
		var err error
		switch {
		case c.init && f.error.ok():
			err = fmt.Errorf("the MCP server refused initialize: %s", f.error.of(line))
		case f.error.ok() && c.keep:
			err = fmt.Errorf("the MCP server answered %s with an error: %s", c.method, f.error.of(line))
		case c.keep:
			c.result = bytes.Clone(f.result.of(line))
		}
		c.answered <- err
	}
	if f.error.ok() && !c.keep {
		// (Whoever keeps the result judges an error too: the era probe
		// expects a legacy server's refusal, and logs its verdict.)
		u.logger().Warn("the MCP server refused a request of the bridge's", "error", string(f.error.of(line)))
	}
}

// oversize fails the request whose response was over the line cap.
func (u *upstream) oversize(o stdio.Oversize) {
	u.b.stats.OversizeLines.Add(1)
	id := idFromOversize(o.Head, o.Tail)
	childID, err := strconv.ParseInt(string(id), 10, 64)
	u.mu.Lock()
	defer u.mu.Unlock()
	var c *call
	if id != nil && err == nil {
		c = u.settleLocked(childID)
	}
	if c == nil {
		u.logger().Warn("dropped an oversize message from the child that answers no request", "bytes", o.Size)
		return
	}
	if c.party == nil {
		if c.answered != nil {
			c.answered <- fmt.Errorf("the MCP server's answer (%d bytes) is over the message size limit", o.Size)
		}
		return
	}
	msg := fmt.Sprintf("the MCP server's response (%d bytes) is over the bridge's message size limit (%d bytes); raise --max-message-bytes", o.Size, u.b.cfg.maxLine())
	c.party.takeFailureLocked(c, CodeResponseTooLarge, msg, nil)
}

// publish hands a list change or resource update that a leased child sent
// to the listens of its pool's base child u.
func (u *upstream) publish(m *childMsg) {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := *m
	n.raw, n.owned, n.leased = m.keep(), true, true
	if m.method == methodResourceUpdated {
		for p := range u.mux.subs[uriOf(m.params())] {
			p.hearLocked(&n)
		}
		return
	}
	for p := range u.parties {
		p.hearLocked(&n)
	}
}
