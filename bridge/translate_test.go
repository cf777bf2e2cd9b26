package bridge

import (
	"encoding/json"
	"reflect"
	"testing"
)

// jsonEqual compares two JSON texts as values.
func jsonEqual(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("invalid JSON %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %s: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestDecorateResult(t *testing.T) {
	info := []byte(`{"name":"srv","version":"1"}`)
	for _, tc := range []struct {
		name, in string
		h        resultHints
		want     string
	}{
		{"plain call", `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`,
			resultHints{resultType: "complete", serverInfo: info},
			`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"srv","version":"1"}},"content":[]}}`},
		{"empty result", `{"jsonrpc":"2.0","id":"a","result":{}}`,
			resultHints{resultType: "complete"},
			`{"jsonrpc":"2.0","id":"a","result":{"resultType":"complete"}}`},
		{"list gets cache hints", `{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"x"}],"nextCursor":"c"}}`,
			resultHints{resultType: "complete", cache: true, scope: "private"},
			`{"jsonrpc":"2.0","id":2,"result":{"resultType":"complete","ttlMs":0,"cacheScope":"private","tools":[{"name":"x"}],"nextCursor":"c"}}`},
		{"child's own _meta keeps its members", `{"jsonrpc":"2.0","id":3,"result":{"_meta":{"x":1},"content":[]}}`,
			resultHints{resultType: "complete", serverInfo: info},
			`{"jsonrpc":"2.0","id":3,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"srv","version":"1"},"x":1},"content":[]}}`},
		{"child's own _meta, empty", `{"jsonrpc":"2.0","id":3,"result":{"_meta":{}}}`,
			resultHints{resultType: "complete", serverInfo: info},
			`{"jsonrpc":"2.0","id":3,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"srv","version":"1"}}}}`},
		{"modern child's answer is left alone", `{"jsonrpc":"2.0","id":4,"result":{"resultType":"input_required","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"c"}},"ttlMs":5,"cacheScope":"public"}}`,
			resultHints{resultType: "complete", serverInfo: info, cache: true, scope: "public"},
			`{"jsonrpc":"2.0","id":4,"result":{"resultType":"input_required","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"c"}},"ttlMs":5,"cacheScope":"public"}}`},
		{"forced scope", `{"jsonrpc":"2.0","id":5,"result":{"resultType":"complete","ttlMs":0,"cacheScope":"public","tools":[]}}`,
			resultHints{resultType: "complete", cache: true, scope: "private", forceScope: true},
			`{"jsonrpc":"2.0","id":5,"result":{"resultType":"complete","ttlMs":0,"cacheScope":"private","tools":[]}}`},
		{"error untouched", `{"jsonrpc":"2.0","id":6,"error":{"code":-32601,"message":"no"}}`,
			resultHints{resultType: "complete", serverInfo: info},
			`{"jsonrpc":"2.0","id":6,"error":{"code":-32601,"message":"no"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jsonEqual(t, decorateResult(scanned([]byte(tc.in)), tc.h), tc.want)
		})
	}
}

func TestTranslateError(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		code           int
	}{
		{"not found", `{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"Resource not found","data":{"uri":"x"}}}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Resource not found","data":{"uri":"x"}}}`, CodeInvalidParams},
		{"url elicitation", `{"jsonrpc":"2.0","id":2,"error":{"code":-32042,"message":"needs a URL","data":{"elicitations":[]}}}`,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"needs a URL","data":{"childCode":-32042,"elicitations":[]}}}`, CodeInternalError},
		{"reserved, no data", `{"jsonrpc":"2.0","id":3,"error":{"code":-32021,"message":"x"}}`,
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"x","data":{"childCode":-32021}}}`, CodeInternalError},
		{"ordinary", `{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"x"}}`,
			`{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"x"}}`, CodeMethodNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, code := translateError(scanned([]byte(tc.in)))
			jsonEqual(t, got, tc.want)
			if code != tc.code {
				t.Errorf("code %d, want %d", code, tc.code)
			}
		})
	}
}

func TestStampSubscription(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"no params", `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L1"}}}`},
		{"params", `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"a"}}`,
			`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L1"},"uri":"a"}}`},
		{"empty params", `{"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":{}}`,
			`{"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L1"}}}`},
		{"_meta", `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"k":1},"uri":"a"}}`,
			`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L1","k":1},"uri":"a"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jsonEqual(t, stampSubscription([]byte(tc.in), []byte(`"L1"`)), tc.want)
		})
	}
	in := []byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":17}}}`)
	f, _ := scanFields(in)
	if id, ok := subscriptionOf(in, f.params); !ok || id != 17 {
		t.Fatalf("subscriptionOf = %d, %v", id, ok)
	}
	jsonEqual(t, replaceSubscription(in, f.params, []byte(`"listen:0"`)),
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen:0"}}}`)
}

func TestWithoutParam(t *testing.T) {
	jsonEqual(t, withoutParam([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","inputResponses":{"k":{}},"arguments":{"a":1}}}`), "inputResponses"),
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":1}}}`)
	jsonEqual(t, withoutParam([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"inputResponses":{}}}`), "inputResponses"),
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`)
}
