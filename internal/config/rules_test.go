package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRules runs each rule of Validate alone on what a user gave (in,
// defaults applied as Validate applies them). want is what the error
// must say, flag and variable included; "" means in keeps the rule.
// Every rule has a case that breaks it.
func TestRules(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	jwt := func(c Config) Config {
		c.JWTSecretEnv, c.JWTIssuer, c.PublicURL = "JWT_SECRET", "https://issuer.example", "https://bridge.example/mcp"
		return c
	}
	tests := []struct {
		rule string
		name string
		in   Config
		want string
	}{
		{"host", "an IP address", Config{Host: ptr("10.0.0.1")}, ""},
		{"host", "a host name", Config{Host: ptr("bridge.example.com")}, ""},
		{"host", "empty: every address", Config{Host: ptr("")}, ""},
		{"host", "a token", Config{Host: ptr("sk_live_123")}, "--host / MCP_BRIDGE_HOST: not an IP address or a host name"},

		{"port", "0 picks a free one", Config{Port: ptr(0)}, ""},
		{"port", "the highest", Config{Port: ptr(65535)}, ""},
		{"port", "too high", Config{Port: ptr(65536)}, "--port / MCP_BRIDGE_PORT: not a TCP port (0-65535)"},
		{"port", "negative", Config{Port: ptr(-1)}, "--port / MCP_BRIDGE_PORT"},

		{"cwd", "a directory", Config{Dir: dir}, ""},
		{"cwd", "a file", Config{Dir: file}, "--cwd / MCP_BRIDGE_CWD: not a directory"},
		{"cwd", "missing", Config{Dir: filepath.Join(dir, "none")}, "--cwd / MCP_BRIDGE_CWD: not a directory"},

		{"allow-origin", "exact", Config{AllowOrigins: []string{"https://app.example:8443"}}, ""},
		{"allow-origin", "a pattern", Config{AllowOrigins: []string{"https://*.example.com"}}, ""},
		{"allow-origin", "a path", Config{AllowOrigins: []string{"https://app.example/x"}}, "--allow-origin / MCP_BRIDGE_ALLOW_ORIGINS: not an origin"},
		{"allow-origin", "the 2nd of two", Config{AllowOrigins: []string{"https://a.example", "token"}}, "--allow-origin / MCP_BRIDGE_ALLOW_ORIGINS: its 2nd entry: not an origin"},
		{"allow-origin", "a bad pattern", Config{AllowOrigins: []string{"https://[*.example"}}, "not an origin"},

		{"path", "another path", Config{Path: ptr("/api/mcp")}, ""},
		{"path", "relative", Config{Path: ptr("mcp")}, "--path / MCP_BRIDGE_PATH: must start with / and not be /healthz"},
		{"path", "empty", Config{Path: ptr("")}, "--path / MCP_BRIDGE_PATH"},
		{"path", "/healthz", Config{Path: ptr("/healthz")}, "--path / MCP_BRIDGE_PATH"},

		{"legacy paths", "given", Config{SSEPath: "/events", MessagePath: "/post"}, ""},
		{"legacy paths", "the default --path", Config{SSEPath: "/mcp"}, "--sse-path / MCP_BRIDGE_SSE_PATH: must start with / and be neither --path nor /healthz"},
		{"legacy paths", "--path", Config{Path: ptr("/x"), MessagePath: "/x"}, "--message-path / MCP_BRIDGE_MESSAGE_PATH"},
		{"legacy paths", "relative", Config{MessagePath: "message"}, "--message-path / MCP_BRIDGE_MESSAGE_PATH"},
		{"legacy paths differ", "the same", Config{SSEPath: "/a", MessagePath: "/a"}, "--message-path / MCP_BRIDGE_MESSAGE_PATH: must differ from --sse-path"},

		{"sandbox", "a preset", Config{Sandbox: "node", SandboxRead: []string{dir}, SandboxNet: []string{"443", "127.0.0.1:8080"}, SandboxLimit: "mem=512M,procs=64,files=256,cpu=60s"}, ""},
		{"sandbox", "best-effort", Config{SandboxEnforce: ptr("best-effort"), PinSHA256: strings.Repeat("0a", 32)}, ""},
		{"sandbox", "an unknown preset", Config{Sandbox: "ruby"}, "--sandbox / MCP_BRIDGE_SANDBOX: want node, python, none"},
		{"sandbox", "a bad limit", Config{SandboxLimit: "mem=lots"}, "--sandbox-limit / MCP_BRIDGE_SANDBOX_LIMIT: want KEY=VALUE pairs"},
		{"sandbox", "an unknown limit", Config{SandboxLimit: "disk=1G"}, "--sandbox-limit / MCP_BRIDGE_SANDBOX_LIMIT"},
		{"sandbox", "none with a port", Config{SandboxNet: []string{"none", "443"}}, "--sandbox-net / MCP_BRIDGE_SANDBOX_NET: want none, unix, a TCP port"},
		{"sandbox", "a port out of range", Config{SandboxNet: []string{"70000"}}, "--sandbox-net / MCP_BRIDGE_SANDBOX_NET"},
		{"sandbox", "an unknown enforcement", Config{SandboxEnforce: ptr("strict")}, "--sandbox-enforce / MCP_BRIDGE_SANDBOX_ENFORCE: want required or best-effort"},
		{"sandbox", "a pin that is not a hash", Config{PinSHA256: "sk_live_123"}, "--pin-sha256 / MCP_BRIDGE_PIN_SHA256: want the SHA-256 in lowercase hex"},
		{"sandbox", "a pin in capitals", Config{PinSHA256: strings.Repeat("0A", 32)}, "--pin-sha256 / MCP_BRIDGE_PIN_SHA256"},
		{"sandbox", "a missing path", Config{SandboxWrite: []string{dir, filepath.Join(dir, "none")}}, "--sandbox-write / MCP_BRIDGE_SANDBOX_WRITE: its 2nd entry: no such file or directory"},
		{"sandbox", "a path relative to --cwd", Config{Dir: dir, SandboxExec: []string{"file"}}, ""},
		{"containment", "cgroup", Config{Containment: ptr("cgroup")}, ""},
		{"containment", "unknown", Config{Containment: ptr("chroot")}, "--containment / MCP_BRIDGE_CONTAINMENT: want auto, pid-namespace, cgroup, job-object or process-group"},
		{"mode", "per-identity", Config{Mode: ptr("per-identity")}, ""},
		{"child-protocol", "legacy", Config{ChildProtocol: ptr("legacy")}, ""},
		{"child-protocol", "unknown", Config{ChildProtocol: ptr("2026")}, "--child-protocol / MCP_BRIDGE_CHILD_PROTOCOL: want auto, legacy or modern"},
		{"replica-id", "a name", Config{ReplicaID: "eu-1_b"}, ""},
		{"replica-id", "a dot", Config{ReplicaID: "eu.1"}, "--replica-id / MCP_BRIDGE_REPLICA_ID: want 1 to 32 letters, digits, - or _"},
		{"mode", "unknown", Config{Mode: ptr("pooled")}, "--mode / MCP_BRIDGE_MODE: want per-session, shared or per-identity"},
		{"response-mode", "json", Config{ResponseMode: ptr("json")}, ""},
		{"response-mode", "unknown", Config{ResponseMode: ptr("xml")}, "--response-mode / MCP_BRIDGE_RESPONSE_MODE: want auto, sse or json"},
		{"log-format", "json", Config{LogFormat: ptr("json")}, ""},
		{"log-format", "unknown", Config{LogFormat: ptr("xml")}, "--log-format / MCP_BRIDGE_LOG_FORMAT: want text or json"},
		{"log-level", "any case", Config{LogLevel: ptr("WARN")}, ""},
		{"log-level", "unknown", Config{LogLevel: ptr("trace")}, "--log-level / MCP_BRIDGE_LOG_LEVEL: want debug, info, warn or error"},

		{"claim-env", "claim=VAR", Config{ClaimEnv: []string{"sub=MCP_USER"}}, ""},
		{"claim-env", "no variable", Config{ClaimEnv: []string{"sub"}}, "--claim-env / MCP_BRIDGE_CLAIM_ENV: not CLAIM=VARIABLE"},
		{"claim-env", "the bridge's prefix", Config{ClaimEnv: []string{"sub=MCP_USER", "email=MCP_BRIDGE_X"}}, "--claim-env / MCP_BRIDGE_CLAIM_ENV: its 2nd entry: variables named MCP_BRIDGE_* are the bridge's own"},
		{"claim-env needs a process per principal", "per-identity", Config{ClaimEnv: []string{"sub=U"}, Mode: ptr("per-identity")}, ""},
		{"claim-env needs a process per principal", "shared", Config{ClaimEnv: []string{"sub=U"}, Mode: ptr("shared")}, "--claim-env / MCP_BRIDGE_CLAIM_ENV: a shared process serves every principal"},
		{"claim-env needs a process per principal", "stateless", Config{ClaimEnv: []string{"sub=U"}, Stateless: true}, "--claim-env / MCP_BRIDGE_CLAIM_ENV: a shared process"},

		{"timeouts that 0 turns off", "0", Config{RequestTimeout: ptr(time.Duration(0)), InitTimeout: ptr(time.Duration(0))}, ""},
		{"timeouts that 0 turns off", "negative request timeout", Config{RequestTimeout: ptr(-time.Second)}, "--request-timeout / MCP_BRIDGE_REQUEST_TIMEOUT: must not be negative (0 turns it off)"},
		{"timeouts that 0 turns off", "negative init timeout", Config{InitTimeout: ptr(-time.Second)}, "--init-timeout / MCP_BRIDGE_INIT_TIMEOUT"},
		{"timeouts that 0 turns off", "negative SSE duration", Config{SSEMaxDuration: -time.Second}, "--sse-max-duration / MCP_BRIDGE_SSE_MAX_DURATION"},

		{"positive", "small", Config{MaxSessions: ptr(1), SSEDelay: ptr(time.Nanosecond)}, ""},
		{"positive", "max sessions 0", Config{MaxSessions: ptr(0)}, "--max-sessions / MCP_BRIDGE_MAX_SESSIONS: must be greater than zero"},
		{"positive", "max body bytes 0", Config{MaxBodyBytes: ptr[int64](0)}, "--max-body-bytes / MCP_BRIDGE_MAX_BODY_BYTES"},
		{"positive", "stop grace 0", Config{StopGrace: ptr(time.Duration(0))}, "--stop-grace / MCP_BRIDGE_STOP_GRACE"},
		{"positive", "keepalive negative", Config{KeepAlive: ptr(-time.Second)}, "--keepalive / MCP_BRIDGE_KEEPALIVE"},
		{"spawn-queue", "1", Config{SpawnQueue: ptr(1)}, ""},
		{"spawn-queue", "0", Config{SpawnQueue: ptr(0)}, "--spawn-queue / MCP_BRIDGE_SPAWN_QUEUE: must be greater than zero"},

		{"prespawn", "2", Config{Prespawn: 2, MaxChildren: 10}, ""},
		{"prespawn", "negative", Config{Prespawn: -1}, "--prespawn / MCP_BRIDGE_PRESPAWN: --prespawn and --max-children must not be negative"},
		{"prespawn", "negative max children", Config{MaxChildren: -1}, "--prespawn / MCP_BRIDGE_PRESPAWN"},
		{"prespawn needs per-session mode", "per-session", Config{Prespawn: 2}, ""},
		{"prespawn needs per-session mode", "shared", Config{Prespawn: 2, Mode: ptr("shared")}, "--prespawn / MCP_BRIDGE_PRESPAWN: a warm pool serves per-session mode only"},
		{"prespawn needs per-session mode", "stateless", Config{Prespawn: 2, Stateless: true}, "a warm pool"},

		{"env", "K=V", Config{Env: []string{"A=1", "B="}}, ""},
		{"env", "no =", Config{Env: []string{"secretvalue"}}, "--env / MCP_BRIDGE_ENV: not NAME=value with a valid NAME"},
		{"env", "a bad name", Config{Env: []string{"A=1", "BAD-NAME=secretvalue"}}, "--env / MCP_BRIDGE_ENV: its 2nd entry: not NAME=value"},
		{"env", "the bridge's prefix", Config{Env: []string{"MCP_BRIDGE_PORT=1"}}, "--env / MCP_BRIDGE_ENV: variables named MCP_BRIDGE_* are the bridge's own"},
		{"hide-env", "a name", Config{HideEnv: []string{"AWS_SECRET_ACCESS_KEY"}}, ""},
		{"hide-env", "K=V", Config{HideEnv: []string{"K=secretvalue"}}, "--hide-env / MCP_BRIDGE_HIDE_ENV: not a valid variable name: the flag takes the NAME of a variable"},

		{"command", "a program", Config{Command: Argv{"npx", "-y", "server"}}, ""},
		{"command", "empty program", Config{Command: Argv{"", "x"}}, "command (after --) / MCP_BRIDGE_COMMAND: the program name is empty"},
		{"config and command", "a file", Config{ConfigFile: "servers.json"}, ""},
		{"config and command", "both", Config{ConfigFile: "servers.json", Command: Argv{"x"}}, "--config / MCP_BRIDGE_CONFIG: give either --config or a command, not both"},
		{"aggregate needs --config", "with a file", Config{ConfigFile: "servers.json", Aggregate: true}, ""},
		{"aggregate needs --config", "without", Config{Aggregate: true}, "--aggregate / MCP_BRIDGE_AGGREGATE: serves the servers of a --config file as one: give --config"},
		{"aggregate-list-timeout", "zero", Config{AggregateListTimeout: ptr(time.Duration(0))}, "--aggregate-list-timeout / MCP_BRIDGE_AGGREGATE_LIST_TIMEOUT: must be greater than zero"},

		{"token-env", "names", Config{TokenEnvs: []string{"ALICE_TOKEN", "BOB_TOKEN"}}, ""},
		{"token-env", "a token", Config{TokenEnvs: []string{"sk-secretvalue=="}}, "--token-env / MCP_BRIDGE_TOKEN_ENVS: not a valid variable name: the flag takes the NAME of a variable that holds a token, never the token"},
		{"token-env", "the bridge's prefix", Config{TokenEnvs: []string{"A", "MCP_BRIDGE_TOKEN"}}, "--token-env / MCP_BRIDGE_TOKEN_ENVS: its 2nd entry: variables named MCP_BRIDGE_* are the bridge's settings"},
		{"jwt-secret-env", "a name", jwt(Config{}), ""},
		{"jwt-secret-env", "a secret", Config{JWTSecretEnv: "secret value"}, "--jwt-secret-env / MCP_BRIDGE_JWT_SECRET_ENV: not a valid variable name"},
		{"jwt-secret-env", "the bridge's prefix", Config{JWTSecretEnv: "MCP_BRIDGE_JWT"}, "--jwt-secret-env / MCP_BRIDGE_JWT_SECRET_ENV: variables named MCP_BRIDGE_*"},
		{"one JWT key source", "one", jwt(Config{}), ""},
		{"one JWT key source", "two", jwt(Config{JWKSURL: "https://issuer.example/jwks"}), "--jwt-secret-env / MCP_BRIDGE_JWT_SECRET_ENV: give one JWT key source"},
		{"a JWT key needs an issuer", "an issuer", jwt(Config{}), ""},
		{"a JWT key needs an issuer", "none", Config{JWKSURL: "https://issuer.example/jwks"}, "--jwt-issuer / MCP_BRIDGE_JWT_ISSUER: a JWT key needs the issuer"},
		{"a JWT key needs an audience", "an audience", Config{JWTPublicKey: "k.pem", JWTAudiences: []string{"x"}}, ""},
		{"a JWT key needs an audience", "none", Config{JWTPublicKey: "k.pem"}, "--jwt-audience / MCP_BRIDGE_JWT_AUDIENCES: JWTs must be checked against this server's URL"},
		{"JWT settings need a key", "no JWT settings", Config{}, ""},
		{"JWT settings need a key", "an issuer", Config{JWTIssuer: "https://issuer.example"}, "--jwt-issuer / MCP_BRIDGE_JWT_ISSUER: the JWT settings need a key"},
		{"JWT settings need a key", "an audience", Config{JWTAudiences: []string{"a"}}, "--jwt-audience / MCP_BRIDGE_JWT_AUDIENCES: the JWT settings need a key"},
		{"JWT settings need a key", "a scope", Config{RequireScopes: []string{"mcp"}}, "--require-scope / MCP_BRIDGE_REQUIRE_SCOPES: the JWT settings need a key"},
		{"jwt-audience", "empty", Config{JWTAudiences: []string{""}}, "--jwt-audience / MCP_BRIDGE_JWT_AUDIENCES: an audience is empty"},
		{"public-url", "a URL", Config{PublicURL: "https://bridge.example/mcp"}, ""},
		{"public-url", "not a URL", Config{PublicURL: "bridge"}, "--public-url / MCP_BRIDGE_PUBLIC_URL"},
		{"auth-server", "https", Config{AuthServers: []string{"https://issuer.example"}}, ""},
		{"auth-server", "no scheme", Config{AuthServers: []string{"https://a.example", "issuer.example"}}, "--auth-server / MCP_BRIDGE_AUTH_SERVERS: its 2nd entry: not an absolute http(s) URL"},
		{"auth-server needs authentication", "with a token", Config{AuthServers: []string{"https://a.example"}, TokenEnvs: []string{"T"}}, ""},
		{"auth-server needs authentication", "without", Config{AuthServers: []string{"https://a.example"}}, "--auth-server / MCP_BRIDGE_AUTH_SERVERS: authorization servers mean nothing without authentication"},
		{"per-principal limits", "0: off", Config{RateLimit: 0, RateBurst: 0}, ""},
		{"per-principal limits", "negative rate", Config{RateLimit: -0.5}, "--rate-limit / MCP_BRIDGE_RATE_LIMIT: must not be negative"},
		{"per-principal limits", "negative sessions", Config{MaxSessionsPerPrincipal: -1}, "--max-sessions-per-principal / MCP_BRIDGE_MAX_SESSIONS_PER_PRINCIPAL: must not be negative"},
		{"tool rules", "rules", Config{ToolAllow: []string{"*=echo"}, ToolDeny: []string{"scope:ro=write_*"}}, ""},
		{"tool rules", "no =", Config{ToolAllow: []string{"*=echo"}, ToolDeny: []string{"echo"}}, "--tool-deny / MCP_BRIDGE_TOOL_DENY: tool rule"},
		{"audit-arguments", "with a log", Config{AuditArguments: true, AuditLog: "-"}, ""},

		{"tool-approve", "rules", Config{ToolApprove: []string{"*=delete_*", "scope:ops=*@destructiveHint", "alice=fs_*@!readOnlyHint"}}, ""},
		{"tool-approve", "no =", Config{ToolApprove: []string{"*=x", "delete_*"}}, "--tool-approve / MCP_BRIDGE_TOOL_APPROVE: its 2nd entry: approval rule: want SUBJECT=GLOB"},
		{"tool-approve", "an unknown hint", Config{ToolApprove: []string{"*=*@dangerous"}}, "--tool-approve / MCP_BRIDGE_TOOL_APPROVE: approval rule: the annotation after @ must be one of"},
		{"approver", "subjects", Config{Approvers: []string{"token:OPS", "scope:approvals:write"}, TokenEnvs: []string{"OPS"}}, ""},
		{"approver", "an empty scope", Config{Approvers: []string{"scope:"}, TokenEnvs: []string{"OPS"}}, "--approver / MCP_BRIDGE_APPROVERS: the scope is empty"},
		{"approver needs authentication", "without", Config{Approvers: []string{"alice"}}, "--approver / MCP_BRIDGE_APPROVERS: approving calls needs authentication"},
		{"approver needs authentication", "with a JWT key", jwt(Config{Approvers: []string{"alice"}}), ""},
		{"approval-timeout", "a minute", Config{ApprovalTimeout: ptr(time.Minute)}, ""},
		{"approval-timeout", "zero", Config{ApprovalTimeout: ptr(time.Duration(0))}, "--approval-timeout / MCP_BRIDGE_APPROVAL_TIMEOUT: must be greater than zero"},
		{"max-approvals", "zero", Config{MaxApprovals: ptr(0)}, "--max-approvals / MCP_BRIDGE_MAX_APPROVALS: must be greater than zero"},
		{"max-approvals", "negative per principal", Config{MaxApprovalsPerPrincipal: ptr(-1)}, "--max-approvals-per-principal / MCP_BRIDGE_MAX_APPROVALS_PER_PRINCIPAL: must be greater than zero"},
		{"separate approver needs approvers", "with", Config{ApprovalSeparateApprover: true, Approvers: []string{"ops"}, TokenEnvs: []string{"T"}}, ""},
		{"separate approver needs approvers", "without", Config{ApprovalSeparateApprover: true}, "--approval-separate-approver / MCP_BRIDGE_APPROVAL_SEPARATE_APPROVER: nobody could approve a call"},
		{"trust-annotations is for the command", "the command", Config{TrustAnnotations: true}, ""},
		{"trust-annotations is for the command", "with --config", Config{TrustAnnotations: true, ConfigFile: "servers.json"}, `--trust-annotations / MCP_BRIDGE_TRUST_ANNOTATIONS: with --config, mark each server whose annotations you trust with "trusted": true`},
		{"audit-arguments", "without", Config{AuditArguments: true}, "--audit-arguments / MCP_BRIDGE_AUDIT_ARGUMENTS: there is no --audit-log"},

		{"admin", "subjects", Config{Admins: []string{"token:OPS_TOKEN", "scope:admin"}, TokenEnvs: []string{"OPS_TOKEN"}}, ""},
		{"admin", "an empty scope", Config{Admins: []string{"scope:"}}, "--admin / MCP_BRIDGE_ADMINS"},
		{"admin needs authentication", "without", Config{Admins: []string{"alice"}}, "--admin / MCP_BRIDGE_ADMINS: admins mean nothing without authentication"},
		{"admin needs authentication", "with a JWT key", jwt(Config{Admins: []string{"alice"}}), ""},
		{"registry-admin", "subjects", Config{RegistryAdmins: []string{"token:OPS_TOKEN", "scope:registry:write"}}, ""},
		{"registry-admin", "an empty scope", Config{RegistryAdmins: []string{"alice", "scope:"}}, "--registry-admin / MCP_BRIDGE_REGISTRY_ADMINS: its 2nd entry: the scope is empty"},
		{"registry-admin needs authentication", "without", Config{RegistryAdmins: []string{"alice"}}, "--registry-admin / MCP_BRIDGE_REGISTRY_ADMINS: changing the servers needs authentication"},
		{"registry-admin needs authentication", "with a token", Config{RegistryAdmins: []string{"alice"}, TokenEnvs: []string{"T"}}, ""},
		{"registry-admin needs --config", "without", Config{RegistryAdmins: []string{"alice"}}, "--registry-admin / MCP_BRIDGE_REGISTRY_ADMINS: the registry API changes the servers of a --config file"},
		{"registry-admin needs --config", "with", Config{RegistryAdmins: []string{"alice"}, ConfigFile: "servers.json"}, ""},
		{"metrics-token-env", "a name", Config{MetricsTokenEnv: "SCRAPE_TOKEN"}, ""},
		{"metrics-token-env", "a token", Config{MetricsTokenEnv: "scrape-token-value"}, "--metrics-token-env / MCP_BRIDGE_METRICS_TOKEN_ENV: not a valid variable name outside MCP_BRIDGE_*"},
		{"metrics-token-env", "the bridge's prefix", Config{MetricsTokenEnv: "MCP_BRIDGE_X"}, "--metrics-token-env / MCP_BRIDGE_METRICS_TOKEN_ENV"},
		{"metrics-public", "alone", Config{MetricsPublic: true}, ""},
		{"metrics-public", "with a metrics token", Config{MetricsPublic: true, MetricsTokenEnv: "SCRAPE_TOKEN"}, "--metrics-public / MCP_BRIDGE_METRICS_PUBLIC: contradicts --metrics-token-env"},
	}
	byName := map[string]rule{}
	for _, r := range rules {
		byName[r.name] = r
	}
	broken := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.rule+"/"+tt.name, func(t *testing.T) {
			r, ok := byName[tt.rule]
			if !ok {
				t.Fatalf("no rule %q", tt.rule)
			}
			in := tt.in.withDefaults()
			var errs []error
			r.check(&in, func(field, format string, a ...any) { errs = append(errs, invalid(field, format, a...)) })
			err := errors.Join(errs...)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want %q", err, tt.want)
			case tt.want != "" && !strings.HasPrefix(err.Error(), "invalid --") && !strings.HasPrefix(err.Error(), "invalid command"):
				t.Errorf("error %v does not name the flag", err)
			}
			// The rule runs within Validate too.
			if verr := tt.in.Validate(); tt.want != "" && (verr == nil || !strings.Contains(verr.Error(), tt.want)) {
				t.Errorf("Validate: %v, want %q", verr, tt.want)
			}
		})
		if tt.want != "" {
			broken[tt.rule] = true
		}
	}
	for _, r := range rules {
		if !broken[r.name] {
			t.Errorf("rule %q has no case that breaks it", r.name)
		}
	}
}

// TestValidateAll: Validate tells every problem at once, in the order of
// the rules, and no value.
func TestValidateAll(t *testing.T) {
	c := Config{Port: ptr(70000), Mode: ptr("secretmode"), Env: []string{"BAD-NAME=secretvalue"}, TokenEnvs: []string{"secret token"}}
	err := c.Validate()
	if err == nil {
		t.Fatal("accepted")
	}
	got := strings.Split(err.Error(), "\n")
	want := []string{"--port", "--mode", "--env", "--token-env"}
	if len(got) != len(want) {
		t.Fatalf("%d errors, want %d:\n%v", len(got), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], fmt.Sprintf("invalid %s / ", w)) {
			t.Errorf("error %d: %q, want it about %s", i+1, got[i], w)
		}
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("an error shows a value: %v", err)
	}
}
