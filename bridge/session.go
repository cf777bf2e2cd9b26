package bridge

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Session is one MCP session of the 2025 era: a party of its child
// (party.go). Its state is guarded by its upstream's mutex: in
// per-session mode the upstream is its own child, in shared mode the
// child every session shares. Its partyState holds its logger, its owner
// (the principal it belongs to: Owner.Key), whether it is closed, why it
// is ending, and, on a shared child, the lowest log level it wants.
type Session struct {
	partyState
	id        string
	ownerName string // Owner.Name, for Snapshot
	b         *Bridge
	up        *upstream

	version     string           // negotiated protocol version
	byClient    map[string]int64 // client id (raw bytes) -> child-side id, in flight
	get         *Stream          // the open GET stream, if any
	posts       map[*Stream]bool // POST streams a client is reading
	queue       [][]byte         // server messages waiting for a stream
	queued      int              // bytes in queue
	known       map[int64]*Stream
	forgotten   map[int64]forgottenStream // streams dropped from known, by id
	forgotOrder []int64                   // ids in forgotten, oldest first
	sweepAt     int                       // len(known) at which to forget streams nothing can resume
	lastSeen    time.Time
	created     time.Time
	// What the session's client did, for the janitor to tell a client
	// that has left from one that is only quiet (unreachableLocked).
	heard     time.Time // the client's last request, POST or stream
	listened  bool      // the client opened a GET stream
	spoke     bool      // the client sent something after notifications/initialized
	getLeft   time.Time // when the client of its last GET stream let go
	ready     bool      // s.up is set; guarded by the bridge's mutex
	stateless bool      // one stateless HTTP request's session
	// elicitForm: the client declared form elicitation at initialize,
	// so a transport may ask it a question of the bridge's own (an
	// approval). Set before the session is handed out, never changed.
	elicitForm bool
	// holds counts the client's calls a transport holds before they
	// reach the child (waiting for a human's approval): each is a
	// request of the client's the session must live for (Hold).
	holds int

	// The event log: every event of the session's resumable streams that
	// is still kept, oldest first (order[orderHead:], by stream; each
	// stream holds its own events in Stream.kept). Guarded by logMu,
	// which is taken after the upstream's and a stream's locks.
	logMu     sync.Mutex
	order     []*Stream
	orderHead int
	logEvents int
	logBytes  int

	endOnce sync.Once
	done    chan struct{}
}

// logLevels are MCP's (syslog's) levels, least severe first.
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

func levelIndex(l string) int {
	for i, v := range logLevels {
		if v == l {
			return i
		}
	}
	return -1
}

func newSession(b *Bridge, id string) *Session {
	return &Session{
		partyState: partyState{log: b.log.With("session", id), logLevel: -1},
		id:         id,
		b:          b,
		byClient:   make(map[string]int64),
		posts:      make(map[*Stream]bool),
		known:      make(map[int64]*Stream),
		sweepAt:    sweepMin,
		lastSeen:   b.cfg.Now(),
		created:    b.cfg.Now(),
		heard:      b.cfg.Now(),
		done:       make(chan struct{}),
	}
}

// ID is the session id (the Mcp-Session-Id).
func (s *Session) ID() string { return s.id }

// Done is closed when the session has ended (and, in per-session mode,
// its child is reaped).
func (s *Session) Done() <-chan struct{} { return s.done }

// ChildPid is the pid of the session's child, 0 while none runs.
func (s *Session) ChildPid() int {
	s.up.mu.Lock()
	defer s.up.mu.Unlock()
	if s.up.child == nil {
		return 0
	}
	return s.up.child.Pid()
}

// Version is the protocol version negotiated at initialize ("" before the
// InitializeResult has passed).
func (s *Session) Version() string {
	s.up.mu.Lock()
	defer s.up.mu.Unlock()
	return s.version
}

// ephemeral reports a stateless request's session, which no client can
// name; the answer to a server request may come in any later request.
func (s *Session) ephemeral() bool { return s.stateless }

// InFlight is the number of requests the child is working on for anyone
// (in shared mode, for every session).
func (s *Session) InFlight() int {
	s.up.mu.Lock()
	defer s.up.mu.Unlock()
	return len(s.up.calls)
}

// Alive reports whether the session still exists: not ended, and not on
// its way out (its child gone, deleted, expired). A transport hands out a
// session's id only while it is alive.
func (s *Session) Alive() bool {
	s.up.mu.Lock()
	defer s.up.mu.Unlock()
	return !s.closed && s.endReason == ""
}

func (s *Session) isClosed() bool {
	s.up.mu.Lock()
	defer s.up.mu.Unlock()
	return s.closed
}

func (s *Session) touchLocked() { s.lastSeen = s.b.cfg.Now() }

// heardLocked records the client's contact: a POST, or a stream it
// opened or resumed.
func (s *Session) heardLocked() {
	s.heard = s.b.cfg.Now()
	s.touchLocked()
}

// expiry is when the janitor ends the session if nothing happens before,
// and whether that is because no client can reach it any more; zero
// while nothing counts down (a request in flight, a stream open) or no
// timeout applies.
func (s *Session) expiry() (time.Time, bool) {
	s.up.mu.Lock()
	defer s.up.mu.Unlock()
	return s.expiryLocked()
}

func (s *Session) expiryLocked() (time.Time, bool) {
	if s.closed || len(s.byClient) > 0 || s.get != nil || len(s.posts) > 0 || s.holds > 0 {
		return time.Time{}, false
	}
	var at time.Time
	if d := s.b.cfg.IdleTimeout; d > 0 {
		at = s.lastSeen.Add(d)
	}
	if d := s.b.cfg.UnreachableTimeout; d > 0 && s.unreachableLocked() {
		gone := s.heard
		if s.getLeft.After(gone) {
			gone = s.getLeft
		}
		if u := gone.Add(d); at.IsZero() || u.Before(at) {
			return u, true
		}
	}
	return at, false
}

// unreachableLocked reports whether, as far as the bridge can tell, no
// client will ever use the session again, though none ended it: clients
// that stop without DELETE (the Inspector's CLI, mcp-remote) leave such
// sessions behind, each with a process tree. Either the client listened
// (opened a GET stream), its stream has closed and nothing came since
// (SDK clients keep their GET stream open while they run, and reconnect
// within seconds when it drops); or it never listened and sent nothing
// after notifications/initialized (a session opened and abandoned). A
// quiet client that still holds its stream is never unreachable. Getting
// it wrong costs a client a new initialize: "the client MUST start a new
// session" on the 404 that follows.
func (s *Session) unreachableLocked() bool {
	if s.get != nil || len(s.posts) > 0 || len(s.byClient) > 0 || s.holds > 0 {
		return false
	}
	if s.listened {
		return !s.getLeft.IsZero() && !s.heard.After(s.getLeft)
	}
	return !s.spoke
}

// ElicitsForm reports whether the session's client declared form
// elicitation at initialize: whether the bridge may ask it a question of
// its own with elicitation/create.
func (s *Session) ElicitsForm() bool { return s.elicitForm }

// Hold keeps the session from expiring while a transport holds a call of
// its client before sending it (a call waiting for a human's approval):
// until release, the session counts as one with a request in flight, for
// --idle-timeout and --unreachable-timeout alike. release may be called
// more than once; the first call lets go, and counts as the client's
// contact.
func (s *Session) Hold() (release func()) {
	u := s.up
	u.mu.Lock()
	s.holds++
	s.heardLocked()
	s.spoke = true
	u.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			u.mu.Lock()
			s.holds--
			s.heardLocked()
			u.mu.Unlock()
		})
	}
}

// Send forwards client messages to the child: one message, or the
// messages of a batch. It returns the Stream that will carry the responses
// when there is at least one request, else nil. jsonOnly says the client
// will take the responses as one JSON body, so nothing else may be routed
// to that stream.
func (s *Session) Send(msgs []Message, jsonOnly bool) (*Stream, error) {
	for i := range msgs {
		if msgs[i].Method == MethodInitialize {
			// The child was initialized when the session began; a second
			// initialize would reset it under the client's feet.
			return nil, invalid(CodeInvalidRequest, "Invalid Request: the session is already initialized", msgs[i].ID())
		}
	}
	return s.send(msgs, false, jsonOnly)
}

func (s *Session) send(msgs []Message, init, jsonOnly bool) (*Stream, error) {
	requests := 0
	for i := range msgs {
		if msgs[i].Kind == Request {
			requests++
		}
	}
	u := s.up
	u.mu.Lock()
	child, err := s.writableLocked(requests > 0)
	if err != nil {
		u.mu.Unlock()
		return nil, err
	}
	s.heardLocked()
	if !init && !(len(msgs) == 1 && msgs[0].Method == methodInitialized) {
		s.spoke = true
	}
	var st *Stream
	if requests > 0 {
		st = newStream(s, false, requests, jsonOnly)
		st.init = init
		s.posts[st] = true
	}
	out := make([][]byte, 0, len(msgs))
	for i := range msgs {
		line, err := s.lineLocked(&msgs[i], st, init)
		if err != nil {
			delete(s.posts, st)
			u.mu.Unlock()
			return nil, err
		}
		if line != nil {
			out = append(out, line)
		}
	}
	u.mu.Unlock()
	u.write(child, out)
	return st, nil
}

// writableLocked is the child the session's messages go to, or why they
// cannot go.
func (s *Session) writableLocked(requests bool) (child, error) {
	if s.closed || s.endReason != "" {
		// A session with an endReason is on its way out (deleted,
		// expired, its process gone for good) though end has not run
		// yet: its requests in flight may already have their error, and
		// a client that reads one and sends again must find the session
		// gone, as it will a moment later, not told to retry a process
		// that will never come back.
		return nil, ErrSessionNotFound
	}
	return s.up.childLocked(requests)
}

// lineLocked is what goes to the child for m, a message of the session's
// client (nil: nothing), with st the stream of the POST's answers.
func (s *Session) lineLocked(m *Message, st *Stream, init bool) ([]byte, error) {
	switch m.Kind {
	case Request:
		return s.requestLocked(m, st, init)
	case Notification:
		return s.notificationLocked(m), nil
	}
	return s.responseLocked(m), nil
}

// requestLocked puts a request in flight on the child, under a child-side
// id, and returns its line; nil when the bridge answered it itself.
func (s *Session) requestLocked(m *Message, st *Stream, init bool) ([]byte, error) {
	u := s.up
	cid := m.ID()
	if _, dup := s.byClient[string(cid)]; dup {
		// Two requests in flight with one id could not be told apart on
		// the way back.
		return nil, invalid(CodeInvalidRequest, "Invalid Request: a request with this id is already in flight", cid)
	}
	if u.role.multiplexed() && !s.forwardLocked(m, st) {
		return nil, nil // answered by the bridge
	}
	c := &call{party: s, clientID: bytes.Clone(cid), st: st, init: init}
	line := u.register(c, m)
	s.byClient[string(cid)] = c.id
	return line, nil
}

// notificationLocked is the line of a client's notification: a
// cancellation translated to the child's id, or dropped; initialized once
// for a shared child.
func (s *Session) notificationLocked(m *Message) []byte {
	u := s.up
	switch {
	case m.Method == methodCancelled:
		return s.cancelLocked(m)
	case m.Method == methodInitialized && u.role.multiplexed():
		// The shared child was initialized once, by the first session; it
		// hears "initialized" once.
		if u.mux.initSent {
			return nil
		}
		u.mux.initSent = true
	}
	return m.Raw
}

// responseLocked is the line of an answer to a request the child sent
// (sampling, elicitation, roots, ping): the child's own id space, so it
// goes through as it is, from the session it was sent to (or, stateless,
// from any).
func (s *Session) responseLocked(m *Message) []byte {
	u := s.up
	if u.role.multiplexed() {
		if owner, ok := u.mux.serverReqs[string(m.ID())]; !ok || (owner != party(s) && !s.ephemeral()) {
			s.log.Warn("dropped a response to a request the MCP server did not send to this session", "id", string(m.ID()))
			return nil
		}
		delete(u.mux.serverReqs, string(m.ID()))
	}
	return m.Raw
}

// forwardLocked handles, for a session on a shared child, the requests
// that change state the child holds for everyone: subscriptions and the
// log level. It reports whether m goes to the child; if not, the bridge
// has answered it on st.
func (s *Session) forwardLocked(m *Message, st *Stream) bool {
	var forward bool
	switch m.Method {
	case "resources/subscribe", "resources/unsubscribe":
		forward = s.subscriptionLocked(m)
	case "logging/setLevel":
		var level string
		if unquote(m.Param("level"), &level) != nil || levelIndex(level) < 0 {
			return true // let the child say what is wrong
		}
		s.logLevel = levelIndex(level)
		_, forward = s.up.relevelLocked()
	default:
		return true
	}
	if !forward {
		s.answerLocked(&call{st: st}, []byte(`{"jsonrpc":"2.0","id":`+string(m.ID())+`,"result":{}}`))
	}
	return forward
}

// subscriptionLocked counts a resources/subscribe or unsubscribe onto the
// shared child's, and reports whether the child is to hear it: the first
// holder's subscribe, the last one's unsubscribe.
func (s *Session) subscriptionLocked(m *Message) bool {
	u := s.up
	var uri string
	if unquote(m.Param("uri"), &uri) != nil || uri == "" {
		return true // let the child say what is wrong
	}
	if m.Method == "resources/subscribe" {
		return u.subscribeLocked(s, uri)
	}
	return u.unsubscribeLocked(s, uri) || len(u.mux.subs[uri]) == 0
}

// wantsLog reports whether a log message with these params is at or above
// the session's own level (shared mode; a session that set none gets all).
func (s *Session) wantsLog(params []byte) bool {
	if !s.up.role.multiplexed() || s.logLevel < 0 {
		return true
	}
	return atLevel(params, s.logLevel)
}

// atLevel reports whether a log message with these params is at or above
// level (an index in logLevels).
func atLevel(params []byte, level int) bool {
	var l string
	if params != nil && params[0] == '{' {
		_ = unquote(member(params, "level").of(params), &l)
	}
	return levelIndex(l) >= level
}

// cancelLocked handles the client's notifications/cancelled: the requestId
// is the client's id, so it is translated to the child's; for an id not in
// flight the notification is dropped ("the receiver MAY ignore" it), never
// forwarded with an id that could name some other request of the child.
func (s *Session) cancelLocked(m *Message) []byte {
	if p := m.params(); p == nil || p[0] != '{' {
		return nil
	}
	rs := m.paramAt("requestId")
	if !rs.ok() {
		if s.up.role.multiplexed() {
			return nil // a task cancellation cannot be attributed on a shared child
		}
		return m.Raw // 2025-11-25 allows cancelling tasks without one
	}
	childID, ok := s.byClient[string(rs.of(m.Raw))]
	if !ok {
		return nil
	}
	c := s.up.calls[childID]
	if c == nil || c.init {
		return nil // "initialize MUST NOT be cancelled"
	}
	// "The sender of the cancellation notification SHOULD ignore any
	// response to the request that arrives afterward": the call is
	// settled now, and its stream ends without a response.
	s.up.dropLocked(c)
	return splice(m.Raw, rs, strconv.AppendInt(nil, childID, 10))
}

// hearLocked takes a message of the child's that relates to no request:
// on a child of its own, everything (the session is its only client);
// on a shared child, what it wants of it (log messages at its level).
func (s *Session) hearLocked(m *childMsg) {
	switch {
	case m.leased:
		return // a leased child's news is for listens only
	case !s.up.role.multiplexed():
		s.touchLocked()
	case m.method == methodLogMessage && !s.wantsLog(m.params()):
		return
	}
	s.deliverLocked(m.keep())
}

// relatedLocked takes a request or log message of the child's while c,
// one of the session's requests, is the only one in flight: it relates to
// c, and goes on c's stream while a client reads it.
func (s *Session) relatedLocked(c *call, m *childMsg) {
	if m.method == methodLogMessage && !s.wantsLog(m.params()) {
		return
	}
	s.touchLocked()
	if c.st.canCarry() {
		c.st.pushMarked(m.keep(), markOther, false)
	} else {
		s.deliverLocked(m.keep())
	}
}

// progressLocked takes progress of c, one of the session's requests, with
// the client's token in place: on c's stream while a client reads it or
// may come back for it.
func (s *Session) progressLocked(c *call, msg []byte) {
	s.touchLocked()
	if c.st.canKeep() {
		c.st.pushMarked(msg, markOther, false)
	} else {
		s.deliverLocked(msg)
	}
}

// deliverLocked puts a message that relates to no request on one stream:
// the GET stream if open, else an open POST stream, else the queue.
func (s *Session) deliverLocked(msg []byte) {
	if s.closed {
		return
	}
	if s.get != nil && s.get.canCarry() {
		s.get.pushMarked(msg, markOther, false)
		return
	}
	for st := range s.posts {
		if st.canCarry() {
			st.pushMarked(msg, markOther, false)
			return
		}
	}
	if len(s.queue) >= s.b.cfg.QueueLimit || s.queued+len(msg) > s.b.cfg.EventLogBytes {
		s.b.stats.QueueDrops.Add(1)
		s.log.Warn("no stream open and the session's queue is full; dropped a server message",
			"queue_limit", s.b.cfg.QueueLimit, "queue_bytes", s.queued, "message", string(msg[:min(len(msg), 200)]))
		return
	}
	s.queue = append(s.queue, msg)
	s.queued += len(msg)
}

// takeAnswerLocked is the party's: the child's answer to c (nil: none, it
// was cancelled).
func (s *Session) takeAnswerLocked(c *call, m *childMsg) {
	s.doneLocked(c)
	var msg []byte
	var mk mark
	if m != nil {
		if c.init {
			s.initializedLocked(m)
		}
		msg, mk = m.raw, answerMark(m)
	}
	if s.closed {
		return
	}
	s.answerMarkedLocked(c, msg, mk)
}

// initializedLocked records what the InitializeResult m negotiated.
func (s *Session) initializedLocked(m *childMsg) {
	res := m.f.result.of(m.raw)
	if res != nil && res[0] == '{' {
		_ = unquote(member(res, "protocolVersion").of(res), &s.version)
	}
	s.log.Info("session initialized", "protocol_version", s.version)
	if res != nil && !s.up.role.multiplexed() {
		s.b.starts.succeeded()
	}
}

// takeFailureLocked is the party's: c fails with an error of the
// bridge's, saying why the session is ending if it is. A session whose
// initialize on a shared child failed ends with it: its client has no
// session.
func (s *Session) takeFailureLocked(c *call, code int, reason string, data any) bool {
	r := cmp.Or(s.endReason, reason)
	ends := c.init && s.up.role.multiplexed()
	if ends {
		s.endReason = "its initialize failed: " + r
	}
	s.touchLocked() // the session idles from now, not from its last message
	s.doneLocked(c)
	if !s.closed {
		m := scanned(errorResponse(c.clientID, code, r, data))
		s.answerMarkedLocked(c, m.raw, answerMark(m))
	}
	return ends
}

// takeRelatedLocked is the party's: what the child sends for c, one of
// the session's requests, while it runs.
func (s *Session) takeRelatedLocked(c *call, m *childMsg, rel relation) {
	switch rel {
	case relProgress:
		s.progressLocked(c, m.raw)
	case relNamed:
		c.st.pushMarked(m.raw, markOther, false)
	case relAsked:
		s.relatedLocked(c, m)
	}
}

// answerLocked puts the response to c (nil: none) on its stream, and
// forgets the stream once every response it owes is there.
func (s *Session) answerLocked(c *call, msg []byte) { s.answerMarkedLocked(c, msg, mark{}) }

// answerMarkedLocked is answerLocked, with what the bridge read of msg.
func (s *Session) answerMarkedLocked(c *call, msg []byte, mk mark) {
	if c.st.pushMarked(msg, mk, true) {
		delete(s.posts, c.st)
	}
}

func (s *Session) doneLocked(c *call) {
	delete(s.byClient, string(c.clientID))
}

// OpenStream opens the session's GET stream for server-initiated
// messages. There is at most one (ErrStreamConflict); one whose client
// has just gone is waited for, briefly, as in Resume.
func (s *Session) OpenStream() (*Stream, error) {
	for try := 0; ; try++ {
		s.up.mu.Lock()
		if s.closed {
			s.up.mu.Unlock()
			return nil, ErrSessionNotFound
		}
		if old := s.get; old != nil {
			old.mu.Lock()
			gone := old.gone
			old.mu.Unlock()
			s.up.mu.Unlock()
			if try > 0 || gone == nil || !waitGone(gone, s.done) {
				return nil, ErrStreamConflict
			}
			continue
		}
		st := newStream(s, true, 0, false)
		s.get = st
		s.listened = true
		s.heardLocked()
		s.unqueueLocked(st)
		s.up.mu.Unlock()
		return st, nil
	}
}

// waitGone waits up to resumeWait for a stream's client to let go and
// reports whether it did; it gives up at once when the session ends
// (ended), and the caller finds it closed.
func waitGone(gone, ended <-chan struct{}) bool {
	t := time.NewTimer(resumeWait)
	defer t.Stop()
	select {
	case <-gone:
		return true
	case <-ended:
		return true
	case <-t.C:
		return false
	}
}

// unqueueLocked hands the messages waiting for a stream to st, the
// session's GET stream.
func (s *Session) unqueueLocked(st *Stream) {
	for _, m := range s.queue {
		st.pushMarked(m, markOther, false)
	}
	s.queue, s.queued = nil, 0
}

// Resume reattaches the stream that lastEventID came from, after its
// client lost the connection, replaying from the session's event log
// exactly the events after that id, then what the stream still has to
// send: the rest of a POST stream's responses, or, for a GET stream,
// server messages as before. Only streams of this session can be named:
// stream ids are unique within the bridge. An id that names nothing the
// session sent, or whose following events have aged out of the log, is an
// error, never a silent gap.
func (s *Session) Resume(lastEventID string) (*Stream, error) {
	sid, sn, ok := strings.Cut(lastEventID, "_")
	id, err1 := strconv.ParseInt(sid, 10, 64)
	n, err2 := strconv.ParseInt(sn, 10, 64)
	if !ok || err1 != nil || err2 != nil || n < 0 {
		return nil, invalid(CodeInvalidRequest, "Invalid Last-Event-ID: not an event id of this bridge", nil)
	}
	for try := 0; ; try++ {
		u := s.up
		u.mu.Lock()
		if s.closed {
			u.mu.Unlock()
			return nil, ErrSessionNotFound
		}
		st := s.known[id]
		if st == nil {
			t, ok := s.forgotten[id]
			u.mu.Unlock()
			if !ok {
				// Not KindNotFound: a 404 would tell the client its
				// session is gone, and it is not.
				return nil, invalid(CodeInvalidRequest, "Last-Event-ID names no stream of this session that can be resumed", nil)
			}
			// Nothing of a forgotten stream is kept: all it sent is gone.
			if err := s.canResume(lastEventID, n, t.seq, t.seq); err != nil {
				return nil, err
			}
			if t.get {
				// The client has all that stream sent; nothing has gone to
				// it since it was left. A new GET stream misses nothing.
				return s.OpenStream()
			}
			// A complete POST stream the client has all of.
			return &Stream{sess: s, id: id, resumable: true, final: true, attached: true, reader: 1,
				seq: n, evicted: n, cursor: n + 1, wake: make(chan struct{}, 1), gone: make(chan struct{})}, nil
		}
		st.mu.Lock()
		if st.attached {
			// The stream may still be read by its old connection: a
			// client reconnects as soon as it sees the connection drop,
			// often before the server has noticed. Wait for the old
			// handler to let go, briefly, once.
			gone := st.gone
			st.mu.Unlock()
			u.mu.Unlock()
			if try > 0 {
				return nil, &Error{Kind: KindConflict, Code: CodeInvalidRequest, Message: "the stream of this Last-Event-ID is being read by another connection"}
			}
			waitGone(gone, s.done)
			continue
		}
		if st.get && s.get != nil {
			st.mu.Unlock()
			u.mu.Unlock()
			return nil, ErrStreamConflict
		}
		s.logMu.Lock()
		err := s.canResume(lastEventID, n, st.seq, st.evicted)
		if err == nil {
			st.cursor = n + 1
			st.behind = false
		}
		s.logMu.Unlock()
		if err != nil {
			st.mu.Unlock()
			u.mu.Unlock()
			return nil, err
		}
		st.attached = true
		st.reader++
		st.gone = make(chan struct{})
		final := st.final
		st.mu.Unlock()
		switch {
		case st.get:
			s.get = st
			s.listened = true
			s.unqueueLocked(st)
		case !final:
			s.posts[st] = true
		}
		s.heardLocked()
		u.mu.Unlock()
		st.signal()
		return st, nil
	}
}

// canResume checks a resume from event n of a stream that has sent seq
// events, of which those up to evicted have aged out.
func (s *Session) canResume(lastEventID string, n, seq, evicted int64) error {
	switch {
	case n > seq:
		return invalid(CodeInvalidRequest, "Last-Event-ID names an event its stream has not sent", nil)
	case evicted > n:
		return &Error{Kind: KindGone, Code: CodeEventsGone, Message: fmt.Sprintf(
			"the events after Last-Event-ID %s have aged out of the session's event log (it keeps %d events and %d bytes); resuming would leave a gap",
			lastEventID, s.b.cfg.EventLogEvents, s.b.cfg.EventLogBytes)}
	}
	return nil
}

// resumeWait bounds how long a resume waits for the stream's old
// connection to be given up.
const resumeWait = 2 * time.Second

// detach lets go of the stream's reader: reader r, or (0) whichever
// reads it now. A stream with no reader is left as it is, so a reader
// that let go already, or has been followed by another, changes nothing.
func (s *Session) detach(st *Stream, r uint64) {
	s.up.mu.Lock()
	defer s.up.mu.Unlock()
	st.mu.Lock()
	if !st.attached || r != 0 && st.reader != r {
		st.mu.Unlock()
		return
	}
	s.touchLocked()
	st.letGoLocked()
	var left [][]byte
	switch {
	case st.get:
		for _, m := range st.msgs {
			left = append(left, m.data)
		}
		st.msgs, st.pendingBytes = nil, 0
	case st.resumable:
		// Into the log, where the client finds them if it resumes, and
		// within the log's bounds if it never does.
		s.logMu.Lock()
		st.spillLocked()
		s.logMu.Unlock()
	default:
		st.clearLocked() // no one can ask for them again
	}
	st.mu.Unlock()
	if !st.get {
		delete(s.posts, st)
		return
	}
	if s.get == st {
		s.get = nil
		s.getLeft = s.b.cfg.Now()
	}
	// What the client did not take goes back, in order, to wait for the
	// next stream. This can take the queue over its bounds by what one
	// stream held, which is bounded too: nothing is dropped here.
	for _, m := range left {
		s.queued += len(m)
	}
	s.queue = append(left, s.queue...)
}

// sweepMin is the least number of streams a session tracks before it
// looks for ones to forget.
const sweepMin = 32

// keepIdleGETs is how many GET streams that were left, with no events in
// the log, a session remembers, so that a client resuming one from its
// last event is not refused.
const keepIdleGETs = 16

// maxForgotten bounds the streams a session remembers after forgetting
// them, so that a resume from one is answered as precisely as before.
const maxForgotten = 1024

// forgottenStream is what Resume needs of a forgotten stream.
type forgottenStream struct {
	seq int64 // its last event
	get bool
}

// trackLocked records a new stream, so Resume can find it, and forgets
// the streams no client can read from any more: complete, or left GET
// streams beyond the newest keepIdleGETs, with nothing in the log or
// waiting. Their last event numbers are remembered (up to maxForgotten
// streams), so a resume from one still gets 410 or a stream that ends at
// once, not an "unknown id".
func (s *Session) trackLocked(st *Stream) {
	s.known[st.id] = st
	if len(s.known) < s.sweepAt {
		return
	}
	var idleGETs []*Stream
	for _, k := range s.known {
		k.mu.Lock()
		idle := !k.attached && len(k.msgs) == 0
		final := k.final
		k.mu.Unlock()
		if !idle {
			continue
		}
		s.logMu.Lock()
		kept := len(k.kept)
		s.logMu.Unlock()
		switch {
		case kept > 0:
		case final || !k.resumable:
			s.forgetLocked(k)
		case k.get:
			idleGETs = append(idleGETs, k)
		}
	}
	if len(idleGETs) > keepIdleGETs {
		slices.SortFunc(idleGETs, func(a, b *Stream) int { return cmp.Compare(a.id, b.id) })
		for _, k := range idleGETs[:len(idleGETs)-keepIdleGETs] {
			s.forgetLocked(k)
		}
	}
	s.sweepAt = max(sweepMin, 2*len(s.known))
}

func (s *Session) forgetLocked(st *Stream) {
	delete(s.known, st.id)
	s.logMu.Lock()
	seq := st.seq
	s.logMu.Unlock()
	if !st.resumable || seq == 0 {
		return // no client has an id of it to resume from
	}
	if s.forgotten == nil {
		s.forgotten = make(map[int64]forgottenStream)
	}
	s.forgotten[st.id] = forgottenStream{seq: seq, get: st.get}
	s.forgotOrder = append(s.forgotOrder, st.id)
	if len(s.forgotOrder) > maxForgotten {
		delete(s.forgotten, s.forgotOrder[0])
		s.forgotOrder = s.forgotOrder[1:]
	}
}

// failCallsLocked answers every request of the session still in flight
// on its shared child, which lives on, with -32005 and why the session
// ended, as a per-session child's exit answers them (watch): whether the
// session was deleted, expired or the bridge is shutting down, its client
// gets an answer rather than a stream that ends without one. It returns
// the cancellations that tell the child nobody wants the answers. An
// initialize is left alone: it "MUST NOT be cancelled", and its answer
// initializes the shared child for the sessions that wait on it.
func (s *Session) failCallsLocked() [][]byte {
	u := s.up
	reason := cmp.Or(s.endReason, "the session ended")
	var cancels [][]byte
	for id, c := range u.calls {
		if c.party != party(s) || c.init {
			continue
		}
		u.settleLocked(id)
		s.doneLocked(c)
		s.answerLocked(c, errorResponse(c.clientID, CodeChildExited, reason, nil))
		cancels = append(cancels, cancelNotification(id, reason))
	}
	return cancels
}

// Close ends the session at the client's request (DELETE). In per-session
// mode its child is stopped with the graceful sequence and Close returns
// once it is reaped.
func (s *Session) Close() {
	s.stop(context.Background(), reasonDeleted)
}

// stop ends the session, and in per-session mode stops its child.
func (s *Session) stop(ctx context.Context, reason string) {
	s.up.mu.Lock()
	if s.endReason == "" {
		s.endReason = reason
	}
	s.up.mu.Unlock()
	s.b.remove(s) // from now on its id is 404
	if s.up.role.multiplexed() {
		s.end()
		return
	}
	s.up.stop(ctx)
	<-s.done
}

// end closes the session: its streams finish, and on a shared child its
// subscriptions and log level are withdrawn. Requests still in flight have
// been answered (per-session: by watch); on a shared child, a client's
// session's are answered here (failCallsLocked); a session of the
// bridge's own (stateless, modern) drops them, as its request is over.
func (s *Session) end() {
	s.endOnce.Do(func() {
		s.b.remove(s)
		u := s.up
		u.mu.Lock()
		lines, streams, retire := s.endLocked()
		child := u.child
		reason := s.endReason
		initialized := s.version != ""
		u.mu.Unlock()
		if retire {
			// Refused once the bridge is closed: Close stops u, which is
			// still listed among the owners' children.
			s.b.spawn(func() { s.b.retire(u) })
		}
		if child != nil && len(lines) > 0 {
			u.write(child, lines)
		}
		for _, st := range streams {
			st.finish()
		}
		if !s.stateless {
			s.b.stats.SessionsEnded.Add(1)
			s.log.Info("session ended", "reason", reason)
		}
		if !initialized {
			s.startEnded(reason)
		}
		close(s.done)
	})
}

// endLocked closes the session on its child: on a shared child its
// requests are answered and cancelled (failCallsLocked) and what it held
// there given back (leaveLocked). It returns the lines for the child, the
// streams to finish, and whether the session was its principal's last on
// a per-identity child, which then retires. Called with the upstream's
// lock held.
func (s *Session) endLocked() (lines [][]byte, streams []*Stream, retire bool) {
	u := s.up
	s.closed = true
	if u.role.multiplexed() && !s.ephemeral() {
		lines = s.failCallsLocked()
	}
	lines = append(lines, u.leaveLocked(s)...)
	streams = make([]*Stream, 0, len(s.posts)+1)
	for st := range s.posts {
		streams = append(streams, st)
	}
	if s.get != nil {
		streams = append(streams, s.get)
	}
	retire = u.role == roleIdentity && len(u.parties) == 0 && !u.stopping
	if retire {
		u.stopping = true // no session joins a child on its way out
	}
	return lines, streams, retire
}

func exitStatus(err error) string {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return "exit status 0"
	case errors.As(err, &ee):
		return ee.ProcessState.String()
	default:
		return err.Error()
	}
}

// snapshot describes the session, for Snapshot.
func (s *Session) snapshot() SessionSnapshot {
	u := s.up
	u.mu.Lock()
	defer u.mu.Unlock()
	ss := SessionSnapshot{ID: s.id, Principal: s.ownerName, Version: s.version, Created: s.created,
		LastActivity: s.lastSeen, InFlight: len(s.byClient), StreamOpen: s.get != nil, owner: s.owner}
	if at, gone := s.expiryLocked(); !at.IsZero() {
		ss.Expires, ss.Unreachable = &at, gone
	}
	if u.child != nil {
		ss.ChildPid = u.child.Pid()
	}
	return ss
}

// busy counts the session's requests in flight by method into methods,
// and returns how many there are (Busy).
func (s *Session) busy(methods map[string]int) int {
	u := s.up
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for _, cid := range s.byClient {
		if c := u.calls[cid]; c != nil {
			methods[c.method]++
			n++
		}
	}
	return n
}

// drain ends the session's GET stream, if it has one, for Drain: its
// client reconnects elsewhere.
func (s *Session) drain() {
	s.up.mu.Lock()
	get := s.get
	s.up.mu.Unlock()
	if get != nil {
		get.finish()
	}
}
