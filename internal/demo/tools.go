package demo

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// none is the input of tools that take no arguments.
type none struct{}

// addDemoTools adds the demo's own tools, which both servers have.
func addDemoTools(srv *mcp.Server) {
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Returns its message argument as text."}, echo)
	mcp.AddTool(srv, &mcp.Tool{
		Name: "slow",
		Description: "Takes steps*delay_ms to finish. Reports progress 0..steps when the call has a " +
			"progress token, and logs each step at info level.",
	}, slow)
	mcp.AddTool(srv, &mcp.Tool{Name: "sample", Description: "Asks the client's LLM (sampling/createMessage) and returns its answer."}, sample)
	mcp.AddTool(srv, &mcp.Tool{Name: "elicit", Description: "Asks the user (elicitation/create) for a username and email and returns the answer."},
		elicitation(contactForm, func(in askArgs) string { return in.Message }))
}

// addFixtureTools adds the conformance server's tools beyond the demo's.
func addFixtureTools(srv *mcp.Server, w *watched) {
	mcp.AddTool(srv, &mcp.Tool{Name: "add", Description: "Adds two numbers."}, add)
	mcp.AddTool(srv, &mcp.Tool{Name: "touch_resource", Description: "Changes " + watchedURI + ", notifying its subscribers."}, w.touch)

	// The fixtures of the conformance suite's server scenarios; names,
	// arguments and contents are the ones the scenarios ask for.
	mcp.AddTool(srv, &mcp.Tool{Name: "test_simple_text", Description: "Returns simple text."},
		fixed(&mcp.TextContent{Text: "This is a simple text response for testing."}))
	mcp.AddTool(srv, &mcp.Tool{Name: "test_image_content", Description: "Returns a PNG image."},
		fixed(&mcp.ImageContent{Data: pngPixel, MIMEType: "image/png"}))
	mcp.AddTool(srv, &mcp.Tool{Name: "test_audio_content", Description: "Returns a WAV clip."},
		fixed(&mcp.AudioContent{Data: wavSilence, MIMEType: "audio/wav"}))
	mcp.AddTool(srv, &mcp.Tool{Name: "test_embedded_resource", Description: "Returns an embedded resource."},
		fixed(&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
			URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content.",
		}}))
	mcp.AddTool(srv, &mcp.Tool{Name: "test_multiple_content_types", Description: "Returns text, an image and a resource."},
		fixed(
			&mcp.TextContent{Text: "Multiple content types test:"},
			&mcp.ImageContent{Data: pngPixel, MIMEType: "image/png"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
				URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`,
			}},
		))
	mcp.AddTool(srv, &mcp.Tool{Name: "test_tool_with_logging", Description: "Logs three info messages about 50ms apart."}, logThrice)
	mcp.AddTool(srv, &mcp.Tool{Name: "test_tool_with_progress", Description: "Reports progress 0, 50 and 100 of 100, about 50ms apart."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			if err := work(ctx, req, 2, 50*time.Millisecond, 100); err != nil {
				return nil, nil, err
			}
			return text("Tool with progress executed successfully"), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "test_error_handling", Description: "Always fails."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			// A handler error becomes a result with isError set, which is
			// what the scenario checks; protocol errors are for bad requests.
			return nil, nil, errors.New("this tool intentionally returns an error for testing")
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "test_sampling", Description: "Asks the client's LLM and returns its answer."}, sample)
	mcp.AddTool(srv, &mcp.Tool{Name: "test_elicitation", Description: "Asks the user for a username and email."},
		elicitation(contactForm, func(in askArgs) string { return in.Message }))
	mcp.AddTool(srv, &mcp.Tool{Name: "test_elicitation_sep1034_defaults", Description: "Elicits a form whose fields have defaults (SEP-1034)."},
		elicitation(defaultsForm, func(none) string { return "Please review your profile" }))
	mcp.AddTool(srv, &mcp.Tool{Name: "test_elicitation_sep1330_enums", Description: "Elicits every kind of enum field (SEP-1330)."},
		elicitation(enumsForm, func(none) string { return "Please pick your options" }))
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "json_schema_2020_12_tool",
		Description: "Takes arguments described with JSON Schema 2020-12 keywords (SEP-1613, SEP-2106).",
		// The keywords SEP-1613 and SEP-2106 want kept verbatim in
		// tools/list: $schema, $defs, $ref, additionalProperties, $anchor,
		// allOf/anyOf and if/then/else.
		InputSchema: json.RawMessage(`{
			"$schema": "https://json-schema.org/draft/2020-12/schema",
			"type": "object",
			"$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
			"properties": {
				"name": {"type": "string"},
				"address": {"$ref": "#/$defs/address"},
				"contactMethod": {"type": "string", "enum": ["phone", "email"]},
				"phone": {"type": "string"},
				"email": {"type": "string"}
			},
			"allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
			"if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
			"then": {"required": ["phone"]},
			"else": {"required": ["email"]},
			"additionalProperties": false
		}`),
	}, func(_ context.Context, _ *mcp.CallToolRequest, in json.RawMessage) (*mcp.CallToolResult, any, error) {
		return text("Received: " + string(in)), nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "test_reconnection", Description: "Closes its SSE stream before answering, to test resumption (SEP-1699)."}, reconnect)
	addModernTools(srv)
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// fixed returns a tool handler that always answers with content.
func fixed(content ...mcp.Content) mcp.ToolHandlerFor[none, any] {
	return func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: content}, nil, nil
	}
}

type echoArgs struct {
	Message string `json:"message" jsonschema:"the text to return"`
}

func echo(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
	return text(in.Message), nil, nil
}

type addArgs struct {
	A float64 `json:"a" jsonschema:"the first addend"`
	B float64 `json:"b" jsonschema:"the second addend"`
}

type addResult struct {
	Sum float64 `json:"sum"`
}

func add(_ context.Context, _ *mcp.CallToolRequest, in addArgs) (*mcp.CallToolResult, addResult, error) {
	sum := in.A + in.B
	return text(strconv.FormatFloat(sum, 'g', -1, 64)), addResult{Sum: sum}, nil
}

type slowArgs struct {
	Steps   int `json:"steps,omitempty" jsonschema:"number of steps, 1 to 100; default 5"`
	DelayMS int `json:"delay_ms,omitempty" jsonschema:"pause before each step in milliseconds, 1 to 10000; default 200"`
}

func slow(ctx context.Context, req *mcp.CallToolRequest, in slowArgs) (*mcp.CallToolResult, any, error) {
	steps, delayMS := cmp.Or(in.Steps, 5), cmp.Or(in.DelayMS, 200)
	// Bounded so that one call cannot hold a session for hours.
	if steps < 1 || steps > 100 || delayMS < 1 || delayMS > 10000 {
		return nil, nil, fmt.Errorf("steps must be 1..100 and delay_ms 1..10000, got %d and %d", steps, delayMS)
	}
	if err := work(ctx, req, steps, time.Duration(delayMS)*time.Millisecond, float64(steps)); err != nil {
		return nil, nil, err
	}
	return text(fmt.Sprintf("Completed %d steps", steps)), nil, nil
}

// work reports progress 0, total/steps, ..., total, pausing delay between
// reports, and logs each report. Progress is sent only when the caller asked
// for it with a progress token, as the spec requires; logs follow the
// session's logging level.
func work(ctx context.Context, req *mcp.CallToolRequest, steps int, delay time.Duration, total float64) error {
	token := req.Params.GetProgressToken()
	for i := range steps + 1 {
		if i > 0 {
			if err := pause(ctx, delay); err != nil {
				return err
			}
		}
		msg := fmt.Sprintf("step %d of %d", i, steps)
		if token != nil {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token, Progress: float64(i) * total / float64(steps), Total: total, Message: msg,
			}); err != nil {
				return fmt.Errorf("notify progress: %w", err)
			}
		}
		if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "demo", Data: msg}); err != nil {
			return fmt.Errorf("log: %w", err)
		}
	}
	return nil
}

func logThrice(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
	for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
		if i > 0 {
			if err := pause(ctx, 50*time.Millisecond); err != nil {
				return nil, nil, err
			}
		}
		if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "demo", Data: msg}); err != nil {
			return nil, nil, fmt.Errorf("log: %w", err)
		}
	}
	return text("Tool with logging executed successfully"), nil, nil
}

// The sampling and elicitation tools are written as multi round-trip
// handlers (SEP-2322): the first call returns an input request and the retry
// carries the client's answer in InputResponses. For sessions older than
// 2026-07-28 the SDK turns the input request into a sampling/createMessage or
// elicitation/create request to the client and re-invokes the handler with
// the answer, so one handler serves both protocol generations. Either way,
// ask refuses with -32021 to ask a client for what it did not declare.

// answerKey names the single input request of these tools.
const answerKey = "answer"

type sampleArgs struct {
	Prompt string `json:"prompt" jsonschema:"the prompt to send to the client's LLM"`
}

func sample(_ context.Context, req *mcp.CallToolRequest, in sampleArgs) (*mcp.CallToolResult, any, error) {
	res, ok := req.Params.InputResponses[answerKey].(*mcp.CreateMessageWithToolsResult)
	if !ok {
		return ask(req.ClientCapabilities(), mcp.InputRequestMap{answerKey: samplingRequest(in.Prompt, 100)}, "")
	}
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			return text("LLM response: " + t.Text), nil, nil
		}
	}
	return nil, nil, fmt.Errorf("the answer of model %q has no text", res.Model)
}

type askArgs struct {
	Message string `json:"message" jsonschema:"the question to show the user"`
}

// elicitation returns a tool handler that asks the user to fill schema,
// introduced by message(input), and returns the action and content of the
// answer as text.
func elicitation[In any](schema json.RawMessage, message func(In) string) mcp.ToolHandlerFor[In, any] {
	return func(_ context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
		res, ok := req.Params.InputResponses[answerKey].(*mcp.ElicitResult)
		if !ok {
			return ask(req.ClientCapabilities(), mcp.InputRequestMap{answerKey: &mcp.ElicitParams{
				Message: message(in), RequestedSchema: schema,
			}}, "")
		}
		content, err := json.Marshal(res.Content)
		if err != nil {
			return nil, nil, fmt.Errorf("encode elicitation answer: %w", err)
		}
		return text(fmt.Sprintf("User response: action=%s, content=%s", res.Action, content)), nil, nil
	}
}

// Elicitation forms. Raw JSON keeps them verbatim (SEP-1330's enumNames and
// oneOf have no typed equivalent) and immutable across concurrent calls.
var (
	contactForm = json.RawMessage(`{
		"type": "object",
		"properties": {
			"username": {"type": "string", "description": "User's response"},
			"email": {"type": "string", "description": "User's email address"}
		},
		"required": ["username", "email"]
	}`)
	defaultsForm = json.RawMessage(`{
		"type": "object",
		"properties": {
			"name": {"type": "string", "default": "John Doe"},
			"age": {"type": "integer", "default": 30},
			"score": {"type": "number", "default": 95.5},
			"status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
			"verified": {"type": "boolean", "default": true}
		}
	}`)
	enumsForm = json.RawMessage(`{
		"type": "object",
		"properties": {
			"untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
			"titledSingle": {"type": "string", "oneOf": [
				{"const": "value1", "title": "First Option"},
				{"const": "value2", "title": "Second Option"},
				{"const": "value3", "title": "Third Option"}
			]},
			"legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
			"untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
			"titledMulti": {"type": "array", "items": {"anyOf": [
				{"const": "value1", "title": "First Choice"},
				{"const": "value2", "title": "Second Choice"},
				{"const": "value3", "title": "Third Choice"}
			]}}
		}
	}`)
)

// reconnect closes the call's SSE stream before answering, so that the
// client must resume it with Last-Event-ID to get the result (SEP-1699).
// Over stdio there is no stream to close and the result is sent at once;
// behind the bridge, closing and resuming streams is the bridge's job.
func reconnect(_ context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
	if req.Extra != nil && req.Extra.CloseSSEStream != nil {
		req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 100 * time.Millisecond})
	}
	return text("Reconnection test completed successfully."), nil, nil
}
