package bridge

import (
	"time"

	"github.com/mcp-bridge/mcp-bridge/stdio"
)

// ErrCommandNotFound: the child's executable cannot be found, so no session
// could start. Ready returns it with the lookup error attached.
var ErrCommandNotFound = &Error{Kind: KindUnavailable, Code: CodeInternalError, Message: "the MCP server's command cannot be found"}

// ErrSharedDown: the shared child kept crashing and the bridge stopped
// restarting it.
var ErrSharedDown = &Error{Kind: KindUnavailable, Code: CodeChildExited, Message: "the shared MCP server keeps crashing; the bridge stopped restarting it"}

// ErrSharedUnresponsive: the shared child did not answer a ping.
var ErrSharedUnresponsive = &Error{Kind: KindUnavailable, Code: CodeChildExited, Message: "the shared MCP server does not answer a ping"}

// readyPingTimeout bounds the readiness ping of a shared child.
const readyPingTimeout = 2 * time.Second

// Ready reports whether Initialize could start a session now, without
// starting one (a readiness probe must not spawn a process per probe):
// nil, or ErrClosing while the bridge drains or closes, ErrTooManySessions
// at the session cap, ErrServerFailing while per-session mode's start
// breaker is open (the last sessions' children all ended before they
// answered initialize), ErrSharedDown once a shared child's crash-loop
// breaker has tripped, or ErrCommandNotFound when the command's executable
// does not resolve.
func (b *Bridge) Ready() error {
	n, shared := b.census()
	switch {
	case b.phaseNow() != phaseOpen:
		return ErrClosing
	case n >= b.cfg.MaxSessions:
		return ErrTooManySessions
	}
	if err := b.starts.ready(); err != nil {
		return err
	}
	if shared != nil {
		if dead, _ := shared.going(); dead {
			return ErrSharedDown
		}
		// "The receiver MUST respond promptly": a shared child that does
		// not is hung, and every session on it with it.
		if err := shared.ping(readyPingTimeout); err != nil {
			return &Error{Kind: ErrSharedUnresponsive.Kind, Code: ErrSharedUnresponsive.Code, Message: ErrSharedUnresponsive.Message, Err: err}
		}
	}
	// Found as the child's spawn finds it (stdio.LookPath): a bare name in
	// the child's PATH, a relative path from its working directory.
	if _, err := stdio.LookPath(b.cfg.Command[0], b.cfg.Dir, b.cfg.Env); err != nil {
		return &Error{Kind: ErrCommandNotFound.Kind, Code: ErrCommandNotFound.Code, Message: ErrCommandNotFound.Message, Err: err}
	}
	return nil
}
