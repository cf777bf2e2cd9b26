package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// readyz answers GET /readyz: 200 when the bridge could start a new
// session now, 503 with a JSON reason when it could not (draining or
// closing, at --max-sessions, the command not found, a shared server
// given up on). /healthz says the process is alive; /readyz says whether
// to send it new sessions. It never spawns a process (bridge.Ready). A
// middleware, like chi's Heartbeat, so it answers whatever comes after it.
func readyz(b *bridge.Bridge) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/readyz" || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
				next.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-store")
			err := b.Ready()
			if err == nil {
				_, _ = w.Write([]byte(`{"status":"ready"}` + "\n"))
				return
			}
			w.WriteHeader(http.StatusServiceUnavailable)
			body, _ := json.Marshal(readiness{Status: "unavailable", Reason: notReadyReason(err), Message: publicMessage(err)})
			_, _ = w.Write(append(body, '\n'))
		})
	}
}

// readiness is the body of /readyz when the bridge is not ready.
type readiness struct {
	Status  string `json:"status"`
	Reason  string `json:"reason"`  // a stable token for scripts
	Message string `json:"message"` // for people
}

// notReadyReason names why the bridge is not ready, one token per
// bridge.Ready error.
func notReadyReason(err error) string {
	switch {
	case errors.Is(err, bridge.ErrClosing):
		return "closing"
	case errors.Is(err, bridge.ErrTooManySessions):
		return "max_sessions"
	case errors.Is(err, bridge.ErrCommandNotFound):
		return "command_not_found"
	case errors.Is(err, bridge.ErrSharedDown), errors.Is(err, bridge.ErrServerFailing):
		return "server_down"
	case errors.Is(err, bridge.ErrSharedUnresponsive):
		return "server_unresponsive"
	default:
		return "unavailable"
	}
}

// publicMessage is what the client may see: the bridge error's message,
// never the error it wraps (paths, the command line), since /readyz is
// unauthenticated.
func publicMessage(err error) string {
	var be *bridge.Error
	if errors.As(err, &be) {
		return be.Message
	}
	return "not ready"
}
