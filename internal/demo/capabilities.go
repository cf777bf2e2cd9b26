package demo

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Client capabilities an input request can need, as named in a -32021
// error's data.requiredCapabilities.
const (
	needSampling   = "sampling"
	needRoots      = "roots"
	needFormInput  = "elicitation.form"
	needURLInput   = "elicitation.url"
	needsSeparator = "."
)

// need returns the client capability that r needs.
func need(r mcp.InputRequest) string {
	switch r := r.(type) {
	case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
		return needSampling
	case *mcp.ListRootsParams:
		return needRoots
	case *mcp.ElicitParams:
		if r.Mode == "url" {
			return needURLInput
		}
		return needFormInput
	}
	panic(fmt.Sprintf("demo: input request of unknown type %T", r))
}

// declared reports whether caps cover capability c.
func declared(caps *mcp.ClientCapabilities, c string) bool {
	if caps == nil {
		return false
	}
	switch c {
	case needSampling:
		return caps.Sampling != nil
	case needRoots:
		return caps.RootsV2 != nil || caps.Roots.ListChanged
	case needFormInput:
		// "For backwards compatibility, an empty capabilities object is
		// equivalent to declaring support for form mode only" (2025-11-25,
		// client/elicitation).
		e := caps.Elicitation
		return e != nil && (e.Form != nil || e.URL == nil)
	case needURLInput:
		return caps.Elicitation != nil && caps.Elicitation.URL != nil
	}
	return false
}

// requireCapabilities returns nil when caps cover every capability in
// needs, and a MissingRequiredClientCapabilityError naming the others.
//
// From 2026-07-28: "Servers MUST NOT send an inputRequests that the client
// has not declared support for" (mrtr), and "If processing a request
// requires a capability the client did not include …, the server MUST
// return a MissingRequiredClientCapabilityError (-32021)" (basic). The same
// holds for an earlier session, whose capabilities are those it declared
// at initialize: it gets the error instead of a request it cannot answer.
func requireCapabilities(caps *mcp.ClientCapabilities, needs ...string) error {
	required := map[string]map[string]any{}
	var missing []string
	for _, c := range needs {
		if declared(caps, c) || slices.Contains(missing, c) {
			continue
		}
		missing = append(missing, c)
		name, mode, _ := strings.Cut(c, needsSeparator)
		if required[name] == nil {
			required[name] = map[string]any{}
		}
		if mode != "" {
			required[name][mode] = map[string]any{}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	// Built by hand: mcp.ClientCapabilities always encodes "roots", which
	// would claim that roots are needed too.
	data, err := json.Marshal(map[string]any{"requiredCapabilities": required})
	if err != nil {
		return fmt.Errorf("encode required capabilities: %w", err)
	}
	return &jsonrpc.Error{
		Code:    mcp.CodeMissingRequiredClientCapabilities,
		Message: "the client did not declare the capabilities this request needs: " + strings.Join(missing, ", "),
		Data:    data,
	}
}

// checkInputRequests returns requireCapabilities for what reqs need.
func checkInputRequests(caps *mcp.ClientCapabilities, reqs mcp.InputRequestMap) error {
	var needs []string
	for _, r := range reqs {
		needs = append(needs, need(r))
	}
	return requireCapabilities(caps, needs...)
}

// ask returns the input_required result of a tool call that needs reqs
// answered, with state to be echoed in the retry, or -32021 if the caller
// did not declare what they need.
//
// Before 2026-07-28 the SDK turns the result into sampling/createMessage,
// elicitation/create and roots/list requests to the client, and calls the
// handler once more with the answers, so one handler serves both eras.
func ask(caps *mcp.ClientCapabilities, reqs mcp.InputRequestMap, state string) (*mcp.CallToolResult, any, error) {
	if err := checkInputRequests(caps, reqs); err != nil {
		return nil, nil, err
	}
	return &mcp.CallToolResult{InputRequests: reqs, RequestState: state}, nil, nil
}

// inBand reports whether input requests reach the client of ss inside
// results (2026-07-28 and later) rather than as requests of their own. It is
// the test the SDK makes (mcp/mrtr.go, clientSupportsMultiRoundTrip): a
// session that has not initialized is a 2026-07-28 one.
func inBand(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	return p == nil || p.ProtocolVersion >= "2026-07-28"
}
