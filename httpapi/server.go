// Package httpapi owns the bridge's HTTP surface: the MCP Streamable HTTP
// endpoint (POST, GET, DELETE), the SSE writer, the Origin and Host checks,
// CORS, authentication of every MCP request and the protected-resource
// metadata, per-principal limits, body limits and the health endpoint. It
// turns HTTP into bridge calls, through one POST pipeline for every
// transport (post.go) observed once per POST (observe.go), and bridge and
// auth errors into HTTP statuses, each in one place (errorStatus,
// authStatus).
package httpapi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/mcp-bridge/mcp-bridge/approval"
	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// Response modes for requests (Options.ResponseMode).
const (
	ModeAuto = "auto" // JSON when the response comes first, else SSE
	ModeSSE  = "sse"  // always an SSE stream
	ModeJSON = "json" // always one JSON body (nothing can precede the response)
)

// Defaults for the zero values of Options.
const (
	DefaultPath         = "/mcp"
	DefaultMaxBodyBytes = 4 << 20 // the go-sdk's DefaultMaxRequestBodyBytes
	DefaultSSEDelay     = 50 * time.Millisecond
	DefaultKeepAlive    = 15 * time.Second
	DefaultWriteTimeout = 30 * time.Second
	DefaultReadTimeout  = 30 * time.Second
	// DefaultMaxStreamsPerPrincipal is Options.MaxStreamsPerPrincipal's:
	// without authentication every client is the one anonymous principal,
	// so it is also what one such bridge serves at once (docs/decisions.md,
	// "Per-principal limits").
	DefaultMaxStreamsPerPrincipal = 128
)

// Options configures the HTTP API. Only Bridge is required.
type Options struct {
	// Bridge serves the sessions.
	Bridge *bridge.Bridge
	// Path of the MCP endpoint. Default "/mcp".
	Path string
	// SSEPath is where legacy (2024-11-05 HTTP+SSE) clients open their
	// stream. Default "sse" next to Path: "/sse" for "/mcp", "/api/sse"
	// for "/api/mcp". Legacy sessions are served in every session mode and
	// behind the same authentication, limits and tool policy as the MCP
	// endpoint; not in Stateless mode, which has no sessions.
	SSEPath string
	// MessagePath is where legacy clients POST their messages. Default
	// "message" next to Path. Its stream announces it as a reference
	// relative to SSEPath, so the two keep working behind a reverse proxy
	// that serves the bridge under a prefix and strips it.
	MessagePath string
	// DisableLegacySSE turns the legacy HTTP+SSE endpoints off (404).
	DisableLegacySSE bool
	// MaxBodyBytes caps a POST body; over it the answer is 413. Default 4 MiB.
	MaxBodyBytes int64
	// ResponseMode is ModeAuto (default), ModeSSE or ModeJSON.
	ResponseMode string
	// SSEDelay is how long, in ModeAuto, a request waits for the child's
	// first message before its response becomes an SSE stream, so long
	// calls get their first byte early. Default 50 ms.
	SSEDelay time.Duration
	// KeepAlive is the interval of SSE comment keep-alives, which stop
	// proxies and load balancers from closing quiet streams. Default 15 s.
	KeepAlive time.Duration
	// SSEMaxDuration, when positive, closes the connection of an SSE
	// stream of a 2025-11-25 session after this long without ending the
	// stream: the client reconnects with Last-Event-ID (after the retry
	// the priming event gave) and gets the rest. Long-lived connections
	// then never outlast a proxy's timeout. Default 0: off.
	SSEMaxDuration time.Duration
	// WriteTimeout bounds each write to a client, so a client that stopped
	// reading cannot pin a handler for ever. Default 30 s. (There is
	// deliberately no server-wide WriteTimeout: it would cut SSE streams.)
	WriteTimeout time.Duration
	// AllowedOrigins lists the browser origins allowed besides loopback
	// ones (exact, or a pattern with *, e.g. "https://*.example.com").
	// A request whose Origin header is present and not allowed gets 403:
	// the DNS-rebinding defence MCP requires.
	AllowedOrigins []string
	// ClaimEnv maps allow-listed claims of a session's principal to
	// variables of its child's environment (claim -> variable name), so
	// one bridge can run each user's server with that user's identity.
	// Only these claims ever reach a child.
	ClaimEnv map[string]string
	// Stateless serves Streamable HTTP without sessions: no
	// Mcp-Session-Id, every POST stands alone on the shared child, GET and
	// DELETE answer 405.
	Stateless bool
	// DisableModern turns the MCP 2026-07-28 era off: a modern request
	// then gets the 2025 era's answer to a request without a session (400
	// with a code that is not a 2026-07-28 one), from which dual-era
	// clients fall back to initialize. Default false: both eras are served.
	DisableModern bool
	// LoopbackOnly refuses (403) any Host header that does not name a
	// loopback address, the other half of the DNS-rebinding defence. Set it
	// when the listener is on a loopback address.
	LoopbackOnly bool
	// Auth authenticates every request to the MCP endpoint (POST, GET,
	// DELETE), and a session is then visible only to the principal that
	// created it. Nil: no authentication, and every client is the one
	// anonymous principal: anyone who reaches the port can start
	// processes, so leave it nil only on loopback.
	Auth auth.Verifier
	// PublicURL is the MCP endpoint's canonical URL as clients reach it
	// (https://bridge.example.com/mcp): the "resource" of the
	// protected-resource metadata, and the base of the metadata URL in
	// 401 challenges. Empty: derived from each request's Host header,
	// which is right only when clients reach the bridge directly.
	PublicURL string
	// AuthorizationServers are listed in the protected-resource metadata:
	// where clients get tokens. MCP requires at least one for OAuth.
	AuthorizationServers []string
	// Scopes a token needs: the metadata's scopes_supported and the scope
	// of 401 challenges.
	Scopes []string
	// MaxSessionsPerPrincipal caps the live sessions of one principal;
	// over it, initialize gets 429. 0: only the bridge's own cap.
	MaxSessionsPerPrincipal int
	// MaxInFlightPerPrincipal caps the POSTs of one principal being
	// served at once (a POST is served until its last response is
	// written); over it, 429. GET streams do not count. 0: no cap.
	MaxInFlightPerPrincipal int
	// MaxStreamsPerPrincipal caps the streams one principal holds open at
	// once: sessions' GET streams, legacy HTTP+SSE streams, 2026-07-28
	// listens and 2026-07-28 answers sent as SSE (not a 2025 POST's
	// stream, which is a POST in flight). Over it, 429 before anything
	// starts. Each idle stream holds a connection and some memory
	// (docs/performance.md, "Idle streams"). Default 128; negative: no cap.
	MaxStreamsPerPrincipal int
	// RateLimit is the sustained rate, in requests per second, that one
	// principal may send to the MCP endpoint; over it, 429 with the
	// Retry-After the bucket needs. 0: no limit.
	RateLimit float64
	// RateBurst is how many requests over the rate may come at once.
	// Default: RateLimit rounded up (one second's worth), at least 1.
	RateBurst int
	// ToolPolicy decides which tools each principal may list and call;
	// nil allows every tool. A denied tools/call never reaches the child,
	// and tools/list results lose the tools the principal may not call.
	ToolPolicy *auth.ToolPolicy
	// Approval marks the tools/call requests that need a human's yes
	// before they reach the child (--tool-approve, a server's
	// toolApprove), decided after ToolPolicy. Nil: none does. Such a
	// call is held on Approvals (approval.Engine.Decide) by every
	// transport (held.go), and reaches the child only on a yes.
	Approval *approval.Policy
	// Approvals is the bridge's approval engine, one for the process.
	// A handler of its own (not a server of Mounts, which serves it for
	// all) serves its operators' channel at ApprovalsPath, behind Auth,
	// to its approvers and Admins, and counts it in /metrics.
	Approvals *approval.Engine
	// MetricsAuth, if set, authenticates every scrape of /metrics
	// (auth.TokensFromEnv of one variable: a token of its own, for the
	// scraper); a scrape it refuses gets 401 with a Bearer challenge.
	// Nil: /metrics is open, as Prometheus expects by default, unless
	// clients must authenticate (Auth): then it is closed (403, saying
	// how to open it) but with MetricsPublic.
	MetricsAuth auth.Verifier
	// MetricsPublic opens /metrics to anyone when clients must
	// authenticate and MetricsAuth is nil. The counts hold no secret, but
	// they tell traffic, methods and refusals to whoever can reach the
	// port: an operator who requires tokens decides this explicitly.
	MetricsPublic bool
	// Audit, if set, gets one JSON line per request once its response is
	// written: time, principal, session, method, tool, outcome, duration.
	Audit io.Writer
	// AuditArguments adds the arguments of each tools/call to its audit
	// line. Off by default: arguments may hold personal data or secrets.
	AuditArguments bool
	// Now is the clock of the rate limit and the audit log. Default
	// time.Now.
	Now func() time.Time
	// Logger is the logger. Default slog.Default().
	Logger *slog.Logger

	// Web serves the web page (package web) at / and /ui/: a live view of
	// the sessions and children, and a console that is an MCP client of
	// this endpoint. The page itself holds no data and is public; its
	// live feed (/ui/events) is authenticated by Auth like the MCP
	// endpoint, and shows each principal its own sessions and the
	// children that serve them (bridge.Snapshot.For); Admins see
	// everything. Without Auth, the one anonymous principal sees
	// everything. Off by default.
	Web bool
	// Admins are the principals who see every session and child on the
	// web page, every child's stderr included. Nil: nobody does (with
	// Auth).
	Admins auth.Subjects
	// Context is the lifetime of the web page's live feed: when it ends,
	// every page's feed is closed and the goroutine that feeds them
	// stops. Pass the context whose end starts the bridge's shutdown.
	// Default context.Background(): the feed lives as long as the process.
	// The operators' approval streams end with it too.
	Context context.Context

	// inMounts: a server of Mounts, which serves the operators' channel
	// and its metrics once for every server.
	inMounts bool
	// aggregate: the aggregate endpoint of Mounts (aggregate.go), which
	// serves several bridges and has none of its own.
	aggregate bool
}

// Handler returns the bridge's HTTP handler: the options with their
// defaults (withDefaults), then the routes.
func Handler(opts Options) (http.Handler, error) {
	h, _, err := handler(opts)
	return h, err
}

// handler is Handler, and the metrics it serves (Mounts gathers every
// server's at its own /metrics).
func handler(opts Options) (http.Handler, *metrics, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, nil, err
	}
	return routes(opts)
}

// legacyStreamName is what the startup log calls the legacy stream.
const legacyStreamName = "legacy HTTP+SSE stream (2024-11-05 clients)"

// Endpoint is a URL path the bridge serves, and what it is.
type Endpoint struct{ Name, Path string }

// Endpoints are what a handler of o serves besides its MCP endpoint, for
// people: the legacy HTTP+SSE stream (when served), the web page (when
// on), the metrics. The startup log shows them as full URLs.
func (o Options) Endpoints() []Endpoint {
	o.Path = cmp.Or(o.Path, DefaultPath)
	o.SSEPath = cmp.Or(o.SSEPath, path.Join(path.Dir(o.Path), "sse"))
	var out []Endpoint
	if o.legacyOn() {
		out = append(out, Endpoint{legacyStreamName, o.SSEPath})
	}
	if o.Web {
		out = append(out, Endpoint{"web page", "/"})
	}
	if o.Approvals != nil && o.Approvals.Operators() && o.Auth != nil {
		out = append(out, Endpoint{"approvals API (--approver)", ApprovalsPath})
	}
	return append(out, Endpoint{"metrics (Prometheus)", "/metrics"})
}

// legacyOn says whether the legacy HTTP+SSE endpoints are served: not in
// Stateless mode, which has no sessions.
func (o *Options) legacyOn() bool { return !o.DisableLegacySSE && !o.Stateless }

// withDefaults returns o with every zero value that has a default filled
// in, or the error of an option that cannot work.
func (o Options) withDefaults() (Options, error) {
	if o.Bridge == nil && !o.aggregate {
		return o, errors.New("httpapi: no bridge")
	}
	o.Path = cmp.Or(o.Path, DefaultPath)
	o.SSEPath = cmp.Or(o.SSEPath, path.Join(path.Dir(o.Path), "sse"))
	o.MessagePath = cmp.Or(o.MessagePath, path.Join(path.Dir(o.Path), "message"))
	if o.legacyOn() {
		if err := checkLegacyPaths(o); err != nil {
			return o, err
		}
	}
	switch o.ResponseMode {
	case "":
		o.ResponseMode = ModeAuto
	case ModeAuto, ModeSSE, ModeJSON:
	default:
		return o, fmt.Errorf("httpapi: response mode %q: want auto, sse or json", o.ResponseMode)
	}
	o.MaxBodyBytes = positiveOr(o.MaxBodyBytes, DefaultMaxBodyBytes)
	o.SSEDelay = positiveOr(o.SSEDelay, DefaultSSEDelay)
	o.KeepAlive = positiveOr(o.KeepAlive, DefaultKeepAlive)
	o.WriteTimeout = positiveOr(o.WriteTimeout, DefaultWriteTimeout)
	if o.MaxStreamsPerPrincipal == 0 {
		o.MaxStreamsPerPrincipal = DefaultMaxStreamsPerPrincipal
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o, nil
}

// positiveOr is v, or def when v is not positive (zero and negative
// values both mean "the default").
func positiveOr[T int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// routes builds the router for opts, whose defaults are filled in: the
// checks every request meets, then the unauthenticated operations
// endpoints, then the MCP endpoints behind authentication and limits.
func routes(opts Options) (http.Handler, *metrics, error) {
	origins, err := newOriginMatcher(opts.AllowedOrigins)
	if err != nil {
		return nil, nil, err
	}
	resource, err := newResourceURL(opts.PublicURL, opts.Path)
	if err != nil {
		return nil, nil, fmt.Errorf("httpapi: %w", err)
	}
	h := &mcpHandler{opts: opts, b: opts.Bridge, srv: bridge.ServerOf(opts.Bridge), log: opts.Logger, limits: newLimits(opts)}
	if opts.Audit != nil {
		h.audit = &auditLog{w: opts.Audit, args: opts.AuditArguments, now: opts.Now}
	}

	r := chi.NewRouter()
	r.Use(middleware.Recoverer)
	// The Origin and Host checks come first: a preflight from a refused
	// origin gets 403 with the reason (guard), not rs/cors's headers, and
	// no request from it reaches anything behind.
	r.Use(guard{origins: origins, loopbackOnly: opts.LoopbackOnly, refused: newOriginLog(opts.Logger, opts.Now)}.middleware)
	r.Use(newCORS(origins))
	// Operations (metrics.go, ready.go): /metrics, /readyz, and the
	// observation of the MCP endpoint. Unauthenticated, like /healthz,
	// but for /metrics with MetricsAuth.
	m := newMetrics(opts)
	r.Use(m.middleware, readyz(opts.Bridge))
	// Health and the protected-resource metadata are unauthenticated:
	// probes, and clients that have no token yet, must reach them.
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
	if opts.Auth != nil {
		meta := prm{resource: resource, servers: opts.AuthorizationServers, scopes: opts.Scopes}
		r.Method(http.MethodGet, prmPath, meta)
		r.Method(http.MethodGet, prmPath+opts.Path, meta)
		if pp := resource.publicPath(); pp != "" && pp != opts.Path {
			r.Method(http.MethodGet, prmPath+pp, meta) // behind a proxy that adds a prefix
		}
	}
	r.Group(func(r chi.Router) { h.mcpRoutes(r, resource) })
	if api := h.approvalsAPI(resource); api != nil {
		// The operators' channel (approvals.go), behind its own
		// authentication: it is no MCP endpoint, and has no limits.
		r.Handle(ApprovalsPath, api)
		r.Handle(ApprovalsPath+"/*", api)
	}
	if opts.Web {
		// The web page (web.go): public assets, an authenticated feed.
		if err := h.mountWeb(r, resource); err != nil {
			return nil, nil, err
		}
	}
	r.MethodNotAllowed(h.methodNotAllowed)
	return r, m, nil
}

// approvalsAPI is the operators' channel this handler serves, nil for
// none: no engine, or a server of Mounts.
func (h *mcpHandler) approvalsAPI(resource resourceURL) *approvalsAPI {
	opts := h.opts
	if opts.Approvals == nil || opts.inMounts {
		return nil
	}
	return newApprovalsAPI(ApprovalsAPI{Engine: opts.Approvals, Auth: opts.Auth, Readers: opts.Admins, KeepAlive: opts.KeepAlive,
		WriteTimeout: opts.WriteTimeout, Logger: opts.Logger, Context: opts.Context}, resource, opts.Scopes)
}

// mcpRoutes serves the MCP endpoints on r, behind authentication and the
// per-principal limits: the Streamable HTTP endpoint, and the legacy
// HTTP+SSE ones beside it.
func (h *mcpHandler) mcpRoutes(r chi.Router, resource resourceURL) {
	opts := h.opts
	if opts.Auth != nil {
		r.Use((&authn{v: opts.Auth, resource: resource, scopes: opts.Scopes, log: opts.Logger}).middleware)
	}
	if h.limits != nil {
		r.Use(h.limits.middleware(opts.Logger))
	}
	if opts.Stateless {
		r.Post(opts.Path, h.serve(h.statelessPost))
	} else {
		r.Post(opts.Path, h.serve(h.post))
		r.Get(opts.Path, h.serve(h.get))
		r.Delete(opts.Path, h.serve(h.delete))
	}
	// What the server runs, and its sandbox (status.go).
	r.Get("/status", h.serve(h.status))
	if opts.legacyOn() {
		// Here too: the stream and every POST to it are authenticated
		// and limited like the MCP endpoint, and a stream answers only
		// the principal that opened it.
		l := newLegacy(h, opts.SSEPath, opts.MessagePath)
		r.Get(opts.SSEPath, h.serve(l.get))
		r.Post(opts.MessagePath, h.serve(l.post))
	}
}

// methodNotAllowed answers a method a path does not serve: 405 with the
// Allow header of the path.
func (h *mcpHandler) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	opts := &h.opts
	switch {
	case opts.legacyOn() && r.URL.Path == opts.SSEPath:
		// A Streamable HTTP client POSTs initialize here first; a 405
		// is what makes it fall back to GET and the legacy transport.
		w.Header().Set("Allow", "GET")
	case opts.legacyOn() && r.URL.Path == opts.MessagePath:
		w.Header().Set("Allow", "POST")
	case opts.Stateless:
		w.Header().Set("Allow", "POST")
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
	}
	writeError(w, &httpError{status: http.StatusMethodNotAllowed, code: bridge.CodeInvalidRequest, msg: "Method Not Allowed"})
}

// checkLegacyPaths: the legacy endpoints are paths of their own.
func checkLegacyPaths(opts Options) error {
	for _, p := range []string{opts.SSEPath, opts.MessagePath} {
		if !strings.HasPrefix(p, "/") {
			return fmt.Errorf("httpapi: legacy SSE path %q: want an absolute path", p)
		}
		switch p {
		case opts.Path, "/healthz", "/readyz", "/metrics":
			return fmt.Errorf("httpapi: legacy SSE path %q: taken by another endpoint", p)
		}
	}
	if opts.SSEPath == opts.MessagePath {
		return fmt.Errorf("httpapi: the legacy SSE and message paths are both %q", opts.SSEPath)
	}
	return nil
}

// Server is an HTTP server for the handler, with Open/Close/URL so tests
// can run it on port 0.
type Server struct {
	Addr    string // host:port; port 0 picks one
	Handler http.Handler
	// ReadTimeout bounds the reading of each request, headers and body,
	// from its first byte: a client that sends its body slower than that
	// (one byte a second, say) gets 408 where the handler reads the body,
	// and has its connection closed where the answer needed no body (a
	// 401, a 403): net/http drains an unread body before it answers, and
	// the drain is bounded too. Response streams are not bounded by it.
	// Default 30 s.
	ReadTimeout time.Duration

	ln  net.Listener
	srv *http.Server
	err chan error
}

// Open starts listening and serving.
func (s *Server) Open() error {
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("httpapi: listen on %s: %w", s.Addr, err)
	}
	s.ln = ln
	rt := s.ReadTimeout
	if rt <= 0 {
		rt = DefaultReadTimeout
	}
	s.srv = &http.Server{
		Handler: s.Handler,
		// http.Server's ReadTimeout and not a deadline per request: it
		// never ends an SSE response, however long. The one read that
		// outlives a request's body is net/http's background read, which
		// watches for the client going away and cancels the request's
		// context if it fails; startBackgroundRead clears the connection's
		// read deadline before it starts that read (net/http server.go, Go
		// 1.26), before the handler for a request without a body (every
		// GET stream) and when the handler reads a body to its end (a
		// POST, before its SSE response). What the deadline does bound is
		// the headers, the body, and the drain of a body the handler left
		// unread. (A deadline set from a handler with ResponseController
		// would be the one to end streams: it would reach that background
		// read, golang/go#70834.) cmd/mcp-bridge's TestSlowRequestBody
		// checks both halves against the real binary.
		ReadTimeout:       rt,
		ReadHeaderTimeout: min(10*time.Second, rt),
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	s.err = make(chan error, 1)
	go func() { s.err <- s.srv.Serve(ln) }()
	return nil
}

// URL is the server's base URL.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Shutdown stops accepting and waits for handlers until ctx ends, then
// closes every connection left.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.srv.Close()
	}
	if serr := <-s.err; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}
