package httpapi

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strings"
	"sync"
	"time"

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
	refused      *originLog // logs the refused origins
}

func (g guard) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.loopbackOnly && !isLoopbackHost(r.Host) {
			writeError(w, &httpError{status: http.StatusForbidden, code: bridge.CodeInvalidRequest,
				msg: "Forbidden: the Host header does not name this loopback-bound server"})
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !g.origins.allowed(o) {
			g.refused.refuse(r, o)
			w.Header().Set("Access-Control-Allow-Origin", refusalReason(o))
			w.Header().Add("Vary", "Origin")
			writeError(w, &httpError{status: http.StatusForbidden, code: bridge.CodeInvalidRequest,
				msg: "Forbidden: origin not allowed (see --allow-origin)"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// refusalReason is the Access-Control-Allow-Origin of a refusal: not an
// origin, so it grants nothing (the browser still blocks the page's
// request, and its script reads nothing, not even that the bridge
// answered), but the reason, which browsers print in the console's CORS
// error ("…has a value 'refused-by-mcp-bridge:…' that is not equal to the
// supplied origin" in Chromium; Firefox's "does not match", by MDN) where a
// refusal without the header would read as a bridge that does not speak
// CORS. A refused preflight (or a request sent without one) is all a page
// gets; its status, 403, is the spec's for a bad Origin and is never
// "ok", so the preflight fails whatever the header says. No space or
// comma: Chromium reads those as several values and says so instead.
func refusalReason(origin string) string {
	const reason = "refused-by-mcp-bridge:allow-it-with--allow-origin"
	if len(origin) > 200 || !originSyntax.MatchString(origin) {
		return reason
	}
	return reason + "=" + origin
}

// originSyntax is an origin as browsers serialize one: scheme://host[:port].
var originSyntax = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://[A-Za-z0-9.:\[\]_-]+$`)

// originLog logs refused origins at warn with the hint that allows them,
// each origin at most once per window (the rest at debug, with the count
// skipped), so that a page hammering the bridge cannot flood the log. It
// remembers at most maxOrigins origins; past that, the others share one
// allowance.
type originLog struct {
	log    *slog.Logger
	now    func() time.Time
	window time.Duration

	mu   sync.Mutex
	seen map[string]*originSeen
}

type originSeen struct {
	logged  time.Time // when it was last logged at warn
	skipped int       // refusals since, logged at debug
}

const (
	originLogWindow = time.Minute
	maxOrigins      = 256
	otherOrigins    = "" // the key of origins past maxOrigins
)

func newOriginLog(log *slog.Logger, now func() time.Time) *originLog {
	return &originLog{log: log, now: now, window: originLogWindow, seen: make(map[string]*originSeen)}
}

// refuse logs the refusal of r, from origin.
func (l *originLog) refuse(r *http.Request, origin string) {
	if len(origin) > 200 {
		origin = origin[:200] + "…"
	}
	attrs := []any{"origin", origin, "method", r.Method, "path", r.URL.Path,
		"hint", "to allow this origin, start the bridge with --allow-origin " + origin}
	if warn, skipped := l.allow(origin); warn {
		if skipped > 0 {
			attrs = append(attrs, "refused_since_last_logged", skipped)
		}
		l.log.Warn("request refused: origin not allowed", attrs...)
		return
	}
	l.log.Debug("request refused: origin not allowed", attrs...)
}

// allow reports whether a refusal from origin is logged at warn now, and
// how many refusals were not since the last one that was.
func (l *originLog) allow(origin string) (warn bool, skipped int) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.seen[origin]
	if s == nil {
		if len(l.seen) >= maxOrigins {
			for o, x := range l.seen {
				if now.Sub(x.logged) >= l.window {
					delete(l.seen, o)
				}
			}
		}
		if len(l.seen) >= maxOrigins {
			origin = otherOrigins
			s = l.seen[origin]
		}
		if s == nil {
			s = &originSeen{}
			l.seen[origin] = s
			s.logged = now
			return true, 0
		}
	}
	if now.Sub(s.logged) < l.window {
		s.skipped++
		return false, 0
	}
	skipped, s.logged, s.skipped = s.skipped, now, 0
	return true, skipped
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
