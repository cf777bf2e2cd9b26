// Package endpoint serves the aggregate: one MCP server made of several,
// as a bridge.Server that the transports of httpapi serve at /mcp. A
// client session of it holds one bridge session per server, each started
// on its first use (never at initialize), each on its server's own bridge
// and so in its server's own mode (per-session, shared, per-identity);
// package aggregate decides the names, merges the lists and rewrites what
// passes between the client and the servers. It never imports net/http.
package endpoint

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-bridge/mcp-bridge/aggregate"
	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// Options configure a Server. Names and Bridge are required.
type Options struct {
	// Names are the aggregate's names (SetNames replaces them on a
	// reload; sessions begun before keep theirs).
	Names *aggregate.Names
	// Bridge is the bridge that serves server now, nil when none does
	// (removed, or not started): its tools then answer that it is down.
	// A server restarted by a reload has a new bridge, on which each
	// session starts a new session of its own at its next use.
	Bridge func(server string) *bridge.Bridge
	// Allowed, if set, is the tool filter of the principal ctx carries
	// (Initialize's), on exposed names: tools it refuses are not listed.
	Allowed func(ctx context.Context) func(exposed string) bool
	// Private says lists may differ per principal (2026-07-28
	// cacheScope).
	Private bool
	// ListTimeout is how long a list waits for each server. Default 3 s.
	ListTimeout time.Duration
	// CursorKey keys the lists' cursors; default a random key.
	CursorKey []byte
	// IdleTimeout ends a session with no request for that long and no
	// GET stream open, with its servers' sessions. Default
	// bridge.DefaultIdleTimeout; negative: never.
	IdleTimeout time.Duration
	// Hub passes list changes to every session; default a Hub of its
	// own (Server.Hub).
	Hub *aggregate.Hub
	// Stats count what the catalog and tables see; default its own.
	Stats *aggregate.Stats
	// Listed, if set, is given each page of a list a server answered the
	// aggregate (its result object, in the server's own names), in
	// either era: httpapi teaches the server's approval catalog its
	// tools' annotations from them, as it does from the lists its own
	// endpoint relays.
	Listed func(server, method string, result json.RawMessage)
	// Logger is the logger. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock of idle expiry. Default time.Now.
	Now func() time.Time
}

// maxModernCalls bounds the 2026-07-28 requests in flight through the
// aggregate, of all its clients together.
const maxModernCalls = 1 << 16

// DefaultListTimeout is Options.ListTimeout's default.
const DefaultListTimeout = 3 * time.Second

// Server is the aggregate as a transport serves it.
type Server struct {
	o      Options
	names  atomic.Pointer[aggregate.Names]
	modern *aggregate.Table // the 2026-07-28 requests' (modern.go)

	mu       sync.Mutex
	sessions map[string]*Session
	known    map[*bridge.Bridge]json.RawMessage // each bridge's InitializeResult, once learnt
	problems map[string][]aggregate.Problem     // by list method, as the last list found them
	closed   bool
	draining bool          // Drain: no new session
	stop     chan struct{} // closed by Close: the janitor ends
	wg       sync.WaitGroup
}

// New is a Server over opts' servers; Close ends it.
func New(opts Options) *Server {
	opts.ListTimeout = cmp.Or(opts.ListTimeout, DefaultListTimeout)
	opts.IdleTimeout = cmp.Or(opts.IdleTimeout, bridge.DefaultIdleTimeout)
	if opts.Hub == nil {
		opts.Hub = &aggregate.Hub{}
	}
	if opts.Stats == nil {
		opts.Stats = &aggregate.Stats{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.CursorKey == nil {
		opts.CursorKey = []byte(bridge.NewID() + bridge.NewID())
	}
	s := &Server{o: opts, sessions: map[string]*Session{}, known: map[*bridge.Bridge]json.RawMessage{},
		problems: map[string][]aggregate.Problem{}, stop: make(chan struct{})}
	s.names.Store(opts.Names)
	// Every 2026-07-28 request in flight, of every client, is in it.
	s.modern = aggregate.NewTable(opts.Names, aggregate.TableOptions{Stats: opts.Stats, MaxCalls: maxModernCalls})
	if opts.IdleTimeout > 0 {
		s.wg.Add(1)
		go s.janitor()
	}
	return s
}

// Hub is what a server's change is signalled to.
func (s *Server) Hub() *aggregate.Hub { return s.o.Hub }

// Stats are the aggregate's counters.
func (s *Server) Stats() *aggregate.Stats { return s.o.Stats }

// Names are the aggregate's names now.
func (s *Server) Names() *aggregate.Names { return s.names.Load() }

// SetNames replaces the names (a reload), in every session too, and
// tells every session that its lists may have changed.
func (s *Server) SetNames(n *aggregate.Names) {
	s.mu.Lock()
	s.names.Store(n)
	s.modern.SetNames(n)
	for _, ss := range s.sessions {
		ss.table.SetNames(n)
		ss.cat.SetNames(n)
	}
	s.mu.Unlock()
	s.o.Hub.Signal(aggregate.AllChanged)
}

// Problems are the entries the aggregate's lists dropped, as the last
// list of each kind found them, sorted by server and name.
func (s *Server) Problems() []aggregate.Problem {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []aggregate.Problem
	for _, ps := range s.problems {
		out = append(out, ps...)
	}
	slices.SortFunc(out, func(a, b aggregate.Problem) int {
		return cmp.Or(strings.Compare(a.Server, b.Server), strings.Compare(a.Name, b.Name))
	})
	return out
}

func (s *Server) noteProblems(method string, ps []aggregate.Problem) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.problems[method] = ps
}

// Len is the number of sessions.
func (s *Server) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// Drain prepares a shutdown: no new session starts, and every GET
// stream ends (its client reconnects elsewhere, or not at all), so that
// the HTTP server's shutdown does not wait for them.
func (s *Server) Drain() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.draining = true
	for _, ss := range s.sessions {
		ss.get.end()
	}
}

// Close ends every session (their servers' sessions with them) and
// waits for their goroutines.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	close(s.stop)
	all := make([]*Session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		all = append(all, ss)
	}
	s.mu.Unlock()
	for _, ss := range all {
		ss.Close()
	}
	s.wg.Wait()
}

// janitor ends idle sessions: a client that went without DELETE must not
// keep a child per server running. It ends with Close.
func (s *Server) janitor() {
	defer s.wg.Done()
	t := time.NewTicker(min(s.o.IdleTimeout/2, time.Minute))
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		now := s.o.Now()
		s.mu.Lock()
		var idle []*Session
		for _, ss := range s.sessions {
			if ss.idleSince(now) > s.o.IdleTimeout {
				idle = append(idle, ss)
			}
		}
		s.mu.Unlock()
		for _, ss := range idle {
			s.o.Logger.Info("aggregate session idle: ended", "session", ss.id)
			ss.Close()
		}
	}
}

// Conn finds the live session id of owner's.
func (s *Server) Conn(id, owner string) (bridge.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[id]
	if ss == nil || ss.owner.Key != owner {
		return nil, bridge.ErrSessionNotFound
	}
	return ss, nil
}

// Stateless refuses a 2025 request of stateless serving: a session of the
// aggregate holds a session per server, which a request of its own would
// start and end every time, for every server a list needs. Served
// stateless, the aggregate takes 2026-07-28 requests only (modern.go),
// which need no session.
func (s *Server) Stateless(context.Context, *bridge.Message) (bridge.Conn, []byte, error) {
	return nil, nil, &bridge.Error{Kind: bridge.KindInvalid, Code: bridge.CodeInvalidRequest,
		Message: "this aggregate endpoint is served stateless (--stateless with --aggregate): it takes MCP 2026-07-28 requests only, " +
			"since a 2025 session of it holds a session per server; send protocol version 2026-07-28, or use a server's own endpoint, /servers/NAME/mcp"}
}

// Initialize starts a client session. No server's session starts here:
// each starts at the first request that needs it. What the servers can do
// is what their InitializeResults said, learnt once per bridge (a probe
// session, ended at once, for a bridge not yet seen).
func (s *Server) Initialize(ctx context.Context, req bridge.InitRequest) (bridge.Conn, bridge.Reader, error) {
	var init struct {
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(req.Message.Raw, &init); err != nil || len(init.Params) == 0 {
		init.Params = json.RawMessage(`{}`)
	}
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(init.Params, &p)
	version := p.ProtocolVersion
	if !bridge.KnownVersion(version) {
		version = bridge.Versions[len(bridge.Versions)-1]
	}
	names := s.names.Load()
	results := s.learn(ctx, names, req)
	ss := newSession(s, names, req, init.Params, version)
	ss.form = bridge.DeclaresFormElicitation(req.Message.Param("capabilities"))
	if s.o.Allowed != nil {
		ss.allowed = s.o.Allowed(ctx)
	}
	s.mu.Lock()
	if s.closed || s.draining {
		s.mu.Unlock()
		ss.Close()
		return nil, nil, bridge.ErrClosing
	}
	s.sessions[ss.id] = ss
	if n := s.names.Load(); n != names {
		// A reload between the names read above and now.
		ss.table.SetNames(n)
		ss.cat.SetNames(n)
	}
	s.mu.Unlock()
	rd := newReply(1)
	rd.push(initializeAnswer(req.Message.ID(), version, names.Servers(), results), true)
	return ss, rd, nil
}

func (s *Server) forget(ss *Session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions[ss.id] == ss {
		delete(s.sessions, ss.id)
	}
}

// learn is each server's InitializeResult: learnt once per bridge, by a
// session started and ended at once, in parallel, within ListTimeout (a
// server that misses it is left out of this initialize's merge, and
// asked again at the next).
func (s *Server) learn(ctx context.Context, names *aggregate.Names, req bridge.InitRequest) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(ctx, s.o.ListTimeout)
	defer cancel()
	for _, name := range names.Servers() {
		b := s.o.Bridge(name)
		if b == nil {
			continue
		}
		s.mu.Lock()
		res, ok := s.known[b]
		s.mu.Unlock()
		if ok {
			out[name] = res
			continue
		}
		wg.Go(func() {
			res, err := probe(ctx, b, req)
			if err != nil {
				s.o.Logger.Warn("server left out of the aggregate's initialize", "server", name, "err", err)
				return
			}
			s.remember(b, res)
			mu.Lock()
			out[name] = res
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

func (s *Server) remember(b *bridge.Bridge, res json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.known) > 1024 {
		clear(s.known) // bridges replaced by reloads: forget the old ones
	}
	s.known[b] = res
}

// probe starts a session on b, reads its InitializeResult and ends it.
func probe(ctx context.Context, b *bridge.Bridge, req bridge.InitRequest) (json.RawMessage, error) {
	conn, res, err := startSession(ctx, bridge.ServerOf(b), req.Message, req.Owner, req.Env)
	if conn != nil {
		conn.Close()
	}
	return res, err
}

// initializeAnswer is the aggregate's InitializeResult answering id: the
// capabilities any server offers, the announcements of list changes the
// aggregate makes itself, and the servers' instructions headed by server.
func initializeAnswer(id []byte, version string, servers []string, results map[string]json.RawMessage) []byte {
	caps := map[string]map[string]any{}
	var instr []string
	for _, name := range servers {
		var r struct {
			Capabilities map[string]map[string]any `json:"capabilities"`
			Instructions string                    `json:"instructions"`
		}
		if json.Unmarshal(results[name], &r) != nil {
			continue
		}
		for k, v := range r.Capabilities {
			if k == "experimental" {
				continue // each server's own: no meaning for the aggregate
			}
			c := caps[k]
			if c == nil {
				c = map[string]any{}
				caps[k] = c
			}
			for kk, vv := range v {
				if b, ok := vv.(bool); ok {
					old, _ := c[kk].(bool)
					c[kk] = old || b
				} else if _, ok := c[kk]; !ok {
					c[kk] = vv
				}
			}
		}
		if strings.TrimSpace(r.Instructions) != "" {
			instr = append(instr, "## "+name+"\n\n"+strings.TrimSpace(r.Instructions))
		}
	}
	// The aggregate announces its own list changes (a server's, a server
	// down or back, a reload).
	for _, k := range []string{"tools", "prompts", "resources"} {
		if c := caps[k]; c != nil {
			c["listChanged"] = true
		}
	}
	result := map[string]any{
		"protocolVersion": version,
		"capabilities":    caps,
		"serverInfo":      map[string]string{"name": "mcp-bridge-aggregate", "title": "mcp-bridge: " + strings.Join(servers, ", "), "version": "1"},
	}
	if len(instr) > 0 {
		result["instructions"] = "This server is made of several, each tool's and prompt's name prefixed with its server's (SERVER__NAME).\n\n" + strings.Join(instr, "\n\n")
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "result": result})
	return b
}
