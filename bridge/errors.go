package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcp-bridge/mcp-bridge/stdio"
)

// Kind classifies an error for the transports. Each transport maps a Kind to
// its own status in exactly one place (httpapi's errorStatus).
type Kind int

const (
	KindInternal    Kind = iota // a bug or an unexpected failure
	KindInvalid                 // the client sent something malformed or not allowed
	KindNotFound                // no such session (never existed, ended, or not yours)
	KindConflict                // e.g. a second GET stream on a session
	KindUnavailable             // over a limit (sessions): try again later
	KindGone                    // what a client asked to have again has aged out
	KindTooMany                 // over a per-principal limit: this principal must wait, others need not
)

// JSON-RPC error codes the bridge uses. The -32000..-32099 range is for
// implementation-defined server errors; the bridge keeps to the low end,
// clear of the codes 2026-07-28 reserves (-32020 and up).
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	// CodeSessionRequired answers a request without a session that needs
	// one, such as a 2026-07-28 probe. It is deliberately not a 2026-07-28
	// error code (-32020 and up), so dual-era clients fall back to
	// initialize; the SDKs use it for the same case.
	CodeSessionRequired = -32000
	// CodeSessionNotFound: the session id is unknown or ended (as the
	// TypeScript SDK answers it).
	CodeSessionNotFound = -32001
	// CodeBridgeClosing: the bridge is shutting down.
	CodeBridgeClosing = -32003
	// CodeResponseTooLarge: the child's answer was over the line cap.
	CodeResponseTooLarge = -32004
	// CodeChildExited: the child process ended before answering.
	CodeChildExited = -32005
	// CodeEventsGone: a Last-Event-ID whose following events have aged
	// out of the session's event log; resuming would leave a gap.
	CodeEventsGone = -32006
	// CodeRequestTimeout: the child did not answer the request within
	// Config.RequestTimeout (initialize: InitTimeout). The child was sent
	// notifications/cancelled for it (initialize: it was stopped).
	CodeRequestTimeout = -32007
)

// Error is the bridge's error type: a Kind for the transport, a message the
// client may see, and the JSON-RPC code and request id for the body.
type Error struct {
	Kind    Kind
	Code    int             // JSON-RPC error code
	Message string          // safe to show to the client
	ID      json.RawMessage // id of the request it answers, if known
	// Data is the JSON-RPC error's data member, for the client (the
	// supported versions of -32022, the capabilities -32021 needs).
	Data any
	// RetryAfter, when set, is when a refused client may try again
	// (KindUnavailable); the transports say it (Retry-After).
	RetryAfter time.Duration
	Err        error // for the log only
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %v", e.Message, e.Err)
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errors the transports test for with errors.Is.
var (
	ErrSessionNotFound = &Error{Kind: KindNotFound, Code: CodeSessionNotFound, Message: "Session not found: it ended or never existed; start a new one with initialize"}
	ErrStreamConflict  = &Error{Kind: KindConflict, Code: CodeInvalidRequest, Message: "a stream for server-initiated messages is already open for this session"}
	ErrTooManySessions = &Error{Kind: KindUnavailable, Code: CodeInternalError, Message: "too many sessions"}
	ErrClosing         = &Error{Kind: KindUnavailable, Code: CodeBridgeClosing, Message: "the bridge is shutting down"}
	// ErrStreamBehind: the stream's client fell too far behind and its
	// connection is being dropped (Stream.Serve).
	ErrStreamBehind = &Error{Kind: KindUnavailable, Code: CodeInternalError, Message: "the client fell too far behind on the stream"}
)

// Is makes errors.Is match on the sentinel's message and kind, so a
// sentinel can be returned with an id attached.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Kind == e.Kind && t.Message == e.Message
}

// withID is a copy of e answering the request id: sentinels are shared
// and never changed.
func withID(e *Error, id json.RawMessage) *Error {
	c := *e
	c.ID = id
	return &c
}

func invalid(code int, msg string, id json.RawMessage) *Error {
	return &Error{Kind: KindInvalid, Code: code, Message: msg, ID: id}
}

// errCannotStart is the error of a child that did not start: the bridge
// closing, the process budget spent (--max-children), a wait that ended,
// or the process failing to start (err, for the log). A child its sandbox
// refused (its pin, a right not enforced) or that could not be executed
// says which to the client, in the words stdio gives a client, and
// data.reason names it (pin_mismatch, sandbox, exec).
func errCannotStart(err error) *Error {
	if e, ok := err.(*Error); ok {
		return e
	}
	switch {
	case errors.Is(err, ErrClosing):
		return ErrClosing
	case errors.Is(err, errNoSlot):
		return errTooManyChildren
	}
	if se, ok := errors.AsType[*stdio.StartError](err); ok {
		return &Error{Kind: KindInternal, Code: CodeInternalError, Message: se.ClientMessage(), Data: map[string]string{"reason": se.Kind}, Err: err}
	}
	return &Error{Kind: KindInternal, Code: CodeInternalError, Message: "could not start the MCP server process", Err: err}
}

// errorResponse builds a JSON-RPC error response for the request id.
func errorResponse(id []byte, code int, message string, data any) []byte {
	type rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	}
	if len(id) == 0 {
		id = []byte("null")
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}{"2.0", id, rpcError{code, message, data}})
	if err != nil { // only a broken data value gets here
		return errorResponse(id, code, message, nil)
	}
	return b
}

// ErrorBody is the JSON-RPC error body for err, for transports to send.
func ErrorBody(err error) []byte {
	var e *Error
	if !errors.As(err, &e) {
		return errorResponse(nil, CodeInternalError, "internal error", nil)
	}
	return errorResponse(e.ID, e.Code, e.Message, e.Data)
}
