package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"time"
)

// Mcp-Param-{Name} headers: a tool may mark parameters of its inputSchema
// with x-mcp-header, and a 2026-07-28 client then mirrors their values into
// headers, for intermediaries to route on. "Any server that processes the
// message body MUST validate that encoded header values, after decoding if
// Base64-encoded, match the corresponding values in the request body", and
// a child behind stdio never sees the headers: the bridge checks them. It
// learns which parameters a tool mirrors from the tools/list results it
// relays, and asks the child for the list itself when a call names a tool
// it has not seen.

// errNoReply: the child did not answer a request of the bridge's own in
// time.
var errNoReply = errors.New("no answer in time")

// requestBound bounds the bridge's own requests: --request-timeout, or its
// default when that is off.
func (b *Bridge) requestBound() time.Duration {
	if d := b.cfg.RequestTimeout; d > 0 {
		return d
	}
	return DefaultRequestTimeout
}

// toolsRefetch is how long after reading the tool list the bridge trusts
// it for tools it did not have.
const toolsRefetch = 5 * time.Second

// paramHeader is one parameter a tool mirrors into a header.
type paramHeader struct {
	path []string // property names from the arguments object down
}

// toolHeaders are, per tool, its mirrored parameters by header name
// ({Name} of Mcp-Param-{Name}, in lower case).
type toolHeaders map[string]map[string]paramHeader

// learnTools records the x-mcp-header parameters of the tools in a
// tools/list result (one page).
func (p *modernPool) learnTools(result []byte) {
	var r struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if json.Unmarshal(result, &r) != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.headers == nil {
		p.headers = toolHeaders{}
	}
	for _, t := range r.Tools {
		h := map[string]paramHeader{}
		collectHeaders(t.InputSchema, nil, h)
		p.headers[t.Name] = h
	}
}

// collectHeaders walks a JSON schema's properties (and theirs) for
// x-mcp-header annotations.
func collectHeaders(schema json.RawMessage, path []string, into map[string]paramHeader) {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return
	}
	for name, prop := range s.Properties {
		var p struct {
			Header string `json:"x-mcp-header"`
		}
		at := append(append([]string(nil), path...), name)
		if json.Unmarshal(prop, &p) == nil && p.Header != "" {
			into[strings.ToLower(p.Header)] = paramHeader{path: at}
		}
		collectHeaders(prop, at, into)
	}
}

// headersOf returns the mirrored parameters of tool, asking the child for
// its tool list when the tool is not known yet.
func (p *modernPool) headersOf(ctx context.Context, u *upstream, era childEra, tool string) map[string]paramHeader {
	p.mu.Lock()
	h, ok := p.headers[tool]
	// A tool the list did not have a moment ago is not asked for again:
	// calls to unknown tools must not each cost a tools/list.
	recent := p.b.cfg.Now().Sub(p.toolsFetched) < toolsRefetch
	if !ok && !recent {
		p.toolsFetched = p.b.cfg.Now()
	}
	p.mu.Unlock()
	if ok || recent {
		return h
	}
	p.fetchTools(ctx, u, era)
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.headers[tool]
}

// fetchTools reads the child's whole tool list (every page) into the
// pool's cache, within --request-timeout.
func (p *modernPool) fetchTools(ctx context.Context, u *upstream, era childEra) {
	const maxPages = 32
	cursor := ""
	for range maxPages {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		if era == eraModern {
			var meta map[string]json.RawMessage
			_ = json.Unmarshal([]byte(probeParams), &meta)
			params["_meta"] = meta["_meta"]
		}
		raw, _ := json.Marshal(params)
		res, err := u.ask(ctx, "tools/list", raw, p.b.requestBound())
		if err != nil {
			p.b.log.Debug("could not read the tool list for Mcp-Param headers", "err", err)
			return
		}
		p.learnTools(res)
		var next struct {
			NextCursor string `json:"nextCursor"`
		}
		_ = json.Unmarshal(res, &next)
		if next.NextCursor == "" {
			return
		}
		cursor = next.NextCursor
	}
}

// checkParamHeaders checks a tools/call's Mcp-Param-{Name} headers against
// its arguments: each parameter the tool mirrors and the call gives a value
// needs its header, decoded equal to the value (numbers compared as
// numbers); a header must not be sent for a parameter the call leaves out
// or sets to null; a malformed header is refused. All with 400 -32020.
func checkParamHeaders(m *Message, mirrored map[string]paramHeader, sent map[string]string) error {
	id := m.ID()
	var args map[string]json.RawMessage
	if raw := m.Param("arguments"); raw != nil {
		_ = json.Unmarshal(raw, &args)
	}
	for name, ph := range mirrored {
		v, present := lookup(args, ph.path)
		h, sentIt := sent[name]
		if !present {
			if sentIt {
				return headerMismatch("Mcp-Param-"+name+" is sent for a parameter the call does not give", id)
			}
			continue
		}
		if !sentIt {
			return headerMismatch("the tool mirrors "+strings.Join(ph.path, ".")+" into Mcp-Param-"+name+", which is missing", id)
		}
		hv, ok := decodeHeaderValue(h)
		if !ok {
			return headerMismatch("Mcp-Param-"+name+" is malformed", id)
		}
		if !sameValue(v, hv) {
			return headerMismatch("Mcp-Param-"+name+" differs from the argument "+strings.Join(ph.path, "."), id)
		}
	}
	return nil
}

// lookup finds the value at path in args; null counts as absent.
func lookup(args map[string]json.RawMessage, path []string) (json.RawMessage, bool) {
	cur := args
	for i, k := range path {
		v, ok := cur[k]
		if !ok || string(v) == "null" {
			return nil, false
		}
		if i == len(path)-1 {
			return v, true
		}
		if json.Unmarshal(v, &cur) != nil {
			return nil, false
		}
	}
	return nil, false
}

// sameValue compares a JSON value with a header's decoded text as the
// spec's value encoding writes it: strings as they are, numbers
// numerically (42 and 42.0 are equal), booleans as true/false.
func sameValue(v json.RawMessage, h string) bool {
	switch {
	case len(v) > 0 && v[0] == '"':
		var s string
		return json.Unmarshal(v, &s) == nil && s == h
	case string(v) == "true" || string(v) == "false":
		return string(v) == h
	}
	a, ok1 := new(big.Float).SetString(string(v))
	b, ok2 := new(big.Float).SetString(h)
	return ok1 && ok2 && a.Cmp(b) == 0
}
