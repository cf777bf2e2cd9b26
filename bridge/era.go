package bridge

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// MCP 2026-07-28, the "modern" era, has no initialize and no session: each
// request carries its protocol version and the client's capabilities in
// params._meta, and mirrors its method and target into HTTP headers. The
// bridge serves it on the same endpoint as the 2025 era, deciding per POST
// (IsModern), and checks a modern request in the order of the spec's
// validation rules (CheckModern) before any child sees it.

// ModernVersion is the modern protocol version the bridge serves.
const ModernVersion = "2026-07-28"

// ModernVersions are the modern protocol versions the bridge serves, as
// server/discover and -32022 name them.
var ModernVersions = []string{ModernVersion}

// Reserved _meta keys of the modern era.
const (
	metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"
	metaClientCaps      = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo      = "io.modelcontextprotocol/clientInfo"
	metaLogLevel        = "io.modelcontextprotocol/logLevel"
	metaSubscriptionID  = "io.modelcontextprotocol/subscriptionId"
	metaServerInfo      = "io.modelcontextprotocol/serverInfo"
)

// Error codes 2026-07-28 defines (it reserves -32020 to -32099).
const (
	// CodeHeaderMismatch: a required header is missing, malformed, or
	// differs from the body.
	CodeHeaderMismatch = -32020
	// CodeMissingCapability: the request needs a client capability the
	// client did not declare; data.requiredCapabilities names it.
	CodeMissingCapability = -32021
	// CodeUnsupportedVersion: the protocol version is not served;
	// data.supported and data.requested say which are.
	CodeUnsupportedVersion = -32022
)

// IsModern reports whether a message belongs to the modern era: its
// params._meta carries a protocol version, or the MCP-Protocol-Version
// header (versionHeader) names 2026-07-28 or a later date. Everything else
// (initialize, 2025 sessions, GET, DELETE, legacy HTTP+SSE) is the 2025
// era, served as before.
func IsModern(m *Message, versionHeader string) bool {
	return modernHeader(versionHeader) || m.metaMember(metaProtocolVersion) != nil
}

// modernHeader: a version that is a date no earlier than 2026-07-28.
// Versions are dates, so an unknown later one is modern too, and gets
// CodeUnsupportedVersion rather than the 2025 era's answer.
func modernHeader(v string) bool {
	return len(v) == len(ModernVersion) && v[4] == '-' && v[7] == '-' && v >= ModernVersion
}

// ModernHeaders are the HTTP headers of a modern POST that the bridge
// checks against its body, as the transport read them.
type ModernHeaders struct {
	Version    string // MCP-Protocol-Version
	Method     string // Mcp-Method
	HasMethod  bool
	Name       string // Mcp-Name, as sent (maybe in the =?base64?…?= form)
	HasName    bool
	HasVersion bool
	// Params are the Mcp-Param-{Name} headers, by {Name} in lower case
	// (header names are case-insensitive), values as sent.
	Params map[string]string
	// Repeated names a header of these sent more than once ("" if none):
	// the bridge checks one value, and a gateway that reads the last or
	// the values joined would see another.
	Repeated string
}

// Envelope is what a modern request says of itself in params._meta.
type Envelope struct {
	Version string
	// Capabilities is the client's capabilities object, as sent.
	Capabilities json.RawMessage
	caps         clientCaps
	// ClientInfo is the client's Implementation object, as sent (nil
	// without one).
	ClientInfo json.RawMessage
	// LogLevel is the least severe level of log message the client wants
	// on this request's stream; "" for none (then it gets none).
	LogLevel string
}

// clientCaps are the client capabilities that decide how the bridge
// serves a request: what a legacy child may ask of the client (MRTR).
type clientCaps struct {
	Sampling *struct {
		Context json.RawMessage `json:"context"`
		Tools   json.RawMessage `json:"tools"`
	} `json:"sampling"`
	Elicitation *struct {
		Form json.RawMessage `json:"form"`
		URL  json.RawMessage `json:"url"`
	} `json:"elicitation"`
	Roots json.RawMessage `json:"roots"`
}

// DeclaresFormElicitation reports whether client capabilities (a 2025
// initialize's params.capabilities, a 2026-07-28 request's _meta
// clientCapabilities) declare form elicitation: "elicitation": {} (which
// means form, as it did before modes existed) or one with "form".
func DeclaresFormElicitation(caps []byte) bool {
	var c clientCaps
	if len(caps) == 0 || json.Unmarshal(caps, &c) != nil || c.Elicitation == nil {
		return false
	}
	return c.Elicitation.Form != nil || c.Elicitation.URL == nil
}

// asksInput reports whether the client declared any capability a server
// may ask it to use: sampling, elicitation or roots.
func (c clientCaps) asksInput() bool {
	return c.Sampling != nil || c.Elicitation != nil || c.Roots != nil
}

// modernMethods are the client requests of 2026-07-28 that the bridge
// serves, with the server capability each needs ("" for none).
var modernMethods = map[string]string{
	"server/discover":          "",
	"subscriptions/listen":     "",
	"tools/list":               "tools",
	"tools/call":               "tools",
	"prompts/list":             "prompts",
	"prompts/get":              "prompts",
	"resources/list":           "resources",
	"resources/templates/list": "resources",
	"resources/read":           "resources",
	"completion/complete":      "completions",
}

// removedMethods were 2025-era requests that 2026-07-28 removed: a modern
// request for one gets 404 -32601, as an unknown method does.
var removedMethods = map[string]bool{
	MethodInitialize:        true,
	"ping":                  true,
	"logging/setLevel":      true,
	"resources/subscribe":   true,
	"resources/unsubscribe": true,
}

// nameParam is the params member that Mcp-Name mirrors, for the methods
// that need one.
func nameParam(method string) string {
	switch method {
	case "tools/call", "prompts/get":
		return "name"
	case "resources/read":
		return "uri"
	}
	return ""
}

// CheckModern checks a modern request against its headers, in the order of
// the spec's validation rules, and returns its envelope. The first rule it
// breaks answers, with the code the spec gives it and the request's id:
//
//   - a response (clients send none), or a batch: -32600;
//   - Mcp-Method, Mcp-Name or an Mcp-Param-{Name} sent twice: -32020;
//   - initialize with a 2026-07-28 header but no _meta version: -32020;
//   - _meta without protocolVersion or clientCapabilities, or with a bad
//     logLevel or clientInfo: -32602, the message naming the key;
//   - MCP-Protocol-Version or Mcp-Method different from the body: -32020;
//   - a version the bridge does not serve: -32022 with data.supported and
//     data.requested;
//   - MCP-Protocol-Version or Mcp-Method missing, Mcp-Name missing,
//     undecodable or different from params.name / params.uri: -32020;
//   - a method 2026-07-28 does not have (or removed): 404 -32601.
//
// All of them are HTTP 400 but the last. Whether the server has the
// method's capability, and the Mcp-Param-{Name} headers, are checked
// where the child is known (the tool's schema says which headers it
// mirrors).
func CheckModern(m *Message, h ModernHeaders) (Envelope, error) {
	id := m.ID()
	if m.Kind == Response {
		return Envelope{}, invalid(CodeInvalidRequest, "Invalid Request: a 2026-07-28 client sends no responses", id)
	}
	if h.Repeated != "" {
		return Envelope{}, headerMismatch("the "+h.Repeated+" header is sent more than once; send it once", id)
	}
	if m.Method == MethodInitialize && m.metaMember(metaProtocolVersion) == nil {
		return Envelope{}, headerMismatch("MCP-Protocol-Version names "+quoteVersion(h.Version)+", which has no initialize; a 2025 client sends its own version in the header", id)
	}
	env, err := envelopeOf(m)
	if err != nil {
		return env, err
	}
	return env, checkHeaders(m, h, env)
}

// envelopeOf reads and checks what a modern request says of itself in
// params._meta: its version and capabilities (required), its client and
// log level.
func envelopeOf(m *Message) (Envelope, error) {
	id := m.ID()
	var env Envelope
	claim := m.metaMember(metaProtocolVersion)
	switch {
	case claim == nil:
		return env, missingMeta(metaProtocolVersion, id)
	case unquote(claim, &env.Version) != nil || claim[0] != '"' || env.Version == "":
		return env, badMeta(metaProtocolVersion, "a non-empty string", id)
	}
	caps := m.metaMember(metaClientCaps)
	switch {
	case caps == nil:
		return env, missingMeta(metaClientCaps, id)
	case caps[0] != '{' || json.Unmarshal(caps, &env.caps) != nil:
		return env, badMeta(metaClientCaps, "a ClientCapabilities object", id)
	}
	env.Capabilities = caps
	if info := m.metaMember(metaClientInfo); info != nil {
		if info[0] != '{' {
			return env, badMeta(metaClientInfo, "an Implementation object", id)
		}
		env.ClientInfo = info
	}
	if lvl := m.metaMember(metaLogLevel); lvl != nil {
		if unquote(lvl, &env.LogLevel) != nil || levelIndex(env.LogLevel) < 0 {
			return env, badMeta(metaLogLevel, "one of "+strings.Join(logLevels, ", "), id)
		}
	}
	return env, nil
}

// checkHeaders checks a modern request's headers against its body and
// envelope, in the spec's order: the headers that differ from the body,
// a version not served, the headers that are missing or differ
// (Mcp-Name), and last a method 2026-07-28 does not have.
func checkHeaders(m *Message, h ModernHeaders, env Envelope) error {
	id := m.ID()
	switch {
	case h.HasVersion && h.Version != env.Version:
		return headerMismatch("MCP-Protocol-Version "+quoteVersion(h.Version)+" differs from _meta "+metaProtocolVersion+" "+quoteVersion(env.Version), id)
	case h.HasMethod && h.Method != m.Method:
		return headerMismatch("Mcp-Method "+quoteVersion(h.Method)+" differs from the body's method "+quoteVersion(m.Method), id)
	case !servedModern(env.Version):
		return &Error{Kind: KindInvalid, Code: CodeUnsupportedVersion, ID: id,
			Message: "Unsupported protocol version " + quoteVersion(env.Version) + " (supported: " + strings.Join(ModernVersions, ", ") + ")",
			Data:    map[string]any{"supported": ModernVersions, "requested": env.Version}}
	case !h.HasVersion:
		return headerMismatch("the MCP-Protocol-Version header is required", id)
	case !h.HasMethod:
		return headerMismatch("the Mcp-Method header is required", id)
	}
	if key := nameParam(m.Method); key != "" {
		if err := checkName(m, h, key); err != nil {
			return err
		}
	}
	if _, ok := modernMethods[m.Method]; !ok {
		return methodNotFound(m.Method, id)
	}
	return nil
}

// checkName checks Mcp-Name against the params member it mirrors.
func checkName(m *Message, h ModernHeaders, key string) error {
	id := m.ID()
	if !h.HasName {
		return headerMismatch("the Mcp-Name header is required for "+m.Method, id)
	}
	name, ok := decodeHeaderValue(h.Name)
	if !ok {
		return headerMismatch("the Mcp-Name header is malformed", id)
	}
	var body string
	raw := m.Param(key)
	if raw == nil || raw[0] != '"' || unquote(raw, &body) != nil {
		// The body lacks what the header names: the child says what is
		// wrong with the params, the header is not at fault.
		return nil
	}
	if name != body {
		return headerMismatch("Mcp-Name differs from params."+key, id)
	}
	return nil
}

// decodeHeaderValue decodes a header value that may be in the base64
// sentinel form (=?base64?…?=, case-sensitive), reporting false for a
// malformed one or one with characters a header value may not hold.
func decodeHeaderValue(v string) (string, bool) {
	if strings.HasPrefix(v, "=?base64?") && strings.HasSuffix(v, "?=") && len(v) >= len("=?base64??=") {
		b, err := base64.StdEncoding.DecodeString(v[len("=?base64?") : len(v)-2])
		if err != nil || !utf8.Valid(b) {
			return "", false
		}
		return string(b), true
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c != '\t' && (c < 0x20 || c > 0x7e) {
			return "", false
		}
	}
	return v, true
}

// servedModern reports whether v is one of ModernVersions.
func servedModern(v string) bool {
	for _, s := range ModernVersions {
		if v == s {
			return true
		}
	}
	return false
}

func headerMismatch(msg string, id json.RawMessage) *Error {
	return &Error{Kind: KindInvalid, Code: CodeHeaderMismatch, Message: "Header mismatch: " + msg, ID: id}
}

func missingMeta(key string, id json.RawMessage) *Error {
	return &Error{Kind: KindInvalid, Code: CodeInvalidParams, ID: id,
		Message: "Invalid params: _meta " + key + " is required on every 2026-07-28 request",
		Data:    map[string]any{"missing": key}}
}

func badMeta(key, want string, id json.RawMessage) *Error {
	return &Error{Kind: KindInvalid, Code: CodeInvalidParams, ID: id,
		Message: "Invalid params: _meta " + key + " must be " + want,
		Data:    map[string]any{"invalid": key}}
}

func methodNotFound(method string, id json.RawMessage) *Error {
	msg := "Method not found: " + quoteVersion(method)
	if removedMethods[method] {
		msg += " was removed in MCP " + ModernVersion
	}
	return &Error{Kind: KindNotFound, Code: CodeMethodNotFound, Message: msg, ID: id}
}

// quoteVersion quotes a value for an error message, cut short: it is the
// client's own, never a secret, but may be long.
func quoteVersion(v string) string {
	if len(v) > 64 {
		v = v[:64] + "…"
	}
	b, _ := json.Marshal(v)
	return string(b)
}
