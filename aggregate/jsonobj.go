package aggregate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// The aggregate changes a few members of messages that are otherwise
// passed on as they came (a tool's name, a URI, an id): it splices the new
// value in place of the old one, so that every other byte (key order,
// numbers as written, the arguments of a call) is kept, as the bridge
// keeps them (docs/decisions.md, "Ids rewritten, bytes kept").

// span is where a member's value lies in an object: obj[start:end].
type span struct{ start, end int }

func (s span) of(b []byte) []byte { return b[s.start:s.end] }

// errDuplicate: an object has the same key twice where the aggregate
// reads it. Decoders disagree on which one counts, so such a message is
// refused rather than read one way here and another way by its receiver.
var errDuplicate = errors.New("a key is given twice")

// eachMember calls fn with each member of the JSON object obj, in order,
// with the span of its value. obj may have white space around its tokens.
func eachMember(obj []byte, fn func(key string, v span)) error {
	dec := json.NewDecoder(bytes.NewReader(obj))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errors.New("not a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		end := int(dec.InputOffset())
		fn(key, span{end - len(raw), end})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return err
	}
	if _, err := dec.Token(); err == nil {
		return errors.New("data after the JSON object")
	}
	return nil
}

// members finds the members keys of obj: spans[i] is keys[i]'s, and
// found[i] says whether it is there. A key given twice is errDuplicate.
func members(obj []byte, keys ...string) (spans []span, found []bool, err error) {
	spans, found = make([]span, len(keys)), make([]bool, len(keys))
	var dup error
	err = eachMember(obj, func(k string, v span) {
		for i, want := range keys {
			if k == want {
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
	end := bytes.LastIndexByte(obj, '}')
	if end < 0 {
		return nil, errors.New("not a JSON object")
	}
	out := make([]byte, 0, len(obj)+len(key)+len(val)+4)
	out = append(out, obj[:end]...)
	if len(bytes.TrimSpace(out)) > 1 { // more than the opening brace
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
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
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
		obj = bytes.TrimSpace(obj)
		if len(obj) == 0 || obj[0] != '{' {
			return span{}, false, nil
		}
		inner, found, err := member(s.of(msg), k)
		if err != nil || !found {
			return span{}, false, err
		}
		s = span{s.start + inner.start, s.start + inner.end}
	}
	return s, true, nil
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
