package endpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/aggregate"
	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// Session is one client's session of the aggregate: a session per server
// (a member), each started at its first use; a Table that rewrites what
// passes between the client and them; a Catalog over them for the lists;
// a Coalescer that announces the lists' changes on the GET stream.
//
// Goroutines, all counted in wg and ended by the session's end (ctx): one
// per request forwarded to a server (until its answer), one per member
// starting, and one per member reading its GET stream.
type Session struct {
	srv     *Server
	id      string
	owner   bridge.Owner
	env     []string
	version string
	params  json.RawMessage // the client's initialize params, which each server's session starts with
	form    bool            // the client declared form elicitation (bridge.Holder)
	table   *aggregate.Table
	cat     *aggregate.Catalog
	coal    *aggregate.Coalescer
	unhub   func()
	allowed func(string) bool // the principal's tool filter, nil for all
	log     *slog.Logger

	ctx    context.Context // ends with the session
	cancel context.CancelFunc
	done   chan struct{}
	get    *outbox // what goes on the GET stream
	wg     sync.WaitGroup

	mu       sync.Mutex
	members  map[string]*member
	level    []byte                     // the last logging/setLevel params, for servers started later
	leftOut  map[string]bool            // servers a list left out: their start announces a change
	subs     map[string]map[string]bool // the client's subscriptions, by server and its own URI (JSON), renewed on its new sessions
	getOpen  bool
	getGone  chan struct{} // closed as the open GET stream's reader lets go
	lastSeen time.Time
	inFlight int
	ended    bool
}

// member is one server's session, as a Session holds it.
type member struct {
	server string
	b      *bridge.Bridge
	ready  chan struct{} // closed once conn or err is set
	conn   bridge.Conn
	err    error
	// revivals counts the starts anew of the server's session on the
	// aggregate's own (revive), since the client's last request started it.
	revivals int
}

func (m *member) started() bool {
	select {
	case <-m.ready:
		return true
	default:
		return false
	}
}

func newSession(srv *Server, names *aggregate.Names, req bridge.InitRequest, params json.RawMessage, version string) *Session {
	ss := &Session{srv: srv, id: bridge.NewID(), owner: req.Owner, env: req.Env, version: version, params: params,
		get: newStream(), done: make(chan struct{}), members: map[string]*member{}, lastSeen: srv.o.Now()}
	ss.log = srv.o.Logger.With("session", ss.id)
	ss.ctx, ss.cancel = context.WithCancel(context.Background())
	ss.table = aggregate.NewTable(names, aggregate.TableOptions{Stats: srv.o.Stats})
	ss.cat = aggregate.NewCatalog(names, aggregate.ListerFunc(ss.list), aggregate.CatalogOptions{
		ListTimeout: srv.o.ListTimeout, CursorKey: srv.o.CursorKey, Logger: ss.log, Stats: srv.o.Stats})
	ss.coal = aggregate.NewCoalescer(func(ch aggregate.Changes) {
		for _, n := range ch.Notifications() {
			ss.get.push(n, false)
		}
	}, aggregate.CoalescerOptions{})
	ss.unhub = srv.o.Hub.Add(ss.coal)
	return ss
}

// ElicitsForm reports whether the client declared form elicitation at
// initialize: the transport may ask it about a held call (bridge.Holder).
func (ss *Session) ElicitsForm() bool { return ss.form }

// Hold keeps the session from idling out while a call of its client
// waits for a human's approval, as a call in flight does (bridge.Holder).
func (ss *Session) Hold() (release func()) {
	ss.touch(+1)
	var once sync.Once
	return func() { once.Do(func() { ss.touch(-1) }) }
}

func (ss *Session) ID() string      { return ss.id }
func (ss *Session) Version() string { return ss.version }
func (ss *Session) Done() <-chan struct{} {
	return ss.done
}

func (ss *Session) Alive() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return !ss.ended
}

// idleSince is how long the session has been idle at now: 0 while a
// request is in flight or its GET stream is open.
func (ss *Session) idleSince(now time.Time) time.Duration {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.inFlight > 0 || ss.getOpen {
		return 0
	}
	return now.Sub(ss.lastSeen)
}

func (ss *Session) touch(delta int) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.inFlight += delta
	ss.lastSeen = ss.srv.o.Now()
}

// Close ends the session and every server's session it holds.
func (ss *Session) Close() {
	ss.mu.Lock()
	if ss.ended {
		ss.mu.Unlock()
		return
	}
	ss.ended = true
	members := ss.members
	ss.members = map[string]*member{}
	ss.mu.Unlock()
	ss.cancel()
	ss.unhub()
	ss.coal.Close()
	for _, m := range members {
		if m.started() && m.conn != nil {
			m.conn.Close()
		}
	}
	ss.get.end()
	ss.srv.forget(ss)
	ss.wg.Wait() // each ends with ctx
	close(ss.done)
}

// Open opens the session's GET stream: the servers' requests and
// notifications that belong to no POST, and the announcements of list
// changes.
func (ss *Session) Open() (bridge.Reader, error) { return ss.open("") }

// Resume opens the session's GET stream again after the event last (a
// Last-Event-ID): what the client missed of it first, from a log of the
// stream's last events (outbox.rewind). The aggregate's POST streams
// have no ids: a POST's answer lost with its connection is not resumed.
func (ss *Session) Resume(last string) (bridge.Reader, error) { return ss.open(last) }

// open opens the GET stream, from after the event last ("" for what
// waits).
func (ss *Session) open(last string) (bridge.Reader, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.getOpen && last != "" {
		// A resume comes as its client finds the connection broken,
		// often before the server does: it waits a little for the old
		// reader to let go, as a server's own session does.
		gone := ss.getGone
		ss.mu.Unlock()
		t := time.NewTimer(resumeWait)
		select {
		case <-gone:
		case <-t.C:
		case <-ss.ctx.Done():
		}
		t.Stop()
		ss.mu.Lock()
	}
	if ss.ended {
		return nil, bridge.ErrSessionNotFound
	}
	if ss.getOpen {
		return nil, bridge.ErrStreamConflict
	}
	if last != "" {
		if err := ss.get.rewind(last); err != nil {
			return nil, err
		}
	}
	ss.getOpen = true
	gone := make(chan struct{})
	ss.getGone = gone
	return &getReader{outbox: ss.get, release: func() {
		ss.mu.Lock()
		ss.getOpen = false
		ss.lastSeen = ss.srv.o.Now()
		ss.mu.Unlock()
		close(gone)
	}}, nil
}

// resumeWait bounds how long a resume waits for the GET stream's old
// reader to let go.
const resumeWait = 2 * time.Second

// Send forwards the client's messages: each request to the server it
// names (or answered by the aggregate), the rest where the Table says.
func (ss *Session) Send(msgs []bridge.Message, jsonOnly bool) (bridge.Reader, error) {
	want := 0
	for i := range msgs {
		if msgs[i].Kind == bridge.Request {
			want++
		}
	}
	ss.touch(0)
	if want == 1 && len(msgs) == 1 {
		if rd, ok := ss.sendOne(&msgs[0], jsonOnly); ok {
			return rd, nil
		}
	}
	var box *outbox
	if want > 0 {
		box = newReply(want)
	}
	for i := range msgs {
		m := &msgs[i]
		r, err := ss.table.FromClient(m.Raw)
		if err != nil {
			if m.Kind == bridge.Request {
				box.push(errorBody(err, m.ID()), true)
			}
			continue
		}
		switch r.Target {
		case aggregate.ToServer:
			if m.Kind == bridge.Request {
				id := bytes.Clone(m.ID())
				if !ss.spawn(func() { ss.forward(r, id, m.Method, box, jsonOnly) }) {
					box.push(errorBody(bridge.ErrSessionNotFound, id), true)
				}
			} else {
				ss.pass(r.Server, r.Message)
			}
		case aggregate.ToAll:
			ss.mu.Lock()
			var all []*member
			for _, mb := range ss.members {
				all = append(all, mb)
			}
			ss.mu.Unlock()
			for _, mb := range all {
				ss.pass(mb.server, r.Message)
			}
		case aggregate.ToAggregate:
			if m.Kind == bridge.Request {
				msg := *m
				if !ss.spawn(func() { box.push(ss.serve(&msg), true) }) {
					box.push(errorBody(bridge.ErrSessionNotFound, msg.ID()), true)
				}
			}
		}
	}
	if box == nil {
		return nil, nil
	}
	return box, nil
}

// spawn runs f as one of the session's goroutines, counted as a request
// in flight; false once the session has ended.
func (ss *Session) spawn(f func()) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.ended {
		return false
	}
	ss.inFlight++
	ss.spawnLocked(func() {
		defer ss.touch(-1)
		f()
	})
	return true
}

// spawnLocked runs f as one of the session's goroutines; Close waits for
// them. The caller holds ss.mu and has checked that the session is on.
func (ss *Session) spawnLocked(f func()) {
	ss.wg.Add(1)
	go func() {
		defer ss.wg.Done()
		f()
	}()
}

// pass sends a client's notification or answer to server, if its session
// is up: one that is not has nothing to hear it.
func (ss *Session) pass(server string, msg []byte) {
	ss.mu.Lock()
	m := ss.members[server]
	ss.mu.Unlock()
	if m == nil || !m.started() || m.err != nil {
		return
	}
	msgs, _, err := bridge.ParseBody(msg)
	if err != nil {
		return
	}
	if _, err := m.conn.Send(msgs, true); err != nil {
		ss.log.Debug("message to a server not delivered", "server", server, "err", err)
	}
}

// errorBody is the answer of a request the aggregate refuses.
func errorBody(err error, id []byte) []byte {
	var be *bridge.Error
	if !errors.As(err, &be) {
		be = &bridge.Error{Code: bridge.CodeInternalError, Message: err.Error()}
	}
	c := *be
	c.ID = bytes.Clone(id)
	return bridge.ErrorBody(&c)
}

// result is a JSON-RPC result answering id.
func result(id []byte, res []byte) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, res)
}

// serve answers a request the aggregate takes itself.
func (ss *Session) serve(m *bridge.Message) []byte {
	id := m.ID()
	switch {
	case m.Method == "ping":
		return result(id, []byte(`{}`))
	case aggregate.IsList(m.Method):
		var cursor string
		if raw := m.Param("cursor"); raw != nil {
			if err := json.Unmarshal(raw, &cursor); err != nil {
				return errorBody(&bridge.Error{Code: bridge.CodeInvalidParams, Message: "invalid cursor: want a string"}, id)
			}
		}
		res, err := ss.cat.List(ss.ctx, aggregate.ListRequest{Method: m.Method, Cursor: cursor, Allowed: ss.allowed,
			Scope: ss.owner.Key, Private: ss.srv.o.Private || ss.allowed != nil})
		if err != nil {
			return errorBody(err, id)
		}
		ss.srv.noteProblems(m.Method, res.Problems)
		if len(res.LeftOut) > 0 {
			ss.mu.Lock()
			if ss.leftOut == nil {
				ss.leftOut = map[string]bool{}
			}
			for _, name := range res.LeftOut {
				ss.leftOut[name] = true
			}
			ss.mu.Unlock()
		}
		return result(id, res.Result)
	case m.Method == "logging/setLevel":
		params := m.Param("level")
		if params == nil {
			return errorBody(&bridge.Error{Code: bridge.CodeInvalidParams, Message: "logging/setLevel needs params.level"}, id)
		}
		level := fmt.Appendf(nil, `{"level":%s}`, params)
		ss.mu.Lock()
		ss.level = level
		var up []*member
		for _, mb := range ss.members {
			up = append(up, mb)
		}
		ss.mu.Unlock()
		for _, mb := range up {
			if mb.started() && mb.err == nil {
				_, _ = ss.call(ss.ctx, mb, "logging/setLevel", level)
			}
		}
		return result(id, []byte(`{}`))
	case m.Method == "initialize":
		return errorBody(&bridge.Error{Code: bridge.CodeInvalidRequest, Message: "Invalid Request: the session is initialized already"}, id)
	}
	return errorBody(&bridge.Error{Code: bridge.CodeMethodNotFound, Message: "Method not found: " + m.Method + " (not served on the aggregate endpoint)"}, id)
}

// errDown: the server is not served now.
var errDown = errors.New("the server is not served")

// member is server's session, started if it is not (or no longer) up;
// it waits for the start within ctx.
func (ss *Session) member(ctx context.Context, server string) (*member, error) {
	b := ss.srv.o.Bridge(server)
	if b == nil {
		return nil, errDown
	}
	ss.mu.Lock()
	if ss.ended {
		ss.mu.Unlock()
		return nil, bridge.ErrSessionNotFound
	}
	m := ss.members[server]
	if m != nil && (m.b != b || m.started() && (m.err != nil || !m.conn.Alive())) {
		// Its bridge was replaced (a reload restarted it), its start
		// failed, or its session ended (its child died): start anew.
		m = nil
	}
	if m != nil {
		m.revivals = 0 // the client uses it: a later end may revive it again
	}
	if m == nil {
		m = &member{server: server, b: b, ready: make(chan struct{})}
		ss.members[server] = m
		ss.spawnLocked(func() { ss.start(m) })
	}
	ss.mu.Unlock()
	select {
	case <-m.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if m.err != nil {
		return nil, m.err
	}
	return m, nil
}

// start starts m's session with the client's initialize params, then
// reads its GET stream until it ends.
func (ss *Session) start(m *member) {
	restarted := m.b.ChildRestarted() // taken before the session starts, so no restart is missed
	init := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":%s}`, ss.params)
	msgs, _, err := bridge.ParseBody(init)
	var conn bridge.Conn
	if err == nil {
		var res json.RawMessage
		conn, res, err = startSession(ss.ctx, bridge.ServerOf(m.b), msgs[0], ss.owner, ss.env)
		if err == nil {
			ss.srv.remember(m.b, res)
		}
	}
	if err == nil && ss.ctx.Err() != nil {
		err = bridge.ErrSessionNotFound // the session ended while it started
	}
	if err != nil && conn != nil {
		conn.Close()
		conn = nil
	}
	m.conn, m.err = conn, err
	var level []byte
	if err == nil {
		// Before the session is ready, so that no request of the
		// client's overtakes its subscriptions, nor its logging level
		// (the request that started it logs at that level too).
		ss.renew(m)
		ss.mu.Lock()
		level = ss.level
		ss.mu.Unlock()
		if level != nil {
			_, _ = ss.call(ss.ctx, m, "logging/setLevel", level)
		}
	}
	close(m.ready)
	if err != nil {
		ss.log.Warn("server of the aggregate did not start", "server", m.server, "err", err)
		return
	}
	ss.mu.Lock()
	now := ss.level
	missed := ss.leftOut[m.server]
	delete(ss.leftOut, m.server)
	ss.mu.Unlock()
	if missed {
		// A list left the server out while it started (a server slower
		// to start than --aggregate-list-timeout): the client is told to
		// list again, now that it is up.
		ss.coal.Signal(aggregate.AllChanged)
	}
	if !bytes.Equal(now, level) {
		// Set while it started: it was not yet sent the session's.
		_, _ = ss.call(ss.ctx, m, "logging/setLevel", now)
	}
	ss.mu.Lock()
	if !ss.ended {
		ss.spawnLocked(func() { ss.watchRestarts(m, restarted) })
	}
	ss.mu.Unlock()
	ss.pumpGet(m)
}

// startSession starts a session on srv with the initialize request init,
// and tells it initialized: its InitializeResult.
func startSession(ctx context.Context, srv bridge.Server, init bridge.Message, owner bridge.Owner, env []string) (bridge.Conn, json.RawMessage, error) {
	conn, rd, err := srv.Initialize(ctx, bridge.InitRequest{Message: init, Owner: owner, Env: env, JSONOnly: true})
	if err != nil {
		return nil, nil, err
	}
	evs, err := rd.Collect(ctx, nil)
	rd.Close()
	if err != nil {
		return conn, nil, err
	}
	var ans struct {
		Result json.RawMessage
		Error  *struct{ Message string }
	}
	if len(evs) != 1 || json.Unmarshal(evs[0].Data, &ans) != nil {
		return conn, nil, errors.New("no InitializeResult")
	}
	if ans.Error != nil {
		return conn, nil, fmt.Errorf("initialize: %s", ans.Error.Message)
	}
	notif, _, _ := bridge.ParseBody([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if _, err := conn.Send(notif, true); err != nil {
		return conn, nil, err
	}
	return conn, ans.Result, nil
}

// pumpGet reads m's GET stream until the member's session ends or the
// aggregate's does. A member whose session ended while the aggregate's
// goes on is a server gone down: the client is told the lists may have
// changed, and the next use starts the server's session anew.
func (ss *Session) pumpGet(m *member) {
	rd, err := m.conn.Open()
	if err != nil {
		ss.log.Warn("server's stream not opened", "server", m.server, "err", err)
		return
	}
	defer rd.Close()
	rd.Begin(bridge.ServeOptions{Plain: true})
	var buf []bridge.Event
	for {
		var final bool
		buf, final, err = rd.Next(ss.ctx, nil, buf[:0])
		for _, ev := range buf {
			ss.fromServer(m, ev.Data, nil)
		}
		clear(buf)
		if err != nil || final {
			break
		}
	}
	if ss.ctx.Err() != nil {
		return
	}
	select {
	case <-m.conn.Done():
	case <-ss.ctx.Done():
		return
	}
	// Each call in flight is answered by its own forward, from what the
	// server's session says of it (Table.ServerGone would answer it a
	// second time).
	ss.log.Info("server of the aggregate went down", "server", m.server)
	ss.coal.Signal(aggregate.AllChanged)
	ss.revive(m)
}

// fromServer routes a message of m's to the client: into box, the POST
// it relates to, or onto the GET stream (box nil). It says whether it was
// an answer to the client's request.
func (ss *Session) fromServer(m *member, msg []byte, box *outbox) bool {
	d, err := ss.table.FromServer(m.server, msg)
	if err != nil {
		ss.log.Debug("server's message dropped", "server", m.server, "err", err)
	}
	switch d.Dest {
	case aggregate.ToClient:
		answer := d.Method != ""
		if box != nil {
			box.push(d.Message, answer)
		} else {
			ss.get.push(d.Message, false)
		}
		return answer
	case aggregate.BackToServer:
		ss.pass(m.server, d.Message)
	case aggregate.Dropped:
		if d.Changed != 0 {
			ss.coal.Signal(d.Changed)
		}
	}
	return false
}

// forward sends the client's request r to its server and gives what
// comes back for it to box, until its answer. A server that is down, or
// dies under the request, answers aggregate.Unavailable.
func (ss *Session) forward(r aggregate.Route, clientID []byte, method string, box *outbox, jsonOnly bool) {
	unavailable := func() {
		ss.table.Forget(r.ID)
		box.push(aggregate.Unavailable(clientID, method, r.Server), true)
	}
	ended := func() {
		// The session ended under the request: its POST still gets an
		// answer, so that its client is not left waiting.
		ss.table.Forget(r.ID)
		box.push(errorBody(bridge.ErrSessionNotFound, clientID), true)
	}
	m, err := ss.member(ss.ctx, r.Server)
	if err != nil {
		if ss.ctx.Err() != nil {
			ended()
		} else {
			unavailable()
		}
		return
	}
	ss.noteSubscription(r.Server, method, r.Message)
	msgs, _, err := bridge.ParseBody(r.Message)
	if err != nil {
		ss.table.Forget(r.ID)
		box.push(errorBody(err, clientID), true)
		return
	}
	rd, err := m.conn.Send(msgs, jsonOnly)
	if err != nil {
		unavailable()
		return
	}
	defer rd.Close()
	rd.Begin(bridge.ServeOptions{Plain: true})
	answered := false
	var buf []bridge.Event
	for !answered {
		var final bool
		buf, final, err = rd.Next(ss.ctx, nil, buf[:0])
		for _, ev := range buf {
			if rep, ok := bridge.ReplyOf(ev.Data); ok && rep.Error && rep.Code == bridge.CodeChildExited {
				// The server died under the request: said as a down
				// server's, so that a tool's caller reads a result.
				_, _ = ss.table.FromServer(m.server, ev.Data)
				box.push(aggregate.Unavailable(clientID, method, r.Server), true)
				answered = true
				continue
			}
			answered = ss.fromServer(m, ev.Data, box) || answered
		}
		clear(buf)
		if err != nil || final {
			break
		}
	}
	switch {
	case answered:
	case ss.ctx.Err() != nil:
		ended()
	default:
		unavailable()
	}
}

// list reads one page of server's list with a call of the aggregate's
// own: the Catalog's Lister.
func (ss *Session) list(ctx context.Context, server, method, cursor string) (json.RawMessage, error) {
	m, err := ss.member(ctx, server)
	if err != nil {
		return nil, err
	}
	params := []byte(`{}`)
	if cursor != "" {
		params = fmt.Appendf(nil, `{"cursor":%s}`, strconv.Quote(cursor))
	}
	res, err := ss.call(ctx, m, method, params)
	if err == nil {
		ss.srv.listed(server, method, res)
	}
	return res, err
}

// call sends a request of the aggregate's own to m and waits for its
// result within ctx.
func (ss *Session) call(ctx context.Context, m *member, method string, params []byte) (json.RawMessage, error) {
	id, msg := ss.table.Call(m.server, method, params)
	msgs, _, err := bridge.ParseBody(msg)
	if err != nil {
		ss.table.Forget(id)
		return nil, err
	}
	rd, err := m.conn.Send(msgs, true)
	if err != nil {
		ss.table.Forget(id)
		return nil, err
	}
	defer rd.Close()
	rd.Begin(bridge.ServeOptions{Plain: true})
	var buf []bridge.Event
	for {
		var final bool
		buf, final, err = rd.Next(ctx, nil, buf[:0])
		for _, ev := range buf {
			d, derr := ss.table.FromServer(m.server, ev.Data)
			if derr == nil && d.Dest == aggregate.ToCaller && d.ID == id {
				return answerResult(d.Message)
			}
			if d.Dest == aggregate.ToClient {
				ss.get.push(d.Message, false)
			}
		}
		if err != nil || final {
			ss.table.Forget(id)
			return nil, cmpErr(err, errors.New("no answer"))
		}
	}
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// answerResult is the result of an answer, or its error.
func answerResult(msg []byte) (json.RawMessage, error) {
	var r struct {
		Result json.RawMessage
		Error  *struct{ Message string }
	}
	if err := json.Unmarshal(msg, &r); err != nil {
		return nil, err
	}
	if r.Error != nil {
		return nil, errors.New(r.Error.Message)
	}
	return r.Result, nil
}
