package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"os"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
	"github.com/mcp-bridge/mcp-bridge/stdio"
)

// envPrefix prefixes every environment variable the bridge reads. The
// child never sees variables with this prefix.
const envPrefix = "MCP_BRIDGE_"

// Config is every setting of the bridge. Each field is read from
// MCP_BRIDGE_<env tag>, then from its flag (flags win); `flag` names the
// flag, `envDefault` is the default. README lists them all.
type Config struct {
	Host            string        `env:"HOST" envDefault:"127.0.0.1" flag:"host" help:"address to listen on; keep 127.0.0.1 unless the bridge sits behind auth"`
	Port            int           `env:"PORT" envDefault:"8080" flag:"port" help:"TCP port (0 picks a free one)"`
	Path            string        `env:"PATH" envDefault:"/mcp" flag:"path" help:"path of the MCP endpoint"`
	SSEPath         string        `env:"SSE_PATH" flag:"sse-path" help:"path of the legacy HTTP+SSE stream (MCP 2024-11-05); default: sse next to --path (/sse for /mcp)"`
	MessagePath     string        `env:"MESSAGE_PATH" flag:"message-path" help:"path legacy HTTP+SSE clients POST to; default: message next to --path (/message for /mcp)"`
	LegacySSE       bool          `env:"LEGACY_SSE" envDefault:"true" flag:"legacy-sse" help:"serve the legacy HTTP+SSE transport (2024-11-05) next to Streamable HTTP (not with --stateless); --legacy-sse=false turns it off"`
	Command         Argv          `env:"COMMAND" flag:"-" help:"the MCP server's argv as a JSON array (or give it after --); empty serves the built-in demo server"`
	ConfigFile      string        `env:"CONFIG" flag:"config" help:"JSON file of several MCP servers ({\"mcpServers\": {NAME: {command, args, env, ...}}}), each served at /servers/NAME/mcp instead of one command at --path; SIGHUP rereads it"`
	Mode            string        `env:"MODE" envDefault:"per-session" flag:"mode" help:"per-session: a process per MCP session; shared: one process multiplexed across sessions; per-identity: a process per principal, shared by its sessions"`
	ClaimEnv        []string      `env:"CLAIM_ENV" envSeparator:"," flag:"claim-env" help:"claim=VAR: put the principal's claim into its MCP server's environment as VAR (repeatable; per-session and per-identity modes)"`
	Prespawn        int           `env:"PRESPAWN" envDefault:"0" flag:"prespawn" help:"per-session mode: processes kept started and waiting, so a new session does not wait for one to start"`
	MaxChildren     int           `env:"MAX_CHILDREN" envDefault:"0" flag:"max-children" help:"most MCP server processes alive, waiting ones included (0: --max-sessions + --prespawn); over it, 503"`
	SpawnQueue      int           `env:"SPAWN_QUEUE" envDefault:"64" flag:"spawn-queue" help:"most sessions waiting for a process to start; over it, 503"`
	Stateless       bool          `env:"STATELESS" flag:"stateless" help:"serve without sessions: every POST stands alone on one shared, already-initialized process; GET and DELETE answer 405"`
	Dir             string        `env:"CWD" flag:"cwd" help:"working directory of the MCP server process"`
	Env             []string      `env:"ENV" envSeparator:"," flag:"env" help:"K=V added to the MCP server's environment (repeatable)"`
	HideEnv         []string      `env:"HIDE_ENV" envSeparator:"," flag:"hide-env" help:"names of variables not passed to the MCP server (repeatable); MCP_BRIDGE_* are never passed"`
	ResponseMode    string        `env:"RESPONSE_MODE" envDefault:"auto" flag:"response-mode" help:"auto: JSON when the answer comes first, else SSE; sse; json"`
	SSEDelay        time.Duration `env:"SSE_DELAY" envDefault:"50ms" flag:"sse-delay" help:"in auto mode, how long a request waits for its answer before its response becomes an SSE stream"`
	MaxBodyBytes    int64         `env:"MAX_BODY_BYTES" envDefault:"4194304" flag:"max-body-bytes" help:"largest POST body accepted (413 over it)"`
	MaxMessageBytes int           `env:"MAX_MESSAGE_BYTES" envDefault:"16777216" flag:"max-message-bytes" help:"largest message accepted from the MCP server (one stdout line)"`
	MaxSessions     int           `env:"MAX_SESSIONS" envDefault:"1000" flag:"max-sessions" help:"most live sessions, each with its own process (503 over it)"`
	IdleTimeout     time.Duration `env:"IDLE_TIMEOUT" envDefault:"30m" flag:"idle-timeout" help:"end a session after this long without traffic, requests or open streams"`
	RequestTimeout  time.Duration `env:"REQUEST_TIMEOUT" envDefault:"5m" flag:"request-timeout" help:"how long a request waits for the MCP server's answer; then the client gets JSON-RPC error -32007 and the server notifications/cancelled (0: no limit)"`
	InitTimeout     time.Duration `env:"INIT_TIMEOUT" envDefault:"30s" flag:"init-timeout" help:"how long initialize waits for the MCP server's answer; then the client gets JSON-RPC error -32007, the session ends and the process is stopped (0: no limit)"`
	QueueLimit      int           `env:"QUEUE_LIMIT" envDefault:"1024" flag:"queue-limit" help:"server messages a session holds while no stream is open"`
	EventLogEvents  int           `env:"EVENT_LOG_EVENTS" envDefault:"4096" flag:"event-log-events" help:"SSE events a session keeps for clients that resume with Last-Event-ID, or that read slowly; older ones age out, and a reader whose unread events age out is disconnected"`
	EventLogBytes   int           `env:"EVENT_LOG_BYTES" envDefault:"4194304" flag:"event-log-bytes" help:"bytes of SSE events a session keeps for resuming clients (the newest event is kept whatever its size); also caps the messages it holds while no stream is open"`
	StopGrace       time.Duration `env:"STOP_GRACE" envDefault:"2s" flag:"stop-grace" help:"wait after closing a process's stdin, and again after SIGTERM, before SIGKILL"`
	Containment     string        `env:"CONTAINMENT" envDefault:"auto" flag:"containment" help:"how each MCP server process and everything it starts are kept from outliving their session and the bridge: auto (the best this system allows), pid-namespace, cgroup or process-group"`
	ShutdownTimeout time.Duration `env:"SHUTDOWN_TIMEOUT" envDefault:"10s" flag:"shutdown-timeout" help:"on SIGINT/SIGTERM, how long requests in flight may take to finish"`
	ReadTimeout     time.Duration `env:"READ_TIMEOUT" envDefault:"30s" flag:"read-timeout" help:"most time a client may take to send a request, headers and body (408, or the connection closed, past it); response streams are not bounded by it"`
	SSEMaxDuration  time.Duration `env:"SSE_MAX_DURATION" envDefault:"0s" flag:"sse-max-duration" help:"close the connection of a 2025-11-25 session's SSE stream after this long (the client resumes with Last-Event-ID); 0: never"`
	KeepAlive       time.Duration `env:"KEEPALIVE" envDefault:"15s" flag:"keepalive" help:"interval of SSE keep-alive comments"`
	AllowOrigins    []string      `env:"ALLOW_ORIGINS" envSeparator:"," flag:"allow-origin" help:"browser origin allowed besides loopback ones, exact or with * (repeatable)"`
	Web             bool          `env:"WEB" envDefault:"true" flag:"web" help:"serve the web page at / (live view of sessions and children, and an MCP console); its feed needs the same token as the MCP endpoint; --web=false turns it off"`
	LogFormat       string        `env:"LOG_FORMAT" envDefault:"text" flag:"log-format" help:"text or json"`
	LogLevel        string        `env:"LOG_LEVEL" envDefault:"info" flag:"log-level" help:"debug, info, warn or error"`

	// Who may connect (README "Options": authentication). All off by default.
	TokenEnvs               []string `env:"TOKEN_ENVS" envSeparator:"," flag:"token-env" help:"name of an environment variable holding an accepted bearer token; the request's principal is the variable's name (repeatable)"`
	JWTSecretEnv            string   `env:"JWT_SECRET_ENV" flag:"jwt-secret-env" help:"name of an environment variable holding the HMAC secret (32+ bytes) of HS256/384/512 JWTs"`
	JWTPublicKey            string   `env:"JWT_PUBLIC_KEY" flag:"jwt-public-key" help:"PEM file of the public key(s) of RS*/PS*/ES*/EdDSA JWTs"`
	JWKSURL                 string   `env:"JWKS_URL" flag:"jwks-url" help:"URL of the JWT issuer's JWKS (https, or http on loopback); refreshed every 15 min and on an unknown kid"`
	JWTIssuer               string   `env:"JWT_ISSUER" flag:"jwt-issuer" help:"the iss every JWT must carry (required with a JWT key)"`
	JWTAudiences            []string `env:"JWT_AUDIENCES" envSeparator:"," flag:"jwt-audience" help:"an aud a JWT may carry (repeatable); default --public-url"`
	RequireScopes           []string `env:"REQUIRE_SCOPES" envSeparator:"," flag:"require-scope" help:"a scope every JWT must grant in scope or scp, else 403 (repeatable)"`
	PublicURL               string   `env:"PUBLIC_URL" flag:"public-url" help:"the MCP endpoint's URL as clients reach it (https://bridge.example.com/mcp): the OAuth resource, and the default JWT audience; default: from each request's Host"`
	AuthServers             []string `env:"AUTH_SERVERS" envSeparator:"," flag:"auth-server" help:"authorization server listed in /.well-known/oauth-protected-resource (repeatable); default --jwt-issuer"`
	MaxSessionsPerPrincipal int      `env:"MAX_SESSIONS_PER_PRINCIPAL" flag:"max-sessions-per-principal" help:"most live sessions of one principal (0: only --max-sessions); over it, 429"`
	MaxInFlightPerPrincipal int      `env:"MAX_INFLIGHT_PER_PRINCIPAL" flag:"max-inflight-per-principal" help:"most POSTs of one principal served at once (0: no cap); over it, 429"`
	RateLimit               float64  `env:"RATE_LIMIT" flag:"rate-limit" help:"requests per second one principal may send (0: no limit); over it, 429 with Retry-After"`
	RateBurst               int      `env:"RATE_BURST" flag:"rate-burst" help:"requests one principal may send at once above --rate-limit (0: one second's worth)"`
	ToolAllow               []string `env:"TOOL_ALLOW" envSeparator:"," flag:"tool-allow" help:"SUBJECT=GLOB: the tools SUBJECT (*, scope:NAME, token:NAME, jwt:SUB or a principal name) may list and call; once a subject has allow rules, other tools are denied to it (repeatable)"`
	ToolDeny                []string `env:"TOOL_DENY" envSeparator:"," flag:"tool-deny" help:"SUBJECT=GLOB: tools SUBJECT may neither list nor call; deny wins over allow (repeatable)"`
	AuditLog                string   `env:"AUDIT_LOG" flag:"audit-log" help:"file to append one JSON line per request to (principal, session, method, tool, outcome, duration); - for stdout"`
	AuditArguments          bool     `env:"AUDIT_ARGUMENTS" flag:"audit-arguments" help:"add tools/call arguments to the audit log (they may hold personal data or secrets)"`

	// Who sees what of the others (README "Web page", "Health, readiness
	// and metrics"): checked by validateVisibility.
	Admins          []string `env:"ADMINS" envSeparator:"," flag:"admin" help:"SUBJECT (*, scope:NAME, token:NAME, jwt:SUB or a principal name) who sees every session and child on the web page, stderr included; others see their own (repeatable)"`
	MetricsTokenEnv string   `env:"METRICS_TOKEN_ENV" flag:"metrics-token-env" help:"name of an environment variable holding the bearer token /metrics then requires (default: /metrics is open)"`
}

// Argv is a command line given as a JSON array in the environment, so
// arguments may hold spaces and commas.
type Argv []string

// UnmarshalText parses a JSON array of strings.
func (a *Argv) UnmarshalText(b []byte) error {
	var s []string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a JSON array of strings, like [\"npx\",\"-y\",\"server\"]: %w", err)
	}
	*a = s
	return nil
}

// loadConfig reads the environment, then the flags (flags.go), then
// validates. The returned error names the flag and the variable at fault,
// never a value that could be a secret. --help prints the usage to usage
// and returns flag.ErrHelp; --version returns errVersion.
func loadConfig(args []string, environ map[string]string, usage io.Writer) (Config, error) {
	cfg, err := env.ParseAsWithOptions[Config](env.Options{Prefix: envPrefix, Environment: environ})
	if err != nil {
		return cfg, envError(err)
	}
	if err := parseFlags(&cfg, args, usage); err != nil {
		return cfg, err
	}
	return cfg, cfg.validate()
}

var (
	envName  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	hostName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$`)
)

// entry names the i-th of n values of a list setting in an error, by its
// place, never by its value: "" for the only one, else "its 2nd entry: ".
func entry(i, n int) string {
	if n == 1 {
		return ""
	}
	return "its " + auth.Ordinal(i+1) + " entry: "
}

// originShape: scheme://host[:port], as browsers send Origin, or such a
// pattern with *; checked here so that a mistake (a token in the wrong
// flag, say) is refused rather than allowed as an origin nobody sends.
func originShape(o string) bool {
	scheme, rest, ok := strings.Cut(strings.TrimSuffix(strings.TrimSpace(o), "/"), "://")
	if !ok || scheme == "" || rest == "" || strings.ContainsAny(rest, "/?#@ ") {
		return false
	}
	if strings.Contains(o, "*") {
		_, err := path.Match(o, "")
		return err == nil
	}
	u, err := url.Parse(o)
	return err == nil && u.Host != ""
}

func (c *Config) validate() error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("invalid %s: %s", describe(field), fmt.Sprintf(format, a...)))
	}
	if c.Host != "" && net.ParseIP(c.Host) == nil && !hostName.MatchString(c.Host) {
		bad("Host", "not an IP address or a host name")
	}
	if c.Port < 0 || c.Port > 65535 {
		bad("Port", "not a TCP port (0-65535)")
	}
	if c.Dir != "" {
		if fi, err := os.Stat(c.Dir); err != nil || !fi.IsDir() {
			bad("Dir", "not a directory")
		}
	}
	for i, o := range c.AllowOrigins {
		if !originShape(o) {
			bad("AllowOrigins", "%snot an origin: want scheme://host[:port], with * for any run of characters", entry(i, len(c.AllowOrigins)))
		}
	}
	if !strings.HasPrefix(c.Path, "/") || c.Path == "/healthz" {
		bad("Path", "must start with / and not be /healthz")
	}
	for _, f := range []struct{ field, path string }{{"SSEPath", c.SSEPath}, {"MessagePath", c.MessagePath}} {
		if f.path != "" && (!strings.HasPrefix(f.path, "/") || f.path == c.Path || f.path == "/healthz") {
			bad(f.field, "must start with / and be neither --path nor /healthz")
		}
	}
	if c.SSEPath != "" && c.SSEPath == c.MessagePath {
		bad("MessagePath", "must differ from --sse-path")
	}
	if !slices.Contains(stdio.Containments, stdio.Containment(c.Containment)) {
		bad("Containment", "want auto, pid-namespace, cgroup or process-group")
	}
	switch c.Mode {
	case "per-session", "shared", "per-identity":
	default:
		bad("Mode", "want per-session, shared or per-identity")
	}
	for i, ce := range c.ClaimEnv {
		claim, name, ok := strings.Cut(ce, "=")
		switch {
		case !ok || claim == "" || !envName.MatchString(name):
			bad("ClaimEnv", "%snot CLAIM=VARIABLE: a claim, and the NAME of a variable to put it in", entry(i, len(c.ClaimEnv)))
		case strings.HasPrefix(name, envPrefix):
			bad("ClaimEnv", "%svariables named %s* are the bridge's own", entry(i, len(c.ClaimEnv)), envPrefix)
		}
	}
	if len(c.ClaimEnv) > 0 && (c.Mode == "shared" || c.Stateless) {
		bad("ClaimEnv", "a shared process serves every principal: use --mode per-identity or per-session")
	}
	for _, f := range []struct {
		field string
		d     time.Duration
	}{{"SSEMaxDuration", c.SSEMaxDuration}, {"RequestTimeout", c.RequestTimeout}, {"InitTimeout", c.InitTimeout}} {
		if f.d < 0 {
			bad(f.field, "must not be negative (0 turns it off)")
		}
	}
	switch c.ResponseMode {
	case "auto", "sse", "json":
	default:
		bad("ResponseMode", "want auto, sse or json")
	}
	switch c.LogFormat {
	case "text", "json":
	default:
		bad("LogFormat", "want text or json")
	}
	switch strings.ToLower(c.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		bad("LogLevel", "want debug, info, warn or error")
	}
	positive := map[string]int64{
		"SSEDelay": int64(c.SSEDelay), "MaxBodyBytes": c.MaxBodyBytes, "MaxMessageBytes": int64(c.MaxMessageBytes),
		"MaxSessions": int64(c.MaxSessions), "IdleTimeout": int64(c.IdleTimeout), "QueueLimit": int64(c.QueueLimit),
		"EventLogEvents": int64(c.EventLogEvents), "EventLogBytes": int64(c.EventLogBytes),
		"StopGrace": int64(c.StopGrace), "ShutdownTimeout": int64(c.ShutdownTimeout), "KeepAlive": int64(c.KeepAlive),
		"ReadTimeout": int64(c.ReadTimeout),
	}
	for _, field := range slices.Sorted(maps.Keys(positive)) {
		if positive[field] <= 0 {
			bad(field, "must be greater than zero")
		}
	}
	if c.Prespawn < 0 || c.MaxChildren < 0 {
		bad("Prespawn", "--prespawn and --max-children must not be negative")
	}
	if c.SpawnQueue <= 0 {
		bad("SpawnQueue", "must be greater than zero")
	}
	if c.Prespawn > 0 && (c.Mode == "shared" || c.Stateless) {
		bad("Prespawn", "a warm pool serves per-session mode only")
	}
	for i, kv := range c.Env {
		// Only the name is shown: the value may well be a secret.
		name, _, ok := strings.Cut(kv, "=")
		if !ok || !envName.MatchString(name) {
			bad("Env", "%snot NAME=value with a valid NAME", entry(i, len(c.Env)))
		} else if strings.HasPrefix(name, envPrefix) {
			bad("Env", "%svariables named %s* are the bridge's own and never reach the server", entry(i, len(c.Env)), envPrefix)
		}
	}
	for i, name := range c.HideEnv {
		if !envName.MatchString(name) {
			bad("HideEnv", "%snot a valid variable name: the flag takes the NAME of a variable", entry(i, len(c.HideEnv)))
		}
	}
	if len(c.Command) > 0 && c.Command[0] == "" {
		bad("Command", "the program name is empty")
	}
	if c.ConfigFile != "" && len(c.Command) > 0 {
		bad("ConfigFile", "give either --config or a command, not both")
	}
	errs = append(errs, c.validateAuth()...)
	errs = append(errs, c.validateVisibility()...)
	return errors.Join(errs...)
}

// validateVisibility checks --admin and --metrics-token-env. Whether the
// metrics token's variable holds a usable token is checked by
// metricsAuth, which reads it.
func (c *Config) validateVisibility() []error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("invalid %s: %s", describe(field), fmt.Sprintf(format, a...)))
	}
	for i, a := range c.Admins {
		if _, err := auth.ParseSubject(a); err != nil {
			bad("Admins", "%s%v", entry(i, len(c.Admins)), err)
		}
	}
	if len(c.Admins) > 0 && len(c.TokenEnvs) == 0 && c.JWTSecretEnv == "" && c.JWTPublicKey == "" && c.JWKSURL == "" {
		bad("Admins", "admins mean nothing without authentication (--token-env or a JWT key): the one anonymous principal sees everything")
	}
	if n := c.MetricsTokenEnv; n != "" && (!envName.MatchString(n) || strings.HasPrefix(n, envPrefix)) {
		bad("MetricsTokenEnv", "not a valid variable name outside %s*: the flag takes the NAME of a variable that holds a token, never the token", envPrefix)
	}
	return errs
}

// admins parses --admin (validated by loadConfig).
func (c *Config) admins() auth.Subjects {
	ss, _ := auth.ParseSubjects(c.Admins)
	return ss
}

// metricsAuth reads the token of --metrics-token-env with lookup and
// checks it as --token-env's are (set, not empty, 16+ characters); nil
// when the flag is not given. Errors name the flag and the variable,
// never the value.
func (c *Config) metricsAuth(lookup func(string) (string, bool)) (auth.Verifier, error) {
	if c.MetricsTokenEnv == "" {
		return nil, nil
	}
	st, err := auth.TokensFromEnv([]string{c.MetricsTokenEnv}, lookup)
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

// validateAuth checks the authentication and limit settings. Whether the
// named variables hold usable secrets is checked by verifier, which reads
// them.
func (c *Config) validateAuth() []error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("invalid %s: %s", describe(field), fmt.Sprintf(format, a...)))
	}
	for i, name := range c.TokenEnvs {
		if !envName.MatchString(name) {
			bad("TokenEnvs", "%snot a valid variable name: the flag takes the NAME of a variable that holds a token, never the token", entry(i, len(c.TokenEnvs)))
		} else if strings.HasPrefix(name, envPrefix) {
			bad("TokenEnvs", "%svariables named %s* are the bridge's settings, not tokens", entry(i, len(c.TokenEnvs)), envPrefix)
		}
	}
	switch {
	case c.JWTSecretEnv != "" && !envName.MatchString(c.JWTSecretEnv):
		bad("JWTSecretEnv", "not a valid variable name: the flag takes the NAME of a variable that holds the secret, never the secret")
	case strings.HasPrefix(c.JWTSecretEnv, envPrefix):
		bad("JWTSecretEnv", "variables named %s* are the bridge's settings, not secrets", envPrefix)
	}
	keys := 0
	for _, set := range []string{c.JWTSecretEnv, c.JWTPublicKey, c.JWKSURL} {
		if set != "" {
			keys++
		}
	}
	switch {
	case keys > 1:
		// One key source, one family of algorithms: an HMAC secret next
		// to public keys invites algorithm confusion.
		bad("JWTSecretEnv", "give one JWT key source: --jwt-secret-env, --jwt-public-key or --jwks-url")
	case keys == 1 && c.JWTIssuer == "":
		bad("JWTIssuer", "a JWT key needs the issuer whose tokens it verifies")
	case keys == 1 && len(c.JWTAudiences) == 0 && c.PublicURL == "":
		bad("JWTAudiences", "JWTs must be checked against this server's URL: set --public-url (or --jwt-audience)")
	case keys == 0 && c.JWTIssuer != "":
		bad("JWTIssuer", "the JWT settings need a key: --jwt-secret-env, --jwt-public-key or --jwks-url")
	case keys == 0 && len(c.JWTAudiences) > 0:
		bad("JWTAudiences", "the JWT settings need a key: --jwt-secret-env, --jwt-public-key or --jwks-url")
	case keys == 0 && len(c.RequireScopes) > 0:
		bad("RequireScopes", "the JWT settings need a key: --jwt-secret-env, --jwt-public-key or --jwks-url")
	}
	for _, a := range c.JWTAudiences {
		if a == "" {
			bad("JWTAudiences", "an audience is empty")
		}
	}
	if c.PublicURL != "" {
		if _, err := httpapi.CanonicalURL(c.PublicURL); err != nil {
			bad("PublicURL", "%v", err)
		}
	}
	for i, s := range c.AuthServers {
		if u, err := url.Parse(s); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			bad("AuthServers", "%snot an absolute http(s) URL", entry(i, len(c.AuthServers)))
		}
	}
	if len(c.AuthServers) > 0 && len(c.TokenEnvs) == 0 && keys == 0 {
		bad("AuthServers", "authorization servers mean nothing without authentication (--token-env or a JWT key)")
	}
	nonNegative := map[string]float64{
		"MaxSessionsPerPrincipal": float64(c.MaxSessionsPerPrincipal), "MaxInFlightPerPrincipal": float64(c.MaxInFlightPerPrincipal),
		"RateLimit": c.RateLimit, "RateBurst": float64(c.RateBurst),
	}
	for _, field := range slices.Sorted(maps.Keys(nonNegative)) {
		if nonNegative[field] < 0 {
			bad(field, "must not be negative")
		}
	}
	for _, list := range []struct {
		field string
		rules []string
	}{{"ToolAllow", c.ToolAllow}, {"ToolDeny", c.ToolDeny}} {
		for i, r := range list.rules {
			if _, err := auth.ParseToolRule(r, false); err != nil {
				bad(list.field, "%s%v", entry(i, len(list.rules)), err)
			}
		}
	}
	if c.AuditArguments && c.AuditLog == "" {
		bad("AuditArguments", "there is no --audit-log to add them to")
	}
	return errs
}

// toolPolicy parses --tool-allow and --tool-deny; nil without rules.
func (c *Config) toolPolicy() (*auth.ToolPolicy, error) {
	var rules []auth.ToolRule
	for _, list := range []struct {
		rules []string
		deny  bool
	}{{c.ToolAllow, false}, {c.ToolDeny, true}} {
		for _, s := range list.rules {
			r, err := auth.ParseToolRule(s, list.deny)
			if err != nil {
				return nil, err
			}
			rules = append(rules, r)
		}
	}
	return auth.NewToolPolicy(rules), nil
}

// verifier builds the authentication the settings ask for, reading the
// named variables with lookup; nil when none is asked for. A JWKS is
// fetched before it returns and refreshed until ctx ends. Errors name the
// setting and the variable, never a value.
func (c *Config) verifier(ctx context.Context, lookup func(string) (string, bool), log *slog.Logger) (auth.Verifier, error) {
	var vs []auth.Verifier
	if len(c.TokenEnvs) > 0 {
		st, err := auth.TokensFromEnv(c.TokenEnvs, lookup)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", describe("TokenEnvs"), err)
		}
		vs = append(vs, st)
	}
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
			return nil, fmt.Errorf("%s: cannot read the file: %w", describe("JWTPublicKey"), pathless(err))
		}
		if jc.PublicKeys, err = auth.ParsePublicKeysPEM(pemBytes); err != nil {
			return nil, fmt.Errorf("%s: %w", describe("JWTPublicKey"), err)
		}
		source = "JWTPublicKey"
	case c.JWKSURL == "":
		if len(vs) == 0 {
			return nil, nil
		}
		return auth.Any(vs...), nil
	}
	j, err := auth.NewJWT(ctx, jc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", describe(source), err)
	}
	return auth.Any(append(vs, j)...), nil
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

// orOff maps a duration flag whose 0 means "off" to the bridge's
// convention, where the zero value is the default and negative is off.
func orOff(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// describe names a field the way a user sets it: flag and variable.
func describe(field string) string {
	f, ok := reflect.TypeOf(Config{}).FieldByName(field)
	if !ok {
		return field
	}
	name := envPrefix + f.Tag.Get("env")
	if fl := f.Tag.Get("flag"); fl != "" && fl != "-" {
		return "--" + fl + " / " + name
	}
	if field == "Command" {
		return "command (after --) / " + name
	}
	return name
}

// envError rewrites env's errors, which name Go fields, to name variables
// and flags; the offending value is left out.
func envError(err error) error {
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return fmt.Errorf("invalid %s* settings (%T)", envPrefix, err)
	}
	var out []error
	for _, e := range agg.Errors {
		var pe env.ParseError
		if errors.As(e, &pe) {
			out = append(out, fmt.Errorf("invalid %s: cannot parse it as %s", describe(pe.Name), kindOf(pe.Type)))
			continue
		}
		// Other errors of the package come from tags Config does not use;
		// their messages could quote a value, so only the kind is told.
		out = append(out, fmt.Errorf("invalid %s* settings (%T)", envPrefix, e))
	}
	return errors.Join(out...)
}

func kindOf(t reflect.Type) string {
	switch t {
	case reflect.TypeOf(time.Duration(0)):
		return "a duration (like 30s or 5m)"
	case reflect.TypeOf(Argv(nil)):
		return "a JSON array of strings"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Float64:
		return "a number"
	}
	return t.String()
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
	return func(name string) bool { return strings.HasPrefix(name, envPrefix) || hide[name] }
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
