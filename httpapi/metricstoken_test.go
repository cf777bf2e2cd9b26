package httpapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/httpapi"
)

// TestMetricsToken: with Options.MetricsAuth, /metrics answers only the
// scraper's token, with a Bearer challenge to anything else, and neither
// the answer nor the log shows a token; the MCP tokens do not open it.
// Without it /metrics stays open.
func TestMetricsToken(t *testing.T) {
	const scrapeToken = "scrape-0123456789abcdef-secret"
	open := newEnv(t, envOpts{})
	resp, err := open.client.Get(open.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("without MetricsAuth: status %d, want 200", resp.StatusCode)
	}

	f := newAuthFixture(t, httpapi.Options{MetricsAuth: staticTokens(t, map[string]string{"METRICS_TOKEN": scrapeToken})})
	for _, tt := range []struct {
		name      string
		header    map[string]string
		query     string
		status    int
		challenge string
	}{
		{"no token", nil, "", 401, `Bearer realm="mcp-bridge metrics"`},
		{"a wrong token", bearer(eveToken), "", 401, `Bearer realm="mcp-bridge metrics", error="invalid_token"`},
		{"an MCP client's token", bearer(aliceToken), "", 401, `Bearer realm="mcp-bridge metrics", error="invalid_token"`},
		{"basic credentials", map[string]string{"Authorization": "Basic c2NyYXBlOnNlY3JldA=="}, "", 401, `Bearer realm="mcp-bridge metrics"`},
		{"the token in the query", nil, "access_token=" + scrapeToken, 401, `Bearer realm="mcp-bridge metrics", error="invalid_request"`},
		{"the token", bearer(scrapeToken), "", 200, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u := f.srv.URL + "/metrics"
			if tt.query != "" {
				u += "?" + tt.query
			}
			r, _ := http.NewRequest(http.MethodGet, u, nil)
			for k, v := range tt.header {
				r.Header.Set(k, v)
			}
			resp, err := f.client.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status || resp.Header.Get("WWW-Authenticate") != tt.challenge {
				t.Fatalf("status %d, challenge %q; want %d, %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), tt.status, tt.challenge)
			}
			if tt.status == 200 && !strings.Contains(string(body), "mcp_bridge_sessions ") {
				t.Errorf("the scrape has no mcp_bridge_sessions:\n%.300s", body)
			}
			if tt.status != 200 && strings.Contains(string(body), "mcp_bridge_") {
				t.Errorf("a refused scrape got metrics:\n%.300s", body)
			}
			if strings.Contains(string(body), scrapeToken) {
				t.Error("the answer shows the token")
			}
		})
	}
	if !strings.Contains(f.log.String(), `msg="metrics scrape refused"`) {
		t.Errorf("the refusals are not logged:\n%s", f.log.String())
	}
	for _, secret := range []string{scrapeToken, aliceToken, eveToken} {
		if strings.Contains(f.log.String(), secret) {
			t.Error("the log shows a token")
		}
	}
}
