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

// TestEventReply: what an event says of the response it carries, from
// what the bridge read of it on its way (the child's answer, its id
// replaced by the client's), is what reading the message again says
// (ReplyOf): the transport's metrics and audit log need not read it.
func TestEventReply(t *testing.T) {
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":7,"result":{}}`,
		`{"jsonrpc":"2.0","error":{"code":-32601,"message":"x"},"id":12}`,
		`{"jsonrpc":"2.0","id":2,"error":{"message":"x","data":{"code":9},"code":3}}`,
		`{"result":{"content":[{"type":"text","text":"a long answer"}]},"jsonrpc":"2.0","id":123456}`,
		`{"jsonrpc":"2.0","id":1}`,
		`{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{}}`,
	} {
		for _, clientID := range []string{`7`, `"a-long-client-id"`, `1.5e3`} {
			m := scanned([]byte(msg))
			if m.kind == Response {
				m = m.replaced(m.f.id, []byte(clientID))
			}
			ev := event("", m.raw, answerMark(m))
			got, ok := ev.Reply()
			want, wantOK := ReplyOf(m.raw)
			if ok != wantOK || string(got.ID) != string(want.ID) || got.Error != want.Error || got.Code != want.Code {
				t.Errorf("%s as %s: the event says %+v %v, the message %+v %v", msg, clientID, got, ok, want, wantOK)
			}
		}
	}
}

// TestFilterTools: a tools/list result loses the tools keep refuses, and
// nothing else changes; anything else stays as it is.
func TestFilterTools(t *testing.T) {
	keep := func(name string) bool { return name != "secret" }
	for _, tc := range []struct{ name, in, want string }{
		{"one refused", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"echo"},{"name":"secret","x":1},{"name":"add"}],"nextCursor":"c"}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"echo"},{"name":"add"}],"nextCursor":"c"}}`},
		{"all refused", `{"result":{"tools":[{"name":"secret"}]},"jsonrpc":"2.0","id":"a"}`,
			`{"result":{"tools":[]},"jsonrpc":"2.0","id":"a"}`},
		{"none refused: the same bytes", `{"jsonrpc":"2.0","id":1,"result":{"tools":[ {"name":"echo"} ]}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"tools":[ {"name":"echo"} ]}}`},
		{"a tool without a name", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"echo"},{"title":"x"},3]}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"echo"}]}}`},
		{"an escaped name", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"sec\u0072et"}]}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`},
		{"not a tools/list result", `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"\"tools\""}]}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"\"tools\""}]}}`},
		{"a notification", `{"jsonrpc":"2.0","method":"x","params":{"tools":[{"name":"secret"}]}}`,
			`{"jsonrpc":"2.0","method":"x","params":{"tools":[{"name":"secret"}]}}`},
		{"tools not an array", `{"jsonrpc":"2.0","id":1,"result":{"tools":{"name":"secret"}}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"tools":{"name":"secret"}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(FilterTools([]byte(tc.in), keep)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
