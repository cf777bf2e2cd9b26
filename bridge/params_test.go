package bridge

import (
	"errors"
	"testing"
)

func TestCheckParamHeaders(t *testing.T) {
	mirrored := map[string]paramHeader{}
	collectHeaders([]byte(`{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region"},
		"level":{"type":"integer","x-mcp-header":"Level"},
		"debug":{"type":"boolean","x-mcp-header":"Debug"},
		"opts":{"type":"object","properties":{"zone":{"type":"string","x-mcp-header":"Zone"}}},
		"plain":{"type":"string"}}}`), nil, mirrored)
	if len(mirrored) != 4 || len(mirrored["zone"].path) != 2 {
		t.Fatalf("collected %v", mirrored)
	}
	call := func(args string) Message {
		return mustParse(t, modernBody("1", "tools/call", "", `"name":"t","arguments":`+args))
	}
	for _, tc := range []struct {
		name string
		args string
		sent map[string]string
		ok   bool
	}{
		{"all match", `{"region":"eu","level":42,"debug":true,"opts":{"zone":"a"}}`, map[string]string{"region": "eu", "level": "42", "debug": "true", "zone": "a"}, true},
		{"number compared as a number", `{"level":42.0}`, map[string]string{"level": "42"}, true},
		{"base64", `{"region":"Hello, 世界"}`, map[string]string{"region": "=?base64?SGVsbG8sIOS4lueVjA==?="}, true},
		{"omitted parameter, no header", `{"plain":"x"}`, nil, true},
		{"null parameter, no header", `{"region":null}`, nil, true},
		{"header missing", `{"region":"eu"}`, nil, false},
		{"header differs", `{"region":"eu"}`, map[string]string{"region": "us"}, false},
		{"header for an absent parameter", `{}`, map[string]string{"region": "eu"}, false},
		{"bad base64", `{"region":"Hello"}`, map[string]string{"region": "=?base64?SGVsbG8?="}, false},
		{"control character", `{"region":"eu"}`, map[string]string{"region": "e\x01u"}, false},
		{"boolean spelled otherwise", `{"debug":true}`, map[string]string{"debug": "True"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := call(tc.args)
			err := checkParamHeaders(&m, mirrored, tc.sent)
			if tc.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeHeaderMismatch || e.Kind != KindInvalid {
				t.Fatalf("err = %v, want -32020", err)
			}
		})
	}
}
