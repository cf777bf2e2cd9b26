package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// TestAggregateParamHeaders: a tool whose inputSchema mirrors a parameter
// into a header (x-mcp-header) keeps it on the aggregate endpoint: its
// exposed entry in tools/list still says so, and a 2026-07-28 call of it
// has its Mcp-Param header checked as on its server's own endpoint
// (the server's bridge checks it, on the tool's own name): the right
// header is served, a missing or different one refused with 400 -32020,
// and the other server's tool of the same name, which mirrors nothing,
// is not held to it.
func TestAggregateParamHeaders(t *testing.T) {
	t.Parallel()
	m, srv := newMounts(t)
	serveAggregate(t, m, httpapi.AggregateOptions{},
		mountSpec(t, "a", "1", testpeers.BuildGo(t, "./testdata/badchild"), "-header-param", "Region"), mountSpec(t, "b", "1"))
	e := &env{t: t, srv: srv, url: srv.URL + "/mcp", client: srv.Client()}

	list := readMessages(t, e.do(modernRequest{id: 1, method: "tools/list"}.req()))
	if got := fmt.Sprint(list); !strings.Contains(got, "name:a__echo") ||
		!strings.Contains(got, "properties:map[message:map[type:string x-mcp-header:Region]]") {
		t.Fatalf("tools/list does not show a__echo's x-mcp-header: %s", got)
	}
	for _, tt := range []struct {
		name, tool string
		header     string // Mcp-Param-Region, "" for none
		status     int
	}{
		{"mirrored", "a__echo", "eu", http.StatusOK},
		{"missing", "a__echo", "", http.StatusBadRequest},
		{"differs", "a__echo", "us", http.StatusBadRequest},
		{"base64", "a__echo", "=?base64?ZXU=?=", http.StatusOK},
		{"the other server's echo", "b__echo", "", http.StatusOK},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := modernRequest{id: 2, method: "tools/call", params: map[string]any{"name": tt.tool, "arguments": map[string]any{"message": "eu"}}}.req()
			if tt.header != "" {
				r.header["Mcp-Param-Region"] = tt.header
			}
			resp := e.do(r)
			status := resp.StatusCode
			msgs := readMessages(t, resp)
			if status != tt.status || len(msgs) != 1 {
				t.Fatalf("%d %v, want %d", status, msgs, tt.status)
			}
			if tt.status == http.StatusOK {
				if got := text(msgs[0]); got != "eu" {
					t.Errorf("answered %v", msgs[0])
				}
				return
			}
			refusal, _ := msgs[0]["error"].(map[string]any)
			if fmt.Sprint(refusal["code"]) != fmt.Sprint(bridge.CodeHeaderMismatch) || !strings.Contains(fmt.Sprint(refusal["message"]), "Mcp-Param-region") {
				t.Errorf("refused with %v, want %d naming Mcp-Param-region", msgs[0], bridge.CodeHeaderMismatch)
			}
		})
	}
}
