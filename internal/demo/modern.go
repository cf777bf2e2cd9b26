package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The fixtures that the 2026-07-28 server scenarios of the conformance suite
// (0.2.0-alpha.12, `--requirements 2026-07-28`) call, with the names, keys
// and answers of go-sdk's conformance/everything-server. They answer 2025
// sessions too: what they ask of the client then travels as requests to it.

func addModernTools(srv *mcp.Server) {
	// Diagnostics of the stateless transport (SEP-2575).
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "test_missing_capability",
		Description: "Needs the client's sampling capability; without it, fails with -32021 (MissingRequiredClientCapability).",
	}, missingCapability)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "test_streaming_elicitation",
		Description: "Answers with a plain result: a response stream carries no request of its own (SEP-2575).",
	}, fixed(&mcp.TextContent{Text: "stream observed: result frames only, no top-level requests"}))
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "test_logging_tool",
		Description: "Logs one info message, which is sent only when the request asked for logs (_meta logLevel).",
	}, func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "demo", Data: "test_logging_tool executed"}); err != nil {
			return nil, nil, fmt.Errorf("log: %w", err)
		}
		return text("Log attempted; it is sent only at the request's logLevel."), nil, nil
	})
	addTriggerToolChange(srv)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "test_trigger_prompt_change",
		Description: "Sends notifications/prompts/list_changed to every listener; the list itself stays the same.",
	}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		addSimplePrompt(srv)
		return text("prompts_list_changed published"), nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "test_x_mcp_header",
		Description: "Takes a region argument that clients mirror into the Mcp-Param-Region header (SEP-2243).",
		InputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {
				"region": {"type": "string", "description": "mirrored into Mcp-Param-Region", "x-mcp-header": "Region"},
				"level": {"type": "integer", "description": "an argument that is not mirrored"}
			}
		}`),
	}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Region string `json:"region,omitempty"`
		Level  int    `json:"level,omitempty"`
	}) (*mcp.CallToolResult, any, error) {
		return text("region=" + in.Region), nil, nil
	})

	// Multi round-trip requests (SEP-2322).
	for _, tc := range []struct {
		name, description string
		handler           mcp.ToolHandlerFor[none, any]
	}{
		{"test_input_required_result_elicitation", "Asks the user's name (key user_name), then greets them.", inputElicitation},
		{"test_input_required_result_sampling", "Asks the client's LLM the capital of France (key capital_question).", inputSampling},
		{"test_input_required_result_list_roots", "Asks the client's roots (key client_roots) and lists them.", inputRoots},
		{"test_input_required_result_request_state", "Asks for a confirmation (key confirm) with a signed requestState, which the retry must carry back intact.", confirmation},
		{"test_input_required_result_tampered_state", "Like test_input_required_result_request_state: a retry whose requestState was altered gets -32602.", confirmation},
		{"test_input_required_result_multiple_inputs", "Asks for a name, an LLM greeting and the roots in one round (keys user_name, greeting, client_roots).", multipleInputs},
		{"test_input_required_result_multi_round", "Asks for a name (step1), then a colour (step2), in two rounds with a signed requestState.", multiRound},
		{"test_input_required_result_capabilities", "Asks only for what the request's client capabilities cover: user_name, greeting, client_roots.", capabilityAware},
	} {
		mcp.AddTool(srv, &mcp.Tool{Name: tc.name, Description: "Multi round-trip (SEP-2322): " + tc.description}, tc.handler)
	}
}

// addTriggerToolChange registers test_trigger_tool_change, whose calls
// register it again: go-sdk tells every listener that the tool list changed
// on each AddTool, even one that replaces a tool with itself, so the list
// never grows however often it is called.
func addTriggerToolChange(srv *mcp.Server) {
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "test_trigger_tool_change",
		Description: "Sends notifications/tools/list_changed to every listener; the list itself stays the same.",
	}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		addTriggerToolChange(srv)
		return text("tools_list_changed published"), nil, nil
	})
}

func missingCapability(_ context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
	if err := requireCapabilities(req.ClientCapabilities(), needSampling); err != nil {
		return nil, nil, err
	}
	return text("Client declared the sampling capability; tool executed."), nil, nil
}

// Input requests of the multi round-trip fixtures.
func nameForm(message string) *mcp.ElicitParams {
	return &mcp.ElicitParams{Message: message, RequestedSchema: json.RawMessage(
		`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)}
}

func confirmForm() *mcp.ElicitParams {
	return &mcp.ElicitParams{Message: "Please confirm", RequestedSchema: json.RawMessage(
		`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)}
}

func colourForm() *mcp.ElicitParams {
	return &mcp.ElicitParams{Message: "Step 2: What is your favorite color?", RequestedSchema: json.RawMessage(
		`{"type":"object","properties":{"color":{"type":"string"}},"required":["color"]}`)}
}

func samplingRequest(prompt string, maxTokens int64) *mcp.CreateMessageParams {
	return &mcp.CreateMessageParams{
		Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: prompt}}},
		MaxTokens: maxTokens,
	}
}

// accepted returns the string field of the content the user accepted in
// answer to the elicitation under key, or "" if there is none.
func accepted(responses mcp.InputResponseMap, key, field string) string {
	res, _ := responses[key].(*mcp.ElicitResult)
	return acceptedField(res, field)
}

// acceptedField returns the string field of the content of res if the user
// accepted, and "" otherwise.
func acceptedField(res *mcp.ElicitResult, field string) string {
	if res == nil || res.Action != "accept" {
		return ""
	}
	s, _ := res.Content[field].(string)
	return s
}

// sampled returns the first text of the LLM's answer under key.
func sampled(responses mcp.InputResponseMap, key string) (string, bool) {
	// The SDK decodes every sampling answer as the tool-enabled type.
	res, ok := responses[key].(*mcp.CreateMessageWithToolsResult)
	if !ok || res == nil {
		return "", false
	}
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			return t.Text, true
		}
	}
	return "(non-text response)", true
}

// listedRoots returns the URIs of the roots under key.
func listedRoots(responses mcp.InputResponseMap, key string) ([]string, bool) {
	res, ok := responses[key].(*mcp.ListRootsResult)
	if !ok || res == nil {
		return nil, false
	}
	uris := []string{}
	for _, r := range res.Roots {
		uris = append(uris, r.URI)
	}
	return uris, true
}

func inputElicitation(_ context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
	// Any answer keyed user_name counts, state or not: this is the tool of
	// the scenarios that send inputResponses with a fresh call.
	if name := accepted(req.Params.InputResponses, "user_name", "name"); name != "" {
		return text("Hello, " + name + "!"), nil, nil
	}
	return ask(req.ClientCapabilities(), mcp.InputRequestMap{"user_name": nameForm("What is your name?")}, "")
}

func inputSampling(_ context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
	if answer, ok := sampled(req.Params.InputResponses, "capital_question"); ok {
		return text("Sampling response: " + answer), nil, nil
	}
	return ask(req.ClientCapabilities(), mcp.InputRequestMap{"capital_question": samplingRequest("What is the capital of France?", 100)}, "")
}

func inputRoots(_ context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
	if uris, ok := listedRoots(req.Params.InputResponses, "client_roots"); ok {
		return text(fmt.Sprintf("Client exposed %d root(s): %s", len(uris), strings.Join(uris, ", "))), nil, nil
	}
	return ask(req.ClientCapabilities(), mcp.InputRequestMap{"client_roots": &mcp.ListRootsParams{}}, "")
}

// resumed returns the state of a retry: the zero state for a first call,
// the verified state of a retry, or -32602 for a state this process did not
// mint for this tool, or minted for another round than one of rounds.
func resumed(req *mcp.CallToolRequest, rounds ...int) (requestState, error) {
	if req.Params.RequestState == "" {
		return requestState{}, nil
	}
	st, err := openState(req.Params.RequestState, req.Params.Name)
	if err != nil {
		return requestState{}, err
	}
	for _, r := range rounds {
		if st.Round == r {
			return st, nil
		}
	}
	return requestState{}, badState()
}

// confirmation asks for a confirmation along with a signed requestState,
// and completes only when the retry carries both the answer and the state
// intact.
func confirmation(_ context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
	st, err := resumed(req, 1)
	if err != nil {
		return nil, nil, err
	}
	// An answer without the state it was asked with does not count.
	if res, ok := req.Params.InputResponses["confirm"].(*mcp.ElicitResult); ok && res != nil && st.Round == 1 {
		return text("state-ok: requestState verified; confirmation " + res.Action), nil, nil
	}
	return ask(req.ClientCapabilities(), mcp.InputRequestMap{"confirm": confirmForm()}, sealState(requestState{Tool: req.Params.Name, Round: 1}))
}

func multipleInputs(_ context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
	st, err := resumed(req, 1)
	if err != nil {
		return nil, nil, err
	}
	in := req.Params.InputResponses
	name := accepted(in, "user_name", "name")
	greeting, sampledOK := sampled(in, "greeting")
	roots, rootsOK := listedRoots(in, "client_roots")
	if st.Round == 1 && name != "" && sampledOK && rootsOK {
		return text(fmt.Sprintf("%s %s — %d root(s) visible", greeting, name, len(roots))), nil, nil
	}
	return ask(req.ClientCapabilities(), mcp.InputRequestMap{
		"user_name":    nameForm("What is your name?"),
		"greeting":     samplingRequest("Generate a greeting", 50),
		"client_roots": &mcp.ListRootsParams{},
	}, sealState(requestState{Tool: req.Params.Name, Round: 1}))
}

// multiRound asks for a name, then for a colour, each round with a state
// that says which round the retry answers; the name travels in the state.
func multiRound(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
	if !inBand(req.Session) {
		return multiRoundLegacy(ctx, req)
	}
	st, err := resumed(req, 1, 2)
	if err != nil {
		return nil, nil, err
	}
	caps, in, tool := req.ClientCapabilities(), req.Params.InputResponses, req.Params.Name
	switch st.Round {
	case 0:
		return ask(caps, mcp.InputRequestMap{"step1": nameForm("Step 1: What is your name?")}, sealState(requestState{Tool: tool, Round: 1}))
	case 1:
		name := accepted(in, "step1", "name")
		if name == "" {
			return ask(caps, mcp.InputRequestMap{"step1": nameForm("Step 1: What is your name?")}, req.Params.RequestState)
		}
		return ask(caps, mcp.InputRequestMap{"step2": colourForm()}, sealState(requestState{Tool: tool, Round: 2, Data: name}))
	default:
		colour := accepted(in, "step2", "color")
		if colour == "" {
			return ask(caps, mcp.InputRequestMap{"step2": colourForm()}, req.Params.RequestState)
		}
		return text(fmt.Sprintf("Multi-round complete: %s likes %s", st.Data, colour)), nil, nil
	}
}

// multiRoundLegacy is multiRound for a session older than 2026-07-28. The
// SDK turns one input_required result into requests to the client and calls
// the handler once more, never twice, so the two rounds are asked here, one
// after the other, as elicitation requests.
func multiRoundLegacy(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, any, error) {
	if err := requireCapabilities(req.ClientCapabilities(), needFormInput); err != nil {
		return nil, nil, err
	}
	answers := make([]string, 2)
	for i, q := range []struct {
		form  *mcp.ElicitParams
		field string
	}{{nameForm("Step 1: What is your name?"), "name"}, {colourForm(), "color"}} {
		res, err := req.Session.Elicit(ctx, q.form)
		if err != nil {
			return nil, nil, fmt.Errorf("elicit step %d: %w", i+1, err)
		}
		answers[i] = acceptedField(res, q.field)
		if answers[i] == "" {
			return text(fmt.Sprintf("Multi-round stopped at step %d: action=%s", i+1, res.Action)), nil, nil
		}
	}
	return text(fmt.Sprintf("Multi-round complete: %s likes %s", answers[0], answers[1])), nil, nil
}

// capabilityAware asks for one input of each kind the request's client
// capabilities cover, and for nothing else (SEP-2322).
func capabilityAware(_ context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
	if len(req.Params.InputResponses) > 0 {
		return text("Capability-aware input requests fulfilled"), nil, nil
	}
	caps := req.ClientCapabilities()
	reqs := mcp.InputRequestMap{}
	if declared(caps, needFormInput) {
		reqs["user_name"] = nameForm("What is your name?")
	}
	if declared(caps, needSampling) {
		reqs["greeting"] = samplingRequest("Generate a short greeting", 50)
	}
	if declared(caps, needRoots) {
		reqs["client_roots"] = &mcp.ListRootsParams{}
	}
	if len(reqs) == 0 {
		return text("No declared client capability supports an in-band input request"), nil, nil
	}
	return ask(caps, reqs, "")
}

// inputPrompt is prompts/get's multi round-trip fixture: it asks for the
// context to put in its message.
func inputPrompt(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	if res, ok := req.Params.InputResponses["user_context"].(*mcp.ElicitResult); ok && res != nil && res.Action == "accept" {
		given, _ := res.Content["context"].(string)
		return &mcp.GetPromptResult{
			Description: "A prompt with elicited context",
			Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Context: " + given}}},
		}, nil
	}
	reqs := mcp.InputRequestMap{"user_context": &mcp.ElicitParams{
		Message: "What context should the prompt use?",
		RequestedSchema: json.RawMessage(
			`{"type":"object","properties":{"context":{"type":"string"}},"required":["context"]}`),
	}}
	if err := checkInputRequests(req.ClientCapabilities(), reqs); err != nil {
		return nil, err
	}
	return &mcp.GetPromptResult{InputRequests: reqs}, nil
}
