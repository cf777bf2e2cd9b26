package httpapi

import (
	"net/http"

	"github.com/rs/cors"
)

// newCORS lets browser pages on the allowed origins (the same list as the
// Origin guard: --allow-origin and loopback) use the endpoint. Without
// Access-Control-Expose-Headers: Mcp-Session-Id a browser client never
// sees its session id, and without WWW-Authenticate it never finds the
// authorization server: the two headers are exposed on every response,
// errors included. Credentials (cookies) are never allowed: the bridge
// authenticates with bearer tokens only, so no page can ride on a
// browser's ambient credentials. rs/cors, not go-chi/cors: it bounds the
// work of parsing Access-Control-Request-Headers (docs/decisions.md,
// "CORS").
func newCORS(origins originMatcher) func(http.Handler) http.Handler {
	return cors.New(cors.Options{
		AllowOriginFunc: origins.allowed,
		AllowedMethods:  []string{http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodOptions},
		AllowedHeaders: []string{
			"Authorization", "Content-Type", "Accept",
			"Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-ID",
			"Mcp-Method", "Mcp-Name", // sent by 2026-07-28 clients
		},
		ExposedHeaders:   []string{"Mcp-Session-Id", "WWW-Authenticate"},
		MaxAge:           600,
		AllowCredentials: false,
	}).Handler
}
