package bridge

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestIsModern(t *testing.T) {
	for _, tc := range []struct {
		name, body, header string
		want               bool
	}{
		{"initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`, "", false},
		{"2025 call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`, "2025-11-25", false},
		{"claim in _meta", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, "", true},
		{"modern header", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "2026-07-28", true},
		{"later date", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "2099-01-01", true},
		{"not a date", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "latest", false},
		{"claim outside _meta", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mustParse(t, tc.body)
			if got := IsModern(&m, tc.header); got != tc.want {
				t.Errorf("IsModern = %v, want %v", got, tc.want)
			}
		})
	}
}

// modernBody is a request with a complete envelope plus extra _meta
// members and params.
func modernBody(id, method, meta, params string) string {
	if meta == "" {
		meta = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`
	}
	if params != "" {
		params += ","
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":{` + params + `"_meta":{` + meta + `}}}`
}

func hdr(method string) ModernHeaders {
	return ModernHeaders{Version: "2026-07-28", HasVersion: true, Method: method, HasMethod: true}
}

func TestCheckModern(t *testing.T) {
	const v = `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`
	const caps = `"io.modelcontextprotocol/clientCapabilities":{}`
	named := func(method, name string) ModernHeaders {
		h := hdr(method)
		h.Name, h.HasName = name, true
		return h
	}
	for _, tc := range []struct {
		name string
		body string
		h    ModernHeaders
		code int  // 0: accepted
		kind Kind // for a refusal
	}{
		{"discover", modernBody(`"d1"`, "server/discover", "", ""), hdr("server/discover"), 0, 0},
		{"tools/call", modernBody("1", "tools/call", "", `"name":"echo"`), named("tools/call", "echo"), 0, 0},
		{"base64 name", modernBody("1", "tools/call", "", `"name":"grüß"`), named("tools/call", "=?base64?Z3LDvMOf?="), 0, 0},
		{"resources/read uri", modernBody("1", "resources/read", "", `"uri":"test://a b"`), named("resources/read", "test://a b"), 0, 0},
		{"logLevel", modernBody("1", "tools/list", v+","+caps+`,"io.modelcontextprotocol/logLevel":"info"`, ""), hdr("tools/list"), 0, 0},

		{"response", `{"jsonrpc":"2.0","id":1,"result":{}}`, hdr(""), CodeInvalidRequest, KindInvalid},
		{"initialize with modern header", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`, hdr("initialize"), CodeHeaderMismatch, KindInvalid},
		{"initialize with a claim", modernBody("1", "initialize", "", ""), hdr("initialize"), CodeMethodNotFound, KindNotFound},
		{"no claim", modernBody("1", "tools/list", caps, ""), hdr("tools/list"), CodeInvalidParams, KindInvalid},
		{"no capabilities", modernBody("1", "tools/list", v, ""), hdr("tools/list"), CodeInvalidParams, KindInvalid},
		{"capabilities not an object", modernBody("1", "tools/list", v+`,"io.modelcontextprotocol/clientCapabilities":[]`, ""), hdr("tools/list"), CodeInvalidParams, KindInvalid},
		{"bad logLevel", modernBody("1", "tools/list", v+","+caps+`,"io.modelcontextprotocol/logLevel":"loud"`, ""), hdr("tools/list"), CodeInvalidParams, KindInvalid},
		{"version header differs", modernBody("1", "tools/list", "", ""), ModernHeaders{Version: "2026-08-01", HasVersion: true, Method: "tools/list", HasMethod: true}, CodeHeaderMismatch, KindInvalid},
		{"method header differs", modernBody("1", "tools/list", "", ""), hdr("prompts/list"), CodeHeaderMismatch, KindInvalid},
		{"unsupported version", modernBody("1", "tools/list", `"io.modelcontextprotocol/protocolVersion":"2099-01-01",`+caps, ""), ModernHeaders{Version: "2099-01-01", HasVersion: true, Method: "tools/list", HasMethod: true}, CodeUnsupportedVersion, KindInvalid},
		{"no version header", modernBody("1", "tools/list", "", ""), ModernHeaders{Method: "tools/list", HasMethod: true}, CodeHeaderMismatch, KindInvalid},
		{"no method header", modernBody("1", "tools/list", "", ""), ModernHeaders{Version: "2026-07-28", HasVersion: true}, CodeHeaderMismatch, KindInvalid},
		{"no name header", modernBody("1", "tools/call", "", `"name":"echo"`), hdr("tools/call"), CodeHeaderMismatch, KindInvalid},
		{"name differs", modernBody("1", "tools/call", "", `"name":"echo"`), named("tools/call", "add"), CodeHeaderMismatch, KindInvalid},
		{"bad base64 name", modernBody("1", "tools/call", "", `"name":"echo"`), named("tools/call", "=?base64?***?="), CodeHeaderMismatch, KindInvalid},
		{"name with a control byte", modernBody("1", "prompts/get", "", `"name":"echo"`), named("prompts/get", "ec\x01ho"), CodeHeaderMismatch, KindInvalid},
		{"removed ping", modernBody("1", "ping", "", ""), hdr("ping"), CodeMethodNotFound, KindNotFound},
		{"removed setLevel", modernBody("1", "logging/setLevel", "", `"level":"info"`), hdr("logging/setLevel"), CodeMethodNotFound, KindNotFound},
		{"unknown", modernBody("1", "tools/frobnicate", "", ""), hdr("tools/frobnicate"), CodeMethodNotFound, KindNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mustParse(t, tc.body)
			_, err := CheckModern(&m, tc.h)
			if tc.code == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want code %d", err, tc.code)
			}
			if e.Code != tc.code || e.Kind != tc.kind {
				t.Errorf("code %d kind %d (%s), want %d kind %d", e.Code, e.Kind, e.Message, tc.code, tc.kind)
			}
			if m.Kind == Request && string(e.ID) != string(m.ID()) {
				t.Errorf("id %s, want the request's %s", e.ID, m.ID())
			}
		})
	}
}

func TestUnsupportedVersionData(t *testing.T) {
	m := mustParse(t, modernBody("7", "tools/list", `"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}`, ""))
	_, err := CheckModern(&m, ModernHeaders{Version: "2099-01-01", HasVersion: true, Method: "tools/list", HasMethod: true})
	var body struct {
		ID    int `json:"id"`
		Error struct {
			Code int `json:"code"`
			Data struct {
				Supported []string `json:"supported"`
				Requested string   `json:"requested"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(ErrorBody(err), &body); err != nil {
		t.Fatal(err)
	}
	if body.ID != 7 || body.Error.Code != CodeUnsupportedVersion || body.Error.Data.Requested != "2099-01-01" ||
		len(body.Error.Data.Supported) != 1 || body.Error.Data.Supported[0] != ModernVersion {
		t.Errorf("body %+v", body)
	}
}

func mustParse(t *testing.T, body string) Message {
	t.Helper()
	msgs, _, err := ParseBody([]byte(body))
	if err != nil {
		t.Fatalf("parse %s: %v", body, err)
	}
	return msgs[0]
}
