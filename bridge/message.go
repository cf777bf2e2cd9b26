package bridge

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// MsgKind says what a JSON-RPC message is.
type MsgKind int

const (
	Request MsgKind = iota + 1
	Notification
	Response
)

// Message is one JSON-RPC message from a client: compacted, checked and
// classified once, on the way in.
type Message struct {
	Raw    []byte // compact JSON
	Kind   MsgKind
	Method string // for requests and notifications
	f      fields
}

// ID is the raw id of a request or response, byte for byte as sent.
func (m *Message) ID() []byte { return m.f.id.of(m.Raw) }

// Methods the bridge treats specially.
const (
	MethodInitialize  = "initialize"
	methodCancelled   = "notifications/cancelled"
	methodProgress    = "notifications/progress"
	methodLogMessage  = "notifications/message"
	methodInitialized = "notifications/initialized"
)

// ParseBody checks an HTTP body and splits it into messages. A body is one
// message or, as 2025-03-26 allows, a batch (a JSON array) of them. It never
// returns an empty list without an error.
//
// HTTP bodies may be pretty-printed, but stdio framing forbids newlines
// inside a message, so every message is compacted here (which also
// validates it) before it can reach a child. A body that is compact
// already, as clients' bodies mostly are, is only validated, and the
// messages are slices of it rather than of a copy: the caller must not
// change body afterwards.
func ParseBody(body []byte) (msgs []Message, batch bool, err error) {
	if !utf8.Valid(body) {
		// "JSON text exchanged between systems that are not part of a
		// closed ecosystem MUST be encoded using UTF-8" (RFC 8259): and
		// decoders differ on what else is (encoding/json reads a bad byte
		// as U+FFFD, Python refuses it), so a name with one would not be
		// the name the bridge read.
		return nil, false, &Error{Kind: KindInvalid, Code: CodeParseError, Message: "Parse error: the body is not valid UTF-8"}
	}
	raw := body
	if !isCompact(body) || !json.Valid(body) {
		var buf bytes.Buffer
		buf.Grow(len(body))
		if err := json.Compact(&buf, body); err != nil {
			return nil, false, &Error{Kind: KindInvalid, Code: CodeParseError, Message: "Parse error: the body is not valid JSON", Err: err}
		}
		raw = buf.Bytes()
	}
	if raw[0] != '[' {
		m, err := parseMessage(raw)
		if err != nil {
			return nil, false, err
		}
		return []Message{m}, false, nil
	}
	err = eachElement(raw, func(elem []byte) error {
		m, err := parseMessage(elem)
		if err != nil {
			return err
		}
		msgs = append(msgs, m)
		return nil
	})
	if err != nil {
		return nil, true, err
	}
	if len(msgs) == 0 {
		return nil, true, invalid(CodeInvalidRequest, "Invalid Request: empty batch", nil)
	}
	return msgs, true, nil
}

// isCompact reports whether b has no white space outside its strings:
// all that json.Compact would remove from valid JSON.
func isCompact(b []byte) bool {
	in := false // inside a string
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case in && c == '\\':
			i++ // the escaped byte
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		}
	}
	return true
}

func parseMessage(raw []byte) (Message, error) {
	if raw[0] != '{' {
		return Message{}, invalid(CodeInvalidRequest, "Invalid Request: a message must be a JSON object", nil)
	}
	f := noFields
	if err := checkKeys(raw, envelopeKeys, place{where: "the message"}, f.set); err != nil {
		if e, ok := err.(*Error); ok {
			return Message{}, e
		}
		return Message{}, invalid(CodeInvalidRequest, "Invalid Request: "+err.Error(), nil)
	}
	if err := checkMembers(raw, f); err != nil {
		return Message{}, err
	}
	m := Message{Raw: raw, f: f}
	id := f.id.of(raw)
	if f.id.ok() && !validID(id) {
		// "The ID MUST NOT be null" and must be a string or an integer.
		return m, invalid(CodeInvalidRequest, "Invalid Request: id must be a string or a number", nil)
	}
	if string(f.jsonrpc.of(raw)) != `"2.0"` {
		return m, invalid(CodeInvalidRequest, `Invalid Request: "jsonrpc" must be "2.0"`, id)
	}
	switch {
	case f.method.ok():
		if err := unquote(f.method.of(raw), &m.Method); err != nil || m.Method == "" {
			return m, invalid(CodeInvalidRequest, "Invalid Request: method must be a non-empty string", id)
		}
		if p := f.params.of(raw); p != nil && p[0] != '{' && p[0] != '[' {
			return m, invalid(CodeInvalidRequest, "Invalid Request: params must be an object or an array", id)
		}
		m.Kind = Notification
		if f.id.ok() {
			m.Kind = Request
		}
	case f.id.ok() && (f.result.ok() != f.error.ok()):
		m.Kind = Response
	default:
		return m, invalid(CodeInvalidRequest, "Invalid Request: neither a request, a notification nor a response", id)
	}
	return m, nil
}

// checkMembers checks the keys within a client's message (keys.go): params,
// its _meta, and everything below them; a response's result or error.
func checkMembers(raw []byte, f fields) error {
	if r := f.result.of(raw); r != nil {
		if err := checkDeep(r, place{where: "result"}); err != nil {
			return err
		}
	}
	if e := f.error.of(raw); e != nil {
		if err := checkDeep(e, place{where: "error"}); err != nil {
			return err
		}
	}
	p := f.params.of(raw)
	if p == nil || p[0] != '{' {
		return checkDeep(p, place{where: "params"})
	}
	var inner error
	err := checkKeys(p, paramsKeys, place{where: "params"}, func(key []byte, v span) {
		val := v.of(p)
		if inner != nil || (val[0] != '{' && val[0] != '[') {
			return
		}
		if val[0] == '{' && string(key) == "_meta" {
			var below error
			inner = checkKeys(val, metaKeys, place{where: "params._meta"}, func(key []byte, v span) {
				if below == nil {
					below = checkDeep(v.of(val), place{where: "params._meta", key: key})
				}
			})
			if inner == nil {
				inner = below
			}
			return
		}
		inner = checkDeep(val, place{where: "params", key: key})
	})
	if err != nil {
		return err
	}
	return inner
}

// validID: a JSON string or number.
func validID(id []byte) bool {
	return len(id) > 0 && (id[0] == '"' || id[0] == '-' || (id[0] >= '0' && id[0] <= '9'))
}

// progressToken finds params._meta.progressToken in a request.
func progressToken(raw []byte, params span) []byte {
	p := params.of(raw)
	if p == nil || p[0] != '{' || !bytes.Contains(p, []byte("progressToken")) {
		return nil
	}
	meta := member(p, "_meta").of(p)
	if meta == nil || meta[0] != '{' {
		return nil
	}
	return member(meta, "progressToken").of(meta)
}

// setParam sets the member key of the message's params to the JSON
// value v (which must be valid), and reads the message again.
func (m *Message) setParam(key string, v []byte) {
	p := m.f.params.of(m.Raw)
	m.reparse(splice(m.Raw, m.f.params, splice(p, member(p, key), v)))
}

// deleteParam removes the member key of the message's params, and reads
// the message again.
func (m *Message) deleteParam(key string) { m.reparse(withoutParam(m.Raw, key)) }

// reparse reads raw, a changed copy of the message, in its place.
func (m *Message) reparse(raw []byte) {
	if n, err := parseMessage(raw); err == nil {
		*m = n
	}
}

// progressToken is the request's params._meta.progressToken, nil for
// none.
func (m *Message) progressToken() []byte { return progressToken(m.Raw, m.f.params) }

// Param is the raw JSON of the member key of a request's or a
// notification's params object, byte for byte as sent; nil when there is
// none. It reads without decoding: the transport learns, say, the tool a
// tools/call names from the bytes already checked, not from a second
// parse of the message.
func (m *Message) Param(key string) []byte {
	p := m.f.params.of(m.Raw)
	if p == nil || p[0] != '{' {
		return nil
	}
	return member(p, key).of(p)
}

// IsModernProbe reports whether a message is in the 2026-07-28 format: a
// server/discover request, or one carrying its protocol version in _meta.
func (m *Message) IsModernProbe() bool {
	if m.Method == "server/discover" {
		return true
	}
	p := m.f.params.of(m.Raw)
	return p != nil && bytes.Contains(p, []byte(`"io.modelcontextprotocol/protocolVersion"`))
}

// Versions are the protocol versions whose HTTP rules the bridge knows,
// oldest first.
var Versions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}

// KnownVersion reports whether v is one of Versions.
func KnownVersion(v string) bool {
	for _, k := range Versions {
		if v == k {
			return true
		}
	}
	return false
}

// VersionAtLeast reports whether v is a known version no older than min,
// judged by position in Versions rather than by comparing strings.
func VersionAtLeast(v, min string) bool {
	iv, im := -1, -1
	for i, k := range Versions {
		if k == v {
			iv = i
		}
		if k == min {
			im = i
		}
	}
	return iv >= 0 && im >= 0 && iv >= im
}

// unquote decodes a JSON string, without encoding/json's reflection for
// the usual string with no escapes.
func unquote(b []byte, s *string) error {
	if len(b) >= 2 && b[0] == '"' && bytes.IndexByte(b, '\\') < 0 {
		*s = string(b[1 : len(b)-1])
		return nil
	}
	return json.Unmarshal(b, s)
}
