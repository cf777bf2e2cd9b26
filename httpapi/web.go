package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/web"
)

// mountWeb serves the web page (package web) on r: the page and its
// assets without authentication, since they hold no data, and its live
// feed behind the same authentication and per-principal rate as the MCP
// endpoint. The feed is closed when opts.Context ends.
func (h *mcpHandler) mountWeb(r chi.Router, resource resourceURL) error {
	opts := h.opts
	endpoints := []string{opts.Path}
	if !opts.DisableLegacySSE && !opts.Stateless {
		endpoints = append(endpoints, opts.SSEPath, opts.MessagePath)
	}
	for _, p := range endpoints {
		if p == web.IndexPath || p+"/" == web.AssetPrefix || strings.HasPrefix(p, web.AssetPrefix) {
			return fmt.Errorf("httpapi: endpoint path %q is taken by the web page (/ and /ui/): choose another path or turn the page off", p)
		}
	}
	page, err := web.Handler(web.Page{Servers: []web.Server{{Name: "default", Path: opts.Path}}, Auth: opts.Auth != nil})
	if err != nil {
		return fmt.Errorf("httpapi: %w", err)
	}
	feed := web.NewFeed(web.FeedOptions{
		Snapshot:     func() any { return webSnapshot(opts.Bridge.Snapshot()) },
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

// webSnapshot is what every page that watches the feed may see, whoever
// it was opened by: a session's id is cut to a prefix (enough to tell
// sessions apart, useless to anyone trying to use one), and principals
// are shown by name, as in the logs.
func webSnapshot(s bridge.Snapshot) bridge.Snapshot {
	for i := range s.Sessions {
		s.Sessions[i].ID = idPrefix(s.Sessions[i].ID)
		s.Sessions[i].Principal = principalName(s.Sessions[i].Principal)
	}
	for i := range s.Children {
		s.Children[i].Identity = principalName(s.Children[i].Identity)
	}
	return s
}

// idPrefix is the first 8 characters of a session id: 48 of its 128 bits.
func idPrefix(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// principalName turns an auth.Principal's Key (method, quoted issuer,
// quoted name) back into what Principal.String shows: the name, and the
// issuer if there is one. "" (anonymous) stays "".
func principalName(key string) string {
	if key == "" {
		return ""
	}
	var method, issuer, name string
	if n, err := fmt.Sscanf(key, "%s %q %q", &method, &issuer, &name); err != nil || n != 3 {
		return key
	}
	if issuer != "" {
		return name + " (" + issuer + ")"
	}
	return name
}
