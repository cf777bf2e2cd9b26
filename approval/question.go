package approval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcp-bridge/mcp-bridge/internal/redact"
)

// Question is what the caller's user is asked: an elicitation with a
// message that says what would run, and a form of one boolean field,
// approve. MCP: "servers MUST NOT use form mode elicitation to request
// sensitive information", and the question asks for none; the arguments
// it shows are masked where they look secret.
type Question struct {
	// ID is the approval's: a 2026-07-28 wiring seals it in the
	// requestState of its input_required result, and gives it back
	// with the answer (Request.Answer).
	ID string
	// Message says which server and tool, with which arguments (masked,
	// cut at MaxShownArguments), under which rule, and until when.
	Message string
	// Schema is the form: one required boolean, "approve".
	Schema json.RawMessage
}

// Schema is the form of every question: one required boolean.
var Schema = json.RawMessage(`{"type":"object","properties":{"approve":{"type":"boolean","title":"Approve","description":"Run this tool call once, with exactly these arguments"}},"required":["approve"]}`)

// Params are the params of the question's elicitation/create: its
// message and requestedSchema. Form mode is the default, so they name no
// mode, and a 2025-06-18 client reads them as a 2025-11-25 one does.
func (q Question) Params() json.RawMessage {
	b, _ := json.Marshal(struct {
		Message string          `json:"message"`
		Schema  json.RawMessage `json:"requestedSchema"`
	}{q.Message, q.Schema})
	return b
}

// MaxShownArguments is the most of a call's arguments (their masked JSON,
// in bytes) a question or an approver is shown; longer ones are cut, and
// say how long they were. The approval binds all of them (their digest).
const MaxShownArguments = 2000

// shownArguments are a call's arguments as people see them: masked
// (redact.JSON), and cut at MaxShownArguments on a character boundary.
func shownArguments(args json.RawMessage) (shown string, cut bool) {
	masked := redact.JSON(args)
	if masked == nil {
		return "(none)", false
	}
	if len(masked) <= MaxShownArguments {
		return string(masked), false
	}
	end := MaxShownArguments
	for end > 0 && !utf8.RuneStart(masked[end]) {
		end--
	}
	return string(masked[:end]) + fmt.Sprintf("… (%d bytes in all)", len(masked)), true
}

// message is the question's text.
func message(server, tool, args, rule string, ttl time.Duration) string {
	var b strings.Builder
	b.WriteString("Approve this tool call? It runs only if you approve it.\n")
	if server != "" {
		fmt.Fprintf(&b, "Server: %s\n", server)
	}
	fmt.Fprintf(&b, "Tool: %s\nArguments: %s\n", tool, args)
	fmt.Fprintf(&b, "Rule: %s\n", rule)
	fmt.Fprintf(&b, "Unanswered, it is denied in %s.", ttl.Round(time.Second))
	return b.String()
}

// ParseAnswer reads the caller's answer to a question: the result of its
// elicitation/create, as received. It approves only an answer whose
// action is "accept" and whose content is exactly {"approve": true};
// anything else denies: decline, cancel, approve false, a string "true",
// another field beside approve, a member given twice (which a JSON
// decoder would silently read as its last), bytes that are not that
// object. why says which, for the audit log.
func ParseAnswer(result []byte) (approve bool, why string) {
	top, err := members(result)
	if err != nil {
		return false, "a malformed answer (" + err.Error() + ")"
	}
	for k := range top {
		if k != "action" && k != "content" && k != "_meta" {
			return false, "a malformed answer (an unknown member)"
		}
	}
	var action string
	if err := json.Unmarshal(top["action"], &action); err != nil {
		return false, "a malformed answer (no action)"
	}
	switch action {
	case "accept":
	case "decline":
		return false, "declined"
	case "cancel":
		return false, "cancelled"
	default:
		return false, "a malformed answer (an unknown action)"
	}
	content, err := members(top["content"])
	if err != nil {
		return false, "a malformed answer (content: " + err.Error() + ")"
	}
	v, ok := content["approve"]
	switch {
	case !ok || len(content) != 1:
		return false, "a malformed answer (content must be exactly {\"approve\": true})"
	case string(v) == "true":
		return true, "approved"
	case string(v) == "false":
		return false, "approve: false"
	}
	return false, "a malformed answer (approve is not a boolean)"
}

// members reads a JSON object's members, refusing one given twice, and
// anything but one object.
func members(raw []byte) (map[string]json.RawMessage, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	tok, err := d.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	out := map[string]json.RawMessage{}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return nil, errors.New("not an object")
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, errors.New("not an object")
		}
		if _, dup := out[k]; dup {
			return nil, errors.New("a member given twice")
		}
		out[k] = bytes.TrimSpace(v)
	}
	if _, err := d.Token(); err != nil {
		return nil, errors.New("not an object")
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("more than one value")
	}
	return out, nil
}
