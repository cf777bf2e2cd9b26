package httpapi

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// guard is the DNS-rebinding defence of MCP's transport spec: "Servers MUST
// validate the Origin header on all incoming connections to prevent DNS
// rebinding attacks", and from 2025-11-25 "If the Origin header is present
// and invalid, servers MUST respond with HTTP 403 Forbidden". A request
// without Origin (not from a browser) passes. For a bridge on a loopback
// address, the Host header must name loopback too: a rebinding page sends
// its own host name there.
type guard struct {
	origins      originMatcher
	loopbackOnly bool
}

func (g guard) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.loopbackOnly && !isLoopbackHost(r.Host) {
			writeError(w, &httpError{status: http.StatusForbidden, code: bridge.CodeInvalidRequest,
				msg: "Forbidden: the Host header does not name this loopback-bound server"})
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !g.origins.allowed(o) {
			writeError(w, &httpError{status: http.StatusForbidden, code: bridge.CodeInvalidRequest,
				msg: "Forbidden: origin not allowed (see --allow-origin)"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isLoopbackHost: localhost, 127.0.0.0/8 or ::1, with or without a port.
func isLoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// originMatcher allows loopback origins and the configured ones.
type originMatcher struct {
	exact    map[string]bool
	patterns []string
}

func newOriginMatcher(list []string) (originMatcher, error) {
	m := originMatcher{exact: map[string]bool{}}
	for _, o := range list {
		o = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(o)), "/")
		if o == "" {
			continue
		}
		if strings.Contains(o, "*") {
			if _, err := path.Match(o, ""); err != nil {
				return m, fmt.Errorf("httpapi: an allowed origin pattern: %w", err)
			}
			m.patterns = append(m.patterns, o)
			continue
		}
		m.exact[o] = true
	}
	return m, nil
}

func (m originMatcher) allowed(origin string) bool {
	o := strings.ToLower(origin)
	if m.exact[o] {
		return true
	}
	for _, p := range m.patterns {
		if p == "*" {
			return true
		}
		// path.Match's * stops at '/', so "https://*.example.com" cannot
		// be satisfied by "https://evil.com/.example.com".
		if ok, _ := path.Match(p, o); ok {
			return true
		}
	}
	u, err := url.Parse(o)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && isLoopbackHost(u.Host)
}
