package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/mcp-bridge/mcp-bridge/approval"
	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/web"
)

// mountWeb serves the web page (package web) on r: the page and its
// assets without authentication, since they hold no data, and its live
// feed behind the same authentication and per-principal rate as the MCP
// endpoint, each page seeing what its principal may (viewer). The feed is
// closed when opts.Context ends.
func (h *mcpHandler) mountWeb(r chi.Router, resource resourceURL) error {
	opts := h.opts
	endpoints := []string{opts.Path}
	if opts.legacyOn() {
		endpoints = append(endpoints, opts.SSEPath, opts.MessagePath)
	}
	for _, p := range endpoints {
		if p == web.IndexPath || p+"/" == web.AssetPrefix || strings.HasPrefix(p, web.AssetPrefix) {
			return fmt.Errorf("httpapi: endpoint path %q is taken by the web page (/ and /ui/): choose another path or turn the page off", p)
		}
	}
	page, err := web.Handler(webPage(opts, resource))
	if err != nil {
		return fmt.Errorf("httpapi: %w", err)
	}
	feed := web.NewFeed(web.FeedOptions{
		Snapshot: func() any {
			s := opts.Bridge.Snapshot()
			if opts.Stateless {
				s.Mode = "stateless" // the bridge serves it on its shared child, whatever its mode
			}
			return snapshotWith(webSnapshot(s), opts.Approvals)
		},
		View:         viewer{auth: opts.Auth != nil, admins: opts.Admins, approvals: opts.Approvals}.view,
		KeepAlive:    opts.KeepAlive,
		WriteTimeout: opts.WriteTimeout,
		Logger:       opts.Logger,
	})
	ctx := opts.Context
	if ctx == nil {
		ctx = context.Background()
	}
	context.AfterFunc(ctx, func() { _ = feed.Close() })

	r.Method(http.MethodGet, web.IndexPath, page)
	r.Method(http.MethodHead, web.IndexPath, page)
	r.Method(http.MethodGet, web.AssetPrefix+"*", page)
	r.Method(http.MethodHead, web.AssetPrefix+"*", page)
	r.Group(func(r chi.Router) {
		if opts.Auth != nil {
			r.Use((&authn{v: opts.Auth, resource: resource, scopes: opts.Scopes, log: opts.Logger}).middleware)
		}
		if h.limits != nil {
			r.Use(h.limits.middleware(opts.Logger))
		}
		r.Method(http.MethodGet, web.FeedPath, feed)
	})
	return nil
}

// webPage is what the page is told of the endpoint: its paths, and its
// public URL when --public-url gives it.
func webPage(opts Options, resource resourceURL) web.Page {
	srv := web.Server{Name: "default", Path: opts.Path, URL: resource.fixed, Auth: opts.Auth != nil, Stateless: opts.Stateless}
	if !opts.DisableLegacySSE && !opts.Stateless {
		srv.Endpoints = append(srv.Endpoints, web.Endpoint{Name: legacySSEName, Path: opts.SSEPath}, web.Endpoint{Name: legacyMessageName, Path: opts.MessagePath})
	}
	srv.Endpoints = append(srv.Endpoints, opsEndpoints("/metrics", "/healthz", "/readyz")...)
	page := web.Page{Servers: []web.Server{srv}, Auth: opts.Auth != nil}
	// The other endpoints are under the public URL only when it ends in
	// the endpoint's own path; a proxy that maps paths otherwise leaves
	// them where the browser finds them.
	if base, ok := strings.CutSuffix(resource.fixed, opts.Path); ok {
		page.PublicBase = base
	}
	return page
}

// Names of the endpoints the page lists besides the MCP endpoint.
const (
	legacySSEName     = "Legacy SSE stream (HTTP+SSE, 2024-11-05)"
	legacyMessageName = "Legacy SSE messages"
)

func opsEndpoints(metrics, health, ready string) []web.Endpoint {
	return []web.Endpoint{{Name: "Metrics (Prometheus)", Path: metrics}, {Name: "Health", Path: health}, {Name: "Readiness", Path: ready}}
}

// webSnapshot is the snapshot as the feed shows it, to admins too: a
// session's id is cut to a prefix (enough to tell sessions apart, useless
// to anyone trying to use one). Principals are shown by the name the
// bridge recorded at initialize, as in the logs.
func webSnapshot(s bridge.Snapshot) bridge.Snapshot {
	for i := range s.Sessions {
		s.Sessions[i].ID = idPrefix(s.Sessions[i].ID)
	}
	return s
}

// viewer decides what each page of the feed sees.
type viewer struct {
	auth      bool             // the feed is authenticated
	admins    auth.Subjects    // principals who see everything
	approvals *approval.Engine // nil: no approval queue
}

// view is what the page that sent r may see of snap (a liveSnapshot):
// everything for an admin, and for everyone on a bridge without
// authentication (one anonymous principal owns every session); else
// what bridge.Snapshot.For lets its principal see. The approval queue is
// for approvers and admins only, and only with authentication: deciding
// needs to know who decides.
func (v viewer) view(r *http.Request, snap any) any {
	ls := snap.(liveSnapshot)
	p := principal(r)
	out := liveView{Snapshot: ls.Snapshot, Aggregate: ls.Aggregate}
	if v.auth && !v.admins.Match(p) {
		out.Snapshot = ls.Snapshot.For(p.Key())
	}
	if e := v.approvals; e != nil && v.auth && (v.admins.Match(p) || e.MayDecide(p)) {
		q := &pageApprovals{Alive: make([]shownApproval, len(ls.Approvals)), Approver: e.MayDecide(p)}
		for i, a := range ls.Approvals {
			q.Alive[i] = showApproval(e, a, p)
		}
		out.Approvals = q
	}
	return out
}

// idPrefix is the first 8 characters of a session id: 48 of its 128 bits.
func idPrefix(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
