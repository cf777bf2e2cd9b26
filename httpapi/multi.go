package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// Mounts serves several MCP servers from one listener, each on a bridge of
// its own under /servers/{name}/: its MCP endpoint at /servers/{name}/mcp,
// its legacy SSE endpoints beside it, its readiness and metrics at
// /servers/{name}/readyz and /servers/{name}/metrics. /readyz and
// /metrics are the whole set's: every server's metrics, each labelled with
// its server, in one scrape. Apply (or Stage, then Commit or Rollback)
// replaces the whole set in one step, so a request sees the old set or
// the new one, never half of each. A server whose settings did not change
// keeps its bridge, and so its sessions and children; the bridges of
// removed and changed servers are drained and closed in the background.
// With ServeRegistry, it serves the registry API too (registry.go).
type Mounts struct {
	opts   MountsOptions
	router http.Handler

	// set is the served map, replaced whole, never modified: requests
	// read it without a lock. absent says why a server not served is
	// not (StageOptions.Absent), likewise.
	set    atomic.Pointer[map[string]*mount]
	absent atomic.Pointer[map[string]string]

	registry atomic.Pointer[registryAPI]    // the registry API, once served (ServeRegistry)
	agg      atomic.Pointer[aggregateMount] // the aggregate endpoint, once served (ServeAggregate)

	mu       sync.Mutex // serialises Stage, Commit, Rollback, Apply, Drain and Close
	closing  bool
	staged   *Staged        // a change served but not committed yet
	retiring sync.WaitGroup // one per retire goroutine
}

// MountsOptions configures Mounts. The zero value works.
type MountsOptions struct {
	// DrainTimeout is how long the requests in flight on a removed or
	// changed server (POSTs and DELETEs; its streams end at once) may
	// take before its children are stopped, which answers what is left
	// with a JSON-RPC error. Default 10 s.
	DrainTimeout time.Duration
	// StopTimeout bounds the stopping of those children, each with the
	// graceful stop sequence; children left when it ends are killed.
	// Default 5 s.
	StopTimeout time.Duration
	// Logger is the logger. Default slog.Default().
	Logger *slog.Logger
	// Web, when set, serves the web page at / for every server (see
	// mountsWeb).
	Web *MountsWeb
	// AllowedOrigins and LoopbackOnly are the Origin and Host checks of
	// Options (the DNS-rebinding defence), applied to every path of the
	// listener, the web page and /healthz included, before any server's
	// own. An invalid origin pattern allows no origin but loopback ones.
	AllowedOrigins []string
	LoopbackOnly   bool
	// MetricsAuth, if set, guards /metrics, every server's metrics
	// labelled by server, as Options.MetricsAuth does a server's own
	// (/servers/NAME/metrics, which each server's Options guard).
	MetricsAuth auth.Verifier
	// MetricsPublic opens /metrics when MetricsAuth is nil though a
	// server's clients must authenticate (Options.MetricsPublic).
	MetricsPublic bool
	// Approvals, if set, serves the operators' channel of the approval
	// engine every server holds calls on, at ApprovalsPath, and counts
	// it in /metrics.
	Approvals *ApprovalsAPI
}

// MountSpec is one server of the set given to Apply.
type MountSpec struct {
	// Name is the server's path segment; ValidServerName must accept it.
	Name string
	// Fingerprint stands for every setting of the server: a server whose
	// fingerprint equals the served one's is left alone, any other
	// fingerprint restarts it.
	Fingerprint string
	// Bridge configures the server's bridge.
	Bridge bridge.Config
	// HTTP configures its endpoint. Apply sets Bridge and the paths
	// (Path to MountPath(Name), the legacy paths beside it).
	HTTP Options
}

// Changes say what an Apply did, by server name, each list sorted.
type Changes struct {
	Added     []string `json:"added,omitempty"`
	Removed   []string `json:"removed,omitempty"`
	Restarted []string `json:"restarted,omitempty"`
	Unchanged []string `json:"unchanged,omitempty"`
}

var serverName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidServerName reports whether name can name a server: 1 to 64 ASCII
// letters, digits, '-' and '_', so it is one path segment as it stands.
func ValidServerName(name string) bool { return serverName.MatchString(name) }

// MountPath is the path of the MCP endpoint of the server name.
func MountPath(name string) string { return "/servers/" + name + "/mcp" }

// mount is one served server.
type mount struct {
	name        string
	fingerprint string
	b           *bridge.Bridge
	h           http.Handler
	metrics     *metrics // its endpoint's, which the set's /metrics gathers
	opts        Options  // its endpoint's (the aggregate reads its tool policy and approval rules)
	auth        bool     // the server's endpoint requires a token
	legacy      bool     // it serves the legacy SSE endpoints too
	stateless   bool

	mu       sync.Mutex
	inFlight int           // POSTs and DELETEs being served
	retired  bool          // no longer served: enter fails
	idle     chan struct{} // closed once retired and nothing is in flight
	stopped  chan struct{} // closed once retired and its bridge is closed
}

// enter admits a request, counting it unless it is a stream (GET); false
// once the mount is retired.
func (mt *mount) enter(count bool) bool {
	mt.mu.Lock()
	defer mt.mu.Unlock()
	if mt.retired {
		return false
	}
	if count {
		mt.inFlight++
	}
	return true
}

func (mt *mount) leave() {
	mt.mu.Lock()
	defer mt.mu.Unlock()
	mt.inFlight--
	if mt.retired && mt.inFlight == 0 {
		close(mt.idle)
	}
}

// retire refuses new requests; the channel closes once those in flight
// are done.
func (mt *mount) retire() <-chan struct{} {
	mt.mu.Lock()
	defer mt.mu.Unlock()
	mt.retired = true
	if mt.inFlight == 0 {
		close(mt.idle)
	}
	return mt.idle
}

// NewMounts returns an empty set; Apply fills it.
func NewMounts(opts MountsOptions) *Mounts {
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = 10 * time.Second
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	m := &Mounts{opts: opts}
	m.set.Store(&map[string]*mount{})
	m.absent.Store(&map[string]string{})

	r := chi.NewRouter()
	r.Use(middleware.Recoverer)
	// The page and its feed live here, outside every server's handler: a
	// rebinding page must meet the same checks here as at an endpoint.
	origins, err := newOriginMatcher(opts.AllowedOrigins)
	if err != nil {
		opts.Logger.Error("invalid --allow-origin: allowing loopback origins only", "err", err)
		origins, _ = newOriginMatcher(nil)
	}
	r.Use(guard{origins: origins, loopbackOnly: opts.LoopbackOnly, refused: newOriginLog(opts.Logger, time.Now)}.middleware)
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
	r.Get("/readyz", m.readyz)
	r.Head("/readyz", m.readyz)
	scrape := m.metricsHandler()
	r.Get("/metrics", scrape)
	r.Head("/metrics", scrape)
	r.Handle("/servers/{name}/*", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := chi.URLParam(r, "name")
		switch rest := chi.URLParam(r, "*"); rest {
		case "readyz", "metrics", "status":
			// The server's own /readyz, /metrics and /status, which
			// its handler answers at the root.
			r = withPath(r, "/"+rest)
		}
		m.dispatch(w, r, name)
	}))
	// The protected-resource metadata of a server's endpoint is at the
	// endpoint's path under prmPath (RFC 9728 section 3.1), after any
	// prefix of --public-url.
	r.Get(prmPath+"/*", func(w http.ResponseWriter, r *http.Request) {
		seg := strings.Split(chi.URLParam(r, "*"), "/")
		if n := len(seg); n >= 3 && seg[n-3] == "servers" && seg[n-1] == "mcp" {
			m.dispatch(w, r, seg[n-2])
			return
		}
		notFound(w)
	})
	// The registry API (registry.go), once ServeRegistry is called.
	r.Handle("/admin/*", http.HandlerFunc(m.serveRegistry))
	if opts.Approvals != nil && opts.Approvals.Engine != nil {
		// The operators' channel (approvals.go), one for every server.
		api := newApprovalsAPI(*opts.Approvals, resourceURL{}, nil)
		r.Handle(ApprovalsPath, api)
		r.Handle(ApprovalsPath+"/*", api)
	}
	if opts.Web != nil {
		m.mountWeb(r, opts.Web)
	}
	r.NotFound(func(w http.ResponseWriter, _ *http.Request) { notFound(w) })
	m.router = r
	return m
}

func notFound(w http.ResponseWriter) {
	writeError(w, &httpError{status: http.StatusNotFound, code: bridge.CodeInvalidRequest, msg: "Not Found"})
}

// withPath is r for another path, with no routing state: the server's
// own router routes it from scratch.
func withPath(r *http.Request, path string) *http.Request {
	u := *r.URL
	u.Path, u.RawPath = path, ""
	r2 := r.WithContext(r.Context())
	r2.URL = &u
	return r2
}

func (m *Mounts) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if am := m.agg.Load(); am != nil && am.paths[r.URL.Path] {
		am.h.ServeHTTP(w, r)
		return
	}
	m.router.ServeHTTP(w, r)
}

// dispatch hands r to the server name. A mount retired between the
// lookup and enter has been replaced already: the second lookup finds its
// successor, or nothing.
func (m *Mounts) dispatch(w http.ResponseWriter, r *http.Request, name string) {
	// The server's router must route r from scratch, not resume ours.
	r = r.WithContext(context.WithValue(r.Context(), chi.RouteCtxKey, (*chi.Context)(nil)))
	count := r.Method != http.MethodGet
	for range 2 {
		mt := (*m.set.Load())[name]
		if mt == nil {
			break
		}
		if mt.enter(count) {
			if count {
				defer mt.leave()
			}
			mt.h.ServeHTTP(w, r)
			return
		}
	}
	msg := "Not Found: no such server"
	if why, ok := (*m.absent.Load())[name]; ok {
		// A server that was removed or is disabled says so: its clients
		// should stop retrying, not look for a typo.
		msg = "Not Found: " + why
	}
	writeError(w, &httpError{status: http.StatusNotFound, code: bridge.CodeInvalidRequest, msg: msg})
}

// Endpoints are the URL paths the server name is served at, for people:
// its MCP endpoint, then its legacy HTTP+SSE stream when it has one. Nil
// when no such server is served.
func (m *Mounts) Endpoints(name string) []Endpoint {
	mt := (*m.set.Load())[name]
	if mt == nil {
		return nil
	}
	eps := []Endpoint{{"MCP endpoint", MountPath(name)}}
	if mt.legacy {
		eps = append(eps, Endpoint{legacyStreamName, strings.TrimSuffix(MountPath(name), "mcp") + "sse"})
	}
	return eps
}

// Names are the servers served now, sorted.
func (m *Mounts) Names() []string {
	return slices.Sorted(maps.Keys(*m.set.Load()))
}

// Apply makes specs the served set at once: Stage, then Commit. Servers
// whose fingerprint is unchanged keep their bridge; new and changed ones
// get a new bridge and endpoint, built before anything is swapped: if
// one cannot be built, Apply returns the error and the served set stays
// as it was. The bridges no longer served are drained and closed in the
// background (Close waits for them).
func (m *Mounts) Apply(specs []MountSpec) (Changes, error) {
	st, err := m.Stage(specs, StageOptions{})
	if err != nil {
		return Changes{}, err
	}
	st.Commit()
	return st.Changes, nil
}

// StageOptions say what Stage does besides serving its specs.
type StageOptions struct {
	// Restart names servers to restart though their fingerprint did not
	// change (a new bridge, its sessions ended).
	Restart []string
	// Absent says, by name, why a server that is not served is not
	// ("server x is disabled"): a request for it is answered 404 with
	// that, not "no such server". It replaces the last change's.
	Absent map[string]string
}

// Staged is a change of the served set that is served but not yet
// committed: requests reach the new set, while the servers it replaced
// keep their bridges, sessions and children, untouched, until Commit
// drains and stops them, or Rollback serves them again. Its owner calls
// one of the two, soon: until then no other change can be staged.
type Staged struct {
	// Changes say what the change does, by server name.
	Changes Changes

	m                     *Mounts
	old, next             map[string]*mount
	oldAbsent, nextAbsent map[string]string
	built                 []*mount // the new bridges
	replaced              []*mount // the old bridges no longer served
	done                  bool     // committed or rolled back; under m.mu
}

// Stage serves specs in one step, as Apply does, keeping the servers it
// replaces for Rollback until Commit. Servers whose fingerprint is
// unchanged (and not in opts.Restart) keep their bridge. If a server
// cannot be built, Stage returns the error and nothing changes.
func (m *Mounts) Stage(specs []MountSpec, opts StageOptions) (*Staged, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.closing:
		return nil, errors.New("httpapi: the servers are shutting down")
	case m.staged != nil:
		return nil, errors.New("httpapi: a change of the servers is staged already")
	}
	st := &Staged{m: m, old: *m.set.Load(), next: make(map[string]*mount, len(specs)),
		oldAbsent: *m.absent.Load(), nextAbsent: maps.Clone(opts.Absent)}
	if st.nextAbsent == nil {
		st.nextAbsent = map[string]string{}
	}
	fail := func(err error) (*Staged, error) {
		ctx, cancel := context.WithTimeout(context.Background(), m.opts.StopTimeout)
		defer cancel()
		for _, mt := range st.built {
			_ = mt.b.Close(ctx)
		}
		return nil, err
	}
	ch := &st.Changes
	for _, s := range specs {
		if !ValidServerName(s.Name) {
			return fail(fmt.Errorf("httpapi: server name %q: want 1 to 64 of A-Z a-z 0-9 - _", s.Name))
		}
		if _, dup := st.next[s.Name]; dup {
			return fail(fmt.Errorf("httpapi: server %q given twice", s.Name))
		}
		cur := st.old[s.Name]
		if cur != nil && cur.fingerprint == s.Fingerprint && !slices.Contains(opts.Restart, s.Name) {
			st.next[s.Name] = cur
			ch.Unchanged = append(ch.Unchanged, s.Name)
			continue
		}
		mt, err := buildMount(s)
		if err != nil {
			return fail(fmt.Errorf("server %q: %w", s.Name, err))
		}
		st.built = append(st.built, mt)
		st.next[s.Name] = mt
		if cur != nil {
			ch.Restarted = append(ch.Restarted, s.Name)
		} else {
			ch.Added = append(ch.Added, s.Name)
		}
	}
	for name, mt := range st.old {
		if st.next[name] == mt {
			continue
		}
		if st.next[name] == nil {
			ch.Removed = append(ch.Removed, name)
		}
		st.replaced = append(st.replaced, mt)
	}
	for _, l := range [][]string{ch.Added, ch.Removed, ch.Restarted, ch.Unchanged} {
		slices.Sort(l)
	}
	m.set.Store(&st.next)
	m.absent.Store(&st.nextAbsent)
	m.staged = st
	m.aggregateChanged(st.Changes)
	return st, nil
}

// Commit ends the change: the servers it replaced are drained and
// stopped in the background (Wait waits for that, Close too).
func (st *Staged) Commit() {
	st.m.mu.Lock()
	defer st.m.mu.Unlock()
	st.commitLocked()
}

func (st *Staged) commitLocked() {
	if st.done {
		return
	}
	st.done = true
	st.m.staged = nil
	for _, mt := range st.replaced {
		st.m.retiring.Add(1)
		go st.m.retire(mt)
	}
}

// Rollback serves the set as it was before the change again, with the
// bridges, sessions and children it had; the bridges the change built
// are drained and stopped in the background (sessions begun on them in
// the meantime end). After Commit, or once the servers are shutting
// down (Close commits what is staged), it does nothing and says so.
func (st *Staged) Rollback() error {
	m := st.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if st.done {
		return errors.New("httpapi: the change was committed already")
	}
	st.done = true
	m.staged = nil
	m.set.Store(&st.old)
	m.absent.Store(&st.oldAbsent)
	m.aggregateChanged(st.Changes)
	for _, mt := range st.built {
		m.retiring.Add(1)
		go m.retire(mt)
	}
	return nil
}

// Wait waits until the servers a committed change replaced are stopped
// (each within DrainTimeout and StopTimeout), or ctx ends.
func (st *Staged) Wait(ctx context.Context) error {
	for _, mt := range st.replaced {
		select {
		case <-mt.stopped:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Health is how server name is now, when it is served (ok): ready, or
// unavailable with the reason and message of its /readyz.
func (m *Mounts) Health(name string) (h ServerHealth, ok bool) {
	mt := (*m.set.Load())[name]
	if mt == nil {
		return ServerHealth{}, false
	}
	if err := mt.b.Ready(); err != nil {
		return ServerHealth{Status: "unavailable", Reason: notReadyReason(err), Message: publicMessage(err)}, true
	}
	return ServerHealth{Status: "ready"}, true
}

func buildMount(s MountSpec) (*mount, error) {
	b, err := bridge.New(s.Bridge)
	if err != nil {
		return nil, err
	}
	opts := s.HTTP
	opts.Bridge = b
	opts.Path = MountPath(s.Name)
	opts.SSEPath, opts.MessagePath = "", "" // beside Path
	opts.inMounts = true
	h, m, err := handler(opts)
	if err != nil {
		_ = b.Close(context.Background()) // nothing started yet but the janitor
		return nil, err
	}
	return &mount{name: s.Name, fingerprint: s.Fingerprint, b: b, h: h, metrics: m, opts: opts, auth: opts.Auth != nil,
		legacy: !opts.DisableLegacySSE && !opts.Stateless, stateless: opts.Stateless, idle: make(chan struct{}), stopped: make(chan struct{})}, nil
}

// retire stops serving mt: new requests get 404 (or its successor), no
// new session starts, its streams end; the requests in flight get
// DrainTimeout, then every child is stopped. Owned by Commit or
// Rollback, which count it in m.retiring.
func (m *Mounts) retire(mt *mount) {
	defer m.retiring.Done()
	defer close(mt.stopped)
	log := m.opts.Logger.With("server", mt.name)
	idle := mt.retire()
	mt.b.Drain()
	t := time.NewTimer(m.opts.DrainTimeout)
	select {
	case <-idle:
	case <-t.C:
		log.Warn("requests still in flight on a server being stopped; stopping its children anyway", "drain_timeout", m.opts.DrainTimeout)
	}
	t.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.StopTimeout)
	defer cancel()
	if err := mt.b.Close(ctx); err != nil {
		log.Warn("some children had to be killed", "err", err)
	}
	log.Info("server stopped")
}

// Busy is what every served server's clients are waiting on now: the
// requests in flight, for a shutdown to say what it waits for.
func (m *Mounts) Busy() bridge.Busy {
	var busy bridge.Busy
	for _, mt := range *m.set.Load() {
		busy = busy.Add(mt.b.Busy())
	}
	return busy
}

// Drain prepares every served bridge for shutdown (bridge.Drain) and
// refuses further changes; a change staged is committed.
func (m *Mounts) Drain() {
	m.mu.Lock()
	m.closing = true
	if m.staged != nil {
		m.staged.commitLocked()
	}
	m.mu.Unlock()
	if am := m.agg.Load(); am != nil {
		am.srv.Drain()
	}
	for _, mt := range *m.set.Load() {
		mt.b.Drain()
	}
}

// Close refuses further changes (a change staged is committed), closes
// every served bridge (see
// bridge.Close; ctx as there) and waits for the bridges being retired.
func (m *Mounts) Close(ctx context.Context) error {
	m.mu.Lock()
	m.closing = true
	if m.staged != nil {
		// The servers it replaced are stopped as removed ones are.
		m.staged.commitLocked()
	}
	m.mu.Unlock()
	if am := m.agg.Load(); am != nil {
		am.srv.Close() // its sessions first: they hold sessions on the bridges
	}
	set := *m.set.Load()
	errs := make(chan error, len(set))
	for _, mt := range set {
		go func() { errs <- mt.b.Close(ctx) }()
	}
	var err error
	for range set {
		err = errors.Join(err, <-errs)
	}
	// Each retire ends within DrainTimeout + StopTimeout.
	m.retiring.Wait()
	return err
}

// readyz answers GET /readyz for the whole set: 200 when every server
// could start a session now, else 503; the body says which is not ready
// and why, with the reasons of a single bridge's /readyz.
func (m *Mounts) readyz(w http.ResponseWriter, _ *http.Request) {
	type serverReadiness struct {
		Status  string `json:"status"`
		Reason  string `json:"reason,omitempty"`
		Message string `json:"message,omitempty"`
	}
	set := *m.set.Load()
	var mu sync.Mutex
	servers := make(map[string]serverReadiness, len(set))
	var wg sync.WaitGroup
	for name, mt := range set {
		wg.Go(func() {
			// A shared server's readiness pings its child: ask all at once.
			r := serverReadiness{Status: "ready"}
			if err := mt.b.Ready(); err != nil {
				r = serverReadiness{Status: "unavailable", Reason: notReadyReason(err), Message: publicMessage(err)}
			}
			mu.Lock()
			servers[name] = r
			mu.Unlock()
		})
	}
	wg.Wait()
	body := struct {
		Status  string                     `json:"status"`
		Servers map[string]serverReadiness `json:"servers"`
	}{Status: "ready", Servers: servers}
	for _, r := range servers {
		if r.Status != "ready" {
			body.Status = "unavailable"
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if body.Status != "ready" {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	b, _ := json.Marshal(body)
	_, _ = w.Write(append(b, '\n'))
}
