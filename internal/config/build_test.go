package config

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/approval"
	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
)

// TestBridge: the bridge.Config of the settings, defaults applied.
func TestBridge(t *testing.T) {
	environ := []string{"PATH=/usr/bin", "MCP_BRIDGE_PORT=1", "ALICE_TOKEN=a", "HIDDEN=h", "JWT_SECRET=s", "SCRAPE=m", "PLAIN=p"}
	tests := []struct {
		name string
		in   Config
		want bridge.Config
	}{
		{
			name: "nothing given",
			want: bridge.Config{
				Command: []string{"srv"}, Mode: "per-session", SpawnQueue: 64,
				Env:          []string{"PATH=/usr/bin", "ALICE_TOKEN=a", "HIDDEN=h", "JWT_SECRET=s", "SCRAPE=m", "PLAIN=p"},
				MaxLineBytes: 16 << 20, StopGrace: 2 * time.Second, MaxSessions: 1000, IdleTimeout: 30 * time.Minute, UnreachableTimeout: time.Minute,
				RequestTimeout: 5 * time.Minute, InitTimeout: 30 * time.Second,
				QueueLimit: 1024, EventLogEvents: 4096, EventLogBytes: 4 << 20,
				ChildProtocol: "auto", InputTTL: 2 * time.Minute, MaxParked: 16,
			},
		},
		{
			name: "every setting given",
			in: Config{
				Mode: ptr("shared"), Prespawn: 1, MaxChildren: 9, SpawnQueue: ptr(3), Dir: "/srv",
				Env: []string{"PLAIN=over", "ADDED=1"}, HideEnv: []string{"HIDDEN"},
				TokenEnvs: []string{"ALICE_TOKEN"}, JWTSecretEnv: "JWT_SECRET", MetricsTokenEnv: "SCRAPE",
				MaxMessageBytes: ptr(100), StopGrace: ptr(time.Second), MaxSessions: ptr(7), IdleTimeout: ptr(time.Minute),
				RequestTimeout: ptr(time.Duration(0)), InitTimeout: ptr(time.Duration(0)), UnreachableTimeout: ptr(time.Duration(0)),
				QueueLimit: ptr(5), EventLogEvents: ptr(6), EventLogBytes: ptr(7000),
				Stateless: true, ChildProtocol: ptr("legacy"), InputTTL: ptr(time.Minute), MaxParked: ptr(2), ReplicaID: "r1",
			},
			want: bridge.Config{
				Command: []string{"srv"}, Mode: "shared", Prespawn: 1, MaxChildren: 9, SpawnQueue: 3, Dir: "/srv",
				// The bridge's settings, its secrets and --hide-env are
				// hidden; --env overrides.
				Env:          []string{"PATH=/usr/bin", "PLAIN=over", "ADDED=1"},
				MaxLineBytes: 100, StopGrace: time.Second, MaxSessions: 7, IdleTimeout: time.Minute,
				RequestTimeout: -1, InitTimeout: -1, UnreachableTimeout: -1, // 0 turns them off; the bridge's off is negative
				QueueLimit: 5, EventLogEvents: 6, EventLogBytes: 7000,
				Stateless: true, ChildProtocol: "legacy", InputTTL: time.Minute, MaxParked: 2, ReplicaID: "r1",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in.Bridge([]string{"srv"}, environ)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestHTTP: the httpapi.Options of the settings, defaults applied.
func TestHTTP(t *testing.T) {
	tests := []struct {
		name  string
		in    Config
		check func(t *testing.T, o httpapi.Options)
	}{
		{
			name: "nothing given",
			check: func(t *testing.T, o httpapi.Options) {
				want := httpapi.Options{
					Path: "/mcp", MaxBodyBytes: 4 << 20, ResponseMode: "auto", SSEDelay: 50 * time.Millisecond,
					KeepAlive: 15 * time.Second, LoopbackOnly: true, Web: true, MaxStreamsPerPrincipal: 128,
				}
				if !reflect.DeepEqual(o, want) {
					t.Errorf("\n got %+v\nwant %+v", o, want)
				}
			},
		},
		{
			name: "every setting given",
			in: Config{
				Host: ptr("0.0.0.0"), Path: ptr("/api/mcp"), SSEPath: "/api/events", MessagePath: "/api/post", LegacySSE: ptr(false),
				MaxBodyBytes: ptr[int64](10), ResponseMode: ptr("json"), Stateless: true, SSEDelay: ptr(time.Second),
				KeepAlive: ptr(time.Minute), SSEMaxDuration: time.Hour, AllowOrigins: []string{"https://app.example"}, Web: ptr(false),
				ClaimEnv:  []string{"sub=MCP_USER", "email=MCP_EMAIL"},
				PublicURL: "https://bridge.example/mcp", JWTIssuer: "https://issuer.example", RequireScopes: []string{"mcp"},
				MaxSessionsPerPrincipal: 1, MaxInFlightPerPrincipal: 2, MaxStreamsPerPrincipal: ptr(0), RateLimit: 3, RateBurst: 4,
				ToolDeny: []string{"*=rm"}, Admins: []string{"alice"}, AuditArguments: true,
			},
			check: func(t *testing.T, o httpapi.Options) {
				policy, admins := o.ToolPolicy, o.Admins
				o.ToolPolicy, o.Admins = nil, nil
				if o.Approval != nil {
					t.Error("an approval policy without --tool-approve")
				}
				want := httpapi.Options{
					Path: "/api/mcp", SSEPath: "/api/events", MessagePath: "/api/post", DisableLegacySSE: true,
					MaxBodyBytes: 10, ResponseMode: "json", Stateless: true, SSEDelay: time.Second, KeepAlive: time.Minute,
					SSEMaxDuration: time.Hour, AllowedOrigins: []string{"https://app.example"}, LoopbackOnly: false, Web: false,
					ClaimEnv:  map[string]string{"sub": "MCP_USER", "email": "MCP_EMAIL"},
					PublicURL: "https://bridge.example/mcp", AuthorizationServers: []string{"https://issuer.example"}, Scopes: []string{"mcp"},
					MaxSessionsPerPrincipal: 1, MaxInFlightPerPrincipal: 2, RateLimit: 3, RateBurst: 4, AuditArguments: true,
					MaxStreamsPerPrincipal: -1, // 0 turns the cap off; httpapi's off is negative
				}
				if !reflect.DeepEqual(o, want) {
					t.Errorf("\n got %+v\nwant %+v", o, want)
				}
				alice := auth.Principal{Method: auth.MethodToken, Name: "alice"}
				if policy == nil || policy.For(alice).Allowed("rm") || !policy.For(alice).Allowed("ls") {
					t.Errorf("tool policy %+v: want rm denied, ls allowed", policy)
				}
				if !admins.Match(alice) {
					t.Errorf("admins %v do not include alice", admins)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := tt.in.HTTP()
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, o)
		})
	}
	if _, err := (&Config{ToolAllow: []string{"no-equals"}}).HTTP(); err == nil || !strings.Contains(err.Error(), "--tool-allow / MCP_BRIDGE_TOOL_ALLOW") {
		t.Errorf("an invalid tool rule: err %v, want one naming --tool-allow (never a policy that allows everything)", err)
	}
}

func TestServing(t *testing.T) {
	tests := []struct {
		name string
		in   Config
		want Serving
	}{
		{"nothing given", Config{}, Serving{Addr: "127.0.0.1:8080", ReadTimeout: 30 * time.Second, ShutdownTimeout: 10 * time.Second, StopGrace: 2 * time.Second}},
		{"given", Config{Host: ptr("::1"), Port: ptr(0), ReadTimeout: ptr(time.Second), ShutdownTimeout: ptr(time.Minute), StopGrace: ptr(time.Millisecond)},
			Serving{Addr: "[::1]:0", ReadTimeout: time.Second, ShutdownTimeout: time.Minute, StopGrace: time.Millisecond}},
	}
	for _, tt := range tests {
		if got := tt.in.Serving(); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
	if got := (Serving{StopGrace: 2 * time.Second}).StopTimeout(); got != 5*time.Second {
		t.Errorf("StopTimeout: %v, want two graces and a second", got)
	}
}

func TestLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.1.2.3": true, "::1": true, "localhost": true,
		"": false, "0.0.0.0": false, "10.0.0.1": false, "bridge.example": false,
	} {
		if got := (&Config{Host: ptr(host)}).Loopback(); got != want {
			t.Errorf("host %q: loopback %v, want %v", host, got, want)
		}
	}
	if !(&Config{}).Loopback() {
		t.Error("the default host is not loopback")
	}
}

func TestLogger(t *testing.T) {
	tests := []struct {
		in          Config
		debug, json bool
	}{
		{Config{}, false, false},
		{Config{LogLevel: ptr("DEBUG"), LogFormat: ptr("json")}, true, true},
	}
	for _, tt := range tests {
		var b strings.Builder
		log := tt.in.Logger(&b)
		log.Debug("d")
		log.Info("i")
		out := b.String()
		if debug := strings.Contains(out, "msg=d") || strings.Contains(out, `"msg":"d"`); debug != tt.debug {
			t.Errorf("%s: %q, want debug lines %v", show(tt.in), out, tt.debug)
		}
		if strings.HasPrefix(out, "{") != tt.json {
			t.Errorf("%s: %q, want JSON %v", show(tt.in), out, tt.json)
		}
	}
}

// TestMount: a server of the file gets the flags' settings with its own.
func TestMount(t *testing.T) {
	environ := []string{"PATH=/usr/bin", "LOCK_TOKEN=lock-token-0123456789"}
	c := Config{PublicURL: "https://bridge.example", ToolDeny: []string{"*=rm"}}
	bc := c.Bridge([]string{"flag-server"}, environ)
	ho, err := c.HTTP()
	if err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	log := slog.New(slog.NewTextHandler(&logged, nil))
	sp := ServerSpec{
		Name: "files", Command: []string{"fs", "-r"}, Dir: "/srv", Env: []string{"A=1"}, Mode: "per-identity",
		Prespawn: 0, IdleTimeout: time.Minute, MaxSessions: 3, TokenEnvs: []string{"LOCK_TOKEN"}, ToolDeny: []string{"*=write"},
	}
	ms, err := c.Mount(sp, bc, ho, environ, log)
	if err != nil {
		t.Fatal(err)
	}
	b := ms.Bridge
	if !slices.Equal(b.Command, sp.Command) || b.Dir != "/srv" || !slices.Equal(b.Env, sp.Env) || b.Mode != "per-identity" ||
		b.IdleTimeout != time.Minute || b.MaxSessions != 3 || b.QueueLimit != 1024 {
		t.Errorf("bridge: %+v", b)
	}
	h := ms.HTTP
	if h.Web {
		t.Error("each server serves the page: one page serves them all")
	}
	if want := "https://bridge.example/servers/files/mcp"; h.PublicURL != want {
		t.Errorf("public URL %q, want %q", h.PublicURL, want)
	}
	anyone := auth.Principal{}
	if f := h.ToolPolicy.For(anyone); f.Allowed("rm") || f.Allowed("write") || !f.Allowed("read") {
		t.Error("the tool policy is not the flags' rules and the server's")
	}
	r := httptest.NewRequest("POST", "/", nil)
	r.Header.Set("Authorization", "Bearer lock-token-0123456789")
	if h.Auth == nil {
		t.Fatal("no authentication: the server's tokenEnvs lock it")
	}
	if p, err := h.Auth.Verify(r); err != nil || p.Name != "LOCK_TOKEN" {
		t.Errorf("the server's token: %+v %v", p, err)
	}
	if ms.Fingerprint != sp.Fingerprint() {
		t.Error("the mount's fingerprint is not its spec's")
	}
	b.Logger.Info("x")
	if !strings.Contains(logged.String(), "server=files") {
		t.Errorf("the server's log does not name it: %q", logged.String())
	}
	if ho.Web != true || ho.PublicURL != "https://bridge.example" {
		t.Error("Mount changed the options it was given")
	}
}

// TestApprovalSettings: the approval rules of the command after -- and of
// each --config server (the flags' first, then the server's own, with its
// trust), and the engine's settings.
func TestApprovalSettings(t *testing.T) {
	alice := auth.Principal{Method: auth.MethodToken, Name: "ALICE"}
	c := Config{ToolApprove: []string{"*=delete_*", "*=*@destructiveHint"}, TrustAnnotations: true, Approvers: []string{"token:OPS", "scope:approvals:write"},
		ApprovalTimeout: ptr(time.Minute), MaxApprovals: ptr(50), MaxApprovalsPerPrincipal: ptr(5), ApprovalSeparateApprover: true, ApprovalFailOpen: true}
	ho, err := c.HTTP()
	if err != nil {
		t.Fatal(err)
	}
	if p := ho.Approval; p == nil || !p.Trusted() || p.Server() != "" || p.Catalog() == nil {
		t.Fatalf("the command's policy: %+v", p)
	}
	ho.Approval.Catalog().Learn([]byte(`{"tools":[{"name":"ls","annotations":{"readOnlyHint":true}}]}`))
	for tool, held := range map[string]bool{"delete_x": true, "ls": false, "write": true} {
		if _, got := ho.Approval.Needs(alice, tool); got != held {
			t.Errorf("%s: held %v, want %v", tool, got, held)
		}
	}
	ao, err := c.Approvals()
	if err != nil {
		t.Fatal(err)
	}
	ops := auth.Principal{Method: auth.MethodJWT, Name: "x", Scopes: []string{"approvals:write"}}
	if ao.Timeout != time.Minute || ao.MaxPending != 50 || ao.MaxPendingPerPrincipal != 5 || !ao.SeparateApprover || !ao.FailOpen ||
		!ao.Approvers.Match(ops) || ao.Approvers.Match(alice) {
		t.Errorf("engine settings: %+v", ao)
	}
	if ao, _ := (&Config{}).Approvals(); ao.Timeout != 2*time.Minute || ao.MaxPending != 1000 || ao.MaxPendingPerPrincipal != 20 || ao.Approvers != nil || ao.FailOpen {
		t.Errorf("default engine settings: %+v", ao)
	}
	if ho, _ := (&Config{}).HTTP(); ho.Approval != nil {
		t.Error("a policy without rules")
	}

	// A --config server: the flags' rules and its own, its own trust.
	c = Config{ToolApprove: []string{"*=delete_*"}}
	ho, _ = c.HTTP()
	for _, tt := range []struct {
		sp        ServerSpec
		trusted   bool
		readHeld  bool
		writeHeld bool
	}{
		{ServerSpec{Name: "fs", Command: []string{"fs"}, ToolApprove: []string{"*=*@!readOnlyHint"}, Trusted: true}, true, false, true},
		{ServerSpec{Name: "other", Command: []string{"o"}, ToolApprove: []string{"*=*@!readOnlyHint"}}, false, true, true},
		{ServerSpec{Name: "plain", Command: []string{"p"}}, false, false, false},
	} {
		ms, err := c.Mount(tt.sp, c.Bridge(nil, nil), ho, nil, slog.Default())
		if err != nil {
			t.Fatal(err)
		}
		p := ms.HTTP.Approval
		if p.Server() != tt.sp.Name || p.Trusted() != tt.trusted {
			t.Errorf("%s: policy of %q, trusted %v", tt.sp.Name, p.Server(), p.Trusted())
		}
		if cat := p.Catalog(); cat != nil {
			cat.Learn([]byte(`{"tools":[{"name":"read","annotations":{"readOnlyHint":true}}]}`))
		}
		for tool, want := range map[string]bool{"read": tt.readHeld, "write": tt.writeHeld, "delete_x": true} {
			if _, held := p.Needs(alice, tool); held != want {
				t.Errorf("%s: %s held %v, want %v", tt.sp.Name, tool, held, want)
			}
		}
	}
	if ho.Approval.Server() != "" {
		t.Error("Mount changed the options it was given")
	}
}

// TestMountsOptions: one page for every server, when the page is on.
func TestMountsOptions(t *testing.T) {
	for _, web := range []bool{true, false} {
		c := Config{Web: ptr(web), ShutdownTimeout: ptr(time.Minute), StopGrace: ptr(time.Second)}
		ho, err := c.HTTP()
		if err != nil {
			t.Fatal(err)
		}
		mo := c.MountsOptions(ho, slog.Default())
		if (mo.Web != nil) != web || mo.DrainTimeout != time.Minute || mo.StopTimeout != 3*time.Second || !mo.LoopbackOnly || mo.Approvals != nil {
			t.Errorf("--web=%v: %+v", web, mo)
		}
		// The approvals' channel, once for every server, and on the page.
		ho.Approvals = approval.New(approval.Options{})
		mo = c.MountsOptions(ho, slog.Default())
		if mo.Approvals == nil || mo.Approvals.Engine != ho.Approvals || web && mo.Web.Approvals != ho.Approvals {
			t.Errorf("--web=%v, an engine: %+v", web, mo)
		}
	}
}

// TestSecretsRead: the settings that name a variable or a file read it;
// the errors name the setting and the variable, never a value or a path.
func TestSecretsRead(t *testing.T) {
	const secret = "sEcReT_0123456789abcdef"
	missing := filepath.Join(t.TempDir(), secret)
	environ := []string{"EMPTY=", "SHORT=short", "GOOD_TOKEN=" + secret}
	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"a token variable not set", func() error {
			_, err := (&Config{TokenEnvs: []string{secret}}).Verifier(context.Background(), environ, slog.Default())
			return err
		}, "--token-env / MCP_BRIDGE_TOKEN_ENVS: the name given is not a variable set"},
		{"a short token", func() error {
			_, err := (&Config{TokenEnvs: []string{"SHORT"}}).Verifier(context.Background(), environ, slog.Default())
			return err
		}, "--token-env / MCP_BRIDGE_TOKEN_ENVS"},
		{"the JWT secret's variable not set", func() error {
			_, err := (&Config{JWTSecretEnv: secret, JWTIssuer: "i", JWTAudiences: []string{"a"}}).Verifier(context.Background(), environ, slog.Default())
			return err
		}, "--jwt-secret-env / MCP_BRIDGE_JWT_SECRET_ENV: the name given is not a variable set in the environment"},
		{"the JWT secret's variable empty", func() error {
			_, err := (&Config{JWTSecretEnv: "EMPTY", JWTIssuer: "i", JWTAudiences: []string{"a"}}).Verifier(context.Background(), environ, slog.Default())
			return err
		}, "--jwt-secret-env / MCP_BRIDGE_JWT_SECRET_ENV: variable EMPTY is empty"},
		{"the JWT key file missing", func() error {
			_, err := (&Config{JWTPublicKey: missing, JWTIssuer: "i", JWTAudiences: []string{"a"}}).Verifier(context.Background(), environ, slog.Default())
			return err
		}, "--jwt-public-key / MCP_BRIDGE_JWT_PUBLIC_KEY: cannot read the file"},
		{"the metrics token not set", func() error {
			_, err := (&Config{MetricsTokenEnv: secret}).MetricsAuth(environ)
			return err
		}, "--metrics-token-env / MCP_BRIDGE_METRICS_TOKEN_ENV"},
		{"the audit log cannot be opened", func() error {
			_, _, err := (&Config{AuditLog: filepath.Join(missing, "audit.log")}).OpenAuditLog(io.Discard)
			return err
		}, "invalid --audit-log / MCP_BRIDGE_AUDIT_LOG: cannot open the file"},
		{"the servers file cannot be read", func() error {
			_, err := (&Config{ConfigFile: missing}).LoadServers(environ)
			return err
		}, "--config / MCP_BRIDGE_CONFIG: cannot read the file"},
		{"the servers file named by a file's name", func() error {
			_, err := (&Config{ConfigFile: "nofile.json"}).LoadServers(environ)
			return err
		}, `--config / MCP_BRIDGE_CONFIG: cannot read "nofile.json" (in `},
		{"a key file named by a file's name", func() error {
			_, err := (&Config{JWTPublicKey: filepath.Join(t.TempDir(), "issuer.pem"), JWTIssuer: "i", JWTAudiences: []string{"a"}}).Verifier(context.Background(), environ, slog.Default())
			return err
		}, `issuer.pem": no such file`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error shows a value: %v", err)
			}
		})
	}

	v, err := (&Config{TokenEnvs: []string{"GOOD_TOKEN"}}).Verifier(context.Background(), environ, slog.Default())
	if err != nil || v == nil {
		t.Fatalf("a good token: %v %v", v, err)
	}
	if v, err := (&Config{}).Verifier(context.Background(), environ, slog.Default()); v != nil || err != nil {
		t.Errorf("no authentication asked for: %v %v, want nil", v, err)
	}
	w, closeLog, err := (&Config{AuditLog: "-"}).OpenAuditLog(os.Stdout)
	if err != nil || w != os.Stdout || closeLog() != nil {
		t.Errorf("--audit-log -: %v %v, want stdout", w, err)
	}
}

// TestCommandError says why a command cannot start, naming it.
func TestCommandError(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notexec"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := []string{"PATH=" + os.Getenv("PATH")}
	tests := []struct {
		argv0, dir string
		want       string
	}{
		{"sh", "", ""},
		{"nonexistent-server", "", `command "nonexistent-server" not found: no executable of that name in the server's PATH`},
		{"./missing", dir, `command "./missing" not found: no such file (relative to --cwd)`},
		{"./notexec", dir, `command "./notexec" is not an executable file`},
		{filepath.Join(dir, "missing"), "", "not found: no such file"},
		// A command quoted whole: a shell would have split it, the bridge
		// runs none.
		{"npx -y some-server", "", `command "npx -y some-server" not found: no executable of that name in the server's PATH; it is one word with spaces: give the program and each argument as a word of its own, as in -- npx -y some-server (no quotes around the whole command)`},
		{"npx -y @scope/some-server", "", `not found: no such file; it is one word with spaces: give the program and each argument as a word of its own, as in -- npx -y @scope/some-server (no quotes around the whole command)`},
	}
	for _, tt := range tests {
		err := CommandError(tt.argv0, tt.dir, path, "--cwd")
		if (err == nil) != (tt.want == "") || err != nil && err.Error() != tt.want && !strings.HasSuffix(err.Error(), tt.want) {
			t.Errorf("%s in %q: %v, want %q", tt.argv0, tt.dir, err, tt.want)
		}
	}
	// In a --config file, the words go to "command" and "args".
	want := `; it is one word with spaces: put the program in "command" and each argument in "args", as in "command": "npx", "args": ["-y","some-server"]`
	if err := CommandError("npx -y some-server", "", path, `its "cwd"`); err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("a server of the file: %v, want it to end %q", err, want)
	}
}
