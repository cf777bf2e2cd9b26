package aggregate

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// The aggregate changes a few members of messages that are otherwise
// passed on as they came (a tool's name, a URI, an id): it finds them with
// a scanner that skips every value it does not read, and splices the new
// value in place of the old one, so that every other byte (key order,
// numbers as written, the arguments of a call) is kept, as the bridge
// keeps them (docs/decisions.md, "Ids rewritten, bytes kept"). Nothing is
// decoded into Go values on a call's way: a tools/call costs a scan of its
// envelope, its params and their _meta.

// span is where a member's value lies in an object: obj[start:end].
type span struct{ start, end int }

func (s span) of(b []byte) []byte { return b[s.start:s.end] }

var (
	// errDuplicate: an object has the same key twice where the aggregate
	// reads it. Decoders disagree on which one counts, so such a message
	// is refused rather than read one way here and another way by its
	// receiver.
	errDuplicate = errors.New("a key is given twice")
	errSyntax    = errors.New("not well-formed JSON")
	errNotObject = errors.New("not a JSON object")
)

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at b[i] (a
// quote), and whether it holds an escape.
func skipString(b []byte, i int) (int, bool, error) {
	escaped := false
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			return i + 1, escaped, nil
		}
	}
	return 0, false, errSyntax
}

// skipValue returns the index after the value that starts at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errSyntax
	}
	switch b[i] {
	case '"':
		end, _, err := skipString(b, i)
		return end, err
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1, nil
				}
			case '"':
				end, _, err := skipString(b, i)
				if err != nil {
					return 0, err
				}
				i = end - 1
			}
		}
		return 0, errSyntax
	case ',', ':', '}', ']':
		return 0, errSyntax
	}
	start := i
	for i < len(b) && !isSpace(b[i]) && b[i] != ',' && b[i] != '}' && b[i] != ']' {
		i++
	}
	if i == start {
		return 0, errSyntax
	}
	return i, nil
}

// eachMember calls fn with each member of the JSON object obj, in order,
// with the span of its value. obj may have white space around its tokens.
// key is valid during the call only.
func eachMember(obj []byte, fn func(key []byte, v span)) error {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return errNotObject
	}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return atEnd(obj, i+1)
	}
	for {
		if i >= len(obj) || obj[i] != '"' {
			return errSyntax
		}
		kEnd, escaped, err := skipString(obj, i)
		if err != nil {
			return err
		}
		key := obj[i+1 : kEnd-1]
		if escaped || !utf8.Valid(key) { // read as a decoder reads it
			var k string
			if json.Unmarshal(obj[i:kEnd], &k) != nil {
				return errSyntax
			}
			key = []byte(k)
		}
		i = skipSpace(obj, kEnd)
		if i >= len(obj) || obj[i] != ':' {
			return errSyntax
		}
		i = skipSpace(obj, i+1)
		vEnd, err := skipValue(obj, i)
		if err != nil {
			return err
		}
		fn(key, span{i, vEnd})
		i = skipSpace(obj, vEnd)
		if i >= len(obj) {
			return errSyntax
		}
		switch obj[i] {
		case ',':
			i = skipSpace(obj, i+1)
		case '}':
			return atEnd(obj, i+1)
		default:
			return errSyntax
		}
	}
}

// atEnd: nothing but white space follows b[i:].
func atEnd(b []byte, i int) error {
	if skipSpace(b, i) != len(b) {
		return errors.New("data after the JSON value")
	}
	return nil
}

// eachElement calls fn with the span of each element of the JSON array
// arr, in order.
func eachElement(arr []byte, fn func(v span) error) error {
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return errors.New("not a JSON array")
	}
	i = skipSpace(arr, i+1)
	if i < len(arr) && arr[i] == ']' {
		return atEnd(arr, i+1)
	}
	for {
		end, err := skipValue(arr, i)
		if err != nil {
			return err
		}
		if err := fn(span{i, end}); err != nil {
			return err
		}
		i = skipSpace(arr, end)
		if i >= len(arr) {
			return errSyntax
		}
		switch arr[i] {
		case ',':
			i = skipSpace(arr, i+1)
		case ']':
			return atEnd(arr, i+1)
		default:
			return errSyntax
		}
	}
}

// members finds the members keys of obj: spans[i] is keys[i]'s, and
// found[i] says whether it is there. A key given twice is errDuplicate.
// At most 4 keys.
func members(obj []byte, keys ...string) (spans [4]span, found [4]bool, err error) {
	var dup error
	err = eachMember(obj, func(k []byte, v span) {
		for i, want := range keys {
			if string(k) == want {
				if found[i] {
					dup = fmt.Errorf("%w: %q", errDuplicate, k)
				}
				spans[i], found[i] = v, true
			}
		}
	})
	if err == nil {
		err = dup
	}
	return spans, found, err
}

// member is obj's member key, if it has it.
func member(obj []byte, key string) (span, bool, error) {
	s, f, err := members(obj, key)
	return s[0], f[0], err
}

// splice is b with the span s replaced by val.
func splice(b []byte, s span, val []byte) []byte {
	out := make([]byte, 0, len(b)-(s.end-s.start)+len(val))
	out = append(out, b[:s.start]...)
	out = append(out, val...)
	return append(out, b[s.end:]...)
}

// edit replaces a span of a message with val.
type edit struct {
	at  span
	val []byte
}

// applyEdits is b with every edit made, in one copy. The edits' spans
// must not overlap; they may come in any order.
func applyEdits(b []byte, edits ...edit) []byte {
	n := len(b)
	for _, e := range edits {
		n += len(e.val) - (e.at.end - e.at.start)
	}
	out := make([]byte, 0, n)
	pos := 0
	for range edits {
		next := -1
		for j, e := range edits {
			if e.at.start >= pos && (next < 0 || e.at.start < edits[next].at.start) {
				next = j
			}
		}
		e := edits[next]
		out = append(out, b[pos:e.at.start]...)
		out = append(out, e.val...)
		pos = e.at.end
	}
	return append(out, b[pos:]...)
}

// setMember is the object obj with its member key set to val: replaced in
// place if obj has it, else added after the others.
func setMember(obj []byte, key string, val []byte) ([]byte, error) {
	s, ok, err := member(obj, key)
	if err != nil {
		return nil, err
	}
	if ok {
		return splice(obj, s, val), nil
	}
	end := len(obj) - 1
	for end >= 0 && obj[end] != '}' {
		end--
	}
	out := make([]byte, 0, len(obj)+len(key)+len(val)+4)
	out = append(out, obj[:end]...)
	if skipSpace(out, 1) < len(out) { // more than the opening brace
		out = append(out, ',')
	}
	out = strconv.AppendQuote(out, key)
	out = append(out, ':')
	out = append(out, val...)
	return append(out, obj[end:]...), nil
}

// stringValue is the JSON string raw, decoded; ok is false if raw is not
// a string.
func stringValue(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	end, escaped, err := skipString(raw, 0)
	if err != nil || end != len(raw) {
		return "", false
	}
	if !escaped && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// quote is s as a JSON string.
func quote(s string) []byte {
	b, _ := json.Marshal(s) // a string always encodes
	return b
}

// path is a nested member of an object: params.ref.name is
// path{"params", "ref", "name"}.
type path []string

// at is the span of the value at p in msg, nested objects followed from
// the top; ok is false if a step is missing or not an object.
func (p path) at(msg []byte) (s span, ok bool, err error) {
	s = span{0, len(msg)}
	for _, k := range p {
		obj := s.of(msg)
		if i := skipSpace(obj, 0); i >= len(obj) || obj[i] != '{' {
			return span{}, false, nil
		}
		inner, found, err := member(obj, k)
		if err != nil || !found {
			return span{}, false, err
		}
		s = span{s.start + inner.start, s.start + inner.end}
	}
	return s, true, nil
}

// find is the value at p in msg, if there.
func (p path) find(msg []byte) ([]byte, bool, error) {
	s, ok, err := p.at(msg)
	if err != nil || !ok {
		return nil, false, err
	}
	return s.of(msg), true, nil
}

// replaceAt is msg with the value at p replaced by val; msg as it is when
// p is not there.
func (p path) replaceAt(msg, val []byte) ([]byte, error) {
	s, ok, err := p.at(msg)
	if err != nil || !ok {
		return msg, err
	}
	return splice(msg, s, val), nil
}
