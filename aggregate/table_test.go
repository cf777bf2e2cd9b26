package aggregate

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// TestRoute: a client's request that names a tool, a prompt or a
// resource goes to the server behind the name, as that server names it;
// everything else of the message is kept byte for byte.
func TestRoute(t *testing.T) {
	n := testNames(t)
	for _, tt := range []struct {
		name, method, msg string
		server, out       string
		code              int // of the error, if one
	}{
		{"tool", "tools/call",
			`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fs__read_file","arguments":{"path":"/x","n":1.50}}}`,
			"fs", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/x","n":1.50}}}`, 0},
		{"renamed tool", "tools/call",
			`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{},"name":"fs__read_many"}}`,
			"fs", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{},"name":"read_multiple_files"}}`, 0},
		{"hidden tool", "tools/call", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fs__delete_file"}}`, "", "", bridge.CodeInvalidParams},
		{"tool without a server", "tools/call", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}`, "", "", bridge.CodeInvalidParams},
		{"name not a string", "tools/call", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":7}}`, "", "", bridge.CodeInvalidParams},
		{"no name", "tools/call", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}`, "", "", bridge.CodeInvalidParams},
		{"a name given twice", "tools/call", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fs__a","name":"git__log"}}`, "", "", bridge.CodeInvalidRequest},
		{"prompt", "prompts/get", `{"jsonrpc":"2.0","id":"p","method":"prompts/get","params":{"name":"git__summary","arguments":{"x":"y"}}}`,
			"git", `{"jsonrpc":"2.0","id":"p","method":"prompts/get","params":{"name":"summary","arguments":{"x":"y"}}}`, 0},
		{"read", "resources/read", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"mcp-bridge://git/file:///tmp/a.txt"}}`,
			"git", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///tmp/a.txt"}}`, 0},
		{"read of a URI not the aggregate's", "resources/read", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///tmp/a.txt"}}`, "", "", bridge.CodeInvalidParams},
		{"subscribe", "resources/subscribe", `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"mcp-bridge://fs/test://x"}}`,
			"fs", `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"test://x"}}`, 0},
		{"unsubscribe", "resources/unsubscribe", `{"jsonrpc":"2.0","id":1,"method":"resources/unsubscribe","params":{"uri":"mcp-bridge://fs/test://x"}}`,
			"fs", `{"jsonrpc":"2.0","id":1,"method":"resources/unsubscribe","params":{"uri":"test://x"}}`, 0},
		{"completion of a prompt", "completion/complete",
			`{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"fs__new"},"argument":{"name":"style","value":"f"}}}`,
			"fs", `{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"old"},"argument":{"name":"style","value":"f"}}}`, 0},
		{"completion of a template", "completion/complete",
			`{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"mcp-bridge://git/demo://r/{id}"},"argument":{"name":"id","value":"1"}}}`,
			"git", `{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"demo://r/{id}"},"argument":{"name":"id","value":"1"}}}`, 0},
		{"completion of something else", "completion/complete", `{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/tool","name":"fs__x"}}}`, "", "", bridge.CodeInvalidParams},
		{"unknown method", "tools/frobnicate", `{"jsonrpc":"2.0","id":1,"method":"tools/frobnicate","params":{}}`, "", "", bridge.CodeMethodNotFound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			server, out, err := route(n, tt.method, []byte(tt.msg))
			if tt.code != 0 {
				var be *bridge.Error
				if !errors.As(err, &be) || be.Code != tt.code {
					t.Fatalf("route: %v, want code %d", err, tt.code)
				}
				return
			}
			if err != nil || server != tt.server || string(out) != tt.out {
				t.Errorf("route = %q, %s, %v\nwant %q, %s", server, out, err, tt.server, tt.out)
			}
		})
	}
}

func TestExposeResult(t *testing.T) {
	n := testNames(t)
	for _, tt := range []struct {
		name, method, res, want string
	}{
		{"text only", "tools/call", `{"content":[{"type":"text","text":"a uri"}]}`, `{"content":[{"type":"text","text":"a uri"}]}`},
		{"resource link and embedded resource", "tools/call",
			`{"content":[{"type":"text","text":"see"}, {"type":"resource_link","uri":"file:///a","name":"a"},{"type":"resource","resource":{"uri":"test://b","text":"b"}}],"structuredContent":{"uri":"kept"},"isError":false}`,
			`{"content":[{"type":"text","text":"see"},{"type":"resource_link","uri":"mcp-bridge://fs/file:///a","name":"a"},{"type":"resource","resource":{"uri":"mcp-bridge://fs/test://b","text":"b"}}],"structuredContent":{"uri":"kept"},"isError":false}`},
		{"prompt messages", "prompts/get",
			`{"description":"d","messages":[{"role":"user","content":{"type":"resource","resource":{"uri":"file:///p","text":"t"}}},{"role":"user","content":{"type":"text","text":"x"}}]}`,
			`{"description":"d","messages":[{"role":"user","content":{"type":"resource","resource":{"uri":"mcp-bridge://fs/file:///p","text":"t"}}},{"role":"user","content":{"type":"text","text":"x"}}]}`},
		{"read", "resources/read", `{"contents":[{"uri":"file:///a","text":"x"},{"uri":"file:///a/b","blob":"eA=="}]}`,
			`{"contents":[{"uri":"mcp-bridge://fs/file:///a","text":"x"},{"uri":"mcp-bridge://fs/file:///a/b","blob":"eA=="}]}`},
		{"completion untouched", "completion/complete", `{"completion":{"values":["uri"]}}`, `{"completion":{"values":["uri"]}}`},
		{"not an array", "tools/call", `{"content":{"uri":"x"}}`, `{"content":{"uri":"x"}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := exposeResult(n, "fs", tt.method, []byte(tt.res))
			if err != nil || string(got) != tt.want {
				t.Errorf("exposeResult = %s, %v\nwant %s", got, err, tt.want)
			}
		})
	}
}

func TestExposeNotification(t *testing.T) {
	n := testNames(t)
	for _, tt := range []struct {
		name, msg, want string
		changed         Changes
	}{
		{"tools changed", `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`, "", ToolsChanged},
		{"prompts changed", `{"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":{}}`, "", PromptsChanged},
		{"resources changed", `{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}`, "", ResourcesChanged},
		{"updated", `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"test://r/1"}}`,
			`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"mcp-bridge://fs/test://r/1"}}`, 0},
		{"log without a logger", `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`,
			`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x","logger":"fs"}}`, 0},
		{"log with a logger", `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"db","data":"x"}}`,
			`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"fs/db","data":"x"}}`, 0},
		{"anything else", `{"jsonrpc":"2.0","method":"notifications/elicitation/complete","params":{"elicitationId":"e"}}`,
			`{"jsonrpc":"2.0","method":"notifications/elicitation/complete","params":{"elicitationId":"e"}}`, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			method, _ := stringValue(mustMember(t, tt.msg, "method"))
			got, changed, err := exposeNotification(n, "fs", method, []byte(tt.msg))
			if err != nil || string(got) != tt.want || changed != tt.changed {
				t.Errorf("exposeNotification = %s, %v, %v\nwant %s, %v", got, changed, err, tt.want, tt.changed)
			}
		})
	}
}

func mustMember(t *testing.T, msg, key string) []byte {
	t.Helper()
	s, ok, err := member([]byte(msg), key)
	if err != nil || !ok {
		t.Fatalf("no %s in %s: %v", key, msg, err)
	}
	return s.of([]byte(msg))
}

// fromClient routes msg and fails the test on an error.
func fromClient(t *testing.T, tb *Table, msg string) Route {
	t.Helper()
	r, err := tb.FromClient([]byte(msg))
	if err != nil {
		t.Fatalf("FromClient(%s): %v", msg, err)
	}
	return r
}

func fromServer(t *testing.T, tb *Table, server, msg string) Delivery {
	t.Helper()
	d, err := tb.FromServer(server, []byte(msg))
	if err != nil {
		t.Fatalf("FromServer(%s, %s): %v", server, msg, err)
	}
	return d
}

// TestTableCall: a client's call goes out under the aggregate's id and
// progress token, and its progress and answer come back under the
// client's, byte for byte.
func TestTableCall(t *testing.T) {
	tb := NewTable(testNames(t), TableOptions{})
	r := fromClient(t, tb, `{"jsonrpc":"2.0","id":"req-1","method":"tools/call","params":{"name":"fs__read_file","_meta":{"progressToken":"tok"}}}`)
	if want := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","_meta":{"progressToken":1}}}`; r.Target != ToServer || r.Server != "fs" || string(r.Message) != want || r.ID != 1 {
		t.Fatalf("route %+v\nwant %s to fs", r, want)
	}
	d := fromServer(t, tb, "fs", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`)
	if want := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":1}}`; d.Dest != ToClient || string(d.Message) != want {
		t.Errorf("progress %+v, want %s", d, want)
	}
	d = fromServer(t, tb, "fs", `{"result":{"content":[{"type":"resource_link","uri":"file:///a"}]},"jsonrpc":"2.0","id":1}`)
	if want := `{"result":{"content":[{"type":"resource_link","uri":"mcp-bridge://fs/file:///a"}]},"jsonrpc":"2.0","id":"req-1"}`; d.Dest != ToClient || string(d.Message) != want || d.Method != "tools/call" {
		t.Errorf("answer %+v\nwant %s", d, want)
	}
	// Answered once: a second answer is nobody's.
	if d, err := tb.FromServer("fs", []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)); d.Dest != Dropped || !errors.Is(err, errMisrouted) {
		t.Errorf("a second answer: %+v, %v", d, err)
	}
	// Ids the client chose are its own: 1.0 and "1" come back as they went.
	for _, id := range []string{`1.0`, `"1"`, `12345678901234567890`} {
		r := fromClient(t, tb, `{"jsonrpc":"2.0","id":`+id+`,"method":"prompts/get","params":{"name":"git__p"}}`)
		d := fromServer(t, tb, "git", `{"jsonrpc":"2.0","id":`+string(mustMember(t, string(r.Message), "id"))+`,"error":{"code":-32602,"message":"no"}}`)
		if want := `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32602,"message":"no"}}`; string(d.Message) != want {
			t.Errorf("answer %s, want %s", d.Message, want)
		}
	}
}

// TestTableNoCrossAnswers: a server cannot answer, or send progress for,
// a request that went to another server, nor one never sent; the right
// server's answer still reaches the client.
func TestTableNoCrossAnswers(t *testing.T) {
	tb := NewTable(testNames(t), TableOptions{})
	ra := fromClient(t, tb, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fs__x","_meta":{"progressToken":9}}}`)
	rb := fromClient(t, tb, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"git__log"}}`)
	if ra.ID == rb.ID {
		t.Fatalf("two calls under one id %d", ra.ID)
	}
	for _, tt := range []struct{ name, server, msg string }{
		{"git answers fs's call", "git", `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{"fs answers git's call", "fs", `{"jsonrpc":"2.0","id":2,"result":{}}`},
		{"git sends fs's progress", "git", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`},
		{"an id never sent", "fs", `{"jsonrpc":"2.0","id":99,"result":{}}`},
		{"the client's own id", "fs", `{"jsonrpc":"2.0","id":"1","result":{}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := tb.stats.Misrouted.Load()
			d, err := tb.FromServer(tt.server, []byte(tt.msg))
			if d.Dest != Dropped || !errors.Is(err, errMisrouted) || tb.stats.Misrouted.Load() != before+1 {
				t.Errorf("delivery %+v, %v; want dropped and counted as misrouted", d, err)
			}
		})
	}
	if d := fromServer(t, tb, "fs", `{"jsonrpc":"2.0","id":1,"result":{"ok":"fs"}}`); string(d.Message) != `{"jsonrpc":"2.0","id":1,"result":{"ok":"fs"}}` {
		t.Errorf("fs's own answer: %s", d.Message)
	}
	if d := fromServer(t, tb, "git", `{"jsonrpc":"2.0","id":2,"result":{"ok":"git"}}`); string(d.Message) != `{"jsonrpc":"2.0","id":2,"result":{"ok":"git"}}` {
		t.Errorf("git's own answer: %s", d.Message)
	}
}

// TestTableServerRequests: two servers' requests of the same id are two
// requests for the client, each answer going back to its server under
// its own id; progress and cancellation follow the same mapping.
func TestTableServerRequests(t *testing.T) {
	tb := NewTable(testNames(t), TableOptions{})
	da := fromServer(t, tb, "fs", `{"jsonrpc":"2.0","id":0,"method":"sampling/createMessage","params":{"messages":[],"_meta":{"progressToken":"s"}}}`)
	db := fromServer(t, tb, "git", `{"jsonrpc":"2.0","id":0,"method":"roots/list"}`)
	if want := `{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{"messages":[],"_meta":{"progressToken":1}}}`; da.Dest != ToClient || string(da.Message) != want {
		t.Errorf("fs's request %+v\nwant %s", da, want)
	}
	if want := `{"jsonrpc":"2.0","id":2,"method":"roots/list"}`; string(db.Message) != want {
		t.Errorf("git's request %s, want %s", db.Message, want)
	}
	if r := fromClient(t, tb, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":5}}`); r.Target != ToServer || r.Server != "fs" ||
		string(r.Message) != `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"s","progress":5}}` {
		t.Errorf("the client's progress: %+v", r)
	}
	if r := fromClient(t, tb, `{"jsonrpc":"2.0","id":2,"result":{"roots":[]}}`); r.Target != ToServer || r.Server != "git" || string(r.Message) != `{"jsonrpc":"2.0","id":0,"result":{"roots":[]}}` {
		t.Errorf("answer to git: %+v", r)
	}
	if r := fromClient(t, tb, `{"jsonrpc":"2.0","id":2,"result":{"roots":[]}}`); r.Target != Nowhere {
		t.Errorf("a second answer to git: %+v", r)
	}
	// fs gives up its request: the client is told under its id, and its
	// late answer goes nowhere.
	d := fromServer(t, tb, "fs", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0,"reason":"timeout"}}`)
	if want := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"timeout"}}`; string(d.Message) != want {
		t.Errorf("fs's cancellation %s, want %s", d.Message, want)
	}
	if r := fromClient(t, tb, `{"jsonrpc":"2.0","id":1,"result":{}}`); r.Target != Nowhere {
		t.Errorf("an answer to a cancelled request: %+v", r)
	}
	if d := fromServer(t, tb, "git", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0}}`); d.Dest != Dropped {
		t.Errorf("a cancellation of nothing: %+v", d)
	}
}

// TestTableClientNotifications: the client's cancellation goes to the
// server its request went to, under the id that server was sent; what
// concerns every server goes to all, and what concerns none nowhere.
func TestTableClientNotifications(t *testing.T) {
	tb := NewTable(testNames(t), TableOptions{})
	fromClient(t, tb, `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"fs__x"}}`)
	fromClient(t, tb, `{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"git__log"}}`)
	for _, tt := range []struct {
		name, msg string
		target    Target
		server    string
		out       string
	}{
		{"cancel a", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}`, ToServer, "fs", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`},
		{"cancel b", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"b","reason":"x"}}`, ToServer, "git", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"x"}}`},
		{"cancel nothing", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c"}}`, Nowhere, "", ""},
		{"progress of nothing", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`, Nowhere, "", ""},
		{"roots changed", `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`, ToAll, "", `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`},
		{"initialized", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, ToAggregate, "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{"unknown", `{"jsonrpc":"2.0","method":"notifications/whatever"}`, Nowhere, "", ""},
		{"an answer to nothing", `{"jsonrpc":"2.0","id":5,"result":{}}`, Nowhere, "", ""},
		{"initialize", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`, ToAggregate, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`},
		{"a list", `{"jsonrpc":"2.0","id":0,"method":"tools/list"}`, ToAggregate, "", `{"jsonrpc":"2.0","id":0,"method":"tools/list"}`},
		{"setLevel", `{"jsonrpc":"2.0","id":0,"method":"logging/setLevel","params":{"level":"debug"}}`, ToAggregate, "", `{"jsonrpc":"2.0","id":0,"method":"logging/setLevel","params":{"level":"debug"}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := fromClient(t, tb, tt.msg)
			if r.Target != tt.target || r.Server != tt.server || (tt.out != "" && string(r.Message) != tt.out) {
				t.Errorf("route %+v (%s)\nwant %v %q %s", r, r.Message, tt.target, tt.server, tt.out)
			}
		})
	}
}

// TestTableLeave: a call whose client stopped reading its answer is
// dropped, yet the client's cancellation of it, which follows, reaches its
// server under the id it was sent; a forgotten call's does not, and only
// the last maxLeft calls left are remembered.
func TestTableLeave(t *testing.T) {
	tb := NewTable(testNames(t), TableOptions{})
	cancel := func(id string) Route {
		return fromClient(t, tb, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+id+`}}`)
	}
	left := fromClient(t, tb, `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"fs__x"}}`)
	forgotten := fromClient(t, tb, `{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"git__log"}}`)
	tb.Leave(left.ID)
	tb.Forget(forgotten.ID)
	if d, _ := tb.FromServer("fs", []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)); d.Dest != Dropped {
		t.Errorf("a late answer to a call left: %+v", d)
	}
	if r := cancel(`"a"`); r.Target != ToServer || r.Server != "fs" || string(r.Message) != `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}` {
		t.Errorf("cancel a call left: %+v (%s)", r, r.Message)
	}
	if r := cancel(`"a"`); r.Target != Nowhere {
		t.Errorf("cancel a call left twice: %+v", r)
	}
	if r := cancel(`"b"`); r.Target != Nowhere {
		t.Errorf("cancel a forgotten call: %+v", r)
	}
	for i := range maxLeft + 1 {
		r := fromClient(t, tb, `{"jsonrpc":"2.0","id":`+strconv.Itoa(100+i)+`,"method":"tools/call","params":{"name":"fs__x"}}`)
		tb.Leave(r.ID)
	}
	if r := cancel(`100`); r.Target != Nowhere {
		t.Errorf("cancel the oldest of %d calls left: %+v", maxLeft+1, r)
	}
	if r := cancel(`101`); r.Target != ToServer {
		t.Errorf("cancel the second oldest of %d calls left: %+v", maxLeft+1, r)
	}
}

// TestTableErrors: a request the aggregate cannot route is answered with
// an error carrying the client's id, and nothing goes to a server.
func TestTableErrors(t *testing.T) {
	tb := NewTable(testNames(t), TableOptions{MaxCalls: 1})
	_, err := tb.FromClient([]byte(`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"nope"}}`))
	var be *bridge.Error
	if !errors.As(err, &be) || be.Code != bridge.CodeInvalidParams || string(be.ID) != `"x"` {
		t.Errorf("unknown tool: %v (%+v)", err, be)
	}
	fromClient(t, tb, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fs__a"}}`)
	_, err = tb.FromClient([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fs__a"}}`))
	if !errors.As(err, &be) || be.Kind != bridge.KindUnavailable || string(be.ID) != "2" {
		t.Errorf("past MaxCalls: %v", err)
	}
	if _, err := tb.FromServer("fs", []byte(`not json`)); err == nil {
		t.Error("a server's line that is no JSON: no error")
	}
}

// TestTableBounds: a server that floods the client with requests is
// answered at once past MaxAsks, and what it asked before still works.
func TestTableBounds(t *testing.T) {
	tb := NewTable(testNames(t), TableOptions{MaxAsks: 2})
	fromServer(t, tb, "fs", `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	fromServer(t, tb, "fs", `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	d := fromServer(t, tb, "fs", `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	if d.Dest != BackToServer || !strings.HasPrefix(string(d.Message), `{"jsonrpc":"2.0","id":3,"error":{"code":-32603,`) || tb.stats.Refused.Load() != 1 {
		t.Errorf("past MaxAsks: %+v (%s)", d, d.Message)
	}
	if r := fromClient(t, tb, `{"jsonrpc":"2.0","id":2,"result":{}}`); r.Server != "fs" || string(r.Message) != `{"jsonrpc":"2.0","id":2,"result":{}}` {
		t.Errorf("answer: %+v", r)
	}
	if d := fromServer(t, tb, "fs", `{"jsonrpc":"2.0","id":4,"method":"ping"}`); d.Dest != ToClient {
		t.Errorf("after an answer, room again: %+v", d)
	}
}

// TestTableServerGone: the calls in flight to a server that went down are
// answered (a tool's with isError naming the server), the aggregate's own
// fail, and its requests to the client are forgotten.
func TestTableServerGone(t *testing.T) {
	tb := NewTable(testNames(t), TableOptions{})
	fromClient(t, tb, `{"jsonrpc":"2.0","id":"t","method":"tools/call","params":{"name":"fs__x"}}`)
	fromClient(t, tb, `{"jsonrpc":"2.0","id":"p","method":"prompts/get","params":{"name":"fs__p"}}`)
	fromClient(t, tb, `{"jsonrpc":"2.0","id":"g","method":"tools/call","params":{"name":"git__log"}}`)
	own, _ := tb.Call("fs", "tools/list", []byte(`{}`))
	fromServer(t, tb, "fs", `{"jsonrpc":"2.0","id":"s","method":"roots/list"}`)
	got := map[string]string{}
	for _, d := range tb.ServerGone("fs") {
		key := d.Method
		if d.Dest == ToCaller {
			key = "own " + d.Method
			if d.ID != own {
				t.Errorf("own call %d, want %d", d.ID, own)
			}
		}
		got[key] = string(d.Message)
	}
	want := map[string]string{
		"tools/call":     `{"jsonrpc":"2.0","id":"t","result":{"content":[{"type":"text","text":"server \"fs\" of this aggregate is down: its tools, prompts and resources are unavailable until it is back"}],"isError":true}}`,
		"prompts/get":    `{"jsonrpc":"2.0","id":"p","error":{"code":-32603,"message":"server \"fs\" of this aggregate is down: its tools, prompts and resources are unavailable until it is back"}}`,
		"own tools/list": `{"jsonrpc":"2.0","id":` + string(mustIDString(own)) + `,"error":{"code":-32603,"message":"server \"fs\" is down"}}`,
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %s\nwant %s", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("answers %v", got)
	}
	if r := fromClient(t, tb, `{"jsonrpc":"2.0","id":1,"result":{"roots":[]}}`); r.Target != Nowhere {
		t.Errorf("an answer to a gone server's request: %+v", r)
	}
	if d := fromServer(t, tb, "git", `{"jsonrpc":"2.0","id":3,"result":{}}`); d.Dest != ToClient || string(d.Message) != `{"jsonrpc":"2.0","id":"g","result":{}}` {
		t.Errorf("the other server's answer: %+v", d)
	}
}

func mustIDString(id int64) []byte { return strconv.AppendInt(nil, id, 10) }

// TestTableOwnCalls: the aggregate's own calls share the id space of the
// client's, so neither can take the other's answer.
func TestTableOwnCalls(t *testing.T) {
	tb := NewTable(testNames(t), TableOptions{})
	id, msg := tb.Call("fs", "tools/list", []byte(`{"cursor":"c"}`))
	if want := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"c"}}`; id != 1 || string(msg) != want {
		t.Errorf("Call = %d, %s; want 1, %s", id, msg, want)
	}
	r := fromClient(t, tb, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fs__x"}}`)
	if r.ID != 2 {
		t.Errorf("the client's call under %d, want 2", r.ID)
	}
	if d := fromServer(t, tb, "fs", `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`); d.Dest != ToCaller || d.ID != 1 || d.Method != "tools/list" {
		t.Errorf("own answer: %+v", d)
	}
	if d := fromServer(t, tb, "fs", `{"jsonrpc":"2.0","id":2,"result":{}}`); d.Dest != ToClient || string(d.Message) != `{"jsonrpc":"2.0","id":1,"result":{}}` {
		t.Errorf("the client's answer: %+v", d)
	}
	_, msg = tb.Call("git", "ping", nil)
	if want := `{"jsonrpc":"2.0","id":3,"method":"ping"}`; string(msg) != want {
		t.Errorf("Call without params: %s", msg)
	}
	tb.Forget(3)
	if d, err := tb.FromServer("git", []byte(`{"jsonrpc":"2.0","id":3,"result":{}}`)); d.Dest != Dropped || err == nil {
		t.Errorf("an answer to a forgotten call: %+v", d)
	}
}
