package httpapi

import (
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// httpError is what a handler returns when the request fails before any
// response was written: a status, and a JSON-RPC error body for it.
type httpError struct {
	status int
	code   int    // JSON-RPC error code
	msg    string // shown to the client
	id     []byte // request id, when known
	data   any    // the JSON-RPC error's data, when it has one
	header http.Header
}

func (e *httpError) Error() string { return strconv.Itoa(e.status) + " " + e.msg }

// errorStatus maps a bridge error kind to its HTTP status: the one place
// where bridge errors become HTTP.
func errorStatus(k bridge.Kind) int {
	switch k {
	case bridge.KindInvalid:
		return http.StatusBadRequest
	case bridge.KindNotFound:
		return http.StatusNotFound
	case bridge.KindConflict:
		return http.StatusConflict
	case bridge.KindUnavailable:
		return http.StatusServiceUnavailable
	case bridge.KindGone:
		return http.StatusGone
	case bridge.KindTooMany:
		return http.StatusTooManyRequests
	default:
		return http.StatusInternalServerError
	}
}

// authStatus maps an auth refusal to its HTTP status (RFC 6750 section
// 3.1; MCP: "401 Unauthorized: authorization required or token invalid",
// "403 Forbidden: invalid scopes or insufficient permissions"). A token in
// the query string is 401, not RFC 6750's 400 (docs/spec-rules.md,
// "Authorization: a token in the query string").
func authStatus(e *auth.Error) int {
	switch {
	case errors.Is(e, auth.ErrQueryToken):
		return http.StatusUnauthorized
	}
	switch e.Code {
	case auth.CodeInvalidRequest:
		return http.StatusBadRequest
	case auth.CodeInsufficientScope:
		return http.StatusForbidden
	default: // no credentials, or invalid_token
		return http.StatusUnauthorized
	}
}

// toHTTPError turns any handler error into an httpError.
func toHTTPError(err error) *httpError {
	var he *httpError
	if errors.As(err, &he) {
		return he
	}
	var be *bridge.Error
	if errors.As(err, &be) {
		he := &httpError{status: errorStatus(be.Kind), code: be.Code, msg: be.Message, id: be.ID, data: be.Data}
		if be.Kind == bridge.KindUnavailable || be.Kind == bridge.KindTooMany {
			// Sessions and calls end all the time; a moment later there
			// is room. A breaker says when it lets a start through again.
			after := 1
			if be.RetryAfter > 0 {
				after = int(math.Ceil(be.RetryAfter.Seconds()))
			}
			he.header = http.Header{"Retry-After": {strconv.Itoa(after)}}
		}
		return he
	}
	return &httpError{status: http.StatusInternalServerError, code: bridge.CodeInternalError, msg: "internal error"}
}

func writeError(w http.ResponseWriter, e *httpError) {
	for k, v := range e.header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	_, _ = w.Write(bridge.ErrorBody(&bridge.Error{Code: e.code, Message: e.msg, ID: e.id, Data: e.data}))
}
