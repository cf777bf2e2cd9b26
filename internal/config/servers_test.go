package config

// The --config file: checked with messages that name the server and the
// field and never a value; resolved against the flags. (cmd/mcp-bridge
// runs a real bridge on such files, and reloads them.)

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/aggregate"
)

func TestServersFileInvalid(t *testing.T) {
	dir := t.TempDir()
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	environ := []string{
		"PATH=/usr/bin",
		"HOST_KEY=hostvalue",
		"GLOBAL_TOKEN=globaltokenvalue-0123456789",
		"SERVER_TOKEN=servertokenvalue-0123456789",
		"SAME_TOKEN=globaltokenvalue-0123456789",
		"SHORT_TOKEN=shortsecret",
	}
	tests := []struct {
		name    string
		rule    string   // the serverRules entry it breaks, if one
		args    []string // flags
		file    string
		want    []string // each must be in the error
		notWant []string // none may be: values, which could be secrets
	}{
		{name: "not JSON", file: `{"mcpServers": {"a": {"command": "x",}}}`, want: []string{"servers.json: not valid JSON (line 1, column"}},
		{name: "no mcpServers", file: `{"servers": {}}`, want: []string{`servers.json: no "mcpServers" object`}},
		{name: "mcpServers not an object", file: `{"mcpServers": ["a"]}`, want: []string{`"mcpServers" must be an object`}},
		{name: "server name", file: `{"mcpServers": {"a/b": {"command": "x"}}}`, want: []string{`servers.json: server name "a/b"`}},
		{name: "server name too long", file: `{"mcpServers": {"` + strings.Repeat("n", 65) + `": {"command": "x"}}}`, want: []string{"server name"}},
		{name: "no command", rule: "command", file: `{"mcpServers": {"github": {"args": ["x"]}}}`, want: []string{`servers.json: server "github": field "command": required`}},
		{name: "entry not an object", file: `{"mcpServers": {"github": "npx server"}}`, want: []string{`server "github": want an object`}, notWant: []string{"npx server"}},
		{name: "unknown field", file: `{"mcpServers": {"github": {"command": "x", "idle_timeout": "5m"}}}`, want: []string{`server "github": field "idle_timeout": unknown field`}},
		{
			name:    "args of the wrong type",
			file:    `{"mcpServers": {"github": {"command": "x", "args": "--token=supersecret"}}}`,
			want:    []string{`server "github": field "args": want an array of strings`},
			notWant: []string{"supersecret"},
		},
		{
			name:    "env value of the wrong type",
			file:    `{"mcpServers": {"github": {"command": "x", "env": {"TOKEN": 987654321}}}}`,
			want:    []string{`server "github": field "env": want an object whose values are strings`},
			notWant: []string{"987654321"},
		},
		{
			name:    "env with a bad name",
			rule:    "env",
			file:    `{"mcpServers": {"github": {"command": "x", "env": {"BAD-NAME": "supersecret"}}}}`,
			want:    []string{`server "github": field "env": "BAD-NAME" is not a valid variable name`},
			notWant: []string{"supersecret"},
		},
		{
			name:    "env of the bridge's own prefix",
			rule:    "env",
			file:    `{"mcpServers": {"github": {"command": "x", "env": {"MCP_BRIDGE_PORT": "supersecret"}}}}`,
			want:    []string{`server "github": field "env": "MCP_BRIDGE_PORT" is named like the bridge's own settings`},
			notWant: []string{"supersecret"},
		},
		// A name that is not set is not shown: it may be the secret,
		// written where its variable's name belongs.
		{name: "envFrom unset", rule: "envFrom", file: `{"mcpServers": {"github": {"command": "x", "envFrom": {"KEY": "ghp_NotSetAnywhere0123456789"}}}}`, want: []string{`server "github": field "envFrom": KEY: the variable it names is not set in the bridge's environment: give the NAME of a variable`}, notWant: []string{"ghp_NotSetAnywhere0123456789"}},
		{name: "envFrom bad source", rule: "envFrom", file: `{"mcpServers": {"github": {"command": "x", "envFrom": {"KEY": "not a name"}}}}`, want: []string{`field "envFrom": KEY:`}},
		{
			name:    "envFrom of a --token-env variable",
			rule:    "envFrom",
			args:    []string{"--token-env", "GLOBAL_TOKEN"},
			file:    `{"mcpServers": {"github": {"command": "x", "envFrom": {"KEY": "GLOBAL_TOKEN"}}}}`,
			want:    []string{`server "github": field "envFrom": KEY: GLOBAL_TOKEN holds a token of the bridge`},
			notWant: []string{"globaltokenvalue"},
		},
		{
			name:    "envFrom of another server's token variable",
			rule:    "envFrom",
			file:    `{"mcpServers": {"a": {"command": "x", "tokenEnvs": ["SERVER_TOKEN"]}, "b": {"command": "x", "envFrom": {"KEY": "SERVER_TOKEN"}}}}`,
			want:    []string{`server "b": field "envFrom": KEY: SERVER_TOKEN holds a token of the bridge`},
			notWant: []string{"servertokenvalue"},
		},
		{name: "envFrom and env both set one variable", rule: "envFrom and env", file: `{"mcpServers": {"github": {"command": "x", "env": {"KEY": "a"}, "envFrom": {"KEY": "HOST_KEY"}}}}`, want: []string{`field "envFrom": KEY is in "env" too`}, notWant: []string{"hostvalue"}},
		{name: "remote server", rule: "url", file: `{"mcpServers": {"remote": {"url": "https://example.com/mcp"}}}`, want: []string{`server "remote": field "url"`}, notWant: []string{"example.com"}},
		{name: "type", rule: "type", file: `{"mcpServers": {"remote": {"type": "sse", "command": "x"}}}`, want: []string{`server "remote": field "type"`}},
		{name: "cwd not a directory", rule: "cwd", file: `{"mcpServers": {"a": {"command": "x", "cwd": "` + notDir + `"}}}`, want: []string{`server "a": field "cwd": not a directory`}, notWant: []string{notDir}},
		{name: "mode", rule: "mode", file: `{"mcpServers": {"a": {"command": "x", "mode": "bogus"}}}`, want: []string{`server "a": field "mode": want per-session, shared or per-identity`}},
		{name: "claim-env with a shared server", rule: "claim-env needs a process per principal", args: []string{"--claim-env", "sub=USER"}, file: `{"mcpServers": {"a": {"command": "x", "mode": "shared"}}}`, want: []string{`server "a": field "mode": --claim-env`}},
		{name: "prespawn negative", rule: "prespawn", file: `{"mcpServers": {"a": {"command": "x", "prespawn": -1}}}`, want: []string{`server "a": field "prespawn": must not be negative`}},
		{name: "prespawn of a shared server", rule: "prespawn", file: `{"mcpServers": {"a": {"command": "x", "mode": "shared", "prespawn": 2}}}`, want: []string{`server "a": field "prespawn": a warm pool serves per-session mode only`}},
		{name: "prespawn not an integer", file: `{"mcpServers": {"a": {"command": "x", "prespawn": 1.5}}}`, want: []string{`server "a": field "prespawn": want an integer`}},
		{name: "idle timeout", rule: "idleTimeout", file: `{"mcpServers": {"a": {"command": "x", "idleTimeout": "forever"}}}`, want: []string{`server "a": field "idleTimeout": want a duration`}, notWant: []string{"forever"}},
		{name: "idle timeout zero", rule: "idleTimeout", file: `{"mcpServers": {"a": {"command": "x", "idleTimeout": "0s"}}}`, want: []string{`server "a": field "idleTimeout"`}},
		{name: "max sessions", rule: "maxSessions", file: `{"mcpServers": {"a": {"command": "x", "maxSessions": 0}}}`, want: []string{`server "a": field "maxSessions": must be greater than zero`}},
		{name: "token variable unset", rule: "tokens", file: `{"mcpServers": {"a": {"command": "x", "tokenEnvs": ["NO_SUCH_TOKEN"]}}}`, want: []string{`server "a": field "tokenEnvs": the name given is not a variable set in the environment: give the NAME of a variable`}, notWant: []string{"NO_SUCH_TOKEN"}},
		{name: "token variable of the bridge's prefix", rule: "tokenEnvs", file: `{"mcpServers": {"a": {"command": "x", "tokenEnvs": ["MCP_BRIDGE_TOKEN"]}}}`, want: []string{`server "a": field "tokenEnvs"`}},
		{
			name:    "token too short",
			rule:    "tokens",
			file:    `{"mcpServers": {"a": {"command": "x", "tokenEnvs": ["SHORT_TOKEN"]}}}`,
			want:    []string{`server "a": field "tokenEnvs": the token in SHORT_TOKEN is shorter than`},
			notWant: []string{"shortsecret"},
		},
		{
			name:    "token equal to a --token-env token",
			rule:    "tokens",
			args:    []string{"--token-env", "GLOBAL_TOKEN"},
			file:    `{"mcpServers": {"a": {"command": "x", "tokenEnvs": ["SAME_TOKEN"]}}}`,
			want:    []string{`server "a": field "tokenEnvs": token variables GLOBAL_TOKEN and SAME_TOKEN hold the same token`},
			notWant: []string{"globaltokenvalue"},
		},
		{name: "sandbox preset", rule: "sandbox", file: `{"mcpServers": {"a": {"command": "x", "sandbox": {"preset": "ruby"}}}}`, want: []string{`server "a": field "sandbox": preset: want node, python, none`}},
		{name: "sandbox path", rule: "sandbox", file: `{"mcpServers": {"a": {"command": "x", "sandbox": {"write": ["/no/such/dir"]}}}}`, want: []string{`server "a": field "sandbox": write: no such file or directory`}, notWant: []string{"/no/such/dir"}},
		{name: "sandbox limit", rule: "sandbox", file: `{"mcpServers": {"a": {"command": "x", "sandbox": {"limit": "mem=1X"}}}}`, want: []string{`server "a": field "sandbox": limit: want KEY=VALUE`}},
		{name: "sandbox net", rule: "sandbox", file: `{"mcpServers": {"a": {"command": "x", "sandbox": {"net": ["none", "443"]}}}}`, want: []string{`server "a": field "sandbox": net:`}},
		{name: "sandbox field unknown", file: `{"mcpServers": {"a": {"command": "x", "sandbox": {"reads": ["/"]}}}}`, want: []string{`server "a": field "reads": unknown field`}},
		{name: "sha256", rule: "sandbox", file: `{"mcpServers": {"a": {"command": "x", "sha256": "secret-looking"}}}`, want: []string{`server "a": field "sha256": want the SHA-256 in lowercase hex`}, notWant: []string{"secret-looking"}},
		{name: "tool rule", rule: "tool rules", file: `{"mcpServers": {"a": {"command": "x", "toolDeny": ["no-equals"]}}}`, want: []string{`server "a": field "toolDeny": tool rule`}},
		{name: "approval rule", rule: "tool rules", file: `{"mcpServers": {"a": {"command": "x", "toolApprove": ["*=ok", "*=*@secretHint"]}}}`,
			want: []string{`server "a": field "toolApprove": its 2nd entry: approval rule: the annotation after @ must be one of`}, notWant: []string{"secretHint"}},
		{name: "trusted", file: `{"mcpServers": {"a": {"command": "x", "trusted": "yes"}}}`, want: []string{`server "a": field "trusted": want true or false`}},
		{
			name: "rename too long", rule: "rename and tools",
			file: `{"mcpServers": {"fs": {"command": "x", "rename": {"read_file": "` + strings.Repeat("r", 61) + `"}}}}`,
			want: []string{`servers.json: server "fs": field "rename": "read_file" is renamed to "` + strings.Repeat("r", 61) + `", exposed as "fs__` + strings.Repeat("r", 61) + `": 65 characters, over the 64 clients accept; rename it to at most 60 characters ("rename": {"read_file": "` + strings.Repeat("r", 60) + `"})`},
		},
		{
			name: "a name over 64 characters is refused at load, with the fix named",
			file: `{"aggregate": true, "mcpServers": {"github": {"command": "x", "tools": {"allow": ["search_*", "list_pull_request_review_comments_for_the_authenticated_user_x"]}}}}`,
			want: []string{`servers.json: server "github": field "tools.allow": the tool "list_pull_request_review_comments_for_the_authenticated_user_x" of server "github" would be exposed as "github__list_pull_request_review_comments_for_the_authenticated_user_x", which is 70 characters, over the 64 clients accept: add "rename": {"list_pull_request_review_comments_for_the_authenticated_user_x": "list_pull_request_review_comments_for_the_authenticated"} to the server "github"`},
		},
		{name: "rename to characters clients refuse", file: `{"mcpServers": {"fs": {"command": "x", "rename": {"a": "b.c"}}}}`, want: []string{`server "fs": field "rename": "a" is renamed to "b.c", which has characters clients refuse`}},
		{name: "two renames to one name", file: `{"mcpServers": {"fs": {"command": "x", "rename": {"a": "x", "b": "x"}}}}`, want: []string{`server "fs": field "rename": "a" and "b" are both renamed to "x"`}},
		{name: "rename of the wrong type", file: `{"mcpServers": {"fs": {"command": "x", "rename": ["a", "b"]}}}`, want: []string{`server "fs": field "rename": want an object whose values are strings`}},
		{name: "tools of the wrong type", file: `{"mcpServers": {"fs": {"command": "x", "tools": ["a"]}}}`, want: []string{`server "fs": field "tools": want an object (allow, deny)`}},
		{name: "tools.allow of the wrong type", file: `{"mcpServers": {"fs": {"command": "x", "tools": {"allow": "read_*"}}}}`, want: []string{`server "fs": field "tools.allow": want an array of strings`}},
		{name: "tools field unknown", file: `{"mcpServers": {"fs": {"command": "x", "tools": {"alow": ["x"]}}}}`, want: []string{`server "fs": field "alow": unknown field`}},
		{name: "an empty pattern", file: `{"mcpServers": {"fs": {"command": "x", "tools": {"deny": [""]}}}}`, want: []string{`server "fs": field "tools.deny": an empty pattern matches no tool`}},
		{name: "aggregate of the wrong type", file: `{"aggregate": "yes", "mcpServers": {"a": {"command": "x"}}}`, want: []string{`servers.json: field "aggregate": want true, false or an array of the names of servers in "mcpServers"`}},
		{name: "aggregate of an unknown server", file: `{"aggregate": ["a", "b"], "mcpServers": {"a": {"command": "x"}}}`, want: []string{`servers.json: field "aggregate": its 2nd entry: no server "b" in "mcpServers"`}},
		{name: "aggregate names a server twice", file: `{"aggregate": ["a", "a"], "mcpServers": {"a": {"command": "x"}}}`, want: []string{`servers.json: field "aggregate": its 2nd entry: "a" is listed twice`}},
		{name: "aggregate of disabled servers", file: `{"aggregate": ["off"], "mcpServers": {"a": {"command": "x"}, "off": {"command": "x", "disabled": true}}}`, want: []string{`servers.json: field "aggregate": no enabled server to serve at the aggregate endpoint`}},
		{name: "aggregate of no server", file: `{"aggregate": [], "mcpServers": {"a": {"command": "x"}}}`, want: []string{`servers.json: field "aggregate": no enabled server`}},
		{name: "a server name that does not split", file: `{"aggregate": true, "mcpServers": {"a__b": {"command": "x"}, "c_": {"command": "x"}}}`,
			want: []string{`servers.json: server "a__b": not a server name for the aggregate: it holds "__"`, `servers.json: server "c_": not a server name for the aggregate: it ends with "_"`}},
		{name: "with --aggregate", args: []string{"--aggregate"}, file: `{"mcpServers": {"a__b": {"command": "x"}}}`, want: []string{`server "a__b": not a server name for the aggregate`}},
		{name: "server names that differ in case", file: `{"aggregate": ["Git", "git"], "mcpServers": {"Git": {"command": "x"}, "git": {"command": "x"}}}`, want: []string{`server "git": differs from the server "Git" only in case`}},
		{
			name: "every error at once",
			file: `{"mcpServers": {"a": {"command": "", "mode": "bogus"}, "b": {"command": "x", "maxSessions": -1}, "c": {"command": "x"}}}`,
			want: []string{`server "a": field "command"`, `server "a": field "mode"`, `server "b": field "maxSessions"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Load(append([]string{"--config", "servers.json"}, tt.args...), environ, io.Discard)
			if err != nil {
				t.Fatalf("flags: %v", err)
			}
			specs, err := ParseServers("servers.json", []byte(tt.file), &cfg, environ)
			if err == nil {
				t.Fatalf("accepted, want an error; servers: %+v", specs)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not say %q:\n%v", w, err)
				}
			}
			for _, nw := range tt.notWant {
				if strings.Contains(err.Error(), nw) {
					t.Errorf("the error shows the value %q:\n%v", nw, err)
				}
			}
		})
	}
	broken := map[string]bool{}
	for _, tt := range tests {
		broken[tt.rule] = true
	}
	for _, r := range serverRules {
		if !broken[r.name] {
			t.Errorf("server rule %q has no case that breaks it", r.name)
		}
	}
}

// TestServersFileResolved checks what a valid file resolves to: the
// flags give the defaults, single values replace them, env adds to
// --env, and a token or a variable given by envFrom reaches no child by
// inheritance.
func TestServersFileResolved(t *testing.T) {
	environ := []string{
		"PATH=/usr/bin",
		"OTHER=visible",
		"HIDDEN=by-hide-env",
		"HOST_API_KEY=k3y",
		"A_TOKEN=aaaaaaaaaaaaaaaaaaaaaaaa",
		"GLOBAL_TOKEN=gggggggggggggggggggggggg",
		"MCP_BRIDGE_QUEUE_LIMIT=77",
	}
	args := []string{"--config", "servers.json", "--env", "SHARED=flag", "--env", "FLAGONLY=1",
		"--prespawn", "2", "--hide-env", "HIDDEN", "--token-env", "GLOBAL_TOKEN", "--tool-deny", "*=rm"}
	cfg, err := Load(args, environ, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	file := `{
	  "globalShortcut": "ignored: a client's whole config file may be given",
	  "mcpServers": {
	    "a": {"type": "stdio", "command": "srv", "args": ["--x", "y z"], "cwd": "` + t.TempDir() + `",
	          "env": {"PLAIN": "literal", "SHARED": "server"}, "envFrom": {"API_KEY": "HOST_API_KEY"},
	          "mode": "shared", "idleTimeout": "5m", "maxSessions": 3,
	          "tokenEnvs": ["A_TOKEN"], "toolAllow": ["*=echo"], "toolApprove": ["*=*@destructiveHint"], "trusted": true},
	    "b": {"command": "other"},
	    "off": {"disabled": true}
	  }
	}`
	specs, err := ParseServers("servers.json", []byte(file), &cfg, environ)
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 || specs[0].Name != "a" || specs[1].Name != "b" {
		t.Fatalf("servers: %+v, want a and b (off is disabled)", specs)
	}
	a, b := specs[0], specs[1]
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"a: command", a.Command, []string{"srv", "--x", "y z"}},
		{"a: mode", a.Mode, "shared"},
		{"a: prespawn (--prespawn is for per-session servers)", a.Prespawn, 0},
		{"a: idle timeout", a.IdleTimeout, 5 * time.Minute},
		{"a: max sessions", a.MaxSessions, 3},
		{"a: token variables", a.TokenEnvs, []string{"A_TOKEN"}},
		{"a: tool allow", a.ToolAllow, []string{"*=echo"}},
		{"a: tool approve", a.ToolApprove, []string{"*=*@destructiveHint"}},
		{"a: trusted", a.Trusted, true},
		{"b: trusted", b.Trusted, false},
		{"b: command", b.Command, []string{"other"}},
		{"b: mode", b.Mode, "per-session"},
		{"b: prespawn", b.Prespawn, 2},
		{"b: idle timeout", b.IdleTimeout, 30 * time.Minute},
		{"b: max sessions", b.MaxSessions, 1000},
	} {
		if !equalJSON(c.got, c.want) {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
	envOf := func(s ServerSpec) map[string][]string {
		m := map[string][]string{}
		for _, kv := range s.Env {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = append(m[k], v)
		}
		return m
	}
	for _, c := range []struct {
		spec ServerSpec
		want map[string]string // "" for absent
	}{
		{a, map[string]string{"PATH": "/usr/bin", "OTHER": "visible", "FLAGONLY": "1", "SHARED": "server", "PLAIN": "literal", "API_KEY": "k3y",
			"HOST_API_KEY": "", "A_TOKEN": "", "GLOBAL_TOKEN": "", "HIDDEN": "", "MCP_BRIDGE_QUEUE_LIMIT": ""}},
		{b, map[string]string{"PATH": "/usr/bin", "OTHER": "visible", "FLAGONLY": "1", "SHARED": "flag",
			"PLAIN": "", "API_KEY": "", "HOST_API_KEY": "", "A_TOKEN": "", "GLOBAL_TOKEN": "", "HIDDEN": ""}},
	} {
		got := envOf(c.spec)
		for k, want := range c.want {
			switch v := got[k]; {
			case want == "" && v != nil:
				t.Errorf("server %s: the child sees %s", c.spec.Name, k)
			case want != "" && !slices.Equal(v, []string{want}):
				t.Errorf("server %s: the child's %s: %q, want exactly [%q]", c.spec.Name, k, v, want)
			}
		}
	}
	if a.Fingerprint() == b.Fingerprint() {
		t.Error("two different servers have the same fingerprint")
	}
	again, err := ParseServers("servers.json", []byte(file), &cfg, environ)
	if err != nil || again[0].Fingerprint() != a.Fingerprint() {
		t.Errorf("the same file resolves to another fingerprint (%v)", err)
	}
}

func equalJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// TestServersFileAggregate: which servers the aggregate endpoint serves
// (the file's "aggregate", else --aggregate), and each one's part in it;
// a change of a server's names there leaves its fingerprint, so a reload
// applies it without restarting the server.
func TestServersFileAggregate(t *testing.T) {
	environ := []string{"PATH=/usr/bin"}
	servers := `"mcpServers": {
	  "fs": {"command": "x", "rename": {"read_multiple_files": "read_many"}, "tools": {"allow": ["read_*"], "deny": ["*secret*"]}},
	  "git": {"command": "y"},
	  "not__aggregated": {"command": "z"},
	  "off": {"command": "z", "disabled": true}}`
	for _, tt := range []struct {
		name      string
		args      []string
		aggregate string // the file's "aggregate" member, "" for none
		want      []string
	}{
		{"off by default", nil, "", nil},
		{"a list", nil, `"aggregate": ["fs", "git", "off"],`, []string{"fs", "git"}},
		{"the file says no to the flag", []string{"--aggregate"}, `"aggregate": false,`, nil},
		{"the file's list wins over the flag", []string{"--aggregate"}, `"aggregate": ["git"],`, []string{"git"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Load(append([]string{"--config", "servers.json"}, tt.args...), environ, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			specs, err := ParseServers("servers.json", []byte(`{`+tt.aggregate+servers+`}`), &cfg, environ)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range AggregateMembers(specs) {
				got = append(got, m.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("aggregated %v, want %v", got, tt.want)
			}
			for _, s := range specs {
				if s.Name == "fs" && s.Aggregate != nil {
					want := `{"Name":"fs","Rename":{"read_multiple_files":"read_many"},"Allow":["read_*"],"Deny":["*secret*"]}`
					if b, _ := json.Marshal(s.Aggregate); string(b) != want {
						t.Errorf("fs's part: %s, want %s", b, want)
					}
				}
			}
		})
	}
	cfg, err := Load([]string{"--config", "servers.json"}, environ, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	before, err := ParseServers("servers.json", []byte(`{"aggregate": true, "mcpServers": {"fs": {"command": "x"}}}`), &cfg, environ)
	if err != nil {
		t.Fatal(err)
	}
	after, err := ParseServers("servers.json", []byte(`{"aggregate": true, "mcpServers": {"fs": {"command": "x", "rename": {"a": "b"}, "tools": {"deny": ["c"]}}}}`), &cfg, environ)
	if err != nil {
		t.Fatal(err)
	}
	if before[0].Fingerprint() != after[0].Fingerprint() {
		t.Error("a change of the names the aggregate exposes changes the server's fingerprint")
	}
	if _, err := aggregate.NewNames(AggregateMembers(after)); err != nil {
		t.Errorf("the members do not make names: %v", err)
	}
}
