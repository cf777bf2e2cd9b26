package config

// The file as the registry edits it: a change rewrites what it changes
// and keeps the rest; what a caller sends is read strictly, and refused
// with problems that name the field and never a value.

import (
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
)

const docFile = `{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "zeta": {"command": "z", "env": {"B": "2", "A": "1"}, "idleTimeout": "\u0035m"},
    "alpha": {"args": ["--api-key=sk-live-0123456789abcdefgh", "x"], "command": "a", "disabled": true},
    "beta": {"command": "b", "toolDeny": ["*=rm_\u002a"]}
  },
  "theme": {"dark": true, "scale": 1.50e0}
}`

func TestServersDocKeepsWhatItDoesNotChange(t *testing.T) {
	d, err := ParseServersDoc([]byte(docFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Names(); !slices.Equal(got, []string{"zeta", "alpha", "beta"}) {
		t.Errorf("names %q, want the file's order", got)
	}
	// Unchanged, the file is the same JSON, in the same order.
	same := string(d.Bytes())
	for _, w := range []string{`"globalShortcut": "Ctrl+Space"`, `"idleTimeout": "\u0035m"`, `"*=rm_\u002a"`, `"scale": 1.50e0`} {
		if !strings.Contains(same, w) {
			t.Errorf("the rewritten file lost %s:\n%s", w, same)
		}
	}
	order := func(s string, keys ...string) {
		t.Helper()
		last := -1
		for _, k := range keys {
			i := strings.Index(s, k)
			if i < last {
				t.Errorf("%s is out of order in:\n%s", k, s)
			}
			last = i
		}
	}
	order(same, `"globalShortcut"`, `"zeta"`, `"B"`, `"A"`, `"alpha"`, `"args"`, `"beta"`, `"theme"`)

	z, _ := d.Entry("zeta")
	z2, problems := z.Patch([]byte(`{"env": {"A": "one", "C": "3"}, "args": ["x"]}`))
	if problems != nil {
		t.Fatal(problems)
	}
	d2 := d.With("zeta", z2).With("gamma", Entry{members{{"command", json.RawMessage(`"g"`)}}}).Without("beta")
	out := string(d2.Bytes())
	order(out, `"globalShortcut"`, `"zeta"`, `"B"`, `"A": "one"`, `"C": "3"`, `"idleTimeout": "\u0035m"`, `"args"`, `"alpha"`, `"gamma"`, `"theme"`)
	if strings.Contains(out, `"beta"`) {
		t.Errorf("beta was removed:\n%s", out)
	}
	if _, err := ParseServersDoc(d2.Bytes()); err != nil {
		t.Fatalf("the rewritten file does not read back: %v", err)
	}
	var cfg Config
	specs, err := ParseServers("servers.json", d2.Bytes(), &cfg, []string{"PATH=/usr/bin"})
	if err != nil {
		t.Fatalf("the rewritten file is not valid: %v", err)
	}
	if len(specs) != 2 {
		t.Errorf("servers %+v, want zeta and gamma (alpha is disabled)", specs)
	}
}

func TestServersDocView(t *testing.T) {
	d, err := ParseServersDoc([]byte(docFile))
	if err != nil {
		t.Fatal(err)
	}
	z, _ := d.Entry("zeta")
	if got := z.EnvKeys(); !slices.Equal(got, []string{"B", "A"}) {
		t.Errorf("env keys %q", got)
	}
	a, _ := d.Entry("alpha")
	if !a.Disabled() || a.WithDisabled(false).Disabled() || !z.WithDisabled(true).Disabled() {
		t.Error("disabled is not read or set")
	}
	for _, e := range []Entry{z, a} {
		v := string(e.View())
		for _, secret := range []string{`"1"`, `"2"`, "sk-live", `"env"`, `"disabled"`} {
			if strings.Contains(v, secret) {
				t.Errorf("the view shows %s: %s", secret, v)
			}
		}
	}
	if v := string(a.View()); !strings.Contains(v, `"--api-key=****"`) {
		t.Errorf("the view of alpha does not mask its key: %s", v)
	}
}

// TestEntryRequests: what a caller sends is refused with problems that
// name the field, never a value.
func TestEntryRequests(t *testing.T) {
	const secret = "hunter2-secret-value"
	huge := strings.Repeat("k", 1<<20)
	tests := []struct {
		name  string
		body  string
		patch bool
		want  []Problem
	}{
		{name: "ok", body: `{"name": "a", "command": "x", "args": ["y"], "env": {"K": "` + secret + `"}}`},
		{name: "no name", body: `{"command": "x"}`, want: []Problem{{Field: "name", Message: "required"}}},
		{name: "name not a string", body: `{"name": 7, "command": "x"}`, want: []Problem{{Field: "name", Message: "want a string"}}},
		{name: "not an object", body: `["` + secret + `"]`, want: []Problem{{Message: "want a JSON object of fields (command, args, env, ...)"}}},
		{name: "not JSON", body: `{"name": "` + secret, want: []Problem{{Message: "want a JSON object of fields (command, args, env, ...)"}}},
		{name: "unknown field", body: `{"name": "a", "command": "x", "comand": "` + secret + `"}`, want: []Problem{{Field: "comand", Message: "unknown field (see docs/several-servers.md for the fields)"}}},
		{name: "unknown field, huge", body: `{"name": "a", "command": "x", "` + huge + `": 1}`, want: []Problem{{Message: "a field of 1048576 bytes: unknown field (see docs/several-servers.md for the fields)"}}},
		{name: "unknown field, null", body: `{"name": "a", "command": "x", "` + secret + `": null}`, want: []Problem{{Field: secret, Message: "unknown field (see docs/several-servers.md for the fields)"}}},
		{name: "folded field", body: `{"name": "a", "Command": "x"}`, want: []Problem{{Field: "Command", Message: `unknown field: field names are case-sensitive ("command")`}}},
		{name: "twice", body: `{"name": "a", "command": "x", "command": "y"}`, want: []Problem{{Field: "command", Message: "given twice"}}},
		{name: "args a string", body: `{"name": "a", "command": "x", "args": "--token ` + secret + `"}`, want: []Problem{{Field: "args", Message: "want an array of strings"}}},
		{name: "args with null", body: `{"name": "a", "command": "x", "args": [null]}`, want: []Problem{{Field: "args", Message: "want an array of strings"}}},
		{name: "env value a number", body: `{"name": "a", "command": "x", "env": {"K": 123456}}`, want: []Problem{{Field: "env", Message: "want an object whose values are strings"}}},
		{name: "env value null", body: `{"name": "a", "command": "x", "env": {"K": null}}`, want: []Problem{{Field: "env", Message: "want an object whose values are strings"}}},
		{name: "prespawn a string", body: `{"name": "a", "command": "x", "prespawn": "2"}`, want: []Problem{{Field: "prespawn", Message: "want an integer"}}},
		{name: "mask in env", body: `{"name": "a", "command": "x", "env": {"K": "****"}}`, want: []Problem{{Field: "env", Message: `holds "****", which is shown in place of a secret: send the real value, or leave the field out to keep it`}}},
		{name: "mask in args", body: `{"name": "a", "command": "x", "args": ["--api-key=****"]}`, want: []Problem{{Field: "args", Message: `holds "****", which is shown in place of a secret: send the real value, or leave the field out to keep it`}}},

		{name: "patch ok", patch: true, body: `{"env": {"K": null, "L": "` + secret + `"}, "args": null, "mode": "shared"}`},
		{name: "patch renames", patch: true, body: `{"name": "b"}`, want: []Problem{{Field: "name", Message: "a patch cannot rename a server: remove it and add it under the new name"}}},
		{name: "patch env_remove", patch: true, body: `{"env_remove": ["K"]}`},
		{name: "patch env_remove absent", patch: true, body: `{"env_remove": ["NOPE"]}`, want: []Problem{{Field: "env_remove", Message: `"NOPE" is not a variable of "env"`}}},
		{name: "patch env_remove KEY=value", patch: true, body: `{"env_remove": ["K=` + secret + `"]}`, want: []Problem{{Field: "env_remove", Message: `the key "K" followed by "=" is not a variable of "env"`}}},
		{name: "patch env_remove not a list", patch: true, body: `{"env_remove": "K"}`, want: []Problem{{Field: "env_remove", Message: `want an array of the names of variables of "env"`}}},
		{name: "patch mask", patch: true, body: `{"env": {"K": "****"}}`, want: []Problem{{Field: "env", Message: `holds "****", which is shown in place of a secret: send the real value, or leave the field out to keep it`}}},
		{name: "patch env value of the wrong type", patch: true, body: `{"env": {"K": 1}}`, want: []Problem{{Field: "env", Message: "want an object whose values are strings"}}},
		{name: "patch env twice", patch: true, body: `{"env": {"K": "a", "K": "b"}}`, want: []Problem{{Field: "env", Message: "want an object whose values are strings, each key once, null deleting one"}}},
		{name: "patch unknown", patch: true, body: `{"bogus": null}`, want: []Problem{{Field: "bogus", Message: "unknown field (see docs/several-servers.md for the fields)"}}},
	}
	base := Entry{members{{"command", json.RawMessage(`"x"`)}, {"env", json.RawMessage(`{"K": "old-` + secret + `"}`)}}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []Problem
			if tt.patch {
				_, got = base.Patch([]byte(tt.body))
			} else {
				_, _, got = NewEntry([]byte(tt.body))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems %+v\nwant %+v", got, tt.want)
			}
			for _, p := range got {
				if strings.Contains(p.Message+p.Field, secret) && p.Field != secret || len(p.Message)+len(p.Field) > 300 {
					t.Errorf("a problem shows a value: %+v", p)
				}
			}
		})
	}
}

func TestEntryPatch(t *testing.T) {
	base := Entry{members{
		{"command", json.RawMessage(`"x"`)},
		{"env", json.RawMessage(`{"A": "1", "B": "2", "C": "3"}`)},
		{"args", json.RawMessage(`["a"]`)},
		{"Mode", json.RawMessage(`"shared"`)},
	}}
	got, problems := base.Patch([]byte(`{"env": {"B": "two", "D": "4", "A": null}, "env_remove": ["C"], "args": null, "mode": "per-session"}`))
	if problems != nil {
		t.Fatal(problems)
	}
	if want := `{"command":"x","env":{"B":"two","D":"4"},"mode":"per-session"}`; string(got.Canonical()) != want {
		t.Errorf("patched: %s\nwant      %s", got.Canonical(), want)
	}
	wantDiff := []FieldChange{{"env.A", "removed"}, {"env.B", "changed"}, {"env.C", "removed"}, {"env.D", "added"}, {"mode", "added"}, {"args", "removed"}, {"Mode", "removed"}}
	diff := got.Diff(base)
	slices.SortFunc(diff, func(a, b FieldChange) int { return strings.Compare(a.Field, b.Field) })
	slices.SortFunc(wantDiff, func(a, b FieldChange) int { return strings.Compare(a.Field, b.Field) })
	if !slices.Equal(diff, wantDiff) {
		t.Errorf("diff %+v\nwant %+v", diff, wantDiff)
	}
	if d := base.Diff(base); d != nil {
		t.Errorf("no change, diff %+v", d)
	}
	name, e, problems := NewEntry([]byte(`{"command": "x", "name": "n", "args": null}`))
	if name != "n" || problems != nil || string(e.Canonical()) != `{"command":"x"}` {
		t.Errorf("created %q %s %+v", name, e.Canonical(), problems)
	}
}

// TestServersErrorProblems: the file's errors are structured, and say
// what they said as text.
func TestServersErrorProblems(t *testing.T) {
	cfg, err := Load([]string{"--config", "servers.json"}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ParseServers("servers.json", []byte(`{"mcpServers": {"a": {"env": {"API_KEY=sk-0123456789abcdef": "x"}}}}`), &cfg, nil)
	se, ok := err.(*ServersError)
	if !ok {
		t.Fatalf("error %T %v, want a *ServersError", err, err)
	}
	want := []Problem{
		{Server: "a", Field: "command", Message: "required"},
		{Server: "a", Field: "env", Message: `the key "API_KEY" followed by "=" is not a valid variable name: a key is the name alone, and its value goes after it ("NAME": "value")`},
	}
	if !slices.Equal(se.Problems, want) {
		t.Errorf("problems %+v\nwant %+v", se.Problems, want)
	}
	if strings.Contains(err.Error(), "sk-0123") || !strings.Contains(err.Error(), `servers.json: server "a": field "command": required`) {
		t.Errorf("error text: %v", err)
	}
}
