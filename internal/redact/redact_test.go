package redact

import (
	"strings"
	"testing"
)

// TestJSON: a call's arguments as an approver sees them: members whose
// names look secret masked whatever their value, token-shaped strings and
// URL credentials masked at any depth, the rest as sent.
func TestJSON(t *testing.T) {
	for _, tt := range []struct {
		name, in, want string
	}{
		{"nothing secret", `{"path": "/tmp/x", "recursive": true, "n": 1.50}`, `{"n":1.50,"path":"/tmp/x","recursive":true}`},
		{"secret names", `{"api_key": "abc", "Authorization": "Bearer x", "password": {"a": 1}, "github_token": 42}`,
			`{"Authorization":"****","api_key":"****","github_token":"****","password":"****"}`},
		{"nested", `{"opts": {"headers": [{"X-Api-Key": "k"}], "url": "https://u:p@h/x?token=t&q=1"}}`,
			`{"opts":{"headers":[{"X-Api-Key":"****"}],"url":"https://****@h/x?token=****&q=1"}}`},
		{"token shapes", `["ghp_0123456789abcdefghijABCDEF", "skeleton"]`, `["****","skeleton"]`},
		{"not JSON", `{"a": `, `"(not valid JSON)"`},
		{"two values", `{} {}`, `"(not valid JSON)"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(JSON([]byte(tt.in))); got != tt.want {
				t.Errorf("JSON(%s)\n got %s\nwant %s", tt.in, got, tt.want)
			}
		})
	}
	if JSON(nil) != nil || JSON([]byte("  ")) != nil {
		t.Error("no arguments are not nil")
	}
	if got := string(JSON([]byte(`{"token": "hunter2-value"}`))); strings.Contains(got, "hunter2") {
		t.Errorf("a secret shows: %s", got)
	}
}
