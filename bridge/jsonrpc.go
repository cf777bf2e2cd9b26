package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
)

// The bridge reads only a few top-level fields of each message (id, method,
// whether it is a result or an error, a progress token) and rewrites one of
// them (the id), leaving every other byte as it was. encoding/json can
// decode those fields but cannot say where they are, so changing an id
// would mean decoding and re-encoding the whole message on the hot path, and
// re-encoding loses what the bridge must keep exact (1 vs 1.0, key order).
// So fields are located by the small scanner below, written by hand, over
// input that json.Valid (or json.Compact) has already accepted.

// span is a half-open byte range [start, end) of a JSON value; start < 0
// means the field is absent.
type span struct{ start, end int }

var absent = span{-1, -1}

func (s span) ok() bool { return s.start >= 0 }

func (s span) of(b []byte) []byte {
	if s.start < 0 {
		return nil
	}
	return b[s.start:s.end]
}

// fields are the top-level members of a JSON-RPC message the bridge uses.
type fields struct {
	jsonrpc span
	id      span
	method  span // including its quotes
	params  span
	result  span
	error   span
}

var errNotObject = errors.New("a JSON-RPC message must be a JSON object")

// scanFields locates the members of the object msg (valid JSON). As in
// encoding/json and JavaScript's JSON.parse, the last of duplicate keys wins.
func scanFields(msg []byte) (fields, error) {
	f := noFields
	err := eachMember(msg, f.set)
	return f, err
}

var noFields = fields{absent, absent, absent, absent, absent, absent}

// moved is f once the bytes at s (a member's value, or bytes within one)
// are replaced by n bytes: what comes after s moves, what holds s grows
// or shrinks, what comes before stays.
func (f fields) moved(s span, n int) fields {
	d := n - (s.end - s.start)
	mv := func(x span) span {
		switch {
		case x.start < 0:
			return x
		case x == s:
			return span{s.start, s.start + n}
		case x.start >= s.end:
			return span{x.start + d, x.end + d}
		case x.start <= s.start && x.end >= s.end:
			return span{x.start, x.end + d}
		}
		return x
	}
	return fields{mv(f.jsonrpc), mv(f.id), mv(f.method), mv(f.params), mv(f.result), mv(f.error)}
}

// set records the member key, if it is one of the fields.
func (f *fields) set(key []byte, v span) {
	switch string(key) { // no allocation: Go compiles this to a compare
	case "jsonrpc":
		f.jsonrpc = v
	case "id":
		f.id = v
	case "method":
		f.method = v
	case "params":
		f.params = v
	case "result":
		f.result = v
	case "error":
		f.error = v
	}
}

// member finds the value of key in the object obj (valid JSON).
func member(obj []byte, key string) span {
	found := absent
	_ = eachMember(obj, func(k []byte, v span) {
		if string(k) == key {
			found = v
		}
	})
	return found
}

// eachMember calls fn for every member of the object obj (valid JSON), with
// the key unescaped and the value's span.
func eachMember(obj []byte, fn func(key []byte, v span)) error {
	return eachMemberRef(obj, func(k keyRef, v span) { fn(k.key, v) })
}

// eachElement calls fn with every element of the array arr (valid JSON,
// white space allowed), in order, until fn returns an error, which it
// returns. Each element is sliced with its capacity cut at its end, so an
// append to one never writes over the next. A byte where no value can
// start ends the walk: it never loops for ever, whatever arr holds.
func eachElement(arr []byte, fn func(elem []byte) error) error {
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return nil
	}
	for i = skipSpace(arr, i+1); i < len(arr) && arr[i] != ']'; {
		end := skipValue(arr, i)
		if end <= i {
			return nil // not valid JSON after all: stop rather than spin
		}
		if err := fn(arr[i:end:end]); err != nil {
			return err
		}
		i = skipSpace(arr, end)
		if i < len(arr) && arr[i] == ',' {
			i = skipSpace(arr, i+1)
		}
	}
	return nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index just past the value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	default: // number, true, false, null
		for ; i < len(b); i++ {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
		}
		return i
	}
}

// splice returns b with the bytes of s replaced by repl, in a new slice.
func splice(b []byte, s span, repl []byte) []byte {
	out := make([]byte, 0, len(b)-(s.end-s.start)+len(repl))
	out = append(out, b[:s.start]...)
	out = append(out, repl...)
	return append(out, b[s.end:]...)
}

// splice2 returns b with the bytes of both a and c, which do not overlap,
// replaced by repl, in a new slice.
func splice2(b []byte, a, c span, repl []byte) []byte {
	if c.start < a.start {
		a, c = c, a
	}
	out := make([]byte, 0, len(b)-(a.end-a.start)-(c.end-c.start)+2*len(repl))
	out = append(out, b[:a.start]...)
	out = append(out, repl...)
	out = append(out, b[a.end:c.start]...)
	out = append(out, repl...)
	return append(out, b[c.end:]...)
}

// replace returns b with the bytes of s replaced by repl. If the caller
// owns b (it may change it, and nobody else reads it) and its capacity
// allows, that happens in place: only the bytes after s move, and a
// message of tens of MiB is not copied whole to change its id. Else it is
// splice. Spans into b are stale afterwards.
func replace(b []byte, s span, repl []byte, owned bool) []byte {
	n := len(b) - (s.end - s.start) + len(repl)
	if !owned || n > cap(b) {
		return splice(b, s, repl)
	}
	out := b[:n]
	copy(out[s.start+len(repl):], b[s.end:]) // copy moves overlapping bytes correctly
	copy(out[s.start:], repl)
	return out
}

// idFromOversize finds the id of a message of which only the first and the
// last few KiB are known (a line over the size cap). Encoders put the id
// either before a big result (Go, Python) or after it (the TypeScript SDK
// writes {"result":…,"jsonrpc":"2.0","id":7}).
func idFromOversize(head, tail []byte) []byte {
	if id := idInHead(head); id != nil {
		return id
	}
	return idInTail(tail)
}

// idInHead finds the id among the members of the head of a message that
// are complete: those before the first big one.
func idInHead(head []byte) []byte {
	i := skipSpace(head, 0)
	if i >= len(head) || head[i] != '{' {
		return nil
	}
	for i = skipSpace(head, i+1); i < len(head) && head[i] == '"'; {
		ke := skipString(head, i)
		key := head[i+1 : max(i+1, ke-1)]
		vs := skipSpace(head, skipSpace(head, ke)+1)
		ve := skipValue(head, vs)
		if ve >= len(head) {
			return nil // the value runs past what was kept
		}
		if string(key) == "id" && json.Valid(head[vs:ve]) {
			return head[vs:ve]
		}
		i = skipSpace(head, ve)
		if i >= len(head) || head[i] != ',' {
			return nil
		}
		i = skipSpace(head, i+1)
	}
	return nil
}

// idInTail finds the id as the last member of the tail of a message:
// `"id":<scalar>}`.
func idInTail(tail []byte) []byte {
	t := bytes.TrimRight(tail, " \t\r\n")
	if len(t) == 0 || t[len(t)-1] != '}' {
		return nil
	}
	t = bytes.TrimRight(t[:len(t)-1], " \t\r\n")
	k := bytes.LastIndex(t, []byte(`"id"`))
	if k < 0 || !opensMember(t[:k]) {
		return nil
	}
	v := bytes.TrimSpace(t[k+4:])
	if len(v) == 0 || v[0] != ':' {
		return nil
	}
	v = bytes.TrimSpace(v[1:])
	if json.Valid(v) && validID(v) {
		return v
	}
	return nil
}

// opensMember reports whether a member of an object can start right after
// b, which it does after '{' or ','. Any other byte before a quote (a
// backslash, as in `"x\"id":5}`) makes that quote part of another string.
func opensMember(b []byte) bool {
	b = bytes.TrimRight(b, " \t\r\n")
	return len(b) > 0 && (b[len(b)-1] == '{' || b[len(b)-1] == ',')
}
