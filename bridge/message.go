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
	// read is where the members the bridge reads of params and
	// params._meta are in Raw, found by the walk that checks their keys
	// as the message is parsed (keys.go): no reader scans for them again.
	read readSpans
}

// readSpans are the places in a message of the members the bridge reads,
// by their index in paramsKeys and metaKeys.
type readSpans struct {
	params [maxParamKeys]pos
	meta   [maxMetaKeys]pos
}

// The most keys paramsKeys and metaKeys may list (TestReadKeysListed).
const (
	maxParamKeys = 24
	maxMetaKeys  = 8
)

// pos is a member's value's place in a message; the zero pos is none (no
// value of a member starts at 0).
type pos struct{ start, end int32 }

func posOf(base int, v span) pos { return pos{int32(base + v.start), int32(base + v.end)} }

func (p pos) of(b []byte) []byte {
	if p.end == 0 {
		return nil
	}
	return b[p.start:p.end]
}

func (p pos) span() span {
	if p.end == 0 {
		return absent
	}
	return span{int(p.start), int(p.end)}
}

// paramIndex and metaIndex are the index of each key the bridge reads in
// paramsKeys and metaKeys.
var (
	paramIndex = indexOf(paramsKeys)
	metaIndex  = indexOf(metaKeys)
	metaParam  = paramIndex["_meta"] // looked up once, not per member
)

func indexOf(s *keySet) map[string]int {
	m := make(map[string]int, len(s.keys))
	for i, k := range s.keys {
		m[k] = i
	}
	return m
}

// ID is the raw id of a request or response, byte for byte as sent.
func (m *Message) ID() []byte { return m.f.id.of(m.Raw) }

// idAt is where the id is in the message, for a change made in place.
func (m *Message) idAt() span { return m.f.id }

// params is the message's params, as sent; nil for none.
func (m *Message) params() []byte { return m.f.params.of(m.Raw) }

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
	m := Message{Raw: raw, f: noFields}
	if err := checkKeys(raw, envelopeKeys, place{where: "the message"}, func(key []byte, _ int, v span) { m.f.set(key, v) }); err != nil {
		if e, ok := err.(*Error); ok {
			return Message{}, e
		}
		return Message{}, invalid(CodeInvalidRequest, "Invalid Request: "+err.Error(), nil)
	}
	if err := m.checkMembers(); err != nil {
		return Message{}, err
	}
	return m, m.classify()
}

// classify finds what the message is (Kind, Method), or the Invalid
// Request it is.
func (m *Message) classify() error {
	raw, f := m.Raw, m.f
	id := f.id.of(raw)
	if f.id.ok() && !validID(id) {
		// "The ID MUST NOT be null" and must be a string or an integer.
		return invalid(CodeInvalidRequest, "Invalid Request: id must be a string or a number", nil)
	}
	if string(f.jsonrpc.of(raw)) != `"2.0"` {
		return invalid(CodeInvalidRequest, `Invalid Request: "jsonrpc" must be "2.0"`, id)
	}
	switch {
	case f.method.ok():
		if err := unquote(f.method.of(raw), &m.Method); err != nil || m.Method == "" {
			return invalid(CodeInvalidRequest, "Invalid Request: method must be a non-empty string", id)
		}
		if p := f.params.of(raw); p != nil && p[0] != '{' && p[0] != '[' {
			return invalid(CodeInvalidRequest, "Invalid Request: params must be an object or an array", id)
		}
		m.Kind = Notification
		if f.id.ok() {
			m.Kind = Request
		}
	case f.id.ok() && (f.result.ok() != f.error.ok()):
		m.Kind = Response
	default:
		return invalid(CodeInvalidRequest, "Invalid Request: neither a request, a notification nor a response", id)
	}
	return nil
}

// checkMembers checks the keys within a client's message (keys.go): params,
// its _meta, and everything below them; a response's result or error. The
// walk over params and _meta records where the members the bridge reads
// are (m.read).
func (m *Message) checkMembers() error {
	raw, f := m.Raw, m.f
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
	err := checkKeys(p, paramsKeys, place{where: "params"}, func(key []byte, i int, v span) {
		if i >= 0 {
			m.read.params[i] = posOf(f.params.start, v)
		}
		if inner == nil {
			inner = m.checkParam(p, key, i, v)
		}
	})
	if err != nil {
		return err
	}
	return inner
}

// checkParam checks what is below the member key of params p (at v; i is
// its index in paramsKeys): _meta's keys, or any object's.
func (m *Message) checkParam(p, key []byte, i int, v span) error {
	val := v.of(p)
	switch {
	case val[0] == '{' && i == metaParam:
		return m.checkMeta(val, m.f.params.start+v.start)
	case val[0] == '{' || val[0] == '[':
		return checkDeep(val, place{where: "params", key: key})
	}
	return nil
}

// checkMeta checks the keys of params._meta, meta (at base in Raw), and
// what is below them, recording where the members the bridge reads are.
func (m *Message) checkMeta(meta []byte, base int) error {
	var below error
	err := checkKeys(meta, metaKeys, place{where: "params._meta"}, func(key []byte, i int, v span) {
		if i >= 0 {
			m.read.meta[i] = posOf(base, v)
		}
		if below == nil {
			below = checkDeep(v.of(meta), place{where: "params._meta", key: key})
		}
	})
	if err != nil {
		return err
	}
	return below
}

// validID: a JSON string or number.
func validID(id []byte) bool {
	return len(id) > 0 && (id[0] == '"' || id[0] == '-' || (id[0] >= '0' && id[0] <= '9'))
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
func (m *Message) progressToken() []byte { return m.metaMember("progressToken") }

// Param is the raw JSON of the member key of a request's or a
// notification's params object, byte for byte as sent; nil when there is
// none. It reads without decoding, and without scanning again: the walk
// that checked the message's keys found it (the transport learns, say,
// the tool a tools/call names from the bytes already checked).
func (m *Message) Param(key string) []byte {
	if i, ok := paramIndex[key]; ok {
		return m.read.params[i].of(m.Raw)
	}
	// A key no list in keys.go has (TestReadKeysListed keeps the bridge
	// from reading one): read it.
	p := m.f.params.of(m.Raw)
	if p == nil || p[0] != '{' {
		return nil
	}
	return member(p, key).of(p)
}

// paramAt is where Param(key) is in the message, for a change made in
// place.
func (m *Message) paramAt(key string) span {
	i, ok := paramIndex[key]
	if !ok {
		return absent
	}
	return m.read.params[i].span()
}

// metaAt is where metaMember(key) is in the message.
func (m *Message) metaAt(key string) span {
	i, ok := metaIndex[key]
	if !ok {
		return absent
	}
	return m.read.meta[i].span()
}

// metaMember is the raw value of key in the message's params._meta, nil
// when there is none.
func (m *Message) metaMember(key string) []byte {
	if i, ok := metaIndex[key]; ok {
		return m.read.meta[i].of(m.Raw)
	}
	meta := m.Param("_meta")
	if meta == nil || meta[0] != '{' {
		return nil
	}
	return member(meta, key).of(meta)
}

// ProgressToken is the request's params._meta.progressToken as sent, nil
// for none: for a transport that reports progress of its own on a request
// (a call waiting for approval).
func (m *Message) ProgressToken() []byte { return m.progressToken() }

// ClientCapabilities is a 2026-07-28 request's _meta clientCapabilities,
// nil for none.
func (m *Message) ClientCapabilities() []byte { return m.metaMember(metaClientCaps) }

// WithoutParams is a copy of the message without the params keys: a
// 2026-07-28 retry that answered a question of the bridge's own (an
// approval) goes on as the request it was, without the answer.
func (m *Message) WithoutParams(keys ...string) Message {
	c := *m
	for _, k := range keys {
		if m.Param(k) != nil {
			c.deleteParam(k)
		}
	}
	return c
}

// IsModernProbe reports whether a message is in the 2026-07-28 format: a
// server/discover request, or one carrying its protocol version in _meta.
func (m *Message) IsModernProbe() bool {
	return m.Method == "server/discover" || m.metaMember(metaProtocolVersion) != nil
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
	v, err := unquoteEscaped(b)
	*s = v
	return err
}

// unquoteEscaped is unquote's slow way: encoding/json's. Apart from
// unquote, so that what unquote writes to stays where its caller has it.
func unquoteEscaped(b []byte) (string, error) {
	var v string
	err := json.Unmarshal(b, &v)
	return v, err
}
