package config

// The rules a valid Config keeps. Each rule is one small function that
// checks one setting, or the settings that depend on each other, of the
// configuration as it will run (defaults applied: the defaults keep every
// rule, so what fails was given). A rule reports what is wrong through
// bad, naming the field; bad names its flag and variable, never its
// value.

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
	"github.com/mcp-bridge/mcp-bridge/stdio"
)

// report is how a rule tells what is wrong: the field at fault, and why.
type report func(field, format string, a ...any)

// A rule is one check of the settings, named for its tests.
type rule struct {
	name  string
	check func(c *Config, bad report)
}

// rules are every check of Validate, in the order their errors are told.
var rules = []rule{
	{"host", checkHost},
	{"port", checkPort},
	{"cwd", checkDir},
	{"allow-origin", checkOrigins},
	{"path", checkPath},
	{"legacy paths", checkLegacyPaths},
	{"legacy paths differ", checkLegacyPathsDiffer},
	{"sandbox", checkSandbox},
	{"containment", oneOf("Containment", "want auto, pid-namespace, cgroup, job-object or process-group", containments()...)},
	{"child-protocol", oneOf("ChildProtocol", "want auto, legacy or modern", bridge.ChildProtocolAuto, bridge.ChildProtocolLegacy, bridge.ChildProtocolModern)},
	{"replica-id", checkReplicaID},
	{"mode", oneOf("Mode", "want per-session, shared or per-identity", bridge.ModePerSession, bridge.ModeShared, bridge.ModePerIdentity)},
	{"claim-env", checkClaimEnv},
	{"claim-env needs a process per principal", checkClaimEnvMode},
	{"timeouts that 0 turns off", notNegative("must not be negative (0 turns it off)", "SSEMaxDuration", "RequestTimeout", "InitTimeout", "UnreachableTimeout")},
	{"response-mode", oneOf("ResponseMode", "want auto, sse or json", httpapi.ModeAuto, httpapi.ModeSSE, httpapi.ModeJSON)},
	{"log-format", oneOf("LogFormat", "want text or json", "text", "json")},
	{"log-level", checkLogLevel},
	{"positive", positive("must be greater than zero",
		"EventLogBytes", "EventLogEvents", "IdleTimeout", "KeepAlive", "MaxBodyBytes", "MaxMessageBytes", "MaxSessions",
		"QueueLimit", "ReadTimeout", "SSEDelay", "ShutdownTimeout", "StopGrace", "InputTTL", "MaxParked")},
	{"prespawn", checkPrespawn},
	{"spawn-queue", positive("must be greater than zero", "SpawnQueue")},
	{"prespawn needs per-session mode", checkPrespawnMode},
	{"env", checkEnv},
	{"hide-env", checkHideEnv},
	{"command", checkCommand},
	{"config and command", checkConfigOrCommand},
	{"aggregate needs --config", checkAggregate},
	{"aggregate-list-timeout", positive("must be greater than zero", "AggregateListTimeout")},

	// Who may connect (authRules).
	{"token-env", checkTokenEnvs},
	{"jwt-secret-env", checkJWTSecretEnv},
	{"one JWT key source", checkOneJWTKey},
	{"a JWT key needs an issuer", checkJWTIssuer},
	{"a JWT key needs an audience", checkJWTAudience},
	{"JWT settings need a key", checkJWTNeedsKey},
	{"jwt-audience", checkAudiences},
	{"public-url", checkPublicURL},
	{"auth-server", checkAuthServers},
	{"auth-server needs authentication", checkAuthServersNeedAuth},
	{"per-principal limits", notNegative("must not be negative",
		"MaxInFlightPerPrincipal", "MaxSessionsPerPrincipal", "MaxStreamsPerPrincipal", "RateBurst", "RateLimit")},
	{"tool rules", checkToolRules},
	{"audit-arguments", checkAuditArguments},

	// A human's yes before risky tools run.
	{"tool-approve", checkApproveRules},
	{"approver", checkApprovers},
	{"approver needs authentication", checkApproversNeedAuth},
	{"approval-timeout", positive("must be greater than zero", "ApprovalTimeout")},
	{"max-approvals", positive("must be greater than zero", "MaxApprovals", "MaxApprovalsPerPrincipal")},
	{"separate approver needs approvers", checkSeparateApprover},
	{"trust-annotations is for the command", checkTrustAnnotations},

	// Who sees what of the others.
	{"admin", checkAdmins},
	{"admin needs authentication", checkAdminsNeedAuth},
	{"registry-admin", checkRegistryAdmins},
	{"registry-admin needs authentication", checkRegistryAdminsNeedAuth},
	{"registry-admin needs --config", checkRegistryAdminsNeedConfig},
	{"metrics-token-env", checkMetricsTokenEnv},
	{"metrics-public", checkMetricsPublic},
}

// Validate checks every setting and returns every problem at once, each
// naming the flag and the variable, never a value.
func (c *Config) Validate() error {
	r := c.withDefaults()
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, invalid(field, format, a...))
	}
	for _, rl := range rules {
		rl.check(&r, bad)
	}
	return errors.Join(errs...)
}

// invalid is the error of a setting: "invalid --flag / VARIABLE: why".
func invalid(field, format string, a ...any) error {
	return fmt.Errorf("invalid %s: %s", describe(field), fmt.Sprintf(format, a...))
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

// --- rules of a kind, for several fields ---

// oneOf: the field (a string) is one of want.
func oneOf(field, why string, want ...string) func(*Config, report) {
	return func(c *Config, bad report) {
		if !slices.Contains(want, fieldValue(c, field).String()) {
			bad(field, "%s", why)
		}
	}
}

// positive: each field (a number or a duration) is greater than zero.
func positive(why string, fields ...string) func(*Config, report) {
	return func(c *Config, bad report) {
		for _, f := range fields {
			if sign(fieldValue(c, f)) <= 0 {
				bad(f, "%s", why)
			}
		}
	}
}

// notNegative: no field (a number or a duration) is below zero.
func notNegative(why string, fields ...string) func(*Config, report) {
	return func(c *Config, bad report) {
		for _, f := range fields {
			if sign(fieldValue(c, f)) < 0 {
				bad(f, "%s", why)
			}
		}
	}
}

// fieldValue is the value of c's field, through its pointer if it has
// one. c has its defaults applied, so no pointer is nil.
func fieldValue(c *Config, field string) reflect.Value {
	v := reflect.ValueOf(c).Elem().FieldByName(field)
	if !v.IsValid() {
		panic("config: no field " + field)
	}
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	return v
}

// sign is -1, 0 or 1 as the number v is below, at or above zero.
func sign(v reflect.Value) int {
	switch v.Kind() {
	case reflect.Int, reflect.Int64:
		return cmpZero(v.Int())
	case reflect.Float64:
		return cmpZero(v.Float())
	}
	panic("config: not a number: " + v.Type().String())
}

func cmpZero[T int64 | float64](x T) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

func containments() []string {
	var out []string
	for _, c := range stdio.Containments {
		out = append(out, string(c))
	}
	return out
}

// --- the listener and the endpoint ---

func checkHost(c *Config, bad report) {
	if h := *c.Host; h != "" && net.ParseIP(h) == nil && !hostName.MatchString(h) {
		bad("Host", "not an IP address or a host name")
	}
}

func checkPort(c *Config, bad report) {
	if p := *c.Port; p < 0 || p > 65535 {
		bad("Port", "not a TCP port (0-65535)")
	}
}

func checkDir(c *Config, bad report) {
	if c.Dir == "" {
		return
	}
	if fi, err := os.Stat(c.Dir); err != nil || !fi.IsDir() {
		bad("Dir", "not a directory")
	}
}

func checkOrigins(c *Config, bad report) {
	for i, o := range c.AllowOrigins {
		if !originShape(o) {
			bad("AllowOrigins", "%snot an origin: want scheme://host[:port], with * for any run of characters", entry(i, len(c.AllowOrigins)))
		}
	}
}

// originShape: scheme://host[:port], as browsers send Origin, or such a
// pattern with *; checked so that a mistake (a token in the wrong flag,
// say) is refused rather than allowed as an origin nobody sends.
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

func checkPath(c *Config, bad report) {
	if p := *c.Path; !strings.HasPrefix(p, "/") || p == "/healthz" {
		bad("Path", "must start with / and not be /healthz")
	}
}

func checkLegacyPaths(c *Config, bad report) {
	for _, f := range []struct{ field, path string }{{"SSEPath", c.SSEPath}, {"MessagePath", c.MessagePath}} {
		if f.path != "" && (!strings.HasPrefix(f.path, "/") || f.path == *c.Path || f.path == "/healthz") {
			bad(f.field, "must start with / and be neither --path nor /healthz")
		}
	}
}

func checkLegacyPathsDiffer(c *Config, bad report) {
	if c.SSEPath != "" && c.SSEPath == c.MessagePath {
		bad("MessagePath", "must differ from --sse-path")
	}
}

func checkLogLevel(c *Config, bad report) {
	switch strings.ToLower(*c.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		bad("LogLevel", "want debug, info, warn or error")
	}
}

// --- the server and its processes ---

func checkClaimEnv(c *Config, bad report) {
	for i, ce := range c.ClaimEnv {
		claim, name, ok := strings.Cut(ce, "=")
		switch {
		case !ok || claim == "" || !envName.MatchString(name):
			bad("ClaimEnv", "%snot CLAIM=VARIABLE: a claim, and the NAME of a variable to put it in", entry(i, len(c.ClaimEnv)))
		case strings.HasPrefix(name, EnvPrefix):
			bad("ClaimEnv", "%svariables named %s* are the bridge's own", entry(i, len(c.ClaimEnv)), EnvPrefix)
		}
	}
}

// sharedProcess: one process serves every principal.
func (c *Config) sharedProcess() bool { return *c.Mode == bridge.ModeShared || c.Stateless }

func checkClaimEnvMode(c *Config, bad report) {
	if len(c.ClaimEnv) > 0 && c.sharedProcess() {
		bad("ClaimEnv", "a shared process serves every principal: use --mode per-identity or per-session")
	}
}

func checkPrespawn(c *Config, bad report) {
	if c.Prespawn < 0 || c.MaxChildren < 0 {
		bad("Prespawn", "--prespawn and --max-children must not be negative")
	}
}

func checkPrespawnMode(c *Config, bad report) {
	if c.Prespawn > 0 && c.sharedProcess() {
		bad("Prespawn", "a warm pool serves per-session mode only")
	}
}

func checkEnv(c *Config, bad report) {
	for i, kv := range c.Env {
		// Only the name is shown: the value may well be a secret.
		name, _, ok := strings.Cut(kv, "=")
		switch {
		case !ok || !envName.MatchString(name):
			bad("Env", "%snot NAME=value with a valid NAME", entry(i, len(c.Env)))
		case strings.HasPrefix(name, EnvPrefix):
			bad("Env", "%svariables named %s* are the bridge's own and never reach the server", entry(i, len(c.Env)), EnvPrefix)
		}
	}
}

func checkHideEnv(c *Config, bad report) {
	for i, name := range c.HideEnv {
		if !envName.MatchString(name) {
			bad("HideEnv", "%snot a valid variable name: the flag takes the NAME of a variable", entry(i, len(c.HideEnv)))
		}
	}
}

func checkCommand(c *Config, bad report) {
	if len(c.Command) > 0 && c.Command[0] == "" {
		bad("Command", "the program name is empty")
	}
}

func checkConfigOrCommand(c *Config, bad report) {
	if c.ConfigFile != "" && len(c.Command) > 0 {
		bad("ConfigFile", "give either --config or a command, not both")
	}
}

// checkAggregate: the aggregate is made of the servers of a --config
// file; one command is one server, served as it is.
func checkAggregate(c *Config, bad report) {
	if c.Aggregate && c.ConfigFile == "" {
		bad("Aggregate", "serves the servers of a --config file as one: give --config")
	}
}

// replicaIDPattern: a replica's name goes into requestState handles
// (mb1.<replica>.<random>) and a load balancer's routing rules.
var replicaIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

func checkReplicaID(c *Config, bad report) {
	if c.ReplicaID != "" && !replicaIDPattern.MatchString(c.ReplicaID) {
		bad("ReplicaID", "want 1 to 32 letters, digits, - or _")
	}
}
