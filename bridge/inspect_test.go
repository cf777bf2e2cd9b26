package bridge

import (
	"testing"
)

func TestReplyOf(t *testing.T) {
	type reply struct {
		ID    string
		Error bool
		Code  int
	}
	tests := []struct {
		name string
		msg  string
		want *reply // nil: not a response
	}{
		{"result", `{"jsonrpc":"2.0","id":7,"result":{}}`, &reply{"7", false, 0}},
		{"error, id last", `{"jsonrpc":"2.0","error":{"code":-32601,"message":"x"},"id":"a\"b"}`, &reply{`"a\"b"`, true, -32601}},
		{"error, code last", `{"jsonrpc":"2.0","id":2,"error":{"message":"x","data":{"code":9},"code":3}}`, &reply{"2", true, 3}},
		{"a result holding an error key", `{"jsonrpc":"2.0","id":1,"result":{"error":{"id":2}}}`, &reply{"1", false, 0}},
		{"request", `{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{}}`, nil},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"id":4}}`, nil},
		{"a batch is not one message", `[{"jsonrpc":"2.0","id":1,"result":{}}]`, nil},
		{"empty", ``, nil},
		{"neither result nor error", `{"jsonrpc":"2.0","id":1}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, ok := ReplyOf([]byte(tt.msg))
			switch {
			case tt.want == nil && ok:
				t.Errorf("got a reply %+v, want none", r)
			case tt.want != nil && !ok:
				t.Errorf("got no reply, want %+v", *tt.want)
			case tt.want != nil && (string(r.ID) != tt.want.ID || r.Error != tt.want.Error || r.Code != tt.want.Code):
				t.Errorf("got %s %v %d, want %+v", r.ID, r.Error, r.Code, *tt.want)
			}
		})
	}
}
