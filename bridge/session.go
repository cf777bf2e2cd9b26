package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Session is one MCP session. Its state is guarded by its upstream's
// mutex: in per-session mode the upstream is its own child, in shared mode
// the child every session shares.
type Session struct {
	id    string
	owner string // the principal it belongs to (Bridge.Initialize)
	b     *Bridge
	up    *upstream
	log   *slog.Logger

	version   string           // negotiated protocol version
	byClient  map[string]int64 // client id (raw bytes) -> child-side id, in flight
	streams   int64            // streams opened, for stream ids
	lastGET   int64            // id of the latest GET stream
	get       *Stream          // the open GET stream, if any
	posts     map[*Stream]bool // POST streams a client is reading
	queue     [][]byte         // server messages waiting for a stream
	detached  []*Stream        // streams whose client left, kept for the session
	closed    bool
	endReason string // why the session ended, for errors to requests still in flight
	lastSeen  time.Time
	created   time.Time
	ready     bool            // s.up is set; guarded by the bridge's mutex
	logLevel  int             // shared mode: lowest level it wants (index in logLevels); -1: all
	subs      map[string]bool // shared mode: resources it subscribed to
	stateless bool            // one stateless HTTP request's session

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
		id:       id,
		b:        b,
		log:      b.log.With("session", id),
		byClient: make(map[string]int64),
		posts:    make(map[*Stream]bool),
		lastSeen: b.cfg.Now(),
		created:  b.cfg.Now(),
		logLevel: -1,
		subs:     make(map[string]bool),
		done:     make(chan struct{}),
	}
}

// ID is the session id (the Mcp-Session-Id).
func (s *Session) ID() string { return s.id }

// Owner is the principal the session belongs to.
func (s *Session) Owner() string { return s.owner }

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

func (s *Session) isClosed() bool {
	s.up.mu.Lock()
	defer s.up.mu.Unlock()
	return s.closed
}

func (s *Session) touchLocked() { s.lastSeen = s.b.cfg.Now() }

func (s *Session) idleSince(now time.Time) time.Duration {
	s.up.mu.Lock()
	defer s.up.mu.Unlock()
	if s.closed || len(s.byClient) > 0 || s.get != nil || len(s.posts) > 0 {
		return 0
	}
	return now.Sub(s.lastSeen)
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
	var st *Stream
	out := make([][]byte, 0, len(msgs))

	u.mu.Lock()
	if s.closed {
		u.mu.Unlock()
		return nil, ErrSessionNotFound
	}
	child := u.child
	if child == nil {
		u.mu.Unlock()
		return nil, &Error{Kind: KindUnavailable, Code: CodeChildExited, Message: "the MCP server is restarting; try again shortly"}
	}
	s.touchLocked()
	if requests > 0 {
		st = newStream(s, false, requests, jsonOnly)
		st.init = init
		s.posts[st] = true
	}
	for i := range msgs {
		m := &msgs[i]
		switch m.Kind {
		case Request:
			cid := m.ID()
			if _, dup := s.byClient[string(cid)]; dup {
				// Two requests in flight with one id could not be told
				// apart on the way back.
				delete(s.posts, st)
				u.mu.Unlock()
				return nil, invalid(CodeInvalidRequest, "Invalid Request: a request with this id is already in flight", cid)
			}
			if u.shared && !s.forwardLocked(m, st) {
				continue // answered by the bridge
			}
			c := &call{sess: s, clientID: bytes.Clone(cid), st: st, init: init}
			out = append(out, u.register(c, m))
			s.byClient[string(cid)] = u.nextID
		case Notification:
			switch {
			case m.Method == methodCancelled:
				if fwd := s.cancelLocked(m); fwd != nil {
					out = append(out, fwd)
				}
			case m.Method == methodInitialized && u.shared:
				// The shared child was initialized once, by the first
				// session; it hears "initialized" once.
				if !u.initSent {
					u.initSent = true
					out = append(out, m.Raw)
				}
			default:
				out = append(out, m.Raw)
			}
		case Response:
			// An answer to a request the child sent (sampling,
			// elicitation, roots, ping): the child's own id space, so it
			// goes through as it is, from the session it was sent to.
			if u.shared {
				if owner, ok := u.serverReqs[string(m.ID())]; !ok || (owner != s && !s.ephemeral()) {
					s.log.Warn("dropped a response to a request the MCP server did not send to this session", "id", string(m.ID()))
					continue
				}
				delete(u.serverReqs, string(m.ID()))
			}
			out = append(out, m.Raw)
		}
	}
	u.mu.Unlock()
	u.write(child, out)
	return st, nil
}

// forwardLocked handles, for a session on a shared child, the requests
// that change state the child holds for everyone: subscriptions and the
// log level. It reports whether m goes to the child; if not, the bridge
// has answered it on st.
func (s *Session) forwardLocked(m *Message, st *Stream) bool {
	u := s.up
	switch m.Method {
	case "resources/subscribe", "resources/unsubscribe":
		var p struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(m.f.params.of(m.Raw), &p) != nil || p.URI == "" {
			return true // let the child say what is wrong
		}
		if m.Method == "resources/subscribe" {
			s.subs[p.URI] = true
			first := len(u.subs[p.URI]) == 0
			if u.subs[p.URI] == nil {
				u.subs[p.URI] = make(map[*Session]bool)
			}
			u.subs[p.URI][s] = true
			if first {
				return true
			}
		} else {
			delete(s.subs, p.URI)
			delete(u.subs[p.URI], s)
			if len(u.subs[p.URI]) == 0 {
				delete(u.subs, p.URI)
				return true
			}
		}
	case "logging/setLevel":
		var p struct {
			Level string `json:"level"`
		}
		if json.Unmarshal(m.f.params.of(m.Raw), &p) != nil || levelIndex(p.Level) < 0 {
			return true
		}
		s.logLevel = levelIndex(p.Level)
		if lvl := u.childLevelLocked(); lvl != u.level {
			u.level = lvl
			return true
		}
	default:
		return true
	}
	s.answerLocked(&call{st: st}, []byte(`{"jsonrpc":"2.0","id":`+string(m.ID())+`,"result":{}}`))
	return false
}

// childLevelLocked is the most verbose level any session asked for.
func (u *upstream) childLevelLocked() string {
	lowest := -1
	for s := range u.sessions {
		if s.logLevel >= 0 && (lowest < 0 || s.logLevel < lowest) {
			lowest = s.logLevel
		}
	}
	if lowest < 0 {
		return u.level
	}
	return logLevels[lowest]
}

// wantsLog reports whether a log message with these params is at or above
// the session's own level (shared mode; a session that set none gets all).
func (s *Session) wantsLog(params []byte) bool {
	if !s.up.shared || s.logLevel < 0 {
		return true
	}
	var p struct {
		Level string `json:"level"`
	}
	_ = json.Unmarshal(params, &p)
	return levelIndex(p.Level) >= s.logLevel
}

// cancelLocked handles the client's notifications/cancelled: the requestId
// is the client's id, so it is translated to the child's; for an id not in
// flight the notification is dropped ("the receiver MAY ignore" it), never
// forwarded with an id that could name some other request of the child.
func (s *Session) cancelLocked(m *Message) []byte {
	p := m.f.params.of(m.Raw)
	if p == nil || p[0] != '{' {
		return nil
	}
	rs := member(p, "requestId")
	if !rs.ok() {
		if s.up.shared {
			return nil // a task cancellation cannot be attributed on a shared child
		}
		return m.Raw // 2025-11-25 allows cancelling tasks without one
	}
	childID, ok := s.byClient[string(rs.of(p))]
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
	delete(s.up.calls, childID)
	s.doneLocked(c)
	s.answerLocked(c, nil)
	newParams := splice(p, rs, strconv.AppendInt(nil, childID, 10))
	return splice(m.Raw, m.f.params, newParams)
}

// deliverLocked puts a message that relates to no request on one stream:
// the GET stream if open, else an open POST stream, else the queue.
func (s *Session) deliverLocked(msg []byte) {
	if s.closed {
		return
	}
	if s.get != nil && s.get.canCarry() {
		s.get.push(msg, false)
		return
	}
	for st := range s.posts {
		if st.canCarry() {
			st.push(msg, false)
			return
		}
	}
	if len(s.queue) >= s.b.cfg.QueueLimit {
		s.b.stats.QueueDrops.Add(1)
		s.log.Warn("no stream open and the session's queue is full; dropped a server message",
			"queue_limit", s.b.cfg.QueueLimit, "message", string(msg[:min(len(msg), 200)]))
		return
	}
	s.queue = append(s.queue, msg)
}

// answerLocked puts the response to c (nil: none) on its stream, and
// forgets the stream once every response it owes is there.
func (s *Session) answerLocked(c *call, msg []byte) {
	if c.st.push(msg, true) {
		delete(s.posts, c.st)
	}
}

func (s *Session) doneLocked(c *call) {
	delete(s.byClient, string(c.clientID))
}

// OpenStream opens the session's GET stream for server-initiated
// messages. There is at most one (ErrStreamConflict).
func (s *Session) OpenStream() (*Stream, error) {
	s.up.mu.Lock()
	defer s.up.mu.Unlock()
	if s.closed {
		return nil, ErrSessionNotFound
	}
	if s.get != nil {
		return nil, ErrStreamConflict
	}
	st := newStream(s, true, 0, false)
	s.get = st
	s.lastGET = st.id
	s.touchLocked()
	for _, m := range s.queue {
		st.push(m, false)
	}
	s.queue = nil
	return st, nil
}

// Resume reattaches the stream that lastEventID came from, after its
// client lost the connection: a POST stream delivers the messages it kept
// and then whatever is still owed; for the GET stream, it is reopened.
// An id that names no stream this session still holds is an error, not a
// silent gap.
func (s *Session) Resume(lastEventID string) (*Stream, error) {
	sid, _, _ := strings.Cut(lastEventID, "_")
	n, err := strconv.ParseInt(sid, 10, 64)
	if err != nil {
		return nil, invalid(CodeInvalidRequest, "Invalid Last-Event-ID: not an event id of this bridge", nil)
	}
	for try := 0; ; try++ {
		s.up.mu.Lock()
		for i, st := range s.detached {
			if st.id != n {
				continue
			}
			s.detached = append(s.detached[:i], s.detached[i+1:]...)
			st.mu.Lock()
			st.attached = true
			st.gone = make(chan struct{})
			final := st.final
			st.mu.Unlock()
			if !final {
				s.posts[st] = true
			}
			s.up.mu.Unlock()
			st.signal()
			return st, nil
		}
		// The stream may still be attached to its old connection: a
		// client reconnects as soon as it sees the connection drop, often
		// before the server has noticed. Wait for the old handler to let
		// go, briefly, once.
		var old *Stream
		for st := range s.posts {
			if st.id == n {
				old = st
			}
		}
		if s.get != nil && s.get.id == n {
			old = s.get
		}
		wasGET := s.get == nil && n <= s.streams && s.lastGET == n
		s.up.mu.Unlock()
		if wasGET {
			return s.OpenStream()
		}
		if old == nil || try > 0 {
			// Not KindNotFound: a 404 would tell the client its session
			// is gone, and it is not.
			return nil, invalid(CodeInvalidRequest, "Last-Event-ID names no stream this session can resume; its events are gone", nil)
		}
		old.mu.Lock()
		gone := old.gone
		old.mu.Unlock()
		t := time.NewTimer(resumeWait)
		select {
		case <-gone:
		case <-t.C:
		}
		t.Stop()
	}
}

// resumeWait bounds how long a resume waits for the stream's old
// connection to be given up.
const resumeWait = 2 * time.Second

func (s *Session) detach(st *Stream) {
	s.up.mu.Lock()
	defer s.up.mu.Unlock()
	s.touchLocked()
	st.mu.Lock()
	st.attached = false
	if st.gone != nil {
		close(st.gone)
		st.gone = nil
	}
	left := st.msgs
	final := st.final
	if st.get {
		st.msgs = nil
	}
	st.mu.Unlock()
	if st.get {
		if s.get == st {
			s.get = nil
		}
		// What the client did not take goes back, in order, to wait for
		// the next stream.
		s.queue = append(left, s.queue...)
		return
	}
	delete(s.posts, st)
	if !final || len(left) > 0 {
		// Responses still to come, or not yet read: keep them for the
		// session (a resuming client can fetch them), never elsewhere.
		s.detached = append(s.detached, st)
		if len(s.detached) > DefaultKeepDetached {
			s.detached = s.detached[1:]
		}
	}
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
	if s.up.shared {
		s.end()
		return
	}
	s.up.stop(ctx)
	<-s.done
}

// end closes the session: its streams finish, and on a shared child its
// subscriptions and log level are withdrawn. Requests still in flight have
// been answered (per-session: by watch) or their answers will be dropped.
func (s *Session) end() {
	s.endOnce.Do(func() {
		s.b.remove(s)
		u := s.up
		u.mu.Lock()
		s.closed = true
		delete(u.sessions, s)
		var lines [][]byte
		if u.shared {
			for uri := range s.subs {
				delete(u.subs[uri], s)
				if len(u.subs[uri]) == 0 {
					delete(u.subs, uri)
					p, _ := json.Marshal(map[string]string{"uri": uri})
					lines = append(lines, u.ownRequestLocked("resources/unsubscribe", p))
				}
			}
			if lvl := u.childLevelLocked(); lvl != u.level && s.logLevel >= 0 {
				u.level = lvl
				p, _ := json.Marshal(map[string]string{"level": lvl})
				lines = append(lines, u.ownRequestLocked("logging/setLevel", p))
			}
			for id, sess := range u.serverReqs {
				if sess == s {
					delete(u.serverReqs, id)
				}
			}
		}
		streams := make([]*Stream, 0, len(s.posts)+1)
		for st := range s.posts {
			streams = append(streams, st)
		}
		if s.get != nil {
			streams = append(streams, s.get)
		}
		child := u.child
		reason := s.endReason
		retire := u.identity != "" && len(u.sessions) == 0 && !u.stopping
		if retire {
			u.stopping = true // no session joins a child on its way out
		}
		u.mu.Unlock()
		if retire {
			s.b.wg.Add(1)
			go func() { defer s.b.wg.Done(); s.b.retire(u) }()
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
		close(s.done)
	})
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
