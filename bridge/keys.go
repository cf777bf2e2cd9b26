package bridge

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Keys that fold. The bridge reads a message by exact key ("method",
// "params", "name"), but the child may not: Go's encoding/json matches a
// struct field's name ignoring case (and folds "ſ" onto "s" and the Kelvin
// sign onto "k"), Jackson and System.Text.Json can be told to, and every
// decoder keeps either the first or the last of a key given twice. If
// {"method":"tools/list","Method":"tools/call"} reached such a child, the
// policy and the audit log would read tools/list and the child would run
// tools/call. So a client's message is refused (-32600) when
//
//   - an object anywhere in it has two keys that fold onto each other
//     (the same key twice is the plainest case), or
//   - at a level the bridge reads (the envelope, params, params._meta), a
//     key folds onto one the bridge reads there without being spelled
//     exactly so: "ID" alone is as much a second id as "Name" beside
//     "name" is a second name. In params and params._meta, a key the
//     bridge reads must also be written without escapes: the bridge finds
//     some of them by their bytes.
//
// Refusing, rather than forwarding a re-encoding without those keys, keeps
// the bytes the child gets exactly the client's (numbers, key order) and
// costs nothing on messages that have no such keys, which no mainstream
// encoder writes (docs/decisions.md, "Keys that fold").
//
// Folding here is wider than Unicode simple case folding, on purpose: two
// keys fold onto each other when, rune by rune, each pair is linked by
// simple folding, by upper, lower or title case, or by the Turkish
// mappings (so "ıd" folds onto "id", as Java's equalsIgnoreCase takes it).
// Whatever a decoder uses to ignore case, it cannot join two keys that the
// bridge keeps apart.

// keySet is the keys the bridge reads at one level of a message.
type keySet struct {
	where string
	keys  []string
	// plain: the bridge finds some of these keys by their bytes (a
	// progress token, a protocol version in _meta), so they must be
	// written without escapes.
	plain bool
}

// The keys the bridge reads at each level of a client's message. A test
// (TestReadKeysListed) holds these lists to every Param and member call
// in the bridge and its transports.
var (
	envelopeKeys = &keySet{"the message", []string{"jsonrpc", "id", "method", "params", "result", "error"}, false}
	paramsKeys   = &keySet{"params", []string{
		"name", "uri", "arguments", "_meta", "cursor", "requestState", "inputResponses",
		"notifications", "requestId", "reason", "level", "progressToken", "progress", "total", "message",
		"protocolVersion", "capabilities", "clientInfo", "ref", "argument", "context",
	}, true}
	metaKeys = &keySet{"params._meta", []string{
		"progressToken", metaProtocolVersion, metaClientCaps, metaClientInfo, metaLogLevel,
		metaSubscriptionID, metaServerInfo,
	}, true}
)

// foldClass maps a rune that has a case to the smallest rune of its class
// (see above); runes without a case are their own class. ASCII letters
// are handled without it (their class's smallest rune is the upper case
// letter). Built on first use: only a message with a non-ASCII key needs it.
var foldClass = sync.OnceValue(func() map[rune]rune {
	parent := map[rune]rune{}
	var find func(r rune) rune
	find = func(r rune) rune {
		p, ok := parent[r]
		if !ok || p == r {
			return r
		}
		root := find(p)
		parent[r] = root
		return root
	}
	union := func(a, b rune) {
		if a == b {
			return
		}
		ra, rb := find(a), find(b)
		if ra == rb {
			return
		}
		if ra < rb {
			parent[rb] = ra
		} else {
			parent[ra] = rb
		}
	}
	// Every rune with a case mapping is below U+1F000 (Adlam, the last
	// cased script, ends at U+1E95F).
	for r := rune(0); r < 0x1F000; r++ {
		links := [...]rune{
			unicode.SimpleFold(r), unicode.ToUpper(r), unicode.ToLower(r), unicode.ToTitle(r),
			unicode.TurkishCase.ToUpper(r), unicode.TurkishCase.ToLower(r),
		}
		for _, l := range links {
			if l != r {
				union(r, l)
			}
		}
	}
	classes := make(map[rune]rune, len(parent))
	for r := range parent {
		classes[r] = find(r)
	}
	return classes
})

// foldRune is r's class.
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' {
			return r - ('a' - 'A')
		}
		return r
	}
	if c, ok := foldClass()[r]; ok {
		return c
	}
	return r
}

// foldEqual reports whether the keys a and b fold onto each other.
func foldEqual(a, b []byte) bool {
	for len(a) > 0 && len(b) > 0 {
		ca, cb := a[0], b[0]
		if ca < utf8.RuneSelf && cb < utf8.RuneSelf {
			if ca != cb && (ca|0x20 != cb|0x20 || ca|0x20 < 'a' || ca|0x20 > 'z') {
				return false
			}
			a, b = a[1:], b[1:]
			continue
		}
		ra, na := utf8.DecodeRune(a)
		rb, nb := utf8.DecodeRune(b)
		if ra != rb && foldRune(ra) != foldRune(rb) {
			return false
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) == 0 && len(b) == 0
}

// appendFolded appends key with each rune replaced by its class.
func appendFolded(dst, key []byte) []byte {
	for len(key) > 0 {
		if c := key[0]; c < utf8.RuneSelf {
			dst = append(dst, byte(foldRune(rune(c))))
			key = key[1:]
			continue
		}
		r, n := utf8.DecodeRune(key)
		dst = utf8.AppendRune(dst, foldRune(r))
		key = key[n:]
	}
	return dst
}

// keyError is the refusal of a message whose keys fold.
func keyError(msg string) *Error {
	return invalid(CodeInvalidRequest, "Invalid Request: "+msg, nil)
}

// place names an object of a message for a refusal: where (say
// "params"), and the member of it that holds the object, if any. It is
// made into text only for a refusal.
type place struct {
	where string
	key   []byte
}

func (p place) String() string {
	if p.key == nil {
		return p.where
	}
	return p.where + "." + string(p.key)
}

// keyRef is a key of an object: its bytes, unescaped, and whether it was
// written with escapes.
type keyRef struct {
	key     []byte
	escaped bool
}

// smallObject is how many keys an object may have for its keys to be
// compared pair by pair, without a map.
const smallObject = 16

// checkKeys checks the keys of the object obj (valid JSON): no two fold
// onto each other and, if read is not nil, none folds onto a key the
// bridge reads there without being it, or is one of them written with
// escapes. fn, if not nil, gets every member, with the index in read's
// list of the key the member is (-1: none). Values are not looked into.
func checkKeys(obj []byte, read *keySet, at place, fn func(key []byte, i int, v span)) error {
	var small [smallObject]keyRef
	l := keyLedger{keys: small[:0]}
	var problem error
	err := eachMemberRef(obj, func(k keyRef, v span) {
		if problem != nil {
			return
		}
		if !utf8.Valid(k.key) {
			problem = keyError(at.String() + " has a key that is not valid UTF-8")
			return
		}
		i := -1
		if read != nil {
			if i, problem = read.check(k); problem != nil {
				return
			}
		}
		if l, problem = l.add(k, at); problem == nil && fn != nil {
			fn(k.key, i, v)
		}
	})
	if problem != nil {
		return problem
	}
	return err
}

// keyLedger is the keys of one object so far, to find two that fold onto
// each other: compared pair by pair while they are few (no allocation),
// folded into a map beyond smallObject.
type keyLedger struct {
	keys []keyRef
	seen map[string]struct{}
}

// add records k, or refuses it if it folds onto a key recorded before. It
// returns the ledger with k in it (a value: a ledger of a few keys stays
// on the stack).
func (l keyLedger) add(k keyRef, at place) (keyLedger, error) {
	var err error
	switch {
	case l.seen != nil:
		err = addFolded(l.seen, k, at)
	case len(l.keys) < smallObject:
		if err = pairwise(l.keys, k, at); err == nil {
			l.keys = append(l.keys, k)
		}
	default:
		if err = pairwise(l.keys, k, at); err == nil {
			l.seen = folded(l.keys, k)
		}
	}
	return l, err
}

// addFolded adds k, folded, to the keys of an object folded so far, or
// refuses it if it is one of them.
func addFolded(seen map[string]struct{}, k keyRef, at place) error {
	f := string(appendFolded(nil, k.key))
	if _, dup := seen[f]; dup {
		return collision(at, k.key, nil)
	}
	seen[f] = struct{}{}
	return nil
}

// pairwise refuses k if it folds onto one of keys.
func pairwise(keys []keyRef, k keyRef, at place) error {
	for _, o := range keys {
		if foldEqual(o.key, k.key) {
			return collision(at, o.key, k.key)
		}
	}
	return nil
}

// folded is keys and k, folded, in a set: an object's keys once they are
// too many to compare pair by pair.
func folded(keys []keyRef, k keyRef) map[string]struct{} {
	seen := make(map[string]struct{}, 2*smallObject)
	for _, o := range keys {
		seen[string(appendFolded(nil, o.key))] = struct{}{}
	}
	seen[string(appendFolded(nil, k.key))] = struct{}{}
	return seen
}

// check refuses k if it folds onto one of the set's keys without being it
// exactly, as written; it returns the index of the key k is (-1: none).
func (s *keySet) check(k keyRef) (int, error) {
	for i, r := range s.keys {
		if len(k.key) == len(r) && string(k.key) == r {
			if k.escaped && s.plain {
				return -1, keyError(s.where + ": the key " + strconv.Quote(r) + " is written with escapes; write it plainly, so that what the bridge reads is what the server reads")
			}
			return i, nil
		}
	}
	for _, r := range s.keys {
		if foldEqual(k.key, []byte(r)) {
			return -1, keyError(s.where + ": the key " + strconv.Quote(string(k.key)) + " is not " + strconv.Quote(r) + ", but a JSON decoder that ignores case reads it as " + strconv.Quote(r) + "; spell it exactly")
		}
	}
	return -1, nil
}

// collision is the refusal of an object with keys a and b that fold onto
// each other (b nil: one of several, found by the folded map).
func collision(at place, a, b []byte) error {
	where := at.String()
	switch {
	case b == nil:
		return keyError(where + " has two keys that a JSON decoder that ignores case reads as one (one is " + strconv.Quote(string(a)) + "); send each member once")
	case bytes.Equal(a, b):
		return keyError(where + " has the key " + strconv.Quote(string(a)) + " twice; send each member once")
	}
	return keyError(where + " has the keys " + strconv.Quote(string(a)) + " and " + strconv.Quote(string(b)) + ", which a JSON decoder that ignores case reads as one; send each member once")
}

// checkDeep checks every object within v (valid JSON), at any depth, for
// keys that fold onto each other. at names v for a refusal. It reads v
// once, front to back, whatever its nesting: a walk that went down member
// by member would cost the square of the depth, which a body of nested
// arrays makes minutes.
func checkDeep(v []byte, at place) error {
	if len(v) == 0 || (v[0] != '{' && v[0] != '[') || !hasObject(v) {
		return nil
	}
	// keys holds the keys of the open objects, innermost last; each open
	// object's start in it is on the stack, with its map once it has
	// more than smallObject keys.
	var stackBuf [16]openValue
	var keysBuf [2 * smallObject]keyRef
	stack, keys := stackBuf[:0], keysBuf[:0]
	for i := 0; i < len(v); {
		switch c := v[i]; c {
		case '{', '[':
			stack = append(stack, openValue{start: len(keys), object: c == '{', wantKey: c == '{'})
		case '}', ']':
			if n := len(stack); n > 0 {
				keys = keys[:stack[n-1].start]
				stack = stack[:n-1]
			}
		case ',':
			if n := len(stack); n > 0 && stack[n-1].object {
				stack[n-1].wantKey = true
			}
		case '"':
			end := skipString(v, i)
			if n := len(stack); n > 0 && stack[n-1].wantKey {
				var err error
				if keys, err = stack[n-1].add(v[i:end], keys, at); err != nil {
					return err
				}
			}
			i = end
			continue
		}
		i++
	}
	return nil
}

// openValue is an object or an array checkDeep is in.
type openValue struct {
	start   int // where its keys begin in the walk's keys
	object  bool
	wantKey bool
	seen    map[string]struct{} // its keys, folded, once it has more than smallObject
}

// add records the object's key quoted (as written: a JSON string) in
// keys, where its keys are keys[o.start:], and refuses it if it folds
// onto one of them.
func (o *openValue) add(quoted []byte, keys []keyRef, at place) ([]keyRef, error) {
	o.wantKey = false
	k := keyRef{key: quoted[1 : len(quoted)-1]}
	if bytes.IndexByte(k.key, '\\') >= 0 {
		var s string
		if err := json.Unmarshal(quoted, &s); err != nil {
			return keys, keyError(at.String() + " has a key that is not a JSON string")
		}
		k = keyRef{key: []byte(s), escaped: true}
	}
	if !utf8.Valid(k.key) {
		return keys, keyError(at.String() + " has a key that is not valid UTF-8")
	}
	own := keys[o.start:]
	switch {
	case o.seen != nil:
		return keys, addFolded(o.seen, k, at)
	case len(own) < smallObject:
		if err := pairwise(own, k, at); err != nil {
			return keys, err
		}
		return append(keys, k), nil
	}
	if err := pairwise(own, k, at); err != nil {
		return keys, err
	}
	o.seen = folded(own, k)
	return keys, nil
}

// hasObject reports whether the array or object v is one or holds one: a
// '{' outside any string.
func hasObject(v []byte) bool {
	if v[0] == '{' {
		return true
	}
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '"':
			i = skipString(v, i) - 1
		case '{':
			return true
		}
	}
	return false
}

// eachMemberRef is eachMember, telling which keys were escaped.
func eachMemberRef(obj []byte, fn func(k keyRef, v span)) error {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return errNotObject
	}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return nil
	}
	for i < len(obj) {
		ks := i
		ke := skipString(obj, ks)
		k := keyRef{key: obj[ks+1 : ke-1]}
		if bytes.IndexByte(k.key, '\\') >= 0 {
			var s string
			if err := json.Unmarshal(obj[ks:ke], &s); err != nil {
				return err
			}
			k = keyRef{key: []byte(s), escaped: true}
		}
		i = skipSpace(obj, ke)
		i = skipSpace(obj, i+1) // the colon
		vs := i
		i = skipValue(obj, i)
		fn(k, span{vs, i})
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] == '}' {
			return nil
		}
		i = skipSpace(obj, i+1) // the comma
	}
	return nil
}
