package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/aggregate"
	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
	"github.com/mcp-bridge/mcp-bridge/stdio"
)

// TestDefaults pins the defaults docs/options.md documents, and checks that each
// is the default of the package that interprets the setting.
func TestDefaults(t *testing.T) {
	got := Defaults()
	want := Config{
		Host:                     ptr("127.0.0.1"),
		Port:                     ptr(8080),
		Path:                     ptr("/mcp"),
		ResponseMode:             ptr("auto"),
		Mode:                     ptr("per-session"),
		SpawnQueue:               ptr(64),
		SSEDelay:                 ptr(50 * time.Millisecond),
		MaxBodyBytes:             ptr[int64](4 << 20),
		MaxMessageBytes:          ptr(16 << 20),
		MaxSessions:              ptr(1000),
		IdleTimeout:              ptr(30 * time.Minute),
		UnreachableTimeout:       ptr(time.Minute),
		RequestTimeout:           ptr(5 * time.Minute),
		InitTimeout:              ptr(30 * time.Second),
		QueueLimit:               ptr(1024),
		EventLogEvents:           ptr(4096),
		EventLogBytes:            ptr(4 << 20),
		StopGrace:                ptr(2 * time.Second),
		Containment:              ptr("auto"),
		ShutdownTimeout:          ptr(10 * time.Second),
		ReadTimeout:              ptr(30 * time.Second),
		KeepAlive:                ptr(15 * time.Second),
		LegacySSE:                ptr(true),
		Web:                      ptr(true),
		Modern:                   ptr(true),
		ChildProtocol:            ptr("auto"),
		InputTTL:                 ptr(2 * time.Minute),
		MaxParked:                ptr(16),
		MaxStreamsPerPrincipal:   ptr(128),
		ApprovalTimeout:          ptr(2 * time.Minute),
		MaxApprovals:             ptr(1000),
		MaxApprovalsPerPrincipal: ptr(20),
		SandboxEnforce:           ptr("required"),
		LogFormat:                ptr("text"),
		LogLevel:                 ptr("info"),
		AggregateListTimeout:     ptr(3 * time.Second),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("defaults:\n got %s\nwant %s", show(got), show(want))
	}
	for _, tt := range []struct {
		name      string
		cli, pkgs any
	}{
		{"Path", *got.Path, httpapi.DefaultPath},
		{"AggregateListTimeout", *got.AggregateListTimeout, aggregate.DefaultListTimeout},
		{"ResponseMode", *got.ResponseMode, httpapi.ModeAuto},
		{"SSEDelay", *got.SSEDelay, httpapi.DefaultSSEDelay},
		{"MaxBodyBytes", *got.MaxBodyBytes, int64(httpapi.DefaultMaxBodyBytes)},
		{"KeepAlive", *got.KeepAlive, httpapi.DefaultKeepAlive},
		{"ReadTimeout", *got.ReadTimeout, httpapi.DefaultReadTimeout},
		{"MaxMessageBytes", *got.MaxMessageBytes, stdio.DefaultMaxLineBytes},
		{"StopGrace", *got.StopGrace, stdio.DefaultStopGrace},
		{"Containment", *got.Containment, string(stdio.ContainAuto)},
		{"Mode", *got.Mode, bridge.ModePerSession},
		{"SpawnQueue", *got.SpawnQueue, bridge.DefaultSpawnQueue},
		{"MaxSessions", *got.MaxSessions, bridge.DefaultMaxSessions},
		{"IdleTimeout", *got.IdleTimeout, bridge.DefaultIdleTimeout},
		{"RequestTimeout", *got.RequestTimeout, bridge.DefaultRequestTimeout},
		{"InitTimeout", *got.InitTimeout, bridge.DefaultInitTimeout},
		{"QueueLimit", *got.QueueLimit, bridge.DefaultQueueLimit},
		{"EventLogEvents", *got.EventLogEvents, bridge.DefaultEventLogEvents},
		{"EventLogBytes", *got.EventLogBytes, bridge.DefaultEventLogBytes},
	} {
		if tt.cli != tt.pkgs {
			t.Errorf("%s: the command's default %v differs from the package default %v", tt.name, tt.cli, tt.pkgs)
		}
	}
}

// TestDefaultsShape holds Config to its rule: a pointer field has a
// default (Defaults sets it), a plain field's default is its zero value,
// and the defaults keep every rule.
func TestDefaultsShape(t *testing.T) {
	def := reflect.ValueOf(Defaults())
	for i := range def.NumField() {
		f, v := def.Type().Field(i), def.Field(i)
		switch {
		case f.Type.Kind() == reflect.Pointer && v.IsNil():
			t.Errorf("%s is a pointer without a default: give it one in Defaults, or make it a plain value whose zero is the default", f.Name)
		case f.Type.Kind() != reflect.Pointer && !v.IsZero():
			t.Errorf("%s is a plain value with a default other than its zero value: make it a pointer", f.Name)
		}
	}
	for _, c := range []Config{{}, Defaults()} {
		if err := c.Validate(); err != nil {
			t.Errorf("the defaults are invalid: %v", err)
		}
	}
}

// show is c's settings that are given, for a test's message.
func show(c Config) string {
	var b strings.Builder
	v := reflect.ValueOf(c)
	for i := range v.NumField() {
		if f := v.Field(i); !f.IsZero() {
			fmt.Fprintf(&b, "%s:%v ", v.Type().Field(i).Name, reflect.Indirect(f))
		}
	}
	return b.String()
}

// TestLoad: what the environment and the flags give, the flags winning;
// what neither gives stays nil, the default.
func TestLoad(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		args []string
		want Config
	}{
		{name: "nothing given", want: Config{}},
		{name: "a flag", args: []string{"--port", "9000"}, want: Config{Port: ptr(9000)}},
		{name: "a variable", env: []string{"MCP_BRIDGE_PORT=9000"}, want: Config{Port: ptr(9000)}},
		{name: "the flag wins", env: []string{"MCP_BRIDGE_PORT=1"}, args: []string{"--port", "0"}, want: Config{Port: ptr(0)}},
		// An env value only validation would refuse is replaced first.
		{name: "the flag wins over an invalid variable", env: []string{"MCP_BRIDGE_RESPONSE_MODE=bogus"}, args: []string{"--response-mode", "sse"}, want: Config{ResponseMode: ptr("sse")}},
		// A list flag replaces the env list rather than appending.
		{name: "a list flag replaces the variable's list", env: []string{"MCP_BRIDGE_ENV=A=1,BAD-NAME=x"}, args: []string{"--env", "B=2", "--env", "C=3"}, want: Config{Env: []string{"B=2", "C=3"}}},
		{name: "a duration", env: []string{"MCP_BRIDGE_STOP_GRACE=5s"}, args: []string{"--stop-grace", "200ms"}, want: Config{StopGrace: ptr(200 * time.Millisecond)}},
		// An empty variable is one not set, as with caarlos0/env's
		// defaults; an empty flag is given.
		{name: "an empty variable", env: []string{"MCP_BRIDGE_HOST=", "MCP_BRIDGE_PORT="}, want: Config{}},
		{name: "an empty flag", args: []string{"--host="}, want: Config{Host: ptr("")}},
		{name: "a true/false flag", args: []string{"--web=false", "--legacy-sse"}, want: Config{Web: ptr(false), LegacySSE: ptr(true)}},
		{name: "a true/false variable", env: []string{"MCP_BRIDGE_WEB=false"}, want: Config{Web: ptr(false)}},
		{name: "the command after --", args: []string{"--", "srv", "--x"}, want: Config{Command: Argv{"srv", "--x"}}},
		{name: "the command as a variable", env: []string{`MCP_BRIDGE_COMMAND=["srv","a b"]`}, want: Config{Command: Argv{"srv", "a b"}}},
		{name: "unknown variables of the prefix are ignored", env: []string{"MCP_BRIDGE_TOKEN=x"}, want: Config{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Load(tt.args, tt.env, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %s\nwant %s", show(got), show(tt.want))
			}
		})
	}
}

// TestGivenZero: a zero given means what the flag says it means, and is
// never taken for "not given".
func TestGivenZero(t *testing.T) {
	load := func(t *testing.T, args []string, env ...string) Config {
		t.Helper()
		c, err := Load(args, env, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	httpOf := func(t *testing.T, c Config) httpapi.Options {
		t.Helper()
		ho, err := c.HTTP()
		if err != nil {
			t.Fatal(err)
		}
		return ho
	}
	tests := []struct {
		name      string
		args      []string
		got       func(t *testing.T, c Config) any
		wantValue any
	}{
		{name: "port not given", got: func(t *testing.T, c Config) any { return c.Serving().Addr }, wantValue: "127.0.0.1:8080"},
		{name: "--port 0 picks a free port", args: []string{"--port", "0"}, got: func(t *testing.T, c Config) any { return c.Serving().Addr }, wantValue: "127.0.0.1:0"},
		{name: "--host= listens everywhere", args: []string{"--host="}, got: func(t *testing.T, c Config) any { return c.Serving().Addr }, wantValue: ":8080"},
		{name: "request timeout not given", got: func(t *testing.T, c Config) any { return c.Bridge(nil, nil).RequestTimeout }, wantValue: bridge.DefaultRequestTimeout},
		{name: "--request-timeout 0 is off", args: []string{"--request-timeout", "0"}, got: func(t *testing.T, c Config) any { return c.Bridge(nil, nil).RequestTimeout }, wantValue: time.Duration(-1)},
		{name: "--request-timeout 1m", args: []string{"--request-timeout", "1m"}, got: func(t *testing.T, c Config) any { return c.Bridge(nil, nil).RequestTimeout }, wantValue: time.Minute},
		{name: "--init-timeout 0 is off", args: []string{"--init-timeout", "0s"}, got: func(t *testing.T, c Config) any { return c.Bridge(nil, nil).InitTimeout }, wantValue: time.Duration(-1)},
		{name: "--sse-max-duration 0 is off", args: []string{"--sse-max-duration", "0"}, got: func(t *testing.T, c Config) any { return httpOf(t, c).SSEMaxDuration }, wantValue: time.Duration(0)},
		{name: "web not given", got: func(t *testing.T, c Config) any { return httpOf(t, c).Web }, wantValue: true},
		{name: "--web=false", args: []string{"--web=false"}, got: func(t *testing.T, c Config) any { return httpOf(t, c).Web }, wantValue: false},
		{name: "legacy SSE not given", got: func(t *testing.T, c Config) any { return httpOf(t, c).DisableLegacySSE }, wantValue: false},
		{name: "--legacy-sse=false", args: []string{"--legacy-sse=false"}, got: func(t *testing.T, c Config) any { return httpOf(t, c).DisableLegacySSE }, wantValue: true},
		{name: "--max-children 0 is max-sessions + prespawn", args: []string{"--max-children", "0"}, got: func(t *testing.T, c Config) any { return c.Bridge(nil, nil).MaxChildren }, wantValue: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.got(t, load(t, tt.args)); got != tt.wantValue {
				t.Errorf("got %v (%T), want %v (%T)", got, got, tt.wantValue, tt.wantValue)
			}
		})
	}
	// A zero the flag does not allow is refused, not taken for the default.
	for _, args := range [][]string{{"--max-sessions", "0"}, {"--path="}, {"--mode="}, {"--stop-grace", "0"}, {"--spawn-queue", "0"}, {"--log-level="}} {
		flagName, _, _ := strings.Cut(args[0], "=")
		if _, err := Load(args, nil, io.Discard); err == nil || !strings.Contains(err.Error(), "invalid "+flagName+" / ") {
			t.Errorf("%q: err %v, want it refused", args, err)
		}
	}
}

// TestLoadErrors: every error names the flag and its variable and never
// the value; --help and --version are told apart.
func TestLoadErrors(t *testing.T) {
	const secret = "sEcReT_t0k3n"
	tests := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"a variable that does not parse", []string{"MCP_BRIDGE_PORT=" + secret}, nil, "invalid --port / MCP_BRIDGE_PORT: cannot parse it as an integer"},
		{"a flag that does not parse", nil, []string{"--idle-timeout", secret}, "invalid --idle-timeout / MCP_BRIDGE_IDLE_TIMEOUT: cannot parse it as a duration (like 30s or 5m)"},
		{"a true/false flag that does not parse", nil, []string{"--web=" + secret}, "invalid --web / MCP_BRIDGE_WEB: cannot parse it as true or false"},
		{"a true/false variable that does not parse", []string{"MCP_BRIDGE_LEGACY_SSE=" + secret}, nil, "invalid --legacy-sse / MCP_BRIDGE_LEGACY_SSE: cannot parse it as true or false"},
		{"a number", nil, []string{"--rate-limit", secret}, "invalid --rate-limit / MCP_BRIDGE_RATE_LIMIT: cannot parse it as a number"},
		{"the command", []string{"MCP_BRIDGE_COMMAND=" + secret}, nil, "invalid command (after --) / MCP_BRIDGE_COMMAND: cannot parse it as a JSON array of strings"},
		{"an unknown flag", nil, []string{"--nope=" + secret}, "unknown flag --nope; run mcp-bridge --help for the flags"},
		{"an unknown flag that is no name", nil, []string{"--" + secret}, "unknown flag; run mcp-bridge --help for the flags"},
		{"a flag without its value", nil, []string{"--port"}, "--port needs a value; run mcp-bridge --help for the flags"},
		{"a flag without its value, one dash", nil, []string{"-port"}, "-port needs a value; run mcp-bridge --help for the flags"},
		// The hints a person needs: the flag as they wrote it, and the one
		// they most likely meant.
		{"a one-letter flag", nil, []string{"-p", "9000"}, "unknown flag -p (did you mean --port?); run mcp-bridge --help"},
		{"a one-letter flag with =", nil, []string{"-p=9000"}, "unknown flag -p (did you mean --port?)"},
		{"-c", nil, []string{"-c", "servers.json"}, "unknown flag -c (did you mean --config?)"},
		{"-v", nil, []string{"-v"}, "unknown flag -v (did you mean --version?)"},
		{"--token", nil, []string{"--token", secret}, "unknown flag --token (did you mean --token-env?); run mcp-bridge --help"},
		{"a typo", nil, []string{"--tokne-env", "X"}, "unknown flag --tokne-env (did you mean --token-env?)"},
		{"a word after --", nil, []string{"--", "-p"}, ""},
		{"a word before --", nil, []string{"npx", secret}, `"npx" is not a flag: the MCP server's command goes after --`},
		{"a value after a true/false flag", nil, []string{"--web", secret}, "--web takes no separate value: a true/false flag takes it after =, as in --web=false"},
		{"a rule", nil, []string{"--token-env", secret + "-x"}, "invalid --token-env / MCP_BRIDGE_TOKEN_ENVS: not a valid variable name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.args, tt.env, io.Discard)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("err %v, want none", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error shows the value: %v", err)
			}
		})
	}

	var usage strings.Builder
	if _, err := Load([]string{"--help"}, []string{"MCP_BRIDGE_ENV=KEY=" + secret}, &usage); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help: err %v, want flag.ErrHelp", err)
	}
	if out := usage.String(); !strings.Contains(out, "Usage: mcp-bridge") || strings.Contains(out, secret) {
		t.Errorf("--help printed %q: want the usage, without the environment's values", out)
	}
	if _, err := Load([]string{"--version"}, nil, io.Discard); !errors.Is(err, ErrVersion) {
		t.Errorf("--version: err %v, want ErrVersion", err)
	}
}

// TestGroups: every flag belongs to one of Groups, so that --help and
// docs/options.md can be grouped by topic.
func TestGroups(t *testing.T) {
	known := map[string]bool{}
	for _, g := range Groups {
		known[g.Name] = true
	}
	used := map[string]bool{}
	ct := reflect.TypeFor[Config]()
	for i := range ct.NumField() {
		f := ct.Field(i)
		g := f.Tag.Get("group")
		if !known[g] {
			t.Errorf("%s: group %q is not one of Groups", f.Name, g)
		}
		used[g] = true
	}
	for g := range known {
		if !used[g] {
			t.Errorf("group %q has no setting", g)
		}
	}
}

// update rewrites the files the tests generate (docs/options.md).
var update = flag.Bool("update", false, "rewrite docs/options.md from the flag definitions")

// TestOptionsDoc holds docs/options.md to the flag definitions it is
// generated from: a row for every flag, naming its variable, its default
// (the one the bridge has, Defaults) and its help. It fails when the file
// is stale; -update rewrites it.
func TestOptionsDoc(t *testing.T) {
	const file = "../../docs/options.md"
	var b strings.Builder
	WriteOptionsDoc(&b)
	if *update {
		if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != b.String() {
		t.Fatalf("%s is stale: run go test ./internal/config -run TestOptionsDoc -update", file)
	}
	// Each flag's row, and its default as the flag parses it.
	def := Defaults()
	ct := reflect.TypeFor[Config]()
	for i := range ct.NumField() {
		f := ct.Field(i)
		name := f.Tag.Get("flag")
		if name == "" || name == "-" {
			continue
		}
		row := regexp.MustCompile("(?m)^\\| `--" + regexp.QuoteMeta(name) + "[^`]*` \\| `" + EnvPrefix + f.Tag.Get("env") + "` \\| ([^|]*) \\|")
		m := row.FindStringSubmatch(string(got))
		if m == nil {
			t.Errorf("docs/options.md has no row for --%s", name)
			continue
		}
		lit, ok := strings.CutPrefix(strings.TrimSpace(m[1]), "`")
		if !ok {
			continue // none
		}
		var fromDoc Config
		fs := flag.NewFlagSet("", flag.ContinueOnError)
		bindFlags(fs, &fromDoc, nil)
		if err := fs.Set(name, strings.TrimSuffix(lit, "`")); err != nil {
			t.Errorf("docs/options.md: --%s default %s does not parse: %v", name, m[1], err)
			continue
		}
		got := reflect.ValueOf(fromDoc.withDefaults()).Field(i)
		if want := reflect.ValueOf(def).Field(i); !reflect.DeepEqual(got.Interface(), want.Interface()) {
			t.Errorf("docs/options.md: --%s default %s, but the bridge's is %v", name, m[1], reflect.Indirect(want))
		}
	}
}

// TestDescribe names each setting as the user sets it.
func TestDescribe(t *testing.T) {
	for _, tt := range []struct{ field, want string }{
		{"Port", "--port / MCP_BRIDGE_PORT"},
		{"TokenEnvs", "--token-env / MCP_BRIDGE_TOKEN_ENVS"},
		{"Command", "command (after --) / MCP_BRIDGE_COMMAND"},
		{"NoSuchField", "NoSuchField"},
	} {
		if got := describe(tt.field); got != tt.want {
			t.Errorf("describe(%s) = %q, want %q", tt.field, got, tt.want)
		}
	}
	// Every flag's variable is named for it.
	ct := reflect.TypeFor[Config]()
	for i := range ct.NumField() {
		f := ct.Field(i)
		if got := describe(f.Name); !strings.HasSuffix(got, EnvPrefix+f.Tag.Get("env")) || slices.Contains([]string{"", "-"}, f.Tag.Get("env")) {
			t.Errorf("describe(%s) = %q", f.Name, got)
		}
	}
}

// TestHelp: --help opens with the usage and two examples, then lists every
// flag once, GNU-style, under its group's title, with its variable; the
// common flags come first, and every value has a placeholder that says
// what it is (FILE, NAME, URL, SUBJECT=GLOB), never the flag package's
// "string" or "value".
func TestHelp(t *testing.T) {
	var b strings.Builder
	PrintUsage(&b)
	out := b.String()
	_, examples, _ := strings.Cut(out, "Examples:\n")
	examples, _, _ = strings.Cut(examples, "\n\n")
	if !strings.HasPrefix(out, "Usage: mcp-bridge") || strings.Count(examples, "mcp-bridge ") != 2 {
		t.Fatalf("--help does not open with the usage and two examples:\n%s", out)
	}
	group := "" // the title the flag's line comes under
	seen := map[string]string{}
	var order []string // the flags, as listed
	titles := map[string]string{}
	for _, g := range Groups {
		titles[g.Title+":"] = g.Name
	}
	synopsis := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if g, ok := titles[line]; ok {
			group = g
		}
		if name, ok := strings.CutPrefix(line, "  --"); ok {
			name, meta, _ := strings.Cut(name, " ")
			if _, dup := seen[name]; dup {
				t.Errorf("--%s is listed twice", name)
			}
			seen[name] = group
			order = append(order, name)
			synopsis[name] = meta
			if meta != "" && (meta != strings.ToUpper(meta) || slices.Contains([]string{"STRING", "VALUE", "INT", "INT64", "FLOAT"}, meta)) {
				t.Errorf("--%s %s: want a placeholder that says what the value is", name, meta)
			}
		}
	}
	if !slices.Equal(order[:len(CommonFlags)], CommonFlags) {
		t.Errorf("the flags open with %q, want the common ones %q", order[:len(CommonFlags)], CommonFlags)
	}
	for name, want := range map[string]string{"config": "FILE", "token-env": "NAME", "jwks-url": "URL", "tool-allow": "SUBJECT=GLOB", "port": "N", "web": "", "env": "K=V"} {
		if synopsis[name] != want {
			t.Errorf("--%s %s, want --%s %s", name, synopsis[name], name, want)
		}
	}
	ct := reflect.TypeFor[Config]()
	for i := range ct.NumField() {
		f := ct.Field(i)
		name := f.Tag.Get("flag")
		if name == "" || name == "-" {
			continue
		}
		if got := seen[name]; got != f.Tag.Get("group") {
			t.Errorf("--%s is under %q, want %q", name, got, f.Tag.Get("group"))
		}
		if !strings.Contains(out, EnvPrefix+f.Tag.Get("env")+")") {
			t.Errorf("--%s: its variable %s is not named", name, EnvPrefix+f.Tag.Get("env"))
		}
	}
	if _, ok := seen["version"]; !ok {
		t.Error("--version is not listed")
	}
}
