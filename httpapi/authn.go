package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// prmPath is where RFC 9728 puts protected-resource metadata. MCP
// 2025-11-25: clients try the URL in the 401 challenge, then this path
// with the endpoint's path appended ("path-inserted"), then this path at
// the root; the bridge serves all three.
const prmPath = "/.well-known/oauth-protected-resource"

// authn is the resource-server side of MCP authorization: every request to
// the MCP endpoint is verified (MCP: "even if they are part of the same
// logical session"), and a refusal carries the challenge that leads the
// client to the metadata and from there to an authorization server.
type authn struct {
	v        auth.Verifier
	resource resourceURL
	scopes   []string
	log      *slog.Logger
}

func (a *authn) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := a.v.Verify(r)
		if err != nil {
			a.refuse(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(auth.NewContext(r.Context(), p)))
	})
}

// refuse answers with the status and the WWW-Authenticate challenge of
// RFC 6750 section 3 and RFC 9728 section 5.1. The body is a JSON-RPC
// error, as for every refusal of the bridge; neither says more than the
// fixed description of the auth.Error.
func (a *authn) refuse(w http.ResponseWriter, r *http.Request, err error) {
	var ae *auth.Error
	if !errors.As(err, &ae) {
		ae = &auth.Error{Code: auth.CodeInvalidToken, Reason: "verifier failed"}
		a.log.Error("token verification failed", "err", err)
	}
	status := authStatus(ae)
	params := []string{}
	if ae.Code != auth.CodeNone {
		params = append(params, `error="`+ae.Code+`"`)
		if ae.Description != "" {
			params = append(params, `error_description="`+quotable(ae.Description)+`"`)
		}
	}
	switch {
	case ae.Scope != "":
		params = append(params, `scope="`+quotable(ae.Scope)+`"`)
	case len(a.scopes) > 0 && status == http.StatusUnauthorized:
		// MCP 2025-11-25: the server "SHOULD include a scope parameter"
		// in the 401 challenge.
		params = append(params, `scope="`+quotable(strings.Join(a.scopes, " "))+`"`)
	}
	params = append(params, `resource_metadata="`+quotable(a.resource.metadata(r))+`"`)

	lvl := slog.LevelInfo
	if ae.Code == auth.CodeNone {
		lvl = slog.LevelDebug // the first step of every client's discovery
	}
	a.log.Log(r.Context(), lvl, "request refused: unauthorized", "method", r.Method, "status", status,
		"reason", ae.Reason, "remote", r.RemoteAddr)

	msg := "Unauthorized: a valid bearer token is required in the Authorization header"
	switch status {
	case http.StatusForbidden:
		msg = "Forbidden: the access token lacks a required scope (" + ae.Scope + ")"
	case http.StatusBadRequest:
		msg = "Bad Request: " + ae.Description
	}
	writeError(w, &httpError{status: status, code: bridge.CodeInvalidRequest, msg: msg,
		header: http.Header{"Www-Authenticate": {"Bearer " + strings.Join(params, ", ")}}})
}

// quotable keeps a value inside an RFC 7230 quoted-string.
func quotable(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\r", "", "\n", "").Replace(s)
}

// resourceURL is the MCP endpoint's canonical URL (RFC 8707 / MCP: "the
// canonical URI of the MCP server"): configured, or else the URL the
// request itself was sent to.
type resourceURL struct {
	fixed string // canonical public URL; "" to derive from the request
	path  string // the endpoint path when derived
}

func newResourceURL(public, path string) (resourceURL, error) {
	if public == "" {
		return resourceURL{path: path}, nil
	}
	c, err := CanonicalURL(public)
	if err != nil {
		return resourceURL{}, err
	}
	return resourceURL{fixed: c}, nil
}

// CanonicalURL checks and canonicalises the bridge's public MCP URL as MCP
// describes it: absolute http(s), "lowercase scheme and host", no
// fragment, no query, no trailing slash.
func CanonicalURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "HTTP" && u.Scheme != "HTTPS") || u.Host == "" {
		return "", fmt.Errorf("public URL: want an absolute http or https URL")
	}
	if u.Fragment != "" || u.RawQuery != "" || u.User != nil {
		return "", fmt.Errorf("public URL: want no query, fragment or user info")
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u.String(), nil
}

func (ru resourceURL) of(r *http.Request) string {
	if ru.fixed != "" {
		return ru.fixed
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + strings.ToLower(r.Host) + ru.path
}

// metadata is the path-inserted metadata URL of the resource.
func (ru resourceURL) metadata(r *http.Request) string {
	u, err := url.Parse(ru.of(r))
	if err != nil {
		return prmPath
	}
	u.Path = prmPath + u.Path
	return u.String()
}

// publicPath is the path of the configured public URL ("" if none).
func (ru resourceURL) publicPath() string {
	if ru.fixed == "" {
		return ""
	}
	u, _ := url.Parse(ru.fixed)
	return u.Path
}

// prm serves the protected-resource metadata document (RFC 9728 section
// 3.2), unauthenticated: it is how a client without a token learns where
// to get one.
type prm struct {
	resource resourceURL
	servers  []string
	scopes   []string
}

func (p prm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	doc := struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers,omitempty"`
		ScopesSupported      []string `json:"scopes_supported,omitempty"`
		BearerMethods        []string `json:"bearer_methods_supported"`
		ResourceName         string   `json:"resource_name"`
	}{
		// RFC 9728 section 3.3: clients reject the document unless
		// resource equals the URL they used.
		Resource:             p.resource.of(r),
		AuthorizationServers: p.servers,
		ScopesSupported:      p.scopes,
		BearerMethods:        []string{"header"}, // never query, never form body
		ResourceName:         "mcp-bridge",
	}
	b, _ := json.Marshal(doc)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "max-age=300")
	_, _ = w.Write(append(b, '\n'))
}
