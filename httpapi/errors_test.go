package httpapi

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// TestServeError: a handler's error becomes a status and a JSON-RPC
// error body only while nothing was written; once the response has begun
// it is logged instead, as tsweb's error handler does, and the answer the
// client is reading is left whole.
func TestServeError(t *testing.T) {
	tests := []struct {
		name       string
		handler    func(http.ResponseWriter, *http.Request) error
		status     int
		body, logs string
	}{
		{"nothing written", func(http.ResponseWriter, *http.Request) error { return bridge.ErrSessionNotFound },
			404, `"error":{"code":-32001`, "request refused"},
		{"the body has begun", func(w http.ResponseWriter, _ *http.Request) error {
			_, _ = w.Write([]byte("partial"))
			return errors.New("later failure")
		}, 200, "partial", "request failed after its response began"},
		{"only the status", func(w http.ResponseWriter, _ *http.Request) error {
			w.WriteHeader(http.StatusAccepted)
			return bridge.ErrSessionNotFound
		}, 202, "", "request failed after its response began"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			h := &mcpHandler{opts: Options{Now: time.Now}, log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
			w := httptest.NewRecorder()
			h.serve(tt.handler)(w, httptest.NewRequest(http.MethodPost, "/mcp", nil))
			if w.Code != tt.status || !strings.Contains(w.Body.String(), tt.body) || tt.body == "" && w.Body.Len() != 0 {
				t.Errorf("answered %d %q, want %d with %q", w.Code, w.Body.String(), tt.status, tt.body)
			}
			if tt.body == "partial" && w.Body.String() != "partial" {
				t.Errorf("the body begun was added to: %q", w.Body.String())
			}
			if !strings.Contains(logs.String(), tt.logs) {
				t.Errorf("logs %q, want %q", logs.String(), tt.logs)
			}
		})
	}
}
