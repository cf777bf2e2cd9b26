package httpapi

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/mcp-bridge/mcp-bridge/approval"
	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/web"
)

// MountsWeb configures the web page of a set of servers.
type MountsWeb struct {
	// Auth guards the live feed: the bridge-wide verifier (flags), not a
	// server's own tokens, since the feed shows every server. Nil: no
	// authentication, which is refused (403) as soon as any server has
	// tokens of its own.
	Auth auth.Verifier
	// Admins see every server's sessions and children; every other
	// principal sees its own (bridge.Snapshot.For). Without Auth (and
	// so without a server that requires a token), the anonymous
	// principal sees everything.
	Admins auth.Subjects
	// PublicURL is the base URL clients reach the bridge at
	// (--public-url with --config): the page shows every server's
	// endpoints under it. Empty: under the page's own URL.
	PublicURL string
	// Approvals, if set, puts the approval queue on the page, for
	// approvers and Admins (with Auth).
	Approvals *approval.Engine
	// Context ends the feed (the process is shutting down).
	Context      context.Context
	KeepAlive    time.Duration
	WriteTimeout time.Duration
}

// mountWeb serves the page at / with a console that offers every server,
// and one live feed over them all, each session and child labelled with
// its server, each page seeing what its principal may (viewer). The
// page's server list follows reloads.
func (m *Mounts) mountWeb(r chi.Router, opts *MountsWeb) {
	feed := web.NewFeed(web.FeedOptions{
		Snapshot: func() any {
			ls := snapshotWith(m.webSnapshot(), opts.Approvals)
			ls.Aggregate = m.aggregateView()
			return ls
		},
		View:         viewer{auth: opts.Auth != nil, admins: opts.Admins, approvals: opts.Approvals}.view,
		KeepAlive:    opts.KeepAlive,
		WriteTimeout: opts.WriteTimeout,
		Logger:       m.opts.Logger,
	})
	if opts.Context != nil {
		context.AfterFunc(opts.Context, func() { _ = feed.Close() })
	}
	base := ""
	if opts.PublicURL != "" {
		base, _ = CanonicalURL(opts.PublicURL) // checked by the caller; "" if not
	}
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		set := *m.set.Load()
		servers := make([]web.Server, 0, len(set)+1)
		if am := m.agg.Load(); am != nil {
			servers = append(servers, am.webServer())
		}
		for _, name := range slices.Sorted(maps.Keys(set)) {
			servers = append(servers, set[name].webServer())
		}
		h, err := web.Handler(web.Page{Servers: servers, Auth: opts.Auth != nil || m.anyAuth(), PublicBase: base, FeedRefused: m.LiveViewRefused(),
			Registry: m.registry.Load() != nil})
		if err != nil {
			writeError(w, &httpError{status: http.StatusInternalServerError, code: bridge.CodeInternalError, msg: "internal error"})
			return
		}
		h.ServeHTTP(w, r)
	})
	r.Method(http.MethodGet, web.IndexPath, page)
	r.Method(http.MethodHead, web.IndexPath, page)
	r.Method(http.MethodGet, web.AssetPrefix+"*", page)
	r.Method(http.MethodHead, web.AssetPrefix+"*", page)
	guard := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if why := m.LiveViewRefused(); why != "" {
				writeError(w, &httpError{status: http.StatusForbidden, code: bridge.CodeInvalidRequest, msg: "Forbidden: " + why})
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	r.Group(func(r chi.Router) {
		if opts.Auth != nil {
			r.Use((&authn{v: opts.Auth, resource: resourceURL{}, log: m.opts.Logger}).middleware)
		}
		r.Use(guard)
		r.Method(http.MethodGet, web.FeedPath, feed)
	})
}

// webServer is what the page is told of the server.
func (mt *mount) webServer() web.Server {
	p := MountPath(mt.name)
	s := web.Server{Name: mt.name, Path: p, Auth: mt.auth, Stateless: mt.stateless}
	dir := strings.TrimSuffix(p, "mcp")
	if mt.legacy {
		s.Endpoints = append(s.Endpoints, web.Endpoint{Name: legacySSEName, Path: dir + "sse"}, web.Endpoint{Name: legacyMessageName, Path: dir + "message"})
	}
	s.Endpoints = append(s.Endpoints, opsEndpoints(dir+"metrics", "/healthz", dir+"readyz")...)
	return s
}

// LiveViewRefused is why nobody can open the page's live view now, or ""
// when a principal can: the view shows every server, and a server that
// requires tokens of its own must not have its sessions shown to anyone
// without one, while a server's tokens open that server alone. The page
// is told (and says so instead of asking for a token no one has), and
// the start-up log warns.
func (m *Mounts) LiveViewRefused() string {
	if m.opts.Web == nil || m.opts.Web.Auth != nil || !m.anyAuth() {
		return ""
	}
	var names []string
	for name, mt := range *m.set.Load() {
		if mt.auth {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	which := "server " + names[0] + " requires tokens of its own (tokenEnvs), which open it"
	if len(names) > 1 {
		which = "servers " + strings.Join(names, ", ") + " require tokens of their own (tokenEnvs), which open them"
	}
	return "the live view shows every server, and " + which + " only; give the bridge a bridge-wide token (--token-env or a JWT key) to open it"
}

// anyAuth reports whether some served server requires a token.
func (m *Mounts) anyAuth() bool {
	for _, mt := range *m.set.Load() {
		if mt.auth {
			return true
		}
	}
	return false
}

// webSnapshot combines every server's snapshot, each session and child
// labelled with its server.
func (m *Mounts) webSnapshot() bridge.Snapshot {
	out := bridge.Snapshot{Mode: "several servers", Command: "--config", Sessions: []bridge.SessionSnapshot{}, Modern: []bridge.ModernSnapshot{}, Children: []bridge.ChildSnapshot{}, Servers: []bridge.ServerSnapshot{}}
	set := *m.set.Load()
	for name, mt := range set {
		s := webSnapshot(mt.b.Snapshot())
		mode := s.Mode
		if mt.stateless {
			mode = "stateless"
		}
		out.Servers = append(out.Servers, bridge.ServerSnapshot{Name: name, Mode: mode, Argv: s.Argv, Sandbox: s.Sandbox})
		for _, x := range s.Sessions {
			x.Server = name
			out.Sessions = append(out.Sessions, x)
		}
		for _, x := range s.Modern {
			x.Server = name
			out.Modern = append(out.Modern, x)
		}
		for _, x := range s.Children {
			x.Server = name
			out.Children = append(out.Children, x)
		}
		out.Waiting += s.Waiting
	}
	slices.SortFunc(out.Servers, func(a, b bridge.ServerSnapshot) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(out.Sessions, func(a, b bridge.SessionSnapshot) int { return a.Created.Compare(b.Created) })
	slices.SortFunc(out.Modern, func(a, b bridge.ModernSnapshot) int { return a.Started.Compare(b.Started) })
	slices.SortFunc(out.Children, func(a, b bridge.ChildSnapshot) int { return a.Started.Compare(b.Started) })
	return out
}
