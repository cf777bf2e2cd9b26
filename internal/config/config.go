// Package config owns mcp-bridge's settings: the Config of every flag and
// MCP_BRIDGE_* variable, loading it from the environment and the command
// line, the rules a valid Config keeps, the --config file of several
// servers, and the conversions of a Config into what the packages take
// (bridge.Config, httpapi.Options, httpapi.MountSpec). cmd/mcp-bridge only
// wires those together.
//
// No error of this package shows a setting's value: a token pasted where
// the name of its variable belongs (--token-env "$(cat token.txt)") must
// never come back in a terminal or a CI log. Errors name the flag and its
// variable (describe), a list's entry by its place, a file's server and
// field.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/mcp-bridge/mcp-bridge/aggregate"
	"github.com/mcp-bridge/mcp-bridge/approval"
	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
	"github.com/mcp-bridge/mcp-bridge/stdio"
)

// EnvPrefix prefixes every environment variable the bridge reads. No
// child ever sees a variable with this prefix.
const EnvPrefix = "MCP_BRIDGE_"

// The defaults of the settings that no other package interprets: the
// listener, the shutdown, the log, and the two features the command turns
// on that httpapi leaves off.
const (
	DefaultHost            = "127.0.0.1" // loopback: nobody else reaches a bridge that was not told to listen wider
	DefaultPort            = 8080
	DefaultShutdownTimeout = 10 * time.Second
	DefaultLogFormat       = "text"
	DefaultLogLevel        = "info"
	DefaultWeb             = true // httpapi.Options.Web is off by default; the command serves the page
	DefaultLegacySSE       = true // httpapi.Options.DisableLegacySSE
	DefaultModern          = true // httpapi.Options.DisableModern
)

// Config is every setting of the bridge. Each field is read from
// MCP_BRIDGE_<env tag>, then from the flag its flag tag names (flags
// win); help is its line in --help, meta the placeholder of its value
// there (FILE, NAME, URL, ...), group the topic it belongs to.
// docs/options.md, generated from these tags (WriteOptionsDoc), lists
// them all, one table per group.
//
// The zero value is the default configuration. A field whose default is
// its zero value (false, 0, "", none) is a plain value. A field with any
// other default is a pointer: nil means "not given", and the setting
// takes the default of the package that interprets it (Defaults lists
// them, read from those packages' Default* and mode constants; --help
// shows them, and so does docs/options.md). A value given is the user's, zero
// included, and is checked as such: --port 0 picks a free port,
// --request-timeout 0 turns the timeout off, --web=false turns the page
// off, --max-sessions 0 is refused. So no default is written twice, and
// no zero that means something is taken for "not given".
type Config struct {
	Host                 *string        `env:"HOST" flag:"host" meta:"ADDR" group:"common" help:"address to listen on; keep 127.0.0.1 unless the bridge sits behind auth"`
	Port                 *int           `env:"PORT" flag:"port" meta:"N" group:"common" help:"TCP port (0 picks a free one)"`
	Path                 *string        `env:"PATH" flag:"path" meta:"PATH" group:"listen" help:"path of the MCP endpoint"`
	SSEPath              string         `env:"SSE_PATH" flag:"sse-path" meta:"PATH" group:"listen" help:"path of the legacy HTTP+SSE stream (MCP 2024-11-05); default: sse next to --path (/sse for /mcp)"`
	MessagePath          string         `env:"MESSAGE_PATH" flag:"message-path" meta:"PATH" group:"listen" help:"path legacy HTTP+SSE clients POST to; default: message next to --path (/message for /mcp)"`
	LegacySSE            *bool          `env:"LEGACY_SSE" flag:"legacy-sse" group:"listen" help:"serve the legacy HTTP+SSE transport (2024-11-05) next to Streamable HTTP (not with --stateless); --legacy-sse=false turns it off"`
	Command              Argv           `env:"COMMAND" flag:"-" group:"server" help:"the MCP server's argv as a JSON array (or give it after --); empty serves the built-in demo server"`
	ConfigFile           string         `env:"CONFIG" flag:"config" meta:"FILE" group:"common" help:"JSON file of several MCP servers ({\"mcpServers\": {NAME: {command, args, env, ...}}}), each served at /servers/NAME/mcp instead of one command at --path; SIGHUP rereads it"`
	Aggregate            bool           `env:"AGGREGATE" flag:"aggregate" group:"aggregate" help:"with --config: also serve one MCP server made of the file's servers at --path (/mcp), their tools and prompts named SERVER__NAME and their resources mcp-bridge://SERVER/URI; the file's \"aggregate\" (true, false or a list of server names), when it has one, decides instead; a server's \"rename\" and \"tools\" ({allow, deny}) shape its part (docs/aggregate.md)"`
	AggregateListTimeout *time.Duration `env:"AGGREGATE_LIST_TIMEOUT" flag:"aggregate-list-timeout" meta:"DURATION" group:"aggregate" help:"how long a list of the aggregate (tools/list, ...) waits for each server's; a server past it is left out of that list, and logged"`
	Mode                 *string        `env:"MODE" flag:"mode" meta:"MODE" group:"common" help:"per-session: a process per MCP session; shared: one process multiplexed across sessions; per-identity: a process per principal, shared by its sessions"`
	ClaimEnv             []string       `env:"CLAIM_ENV" envSeparator:"," flag:"claim-env" meta:"CLAIM=VAR" group:"server" help:"put the principal's claim into its MCP server's environment as VAR (repeatable; per-session and per-identity modes)"`
	Prespawn             int            `env:"PRESPAWN" flag:"prespawn" meta:"N" group:"processes" help:"per-session mode: processes kept started and waiting, so a new session does not wait for one to start"`
	MaxChildren          int            `env:"MAX_CHILDREN" flag:"max-children" meta:"N" group:"processes" help:"most MCP server processes alive, waiting ones included (0: --max-sessions + --prespawn); over it, 503"`
	SpawnQueue           *int           `env:"SPAWN_QUEUE" flag:"spawn-queue" meta:"N" group:"processes" help:"most sessions waiting for a process to start; over it, 503"`
	Stateless            bool           `env:"STATELESS" flag:"stateless" group:"processes" help:"serve without sessions: every POST stands alone on one shared, already-initialized process; GET and DELETE answer 405"`
	Dir                  string         `env:"CWD" flag:"cwd" meta:"DIR" group:"server" help:"working directory of the MCP server process"`
	Env                  []string       `env:"ENV" envSeparator:"," flag:"env" meta:"K=V" group:"server" help:"a variable added to the MCP server's environment (repeatable)"`
	HideEnv              []string       `env:"HIDE_ENV" envSeparator:"," flag:"hide-env" meta:"NAME" group:"server" help:"names of variables not passed to the MCP server (repeatable); MCP_BRIDGE_* are never passed"`
	ResponseMode         *string        `env:"RESPONSE_MODE" flag:"response-mode" meta:"MODE" group:"streams" help:"auto: JSON when the answer comes first, else SSE; sse; json"`
	SSEDelay             *time.Duration `env:"SSE_DELAY" flag:"sse-delay" meta:"DURATION" group:"streams" help:"in auto mode, how long a request waits for its answer before its response becomes an SSE stream"`
	MaxBodyBytes         *int64         `env:"MAX_BODY_BYTES" flag:"max-body-bytes" meta:"BYTES" group:"limits" help:"largest POST body accepted (413 over it)"`
	MaxMessageBytes      *int           `env:"MAX_MESSAGE_BYTES" flag:"max-message-bytes" meta:"BYTES" group:"limits" help:"largest message accepted from the MCP server (one stdout line)"`
	MaxSessions          *int           `env:"MAX_SESSIONS" flag:"max-sessions" meta:"N" group:"limits" help:"most live sessions, each with its own process (503 over it)"`
	IdleTimeout          *time.Duration `env:"IDLE_TIMEOUT" flag:"idle-timeout" meta:"DURATION" group:"timeouts" help:"end a session after this long without traffic, requests or open streams"`
	UnreachableTimeout   *time.Duration `env:"UNREACHABLE_TIMEOUT" flag:"unreachable-timeout" meta:"DURATION" group:"timeouts" help:"end sooner a session no client can reach any more: its GET stream closed and nothing came since, or it never opened one and sent nothing after initialized (clients that stop without DELETE leave these, each with its process); 0: only --idle-timeout"`
	RequestTimeout       *time.Duration `env:"REQUEST_TIMEOUT" flag:"request-timeout" meta:"DURATION" group:"timeouts" help:"how long a request waits for the MCP server's answer; then the client gets JSON-RPC error -32007 and the server notifications/cancelled (0: no limit)"`
	InitTimeout          *time.Duration `env:"INIT_TIMEOUT" flag:"init-timeout" meta:"DURATION" group:"timeouts" help:"how long initialize waits for the MCP server's answer; then the client gets JSON-RPC error -32007, the session ends and the process is stopped (0: no limit)"`
	QueueLimit           *int           `env:"QUEUE_LIMIT" flag:"queue-limit" meta:"N" group:"streams" help:"server messages a session holds while no stream is open"`
	EventLogEvents       *int           `env:"EVENT_LOG_EVENTS" flag:"event-log-events" meta:"N" group:"streams" help:"SSE events a session keeps for clients that resume with Last-Event-ID, or that read slowly; older ones age out, and a reader whose unread events age out is disconnected"`
	EventLogBytes        *int           `env:"EVENT_LOG_BYTES" flag:"event-log-bytes" meta:"BYTES" group:"streams" help:"bytes of SSE events a session keeps for resuming clients (the newest event is kept whatever its size); also caps the messages it holds while no stream is open"`
	StopGrace            *time.Duration `env:"STOP_GRACE" flag:"stop-grace" meta:"DURATION" group:"processes" help:"wait after closing a process's stdin, and again after SIGTERM, before SIGKILL"`
	Containment          *string        `env:"CONTAINMENT" flag:"containment" meta:"STRATEGY" group:"processes" help:"how each MCP server process and everything it starts are kept from outliving their session and the bridge: auto (the best this system allows); pid-namespace, cgroup or process-group on Linux; process-group on macOS; job-object on Windows"`
	ShutdownTimeout      *time.Duration `env:"SHUTDOWN_TIMEOUT" flag:"shutdown-timeout" meta:"DURATION" group:"timeouts" help:"on SIGINT/SIGTERM, how long requests in flight may take to finish"`
	ReadTimeout          *time.Duration `env:"READ_TIMEOUT" flag:"read-timeout" meta:"DURATION" group:"timeouts" help:"most time a client may take to send a request, headers and body (408, or the connection closed, past it); response streams are not bounded by it"`
	SSEMaxDuration       time.Duration  `env:"SSE_MAX_DURATION" flag:"sse-max-duration" meta:"DURATION" group:"streams" help:"close the connection of a 2025-11-25 session's SSE stream after this long (the client resumes with Last-Event-ID); 0: never"`
	KeepAlive            *time.Duration `env:"KEEPALIVE" flag:"keepalive" meta:"DURATION" group:"streams" help:"interval of SSE keep-alive comments"`
	AllowOrigins         []string       `env:"ALLOW_ORIGINS" envSeparator:"," flag:"allow-origin" meta:"ORIGIN" group:"listen" help:"browser origin allowed besides loopback ones, exact or with * (repeatable)"`
	Web                  *bool          `env:"WEB" flag:"web" group:"web" help:"serve the web page at / (live view of sessions and children, and an MCP console); its feed needs the same token as the MCP endpoint; --web=false turns it off"`
	Modern               *bool          `env:"MODERN" flag:"modern" group:"modern" help:"serve MCP 2026-07-28 clients (stateless, no initialize) on the same endpoint as 2025 sessions; --modern=false answers them as a 2025-only server does, and dual-era clients fall back to initialize"`
	ChildProtocol        *string        `env:"CHILD_PROTOCOL" flag:"child-protocol" meta:"ERA" group:"modern" help:"what the MCP server speaks: auto (asks it once with server/discover), legacy (2025: the bridge initializes it and translates for 2026-07-28 clients) or modern (2026-07-28: requests pass through)"`
	InputTTL             *time.Duration `env:"INPUT_TTL" flag:"input-ttl" meta:"DURATION" group:"modern" help:"how long a call waits, holding its process, for a 2026-07-28 client's retry with the input the server asked for (sampling, elicitation, roots); then the server's questions are declined and the call cancelled"`
	MaxParked            *int           `env:"MAX_PARKED" flag:"max-parked" meta:"N" group:"modern" help:"most calls of one principal that may wait for its clients' input at once (calls on processes leased to them, running or parked), checked before the process starts; over it, 429"`
	ReplicaID            string         `env:"REPLICA_ID" flag:"replica-id" meta:"NAME" group:"modern" help:"this bridge's name in the requestState it gives 2026-07-28 clients, for a load balancer to route their retries by (letters, digits, - and _); default: random"`
	Sandbox              string         `env:"SANDBOX" flag:"sandbox" meta:"PRESET" group:"sandbox" help:"confine each MCP server process and what it starts: node or python (a preset: the interpreter's installation, its own HOME, package cache and TMPDIR, TCP port 443) or none (no preset); with no sandbox flag at all the server can do whatever the bridge's user can"`
	SandboxRead          []string       `env:"SANDBOX_READ" envSeparator:"," flag:"sandbox-read" meta:"PATH" group:"sandbox" help:"a file or directory the sandboxed server may read (repeatable; relative to --cwd)"`
	SandboxWrite         []string       `env:"SANDBOX_WRITE" envSeparator:"," flag:"sandbox-write" meta:"PATH" group:"sandbox" help:"a file or directory the sandboxed server may read and write (repeatable; relative to --cwd); a --sandbox-read path inside it stays writable"`
	SandboxExec          []string       `env:"SANDBOX_EXEC" envSeparator:"," flag:"sandbox-exec" meta:"PATH" group:"sandbox" help:"a file or directory the sandboxed server may read and execute (repeatable; relative to --cwd)"`
	SandboxNet           []string       `env:"SANDBOX_NET" envSeparator:"," flag:"sandbox-net" meta:"NET" group:"sandbox" help:"what the sandboxed server may connect to: none (default without a preset), a TCP port (443) or HOST:PORT (only the port is enforced), unix to allow unix sockets (repeatable)"`
	SandboxLimit         string         `env:"SANDBOX_LIMIT" flag:"sandbox-limit" meta:"LIMITS" group:"sandbox" help:"limits of the sandboxed server, each per process: mem=512M,procs=64,files=256,cpu=60s (any of them)"`
	SandboxEnforce       *string        `env:"SANDBOX_ENFORCE" flag:"sandbox-enforce" meta:"MODE" group:"sandbox" help:"required: refuse to start a server when this system cannot enforce a right its sandbox asks for; best-effort: start it and log each right not enforced"`
	PinSHA256            string         `env:"PIN_SHA256" flag:"pin-sha256" meta:"HEX" group:"sandbox" help:"the SHA-256 the server's program must have (mcp-bridge pin -- CMD prints it); any other is refused"`
	LogFormat            *string        `env:"LOG_FORMAT" flag:"log-format" meta:"FORMAT" group:"log" help:"text or json"`
	LogLevel             *string        `env:"LOG_LEVEL" flag:"log-level" meta:"LEVEL" group:"log" help:"debug, info, warn or error"`

	// Who may connect (docs/auth.md). All off by default.
	TokenEnvs               []string `env:"TOKEN_ENVS" envSeparator:"," flag:"token-env" meta:"NAME" group:"common" help:"name of an environment variable holding an accepted bearer token; the request's principal is the variable's name (repeatable)"`
	JWTSecretEnv            string   `env:"JWT_SECRET_ENV" flag:"jwt-secret-env" meta:"NAME" group:"auth" help:"name of an environment variable holding the HMAC secret (32+ bytes) of HS256/384/512 JWTs"`
	JWTPublicKey            string   `env:"JWT_PUBLIC_KEY" flag:"jwt-public-key" meta:"FILE" group:"auth" help:"PEM file of the public key(s) of RS*/PS*/ES*/EdDSA JWTs"`
	JWKSURL                 string   `env:"JWKS_URL" flag:"jwks-url" meta:"URL" group:"auth" help:"URL of the JWT issuer's JWKS (https, or http on loopback); refreshed every 15 min and on an unknown kid"`
	JWTIssuer               string   `env:"JWT_ISSUER" flag:"jwt-issuer" meta:"ISS" group:"auth" help:"the iss every JWT must carry (required with a JWT key)"`
	JWTAudiences            []string `env:"JWT_AUDIENCES" envSeparator:"," flag:"jwt-audience" meta:"AUD" group:"auth" help:"an aud a JWT may carry (repeatable); default --public-url"`
	RequireScopes           []string `env:"REQUIRE_SCOPES" envSeparator:"," flag:"require-scope" meta:"SCOPE" group:"auth" help:"a scope every JWT must grant in scope or scp, else 403 (repeatable)"`
	PublicURL               string   `env:"PUBLIC_URL" flag:"public-url" meta:"URL" group:"auth" help:"the MCP endpoint's URL as clients reach it (https://bridge.example.com/mcp): the OAuth resource, and the default JWT audience; default: from each request's Host"`
	AuthServers             []string `env:"AUTH_SERVERS" envSeparator:"," flag:"auth-server" meta:"URL" group:"auth" help:"authorization server listed in /.well-known/oauth-protected-resource (repeatable); default --jwt-issuer"`
	MaxSessionsPerPrincipal int      `env:"MAX_SESSIONS_PER_PRINCIPAL" flag:"max-sessions-per-principal" meta:"N" group:"principals" help:"most live sessions of one principal (0: only --max-sessions); over it, 429"`
	MaxInFlightPerPrincipal int      `env:"MAX_INFLIGHT_PER_PRINCIPAL" flag:"max-inflight-per-principal" meta:"N" group:"principals" help:"most POSTs of one principal served at once (0: no cap); over it, 429"`
	MaxStreamsPerPrincipal  *int     `env:"MAX_STREAMS_PER_PRINCIPAL" flag:"max-streams-per-principal" meta:"N" group:"principals" help:"most streams one principal holds open at once: sessions' GET streams, legacy SSE streams, 2026-07-28 listens and answers sent as SSE (0: no cap); over it, 429"`
	RateLimit               float64  `env:"RATE_LIMIT" flag:"rate-limit" meta:"N" group:"principals" help:"requests per second one principal may send (0: no limit); over it, 429 with Retry-After"`
	RateBurst               int      `env:"RATE_BURST" flag:"rate-burst" meta:"N" group:"principals" help:"requests one principal may send at once above --rate-limit (0: one second's worth)"`
	ToolAllow               []string `env:"TOOL_ALLOW" envSeparator:"," flag:"tool-allow" meta:"SUBJECT=GLOB" group:"principals" help:"the tools SUBJECT (*, scope:NAME, token:NAME, jwt:SUB or a principal name) may list and call; once a subject has allow rules, other tools are denied to it (repeatable)"`
	ToolDeny                []string `env:"TOOL_DENY" envSeparator:"," flag:"tool-deny" meta:"SUBJECT=GLOB" group:"principals" help:"tools SUBJECT may neither list nor call; deny wins over allow (repeatable)"`
	// A human's yes before risky tools run (docs/approvals.md).
	ToolApprove              []string       `env:"TOOL_APPROVE" envSeparator:"," flag:"tool-approve" meta:"SUBJECT=GLOB" group:"approvals" help:"tools whose calls by SUBJECT (as --tool-allow) wait for a human's yes before they run, decided after --tool-allow and --tool-deny; GLOB@HINT holds only the tools a trusted server marks with the annotation HINT (destructiveHint, readOnlyHint, idempotentHint, openWorldHint; @!HINT: marked not so) (repeatable)"`
	TrustAnnotations         bool           `env:"TRUST_ANNOTATIONS" flag:"trust-annotations" group:"approvals" help:"believe the tool annotations of the server after --, so that a --tool-approve rule's @HINT can spare one of its tools (--config servers: \"trusted\": true); without it, a rule with a hint holds every tool its glob matches"`
	Approvers                []string       `env:"APPROVERS" envSeparator:"," flag:"approver" meta:"SUBJECT" group:"approvals" help:"SUBJECT (as --admin; scope:approvals:write for JWTs with that scope) who may approve or deny held calls through /approvals and the web page (repeatable); --admin subjects may only see them"`
	ApprovalTimeout          *time.Duration `env:"APPROVAL_TIMEOUT" flag:"approval-timeout" meta:"DURATION" group:"approvals" help:"how long a held call waits for a decision; then it is denied as expired and never reaches the server"`
	ApprovalSeparateApprover bool           `env:"APPROVAL_SEPARATE_APPROVER" flag:"approval-separate-approver" group:"approvals" help:"nobody approves a call of their own: an approver who made the call is refused, and the caller's user is never asked"`
	ApprovalFailOpen         bool           `env:"APPROVAL_FAIL_OPEN" flag:"approval-fail-open" group:"approvals" help:"run a held call that nobody could be asked about (its client cannot be asked and no --approver is set) instead of denying it; a denial or an expiry still denies; logged as a warning at start"`
	MaxApprovals             *int           `env:"MAX_APPROVALS" flag:"max-approvals" meta:"N" group:"approvals" help:"most calls held for approval at once; past it a call is refused at once, saying so"`
	MaxApprovalsPerPrincipal *int           `env:"MAX_APPROVALS_PER_PRINCIPAL" flag:"max-approvals-per-principal" meta:"N" group:"approvals" help:"most calls of one principal held for approval at once; past it a call is refused at once, saying so"`
	AuditLog                 string         `env:"AUDIT_LOG" flag:"audit-log" meta:"FILE" group:"log" help:"file to append one JSON line per request to (principal, session, method, tool, outcome, duration), and one per step of an approval; - for stdout"`
	AuditArguments           bool           `env:"AUDIT_ARGUMENTS" flag:"audit-arguments" group:"log" help:"add tools/call arguments to the audit log (they may hold personal data or secrets)"`

	// Who sees what of the others (docs/web-page.md, docs/operations.md).
	Admins          []string `env:"ADMINS" envSeparator:"," flag:"admin" meta:"SUBJECT" group:"web" help:"SUBJECT (*, scope:NAME, token:NAME, jwt:SUB or a principal name) who sees every session and child on the web page, stderr included; others see their own (repeatable)"`
	RegistryAdmins  []string `env:"REGISTRY_ADMINS" envSeparator:"," flag:"registry-admin" meta:"SUBJECT" group:"web" help:"SUBJECT (as --admin) who may change the --config servers at run time, through the registry API (/admin/servers) and the web page: add, change, disable, remove; --registry-admin scope:registry:write grants it to JWTs with that scope; --admin subjects may only read (repeatable)"`
	MetricsTokenEnv string   `env:"METRICS_TOKEN_ENV" flag:"metrics-token-env" meta:"NAME" group:"web" help:"name of an environment variable holding the bearer token /metrics then requires (default: /metrics is open without client authentication, closed with it)"`
	MetricsPublic   bool     `env:"METRICS_PUBLIC" flag:"metrics-public" group:"web" help:"serve /metrics to anyone even when MCP clients must authenticate (without it and without --metrics-token-env, /metrics then answers 403)"`
}

// Groups are the topics of the settings (each field's group tag), in the
// order --help and docs/options.md present them. The first holds the
// handful of flags every user needs, in the order of CommonFlags.
var Groups = []struct{ Name, Title string }{
	{"common", "Common flags"},
	{"server", "The MCP server"},
	{"aggregate", "One endpoint for many servers"},
	{"processes", "Processes"},
	{"sandbox", "Sandbox and pinned binaries"},
	{"listen", "Listening"},
	{"streams", "Responses and streams"},
	{"timeouts", "Timeouts"},
	{"limits", "Limits"},
	{"auth", "Authentication"},
	{"principals", "Per-principal limits and tool policy"},
	{"approvals", "Approvals"},
	{"modern", "MCP 2026-07-28 clients"},
	{"web", "Web page and metrics"},
	{"log", "Logs and audit"},
}

// CommonFlags are the flags of the "common" group, in the order --help
// lists them: where to listen, who may connect, what to serve, and how.
var CommonFlags = []string{"port", "host", "token-env", "config", "mode"}

// Defaults is the configuration the bridge runs with when nothing is
// given: every pointer field of Config set to its default, each read from
// the package that interprets the setting. --help shows these values.
func Defaults() Config {
	return Config{
		Host:                     ptr(DefaultHost),
		Port:                     ptr(DefaultPort),
		Path:                     ptr(httpapi.DefaultPath),
		LegacySSE:                ptr(DefaultLegacySSE),
		Mode:                     ptr(bridge.ModePerSession),
		SpawnQueue:               ptr(bridge.DefaultSpawnQueue),
		ResponseMode:             ptr(httpapi.ModeAuto),
		SSEDelay:                 ptr(httpapi.DefaultSSEDelay),
		MaxBodyBytes:             ptr[int64](httpapi.DefaultMaxBodyBytes),
		MaxMessageBytes:          ptr(stdio.DefaultMaxLineBytes),
		MaxSessions:              ptr(bridge.DefaultMaxSessions),
		IdleTimeout:              ptr(bridge.DefaultIdleTimeout),
		UnreachableTimeout:       ptr(bridge.DefaultUnreachableTimeout),
		RequestTimeout:           ptr(bridge.DefaultRequestTimeout),
		InitTimeout:              ptr(bridge.DefaultInitTimeout),
		QueueLimit:               ptr(bridge.DefaultQueueLimit),
		EventLogEvents:           ptr(bridge.DefaultEventLogEvents),
		EventLogBytes:            ptr(bridge.DefaultEventLogBytes),
		StopGrace:                ptr(stdio.DefaultStopGrace),
		Containment:              ptr(string(stdio.ContainAuto)),
		ShutdownTimeout:          ptr(DefaultShutdownTimeout),
		ReadTimeout:              ptr(httpapi.DefaultReadTimeout),
		KeepAlive:                ptr(httpapi.DefaultKeepAlive),
		Web:                      ptr(DefaultWeb),
		Modern:                   ptr(DefaultModern),
		ChildProtocol:            ptr(bridge.ChildProtocolAuto),
		InputTTL:                 ptr(bridge.DefaultInputTTL),
		MaxParked:                ptr(bridge.DefaultMaxParked),
		ApprovalTimeout:          ptr(approval.DefaultTimeout),
		MaxApprovals:             ptr(approval.DefaultMaxPending),
		MaxApprovalsPerPrincipal: ptr(approval.DefaultMaxPendingPerPrincipal),
		MaxStreamsPerPrincipal:   ptr(httpapi.DefaultMaxStreamsPerPrincipal),
		SandboxEnforce:           ptr(stdio.EnforceRequired),
		LogFormat:                ptr(DefaultLogFormat),
		LogLevel:                 ptr(DefaultLogLevel),
		AggregateListTimeout:     ptr(aggregate.DefaultListTimeout),
	}
}

// withDefaults is c as the bridge runs it: every field not given takes
// its value from Defaults, so no pointer field is nil. The defaults are
// valid, so checking this checks what was given.
func (c Config) withDefaults() Config {
	v := reflect.ValueOf(&c).Elem()
	def := reflect.ValueOf(Defaults())
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Pointer && f.IsNil() {
			f.Set(def.Field(i))
		}
	}
	return c
}

func ptr[T any](v T) *T { return &v }

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

// Load reads the environment (environ, as os.Environ gives it), then the
// flags (args), then validates. The returned error names the flag and the
// variable at fault, never a value that could be a secret. --help prints
// the usage to usage and returns flag.ErrHelp; --version returns
// ErrVersion.
func Load(args, environ []string, usage io.Writer) (Config, error) {
	cfg, err := env.ParseAsWithOptions[Config](env.Options{Prefix: EnvPrefix, Environment: envMap(environ)})
	if err != nil {
		return cfg, envError(err)
	}
	if err := parseFlags(&cfg, args, usage); err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}

// describe names a field the way a user sets it: flag and variable.
func describe(field string) string {
	f, ok := reflect.TypeFor[Config]().FieldByName(field)
	if !ok {
		return field
	}
	name := EnvPrefix + f.Tag.Get("env")
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
		return fmt.Errorf("invalid %s* settings (%T)", EnvPrefix, err)
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
		out = append(out, fmt.Errorf("invalid %s* settings (%T)", EnvPrefix, e))
	}
	return errors.Join(out...)
}

// kindOf says what a setting of type t takes, in an error.
func kindOf(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case reflect.TypeFor[time.Duration]():
		return "a duration (like 30s or 5m)"
	case reflect.TypeFor[Argv]():
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

// envMap is environ (KEY=value entries) as a map.
func envMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// lookupIn is a lookup function over environ, as os.LookupEnv is over the
// process's.
func lookupIn(environ []string) func(string) (string, bool) {
	vars := envMap(environ)
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}
