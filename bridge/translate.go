package bridge

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Translating a legacy child's answers for a modern client: every result
// says what it is (resultType), who answered (_meta serverInfo), and, for
// the cacheable methods, how long it stays fresh and for whom (ttlMs,
// cacheScope); the error codes 2026-07-28 forbids on its path are mapped.
// Answers are changed by splicing members into them, never decoded and
// encoded again: a 40 MiB tools/call result costs one scan, not a copy per
// step.

// cacheable are the methods whose complete results carry caching hints
// ("Servers MUST include caching hints on results with resultType
// complete returned by ...").
var cacheable = map[string]bool{
	"server/discover":          true,
	"tools/list":               true,
	"prompts/list":             true,
	"resources/list":           true,
	"resources/templates/list": true,
	"resources/read":           true,
}

// resultHints are the members the bridge adds to a modern client's
// result, where the child did not put them itself.
type resultHints struct {
	resultType string // "complete" or "input_required"
	serverInfo []byte // the child's Implementation, nil for none
	cache      bool   // add ttlMs and cacheScope
	scope      string // "public" or "private"
	// forceScope replaces a cacheScope the child gave (a modern child's
	// "public" is not public behind a bridge that answers per principal).
	forceScope bool
}

// decorateResult returns the response m (a JSON-RPC response with a
// result) with h's members added to its result. A message that is not
// such a response is returned as it is.
func decorateResult(m *childMsg, h resultHints) []byte {
	msg, f := m.raw, m.f
	res := f.result.of(msg)
	if len(res) == 0 || res[0] != '{' {
		return msg
	}
	has := membersOf(res)
	out := res
	var add []byte
	if h.serverInfo != nil && !has.serverInfo {
		entry := append([]byte(`"`+metaServerInfo+`":`), h.serverInfo...)
		if has.meta {
			meta := member(out, "_meta")
			out = splice(out, meta, openObject(meta.of(out), entry))
		} else {
			add = appendMember(add, `"_meta":{`+string(entry)+`}`)
		}
	}
	if h.forceScope && has.scope {
		out = splice(out, member(out, "cacheScope"), strconv.AppendQuote(nil, h.scope))
	}
	add = h.missing(add, has)
	if len(add) > 0 {
		// New members go first, so the result's own come after them.
		out = openObject(out, add)
	}
	if bytes.Equal(out, res) {
		return msg
	}
	return splice(msg, f.result, out)
}

// hinted is which of the members decorateResult adds a result has.
type hinted struct{ resultType, ttl, scope, meta, serverInfo bool }

// membersOf reads which of them res, a result object, has.
func membersOf(res []byte) hinted {
	var has hinted
	_ = eachMember(res, func(k []byte, v span) {
		switch string(k) {
		case "resultType":
			has.resultType = true
		case "ttlMs":
			has.ttl = true
		case "cacheScope":
			has.scope = true
		case "_meta":
			has.meta = res[v.start] == '{'
			has.serverInfo = has.meta && member(v.of(res), metaServerInfo).ok()
		}
	})
	return has
}

// missing appends to add the hints a result that has what has says
// lacks: its resultType, and the caching hints of a cacheable one.
func (h resultHints) missing(add []byte, has hinted) []byte {
	if !has.resultType {
		add = appendMember(add, `"resultType":`+strconv.Quote(h.resultType))
	}
	if h.cache && !has.ttl {
		add = appendMember(add, `"ttlMs":0`)
	}
	if h.cache && !has.scope {
		add = appendMember(add, `"cacheScope":`+strconv.Quote(h.scope))
	}
	return add
}

// openObject returns the object obj with the members in front of its own.
func openObject(obj, members []byte) []byte {
	out := make([]byte, 0, len(obj)+len(members)+1)
	out = append(append(out, '{'), members...)
	if len(bytes.TrimSpace(obj[1:len(obj)-1])) > 0 {
		out = append(out, ',')
	}
	return append(out, obj[1:]...)
}

func appendMember(b []byte, m string) []byte {
	if len(b) > 0 {
		b = append(b, ',')
	}
	return append(b, m...)
}

// Legacy error codes that 2026-07-28 forbids on its path.
const (
	codeResourceNotFound     = -32002 // 2025: resource not found; 2026: -32602
	codeURLElicitationNeeded = -32042 // 2025-11-25: URL elicitation required
)

// translateError maps a legacy child's error response for a modern
// client: a resource that does not exist is -32602 ("Servers MUST NOT
// use -32002"); -32042 and any other code of the range 2026-07-28
// reserves (-32020 to -32099), which means something else there, becomes
// -32603 with the child's code in data.childCode. It reports the code the
// client gets.
func translateError(m *childMsg) ([]byte, int) {
	msg, f := m.raw, m.f
	if !f.error.ok() {
		return msg, 0
	}
	e := f.error.of(msg)
	cs := member(e, "code")
	code, err := strconv.Atoi(string(cs.of(e)))
	if err != nil {
		return msg, 0
	}
	var to int
	switch {
	case code == codeResourceNotFound:
		to = CodeInvalidParams
	case code == CodeMissingCapability && member(member(e, "data").of(e), "requiredCapabilities").ok():
		// A dual-era server that knows -32021 and says what it needs,
		// the 2026-07-28 way: it means what 2026-07-28 means.
		return msg, code
	case code <= -32020 && code >= -32099:
		to = CodeInternalError
	default:
		return msg, code
	}
	ne := splice(e, cs, strconv.AppendInt(nil, int64(to), 10))
	if to == CodeInternalError {
		ds := member(ne, "data")
		child := []byte(`"childCode":` + strconv.Itoa(code))
		switch {
		case ds.ok() && ne[ds.start] == '{':
			ne = splice(ne, ds, openObject(ds.of(ne), child))
		case !ds.ok():
			ne = openObject(ne, append(append([]byte(`"data":{`), child...), '}'))
		}
	}
	return splice(msg, f.error, ne), to
}

// withoutParam is the message msg without the member key of its params.
func withoutParam(msg []byte, key string) []byte {
	f, err := scanFields(msg)
	if err != nil || !f.params.ok() {
		return msg
	}
	p := f.params.of(msg)
	var out []byte
	_ = eachMember(p, func(k []byte, v span) {
		if string(k) == key {
			return
		}
		if out == nil {
			out = []byte{'{'}
		} else {
			out = append(out, ',')
		}
		kb, _ := json.Marshal(string(k))
		out = append(append(append(out, kb...), ':'), v.of(p)...)
	})
	if out == nil {
		out = []byte{'{'}
	}
	return splice(msg, f.params, append(out, '}'))
}

// stampSubscription puts the listen request's id into a notification's
// params._meta as io.modelcontextprotocol/subscriptionId ("All
// notifications delivered on the stream carry" it).
func stampSubscription(msg, listenID []byte) []byte {
	f, err := scanFields(msg)
	if err != nil {
		return msg
	}
	entry := append([]byte(`"`+metaSubscriptionID+`":`), listenID...)
	if !f.params.ok() {
		// {"jsonrpc":"2.0","method":"..."} → add params before the end.
		end := bytes.LastIndexByte(msg, '}')
		out := make([]byte, 0, len(msg)+len(entry)+24)
		out = append(out, msg[:end]...)
		out = append(out, `,"params":{"_meta":{`...)
		out = append(out, entry...)
		return append(out, "}}}"...)
	}
	p := f.params.of(msg)
	if p[0] != '{' {
		return msg
	}
	meta := member(p, "_meta")
	var np []byte
	switch {
	case meta.ok() && p[meta.start] == '{':
		m := meta.of(p)
		if ms := member(m, metaSubscriptionID); ms.ok() {
			np = splice(p, meta, splice(m, ms, listenID))
		} else {
			np = splice(p, meta, openObject(m, entry))
		}
	default:
		np = openObject(p, append(append([]byte(`"_meta":{`), entry...), '}'))
	}
	return splice(msg, f.params, np)
}

// replaceSubscription rewrites a modern child's subscriptionId (its own id
// of the listen request) to the client's.
func replaceSubscription(msg []byte, params span, clientID []byte) []byte {
	p := params.of(msg)
	meta := member(p, "_meta")
	if !meta.ok() {
		return msg
	}
	m := meta.of(p)
	sid := member(m, metaSubscriptionID)
	if !sid.ok() {
		return msg
	}
	return splice(msg, params, splice(p, meta, splice(m, sid, clientID)))
}

// subscriptionOf is the child-side listen id a modern child's notification
// names in params._meta, if any.
func subscriptionOf(msg []byte, params span) (int64, bool) {
	p := params.of(msg)
	if p == nil || p[0] != '{' || !bytes.Contains(p, []byte(metaSubscriptionID)) {
		return 0, false
	}
	m := member(p, "_meta").of(p)
	if m == nil || m[0] != '{' {
		return 0, false
	}
	id, err := strconv.ParseInt(string(member(m, metaSubscriptionID).of(m)), 10, 64)
	return id, err == nil
}

// resultMessage is a JSON-RPC response with result.
func resultMessage(id []byte, result any) []byte {
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}{"2.0", id, result})
	if err != nil {
		return errorResponse(id, CodeInternalError, "mcp-bridge: cannot encode a result", nil)
	}
	return b
}

// discoverResult is server/discover for a legacy child, from its
// InitializeResult: what it can do, said the 2026-07-28 way.
func discoverResult(u *upstream, id []byte, scope string) []byte {
	var r struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
		ServerInfo   json.RawMessage            `json:"serverInfo"`
		Instructions string                     `json:"instructions"`
	}
	_ = json.Unmarshal(u.initResult(), &r)
	caps := r.Capabilities
	if caps == nil {
		caps = map[string]json.RawMessage{}
	}
	// Tasks are an extension in 2026-07-28, negotiated apart; a legacy
	// child's are not served to modern clients.
	delete(caps, "tasks")
	out := map[string]any{
		"resultType":        "complete",
		"supportedVersions": ModernVersions,
		"capabilities":      caps,
		"ttlMs":             0,
		"cacheScope":        scope,
	}
	if len(r.ServerInfo) > 0 {
		out["_meta"] = map[string]json.RawMessage{metaServerInfo: r.ServerInfo}
	}
	if r.Instructions != "" {
		out["instructions"] = r.Instructions
	}
	return resultMessage(id, out)
}
