package httpapi

import "testing"

func TestAuthFailureReason(t *testing.T) {
	for _, tc := range []struct {
		status    int
		challenge string
		want      string
	}{
		{401, `Bearer resource_metadata="https://x/.well-known/oauth-protected-resource"`, "missing_token"},
		{401, `Bearer error="invalid_token", resource_metadata="u"`, "invalid_token"},
		{403, `Bearer error="insufficient_scope", scope="a"`, "insufficient_scope"},
		{400, `Bearer error="invalid_request"`, "invalid_request"},
		{400, ``, ""},
		{404, `Bearer error="invalid_token"`, ""},
		{403, ``, ""}, // a foreign Origin: not auth
	} {
		if got := authFailure(tc.status, tc.challenge); got != tc.want {
			t.Errorf("authFailure(%d, %q) = %q, want %q", tc.status, tc.challenge, got, tc.want)
		}
	}
}
