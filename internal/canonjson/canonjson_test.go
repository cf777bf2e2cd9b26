package canonjson

import "testing"

// TestDigest: arguments digest by their canonical JSON: the same members
// in another order or spacing match; numbers match only as written, so
// integers a float64 cannot tell apart (above 2^53) differ.
func TestDigest(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		same bool
	}{
		{`{"a":1,"b":[1,2]}`, `{ "b": [1, 2], "a": 1 }`, true},
		{`{"s":"\u00e9"}`, `{"s":"é"}`, true},
		{`{"n":9007199254740993}`, `{"n":9007199254740992}`, false},
		{`{"n":1}`, `{"n":1.0}`, false},
		{`{"a":{"x":1,"y":2}}`, `{"a":{"y":2,"x":1}}`, true},
		{`{"a":1}`, `{"a":"1"}`, false},
		{`{"confirm":true}`, `{}`, false},
	} {
		if got := Digest([]byte(tt.a)) == Digest([]byte(tt.b)); got != tt.same {
			t.Errorf("Digest(%s) == Digest(%s): %v, want %v", tt.a, tt.b, got, tt.same)
		}
	}
	if Digest(nil) == Digest([]byte(`{}`)) {
		t.Error("no arguments and {} digest alike")
	}
}
