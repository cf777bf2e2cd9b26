package config

// The --config file as the registry API edits it (internal/registry): an
// ordered structure of members, each value's bytes as written, so that a
// change rewrites what it changes and keeps the rest where JSON allows:
// the file's other top-level keys (a client's whole config file may be
// given), the order of the servers, of their fields and of their env
// keys, and every value it does not touch, numbers and escapes as
// written. Whitespace is not kept: the file is written indented by two
// spaces.
//
// Why an ordered structure of raw members, not a token stream: a server's
// entry is read and rewritten as a unit (a merge patch replaces some of
// its members), so it must be held between reading and writing, and its
// values must round-trip byte for byte, which json.RawMessage does and a
// re-encoded token stream does not (numbers, escapes). The keys are read
// with json.Decoder's tokens, the values as raw messages.
//
// What the registry's callers send (an entry to create, a merge patch) is
// read more strictly than the file: a key given twice, a field whose case
// differs from the file's names, a value of the wrong type, or a string
// holding the mask GET shows in place of a secret is refused, each
// problem naming the field and never its value.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// member is one member of a JSON object: its key, and its value as
// written.
type member struct {
	key string
	raw json.RawMessage
}

// members are a JSON object's members, in order.
type members []member

// index is the place of key, -1 if absent.
func (m members) index(key string) int {
	return slices.IndexFunc(m, func(x member) bool { return x.key == key })
}

// get is the value of key; nil if absent.
func (m members) get(key string) json.RawMessage {
	if i := m.index(key); i >= 0 {
		return m[i].raw
	}
	return nil
}

// folded is the value of the member encoding/json reads for the struct
// field key: the last whose key equals key ignoring case. nil if none.
func (m members) folded(key string) json.RawMessage {
	for _, x := range slices.Backward(m) {
		if strings.EqualFold(x.key, key) {
			return x.raw
		}
	}
	return nil
}

// set gives key the value raw: in the place of the first member whose
// key folds onto it (a struct field of encoding/json reads them all, the
// last winning), dropping the others, or at the end.
func (m members) set(key string, raw json.RawMessage) members {
	out := make(members, 0, len(m)+1)
	placed := false
	for _, x := range m {
		if !strings.EqualFold(x.key, key) {
			out = append(out, x)
			continue
		}
		if !placed {
			out = append(out, member{key, raw})
			placed = true
		}
	}
	if !placed {
		out = append(out, member{key, raw})
	}
	return out
}

// remove drops key and every member whose key folds onto it.
func (m members) remove(key string) members {
	return slices.DeleteFunc(slices.Clone(m), func(x member) bool { return strings.EqualFold(x.key, key) })
}

// marshal writes the members as one compact JSON object.
func (m members) marshal() []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, x := range m {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(jsonString(x.key))
		b.WriteByte(':')
		_ = json.Compact(&b, x.raw) // valid: read by a json.Decoder
	}
	b.WriteByte('}')
	return b.Bytes()
}

// jsonString is s as a JSON string, with <, > and & as they are (the
// file is no HTML page).
func jsonString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

var errNotObject = errors.New("not a JSON object")

// parseObject reads a JSON object's members in order, each value's
// bytes as written. A key given twice keeps its first place and its last
// value, which is what encoding/json reads. With strict, a key given
// twice is an error instead.
func parseObject(data []byte, strict bool) (members, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errNotObject
	}
	var m members
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string) // a json.Decoder gives a string key in an object, or an error
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		if i := m.index(key); i >= 0 {
			if strict {
				return nil, &dupKeyError{key}
			}
			m[i].raw = raw
			continue
		}
		m = append(m, member{key, raw})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value")
	}
	return m, nil
}

// dupKeyError is a key given twice where that is refused.
type dupKeyError struct{ key string }

func (e *dupKeyError) Error() string { return "a key given twice" }

// ServersDoc is the --config file as the registry edits it: the file's
// members, its servers in order, and each server's entry. It is a value:
// With and Without return a new one.
type ServersDoc struct {
	top     members // the file's top level, mcpServers among them
	at      int     // the index in top of the mcpServers encoding/json reads
	servers []docServer
}

type docServer struct {
	name  string
	entry Entry
}

// ParseServersDoc reads the file as the registry edits it. data must be
// a file ParseServers accepts (this reads its structure, and checks
// nothing else).
func ParseServersDoc(data []byte) (*ServersDoc, error) {
	top, err := parseObject(data, false)
	if err != nil {
		return nil, fmt.Errorf("the file is not a JSON object: %w", err)
	}
	d := &ServersDoc{top: top, at: -1}
	for i, x := range top {
		if strings.EqualFold(x.key, "mcpServers") {
			d.at = i // the last wins, as in encoding/json
		}
	}
	if d.at < 0 {
		return nil, errors.New(`no "mcpServers" object`)
	}
	servers, err := parseObject(top[d.at].raw, false)
	if err != nil {
		return nil, errors.New(`"mcpServers" is not an object`)
	}
	for _, s := range servers {
		m, err := parseObject(s.raw, false)
		if err != nil {
			return nil, fmt.Errorf("the entry of a server is not an object: %w", err)
		}
		d.servers = append(d.servers, docServer{s.key, Entry{m}})
	}
	return d, nil
}

// Names are the servers of the file, in its order.
func (d *ServersDoc) Names() []string {
	names := make([]string, len(d.servers))
	for i, s := range d.servers {
		names[i] = s.name
	}
	return names
}

// Entry is the entry of server name.
func (d *ServersDoc) Entry(name string) (Entry, bool) {
	i := d.find(name)
	if i < 0 {
		return Entry{}, false
	}
	return d.servers[i].entry, true
}

func (d *ServersDoc) find(name string) int {
	return slices.IndexFunc(d.servers, func(s docServer) bool { return s.name == name })
}

// With is the file with server name's entry e: in its place, or last.
func (d *ServersDoc) With(name string, e Entry) *ServersDoc {
	out := *d
	out.servers = slices.Clone(d.servers)
	if i := d.find(name); i >= 0 {
		out.servers[i].entry = e
	} else {
		out.servers = append(out.servers, docServer{name, e})
	}
	return &out
}

// Without is the file without server name.
func (d *ServersDoc) Without(name string) *ServersDoc {
	out := *d
	out.servers = slices.DeleteFunc(slices.Clone(d.servers), func(s docServer) bool { return s.name == name })
	return &out
}

// Bytes is the file as it is written: indented by two spaces, with a
// final newline.
func (d *ServersDoc) Bytes() []byte {
	servers := make(members, len(d.servers))
	for i, s := range d.servers {
		servers[i] = member{s.name, s.entry.m.marshal()}
	}
	top := slices.Clone(d.top)
	top[d.at].raw = servers.marshal()
	var b bytes.Buffer
	_ = json.Indent(&b, top.marshal(), "", "  ") // valid: built of valid values
	b.WriteByte('\n')
	return b.Bytes()
}

// Entry is one server's entry of the file: its fields in order, each
// value as written. The zero Entry has no field.
type Entry struct{ m members }

// Canonical is the entry as one compact JSON object, its fields in order:
// what an ETag is computed from. It holds every value, secrets included.
func (e Entry) Canonical() []byte { return e.m.marshal() }

// Disabled reports whether the entry says "disabled": true.
func (e Entry) Disabled() bool {
	var off bool
	if raw := e.m.folded("disabled"); raw != nil {
		_ = json.Unmarshal(raw, &off)
	}
	return off
}

// WithDisabled is the entry disabled (off) or enabled: "disabled": true,
// or no "disabled" field.
func (e Entry) WithDisabled(off bool) Entry {
	if off {
		return Entry{e.m.set("disabled", json.RawMessage("true"))}
	}
	return Entry{e.m.remove("disabled")}
}

// String is the entry's field of that name when it is a string; "" if
// it is absent or another type.
func (e Entry) String(field string) string {
	var v string
	_ = json.Unmarshal(e.m.folded(field), &v)
	return v
}

// EnvKeys are the names of the variables the entry's "env" sets, in its
// order: what may be shown of it.
func (e Entry) EnvKeys() []string {
	env, _ := parseObject(e.m.folded("env"), false)
	keys := make([]string, 0, len(env))
	for _, x := range env {
		keys = append(keys, x.key)
	}
	return keys
}

// View is the entry as it may be shown (the registry API's GET, the web
// page): every field in order but "env", whose values are write-only
// (EnvKeys names its variables), and "disabled" (shown as the server's
// state); the arguments with what looks secret masked (bridge.RedactArgv),
// as the web page shows a command.
func (e Entry) View() json.RawMessage {
	out := make(members, 0, len(e.m))
	for _, x := range e.m {
		switch {
		case strings.EqualFold(x.key, "env"), strings.EqualFold(x.key, "disabled"):
			continue
		case strings.EqualFold(x.key, "args"):
			var args []string
			if json.Unmarshal(x.raw, &args) == nil {
				masked := bridge.RedactArgv(append([]string{""}, args...))[1:]
				raw, _ := json.Marshal(masked)
				x.raw = raw
			}
		}
		out = append(out, x)
	}
	return out.marshal()
}

// Names of the members of a request that are not fields of an entry.
const (
	NameMember      = "name"       // a created server's name
	EnvRemoveMember = "env_remove" // a patch's list of env keys to delete
)

// NewEntry reads the body of a request that creates a server: one entry
// as the file writes it, plus its name. A value null is a field left
// out. Problems name the field, never a value.
func NewEntry(body []byte) (name string, e Entry, problems []Problem) {
	m, p := parseRequest(body)
	if p != nil {
		return "", Entry{}, []Problem{*p}
	}
	var out members
	for _, x := range m {
		switch {
		case x.key == NameMember:
			if json.Unmarshal(x.raw, &name) != nil {
				problems = append(problems, Problem{Field: NameMember, Message: "want a string"})
			}
		case isNull(x.raw):
			if _, p := knownField(x.key); p != nil {
				problems = append(problems, *p) // unknown, even null
			}
		default:
			if p := checkMember(x); p != nil {
				problems = append(problems, *p)
				continue
			}
			out = append(out, x)
		}
	}
	if name == "" && !slices.ContainsFunc(problems, func(p Problem) bool { return p.Field == NameMember }) {
		problems = append(problems, Problem{Field: NameMember, Message: "required"})
	}
	return name, Entry{out}, problems
}

// Patch applies a JSON merge patch (RFC 7396) to the entry: a field the
// patch does not mention is kept, null deletes one, an object field
// (env, envFrom) is merged key by key (null deleting a key), anything
// else replaces the field. "env_remove", a list of env keys, deletes
// those. A patch cannot rename the server.
func (e Entry) Patch(patch []byte) (Entry, []Problem) {
	m, p := parseRequest(patch)
	if p != nil {
		return e, []Problem{*p}
	}
	out := slices.Clone(e.m)
	var problems []Problem
	for _, x := range m {
		var err *Problem
		out, err = patchMember(out, x)
		if err != nil {
			problems = append(problems, *err)
		}
	}
	return Entry{out}, problems
}

// patchMember applies one member of a patch to out.
func patchMember(out members, x member) (members, *Problem) {
	switch x.key {
	case NameMember:
		return out, &Problem{Field: NameMember, Message: "a patch cannot rename a server: remove it and add it under the new name"}
	case EnvRemoveMember:
		var keys []string
		if json.Unmarshal(x.raw, &keys) != nil || keys == nil {
			return out, &Problem{Field: EnvRemoveMember, Message: "want an array of the names of variables of \"env\""}
		}
		env, _ := parseObject(out.folded("env"), false)
		for _, k := range keys {
			if env.index(k) < 0 {
				return out, &Problem{Field: EnvRemoveMember, Message: keyName(k) + ` is not a variable of "env"`}
			}
			env = slices.DeleteFunc(env, func(v member) bool { return v.key == k })
		}
		return out.set("env", env.marshal()), nil
	}
	f, p := knownField(x.key)
	if p != nil {
		return out, p
	}
	switch {
	case isNull(x.raw):
		return out.remove(x.key), nil
	case f.Type.Kind() == reflect.Map && bytes.HasPrefix(bytes.TrimSpace(x.raw), []byte("{")):
		return mergeObject(out, x)
	}
	if p := checkMember(x); p != nil {
		return out, p
	}
	return out.set(x.key, x.raw), nil
}

// mergeObject merges the object x.raw into the field x.key of out, key by
// key: a string sets a key, null deletes it.
func mergeObject(out members, x member) (members, *Problem) {
	patch, err := parseObject(x.raw, true)
	if err != nil {
		return out, &Problem{Field: x.key, Message: "want " + jsonKind(x.key) + ", each key once, null deleting one"}
	}
	cur, _ := parseObject(out.folded(x.key), false)
	for _, kv := range patch {
		i := cur.index(kv.key)
		switch {
		case isNull(kv.raw):
			cur = slices.DeleteFunc(cur, func(v member) bool { return v.key == kv.key })
		case i >= 0:
			cur[i].raw = kv.raw // in its place
		default:
			cur = append(cur, kv)
		}
	}
	merged := member{x.key, cur.marshal()}
	if p := checkMember(merged); p != nil {
		return out, p
	}
	return out.set(x.key, merged.raw), nil
}

// parseRequest reads a request's object strictly: a key given twice is
// refused, since it would be read by one reader one way, by another
// the other.
func parseRequest(body []byte) (members, *Problem) {
	m, err := parseObject(body, true)
	var dup *dupKeyError
	switch {
	case errors.As(err, &dup):
		if field, ok := fieldTold(dup.key); ok {
			return nil, &Problem{Field: field, Message: "given twice"}
		}
		return nil, &Problem{Message: "a field given twice"}
	case err != nil:
		return nil, &Problem{Message: "want a JSON object of fields (command, args, env, ...)"}
	}
	return m, nil
}

// knownField is the field of an entry named key, exactly as the file
// names it (encoding/json would take "Command" for "command"; a request
// may not).
func knownField(key string) (reflect.StructField, *Problem) {
	f, ok := entryField(key)
	if ok {
		return f, nil
	}
	field, msg := unknownField(key)
	for _, name := range entryFieldNames() {
		if strings.EqualFold(name, key) {
			msg = fmt.Sprintf("unknown field: field names are case-sensitive (%q)", name)
		}
	}
	return f, &Problem{Field: field, Message: msg}
}

// checkMember checks one field of a request: a field of the entry, of
// its type, holding no mask.
func checkMember(x member) *Problem {
	f, p := knownField(x.key)
	if p != nil {
		return p
	}
	v := reflect.New(f.Type)
	if !typeMatches(f.Type, x.raw) || json.Unmarshal(x.raw, v.Interface()) != nil {
		return &Problem{Field: x.key, Message: "want " + jsonKind(x.key)}
	}
	if holdsMask(v.Elem()) {
		return &Problem{Field: x.key, Message: fmt.Sprintf("holds %q, which is shown in place of a secret: send the real value, or leave the field out to keep it", bridge.Masked)}
	}
	return nil
}

// typeMatches: raw is JSON of the kind t takes, with no null where a
// string is due (encoding/json would read a null in a list or an object
// as "").
func typeMatches(t reflect.Type, raw json.RawMessage) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice:
		var list []json.RawMessage
		return json.Unmarshal(raw, &list) == nil && !slices.ContainsFunc(list, isNull)
	case reflect.Map:
		var obj map[string]json.RawMessage
		return json.Unmarshal(raw, &obj) == nil && obj != nil && !slices.ContainsFunc(slices.Collect(maps.Values(obj)), isNull)
	}
	return !isNull(raw)
}

// holdsMask reports whether a decoded field holds bridge.Masked in a
// string: what GET shows in place of a secret, sent back.
func holdsMask(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer:
		return !v.IsNil() && holdsMask(v.Elem())
	case reflect.String:
		return strings.Contains(v.String(), bridge.Masked)
	case reflect.Slice:
		for i := range v.Len() {
			if holdsMask(v.Index(i)) {
				return true
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if holdsMask(it.Value()) {
				return true
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && holdsMask(v.Field(i)) {
				return true
			}
		}
	}
	return false
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// fieldTold is a field's name as an error may say it, and whether it
// could be said.
func fieldTold(f string) (string, bool) {
	if len(f) > maxToldKey || strings.ContainsFunc(f, func(r rune) bool { return r < ' ' || r > '~' }) {
		return "", false
	}
	return f, true
}

// entryFieldNames are the JSON names of the fields of an entry.
func entryFieldNames() []string {
	t := reflect.TypeFor[serverEntry]()
	names := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		names = append(names, strings.Split(t.Field(i).Tag.Get("json"), ",")[0])
	}
	return names
}

// FieldChange is one field a change touched, for the audit log: which,
// and how (added, removed, changed). Never a value: a changed env value
// is told as changed.
type FieldChange struct {
	Field  string `json:"field"`
	Change string `json:"change"`
}

// Diff says which fields of old the entry changes; each key of an object
// field (env.NAME, envFrom.NAME) apart.
func (e Entry) Diff(old Entry) []FieldChange {
	var out []FieldChange
	keys := slices.Clone(e.m)
	for _, x := range old.m {
		if keys.index(x.key) < 0 {
			keys = append(keys, x)
		}
	}
	for _, x := range keys {
		a, b := old.m.get(x.key), e.m.get(x.key)
		if f, ok := entryField(x.key); ok && f.Type.Kind() == reflect.Map {
			ao, _ := parseObject(a, false)
			bo, _ := parseObject(b, false)
			out = append(out, diffMembers(x.key+".", ao, bo)...)
			continue
		}
		if c := change(a, b); c != "" {
			out = append(out, FieldChange{x.key, c})
		}
	}
	return out
}

func diffMembers(prefix string, a, b members) []FieldChange {
	var out []FieldChange
	all := slices.Clone(b)
	for _, x := range a {
		if all.index(x.key) < 0 {
			all = append(all, x)
		}
	}
	for _, x := range all {
		if c := change(a.get(x.key), b.get(x.key)); c != "" {
			out = append(out, FieldChange{prefix + x.key, c})
		}
	}
	return out
}

// change says how a value went from a to b (nil: absent); "" if it did
// not.
func change(a, b json.RawMessage) string {
	switch {
	case a == nil && b == nil:
		return ""
	case a == nil:
		return "added"
	case b == nil:
		return "removed"
	}
	var ca, cb bytes.Buffer
	_ = json.Compact(&ca, a)
	_ = json.Compact(&cb, b)
	if bytes.Equal(ca.Bytes(), cb.Bytes()) {
		return ""
	}
	return "changed"
}
