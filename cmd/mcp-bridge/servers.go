package main

// --config: several MCP servers from one file, in the "mcpServers" format
// MCP clients already use, each served at /servers/NAME/mcp (README
// "Several servers"). This file reads and checks the file and turns each
// server into the settings of its bridge and endpoint; httpapi.Mounts
// serves them and swaps them on SIGHUP.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

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
}

// serverEntry is one server of the file: the fields MCP clients write
// (type and disabled as some of them do), then the bridge's per-server
// options. Single values replace the flag of the same name; lists and
// objects add to it. An unknown field is an error, so a misspelt option
// is not silently ignored.
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
	TokenEnvs   []string `json:"tokenEnvs"` // added to --token-env
	ToolAllow   []string `json:"toolAllow"` // added to --tool-allow
	ToolDeny    []string `json:"toolDeny"`  // added to --tool-deny
}

// serverSpec is one server resolved against the flags and the bridge's
// environment: everything that reaches its bridge and its endpoint. Two
// equal specs serve alike, so a reload that leaves a server's spec equal
// leaves the server alone.
type serverSpec struct {
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
}

// fingerprint stands for the whole spec. It is a digest: the spec holds
// the child's environment, secrets included.
func (s serverSpec) fingerprint() string {
	b, _ := json.Marshal(s)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// fileErrors collects what is wrong with the file, each error naming the
// file, the server and the field, never a value.
type fileErrors struct {
	file string
	errs []error
}

func (fe *fileErrors) add(server, field, format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	switch {
	case server == "":
		fe.errs = append(fe.errs, fmt.Errorf("%s: %s", fe.file, msg))
	case field == "":
		fe.errs = append(fe.errs, fmt.Errorf("%s: server %q: %s", fe.file, server, msg))
	default:
		fe.errs = append(fe.errs, fmt.Errorf("%s: server %q: field %q: %s", fe.file, server, field, msg))
	}
}

// parseServers reads the file's servers, checks them and resolves them
// against cfg (the flags, which give every default) and the bridge's
// environment (vars, and environ in its order). Disabled servers are left
// out. file names the file in errors.
func parseServers(file string, data []byte, cfg *Config, environ []string) ([]serverSpec, error) {
	fe := &fileErrors{file: file}
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
		return nil, errors.Join(fe.errs...)
	}
	if f.MCPServers == nil {
		fe.add("", "", `no "mcpServers" object`)
		return nil, errors.Join(fe.errs...)
	}
	vars := envMap(environ)
	entries := map[string]serverEntry{}
	for _, name := range slices.Sorted(maps.Keys(f.MCPServers)) {
		if !httpapi.ValidServerName(name) {
			fe.add("", "", "server name %q: want 1 to 64 of A-Z a-z 0-9 - _ (it is a path segment)", name)
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

	// A token must never reach a child, and a variable named by envFrom
	// reaches only the servers that name it: both are hidden from every
	// child's inherited environment.
	tokenVars := map[string]bool{}
	for _, n := range cfg.secretEnvs() {
		tokenVars[n] = true
	}
	fromVars := map[string]bool{}
	for _, e := range entries {
		for _, n := range e.TokenEnvs {
			tokenVars[n] = true
		}
		for _, n := range e.EnvFrom {
			fromVars[n] = true
		}
	}
	flagHidden := cfg.hiddenFromChild()
	hidden := func(name string) bool { return flagHidden(name) || tokenVars[name] || fromVars[name] }

	var specs []serverSpec
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		if s, ok := resolveServer(fe, name, entries[name], cfg, vars, tokenVars); ok {
			s.Env = stdio.Environ(environ, hidden, childEnv(cfg.Env, entries[name], vars))
			specs = append(specs, s)
		}
	}
	if len(fe.errs) > 0 {
		return nil, errors.Join(fe.errs...)
	}
	return specs, nil
}

// resolveServer checks one server's fields and resolves them against the
// flags; false when something is wrong (reported to fe).
func resolveServer(fe *fileErrors, name string, e serverEntry, cfg *Config, vars map[string]string, tokenVars map[string]bool) (serverSpec, bool) {
	n := len(fe.errs)
	bad := func(field, format string, a ...any) { fe.add(name, field, format, a...) }
	s := serverSpec{
		Name: name, Dir: cfg.Dir, Mode: cfg.Mode, Prespawn: cfg.Prespawn, IdleTimeout: cfg.IdleTimeout, MaxSessions: cfg.MaxSessions,
		TokenEnvs: uniq(nil, e.TokenEnvs), ToolAllow: e.ToolAllow, ToolDeny: e.ToolDeny,
	}
	switch e.Type {
	case "", "stdio":
	default:
		bad("type", "the bridge serves stdio servers only (a command)")
	}
	if e.URL != "" {
		bad("url", "the bridge serves stdio servers only: give a command, not a URL")
	}
	if e.Command == "" {
		bad("command", "required")
	}
	s.Command = append([]string{e.Command}, e.Args...)
	for _, k := range slices.Sorted(maps.Keys(e.Env)) {
		if msg := childVarProblem(k); msg != "" {
			bad("env", "%q %s", k, msg)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(e.EnvFrom)) {
		from := e.EnvFrom[k]
		switch _, set := vars[from]; {
		case childVarProblem(k) != "":
			bad("envFrom", "%q %s", k, childVarProblem(k))
		// The variable is named only once it is known to be one that is
		// set: what stands in its place may be the secret itself, written
		// where its variable's name belongs.
		case !envName.MatchString(from) || strings.HasPrefix(from, envPrefix):
			bad("envFrom", "%s: not a variable name outside %s*: give the NAME of a variable of the bridge's environment, never its value", k, envPrefix)
		case !set:
			bad("envFrom", "%s: the variable it names is not set in the bridge's environment: give the NAME of a variable, never its value", k)
		case tokenVars[from]:
			bad("envFrom", "%s: %s holds a token of the bridge, which no server may see", k, from)
		}
		if _, dup := e.Env[k]; dup {
			bad("envFrom", "%s is in \"env\" too", k)
		}
	}
	if e.Cwd != "" {
		if fi, err := os.Stat(e.Cwd); err != nil || !fi.IsDir() {
			bad("cwd", "not a directory")
		}
		s.Dir = e.Cwd
	}
	if e.Mode != "" {
		s.Mode = e.Mode
	}
	switch s.Mode {
	case bridge.ModePerSession, bridge.ModeShared, bridge.ModePerIdentity:
		if len(cfg.ClaimEnv) > 0 && s.Mode == bridge.ModeShared {
			bad("mode", "--claim-env needs a process per principal: per-session or per-identity")
		}
	default:
		bad("mode", "want per-session, shared or per-identity")
	}
	switch {
	case e.Prespawn != nil:
		s.Prespawn = *e.Prespawn
	case s.Mode != bridge.ModePerSession:
		s.Prespawn = 0 // --prespawn is for the per-session servers
	}
	switch {
	case s.Prespawn < 0:
		bad("prespawn", "must not be negative")
	case s.Prespawn > 0 && (s.Mode != bridge.ModePerSession || cfg.Stateless):
		bad("prespawn", "a warm pool serves per-session mode only")
	}
	if e.IdleTimeout != "" {
		d, err := time.ParseDuration(e.IdleTimeout)
		if err != nil || d <= 0 {
			bad("idleTimeout", "want a duration greater than zero, like \"30s\" or \"5m\"")
		}
		s.IdleTimeout = d
	}
	if e.MaxSessions != nil {
		if s.MaxSessions = *e.MaxSessions; s.MaxSessions <= 0 {
			bad("maxSessions", "must be greater than zero")
		}
	}
	for i, v := range e.TokenEnvs {
		if !envName.MatchString(v) || strings.HasPrefix(v, envPrefix) {
			bad("tokenEnvs", "%snot a variable name outside %s*: give the NAME of a variable that holds a token, never the token", entry(i, len(e.TokenEnvs)), envPrefix)
		}
	}
	if len(fe.errs) == n && len(e.TokenEnvs) > 0 {
		// Read them now: unset, short, or the same token as another
		// variable of this server or of --token-env is refused here.
		lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
		if _, err := auth.TokensFromEnv(uniq(cfg.TokenEnvs, e.TokenEnvs), lookup); err != nil {
			bad("tokenEnvs", "%v", err)
		}
	}
	for _, list := range []struct {
		field string
		rules []string
	}{{"toolAllow", e.ToolAllow}, {"toolDeny", e.ToolDeny}} {
		for i, r := range list.rules {
			if _, err := auth.ParseToolRule(r, false); err != nil {
				bad(list.field, "%s%v", entry(i, len(list.rules)), err)
			}
		}
	}
	return s, len(fe.errs) == n
}

// childVarProblem says what is wrong with name as a variable of a
// child's environment; "" if nothing.
func childVarProblem(name string) string {
	switch {
	case !envName.MatchString(name):
		return "is not a valid variable name"
	case strings.HasPrefix(name, envPrefix):
		return "is named like the bridge's own settings (" + envPrefix + "*), which never reach a server"
	}
	return ""
}

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
		field, _, _ = strings.Cut(te.Field, ".")
		if field == "" {
			return "", "want an object of fields (command, args, env, ...)"
		}
		return field, "want " + jsonKind(field)
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return strings.Trim(f, `"`), "unknown field (see README \"Several servers\" for the fields)"
	}
	return "", "not a valid server entry"
}

// jsonKind says what JSON a field of serverEntry takes.
func jsonKind(field string) string {
	t := reflect.TypeFor[serverEntry]()
	for i := range t.NumField() {
		f := t.Field(i)
		if strings.Split(f.Tag.Get("json"), ",")[0] != field {
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch ft.Kind() {
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
		}
	}
	return "another type"
}

// position is the line and column of a byte offset.
func position(data []byte, offset int64) (line, col int) {
	offset = min(max(offset, 0), int64(len(data)))
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - (bytes.LastIndexByte(before, '\n') + 1)
	return line, max(col, 1)
}

// serverSet is the servers of the --config file as served: the file is
// read at start and on reload, and httpapi.Mounts serves what it says.
type serverSet struct {
	*httpapi.Mounts
	file    string
	cfg     Config
	environ []string
	bridge  bridge.Config   // the flags' settings, which each server's start from
	http    httpapi.Options // the same
	log     *slog.Logger

	served map[string]httpapi.MountSpec // what the last load applied, by name; owned by load
}

// openServers reads the file and starts serving its servers. bc and ho
// are the settings the flags give every server; the file's servers change
// their command and what it lists.
func openServers(cfg Config, environ []string, bc bridge.Config, ho httpapi.Options, log *slog.Logger) (*serverSet, error) {
	if ho.Audit != nil {
		// Every server's endpoint writes to it.
		ho.Audit = &lockedWriter{w: ho.Audit}
	}
	s := &serverSet{
		Mounts: httpapi.NewMounts(httpapi.MountsOptions{
			DrainTimeout: cfg.ShutdownTimeout,
			StopTimeout:  2*cfg.StopGrace + time.Second,
			Logger:       log,
			Web:          mountsWeb(ho),
			// The same checks as each server's own (they share the flags).
			AllowedOrigins: ho.AllowedOrigins,
			LoopbackOnly:   ho.LoopbackOnly,
		}),
		file: cfg.ConfigFile, cfg: cfg, environ: environ, bridge: bc, http: ho, log: log,
	}
	if err := s.load(); err != nil {
		return nil, err
	}
	return s, nil
}

// mountsWeb is the page of every server, when the page is on.
func mountsWeb(ho httpapi.Options) *httpapi.MountsWeb {
	if !ho.Web {
		return nil
	}
	return &httpapi.MountsWeb{Auth: ho.Auth, Admins: ho.Admins, PublicURL: ho.PublicURL, Context: ho.Context, KeepAlive: ho.KeepAlive, WriteTimeout: ho.WriteTimeout}
}

// reloadOn rereads the file on every signal until ctx ends. A file that
// cannot be read or is invalid changes nothing.
func (s *serverSet) reloadOn(ctx context.Context, sig <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sig:
			s.log.Info("reloading the servers", "config", s.file)
			if err := s.load(); err != nil {
				s.log.Error("reload failed; the servers stay as they were", "err", err)
			}
		}
	}
}

// load reads the file and makes its servers the served ones.
func (s *serverSet) load() error {
	data, err := os.ReadFile(s.file)
	if err != nil {
		// No path: until the file is read, it is only a setting's value.
		return fmt.Errorf("%s: cannot read the file: %w", describe("ConfigFile"), pathless(err))
	}
	specs, err := parseServers(s.file, data, &s.cfg, s.environ)
	if err != nil {
		return err
	}
	mounts, refused, err := s.mounts(specs)
	if err != nil {
		return err
	}
	if s.served == nil && len(refused) > 0 && len(refused) == len(specs) {
		// At start, a file none of whose servers can start is a mistake
		// to report, not a bridge to run serving nothing.
		errs := []error{fmt.Errorf("%s: no server can start", s.file)}
		for _, r := range refused {
			errs = append(errs, fmt.Errorf("%s: server %q: %w", s.file, r.name, r.err))
		}
		return errors.Join(errs...)
	}
	ch, err := s.Apply(mounts)
	if err != nil {
		return err
	}
	s.served = make(map[string]httpapi.MountSpec, len(mounts))
	for _, ms := range mounts {
		s.served[ms.Name] = ms
	}
	var refusedNames []string
	for _, r := range refused {
		refusedNames = append(refusedNames, r.name)
		if r.kept {
			s.log.Error("server refused; it keeps its current settings", "server", r.name, "err", r.err)
		} else {
			s.log.Error("server refused; it is not served", "server", r.name, "err", r.err)
		}
	}
	s.log.Info("servers loaded", "config", s.file,
		"added", strings.Join(ch.Added, ","), "removed", strings.Join(ch.Removed, ","),
		"restarted", strings.Join(ch.Restarted, ","), "unchanged", strings.Join(ch.Unchanged, ","),
		"refused", strings.Join(refusedNames, ","))
	if len(specs) == 0 {
		s.log.Warn("the config file lists no enabled server", "config", s.file)
	}
	for _, ms := range mounts {
		if ms.HTTP.Auth == nil && !isLoopback(s.cfg.Host) && !slices.Contains(ch.Unchanged, ms.Name) {
			s.log.Warn("no authentication on a non-loopback address: anyone who reaches it can start processes; set --token-env, tokenEnvs or a JWT key", "server", ms.Name)
		}
	}
	return nil
}

// refusedServer is a server of the file that cannot be served: its
// command cannot be found. kept: it is served already, and keeps its
// settings.
type refusedServer struct {
	name string
	err  error
	kept bool
}

// mounts are the servers of specs as Apply takes them, and the ones
// refused. A server whose command cannot be found is refused alone: the
// others are served. One already served keeps its current settings (and
// sessions), as a file that cannot be read changes nothing.
func (s *serverSet) mounts(specs []serverSpec) ([]httpapi.MountSpec, []refusedServer, error) {
	mounts := make([]httpapi.MountSpec, 0, len(specs))
	var refused []refusedServer
	for _, sp := range specs {
		if err := commandError(sp.Command[0], sp.Dir, sp.Env, `its "cwd"`); err != nil {
			cur, kept := s.served[sp.Name]
			if kept {
				mounts = append(mounts, cur)
			}
			refused = append(refused, refusedServer{sp.Name, err, kept})
			continue
		}
		ms, err := s.mountSpec(sp)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: server %q: %w", s.file, sp.Name, err)
		}
		mounts = append(mounts, ms)
	}
	return mounts, refused, nil
}

// mountSpec is the bridge and endpoint of one server: the flags'
// settings with the server's own.
func (s *serverSet) mountSpec(sp serverSpec) (httpapi.MountSpec, error) {
	log := s.log.With("server", sp.Name)
	bc := s.bridge
	bc.Command, bc.Dir, bc.Env, bc.Mode = sp.Command, sp.Dir, sp.Env, sp.Mode
	bc.Prespawn, bc.IdleTimeout, bc.MaxSessions = sp.Prespawn, sp.IdleTimeout, sp.MaxSessions
	bc.Logger = log
	ho := s.http
	ho.Logger = log
	// One page serves every server (Mounts), not one per server.
	ho.Web = false
	if len(sp.TokenEnvs) > 0 {
		vars := envMap(s.environ)
		st, err := auth.TokensFromEnv(sp.TokenEnvs, func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
		if err != nil {
			return httpapi.MountSpec{}, fmt.Errorf("field \"tokenEnvs\": %w", err)
		}
		if ho.Auth != nil {
			ho.Auth = auth.Any(st, ho.Auth)
		} else {
			ho.Auth = st
		}
	}
	c := s.cfg
	c.ToolAllow = append(slices.Clone(s.cfg.ToolAllow), sp.ToolAllow...)
	c.ToolDeny = append(slices.Clone(s.cfg.ToolDeny), sp.ToolDeny...)
	policy, err := c.toolPolicy()
	if err != nil {
		return httpapi.MountSpec{}, err
	}
	ho.ToolPolicy = policy
	if s.cfg.PublicURL != "" {
		// --public-url is the bridge's base URL here; each server's
		// endpoint is its own resource.
		base, err := httpapi.CanonicalURL(s.cfg.PublicURL)
		if err != nil {
			return httpapi.MountSpec{}, err
		}
		ho.PublicURL = base + httpapi.MountPath(sp.Name)
	}
	return httpapi.MountSpec{Name: sp.Name, Fingerprint: sp.fingerprint(), Bridge: bc, HTTP: ho}, nil
}

// lockedWriter serialises the writes of several audit logs to one
// writer, so their lines never interleave.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
