package aggregate

import (
	"errors"
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
