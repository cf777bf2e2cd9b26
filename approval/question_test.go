package approval

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestParseAnswer: only {"action": "accept", "content": {"approve": true}}
// approves; anything else denies.
func TestParseAnswer(t *testing.T) {
	for _, tt := range []struct {
		answer  string
		approve bool
		why     string
	}{
		{`{"action":"accept","content":{"approve":true}}`, true, "approved"},
		{` { "content" : { "approve" : true } , "action" : "accept", "_meta": {"x": 1} } `, true, "approved"},
		{`{"action":"accept","content":{"approve":false}}`, false, "approve: false"},
		{`{"action":"decline"}`, false, "declined"},
		{`{"action":"cancel","content":{"approve":true}}`, false, "cancelled"},
		{`{"action":"accept"}`, false, "malformed"},
		{`{"action":"accept","content":{}}`, false, "malformed"},
		{`{"action":"accept","content":{"approve":"true"}}`, false, "not a boolean"},
		{`{"action":"accept","content":{"approve":1}}`, false, "not a boolean"},
		{`{"action":"accept","content":{"Approve":true}}`, false, "malformed"},
		{`{"action":"accept","content":{"approve":true,"reason":"x"}}`, false, "malformed"},
		{`{"action":"accept","content":{"approve":false,"approve":true}}`, false, "twice"},
		{`{"action":"decline","action":"accept","content":{"approve":true}}`, false, "twice"},
		{`{"action":"Accept","content":{"approve":true}}`, false, "unknown action"},
		{`{"Action":"accept","action":"accept","content":{"approve":true}}`, false, "unknown member"},
		{`{"action":"accept","content":{"approve":true}} {}`, false, "malformed"},
		{`[{"action":"accept","content":{"approve":true}}]`, false, "malformed"},
		{`{"action":"accept","content":"{\"approve\":true}"}`, false, "malformed"},
		{``, false, "malformed"},
		{`null`, false, "malformed"},
	} {
		approve, why := ParseAnswer([]byte(tt.answer))
		if approve != tt.approve || !strings.Contains(why, tt.why) {
			t.Errorf("ParseAnswer(%s) = %v %q, want %v %q", tt.answer, approve, why, tt.approve, tt.why)
		}
	}
}

// TestQuestion: the question names the server, the tool and the
// arguments, masked where they look secret and cut when long; its form
// is one boolean.
func TestQuestion(t *testing.T) {
	args := `{"path":"/srv/a","password":"hunter2","url":"https://u:pw@h/x"}`
	shown, cut := shownArguments(json.RawMessage(args))
	msg := message("files", "delete_file", shown, "*=delete_*", 2*time.Minute)
	for _, want := range []string{"Server: files", "Tool: delete_file", `"path":"/srv/a"`, `"password":"****"`, "https://****@h/x", "Rule: *=delete_*", "denied in 2m0s"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message lacks %q:\n%s", want, msg)
		}
	}
	if cut || strings.Contains(msg, "hunter2") || strings.Contains(msg, "u:pw") {
		t.Errorf("the message shows a secret, or was cut:\n%s", msg)
	}
	long := `{"data":"` + strings.Repeat("é", MaxShownArguments) + `"}`
	shown, cut = shownArguments(json.RawMessage(long))
	if !cut || !strings.HasSuffix(shown, "bytes in all)") || len(shown) > MaxShownArguments+40 || !json.Valid([]byte(`"`+strings.TrimPrefix(shown[:20], `{"data":"`)+`"`)) {
		t.Errorf("long arguments: cut %v, %d bytes", cut, len(shown))
	}
	var params struct {
		Message string `json:"message"`
		Schema  struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		} `json:"requestedSchema"`
	}
	q := Question{ID: "x", Message: msg, Schema: Schema}
	if err := json.Unmarshal(q.Params(), &params); err != nil {
		t.Fatal(err)
	}
	if params.Message != msg || params.Schema.Type != "object" || len(params.Schema.Properties) != 1 || string(params.Schema.Properties["approve"]) == "" ||
		len(params.Schema.Required) != 1 || params.Schema.Required[0] != "approve" || strings.Contains(string(q.Params()), `"mode"`) {
		t.Errorf("the params: %s", q.Params())
	}
	if shown, _ := shownArguments(nil); shown != "(none)" {
		t.Errorf("no arguments: %q", shown)
	}
}
