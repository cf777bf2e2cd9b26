package config

// The conversions of a Config into what the packages take. They are here,
// not in cmd/mcp-bridge, because each interprets settings: a setting not
// given takes its default (withDefaults), a timeout that 0 turns off
// becomes the bridge's negative, the variables that hold secrets are
// hidden from the child, a name is read from the environment. What only a
// running bridge has (the bridge itself, a logger, a context, an open
// audit file) is left to the caller, which wires it in.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-bridge/mcp-bridge/approval"
	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
	"github.com/mcp-bridge/mcp-bridge/stdio"
)

// Bridge is the bridge.Config of the settings, for command (the MCP
// server's argv: Command, or the demo server's) run with the bridge's
// environment environ (as os.Environ gives it). The caller sets Logger.
func (c *Config) Bridge(command, environ []string) bridge.Config {
	r := c.withDefaults()
	return bridge.Config{
		Command:            command,
		Mode:               *r.Mode,
		Prespawn:           r.Prespawn,
		MaxChildren:        r.MaxChildren,
		SpawnQueue:         *r.SpawnQueue,
		Dir:                r.Dir,
		Env:                stdio.Environ(environ, r.hiddenFromChild(), r.Env),
		MaxLineBytes:       *r.MaxMessageBytes,
		StopGrace:          *r.StopGrace,
		MaxSessions:        *r.MaxSessions,
		IdleTimeout:        *r.IdleTimeout,
		UnreachableTimeout: orOff(*r.UnreachableTimeout),
		RequestTimeout:     orOff(*r.RequestTimeout),
		InitTimeout:        orOff(*r.InitTimeout),
		QueueLimit:         *r.QueueLimit,
		EventLogEvents:     *r.EventLogEvents,
		EventLogBytes:      *r.EventLogBytes,
		Stateless:          r.Stateless,
		ChildProtocol:      *r.ChildProtocol,
		InputTTL:           *r.InputTTL,
		MaxParked:          *r.MaxParked,
		ReplicaID:          r.ReplicaID,
	}
}

// orOff maps a duration whose 0 means "off" on the command line to the
// bridge's convention, where the zero value is the default and negative
// is off.
func orOff(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// orNone maps a cap whose 0 means "no cap" on the command line to
// httpapi's convention, where the zero value is the default and negative
// is no cap.
func orNone(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// HTTP is the httpapi.Options of the settings. The caller sets what only
// the running bridge has: Bridge, Auth (Verifier), MetricsAuth, Audit
// (OpenAuditLog), Context and Logger. The error is for a Config that
// Validate would refuse.
func (c *Config) HTTP() (httpapi.Options, error) {
	r := c.withDefaults()
	policy, err := r.toolPolicy()
	if err != nil {
		return httpapi.Options{}, err
	}
	admins, err := r.admins()
	if err != nil {
		return httpapi.Options{}, err
	}
	approve, err := r.approvalPolicy("", r.TrustAnnotations)
	if err != nil {
		return httpapi.Options{}, err
	}
	return httpapi.Options{
		Path:             *r.Path,
		SSEPath:          r.SSEPath,
		MessagePath:      r.MessagePath,
		DisableLegacySSE: !*r.LegacySSE,
		DisableModern:    !*r.Modern,
		MaxBodyBytes:     *r.MaxBodyBytes,
		ResponseMode:     *r.ResponseMode,
		Stateless:        r.Stateless,
		MetricsPublic:    r.MetricsPublic,
		ClaimEnv:         r.claimEnv(),
		SSEDelay:         *r.SSEDelay,
		KeepAlive:        *r.KeepAlive,
		SSEMaxDuration:   r.SSEMaxDuration,
		AllowedOrigins:   r.AllowOrigins,
		LoopbackOnly:     r.Loopback(),
		Web:              *r.Web,

		PublicURL:               r.PublicURL,
		AuthorizationServers:    r.authServers(),
		Scopes:                  r.RequireScopes,
		MaxSessionsPerPrincipal: r.MaxSessionsPerPrincipal,
		MaxInFlightPerPrincipal: r.MaxInFlightPerPrincipal,
		MaxStreamsPerPrincipal:  orNone(*r.MaxStreamsPerPrincipal),
		RateLimit:               r.RateLimit,
		RateBurst:               r.RateBurst,
		ToolPolicy:              policy,
		Approval:                approve,
		Admins:                  admins,
		AuditArguments:          r.AuditArguments,
	}, nil
}

// Serving is how the bridge listens and stops.
type Serving struct {
	Addr            string        // host:port to listen on
	ReadTimeout     time.Duration // httpapi.Server.ReadTimeout
	ShutdownTimeout time.Duration // how long requests in flight may take at shutdown
	StopGrace       time.Duration // each wait of a child's stop sequence
}

// StopTimeout bounds the stopping of children at shutdown: the two waits
// of the stop sequence (after stdin is closed, after SIGTERM) and a second
// for the kill to be reaped.
func (s Serving) StopTimeout() time.Duration { return 2*s.StopGrace + time.Second }

// Serving is the listener and shutdown settings.
func (c *Config) Serving() Serving {
	r := c.withDefaults()
	return Serving{
		Addr:            net.JoinHostPort(*r.Host, strconv.Itoa(*r.Port)),
		ReadTimeout:     *r.ReadTimeout,
		ShutdownTimeout: *r.ShutdownTimeout,
		StopGrace:       *r.StopGrace,
	}
}

// MountsOptions are the --config servers' Mounts: ho is the endpoint
// settings every server starts from (HTTP, with the running parts set).
func (c *Config) MountsOptions(ho httpapi.Options, log *slog.Logger) httpapi.MountsOptions {
	s := c.Serving()
	mo := httpapi.MountsOptions{
		DrainTimeout: s.ShutdownTimeout,
		StopTimeout:  s.StopTimeout(),
		Logger:       log,
		// The same checks as each server's own (they share the flags).
		AllowedOrigins: ho.AllowedOrigins,
		LoopbackOnly:   ho.LoopbackOnly,
		// /metrics, every server's: the token that guards each one's.
		MetricsAuth:   ho.MetricsAuth,
		MetricsPublic: ho.MetricsPublic,
	}
	if ho.Web {
		// One page serves every server.
		mo.Web = &httpapi.MountsWeb{Auth: ho.Auth, Admins: ho.Admins, PublicURL: ho.PublicURL, Context: ho.Context, KeepAlive: ho.KeepAlive, WriteTimeout: ho.WriteTimeout,
			Approvals: ho.Approvals}
	}
	if ho.Approvals != nil {
		// One operators' channel for every server, behind the bridge-wide
		// authentication.
		mo.Approvals = &httpapi.ApprovalsAPI{Engine: ho.Approvals, Auth: ho.Auth, Readers: ho.Admins, KeepAlive: ho.KeepAlive,
			WriteTimeout: ho.WriteTimeout, Logger: log, Context: ho.Context}
	}
	return mo
}

// Loopback: the listener is on a loopback address, so only this machine
// reaches it (and httpapi refuses Host headers that are not loopback).
func (c *Config) Loopback() bool {
	host := *c.withDefaults().Host
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Logger is the bridge's logger, writing to w in --log-format at
// --log-level.
func (c *Config) Logger(w io.Writer) *slog.Logger {
	r := c.withDefaults()
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(*r.LogLevel)) // validated: the zero Level is info
	opts := &slog.HandlerOptions{Level: lvl}
	if *r.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// Contain sets the process containment of every child (stdio), and says
// which strategy is in use and why.
func (c *Config) Contain() (stdio.Containment, string, error) {
	got, why, err := stdio.SetContainment(stdio.Containment(*c.withDefaults().Containment))
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", describe("Containment"), err)
	}
	return got, why, nil
}

// OpenAuditLog opens --audit-log for appending: stdout for -, nil when
// there is none. close closes what it opened.
func (c *Config) OpenAuditLog(stdout io.Writer) (w io.Writer, close func() error, err error) {
	switch c.AuditLog {
	case "":
		return nil, func() error { return nil }, nil
	case "-":
		return stdout, func() error { return nil }, nil
	}
	f, err := os.OpenFile(c.AuditLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("invalid %s: cannot open the file: %w", describe("AuditLog"), pathless(err))
	}
	return f, f.Close, nil
}

// CommandError says, naming the command, why a server's command (argv0,
// run in dir with env) cannot be started, as the spawn would find it
// (stdio.LookPath); nil when it can. cwd names the setting of dir: --cwd
// for the command after --, its "cwd" for a server of the --config file.
func CommandError(argv0, dir string, env []string, cwd string) error {
	_, err := stdio.LookPath(argv0, dir, env)
	if err == nil {
		return nil
	}
	var msg string
	switch {
	case errors.Is(err, exec.ErrNotFound):
		msg = fmt.Sprintf("command %q not found: no executable of that name in the server's PATH", argv0)
	case errors.Is(err, fs.ErrPermission):
		msg = fmt.Sprintf("command %q is not an executable file", argv0)
	case !filepath.IsAbs(argv0) && dir != "":
		msg = fmt.Sprintf("command %q not found: no such file (relative to %s)", argv0, cwd)
	default:
		msg = fmt.Sprintf("command %q not found: no such file", argv0)
	}
	if words := strings.Fields(argv0); len(words) > 1 {
		// -- "npx -y pkg": a shell would have split it; the bridge runs
		// no shell, so the program's name is the whole string.
		if cwd == "--cwd" {
			msg += fmt.Sprintf("; it is one word with spaces: give the program and each argument as a word of its own, as in -- %s (no quotes around the whole command)", strings.Join(words, " "))
		} else {
			q, _ := json.Marshal(words[1:])
			msg += fmt.Sprintf(`; it is one word with spaces: put the program in "command" and each argument in "args", as in "command": %q, "args": %s`, words[0], q)
		}
	}
	return errors.New(msg)
}

// CommandProblem is why a server's command (argv0, run in dir with env)
// cannot be started, as CommandError finds it, said without the command:
// for the registry API, whose errors name the field and never its value.
// "" when it can be started.
func CommandProblem(argv0, dir string, env []string) string {
	_, err := stdio.LookPath(argv0, dir, env)
	if err == nil {
		return ""
	}
	var msg string
	switch {
	case errors.Is(err, exec.ErrNotFound):
		msg = "not found: no executable of that name in the server's PATH"
	case errors.Is(err, fs.ErrPermission):
		msg = "not an executable file"
	case !filepath.IsAbs(argv0) && dir != "":
		msg = `not found: no such file (relative to its "cwd")`
	default:
		msg = "not found: no such file"
	}
	if strings.ContainsAny(argv0, shellSyntax) {
		// What a shell would have split or expanded: the bridge runs
		// none, so the program's name is the whole string.
		msg += `; it holds spaces or shell syntax, and the bridge runs no shell: put the program in "command" and each argument in "args"`
	}
	return msg
}

// shellSyntax are the characters of a shell command line that a
// program's path seldom holds (not the backslash of Windows paths).
const shellSyntax = " \t\n|&;<>()$`\"'*?[]{}~"

// Verifier builds the authentication the settings ask for, reading the
// named variables from environ; nil when none is asked for. A JWKS is
// fetched before it returns and refreshed until ctx ends. Errors name the
// setting and the variable, never a value.
func (c *Config) Verifier(ctx context.Context, environ []string, log *slog.Logger) (auth.Verifier, error) {
	lookup := lookupIn(environ)
	var vs []auth.Verifier
	if len(c.TokenEnvs) > 0 {
		st, err := auth.TokensFromEnv(c.TokenEnvs, lookup)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", describe("TokenEnvs"), err)
		}
		vs = append(vs, st)
	}
	if c.jwtKeys() == 0 {
		if len(vs) == 0 {
			return nil, nil
		}
		return auth.Any(vs...), nil
	}
	j, err := c.jwt(ctx, lookup, log)
	if err != nil {
		return nil, err
	}
	return auth.Any(append(vs, j)...), nil
}

// jwt is the JWT verifier of the one key source given.
func (c *Config) jwt(ctx context.Context, lookup func(string) (string, bool), log *slog.Logger) (*auth.JWT, error) {
	jc := auth.JWTConfig{Issuer: c.JWTIssuer, Audiences: c.jwtAudiences(), RequiredScopes: c.RequireScopes, JWKSURL: c.JWKSURL, Logger: log}
	source := "JWKSURL"
	switch {
	case c.JWTSecretEnv != "":
		secret, ok := lookup(c.JWTSecretEnv)
		switch {
		case !ok:
			// Not named: a "name" that is not set may be the secret itself.
			return nil, fmt.Errorf("%s: the name given is not a variable set in the environment: give the NAME of a variable that holds the secret, never the secret", describe("JWTSecretEnv"))
		case secret == "":
			return nil, fmt.Errorf("%s: variable %s is empty", describe("JWTSecretEnv"), c.JWTSecretEnv)
		}
		jc.Secret, source = []byte(secret), "JWTSecretEnv"
	case c.JWTPublicKey != "":
		pemBytes, err := os.ReadFile(c.JWTPublicKey)
		if err != nil {
			return nil, fmt.Errorf("%s: cannot read %s: %w", describe("JWTPublicKey"), fileNamed(c.JWTPublicKey), pathless(err))
		}
		if jc.PublicKeys, err = auth.ParsePublicKeysPEM(pemBytes); err != nil {
			return nil, fmt.Errorf("%s: %w", describe("JWTPublicKey"), err)
		}
		source = "JWTPublicKey"
	}
	j, err := auth.NewJWT(ctx, jc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", describe(source), err)
	}
	return j, nil
}

// MetricsAuth reads the token of --metrics-token-env from environ and
// checks it as --token-env's are (set, not empty, 16+ characters); nil
// when the flag is not given. Errors name the flag and the variable,
// never the value.
func (c *Config) MetricsAuth(environ []string) (auth.Verifier, error) {
	if c.MetricsTokenEnv == "" {
		return nil, nil
	}
	st, err := auth.TokensFromEnv([]string{c.MetricsTokenEnv}, lookupIn(environ))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", describe("MetricsTokenEnv"), err)
	}
	return st, nil
}

// secretEnvs are the variables that hold the bridge's own secrets: its
// client tokens, its JWT secret, its metrics token. No child sees them.
func (c *Config) secretEnvs() []string {
	out := slices.Clone(c.TokenEnvs)
	for _, n := range []string{c.JWTSecretEnv, c.MetricsTokenEnv} {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}

// hiddenFromChild is the rule for the child's environment: everything the
// bridge inherited passes through except the bridge's own settings
// (MCP_BRIDGE_*), the variables named by --hide-env, and the variables
// that hold the bridge's tokens, JWT secret and metrics token
// (secretEnvs): a child must never be able to act as a client of the
// bridge, scrape it, or open anything else those secrets open.
func (c *Config) hiddenFromChild() func(string) bool {
	hide := make(map[string]bool, len(c.HideEnv))
	for _, n := range c.HideEnv {
		hide[n] = true
	}
	for _, n := range c.secretEnvs() {
		hide[n] = true
	}
	return func(name string) bool { return strings.HasPrefix(name, EnvPrefix) || hide[name] }
}

// claimEnv is --claim-env as a map: claim -> variable name.
func (c *Config) claimEnv() map[string]string {
	if len(c.ClaimEnv) == 0 {
		return nil
	}
	m := make(map[string]string, len(c.ClaimEnv))
	for _, ce := range c.ClaimEnv {
		claim, name, _ := strings.Cut(ce, "=")
		m[claim] = name
	}
	return m
}

// toolPolicy parses --tool-allow and --tool-deny; nil without rules.
func (c *Config) toolPolicy() (*auth.ToolPolicy, error) {
	var rules []auth.ToolRule
	for _, list := range []struct {
		field string
		rules []string
		deny  bool
	}{{"ToolAllow", c.ToolAllow, false}, {"ToolDeny", c.ToolDeny, true}} {
		for i, s := range list.rules {
			r, err := auth.ParseToolRule(s, list.deny)
			if err != nil {
				return nil, fmt.Errorf("%s: %s%w", describe(list.field), entry(i, len(list.rules)), err)
			}
			rules = append(rules, r)
		}
	}
	return auth.NewToolPolicy(rules), nil
}

// approvalPolicy parses --tool-approve into the approval rules of server
// (its name; "" for the command after --), nil without rules.
func (c *Config) approvalPolicy(server string, trusted bool) (*approval.Policy, error) {
	rules := make([]approval.Rule, 0, len(c.ToolApprove))
	for i, s := range c.ToolApprove {
		r, err := approval.ParseRule(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %s%w", describe("ToolApprove"), entry(i, len(c.ToolApprove)), err)
		}
		rules = append(rules, r)
	}
	return approval.NewPolicy(server, rules, trusted), nil
}

// Approvals are the settings of the approval engine: the caller sets
// what only the running bridge has (Observe: the audit log; Logger) and
// makes it (approval.New). The error is for a Config that Validate would
// refuse.
func (c *Config) Approvals() (approval.Options, error) {
	r := c.withDefaults()
	var approvers auth.Subjects
	for i, a := range r.Approvers {
		s, err := auth.ParseSubject(a)
		if err != nil {
			return approval.Options{}, invalid("Approvers", "%s%v", entry(i, len(r.Approvers)), err)
		}
		approvers = append(approvers, s)
	}
	return approval.Options{
		Timeout:                *r.ApprovalTimeout,
		MaxPending:             *r.MaxApprovals,
		MaxPendingPerPrincipal: *r.MaxApprovalsPerPrincipal,
		Approvers:              approvers,
		SeparateApprover:       r.ApprovalSeparateApprover,
		FailOpen:               r.ApprovalFailOpen,
	}, nil
}

// RegistryWriters parses --registry-admin: who may change the servers
// through the registry API.
func (c *Config) RegistryWriters() (auth.Subjects, error) {
	var out auth.Subjects
	for i, a := range c.RegistryAdmins {
		s, err := auth.ParseSubject(a)
		if err != nil {
			return nil, invalid("RegistryAdmins", "%s%v", entry(i, len(c.RegistryAdmins)), err)
		}
		out = append(out, s)
	}
	return out, nil
}

// admins parses --admin.
func (c *Config) admins() (auth.Subjects, error) {
	var out auth.Subjects
	for i, a := range c.Admins {
		s, err := auth.ParseSubject(a)
		if err != nil {
			return nil, invalid("Admins", "%s%v", entry(i, len(c.Admins)), err)
		}
		out = append(out, s)
	}
	return out, nil
}

// jwtAudiences: --jwt-audience, else the canonical --public-url.
func (c *Config) jwtAudiences() []string {
	if len(c.JWTAudiences) > 0 {
		return c.JWTAudiences
	}
	if u, err := httpapi.CanonicalURL(c.PublicURL); err == nil {
		return []string{u}
	}
	return nil
}

// authServers: --auth-server, else the JWT issuer.
func (c *Config) authServers() []string {
	if len(c.AuthServers) > 0 || c.JWTIssuer == "" {
		return c.AuthServers
	}
	return []string{c.JWTIssuer}
}

// pathless is err without the path a *fs.PathError quotes: the path is a
// setting's value, which errors do not show.
func pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// fileExts are the extensions of the files --config and
// --jwt-public-key name. A value with one of them is a file's
// name, never a token pasted in its place, so an error may show it.
var fileExts = []string{".json", ".pem", ".crt", ".cer", ".key"}

// fileNamed names a file of a setting in an error: quoted, with the
// working directory a relative name is read from, when it has the
// extension of a file (fileExts); else "the file", since the value may
// be a secret written in the file's place.
func fileNamed(name string) string {
	ext := strings.ToLower(filepath.Ext(name))
	if !slices.Contains(fileExts, ext) || strings.ContainsFunc(name, func(r rune) bool { return r < ' ' }) {
		return "the file"
	}
	if filepath.IsAbs(name) {
		return strconv.Quote(name)
	}
	wd, err := os.Getwd()
	if err != nil {
		return strconv.Quote(name)
	}
	return fmt.Sprintf("%q (in %s)", name, wd)
}

// ListenHint says what to do when the listener cannot open: for a port
// in use, name --port (a second bridge, or another server, holds it).
func ListenHint(err error) string {
	if errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use") ||
		strings.Contains(err.Error(), "Only one usage of each socket address") { // Windows' WSAEADDRINUSE
		return "the port is in use (by another mcp-bridge?): give another with --port, or --port 0 for a free one"
	}
	return "check --host and --port"
}
