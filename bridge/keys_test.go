package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// keyVariants are spellings of key that a case-ignoring decoder reads as
// key: every case variant when the key has few letters (a sample of 64,
// and every single flip, when it has more), and each letter replaced by
// the runes outside ASCII that fold onto it (ſ for s, the Kelvin sign for
// k, dotless ı and dotted İ for i).
func keyVariants(key string) []string {
	runes := []rune(key)
	var letters []int
	for i, r := range runes {
		if unicode.IsLetter(r) {
			letters = append(letters, i)
		}
	}
	seen := map[string]bool{key: true}
	var out []string
	add := func(rs []rune) {
		if s := string(rs); !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	flip := func(rs []rune, i int) {
		if unicode.IsUpper(rs[i]) {
			rs[i] = unicode.ToLower(rs[i])
		} else {
			rs[i] = unicode.ToUpper(rs[i])
		}
	}
	if len(letters) <= 10 {
		for mask := 1; mask < 1<<len(letters); mask++ {
			rs := slices.Clone(runes)
			for b, i := range letters {
				if mask&(1<<b) != 0 {
					flip(rs, i)
				}
			}
			add(rs)
		}
	} else {
		for _, i := range letters {
			rs := slices.Clone(runes)
			flip(rs, i)
			add(rs)
		}
		add([]rune(strings.ToUpper(key)))
		rng := rand.New(rand.NewPCG(uint64(len(key)), 7))
		for range 64 {
			rs := slices.Clone(runes)
			for _, i := range letters {
				if rng.IntN(2) == 0 {
					flip(rs, i)
				}
			}
			add(rs)
		}
	}
	exotic := map[rune][]rune{'s': {'ſ'}, 'S': {'ſ'}, 'k': {'\u212a'}, 'K': {'\u212a'}, 'i': {'ı', 'İ'}, 'I': {'ı', 'İ'}}
	for i, r := range runes {
		for _, x := range exotic[r] {
			rs := slices.Clone(runes)
			rs[i] = x
			add(rs)
		}
	}
	return out
}

// TestFoldedKeysRefused: at each level the bridge reads, a key that a
// case-ignoring decoder would read as one the bridge reads is refused,
// alone or beside the key itself, before or after it; so is a key given
// twice, at any depth.
func TestFoldedKeysRefused(t *testing.T) {
	type level struct {
		set  *keySet
		wrap func(members string) string // the message with members at this level
		base string                      // the members the level has anyway
	}
	levels := []level{
		{envelopeKeys, func(m string) string { return "{" + m + "}" }, `"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}`},
		{paramsKeys, func(m string) string {
			return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + m + `}}`
		}, `"name":"echo","arguments":{}`},
		{metaKeys, func(m string) string {
			return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{` + m + `}}}`
		}, `"progressToken":1`},
	}
	n := 0
	for _, l := range levels {
		for _, key := range l.set.keys {
			for _, v := range keyVariants(key) {
				k, vv := strconv.Quote(key), strconv.Quote(v)
				for _, members := range []string{
					l.base + "," + vv + ":1",             // alone (or beside the base's own)
					k + ":2," + vv + ":1," + l.base,      // the key first
					l.base + "," + vv + ":1," + k + ":2", // the key last
				} {
					body := l.wrap(members)
					msgs, _, err := ParseBody([]byte(body))
					var e *Error
					if !errors.As(err, &e) || e.Code != CodeInvalidRequest {
						t.Fatalf("ParseBody(%s) = %d messages, %v; want -32600", body, len(msgs), err)
					}
					n++
				}
			}
			// The same key twice.
			body := l.wrap(l.base + "," + strconv.Quote(key) + ":1," + strconv.Quote(key) + ":2")
			if _, _, err := ParseBody([]byte(body)); err == nil || !strings.Contains(err.Error(), "twice") {
				t.Fatalf("ParseBody(%s): %v; want a refusal of the key given twice", body, err)
			}
		}
	}
	t.Logf("%d folded spellings refused", n)
}

// TestKeysInsideRefused: below the levels the bridge reads (arguments,
// capabilities, a response's result) keys are the server's business, but
// two that fold onto each other in one object are refused at any depth:
// the bridge digests and shows arguments, and a decoder would keep only
// one of the two.
func TestKeysInsideRefused(t *testing.T) {
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"path":"/ok","PATH":"/etc/passwd"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"path":"/ok","path":"/etc/passwd"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":[1,{"x":{"kind":1,"\u212aind":2}}]}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"list":[{"b":1,"B":2}]}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{},"Roots":{}},"clientInfo":{"name":"c","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"ELICITATION":{}}}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"action":"decline","ACTION":"accept"}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":1,"code":2,"message":"m"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":[{"a":1,"a":2}]}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":1,"X":1}}]`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"e\",\"arguments\":{\"a\\xff\":1}}}",
	} {
		if _, _, err := ParseBody([]byte(body)); err == nil {
			t.Errorf("ParseBody(%s) accepted", body)
		} else if e := (*Error)(nil); !errors.As(err, &e) || (e.Code != CodeInvalidRequest && e.Code != CodeParseError) {
			t.Errorf("ParseBody(%s): %v; want -32600", body, err)
		}
	}
	// Many keys: the map, not the pairs, finds the two.
	var b strings.Builder
	b.WriteString(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":{`)
	for i := range 500 {
		b.WriteString(`"k` + strconv.Itoa(i) + `":1,`)
	}
	b.WriteString(`"K250":2}}}`)
	if _, _, err := ParseBody([]byte(b.String())); err == nil || !strings.Contains(err.Error(), "reads as one") {
		t.Errorf("500 keys and a folded one: %v; want a refusal", err)
	}
}

// TestKeysThatDoNotFoldPass: what clients send is not refused: keys the
// bridge does not read in any case at all below its levels, escaped keys
// at the envelope (the scanner unescapes them) and outside what the bridge
// reads, many keys, and keys that only look alike.
func TestKeysThatDoNotFoldPass(t *testing.T) {
	var many strings.Builder
	many.WriteString(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":{`)
	for i := range 500 {
		if i > 0 {
			many.WriteByte(',')
		}
		many.WriteString(`"k` + strconv.Itoa(i) + `":{"a":1,"b":[1,2]}`)
	}
	many.WriteString(`}}}`)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"Name":"Bob","URI":"x","ID":3,"Method":"m"}}}`,
		`{"jsonrpc":"2.0","\u0069d":2,"method":"tools\/call"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","_meta":{"caf\u00e9":1,"com.example/Trace":"x"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":{"straße":1,"strasse":2,"ǅ":1,"x":{"a":1},"y":{"a":1}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":{"s":"{\"a\":1,\"A\":2}"}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}`,
		many.String(),
	} {
		if _, _, err := ParseBody([]byte(body)); err != nil {
			t.Errorf("ParseBody(%.120s): %v", body, err)
		}
	}
}

// TestFoldClass: the runes that fold onto ASCII letters are the ones the
// decoders are known to fold (and no digit or sign folds onto anything).
func TestFoldClass(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{"id", "ID", true}, {"id", "ıd", true}, {"id", "İd", true}, {"params", "paramſ", true},
		{"kind", "\u212aind", true}, {"name", "nAme", true}, {"_meta", "_META", true},
		{"id", "id2", false}, {"a-b", "a_b", false}, {"1", "¹", false}, {"ss", "ß", false},
		{"ǆ", "ǅ", true}, {"ǆ", "Ǆ", true}, {"σ", "ς", true},
	} {
		if got := foldEqual([]byte(tt.a), []byte(tt.b)); got != tt.want {
			t.Errorf("foldEqual(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
		if got := string(appendFolded(nil, []byte(tt.a))) == string(appendFolded(nil, []byte(tt.b))); got != tt.want {
			t.Errorf("appendFolded(%q) == appendFolded(%q): %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
	// encoding/json's own rule is contained in ours: every rune it folds
	// onto an ASCII letter, we do.
	for r := rune(0x80); r < 0x1F000; r++ {
		u := unicode.ToUpper(unicode.ToLower(r))
		if u < utf8.RuneSelf && unicode.IsLetter(u) && foldRune(r) != foldRune(u) {
			t.Errorf("%U folds onto %q in encoding/json, not here", r, u)
		}
	}
}

// TestReadKeysListed holds the lists of keys the bridge reads to its code:
// every Param, metaMember and member call on a client's params or _meta
// names a key in the list of its level. A key read and not listed would
// let its folded spelling through.
func TestReadKeysListed(t *testing.T) {
	listed := map[string]bool{}
	for _, s := range []*keySet{envelopeKeys, paramsKeys, metaKeys} {
		for _, k := range s.keys {
			listed[k] = true
		}
	}
	consts := map[string]string{}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, dir := range []string{".", "../httpapi"} {
		names, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			src, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			f, err := parser.ParseFile(fset, name, src, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
			ast.Inspect(f, func(n ast.Node) bool {
				if vs, ok := n.(*ast.ValueSpec); ok {
					for i, id := range vs.Names {
						if i < len(vs.Values) {
							if bl, ok := vs.Values[i].(*ast.BasicLit); ok && bl.Kind == token.STRING {
								consts[id.Name], _ = strconv.Unquote(bl.Value)
							}
						}
					}
				}
				return true
			})
		}
	}
	value := func(e ast.Expr) (string, bool) {
		switch e := e.(type) {
		case *ast.BasicLit:
			if e.Kind == token.STRING {
				s, err := strconv.Unquote(e.Value)
				return s, err == nil
			}
		case *ast.Ident:
			s, ok := consts[e.Name]
			return s, ok
		}
		return "", false
	}
	var checked int
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			var name string
			switch fn := call.Fun.(type) {
			case *ast.SelectorExpr:
				name = fn.Sel.Name
			case *ast.Ident:
				name = fn.Name
			}
			var key ast.Expr
			switch {
			case (name == "Param" || name == "metaMember" || name == "paramAt" || name == "metaAt") && len(call.Args) == 1:
				key = call.Args[0]
			default:
				return true
			}
			if k, ok := value(key); ok {
				checked++
				if !listed[k] {
					t.Errorf("%s: %s(%q) reads a key that no list in keys.go has", fset.Position(call.Pos()), name, k)
				}
			}
			return true
		})
	}
	if checked < 10 {
		t.Fatalf("found only %d reads of a client's keys: the test no longer sees them", checked)
	}
	// Every key nameParam gives (Param(key)) is listed too.
	for _, m := range []string{"tools/call", "prompts/get", "resources/read"} {
		if !listed[nameParam(m)] {
			t.Errorf("nameParam(%q) = %q is not listed", m, nameParam(m))
		}
	}
}

// FuzzParseBody: whatever the bridge reads of a message it accepts (the
// method, the id, the tool or resource it names, its params) is what
// encoding/json reads from it into a struct, as a Go server would, or the
// message is refused.
func FuzzParseBody(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`,
		`{"jsonrpc":"2.0","id":"a","method":"resources/read","params":{"uri":"file:///x","_meta":{"progressToken":3}}}`,
		`{"jsonrpc":"2.0","method":"tools/list","Method":"tools/call","params":{"name":"secret"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","NAME":"secret"}}`,
		`{"jsonrpc":"2.0","ID":9,"method":"tools/call","params":{"name":"secret"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","paramſ":{"name":"secret"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"result":{}}]`,
		`{"jsonrpc":"2.0","\u0069d":2,"method":"tools\/call","params":{"n\u0061me":"x"}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\xff\",\"params\":{\"name\":\"e\xfe\"}}",
	} {
		f.Add([]byte(s))
	}
	type params struct {
		Name string `json:"name"`
		URI  string `json:"uri"`
		Meta struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	type message struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		msgs, _, err := ParseBody(bytes.Clone(body))
		if err != nil {
			return
		}
		for _, m := range msgs {
			var want message
			if err := json.Unmarshal(m.Raw, &want); err != nil {
				// A Go server could not read it at all: nothing it runs
				// differs from what the bridge read.
				return
			}
			if m.Kind != Response && m.Method != want.Method {
				t.Fatalf("%s: the bridge read method %q, encoding/json %q", m.Raw, m.Method, want.Method)
			}
			if !bytes.Equal(m.ID(), want.ID) {
				t.Fatalf("%s: the bridge read id %s, encoding/json %s", m.Raw, m.ID(), want.ID)
			}
			if !bytes.Equal(m.f.params.of(m.Raw), want.Params) {
				t.Fatalf("%s: the bridge read params %s, encoding/json %s", m.Raw, m.f.params.of(m.Raw), want.Params)
			}
			if m.Kind == Response && (!bytes.Equal(m.f.result.of(m.Raw), want.Result) || !bytes.Equal(m.f.error.of(m.Raw), want.Error)) {
				t.Fatalf("%s: the bridge read result %s error %s, encoding/json %s %s", m.Raw, m.f.result.of(m.Raw), m.f.error.of(m.Raw), want.Result, want.Error)
			}
			var p params
			if len(want.Params) == 0 || want.Params[0] != '{' || json.Unmarshal(want.Params, &p) != nil {
				continue
			}
			for key, got := range map[string]string{"name": p.Name, "uri": p.URI} {
				var read string
				if raw := m.Param(key); raw != nil && raw[0] == '"' {
					if unquote(raw, &read) != nil {
						t.Fatalf("%s: the bridge cannot read params.%s %s", m.Raw, key, raw)
					}
				}
				if read != got {
					t.Fatalf("%s: the bridge read params.%s %q, encoding/json %q", m.Raw, key, read, got)
				}
			}
			if tok := m.progressToken(); !bytes.Equal(tok, p.Meta.ProgressToken) {
				t.Fatalf("%s: the bridge read progressToken %s, encoding/json %s", m.Raw, tok, p.Meta.ProgressToken)
			}
		}
	})
}

// TestDigestArgs: arguments digest by their canonical JSON: the same
// members in another order or spacing match; numbers match only as
// written, so integers a float64 cannot tell apart (above 2^53) differ.
func TestDigestArgs(t *testing.T) {
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
	} {
		if got := digestArgs([]byte(tt.a)) == digestArgs([]byte(tt.b)); got != tt.same {
			t.Errorf("digestArgs(%s) == digestArgs(%s): %v, want %v", tt.a, tt.b, got, tt.same)
		}
	}
}

// TestReadSpansFit: every key the bridge reads has a place in a
// Message's readSpans, where the key check's walk records it.
func TestReadSpansFit(t *testing.T) {
	if n := len(paramsKeys.keys); n > maxParamKeys {
		t.Errorf("paramsKeys lists %d keys, a Message records %d (maxParamKeys)", n, maxParamKeys)
	}
	if n := len(metaKeys.keys); n > maxMetaKeys {
		t.Errorf("metaKeys lists %d keys, a Message records %d (maxMetaKeys)", n, maxMetaKeys)
	}
}
