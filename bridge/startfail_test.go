package bridge

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/stdio"
)

// TestCannotStart: a child its sandbox refused, or whose program could
// not be executed, fails its session's start with stdio's words for the
// client and the reason in data; what only the operator may see (the
// hashes of a pin) stays in the error for the log.
func TestCannotStart(t *testing.T) {
	pin := &stdio.StartError{Kind: stdio.StartPin, Detail: "/bin/x has sha256 aaaa, pinned bbbb", SHA256: "aaaa", Pinned: "bbbb"}
	tests := []struct {
		name    string
		err     error
		message string
		reason  string
	}{
		{"pin", fmt.Errorf("%w: stdio: start: %w", errNotStarted, pin), "server refused to start: binary does not match its pin", stdio.StartPin},
		{"sandbox", &stdio.StartError{Kind: stdio.StartSandbox, Detail: "landlock: x"}, (&stdio.StartError{Kind: stdio.StartSandbox}).ClientMessage(), stdio.StartSandbox},
		{"exec", &stdio.StartError{Kind: stdio.StartExec, Detail: "exec: y"}, (&stdio.StartError{Kind: stdio.StartExec}).ClientMessage(), stdio.StartExec},
		{"anything else", errors.New("fork/exec: no such file"), "could not start the MCP server process", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := errCannotStart(tt.err)
			if e.Message != tt.message {
				t.Errorf("message %q, want %q", e.Message, tt.message)
			}
			body := string(ErrorBody(e))
			if tt.reason != "" && !strings.Contains(body, `"reason":"`+tt.reason+`"`) {
				t.Errorf("body %s has no reason %q", body, tt.reason)
			}
			if strings.Contains(body, "aaaa") || strings.Contains(body, "bbbb") {
				t.Errorf("the client's body shows a hash: %s", body)
			}
			if tt.name == "pin" && !strings.Contains(e.Error(), "aaaa") {
				t.Errorf("the log's error lost the hashes: %v", e)
			}
		})
	}
}
