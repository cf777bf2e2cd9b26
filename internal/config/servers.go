package config

// --config: several MCP servers from one file, in the "mcpServers" format
// MCP clients already use, each served at /servers/NAME/mcp
// (docs/several-servers.md). This file reads and checks the file, resolves each
// server against the flags, and turns it into the settings of its bridge
// and endpoint (Mount); httpapi.Mounts serves them, and cmd/mcp-bridge
// swaps them on SIGHUP.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-bridge/mcp-bridge/aggregate"
	"github.com/mcp-bridge/mcp-bridge/approval"
	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
	"github.com/mcp-bridge/mcp-bridge/stdio"
)

// serversFile is the --config file. Keys other than mcpServers are
// ignored, so a client's whole config file (claude_desktop_config.json)
// can be given as it is.
type serversFile struct {
	MCPServers map[string]json.RawMessage `json:"mcpServers"`
	// Aggregate is which servers the aggregate endpoint serves: true,
	// false, or a list of their names (aggregate.go).
	Aggregate json.RawMessage `json:"aggregate"`
}

// serverEntry is one server of the file: the fields MCP clients write
// (type and disabled as some of them do), then the bridge's per-server
// options. Single values replace the flag of the same name; lists and
// objects add to it. An unknown field is an error, so a misspelt option
// is not silently ignored.
//
// The registry API (serversdoc.go) takes, checks and shows every field
// here with no change of its own: a field added (a sandbox, a pin of the
// command's digest) is accepted by its type, checked by its serverRules
// entry, and shown by GET, so a field that holds a secret must be kept
// out of Entry.View as env is.
type serverEntry struct {
	Type     string            `json:"type"`
	URL      string            `json:"url"`
	Command  string            `json:"command"`
	Args     []string          `json:"args"`
	Env      map[string]string `json:"env"`     // literal values; added to --env
	EnvFrom  map[string]string `json:"envFrom"` // child variable -> the bridge's variable holding its value
	Cwd      string            `json:"cwd"`
	Disabled bool              `json:"disabled"`

	Mode        string   `json:"mode"`
	Prespawn    *int     `json:"prespawn"`
	IdleTimeout string   `json:"idleTimeout"`
	MaxSessions *int     `json:"maxSessions"`
	TokenEnvs   []string `json:"tokenEnvs"`   // added to --token-env
	ToolAllow   []string `json:"toolAllow"`   // added to --tool-allow
	ToolDeny    []string `json:"toolDeny"`    // added to --tool-deny
	ToolApprove []string `json:"toolApprove"` // added to --tool-approve
	// Trusted: the server's tool annotations are believed, so that an
	// approval rule's hint can spare one of its tools.
	Trusted bool `json:"trusted"`

	Sandbox *sandboxEntry `json:"sandbox"` // the --sandbox* flags (sandbox.go)
	SHA256  string        `json:"sha256"`  // replaces --pin-sha256

	// Its part in the aggregate endpoint (aggregate.go).
	Rename map[string]string `json:"rename"` // its tool or prompt name -> the name exposed after SERVER__
	Tools  *toolsEntry       `json:"tools"`  // which of its tools the aggregate exposes
}

// ServerSpec is one server of the file resolved against the flags and
// the bridge's environment: everything that reaches its bridge and its
// endpoint. Two equal specs serve alike, so a reload that leaves a
// server's spec equal leaves the server alone.
type ServerSpec struct {
	Name        string
	Command     []string
	Dir         string
	Env         []string // the child's whole environment
	Mode        string
	Prespawn    int
	IdleTimeout time.Duration
	MaxSessions int
	TokenEnvs   []string // accepted besides --token-env
	ToolAllow   []string // after --tool-allow
	ToolDeny    []string // after --tool-deny
	ToolApprove []string // after --tool-approve
	Trusted     bool
	// Sandbox is the server's sandbox and pin, nil for none.
	Sandbox *stdio.Sandbox
	// Aggregate is the server's part in the aggregate endpoint, nil when
	// it has none. Not in the Fingerprint: a change of the names it
	// exposes there is applied without restarting the server.
	Aggregate *aggregate.Member `json:"-"`
}

// Fingerprint stands for the whole spec. It is a digest: the spec holds
// the child's environment, secrets included.
func (s ServerSpec) Fingerprint() string {
	b, _ := json.Marshal(s)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Problem is one thing wrong with a server of the --config file, or with
// an entry sent to the registry API: the server and the field at fault
// (either may be empty, for the file as a whole) and why. It never holds
// a value of the file: a secret pasted in the wrong place must not come
// back in a log, a terminal or an HTTP answer.
type Problem struct {
	Server  string `json:"server,omitempty"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// String says the problem as the file's errors do, without the file.
func (p Problem) String() string {
	switch {
	case p.Server == "":
		return p.Message
	case p.Field == "":
		return fmt.Sprintf("server %q: %s", p.Server, p.Message)
	}
	return fmt.Sprintf("server %q: field %q: %s", p.Server, p.Field, p.Message)
}

// ServersError is everything wrong with a --config file, each problem
// naming the file, the server and the field, never a value.
type ServersError struct {
	File     string
	Problems []Problem
}

func (e *ServersError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = e.File + ": " + p.String()
	}
	return strings.Join(lines, "\n")
}

// fileErrors collects what is wrong with the file.
type fileErrors struct {
	file     string
	problems []Problem
}

// addField reports a problem of a top-level field of the file.
func (fe *fileErrors) addField(field, format string, a ...any) {
	fe.problems = append(fe.problems, Problem{Message: fmt.Sprintf("field %q: %s", field, fmt.Sprintf(format, a...))})
}

func (fe *fileErrors) add(server, field, format string, a ...any) {
	fe.problems = append(fe.problems, Problem{Server: server, Field: field, Message: fmt.Sprintf(format, a...)})
}

// err is the problems as an error; nil when there are none.
func (fe *fileErrors) err() error {
	if len(fe.problems) == 0 {
		return nil
	}
	return &ServersError{File: fe.file, Problems: fe.problems}
}

// LoadServers reads the --config file and resolves its servers
// (ParseServers). A file that cannot be read is named when its name is
// a file's (fileNamed): else it may be a secret given in its place.
func (c *Config) LoadServers(environ []string) ([]ServerSpec, error) {
	data, err := ReadServersFile(c)
	if err != nil {
		return nil, err
	}
	return ParseServers(c.ConfigFile, data, c, environ)
}

// ReadServersFile reads the --config file, or says it cannot, naming
// the file when its name is a file's (fileNamed).
func ReadServersFile(c *Config) ([]byte, error) {
	data, err := os.ReadFile(c.ConfigFile)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read %s: %w", describe("ConfigFile"), fileNamed(c.ConfigFile), pathless(err))
	}
	return data, nil
}

// ParseServers reads the file's servers, checks them and resolves them
// against c (the flags, which give every default) and the bridge's
// environment (environ, in its order). Disabled servers are left out.
// file names the file in errors.
func ParseServers(file string, data []byte, c *Config, environ []string) ([]ServerSpec, error) {
	fe := &fileErrors{file: file}
	f, entries := decodeServers(fe, data)
	if entries == nil {
		return nil, fe.err()
	}
	aggregated := aggregateSet(fe, f, c.Aggregate, entries)
	r := c.withDefaults()
	sc := serverContext{cfg: &r, vars: envMap(environ), tokenVars: map[string]bool{}}
	// A token must never reach a child, and a variable named by envFrom
	// reaches only the servers that name it: both are hidden from every
	// child's inherited environment.
	fromVars := map[string]bool{}
	for _, n := range r.secretEnvs() {
		sc.tokenVars[n] = true
	}
	for _, e := range entries {
		for _, n := range e.TokenEnvs {
			sc.tokenVars[n] = true
		}
		for _, n := range e.EnvFrom {
			fromVars[n] = true
		}
	}
	flagHidden := r.hiddenFromChild()
	hidden := func(name string) bool { return flagHidden(name) || sc.tokenVars[name] || fromVars[name] }

	var specs []ServerSpec
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		e := entries[name]
		s := resolveServer(name, e, &r)
		if checkServer(fe, sc, name, e, s) {
			s.Env = stdio.Environ(environ, hidden, childEnv(r.Env, e, sc.vars))
			sb, err := r.SandboxFor(name, s.Dir, e.Sandbox, e.SHA256, environ)
			if err != nil {
				fe.add(name, "sandbox", "%v", err)
				continue
			}
			s.Sandbox = sb
			if aggregated[name] {
				s.Aggregate = aggregateMember(name, e)
			}
			specs = append(specs, s)
		}
	}
	checkAggregateNames(fe, aggregated)
	if err := fe.err(); err != nil {
		return nil, err
	}
	return specs, nil
}

// decodeServers is the file, and its enabled servers by name; nil when
// the file is not an mcpServers file at all. A server that cannot be
// decoded is reported to fe and left out.
func decodeServers(fe *fileErrors, data []byte) (serversFile, map[string]serverEntry) {
	var f serversFile
	if err := json.Unmarshal(data, &f); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			line, col := position(data, se.Offset)
			fe.add("", "", "not valid JSON (line %d, column %d)", line, col)
		case errors.As(err, &te):
			fe.add("", "", `"mcpServers" must be an object of servers`)
		default:
			fe.add("", "", "not valid JSON")
		}
		return f, nil
	}
	if f.MCPServers == nil {
		fe.add("", "", `no "mcpServers" object`)
		return f, nil
	}
	entries := map[string]serverEntry{}
	for _, name := range slices.Sorted(maps.Keys(f.MCPServers)) {
		if !httpapi.ValidServerName(name) {
			fe.add("", "", "%s: %s", serverNameTold(name), ServerNameRule)
			continue
		}
		var e serverEntry
		dec := json.NewDecoder(bytes.NewReader(f.MCPServers[name]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			field, msg := decodeError(err)
			fe.add(name, field, "%s", msg)
			continue
		}
		if !e.Disabled {
			entries[name] = e
		}
	}
	return f, entries
}

// resolveServer is server name of the file resolved against the flags
// (c, defaults applied): each single value the file gives replaces its
// flag. It checks nothing (checkServer does); Env is set by ParseServers.
func resolveServer(name string, e serverEntry, c *Config) ServerSpec {
	s := ServerSpec{
		Name:        name,
		Command:     append([]string{e.Command}, e.Args...),
		Dir:         cmpOr(e.Cwd, c.Dir),
		Mode:        cmpOr(e.Mode, *c.Mode),
		Prespawn:    c.Prespawn,
		IdleTimeout: *c.IdleTimeout,
		MaxSessions: *c.MaxSessions,
		TokenEnvs:   uniq(nil, e.TokenEnvs),
		ToolAllow:   e.ToolAllow,
		ToolDeny:    e.ToolDeny,
		ToolApprove: e.ToolApprove,
		Trusted:     e.Trusted,
	}
	switch {
	case e.Prespawn != nil:
		s.Prespawn = *e.Prespawn
	case s.Mode != bridge.ModePerSession:
		s.Prespawn = 0 // --prespawn is for the per-session servers
	}
	if e.IdleTimeout != "" {
		s.IdleTimeout, _ = time.ParseDuration(e.IdleTimeout) // checked by checkIdleTimeout
	}
	if e.MaxSessions != nil {
		s.MaxSessions = *e.MaxSessions
	}
	return s
}

// cmpOr is a unless it is empty, else b.
func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// serverContext is what the checks of every server of a file share.
type serverContext struct {
	cfg       *Config           // the flags, defaults applied
	vars      map[string]string // the bridge's environment
	tokenVars map[string]bool   // variables holding the bridge's tokens, of the flags and of every server
}

// serverCheck is one server under check: its entry in the file and what
// it resolved to.
type serverCheck struct {
	serverContext
	e serverEntry
	s ServerSpec
}

// fieldReport is how a server rule tells what is wrong: the field of the
// entry at fault, and why.
type fieldReport func(field, format string, a ...any)

// serverRules are the checks of one server of the file, in the order
// their errors are told.
var serverRules = []struct {
	name  string
	check func(sc *serverCheck, bad fieldReport)
}{
	{"type", checkType},
	{"url", checkURL},
	{"command", checkServerCommand},
	{"env", checkServerEnv},
	{"envFrom", checkEnvFrom},
	{"envFrom and env", checkEnvFromDup},
	{"cwd", checkCwd},
	{"mode", checkServerMode},
	{"claim-env needs a process per principal", checkServerClaimEnv},
	{"prespawn", checkServerPrespawn},
	{"idleTimeout", checkIdleTimeout},
	{"maxSessions", checkMaxSessions},
	{"tokenEnvs", checkServerTokenEnvs},
	{"tokens", checkServerTokens},
	{"tool rules", checkServerToolRules},
	{"sandbox", checkServerSandbox},
	{"rename and tools", checkServerNames},
}

// checkServer runs every rule on one server, reporting to fe; false when
// one found something wrong.
func checkServer(fe *fileErrors, ctx serverContext, name string, e serverEntry, s ServerSpec) bool {
	n := len(fe.problems)
	sc := &serverCheck{serverContext: ctx, e: e, s: s}
	bad := func(field, format string, a ...any) { fe.add(name, field, format, a...) }
	for _, r := range serverRules {
		r.check(sc, bad)
	}
	return len(fe.problems) == n
}

func checkType(sc *serverCheck, bad fieldReport) {
	if t := sc.e.Type; t != "" && t != "stdio" {
		bad("type", "the bridge serves stdio servers only (a command)")
	}
}

func checkURL(sc *serverCheck, bad fieldReport) {
	if sc.e.URL != "" {
		bad("url", "the bridge serves stdio servers only: give a command, not a URL")
	}
}

func checkServerCommand(sc *serverCheck, bad fieldReport) {
	if sc.e.Command == "" {
		bad("command", "required")
	}
}

func checkServerEnv(sc *serverCheck, bad fieldReport) {
	for _, k := range slices.Sorted(maps.Keys(sc.e.Env)) {
		if msg := childVarProblem(k); msg != "" {
			bad("env", "%s %s", keyName(k), msg)
		}
	}
}

func checkEnvFrom(sc *serverCheck, bad fieldReport) {
	for _, k := range slices.Sorted(maps.Keys(sc.e.EnvFrom)) {
		from := sc.e.EnvFrom[k]
		switch _, set := sc.vars[from]; {
		case childVarProblem(k) != "":
			bad("envFrom", "%s %s", keyName(k), childVarProblem(k))
		// The variable is named only once it is known to be one that is
		// set: what stands in its place may be the secret itself, written
		// where its variable's name belongs.
		case !envName.MatchString(from) || strings.HasPrefix(from, EnvPrefix):
			bad("envFrom", "%s: not a variable name outside %s*: give the NAME of a variable of the bridge's environment, never its value", k, EnvPrefix)
		case !set:
			bad("envFrom", "%s: the variable it names is not set in the bridge's environment: give the NAME of a variable, never its value", k)
		case sc.tokenVars[from]:
			bad("envFrom", "%s: %s holds a token of the bridge, which no server may see", k, from)
		}
	}
}

func checkEnvFromDup(sc *serverCheck, bad fieldReport) {
	for _, k := range slices.Sorted(maps.Keys(sc.e.EnvFrom)) {
		if _, dup := sc.e.Env[k]; dup {
			bad("envFrom", "%s is in \"env\" too", k)
		}
	}
}

func checkCwd(sc *serverCheck, bad fieldReport) {
	if sc.e.Cwd == "" {
		return
	}
	if fi, err := os.Stat(sc.e.Cwd); err != nil || !fi.IsDir() {
		bad("cwd", "not a directory")
	}
}

func checkServerMode(sc *serverCheck, bad fieldReport) {
	switch sc.s.Mode {
	case bridge.ModePerSession, bridge.ModeShared, bridge.ModePerIdentity:
	default:
		bad("mode", "want per-session, shared or per-identity")
	}
}

func checkServerClaimEnv(sc *serverCheck, bad fieldReport) {
	if len(sc.cfg.ClaimEnv) > 0 && sc.s.Mode == bridge.ModeShared {
		bad("mode", "--claim-env needs a process per principal: per-session or per-identity")
	}
}

func checkServerPrespawn(sc *serverCheck, bad fieldReport) {
	switch p := sc.s.Prespawn; {
	case p < 0:
		bad("prespawn", "must not be negative")
	case p > 0 && (sc.s.Mode != bridge.ModePerSession || sc.cfg.Stateless):
		bad("prespawn", "a warm pool serves per-session mode only")
	}
}

func checkIdleTimeout(sc *serverCheck, bad fieldReport) {
	if sc.e.IdleTimeout == "" {
		return
	}
	if d, err := time.ParseDuration(sc.e.IdleTimeout); err != nil || d <= 0 {
		bad("idleTimeout", "want a duration greater than zero, like \"30s\" or \"5m\"")
	}
}

func checkMaxSessions(sc *serverCheck, bad fieldReport) {
	if sc.e.MaxSessions != nil && *sc.e.MaxSessions <= 0 {
		bad("maxSessions", "must be greater than zero")
	}
}

// tokenEnvNamesOK: every name of the server's tokenEnvs is a variable
// name outside the bridge's own.
func (sc *serverCheck) tokenEnvNamesOK() bool {
	return !slices.ContainsFunc(sc.e.TokenEnvs, func(v string) bool {
		return !envName.MatchString(v) || strings.HasPrefix(v, EnvPrefix)
	})
}

func checkServerTokenEnvs(sc *serverCheck, bad fieldReport) {
	for i, v := range sc.e.TokenEnvs {
		if !envName.MatchString(v) || strings.HasPrefix(v, EnvPrefix) {
			bad("tokenEnvs", "%snot a variable name outside %s*: give the NAME of a variable that holds a token, never the token", entry(i, len(sc.e.TokenEnvs)), EnvPrefix)
		}
	}
}

// checkServerTokens reads the server's token variables now, once their
// names are known to be names: unset, short, or the same token as
// another variable of this server or of --token-env is refused here.
func checkServerTokens(sc *serverCheck, bad fieldReport) {
	if len(sc.e.TokenEnvs) == 0 || !sc.tokenEnvNamesOK() {
		return
	}
	lookup := func(k string) (string, bool) { v, ok := sc.vars[k]; return v, ok }
	if _, err := auth.TokensFromEnv(uniq(sc.cfg.TokenEnvs, sc.e.TokenEnvs), lookup); err != nil {
		bad("tokenEnvs", "%v", err)
	}
}

func checkServerToolRules(sc *serverCheck, bad fieldReport) {
	for _, list := range []struct {
		field string
		rules []string
	}{{"toolAllow", sc.e.ToolAllow}, {"toolDeny", sc.e.ToolDeny}} {
		for i, r := range list.rules {
			if _, err := auth.ParseToolRule(r, false); err != nil {
				bad(list.field, "%s%v", entry(i, len(list.rules)), err)
			}
		}
	}
	for i, r := range sc.e.ToolApprove {
		if _, err := approval.ParseRule(r); err != nil {
			bad("toolApprove", "%s%v", entry(i, len(sc.e.ToolApprove)), err)
		}
	}
}

// childVarProblem says what is wrong with name as a variable of a
// child's environment; "" if nothing.
func childVarProblem(name string) string {
	switch {
	case strings.Contains(name, "="):
		return `is not a valid variable name: a key is the name alone, and its value goes after it ("NAME": "value")`
	case !envName.MatchString(name):
		return "is not a valid variable name"
	case strings.HasPrefix(name, EnvPrefix):
		return "is named like the bridge's own settings (" + EnvPrefix + "*), which never reach a server"
	}
	return ""
}

// keyName names a key of an "env" or "envFrom" object in an error. A key
// is a variable's name, not a value; but one that holds "=" is a
// NAME=value written where the name belongs, so only the part before "="
// is told, and a key too long or unprintable to be a name is not told at
// all (it may be a secret pasted in the wrong place).
func keyName(k string) string {
	if name, _, ok := strings.Cut(k, "="); ok {
		if envName.MatchString(name) && len(name) <= maxToldKey {
			return fmt.Sprintf("the key %q followed by \"=\"", name)
		}
		return `a key holding "="`
	}
	if len(k) > maxToldKey || strings.ContainsFunc(k, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return fmt.Sprintf("a key of %d bytes", len(k))
	}
	return strconv.Quote(k)
}

// maxToldKey is the longest key or field name an error repeats.
const maxToldKey = 64

// childEnv is what a server's child gets on top of the inherited
// environment: --env, then the server's env, then its envFrom, a later
// value replacing an earlier one of the same name.
func childEnv(flagEnv []string, e serverEntry, vars map[string]string) []string {
	var order []string
	val := map[string]string{}
	set := func(k, v string) {
		if _, ok := val[k]; !ok {
			order = append(order, k)
		}
		val[k] = v
	}
	for _, kv := range flagEnv {
		k, v, _ := strings.Cut(kv, "=")
		set(k, v)
	}
	for _, k := range slices.Sorted(maps.Keys(e.Env)) {
		set(k, e.Env[k])
	}
	for _, k := range slices.Sorted(maps.Keys(e.EnvFrom)) {
		set(k, vars[e.EnvFrom[k]])
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+val[k])
	}
	return out
}

// uniq is a then b, without repeats.
func uniq(a, b []string) []string {
	var out []string
	for _, s := range append(slices.Clone(a), b...) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// decodeError names the field of a server entry that could not be
// decoded and says what it should be, without the value.
func decodeError(err error) (field, msg string) {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return "", "want an object of fields (command, args, env, ...)"
		}
		return te.Field, "want " + jsonKind(te.Field)
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return unknownField(strings.TrimSuffix(strings.TrimPrefix(f, `"`), `"`))
	}
	return "", "not a valid server entry"
}

// unknownField names a field the entry does not have, and says so. A
// name too long or unprintable to be a field's is not repeated.
func unknownField(f string) (field, msg string) {
	const why = "unknown field (see docs/several-servers.md for the fields)"
	if len(f) > maxToldKey || strings.ContainsFunc(f, func(r rune) bool { return r < ' ' || r > '~' }) {
		return "", fmt.Sprintf("a field of %d bytes: %s", len(f), why)
	}
	return f, why
}

// ServerNameRule says what a server's name may be.
const ServerNameRule = "want 1 to 64 of A-Z a-z 0-9 - _ (it is a path segment)"

// serverNameTold names a server name that breaks the rule: as it is when
// it could be one, else by its length (it may be anything pasted there).
func serverNameTold(name string) string {
	if len(name) > maxToldKey || strings.ContainsFunc(name, func(r rune) bool { return r < ' ' || r > '~' }) {
		return fmt.Sprintf("a server name of %d bytes", len(name))
	}
	return fmt.Sprintf("server name %q", name)
}

// jsonKind says what JSON a field of serverEntry takes; a field of an
// object field is named with a dot (tools.allow).
func jsonKind(field string) string {
	t := reflect.TypeFor[serverEntry]()
	for _, name := range strings.Split(field, ".") {
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		f, ok := jsonField(t, name)
		if t.Kind() != reflect.Struct || !ok {
			return "another type"
		}
		t = f.Type
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int:
		return "an integer"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		return "an array of strings"
	case reflect.Map:
		return "an object whose values are strings"
	case reflect.Struct:
		var names []string
		for i := range t.NumField() {
			names = append(names, strings.Split(t.Field(i).Tag.Get("json"), ",")[0])
		}
		return "an object (" + strings.Join(names, ", ") + ")"
	}
	return "another type"
}

// entryField is the field of serverEntry whose JSON name is name.
func entryField(name string) (reflect.StructField, bool) {
	return jsonField(reflect.TypeFor[serverEntry](), name)
}

// jsonField is the field of the struct t whose JSON name is name.
func jsonField(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if f := t.Field(i); strings.Split(f.Tag.Get("json"), ",")[0] == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// position is the line and column of a byte offset.
func position(data []byte, offset int64) (line, col int) {
	offset = min(max(offset, 0), int64(len(data)))
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - (bytes.LastIndexByte(before, '\n') + 1)
	return line, max(col, 1)
}

// Mount is the bridge and endpoint of one server of the file: bc and ho
// are the settings the flags give every server (Bridge and HTTP, with the
// running parts set), to which the server's own are applied. environ is
// the bridge's environment, where the server's token variables are read;
// log gets the server's name.
func (c *Config) Mount(sp ServerSpec, bc bridge.Config, ho httpapi.Options, environ []string, log *slog.Logger) (httpapi.MountSpec, error) {
	log = log.With("server", sp.Name)
	bc.Command, bc.Dir, bc.Env, bc.Mode = sp.Command, sp.Dir, sp.Env, sp.Mode
	bc.Sandbox = sp.Sandbox
	bc.Prespawn, bc.IdleTimeout, bc.MaxSessions = sp.Prespawn, sp.IdleTimeout, sp.MaxSessions
	bc.Logger = log
	ho.Logger = log
	// One page serves every server (MountsOptions), not one per server.
	ho.Web = false
	if len(sp.TokenEnvs) > 0 {
		st, err := auth.TokensFromEnv(sp.TokenEnvs, lookupIn(environ))
		if err != nil {
			return httpapi.MountSpec{}, fmt.Errorf("field \"tokenEnvs\": %w", err)
		}
		if ho.Auth != nil {
			ho.Auth = auth.Any(st, ho.Auth)
		} else {
			ho.Auth = st
		}
	}
	own := *c
	own.ToolAllow = append(slices.Clone(c.ToolAllow), sp.ToolAllow...)
	own.ToolDeny = append(slices.Clone(c.ToolDeny), sp.ToolDeny...)
	policy, err := own.toolPolicy()
	if err != nil {
		return httpapi.MountSpec{}, err
	}
	ho.ToolPolicy = policy
	own.ToolApprove = append(slices.Clone(c.ToolApprove), sp.ToolApprove...)
	if ho.Approval, err = own.approvalPolicy(sp.Name, sp.Trusted); err != nil {
		return httpapi.MountSpec{}, err
	}
	if c.PublicURL != "" {
		// --public-url is the bridge's base URL here; each server's
		// endpoint is its own resource.
		base, err := httpapi.CanonicalURL(c.PublicURL)
		if err != nil {
			return httpapi.MountSpec{}, err
		}
		ho.PublicURL = base + httpapi.MountPath(sp.Name)
	}
	return httpapi.MountSpec{Name: sp.Name, Fingerprint: sp.Fingerprint(), Bridge: bc, HTTP: ho}, nil
}
