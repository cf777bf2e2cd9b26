package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Resource URIs, as the conformance scenarios name them.
const (
	staticTextURI   = "test://static-text"
	staticBinaryURI = "test://static-binary"
	watchedURI      = "test://watched-resource"
	templateURI     = "test://template/{id}/data"
)

// aboutURI is the demo's one resource.
const aboutURI = "demo://about"

// addAbout adds the demo's resource: what the demo is, in words.
func addAbout(srv *mcp.Server) {
	srv.AddResource(&mcp.Resource{
		URI: aboutURI, Name: "about", Title: "About this demo", MIMEType: "text/markdown",
		Description: "What this demo server is, and what to try.",
	}, static(mcp.ResourceContents{URI: aboutURI, MIMEType: "text/markdown", Text: aboutText}))
}

const aboutText = `# mcp-bridge demo server

A stdio MCP server that mcp-bridge runs when it is given no command of its own: each
session gets a process of it, spoken to over stdin and stdout, served over HTTP.

- **echo** returns its message.
- **slow** takes a while and reports its progress as it goes.
- **elicit** asks you, through your client, for a name and an email.
- **sample** asks your client's model a question.
- The **greet** prompt writes a greeting for a name.

Serve your own server with ` + "`mcp-bridge -- <command> [args...]`" + `.
`

// addGreet adds the demo's prompt.
func addGreet(srv *mcp.Server) {
	srv.AddPrompt(&mcp.Prompt{
		Name: "greet", Title: "Greet someone", Description: "A prompt asking for a short greeting of a person.",
		Arguments: []*mcp.PromptArgument{{Name: "name", Description: "who to greet", Required: true}},
	}, prompt(func(args map[string]string) []mcp.Content {
		return []mcp.Content{&mcp.TextContent{Text: "Write a short, friendly greeting for " + args["name"] + "."}}
	}))
}

func addResources(srv *mcp.Server, w *watched) {
	srv.AddResource(&mcp.Resource{
		URI: staticTextURI, Name: "static-text", Description: "A text resource that never changes.", MIMEType: "text/plain",
	}, static(mcp.ResourceContents{URI: staticTextURI, MIMEType: "text/plain", Text: "This is the content of the static text resource."}))
	srv.AddResource(&mcp.Resource{
		URI: staticBinaryURI, Name: "static-binary", Description: "A PNG image that never changes.", MIMEType: "image/png",
	}, static(mcp.ResourceContents{URI: staticBinaryURI, MIMEType: "image/png", Blob: pngPixel}))
	srv.AddResource(&mcp.Resource{
		URI: watchedURI, Name: "watched-resource", MIMEType: "text/plain",
		Description: "A text resource that changes on each call of touch_resource; subscribe to hear of it.",
	}, w.read)
	srv.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: templateURI, Name: "template", Description: "JSON data for any id.", MIMEType: "application/json",
	}, templateData)
}

// static returns a resource handler that always answers with c.
func static(c mcp.ResourceContents) mcp.ResourceHandler {
	return func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		c := c // a fresh copy per answer, so that no two results share one value
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{&c}}, nil
	}
}

func templateData(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	rest, okPrefix := strings.CutPrefix(uri, "test://template/")
	id, okSuffix := strings.CutSuffix(rest, "/data")
	if !okPrefix || !okSuffix || id == "" || strings.Contains(id, "/") {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	// Marshalled rather than formatted: the id comes from the client.
	data, err := json.Marshal(struct {
		ID           string `json:"id"`
		TemplateTest bool   `json:"templateTest"`
		Data         string `json:"data"`
	}{id, true, "Data for ID: " + id})
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", uri, err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(data)}}}, nil
}

// watched is the one resource that changes. Changes come from the
// touch_resource tool rather than a timer, so that a client (or a test)
// decides when notifications/resources/updated is sent.
type watched struct {
	srv *mcp.Server
	rev atomic.Int64
}

func (w *watched) read(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
		URI: watchedURI, MIMEType: "text/plain", Text: fmt.Sprintf("Watched resource content, revision %d", w.rev.Load()),
	}}}, nil
}

func (w *watched) touch(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
	rev := w.rev.Add(1)
	if err := w.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: watchedURI}); err != nil {
		return nil, nil, fmt.Errorf("notify subscribers of %s: %w", watchedURI, err)
	}
	return text(fmt.Sprintf("%s is now at revision %d", watchedURI, rev)), nil, nil
}

func addPrompts(srv *mcp.Server) {
	addSimplePrompt(srv)
	srv.AddPrompt(&mcp.Prompt{
		Name: "test_prompt_with_arguments", Description: "A prompt that quotes its two arguments.",
		Arguments: []*mcp.PromptArgument{
			{Name: "arg1", Description: "First test argument", Required: true},
			{Name: "arg2", Description: "Second test argument", Required: true},
		},
	}, prompt(func(args map[string]string) []mcp.Content {
		return []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", args["arg1"], args["arg2"])}}
	}))
	srv.AddPrompt(&mcp.Prompt{
		Name: "test_prompt_with_embedded_resource", Description: "A prompt that embeds a resource.",
		Arguments: []*mcp.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}},
	}, prompt(func(args map[string]string) []mcp.Content {
		return []mcp.Content{
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
				URI: args["resourceUri"], MIMEType: "text/plain", Text: "Embedded resource content for testing.",
			}},
			&mcp.TextContent{Text: "Please process the embedded resource above."},
		}
	}))
	srv.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_image", Description: "A prompt that shows an image."},
		prompt(func(map[string]string) []mcp.Content {
			return []mcp.Content{
				&mcp.ImageContent{Data: pngPixel, MIMEType: "image/png"},
				&mcp.TextContent{Text: "Please analyze the image above."},
			}
		}))
	srv.AddPrompt(&mcp.Prompt{
		Name:        "test_input_required_result_prompt",
		Description: "Multi round-trip (SEP-2322): asks the user for context (key user_context), then quotes it.",
	}, inputPrompt)
}

// addSimplePrompt registers test_simple_prompt; test_trigger_prompt_change
// registers it again, which changes nothing but tells every listener that
// the prompt list changed.
func addSimplePrompt(srv *mcp.Server) {
	srv.AddPrompt(&mcp.Prompt{Name: "test_simple_prompt", Description: "A prompt without arguments."},
		prompt(func(map[string]string) []mcp.Content {
			return []mcp.Content{&mcp.TextContent{Text: "This is a simple prompt for testing."}}
		}))
}

// prompt returns a prompt handler whose messages, all from the user, are the
// contents build makes of the arguments.
func prompt(build func(args map[string]string) []mcp.Content) mcp.PromptHandler {
	return func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		var msgs []*mcp.PromptMessage
		for _, c := range build(req.Params.Arguments) {
			msgs = append(msgs, &mcp.PromptMessage{Role: "user", Content: c})
		}
		return &mcp.GetPromptResult{Messages: msgs}, nil
	}
}
