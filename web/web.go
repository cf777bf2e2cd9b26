// Package web owns the bridge's web page: its static assets, embedded with
// go:embed (one HTML page, one script, one style sheet; no build step, no
// CDN), the handler that serves them, and the live feed the page watches
// (Feed), and the client configurations the page offers (ClientSnippets,
// served at /ui/clients.json). The page is an operator's view of the
// bridge (its command, sessions and children, updated live), the URLs and
// configurations that connect a client to it, and a console that is
// itself a browser MCP client of the bridge's own endpoint (tools,
// prompts, resources).
//
// The package is a leaf: it knows nothing of sessions or authentication.
// Whoever mounts it gives the feed a snapshot function and a view of it
// per page (what the page's principal may see), and puts the feed behind
// the same authentication as the MCP endpoint. The assets hold no data and
// are served without it; the page asks for a token and sends it as a
// bearer token on every request it makes.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"
)

//go:embed assets
var assets embed.FS

// Paths the page uses; the handler serves IndexPath and everything under
// AssetPrefix except FeedPath, which the mounter serves with a Feed.
const (
	IndexPath   = "/"
	AssetPrefix = "/ui/"
	FeedPath    = "/ui/events"
	configPath  = "/ui/config.json"
	clientsPath = "/ui/clients.json"
)

// Server is one MCP endpoint the console can connect to.
type Server struct {
	Name string `json:"name"`
	Path string `json:"path"` // absolute path of its Streamable HTTP endpoint, e.g. "/mcp"
	// URL is the endpoint's full public URL (--public-url), when the
	// bridge knows it. Empty: the page derives it from Page.PublicBase,
	// or else from its own URL.
	URL string `json:"url,omitempty"`
	// Endpoints are its other URLs the page lists (legacy SSE, metrics,
	// health), each with a copy button.
	Endpoints []Endpoint `json:"endpoints,omitempty"`
	// Auth: the endpoint requires a bearer token, so the client
	// configurations send one.
	Auth bool `json:"auth"`
	// Stateless: the endpoint has no sessions.
	Stateless bool `json:"stateless,omitempty"`
}

// Endpoint is one URL of a server, by its absolute path.
type Endpoint struct {
	Name string `json:"name"` // what it is, e.g. "Legacy SSE (2024-11-05)"
	Path string `json:"path"`
}

// Page configures what the page is told at load time (GET /ui/config.json).
type Page struct {
	// Servers are the MCP endpoints the console offers. Default: one
	// server, "default", at /mcp.
	Servers []Server
	// Auth makes the page ask for a bearer token before it does
	// anything; it sends the token with every request and keeps it in
	// the tab's sessionStorage (gone when the tab closes). False: the
	// page asks only if a request is refused with 401.
	Auth bool
	// PublicBase is the URL clients reach the bridge at, without a
	// trailing slash (https://bridge.example.com, or with the path
	// prefix a proxy adds): the page shows every endpoint under it.
	// Empty: the page shows them under its own URL, as the browser
	// reached it.
	PublicBase string
	// FeedRefused, when set, is why no principal can open the live view
	// (the feed): the page says so and shows the rest (the client
	// configurations, the console) without asking for a token first.
	FeedRefused string
	// Registry: the registry API (/admin/servers) is served. The page
	// asks it for the servers, and builds its Servers panel only if its
	// principal may read them.
	Registry bool
}

// asset is one embedded file, ready to serve.
type asset struct {
	body  []byte
	ctype string
	etag  string
}

// contentTypes are set here, not guessed from the system's MIME table,
// which varies between machines.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".json": "application/json",
}

// securityHeaders go on every response of the handler. The policy lets
// the page load only its own script and style and talk only to its own
// origin (the feed and the MCP endpoint): whatever a tool result, a
// stderr line or a tool description holds, the page renders it as text,
// and the policy stops it running as script if that ever fails.
// frame-ancestors stops other sites from framing the page (clickjacking).
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
		"img-src 'self' data:; media-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
	"X-Content-Type-Options": "nosniff",
	"X-Frame-Options":        "DENY",
	"Referrer-Policy":        "no-referrer",
}

// Handler serves the page at IndexPath and its assets under AssetPrefix.
// It serves GET and HEAD; anything else it does not know is 404.
func Handler(p Page) (http.Handler, error) {
	if len(p.Servers) == 0 {
		p.Servers = []Server{{Name: "default", Path: "/mcp"}}
	}
	files := map[string]asset{}
	err := fs.WalkDir(assets, "assets", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := assets.ReadFile(name)
		if err != nil {
			return err
		}
		url := AssetPrefix + strings.TrimPrefix(name, "assets/")
		if url == AssetPrefix+"index.html" {
			url = IndexPath
		}
		files[url] = newAsset(b, path.Ext(name))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("web: embedded assets: %w", err)
	}
	cfg, err := json.Marshal(struct {
		Servers     []Server `json:"servers"`
		Auth        bool     `json:"auth"`
		PublicBase  string   `json:"publicBase,omitempty"`
		FeedRefused string   `json:"feedRefused,omitempty"`
		Registry    bool     `json:"registry,omitempty"`
	}{p.Servers, p.Auth, p.PublicBase, p.FeedRefused, p.Registry})
	if err != nil {
		return nil, fmt.Errorf("web: page config: %w", err)
	}
	files[configPath] = newAsset(cfg, ".json")
	return handler{files: files, servers: p.Servers}, nil
}

func newAsset(b []byte, ext string) asset {
	sum := sha256.Sum256(b)
	return asset{body: b, ctype: contentTypes[ext], etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
}

type handler struct {
	files   map[string]asset
	servers []Server
}

func (h handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for k, v := range securityHeaders {
		w.Header().Set(k, v)
	}
	a, ok := h.files[r.URL.Path]
	if !ok && r.URL.Path != clientsPath {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	if !ok {
		h.clients(w, r)
		return
	}
	w.Header().Set("Content-Type", a.ctype)
	// Revalidate every time: the assets change with the binary, and a
	// 304 costs one round trip.
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("ETag", a.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}

// clients serves GET /ui/clients.json?server=NAME&url=URL: the client
// configurations (ClientSnippets) of the server NAME at URL, the MCP
// endpoint's full URL as the page worked it out (it knows how the browser
// reached the bridge; the bridge may not, behind a proxy). Like the page,
// it holds no data: the URL comes from the request, the rest from the
// page's configuration.
func (h handler) clients(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	i := slices.IndexFunc(h.servers, func(s Server) bool { return s.Name == q.Get("server") })
	if i < 0 {
		http.Error(w, "no such server", http.StatusNotFound)
		return
	}
	u := q.Get("url")
	if len(u) > 2048 {
		http.Error(w, "url: too long", http.StatusBadRequest)
		return
	}
	if err := CheckClientURL(u); err != nil {
		http.Error(w, "url: "+err.Error(), http.StatusBadRequest)
		return
	}
	s := h.servers[i]
	name := s.Name
	if name == "default" {
		name = "" // a bridge's one server: the snippets call it mcp-bridge
	}
	body, err := json.Marshal(ClientSnippets(ClientTarget{Name: name, URL: u, Auth: s.Auth, Stateless: s.Stateless}))
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", contentTypes[".json"])
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}
