package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"
)

// spansOf names the fields scanFields found, by their JSON key, with the
// bytes of each value.
func spansOf(msg []byte, f fields) map[string]string {
	out := map[string]string{}
	for key, s := range map[string]span{"id": f.id, "method": f.method, "params": f.params, "result": f.result, "error": f.error} {
		if s.ok() {
			out[key] = string(s.of(msg))
		}
	}
	return out
}

var scanFieldsTests = []struct {
	name    string
	in      string
	want    map[string]string // value bytes by key; absent keys are absent
	wantErr bool
}{
	{"request", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`,
		map[string]string{"id": `1`, "method": `"tools/call"`, "params": `{"name":"echo"}`}, false},
	{"response id last", `{"result":{"content":[]},"jsonrpc":"2.0","id":7}`,
		map[string]string{"id": `7`, "result": `{"content":[]}`}, false},
	{"error response", `{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"no"}}`,
		map[string]string{"id": `"a"`, "error": `{"code":-32601,"message":"no"}`}, false},
	{"escaped key", `{"\u0069d":1,"meth\u006fd":"m"}`, map[string]string{"id": `1`, "method": `"m"`}, false},
	{"escaped slash in key is not id", `{"\/id":1}`, map[string]string{}, false},
	{"duplicate keys: last wins", `{"id":1,"method":"a","id":2}`, map[string]string{"id": `2`, "method": `"a"`}, false},
	{"duplicate via escape: last wins", `{"id":1,"\u0069d":"two"}`, map[string]string{"id": `"two"`}, false},
	{"id nested in params", `{"method":"m","params":{"id":9,"result":1}}`,
		map[string]string{"method": `"m"`, "params": `{"id":9,"result":1}`}, false},
	{"id nested in an array", `{"params":[{"id":9}],"result":[]}`, map[string]string{"params": `[{"id":9}]`, "result": `[]`}, false},
	{"braces and quotes in strings", `{"params":{"s":"}{\"id\":1,\\","t":"]"},"id":3}`,
		map[string]string{"params": `{"s":"}{\"id\":1,\\","t":"]"}`, "id": `3`}, false},
	{"key ending in a backslash", `{"a\\":"id","id":4}`, map[string]string{"id": `4`}, false},
	{"string value that reads like a key", `{"method":"\"id\":5","id":6}`, map[string]string{"method": `"\"id\":5"`, "id": `6`}, false},
	{"whitespace everywhere", " \r\n{ \"id\" \t: 7 ,\n \"method\"\r: \"m\" ,\"params\" : [ 1 , 2 ] } \n",
		map[string]string{"id": `7`, "method": `"m"`, "params": `[ 1 , 2 ]`}, false},
	{"number with exponent", `{"id":-1.5e3,"result":-0}`, map[string]string{"id": `-1.5e3`, "result": `-0`}, false},
	{"string id", `{"id":"1"}`, map[string]string{"id": `"1"`}, false},
	{"number id", `{"id":1}`, map[string]string{"id": `1`}, false},
	{"large integer kept byte-exact", `{"id":12345678901234567890}`, map[string]string{"id": `12345678901234567890`}, false},
	{"float id kept as written", `{"id":1.0}`, map[string]string{"id": `1.0`}, false},
	{"literals", `{"result":null,"error":false,"id":true,"params":[true,null]}`,
		map[string]string{"result": `null`, "error": `false`, "id": `true`, "params": `[true,null]`}, false},
	{"keys that are not id", `{"ids":1,"i":2,"idx":3,"Id":4,"ID":5}`, map[string]string{}, false},
	{"unicode in strings", `{"method":"é\u00e9✓","id":"\ud83d\ude00"}`, map[string]string{"method": `"é\u00e9✓"`, "id": `"\ud83d\ude00"`}, false},
	{"empty object", `{}`, map[string]string{}, false},
	{"empty object with space", " { \n } ", map[string]string{}, false},
	{"deeply nested", `{"params":{"a":[[[{"b":{"c":"}"}}]]]},"id":0}`, map[string]string{"params": `{"a":[[[{"b":{"c":"}"}}]]]}`, "id": `0`}, false},
	{"array", `[{"id":1}]`, nil, true},
	{"string", `"id"`, nil, true},
	{"number", `1`, nil, true},
	{"null", `null`, nil, true},
}

func TestScanFields(t *testing.T) {
	for _, tt := range scanFieldsTests {
		t.Run(tt.name, func(t *testing.T) {
			if !json.Valid([]byte(tt.in)) {
				t.Fatalf("test input is not valid JSON: %s", tt.in)
			}
			f, err := scanFields([]byte(tt.in))
			if tt.wantErr {
				if !errors.Is(err, errNotObject) {
					t.Fatalf("scanFields(%s) error = %v, want errNotObject", tt.in, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("scanFields(%s): %v", tt.in, err)
			}
			if got := spansOf([]byte(tt.in), f); !maps.Equal(got, tt.want) {
				t.Errorf("scanFields(%s)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestMember(t *testing.T) {
	tests := []struct {
		name string
		obj  string
		key  string
		want string // "" for absent
	}{
		{"top level", `{"jsonrpc":"2.0","id":1}`, "jsonrpc", `"2.0"`},
		{"not nested", `{"params":{"_meta":{"progressToken":1}}}`, "progressToken", ""},
		{"nested object", `{"_meta":{"progressToken":"t"},"x":1}`, "_meta", `{"progressToken":"t"}`},
		{"escaped key", `{"a\"b":1,"c\\d":2}`, `a"b`, `1`},
		{"escaped backslash key", `{"a\"b":1,"c\\d":2}`, `c\d`, `2`},
		{"unicode escape key", `{"requestI\u0064":"r"}`, "requestId", `"r"`},
		{"last of duplicates", `{"k":1,"k":[2],"k":{"v":3}}`, "k", `{"v":3}`},
		{"whitespace", "{ \"k\" :\n\t-1.5e3 }", "k", `-1.5e3`},
		{"absent", `{"a":1}`, "b", ""},
		{"empty key", `{"":1}`, "", `1`},
		{"not an object", `["k",1]`, "k", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := member([]byte(tt.obj), tt.key)
			if got := string(s.of([]byte(tt.obj))); got != tt.want || s.ok() != (tt.want != "") {
				t.Errorf("member(%s, %q) = %q (ok %v), want %q", tt.obj, tt.key, got, s.ok(), tt.want)
			}
		})
	}
}

// TestEachElement: the one walker of JSON arrays (a client's batch, a
// child's batch) gives each element whole, white space or not, with its
// capacity cut at its end, stops at fn's error, and stops rather than
// spin on bytes that start no value.
func TestEachElement(t *testing.T) {
	errStop := errors.New("stop")
	tests := []struct {
		name, arr string
		stopAt    int // fn fails on this element (-1: never)
		want      []string
		err       error
	}{
		{"compact", `[{"a":1},{"b":[2,3]},"s",4]`, -1, []string{`{"a":1}`, `{"b":[2,3]}`, `"s"`, `4`}, nil},
		{"white space", " [ {\"a\":\"]\"} ,\n\t5 ] ", -1, []string{`{"a":"]"}`, `5`}, nil},
		{"empty", `[]`, -1, nil, nil},
		{"not an array", `{"a":1}`, -1, nil, nil},
		{"stopped by fn", `[1,2,3]`, 1, []string{`1`, `2`}, errStop},
		{"a comma where a value should start", `[,1]`, -1, nil, nil},
		{"a stray bracket", `[1,}`, -1, []string{`1`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			err := eachElement([]byte(tt.arr), func(elem []byte) error {
				if cap(elem) != len(elem) {
					t.Errorf("element %s has capacity %d past its end", elem, cap(elem)-len(elem))
				}
				got = append(got, string(elem))
				if len(got)-1 == tt.stopAt {
					return errStop
				}
				return nil
			})
			if err != tt.err || strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("got %q, %v; want %q, %v", got, err, tt.want, tt.err)
			}
		})
	}
}

func TestSplice(t *testing.T) {
	tests := []struct {
		name string
		in   string
		repl string
		want string
	}{
		{"id first", `{"id":"abc","method":"m"}`, `7`, `{"id":7,"method":"m"}`},
		{"id last", `{"result":{"id":1},"jsonrpc":"2.0","id":7}`, `"client-7"`, `{"result":{"id":1},"jsonrpc":"2.0","id":"client-7"}`},
		{"whitespace kept", "{ \"id\" : 1 }", `12345678901234567890`, "{ \"id\" : 12345678901234567890 }"},
		{"escaped key", `{"\u0069d":1}`, `2`, `{"\u0069d":2}`},
		{"last of duplicates", `{"id":1,"id":2}`, `3`, `{"id":1,"id":3}`},
		{"longer to shorter", `{"id":"a very long client id","x":0}`, `1`, `{"id":1,"x":0}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.in)
			orig := bytes.Clone(in)
			f, err := scanFields(in)
			if err != nil || !f.id.ok() {
				t.Fatalf("scanFields(%s) = %v, %v", tt.in, f, err)
			}
			got := splice(in, f.id, []byte(tt.repl))
			if string(got) != tt.want {
				t.Errorf("splice = %s, want %s", got, tt.want)
			}
			if !bytes.Equal(in, orig) {
				t.Errorf("splice changed its input to %s", in)
			}
			if len(got) > 0 && len(in) > 0 && &got[0] == &in[0] {
				t.Error("splice returned its input's array")
			}
			// replace: in place when the caller owns the message and its
			// capacity allows, with no allocation; else splice.
			for _, slack := range []int{0, 4, 32} {
				for _, owned := range []bool{false, true} {
					buf := append(make([]byte, 0, len(tt.in)+slack), tt.in...)
					var got []byte
					allocs := testing.AllocsPerRun(1, func() {
						buf = append(buf[:0], tt.in...)
						got = replace(buf, f.id, []byte(tt.repl), owned)
					})
					if string(got) != tt.want {
						t.Errorf("replace(slack %d, owned %t) = %s, want %s", slack, owned, got, tt.want)
					}
					inPlace := &got[0] == &buf[0]
					if fits := len(tt.want) <= len(tt.in)+slack; owned && fits {
						if !inPlace || allocs != 0 {
							t.Errorf("replace(slack %d, owned) of a message with room for the id: in place %t, %v allocations; want in place and none", slack, inPlace, allocs)
						}
					} else if inPlace || string(buf) != tt.in {
						t.Errorf("replace(slack %d, owned %t) changed its input to %s (in place %t); it has no room or is not the caller's", slack, owned, buf, inPlace)
					}
				}
			}
		})
	}
}

func compact(t *testing.T, b []byte) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatalf("compact %q: %v", b, err)
	}
	return buf.String()
}

// FuzzScanFields checks the hand-written scanner against encoding/json: for
// a valid JSON object, the value it finds for a key is the one
// encoding/json decodes for that key, and it finds none where that has none.
func FuzzScanFields(f *testing.F) {
	for _, tt := range scanFieldsTests {
		f.Add([]byte(tt.in))
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"a":{"b":[1,{"c":"\\\"}"}]},"id":"\\"}`,
		`{"id":"\u0022"}`,
		`{"i\u0064":1,"id":2,"\u0069\u0064":3}`,
		"{\"id\":\"\xff\",\"\xffid\":1}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return
		}
		fs, err := scanFields(in)
		if i := skipSpace(in, 0); in[i] != '{' {
			if err == nil {
				t.Fatalf("scanFields accepted the non-object %q", in)
			}
			return
		}
		if err != nil {
			t.Fatalf("scanFields(%q): %v", in, err)
		}
		var want map[string]json.RawMessage
		if err := json.Unmarshal(in, &want); err != nil {
			t.Fatalf("encoding/json rejects the valid object %q: %v", in, err)
		}
		check := func(key string, s span) {
			w, ok := want[key]
			if s.ok() != ok {
				t.Fatalf("%q: key %q found %v, encoding/json found %v", in, key, s.ok(), ok)
			}
			if ok && compact(t, s.of(in)) != compact(t, w) {
				t.Fatalf("%q: key %q is %q, encoding/json has %q", in, key, s.of(in), w)
			}
		}
		check("id", fs.id)
		check("method", fs.method)
		check("params", fs.params)
		check("result", fs.result)
		check("error", fs.error)
		// Every other key through member too. encoding/json turns invalid
		// UTF-8 in a key into U+FFFD, which member (raw bytes) does not.
		if utf8.Valid(in) {
			for key := range want {
				check(key, member(in, key))
			}
		}
	})
}

func TestIDFromOversize(t *testing.T) {
	text := strings.Repeat("x", 100)
	tests := []struct {
		name       string
		head, tail string
		want       string // "" for none
	}{
		{"Go order: id in the head",
			`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + text,
			text + `"}]}}`, `7`},
		{"id as the first member",
			`{"id":"req-1","jsonrpc":"2.0","result":{"content":[{"type":"text","text":"` + text,
			text + `"}]}}`, `"req-1"`},
		{"whitespace in the head",
			"{ \"jsonrpc\" : \"2.0\" ,\n \"id\" :\t42 , \"result\": {\"a\":\"" + text,
			text + `"}}`, `42`},
		{"TypeScript order: id in the tail",
			`{"result":{"content":[{"type":"text","text":"` + text,
			text + `"}]},"jsonrpc":"2.0","id":7}`, `7`},
		{"tail with its newline and spaces",
			`{"result":{"content":"` + text,
			text + "\"} , \"id\" : 8 }\r\n", `8`},
		{"large integer id kept byte-exact",
			`{"result":"` + text,
			text + `","id":12345678901234567890}`, `12345678901234567890`},
		{"negative id", `{"result":"` + text, text + `","id":-3}`, `-3`},
		{"string id with escapes in the head",
			`{"jsonrpc":"2.0","id":"a\"b\\c}","result":"` + text,
			text + `"}`, `"a\"b\\c}"`},
		{"string id with escapes in the tail",
			`{"result":"` + text,
			text + `","id":"x\"}\\"}`, `"x\"}\\"`},
		{"head cut inside the id number",
			`{"jsonrpc":"2.0","id":12`,
			text + `"}]}}`, ``},
		{"head cut inside the id string",
			`{"jsonrpc":"2.0","id":"abc`,
			text + `"}]}}`, ``},
		{"head cut inside the key",
			`{"jsonrpc":"2.0","i`,
			text + `"}]}}`, ``},
		{"head cut before the id, id in the tail",
			`{"jsonrpc":"2.0","res`,
			text + `"},"id":5}`, `5`},
		{"id in a nested object in the head",
			`{"result":{"id":5,"content":[{"type":"text","text":"` + text,
			text + `"}]}}`, ``},
		{"id in a nested object in the tail",
			`{"result":{"content":"` + text,
			text + `","meta":{"id":5}}}`, ``},
		{"id in a nested object, not last at the top",
			`{"result":{"content":"` + text,
			text + `","meta":{"id":5}},"jsonrpc":"2.0"}`, ``},
		{"id inside a string in the head",
			`{"result":{"content":[{"type":"text","text":"{\"id\":5,` + text,
			text + `"}]}}`, ``},
		{"id inside a string in the tail",
			`{"result":{"content":[{"type":"text","text":"` + text,
			text + `,\"id\":6}"}]}}`, ``},
		{"id inside a string at the end of the tail",
			`{"result":{"content":[{"type":"text","text":"` + text,
			text + `{\"id\":6}`, ``},
		{"key ending in id after an escaped quote",
			`{"result":{"content":"` + text,
			text + `","x\"id":5}`, ``},
		{"value \"id\" last",
			`{"result":{"content":"` + text,
			text + `","name":"id"}`, ``},
		{"id that is not a scalar", `{"result":"` + text, text + `","id":true}`, ``},
		{"tail cut off before the end", `{"result":"` + text, text + `","id":5`, ``},
		{"nothing kept", ``, ``, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := idFromOversize([]byte(tt.head), []byte(tt.tail))
			if string(got) != tt.want || (got == nil) != (tt.want == "") {
				t.Errorf("idFromOversize(%.60q, ...%q) = %q, want %q", tt.head, tt.tail[max(0, len(tt.tail)-40):], got, tt.want)
			}
		})
	}
}

// FuzzIDFromOversize cuts a valid object into a head and a tail, as the
// stdio reader keeps them of a line over the cap, and checks that any id
// idFromOversize finds there is the object's id: a wrong one would fail
// another request in flight.
func FuzzIDFromOversize(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"xxxx"}]}}`,
		`{"result":{"content":[{"type":"text","text":"xxxx"}]},"jsonrpc":"2.0","id":7}`,
		`{"result":{"id":5,"content":[{"type":"text","text":"{\"id\":6}"}]},"x\"id":7}`,
		`{ "id" : "a\"b" , "result" : { "meta" : { "id" : 1 } } }`,
	} {
		for _, cut := range []uint16{0, 8, 20, 40} {
			f.Add([]byte(s), cut, cut)
		}
	}
	f.Fuzz(func(t *testing.T, msg []byte, headLen, tailLen uint16) {
		if !json.Valid(msg) || msg[skipSpace(msg, 0)] != '{' {
			return
		}
		ids := 0
		_ = eachMember(msg, func(key []byte, _ span) {
			if string(key) == "id" {
				ids++
			}
		})
		if ids > 1 {
			return // the head may hold the first of duplicates, which is not the one that counts
		}
		head := msg[:int(headLen)%(len(msg)+1)]
		tail := msg[len(msg)-int(tailLen)%(len(msg)+1):]
		got := idFromOversize(head, tail)
		if got == nil {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(msg, &m); err != nil {
			t.Fatalf("encoding/json rejects the valid object %q: %v", msg, err)
		}
		if real, ok := m["id"]; !ok || !json.Valid(got) || compact(t, got) != compact(t, real) {
			t.Fatalf("object %q, head %q, tail %q: found id %q, the object's is %q", msg, head, tail, got, real)
		}
	})
}

func TestParseBody(t *testing.T) {
	type want struct {
		kind   MsgKind
		method string
		id     string
		raw    string // "" means the body itself
	}
	tests := []struct {
		name      string
		body      string
		wantBatch bool
		want      []want
		wantCode  int    // a failure's JSON-RPC code; 0 for success
		wantErrID string // the id a failure carries, if known
	}{
		{name: "request", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			want: []want{{kind: Request, method: "tools/list", id: `1`}}},
		{name: "request with string id and array params", body: `{"jsonrpc":"2.0","id":"a-1","method":"m","params":[1]}`,
			want: []want{{kind: Request, method: "m", id: `"a-1"`}}},
		{name: "notification", body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			want: []want{{kind: Notification, method: "notifications/initialized"}}},
		{name: "result response", body: `{"jsonrpc":"2.0","id":"s-1","result":{}}`,
			want: []want{{kind: Response, id: `"s-1"`}}},
		{name: "error response", body: `{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"no"}}`,
			want: []want{{kind: Response, id: `3`}}},
		{name: "escaped method and key", body: `{"jsonrpc":"2.0","\u0069d":2,"method":"tools\/call"}`,
			want: []want{{kind: Request, method: "tools/call", id: `2`}}},
		{name: "large id byte-exact", body: `{"jsonrpc":"2.0","id":12345678901234567890,"method":"ping"}`,
			want: []want{{kind: Request, method: "ping", id: `12345678901234567890`}}},
		{name: "pretty-printed becomes compact",
			body: "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 1,\n  \"method\": \"tools/call\",\n  \"params\": {\n    \"name\": \"echo\",\n    \"arguments\": {\"message\": \"a  b\\n\"}\n  }\n}\n",
			want: []want{{kind: Request, method: "tools/call", id: `1`,
				raw: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"a  b\n"}}}`}}},
		{name: "batch", body: "[\n {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} ,\n {\"jsonrpc\":\"2.0\",\"method\":\"n\"},{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"a\":[1,2]}}\n]",
			wantBatch: true,
			want: []want{
				{kind: Request, method: "ping", id: `1`, raw: `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
				{kind: Notification, method: "n", raw: `{"jsonrpc":"2.0","method":"n"}`},
				{kind: Response, id: `2`, raw: `{"jsonrpc":"2.0","id":2,"result":{"a":[1,2]}}`},
			}},
		{name: "batch of one", body: `[{"jsonrpc":"2.0","method":"n"}]`, wantBatch: true,
			want: []want{{kind: Notification, method: "n", raw: `{"jsonrpc":"2.0","method":"n"}`}}},
		{name: "empty batch", body: `[]`, wantBatch: true, wantCode: CodeInvalidRequest},
		{name: "empty batch with space", body: "[ \n ]", wantBatch: true, wantCode: CodeInvalidRequest},
		{name: "batch with a bad member", body: `[{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":null,"method":"m"}]`, wantBatch: true, wantCode: CodeInvalidRequest},
		{name: "batch of a non-object", body: `[1]`, wantBatch: true, wantCode: CodeInvalidRequest},
		{name: "nested batch", body: `[[{"jsonrpc":"2.0","method":"n"}]]`, wantBatch: true, wantCode: CodeInvalidRequest},
		{name: "id null", body: `{"jsonrpc":"2.0","id":null,"method":"m"}`, wantCode: CodeInvalidRequest},
		{name: "id an object", body: `{"jsonrpc":"2.0","id":{},"method":"m"}`, wantCode: CodeInvalidRequest},
		{name: "id a boolean", body: `{"jsonrpc":"2.0","id":true,"result":{}}`, wantCode: CodeInvalidRequest},
		{name: "missing jsonrpc", body: `{"id":1,"method":"m"}`, wantCode: CodeInvalidRequest, wantErrID: `1`},
		{name: "jsonrpc 1.0", body: `{"jsonrpc":"1.0","id":1,"method":"m"}`, wantCode: CodeInvalidRequest, wantErrID: `1`},
		{name: "params a string", body: `{"jsonrpc":"2.0","id":5,"method":"m","params":"x"}`, wantCode: CodeInvalidRequest, wantErrID: `5`},
		{name: "params null", body: `{"jsonrpc":"2.0","method":"m","params":null}`, wantCode: CodeInvalidRequest},
		{name: "method empty", body: `{"jsonrpc":"2.0","id":1,"method":""}`, wantCode: CodeInvalidRequest, wantErrID: `1`},
		{name: "method a number", body: `{"jsonrpc":"2.0","id":1,"method":1}`, wantCode: CodeInvalidRequest, wantErrID: `1`},
		{name: "result and error", body: `{"jsonrpc":"2.0","id":1,"result":{},"error":{}}`, wantCode: CodeInvalidRequest, wantErrID: `1`},
		{name: "response without id", body: `{"jsonrpc":"2.0","result":{}}`, wantCode: CodeInvalidRequest},
		{name: "not an object", body: `"ping"`, wantCode: CodeInvalidRequest},
		{name: "invalid JSON", body: `{"jsonrpc":"2.0",`, wantCode: CodeParseError},
		{name: "two values", body: `{"jsonrpc":"2.0","method":"n"}{}`, wantCode: CodeParseError},
		{name: "empty body", body: ``, wantCode: CodeParseError},
		{name: "only space", body: " \n", wantCode: CodeParseError},
		{name: "compact with spaces and escapes in strings", body: `{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"a \" b\\","t":" "}}`,
			want: []want{{kind: Request, method: "m", id: `1`}}},
		{name: "a raw newline in a string", body: "{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{\"s\":\"a\nb\"}}", wantCode: CodeParseError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs, batch, err := ParseBody([]byte(tt.body))
			if batch != tt.wantBatch {
				t.Errorf("batch = %v, want %v", batch, tt.wantBatch)
			}
			if tt.wantCode != 0 {
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("ParseBody(%s) = %d messages, error %v; want a *bridge.Error", tt.body, len(msgs), err)
				}
				if e.Code != tt.wantCode || e.Kind != KindInvalid || string(e.ID) != tt.wantErrID {
					t.Errorf("error = %+v, want code %d, KindInvalid, id %q", e, tt.wantCode, tt.wantErrID)
				}
				if msgs != nil {
					t.Errorf("messages returned with the error: %d", len(msgs))
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseBody(%s): %v", tt.body, err)
			}
			if len(msgs) != len(tt.want) {
				t.Fatalf("got %d messages, want %d", len(msgs), len(tt.want))
			}
			for i, w := range tt.want {
				m := msgs[i]
				if w.raw == "" {
					w.raw = tt.body
				}
				if m.Kind != w.kind || m.Method != w.method || string(m.ID()) != w.id || string(m.Raw) != w.raw {
					t.Errorf("message %d = {kind %d method %q id %s raw %s}\nwant {kind %d method %q id %s raw %s}",
						i, m.Kind, m.Method, m.ID(), m.Raw, w.kind, w.method, w.id, w.raw)
				}
			}
		})
	}
}

// TestParseBodyAllocation: a big body that is compact already, as
// clients send them, is validated and sliced without a copy; one that is
// not is compacted into a buffer of its size (two, under the race
// detector, where bytes.Buffer's growth allocates a temporary as well).
func TestParseBodyAllocation(t *testing.T) {
	text := strings.Repeat("x", 4<<20)
	for _, tt := range []struct {
		name     string
		body     string
		maxAlloc uint64
	}{
		{"compact", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"` + text + `"}}}`, 4 << 10},
		{"pretty-printed", "{\n \"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"tools/call\",\n \"params\": {\"name\": \"echo\", \"arguments\": {\"message\": \"" + text + "\"}}}", 2 * (4<<20 + 64<<10)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(tt.body)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			msgs, _, err := ParseBody(body)
			runtime.ReadMemStats(&after)
			if err != nil || len(msgs) != 1 || msgs[0].Method != "tools/call" || !bytes.Contains(msgs[0].Raw, []byte(`"message":"`+text+`"`)) || bytes.ContainsAny(msgs[0].Raw, " \n") {
				t.Fatalf("ParseBody: %d messages, %v; want the compact request", len(msgs), err)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > tt.maxAlloc {
				t.Errorf("ParseBody of a %d-byte body allocated %d bytes, want at most %d", len(body), alloc, tt.maxAlloc)
			}
		})
	}
}
