package registry

// Client: the registry API from a script (mcp-bridge servers).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcp-bridge/mcp-bridge/httpapi"
)

// Client calls the registry API of the bridge at URL with a bearer
// token.
type Client struct {
	// URL is the bridge's base URL (http://127.0.0.1:8080): the API is at
	// URL + httpapi.RegistryPath.
	URL string
	// Token is a registry admin's token (an --admin's for List).
	Token string
	// HTTP is the client. Default http.DefaultClient.
	HTTP *http.Client
}

// APIError is a refusal of the API: its status, message and problems,
// as it said them.
type APIError struct {
	Status   int
	Message  string
	Problems []httpapi.FieldProblem
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString(e.Message)
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		if p.Server != "" {
			fmt.Fprintf(&b, "server %q: ", p.Server)
		}
		if p.Field != "" {
			fmt.Fprintf(&b, "field %q: ", p.Field)
		}
		b.WriteString(p.Message)
	}
	return b.String()
}

// List is every server.
func (c *Client) List(ctx context.Context) ([]httpapi.ServerState, error) {
	var out struct {
		Servers []httpapi.ServerState `json:"servers"`
	}
	err := c.do(ctx, http.MethodGet, "", nil, &out)
	return out.Servers, err
}

// Add creates a server from its entry (the fields of the file, and its
// name).
func (c *Client) Add(ctx context.Context, entry map[string]any) (httpapi.ChangeResult, error) {
	body, err := json.Marshal(entry)
	if err != nil {
		return httpapi.ChangeResult{}, err
	}
	var res httpapi.ChangeResult
	return res, c.do(ctx, http.MethodPost, "", body, &res)
}

// Remove removes server name, once its calls in flight are done (or its
// drain timeout passed) and its processes stopped.
func (c *Client) Remove(ctx context.Context, name string) (httpapi.ChangeResult, error) {
	var res httpapi.ChangeResult
	return res, c.do(ctx, http.MethodDelete, "/"+url.PathEscape(name), nil, &res)
}

// Act asks server name for an action: enable, disable or restart.
func (c *Client) Act(ctx context.Context, name, action string) (httpapi.ChangeResult, error) {
	var res httpapi.ChangeResult
	return res, c.do(ctx, http.MethodPost, "/"+url.PathEscape(name)+":"+action, nil, &res)
}

func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.URL, "/")+httpapi.RegistryPath+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		// The registry's refusals, and the bridge's own (401 and the
		// Origin guard's 403 are JSON-RPC errors): both have
		// error.message.
		var e struct {
			Error struct {
				Message  string                 `json:"message"`
				Problems []httpapi.FieldProblem `json:"problems"`
			} `json:"error"`
		}
		_ = json.Unmarshal(data, &e)
		if e.Error.Message == "" {
			e.Error.Message = resp.Status
		}
		return &APIError{Status: resp.StatusCode, Message: e.Error.Message, Problems: e.Error.Problems}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: the answer is not the registry API's: %w", method, req.URL.Path, err)
	}
	return nil
}
