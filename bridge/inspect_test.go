package bridge

import (
	"reflect"
	"testing"
)

func TestEachResponse(t *testing.T) {
	type resp struct {
		ID    string
		Error bool
	}
	tests := []struct {
		name string
		msg  string
		want []resp
	}{
		{"result", `{"jsonrpc":"2.0","id":7,"result":{}}`, []resp{{"7", false}}},
		{"error, id last", `{"jsonrpc":"2.0","error":{"code":-32601,"message":"x"},"id":"a\"b"}`, []resp{{`"a\"b"`, true}}},
		{"a result holding an error key", `{"jsonrpc":"2.0","id":1,"result":{"error":{"id":2}}}`, []resp{{"1", false}}},
		{"request", `{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{}}`, nil},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"id":4}}`, nil},
		{"batch", `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"x"},{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"m"}}]`,
			[]resp{{"1", false}, {"2", true}}},
		{"empty", ``, nil},
		{"empty batch", `[]`, nil},
		{"neither result nor error", `{"jsonrpc":"2.0","id":1}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []resp
			EachResponse([]byte(tt.msg), func(id []byte, isError bool) { got = append(got, resp{string(id), isError}) })
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
