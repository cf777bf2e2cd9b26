package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// The echo server below is shared by the echo child (newline-delimited JSON
// on stdin/stdout) and the in-tool HTTP floor, so both floors do exactly the
// same JSON-RPC work per call and differ only in transport.

// latestProtocol is answered when a client asks for a version we don't know.
// The spec: "If the server supports the requested protocol version, it MUST
// respond with the same version. Otherwise, the server MUST respond with
// another protocol version it supports."
const latestProtocol = "2025-11-25"

// supportedProtocol reports whether v is a revision the echo server speaks.
func supportedProtocol(v string) bool {
	switch v {
	case "2025-03-26", "2025-06-18", "2025-11-25":
		return true
	}
	return false
}

// JSON-RPC error codes the echo server uses.
const (
	codeParseError     = -32700
	codeInvalidParams  = -32602
	codeMethodNotFound = -32601
)

// rpcRequest is every field of any request the echo server answers, decoded
// in one pass: a second Unmarshal of params would double the parse cost, and
// the floor must stay cheaper than anything a bridge can do.
type rpcRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		ProtocolVersion string `json:"protocolVersion"`
		Name            string `json:"name"`
		Arguments       struct {
			Message json.RawMessage `json:"message"`
		} `json:"arguments"`
	} `json:"params"`
}

// Constant response pieces, written once so the hot path only appends.
const (
	serverInfo     = `{"name":"mcp-bridge-load-echo","version":"1.0.0"}`
	initResultTail = `,"capabilities":{"tools":{}},"serverInfo":` + serverInfo + `}}`
	toolsListBody  = `{"tools":[{"name":"echo","description":"Returns its message argument as text.",` +
		`"inputSchema":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}}]}`
)

// answer appends the response to one JSON-RPC message to dst and reports
// whether there is one: notifications and responses (no method, or no id) get
// none. The method is returned so the HTTP floor can treat initialize
// specially. req is scratch space owned by the caller.
func answer(dst, msg []byte, req *rpcRequest) (out []byte, method string, reply bool) {
	*req = rpcRequest{} // Unmarshal leaves absent fields alone; stale ones would leak between messages.
	err := json.Unmarshal(msg, req)
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil:
	case errors.As(err, &typeErr) && len(req.ID) > 0 && req.Method != "":
		// A well-formed request with params of the wrong shape.
		return appendError(dst, req.ID, codeInvalidParams, "invalid params"), req.Method, true
	default:
		// "If there was an error in detecting the id in the Request object
		// (e.g. Parse error/Invalid Request), it MUST be Null."
		return appendError(dst, json.RawMessage("null"), codeParseError, "parse error"), "", true
	}
	if len(req.ID) == 0 || req.Method == "" {
		return dst, req.Method, false
	}

	switch req.Method {
	case "tools/call":
		if req.Params.Name != "echo" {
			return appendError(dst, req.ID, codeInvalidParams, "unknown tool "+strconv.Quote(req.Params.Name)), req.Method, true
		}
		m := req.Params.Arguments.Message
		if len(m) == 0 || m[0] != '"' {
			return appendError(dst, req.ID, codeInvalidParams, "argument message must be a string"), req.Method, true
		}
		// m is a JSON string already validated by Unmarshal: echo its bytes
		// verbatim instead of decoding and re-encoding it.
		dst = appendResultHead(dst, req.ID)
		dst = append(dst, `{"content":[{"type":"text","text":`...)
		dst = append(dst, m...)
		return append(dst, `}]}}`...), req.Method, true
	case "initialize":
		v := req.Params.ProtocolVersion
		if !supportedProtocol(v) {
			v = latestProtocol
		}
		dst = appendResultHead(dst, req.ID)
		dst = append(dst, `{"protocolVersion":`...)
		dst = strconv.AppendQuote(dst, v)
		return append(dst, initResultTail...), req.Method, true
	case "ping":
		dst = appendResultHead(dst, req.ID)
		return append(dst, `{}}`...), req.Method, true
	case "tools/list":
		dst = appendResultHead(dst, req.ID)
		dst = append(dst, toolsListBody...)
		return append(dst, '}'), req.Method, true
	}
	return appendError(dst, req.ID, codeMethodNotFound, "method not found: "+strconv.Quote(req.Method)), req.Method, true
}

func appendResultHead(dst []byte, id json.RawMessage) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	return append(dst, `,"result":`...)
}

func appendError(dst []byte, id json.RawMessage, code int, message string) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"error":{"code":`...)
	dst = strconv.AppendInt(dst, int64(code), 10)
	dst = append(dst, `,"message":`...)
	msg, _ := json.Marshal(message) // Marshal of a string cannot fail.
	dst = append(dst, msg...)
	return append(dst, `}}`...)
}

// runEchoChild serves the echo tool on newline-delimited JSON-RPC until r
// reaches EOF, which is how its parent asks it to stop. The stdio transport
// spec: "the client SHOULD initiate shutdown by first closing the input
// stream to the child process".
func runEchoChild(r io.Reader, w io.Writer) error {
	br := bufio.NewReaderSize(r, 64<<10)
	bw := bufio.NewWriterSize(w, 64<<10)
	var (
		req  rpcRequest
		out  []byte
		long []byte // assembles lines longer than br's buffer
	)
	for {
		line, err := readLine(br, &long)
		if msg := bytes.TrimSpace(line); len(msg) > 0 {
			var reply bool
			out, _, reply = answer(out[:0], msg, &req)
			if reply {
				out = append(out, '\n')
				if _, werr := bw.Write(out); werr != nil {
					return fmt.Errorf("echo child: write: %w", werr)
				}
			}
		}
		if err != nil {
			ferr := bw.Flush()
			if err != io.EOF {
				return fmt.Errorf("echo child: read: %w", err)
			}
			if ferr != nil {
				return fmt.Errorf("echo child: flush: %w", ferr)
			}
			return nil
		}
		// Flush once no complete message is waiting: a pipelining client gets
		// its responses batched into one write, a ping-pong client gets each
		// response at once instead of waiting for input that will not come.
		if !lineBuffered(br) {
			if err := bw.Flush(); err != nil {
				return fmt.Errorf("echo child: flush: %w", err)
			}
		}
	}
}

// readLine returns the next line of br with its '\n' (absent at EOF); the
// slice is valid until the next read. Lines longer than br's buffer are
// assembled in *long, so the common case copies nothing.
func readLine(br *bufio.Reader, long *[]byte) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	*long = append((*long)[:0], line...)
	for errors.Is(err, bufio.ErrBufferFull) {
		line, err = br.ReadSlice('\n')
		*long = append(*long, line...)
	}
	return *long, err
}

// lineBuffered reports whether br holds a complete line it can return
// without blocking.
func lineBuffered(br *bufio.Reader) bool {
	n := br.Buffered()
	if n == 0 {
		return false
	}
	b, _ := br.Peek(n) // Peek of at most Buffered bytes never fails.
	return bytes.IndexByte(b, '\n') >= 0
}
