package approval

import (
	"strings"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/auth"
)

func TestParseRule(t *testing.T) {
	for _, tt := range []struct {
		in, want, err string
	}{
		{"*=delete_*", "*=delete_*", ""},
		{"scope:ops=*@destructiveHint", "scope:ops=*@destructiveHint", ""},
		{"alice=fs_*@!readOnlyHint", "alice=fs_*@!readOnlyHint", ""},
		{"*=*@openWorldHint", "*=*@openWorldHint", ""},
		{"delete_*", "", "want SUBJECT=GLOB"},
		{"=x", "", "want SUBJECT=GLOB"},
		{"*=", "", "want SUBJECT=GLOB"},
		{"scope:=x", "", "the scope is empty"},
		{"*=@destructiveHint", "", "the glob before @ is empty"},
		{"*=*@destructive", "", "must be one of readOnlyHint, destructiveHint, idempotentHint, openWorldHint"},
		{"*=*@", "", "must be one of"},
	} {
		r, err := ParseRule(tt.in)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseRule(%q): %v, want an error with %q", tt.in, err, tt.err)
		case tt.err == "" && (err != nil || r.String() != tt.want):
			t.Errorf("ParseRule(%q) = %q, %v; want %q", tt.in, r.String(), err, tt.want)
		case err != nil && strings.Contains(err.Error(), tt.in) && len(tt.in) > 3:
			t.Errorf("the error repeats the rule: %v", err)
		}
	}
}

// TestPolicyHints: a rule's hint spares a tool only on the word of a
// trusted server that described it; an untrusted server's claims, and a
// tool not described, are held by the glob alone.
func TestPolicyHints(t *testing.T) {
	const list = `{"tools":[
		{"name":"read_file","annotations":{"readOnlyHint":true}},
		{"name":"write_file","annotations":{"destructiveHint":false}},
		{"name":"rm","annotations":{"destructiveHint":true}},
		{"name":"plain"},
		{"name":"liar","annotations":{"readOnlyHint":"yes","destructiveHint":0}}
	]}`
	rules := []Rule{mustRule("*=*@destructiveHint")}
	trusted := NewPolicy("fs", rules, true)
	untrusted := NewPolicy("fs", rules, false)
	if untrusted.Catalog() != nil {
		t.Error("an untrusted server has a catalog to feed")
	}
	trusted.Catalog().Learn([]byte(list))
	for _, tt := range []struct {
		tool             string
		trusted, ignored bool // held on the trusted server, on the untrusted one
	}{
		{"read_file", false, true},
		{"write_file", false, true},
		{"rm", true, true},
		{"plain", true, true}, // destructiveHint defaults to true
		{"liar", true, true},  // hints that are not booleans are not said
		{"unknown", true, true},
	} {
		if _, got := trusted.Needs(alice, tt.tool); got != tt.trusted {
			t.Errorf("trusted server, %s: held %v, want %v", tt.tool, got, tt.trusted)
		}
		if _, got := untrusted.Needs(alice, tt.tool); got != tt.ignored {
			t.Errorf("untrusted server, %s: held %v, want %v", tt.tool, got, tt.ignored)
		}
	}
	// A later list replaces what a tool said.
	trusted.Catalog().Learn([]byte(`{"tools":[{"name":"read_file","annotations":{"readOnlyHint":false}}]}`))
	if _, held := trusted.Needs(alice, "read_file"); !held {
		t.Error("read_file, no longer read-only, is not held")
	}
	not := NewPolicy("fs", []Rule{mustRule("*=*@!readOnlyHint")}, true)
	not.Catalog().Learn([]byte(list))
	if _, held := not.Needs(alice, "read_file"); held {
		t.Error("@!readOnlyHint holds a read-only tool")
	}
	if _, held := not.Needs(alice, "write_file"); !held {
		t.Error("@!readOnlyHint spares a tool that is not read-only")
	}
}

func TestPolicySubjects(t *testing.T) {
	p := NewPolicy("", []Rule{mustRule("scope:risky=*"), mustRule("token:ALICE=delete_*")}, false)
	jwt := auth.Principal{Method: auth.MethodJWT, Name: "u", Scopes: []string{"risky"}}
	for _, tt := range []struct {
		p    auth.Principal
		tool string
		rule string
	}{
		{alice, "delete_x", "token:ALICE=delete_*"},
		{alice, "read", ""},
		{bob, "delete_x", ""},
		{jwt, "read", "scope:risky=*"},
		{auth.Principal{}, "delete_x", ""},
	} {
		r, held := p.Needs(tt.p, tt.tool)
		if held != (tt.rule != "") || held && r.String() != tt.rule {
			t.Errorf("%s calls %s: %q %v, want %q", tt.p, tt.tool, r.String(), held, tt.rule)
		}
	}
	if NewPolicy("x", nil, true) != nil {
		t.Error("a policy without rules")
	}
	var none *Policy
	if _, held := none.Needs(alice, "x"); held {
		t.Error("a nil policy holds a call")
	}
}

// TestCatalogBound: a catalog describes at most DefaultMaxTools tools;
// one past the bound is not described, so it is held.
func TestCatalogBound(t *testing.T) {
	c := NewCatalog()
	c.max = 3
	c.Learn([]byte(`{"tools":[{"name":"a","annotations":{"readOnlyHint":true}},{"name":"b"},{"name":"c"},{"name":"d","annotations":{"readOnlyHint":true}}]}`))
	if c.Len() != 3 {
		t.Errorf("%d tools described, want 3", c.Len())
	}
	if _, ok := c.Lookup("d"); ok {
		t.Error("a tool past the bound is described")
	}
	c.Learn([]byte(`{"tools":[{"name":"a"}]}`)) // a known tool is still updated
	if a, _ := c.Lookup("a"); a.Has(HintReadOnly) {
		t.Error("a known tool was not updated at the bound")
	}
	c.Learn([]byte(`not json`))
	c.Learn([]byte(`{"tools":[{"name":"` + strings.Repeat("x", 300) + `"}]}`))
	if c.Len() != 3 {
		t.Errorf("%d tools after junk", c.Len())
	}
}

func TestAnnotationDefaults(t *testing.T) {
	yes, no := true, false
	for _, tt := range []struct {
		a    Annotations
		want map[string]bool
	}{
		{Annotations{}, map[string]bool{HintReadOnly: false, HintDestructive: true, HintIdempotent: false, HintOpenWorld: true}},
		{Annotations{ReadOnly: &yes, Destructive: &yes}, map[string]bool{HintReadOnly: true, HintDestructive: false, HintIdempotent: true, HintOpenWorld: true}},
		{Annotations{Destructive: &no, Idempotent: &yes, OpenWorld: &no}, map[string]bool{HintReadOnly: false, HintDestructive: false, HintIdempotent: true, HintOpenWorld: false}},
	} {
		for h, want := range tt.want {
			if got := tt.a.Has(h); got != want {
				t.Errorf("%+v has %s: %v, want %v", tt.a, h, got, want)
			}
		}
	}
}
