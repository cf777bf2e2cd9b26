package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/stdio"
)

// Session is one MCP session and the child process that serves it.
type Session struct {
	id    string
	b     *Bridge
	log   *slog.Logger
	child *stdio.Child

	mu        sync.Mutex
	version   string           // negotiated protocol version
	calls     map[int64]*call  // in flight, by child-side id
	byClient  map[string]int64 // client id (raw bytes) -> child-side id
	tokens    map[string]*call // progress token (raw bytes) -> call
	nextID    int64
	streams   int64            // streams opened, for stream ids
	lastGET   int64            // id of the latest GET stream
	get       *Stream          // the open GET stream, if any
	posts     map[*Stream]bool // POST streams a client is reading
	queue     [][]byte         // server messages waiting for a stream
	detached  []*Stream        // streams whose client left, kept for the session
	initDone  bool             // initialize was sent
	closed    bool
	stopping  bool   // the bridge asked the child to stop
	endReason string // why the session ended, for errors to requests still in flight
	lastSeen  time.Time
	done      chan struct{}
}

// call is one client request in flight on the child.
type call struct {
	clientID []byte // byte for byte as the client sent it
	token    []byte // its progress token, if any
	st       *Stream
	init     bool // the initialize request
}

func newSession(b *Bridge, id string) *Session {
	return &Session{
		id:       id,
		b:        b,
		log:      b.log.With("session", id),
		calls:    make(map[int64]*call),
		byClient: make(map[string]int64),
		tokens:   make(map[string]*call),
		posts:    make(map[*Stream]bool),
		lastSeen: b.cfg.Now(),
		done:     make(chan struct{}),
	}
}

// ID is the session id (the Mcp-Session-Id).
func (s *Session) ID() string { return s.id }

// Done is closed when the session has ended and its child is reaped.
func (s *Session) Done() <-chan struct{} { return s.done }

// ChildPid is the pid of the session's child.
func (s *Session) ChildPid() int { return s.child.Pid() }

// Version is the protocol version the child negotiated ("" before the
// InitializeResult has passed).
func (s *Session) Version() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version
}

func (s *Session) start() error {
	opts := s.b.childOptions(s.log)
	opts.OnMessage = s.fromChild
	opts.OnOversize = s.oversize
	c, err := stdio.Start(opts)
	if err != nil {
		return err
	}
	s.child = c
	s.log.Info("child started", "child_pid", c.Pid(), "command", s.b.cfg.Command[0])
	return nil
}

func (s *Session) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *Session) idleSince(now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(s.calls) > 0 || s.get != nil || len(s.posts) > 0 {
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
	var st *Stream
	out := make([][]byte, 0, len(msgs))

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrSessionNotFound
	}
	s.lastSeen = s.b.cfg.Now()
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
				s.unregisterLocked(st)
				s.mu.Unlock()
				return nil, invalid(CodeInvalidRequest, "Invalid Request: a request with this id is already in flight", cid)
			}
			s.nextID++
			childID := s.nextID
			c := &call{clientID: bytes.Clone(cid), st: st, init: init}
			if tok := progressToken(m.Raw, m.f.params); tok != nil {
				c.token = bytes.Clone(tok)
				s.tokens[string(tok)] = c
			}
			s.calls[childID] = c
			s.byClient[string(cid)] = childID
			out = append(out, splice(m.Raw, m.f.id, strconv.AppendInt(nil, childID, 10)))
		case Notification:
			if m.Method == methodCancelled {
				if fwd := s.cancelLocked(m); fwd != nil {
					out = append(out, fwd)
				}
				continue
			}
			out = append(out, m.Raw)
		case Response:
			// An answer to a request the child sent (sampling,
			// elicitation, roots, ping): the child's own id space, so it
			// goes through as it is.
			out = append(out, m.Raw)
		}
	}
	s.mu.Unlock()

	for _, msg := range out {
		if err := s.child.Write(msg); err != nil {
			// The child is gone or going: watch() fails what is in
			// flight, with its exit status, as soon as it is reaped.
			s.log.Warn("write to child failed", "err", err)
			break
		}
	}
	return st, nil
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
		return m.Raw // 2025-11-25 allows cancelling tasks without one
	}
	childID, ok := s.byClient[string(rs.of(p))]
	if !ok {
		return nil
	}
	c := s.calls[childID]
	if c.init {
		return nil // "initialize MUST NOT be cancelled"
	}
	// "The sender of the cancellation notification SHOULD ignore any
	// response to the request that arrives afterward": the call is
	// settled now, and its stream ends without a response.
	s.doneLocked(childID, c)
	s.answerLocked(c, nil)
	newParams := splice(p, rs, strconv.AppendInt(nil, childID, 10))
	return splice(m.Raw, m.f.params, newParams)
}

// fromChild routes one message the child wrote. It runs on the child's
// reader goroutine, so it never blocks on a client.
func (s *Session) fromChild(line []byte) {
	if !json.Valid(line) {
		s.log.Warn("child wrote invalid JSON; skipped it", "line", string(line[:min(len(line), 200)]))
		return
	}
	if line[0] == '[' { // a 2025-03-26 child may batch
		for i := 1; i < len(line) && line[i] != ']'; {
			end := skipValue(line, i)
			s.fromChild(line[i:end])
			i = skipSpace(line, end)
			if i < len(line) && line[i] == ',' {
				i = skipSpace(line, i+1)
			}
		}
		return
	}
	f, err := scanFields(line)
	if err != nil {
		s.log.Warn("child wrote a message that is not an object; skipped it")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastSeen = s.b.cfg.Now()
	if !f.method.ok() {
		s.responseLocked(line, f)
		return
	}
	msg := bytes.Clone(line)
	method := f.method.of(line)
	// Progress goes to the stream of the request that carried the token.
	if string(method) == `"`+methodProgress+`"` {
		if c := s.tokens[string(member(f.params.of(line), "progressToken").of(f.params.of(line)))]; c != nil && c.st.canCarry() {
			c.st.push(msg, false)
			return
		}
	}
	// A request of the child's (sampling, elicitation, roots, ping) or a
	// log message, while exactly one request is in flight, relates to that
	// request: stdio gives no other hint, and one in flight is unambiguous.
	if f.id.ok() || string(method) == `"`+methodLogMessage+`"` {
		if len(s.calls) == 1 {
			for _, c := range s.calls {
				if c.st.canCarry() {
					c.st.push(msg, false)
					return
				}
			}
		}
	}
	s.deliverLocked(msg)
}

// deliverLocked puts a message that relates to no request on one stream:
// the GET stream if open, else an open POST stream, else the queue.
func (s *Session) deliverLocked(msg []byte) {
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

func (s *Session) responseLocked(line []byte, f fields) {
	childID, err := strconv.ParseInt(string(f.id.of(line)), 10, 64)
	c := s.calls[childID]
	if err != nil || c == nil {
		if err == nil && childID > 0 && childID <= s.nextID {
			// A late answer to a request the client cancelled.
			s.log.Debug("dropped the response to a cancelled request", "child_id", childID)
			return
		}
		s.b.stats.UnroutableDrops.Add(1)
		s.log.Warn("child answered an id nobody asked; dropped it", "id", string(f.id.of(line)))
		return
	}
	s.doneLocked(childID, c)
	if c.init {
		s.initializedLocked(line, f)
	}
	s.answerLocked(c, splice(line, f.id, c.clientID))
}

// answerLocked puts the response to c (nil: none) on its stream, and
// forgets the stream once every response it owes is there.
func (s *Session) answerLocked(c *call, msg []byte) {
	if c.st.push(msg, true) {
		delete(s.posts, c.st)
	}
}

func (s *Session) doneLocked(childID int64, c *call) {
	delete(s.calls, childID)
	delete(s.byClient, string(c.clientID))
	if c.token != nil && s.tokens[string(c.token)] == c {
		delete(s.tokens, string(c.token))
	}
}

// initializedLocked records the negotiated version from the InitializeResult.
func (s *Session) initializedLocked(line []byte, f fields) {
	s.initDone = true
	if !f.result.ok() {
		return
	}
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(f.result.of(line), &r); err == nil {
		s.version = r.ProtocolVersion
	}
	s.log.Info("session initialized", "protocol_version", s.version)
}

// oversize fails the request whose response was over the line cap.
func (s *Session) oversize(o stdio.Oversize) {
	s.b.stats.OversizeLines.Add(1)
	id := idFromOversize(o.Head, o.Tail)
	childID, err := strconv.ParseInt(string(id), 10, 64)
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls[childID]
	if id == nil || err != nil || c == nil {
		s.log.Warn("dropped an oversize message from the child that answers no request", "bytes", o.Size)
		return
	}
	s.doneLocked(childID, c)
	msg := fmt.Sprintf("the MCP server's response (%d bytes) is over the bridge's message size limit (%d bytes); raise --max-message-bytes", o.Size, s.b.cfg.maxLine())
	s.answerLocked(c, errorResponse(c.clientID, CodeResponseTooLarge, msg, nil))
}

func (c *Config) maxLine() int {
	if c.MaxLineBytes > 0 {
		return c.MaxLineBytes
	}
	return stdio.DefaultMaxLineBytes
}

// OpenStream opens the session's GET stream for server-initiated
// messages. There is at most one (ErrStreamConflict).
func (s *Session) OpenStream() (*Stream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrSessionNotFound
	}
	if s.get != nil {
		return nil, ErrStreamConflict
	}
	st := newStream(s, true, 0, false)
	s.get = st
	s.lastGET = st.id
	s.lastSeen = s.b.cfg.Now()
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
	s.mu.Lock()
	for i, st := range s.detached {
		if st.id != n {
			continue
		}
		s.detached = append(s.detached[:i], s.detached[i+1:]...)
		st.mu.Lock()
		st.attached = true
		final := st.final
		st.mu.Unlock()
		if !final {
			s.posts[st] = true
		}
		s.mu.Unlock()
		st.signal()
		return st, nil
	}
	wasGET := s.get == nil && n <= s.streams && s.lastGET == n
	s.mu.Unlock()
	if wasGET {
		return s.OpenStream()
	}
	// Not KindNotFound: a 404 would tell the client its session is gone,
	// and it is not.
	return nil, invalid(CodeInvalidRequest, "Last-Event-ID names no stream this session can resume; its events are gone", nil)
}

// unregisterLocked forgets a POST stream (on a refused request).
func (s *Session) unregisterLocked(st *Stream) {
	if st != nil {
		delete(s.posts, st)
	}
}

func (s *Session) detach(st *Stream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastSeen = s.b.cfg.Now()
	st.mu.Lock()
	st.attached = false
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

// Close ends the session at the client's request (DELETE): the child is
// stopped with the graceful sequence. It returns once the child is reaped.
func (s *Session) Close() {
	s.stop(context.Background(), "the session was deleted")
}

// stop ends the session and stops its child.
func (s *Session) stop(ctx context.Context, reason string) {
	s.mu.Lock()
	if s.endReason == "" {
		s.endReason = reason
	}
	s.stopping = true
	s.mu.Unlock()
	s.b.remove(s) // from now on its id is 404
	if err := s.child.Stop(ctx); err != nil {
		s.log.Warn("child did not stop in time; killed its group", "err", err)
		s.child.Kill()
	}
	<-s.done
}

// watch ends the session when its child exits, for whatever reason: every
// request in flight fails at once with the exit status and the last lines
// of stderr.
func (s *Session) watch() {
	defer close(s.done)
	<-s.child.Done()
	err := s.child.Err()
	tail := s.child.StderrTail()
	s.b.remove(s)

	s.mu.Lock()
	s.closed = true
	reason, stopping := s.endReason, s.stopping
	status := exitStatus(err)
	if reason == "" {
		reason = "the MCP server process exited (" + status + ")"
	}
	for childID, c := range s.calls {
		s.doneLocked(childID, c)
		data := map[string]any{"exitStatus": status}
		if len(tail) > 0 {
			data["stderr"] = strings.Join(tail, "\n")
		}
		s.answerLocked(c, errorResponse(c.clientID, CodeChildExited, reason, data))
	}
	streams := make([]*Stream, 0, len(s.posts)+1)
	for st := range s.posts {
		streams = append(streams, st)
	}
	if s.get != nil {
		streams = append(streams, s.get)
	}
	s.mu.Unlock()
	for _, st := range streams {
		st.finish()
	}

	s.b.stats.SessionsEnded.Add(1)
	if stopping {
		s.b.stats.ChildrenExitedOK.Add(1)
		s.log.Info("session ended", "reason", reason, "child_exit", status)
	} else {
		s.b.stats.ChildrenCrashed.Add(1)
		s.log.Warn("child exited; session ended", "child_exit", status, "stderr_tail", tail)
	}
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
