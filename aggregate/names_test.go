package aggregate

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/bridge"
)

func TestServerNameProblem(t *testing.T) {
	for _, tt := range []struct {
		name string
		want string // "" for a name the rule takes, else a part of the reason
	}{
		{"fs", ""},
		{"github-issues", ""},
		{"my_server", ""},
		{"_x", ""},
		{"A1", ""},
		{strings.Repeat("s", MaxServerName), ""},
		{"", "empty"},
		{"a__b", `holds "__"`},
		{"a___b", `holds "__"`},
		{"a_", `ends with "_"`},
		{"a.b", "letters, digits"},
		{"a b", "letters, digits"},
		{"é", "letters, digits"},
		{strings.Repeat("s", MaxServerName+1), "62 characters"},
	} {
		got := ServerNameProblem(tt.name)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("ServerNameProblem(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestSplitUnambiguous: for every server name the rule takes, an exposed
// name splits back into that server and that name, whatever the tool's
// name holds.
func TestSplitUnambiguous(t *testing.T) {
	servers := []string{"a", "a-b", "a_b", "_a", "x1_y2-z3"}
	tools := []string{"t", "_t", "__t", "t__u", "t_", "t__", "-"}
	var members []Member
	for _, s := range servers {
		members = append(members, Member{Name: s})
	}
	n, err := NewNames(members)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		for _, tool := range tools {
			exposed, p := n.Expose(KindTool, s, tool)
			if p != nil {
				t.Fatalf("Expose(%q, %q): %v", s, tool, p.Message())
			}
			gs, gt, err := n.Resolve(KindTool, exposed)
			if err != nil || gs != s || gt != tool {
				t.Errorf("Resolve(%q) = %q, %q, %v; want %q, %q", exposed, gs, gt, err, s, tool)
			}
		}
	}
}

func TestCheck(t *testing.T) {
	long := strings.Repeat("l", 70)
	for _, tt := range []struct {
		name    string
		members []Member
		want    []string // each a part of one error, in order
	}{
		{"nothing wrong", []Member{{Name: "fs", Rename: map[string]string{"read_file": "read"}, Allow: []string{"read_*", "list"}, Deny: []string{"*delete*"}}, {Name: "git"}}, nil},
		{"server name with the separator", []Member{{Name: "a__b"}}, []string{`server "a__b": not a server name for the aggregate: it holds "__"`}},
		{"names that differ in case", []Member{{Name: "Git"}, {Name: "git"}}, []string{`server "git": differs from the server "Git" only in case`}},
		{"rename to a name too long", []Member{{Name: "fs", Rename: map[string]string{"x": long}}},
			[]string{`server "fs": field "rename": "x" is renamed to "` + long + `", exposed as "fs__` + long + `": 74 characters, over the 64 clients accept; rename it to at most 60 characters ("rename": {"x": "` + long[:60] + `"})`}},
		{"rename to characters clients refuse", []Member{{Name: "fs", Rename: map[string]string{"x": "read.file"}}},
			[]string{`field "rename": "x" is renamed to "read.file", which has characters clients refuse in a tool's name: use letters, digits, _ and - ("rename": {"x": "read_file"})`}},
		{"rename to nothing", []Member{{Name: "fs", Rename: map[string]string{"x": ""}}}, []string{`"x" is renamed to the empty name`}},
		{"rename of nothing", []Member{{Name: "fs", Rename: map[string]string{"": "y"}}}, []string{`a rename of the empty name`}},
		{"two renames to one name", []Member{{Name: "fs", Rename: map[string]string{"a": "x", "b": "x"}}}, []string{`"a" and "b" are both renamed to "x"`}},
		{"an allowed tool whose name cannot fit", []Member{{Name: "fs", Allow: []string{"read_*", long}}},
			[]string{`field "tools.allow": the tool "` + long + `" of server "fs" would be exposed as "fs__` + long + `", which is 74 characters, over the 64 clients accept: add "rename": {"` + long + `": "` + long[:60] + `"} to the server "fs"`}},
		{"an allowed tool renamed to fit", []Member{{Name: "fs", Allow: []string{long}, Rename: map[string]string{long: "short"}}}, nil},
		{"empty patterns", []Member{{Name: "fs", Allow: []string{"a", ""}, Deny: []string{""}}}, []string{`field "tools.allow": entry 2: an empty pattern`, `field "tools.deny": an empty pattern`}},
		{"every problem, sorted by server", []Member{{Name: "z", Rename: map[string]string{"a": ""}}, {Name: "a_"}},
			[]string{`server "a_": not a server name`, `server "z": field "rename"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			errs := Check(tt.members)
			if len(errs) != len(tt.want) {
				t.Fatalf("Check = %q, want %d errors", errs, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("error %d = %q, want it to hold %q", i, errs[i].Error(), w)
				}
			}
			if _, err := NewNames(tt.members); (err == nil) != (len(tt.want) == 0) {
				t.Errorf("NewNames: %v", err)
			}
		})
	}
}

func testNames(t *testing.T) *Names {
	t.Helper()
	n, err := NewNames([]Member{
		{Name: "fs", Rename: map[string]string{"read_multiple_files": "read_many", "old": "new"}, Deny: []string{"*delete*"}},
		{Name: "git", Allow: []string{"log", "diff*"}},
		{Name: strings.Repeat("p", 50)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestExpose(t *testing.T) {
	n := testNames(t)
	p50 := strings.Repeat("p", 50)
	for _, tt := range []struct {
		name         string
		kind         Kind
		server, tool string
		want         string
		reason       Reason // of the problem, if one
		fix          string
	}{
		{"prefixed", KindTool, "fs", "read_file", "fs__read_file", "", ""},
		{"prefixed prompt", KindPrompt, "fs", "summarise", "fs__summarise", "", ""},
		{"renamed", KindTool, "fs", "read_multiple_files", "fs__read_many", "", ""},
		{"renamed prompt", KindPrompt, "fs", "old", "fs__new", "", ""},
		{"denied", KindTool, "fs", "delete_file", "", "", ""},
		{"deny is for tools", KindPrompt, "fs", "delete_file", "fs__delete_file", "", ""},
		{"allowed", KindTool, "git", "diff_staged", "git__diff_staged", "", ""},
		{"not allowed", KindTool, "git", "push", "", "", ""},
		{"not a member", KindTool, "other", "x", "", "", ""},
		{"shadowed by a rename", KindTool, "fs", "new", "", ReasonShadowed, "new_2"},
		{"a dot", KindTool, "fs", "files.read", "", ReasonBadName, "files_read"},
		{"a colon and a slash", KindTool, "fs", "ns:tool/x", "", ReasonBadName, "ns_tool_x"},
		{"too long with the prefix", KindTool, p50, "list_everything", "", ReasonBadName, "list_everyth"},
		{"just fits", KindTool, p50, "list_everyth", p50 + "__list_everyth", "", ""},
		{"not ASCII", KindPrompt, "fs", "résumé", "", ReasonBadName, "r_sum"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, p := n.Expose(tt.kind, tt.server, tt.tool)
			if got != tt.want {
				t.Errorf("Expose = %q, want %q", got, tt.want)
			}
			switch {
			case tt.reason == "" && p != nil:
				t.Errorf("problem %s", p.Message())
			case tt.reason != "" && p == nil:
				t.Errorf("no problem, want %s", tt.reason)
			case p != nil:
				if p.Reason != tt.reason || p.Fix != tt.fix || p.Server != tt.server || p.Name != tt.tool || p.Kind != tt.kind {
					t.Errorf("problem %+v, want reason %s, fix %q", p, tt.reason, tt.fix)
				}
				if fixed, q := n.withRename(tt.server, tt.tool, p.Fix).Expose(tt.kind, tt.server, tt.tool); q != nil || fixed == "" {
					t.Errorf("the fix %q does not fix it: %v", p.Fix, q)
				}
			}
		})
	}
}

// withRename is n with server's name renamed to fix, as the fix a
// Problem names would make it.
func (n *Names) withRename(server, name, fix string) *Names {
	var ms []Member
	for _, s := range n.order {
		m := n.members[s].Member
		if s == server {
			r := map[string]string{name: fix}
			for k, v := range m.Rename {
				r[k] = v
			}
			r[name] = fix
			m.Rename = r
		}
		ms = append(ms, m)
	}
	out, err := NewNames(ms)
	if err != nil {
		panic(err)
	}
	return out
}

func TestProblemMessage(t *testing.T) {
	n := testNames(t)
	_, p := n.Expose(KindTool, "fs", "files.read")
	want := `the tool "files.read" of server "fs" would be exposed as "fs__files.read", which has characters clients refuse (they accept letters, digits, _ and -): add "rename": {"files.read": "files_read"} to the server "fs"`
	if p.Message() != want {
		t.Errorf("message\n got %s\nwant %s", p.Message(), want)
	}
	_, p = n.Expose(KindTool, "fs", "new")
	want = `the tool "new" of server "fs" is not exposed: "rename" gives its name to the tool "old"; rename it too to expose it ("rename": {"new": "new_2"})`
	if p.Message() != want {
		t.Errorf("message\n got %s\nwant %s", p.Message(), want)
	}
}

func TestResolve(t *testing.T) {
	n := testNames(t)
	for _, tt := range []struct {
		name    string
		kind    Kind
		exposed string
		server  string
		tool    string
		err     string // a part of the error's message, if one
	}{
		{"plain", KindTool, "fs__read_file", "fs", "read_file", ""},
		{"renamed", KindTool, "fs__read_many", "fs", "read_multiple_files", ""},
		{"the name renamed away", KindTool, "fs__read_multiple_files", "", "", "Unknown tool: fs__read_multiple_files"},
		{"a rename's target reaches its source", KindPrompt, "fs__new", "fs", "old", ""},
		{"a tool of a name with the separator", KindTool, "fs__a__b", "fs", "a__b", ""},
		{"denied: hidden tools cannot be called", KindTool, "fs__delete_file", "", "", "Unknown tool: fs__delete_file"},
		{"not allowed", KindTool, "git__push", "", "", "Unknown tool"},
		{"allowed", KindTool, "git__log", "git", "log", ""},
		{"no separator", KindTool, "read_file", "", "", "the names here are SERVER__NAME, of the servers fs, git, ppp"},
		{"unknown server", KindTool, "svn__log", "", "", "Unknown tool: svn__log"},
		{"server names are exact", KindTool, "FS__read_file", "", "", "Unknown tool"},
		{"a name never exposed", KindTool, "fs__files.read", "", "", "Unknown tool: fs__files.read"},
		{"too long", KindTool, "fs__" + strings.Repeat("x", 61), "", "", "Unknown tool"},
		{"prompt", KindPrompt, "git__push", "git", "push", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			server, tool, err := n.Resolve(tt.kind, tt.exposed)
			if tt.err != "" {
				var be *bridge.Error
				if !errors.As(err, &be) || be.Code != bridge.CodeInvalidParams || !strings.Contains(be.Message, tt.err) {
					t.Fatalf("Resolve(%q) error = %v, want -32602 with %q", tt.exposed, err, tt.err)
				}
				return
			}
			if err != nil || server != tt.server || tool != tt.tool {
				t.Errorf("Resolve(%q) = %q, %q, %v; want %q, %q", tt.exposed, server, tool, err, tt.server, tt.tool)
			}
		})
	}
}

func TestURIs(t *testing.T) {
	n := testNames(t)
	for _, tt := range []struct {
		server, uri, exposed string
	}{
		{"fs", "file:///tmp/a.txt", "mcp-bridge://fs/file:///tmp/a.txt"},
		{"git", "file:///tmp/a.txt", "mcp-bridge://git/file:///tmp/a.txt"},
		{"fs", "test://static/resource/1?x=1#frag", "mcp-bridge://fs/test://static/resource/1?x=1#frag"},
		{"fs", "greeting", "mcp-bridge://fs/greeting"},
		{"fs", "", "mcp-bridge://fs/"},
		{"fs", "mcp-bridge://git/x", "mcp-bridge://fs/mcp-bridge://git/x"},
		{"fs", "file:///{path}", "mcp-bridge://fs/file:///{path}"},
	} {
		got := n.ExposeURI(tt.server, tt.uri)
		if got != tt.exposed {
			t.Errorf("ExposeURI(%q, %q) = %q, want %q", tt.server, tt.uri, got, tt.exposed)
		}
		server, uri, err := n.ResolveURI(got)
		if err != nil || server != tt.server || uri != tt.uri {
			t.Errorf("ResolveURI(%q) = %q, %q, %v", got, server, uri, err)
		}
	}
	// A template stays a template: what a client expands from the exposed
	// one resolves to what the server's own expands to.
	tmpl := n.ExposeURI("fs", "file:///{+path}")
	expanded := strings.Replace(tmpl, "{+path}", "home/me/a b.txt", 1)
	if s, u, err := n.ResolveURI(expanded); err != nil || s != "fs" || u != "file:///home/me/a b.txt" {
		t.Errorf("ResolveURI(%q) = %q, %q, %v", expanded, s, u, err)
	}
	for _, tt := range []struct{ uri, server, original string }{
		{"MCP-Bridge://FS/file:///x", "fs", "file:///x"},
		{"mcp-bridge://Git/Case/Kept", "git", "Case/Kept"},
	} {
		if s, u, err := n.ResolveURI(tt.uri); err != nil || s != tt.server || u != tt.original {
			t.Errorf("ResolveURI(%q) = %q, %q, %v", tt.uri, s, u, err)
		}
	}
	for _, tt := range []struct{ uri, err string }{
		{"file:///tmp/a.txt", "is not one of this server's: its resources are listed as mcp-bridge://SERVER/URI"},
		{"mcp-bridge://svn/x", "names no server of this aggregate (fs, git, ppp"},
		{"mcp-bridge://fs", "names no server"},
		{"", "is not one of this server's"},
	} {
		_, _, err := n.ResolveURI(tt.uri)
		var be *bridge.Error
		if !errors.As(err, &be) || be.Code != bridge.CodeInvalidParams || !strings.Contains(be.Message, tt.err) {
			t.Errorf("ResolveURI(%q) error = %v, want -32602 with %q", tt.uri, err, tt.err)
		}
	}
}

func TestSuggest(t *testing.T) {
	for _, tt := range []struct {
		server, local string
		taken         []string
		want          string
	}{
		{"fs", "read.file", nil, "read_file"},
		{"fs", ".hidden", nil, "hidden"},
		{"fs", "...", nil, "tool"},
		{"fs", "read.file", []string{"read_file"}, "read_file_2"},
		{"fs", "read.file", []string{"read_file", "read_file_2"}, "read_file_3"},
		{strings.Repeat("s", 58), "abcdefgh", nil, "abcd"},
		{strings.Repeat("s", 58), "abcdefgh", []string{"abcd"}, "ab_2"},
	} {
		taken := func(s string) bool {
			for _, x := range tt.taken {
				if x == s {
					return true
				}
			}
			return false
		}
		got := suggest(tt.server, tt.local, taken)
		if got != tt.want {
			t.Errorf("suggest(%q, %q) = %q, want %q", tt.server, tt.local, got, tt.want)
		}
		if !exposedName.MatchString(tt.server + Separator + got) {
			t.Errorf("suggest(%q, %q) = %q does not fit", tt.server, tt.local, got)
		}
	}
}
