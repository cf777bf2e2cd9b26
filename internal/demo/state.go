package demo

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// requestState is what the demo keeps in the requestState of an
// input_required result (SEP-2322): the call it belongs to, the round it
// ends, and what earlier rounds learnt. The spec makes the client carry it
// back verbatim and tells the server to "treat requestState as an
// attacker-controlled input" and "reject state that fails verification", so
// it travels signed: see sealState.
type requestState struct {
	Tool  string `json:"tool"`
	Round int    `json:"round"`
	Data  string `json:"data,omitempty"`
}

// stateKey signs requestState. It is random per process: the demo has no
// secret to share, and a state is only ever meant for the process that
// minted it, so a retry that reaches another demo process (another child,
// another replica) is refused like a forged one.
var stateKey = sync.OnceValue(func() []byte {
	key := make([]byte, 32)
	rand.Read(key) // never fails (crypto/rand, Go 1.24+)
	return key
})

// sealState encodes s as base64url(JSON) "." base64url(HMAC-SHA256).
func sealState(s requestState) string {
	payload, err := json.Marshal(s)
	if err != nil {
		panic("demo: encode requestState: " + err.Error()) // strings and an int always encode
	}
	body := base64.RawURLEncoding.EncodeToString(payload)
	return body + "." + base64.RawURLEncoding.EncodeToString(stateMAC(body))
}

func stateMAC(body string) []byte {
	mac := hmac.New(sha256.New, stateKey())
	mac.Write([]byte(body))
	return mac.Sum(nil)
}

// badState is the error for any requestState the demo did not mint for this
// very call: forged, altered, truncated, from another process, another tool
// or another round. One answer for all, so that it teaches a forger nothing;
// -32602 as the TypeScript reference server answers, the spec naming no code.
func badState() error {
	return &jsonrpc.Error{
		Code:    jsonrpc.CodeInvalidParams,
		Message: "invalid or expired requestState",
		Data:    json.RawMessage(`{"reason":"invalid_request_state"}`),
	}
}

// openState returns the state sealed in s if this process minted it for
// tool, and badState otherwise. The caller checks the round.
func openState(s, tool string) (requestState, error) {
	body, sig, ok := strings.Cut(s, ".")
	if !ok {
		return requestState{}, badState()
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, stateMAC(body)) {
		return requestState{}, badState()
	}
	payload, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return requestState{}, badState()
	}
	var st requestState
	if err := json.Unmarshal(payload, &st); err != nil || st.Tool != tool {
		return requestState{}, badState()
	}
	return st, nil
}
