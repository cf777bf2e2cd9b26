package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/stdio"
)

// serverStatus is the body of GET /status: what the server runs and
// how, its sandbox as this system enforces it included (none: null).
// Behind the endpoint's authentication, as the web page's feed is: it
// names paths of the host.
type serverStatus struct {
	Mode    string               `json:"mode"`
	Argv    []string             `json:"argv"` // as bridge.RedactArgv shows it
	Sandbox *stdio.SandboxReport `json:"sandbox"`
}

func (h *mcpHandler) status(w http.ResponseWriter, _ *http.Request) error {
	s := h.b.Snapshot()
	mode := s.Mode
	if h.opts.Stateless {
		mode = "stateless"
	}
	body, err := json.Marshal(serverStatus{Mode: mode, Argv: s.Argv, Sandbox: s.Sandbox})
	if err != nil {
		return &bridge.Error{Kind: bridge.KindInternal, Code: bridge.CodeInternalError, Message: "internal error", Err: err}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(append(body, '\n'))
	return nil
}
