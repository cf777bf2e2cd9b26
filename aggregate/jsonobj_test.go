package aggregate

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"testing"
)

func TestMembers(t *testing.T) {
	obj := []byte(` { "id" : 1.0 , "method":"tools/call","params":{"name":"x","arguments":{"n":12345678901234567890}} ,"big": [1, {"a":"}"}] } `)
	want := map[string]string{
		"id":     `1.0`,
		"method": `"tools/call"`,
		"params": `{"name":"x","arguments":{"n":12345678901234567890}}`,
		"big":    `[1, {"a":"}"}]`,
	}
	n := 0
	if err := eachMember(obj, func(key []byte, v span) {
		n++
		k := string(key)
		if got := string(v.of(obj)); got != want[k] {
			t.Errorf("member %q = %s, want %s", k, got, want[k])
		}
	}); err != nil {
		t.Fatal(err)
	}
	if n != len(want) {
		t.Errorf("%d members, want %d", n, len(want))
	}
	for _, bad := range []string{`[1]`, `{"a":1`, `{"a":1} {}`, `"x"`, ``} {
		if err := eachMember([]byte(bad), func([]byte, span) {}); err == nil {
			t.Errorf("eachMember(%s): no error", bad)
		}
	}
	if _, _, err := member([]byte(`{"name":"a","name":"b"}`), "name"); !errors.Is(err, errDuplicate) {
		t.Errorf("a key twice: %v, want errDuplicate", err)
	}
	if _, _, err := member([]byte(`{"name":"a","other":1,"other":2}`), "name"); err != nil {
		t.Errorf("a key twice that is not read: %v", err)
	}
}

func TestSetMember(t *testing.T) {
	for _, tt := range []struct{ obj, key, val, want string }{
		{`{"id":1,"x":2}`, "id", `7`, `{"id":7,"x":2}`},
		{`{"x":2}`, "id", `7`, `{"x":2,"id":7}`},
		{`{}`, "id", `7`, `{"id":7}`},
		{`{ }`, "id", `7`, `{ "id":7}`},
		{`{"a" : "b" }`, "a", `"c"`, `{"a" : "c" }`},
	} {
		got, err := setMember([]byte(tt.obj), tt.key, []byte(tt.val))
		if err != nil || string(got) != tt.want {
			t.Errorf("setMember(%s, %s, %s) = %s, %v; want %s", tt.obj, tt.key, tt.val, got, err, tt.want)
		}
	}
}

func TestPath(t *testing.T) {
	msg := []byte(`{"jsonrpc":"2.0","id":3,"params":{"ref":{"type":"ref/prompt","name":"a__b"},"argument":{"name":"x"}}}`)
	got, err := path{"params", "ref", "name"}.replaceAt(msg, []byte(`"b"`))
	if want := `{"jsonrpc":"2.0","id":3,"params":{"ref":{"type":"ref/prompt","name":"b"},"argument":{"name":"x"}}}`; err != nil || string(got) != want {
		t.Errorf("replaceAt = %s, %v; want %s", got, err, want)
	}
	if got, err := (path{"params", "nothing", "name"}).replaceAt(msg, []byte(`1`)); err != nil || string(got) != string(msg) {
		t.Errorf("replaceAt of a missing path changed the message: %s, %v", got, err)
	}
	if _, ok, _ := (path{"params", "ref", "name", "deeper"}).at(msg); ok {
		t.Error("a path through a string was found")
	}
}

// FuzzEachMember holds the scanner to encoding/json: on an object that
// encoding/json takes, it finds the same members, in order, each value
// byte for byte; on anything else it may refuse, and never panics.
func FuzzEachMember(f *testing.F) {
	for _, seed := range []string{
		`{}`, ` { "a" : 1 } `, `{"id":1.0,"method":"tools/call","params":{"name":"x","arguments":{"s":"}\"{","n":[1,{"a":[]}]}}}`,
		`{"\u0069d":"\\"}`, `{"a":true,"b":false,"c":null,"d":-1e+10}`, `{"a":"é\u00e9"}`, `[1]`, `{"a":}`, `{"a" 1}`, `{"a":1,}`, `{"a":[1}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, obj []byte) {
		type kv struct {
			k string
			v string
		}
		var mine []kv
		err := eachMember(obj, func(k []byte, v span) { mine = append(mine, kv{string(k), string(v.of(obj))}) })
		var m map[string]json.RawMessage
		if json.Unmarshal(obj, &m) != nil {
			return // not an object encoding/json takes: refusing or not is fine
		}
		if err != nil {
			t.Fatalf("eachMember refused %q: %v", obj, err)
		}
		var theirs []kv
		dec := json.NewDecoder(bytes.NewReader(obj))
		_, _ = dec.Token()
		for dec.More() {
			tok, _ := dec.Token()
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				t.Fatal(err)
			}
			theirs = append(theirs, kv{tok.(string), string(raw)})
		}
		if !slices.Equal(mine, theirs) {
			t.Fatalf("members of %q:\n mine   %q\n theirs %q", obj, mine, theirs)
		}
	})
}
