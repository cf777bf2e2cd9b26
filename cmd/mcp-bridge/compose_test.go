package main

// Tests of the deployment files without a Docker engine: compose.yaml is
// loaded (schema, interpolation, profiles, merges) with compose-go, the
// library docker compose itself uses, and every setting it or the
// Dockerfile gives a bridge must be one the bridge reads: a renamed option
// fails here, not in someone's container.

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// loadCompose loads compose.yaml with the given environment (in place of
// .env and the OS's) and profiles.
func loadCompose(t *testing.T, env []string, profiles ...string) (*types.Project, error) {
	t.Helper()
	root := testpeers.ModuleRoot(t)
	opts, err := cli.NewProjectOptions([]string{filepath.Join(root, "compose.yaml")},
		cli.WithWorkingDirectory(root), cli.WithEnv(env), cli.WithProfiles(profiles))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return opts.LoadProject(ctx)
}

var composeEnv = []string{"MCP_BRIDGE_TOKEN=compose-test-token"}

// TestComposeServices: which services each profile runs, their ports
// (published on the host's loopback only), healthchecks, init, and what
// they serve.
func TestComposeServices(t *testing.T) {
	root := testpeers.ModuleRoot(t)
	tests := []struct {
		service   string
		profile   string // "" runs by default
		published string // host port on 127.0.0.1; "" publishes none
		bridge    bool   // an mcp-bridge container
		serves    string // in MCP_BRIDGE_COMMAND
	}{
		{service: "everything", published: "8080", bridge: true, serves: "@modelcontextprotocol/server-everything"},
		{service: "filesystem", published: "8081", bridge: true, serves: "@modelcontextprotocol/server-filesystem"},
		{service: "replica-a", profile: "replicas", bridge: true, serves: "@modelcontextprotocol/server-everything"},
		{service: "replica-b", profile: "replicas", bridge: true, serves: "@modelcontextprotocol/server-everything"},
		{service: "haproxy", profile: "replicas", published: "8090"},
	}
	plain, err := loadCompose(t, composeEnv)
	if err != nil {
		t.Fatal(err)
	}
	full, err := loadCompose(t, composeEnv, "replicas")
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Services) != len(tests) {
		t.Errorf("with the replicas profile: services %v, want %d", full.ServiceNames(), len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.service, func(t *testing.T) {
			if _, on := plain.Services[tt.service]; on != (tt.profile == "") {
				t.Errorf("runs without a profile: %v, want %v", on, tt.profile == "")
			}
			s, ok := full.Services[tt.service]
			if !ok {
				t.Fatalf("missing with profile %q", tt.profile)
			}
			if want := []string{tt.profile}; tt.profile != "" && !slices.Equal(s.Profiles, want) {
				t.Errorf("profiles %v, want %v", s.Profiles, want)
			}
			var published []string
			for _, p := range s.Ports {
				if p.HostIP != "127.0.0.1" {
					t.Errorf("port %s published on %q: the dev stack publishes on the host's loopback only", p.Published, p.HostIP)
				}
				published = append(published, p.Published)
			}
			if tt.published == "" && len(published) > 0 || tt.published != "" && !slices.Equal(published, []string{tt.published}) {
				t.Errorf("published ports %v, want %q", published, tt.published)
			}
			if !tt.bridge {
				return
			}
			env := environment(s)
			if s.Init == nil || !*s.Init {
				t.Error("init is not true: orphaned grandchildren would need the bridge, as PID 1, to reap them")
			}
			if s.Build == nil || s.Build.Context != root {
				t.Errorf("build %+v: want the repository's Dockerfile", s.Build)
			}
			if env["MCP_BRIDGE_HOST"] != "0.0.0.0" {
				t.Errorf("MCP_BRIDGE_HOST %q: inside a container the bridge must listen on 0.0.0.0", env["MCP_BRIDGE_HOST"])
			}
			port := env["MCP_BRIDGE_PORT"]
			for _, p := range s.Ports {
				if p.Target == 0 || port == "" || strconv.Itoa(int(p.Target)) != port {
					t.Errorf("publishes container port %d, but the bridge listens on %q", p.Target, port)
				}
			}
			hc := s.HealthCheck
			if hc == nil || hc.Disable || len(hc.Test) < 2 || hc.Test[0] != "CMD" || hc.Interval == nil || hc.Retries == nil {
				t.Fatalf("healthcheck %+v: want a CMD test with an interval and retries", hc)
			}
			if probe := strings.Join(hc.Test, " "); !strings.Contains(probe, "http://127.0.0.1:"+port+"/healthz") {
				t.Errorf("healthcheck %q does not probe /healthz on the bridge's port %s", probe, port)
			}
			var argv Argv
			if err := argv.UnmarshalText([]byte(env["MCP_BRIDGE_COMMAND"])); err != nil || len(argv) < 3 || argv[0] != "npx" || !strings.HasPrefix(argv[2], tt.serves) {
				t.Errorf("MCP_BRIDGE_COMMAND %q: want npx -y %s (%v)", env["MCP_BRIDGE_COMMAND"], tt.serves, err)
			}
			if tokenVar := env["MCP_BRIDGE_TOKEN_ENVS"]; tokenVar == "" || env[tokenVar] != "compose-test-token" {
				t.Errorf("MCP_BRIDGE_TOKEN_ENVS=%q: want it to name the variable holding MCP_BRIDGE_TOKEN from .env", tokenVar)
			}
		})
	}

	t.Run("filesystem mount", func(t *testing.T) {
		s := full.Services["filesystem"]
		argv := []string{}
		_ = (*Argv)(&argv).UnmarshalText([]byte(environment(s)["MCP_BRIDGE_COMMAND"]))
		if len(s.Volumes) != 1 || s.Volumes[0].Source != filepath.Join(root, "deploy", "files") ||
			len(argv) == 0 || s.Volumes[0].Target != argv[len(argv)-1] || !s.Volumes[0].ReadOnly {
			t.Errorf("volumes %+v, argv %q: want deploy/files mounted read-only where the server looks", s.Volumes, argv)
		}
	})
	t.Run("haproxy.cfg", func(t *testing.T) {
		s := full.Services["haproxy"]
		if len(s.Volumes) != 1 || s.Volumes[0].Source != filepath.Join(root, "deploy", "haproxy.cfg") ||
			s.Volumes[0].Target != "/usr/local/etc/haproxy/haproxy.cfg" {
			t.Errorf("volumes %+v: want deploy/haproxy.cfg as the image's config", s.Volumes)
		}
		for _, r := range []string{"replica-a", "replica-b"} {
			if d, ok := s.DependsOn[r]; !ok || d.Condition != types.ServiceConditionHealthy {
				t.Errorf("depends_on %s: %+v, want service_healthy", r, d)
			}
		}
		cfg := readHAProxyConfig(t)
		for _, r := range []string{"replica-a", "replica-b"} {
			if !slices.ContainsFunc(cfg.servers, func(line string) bool { return strings.Contains(line, " "+r+":8080") }) {
				t.Errorf("haproxy.cfg has no server line for %s:8080", r)
			}
		}
		for _, rule := range stickiness {
			if !slices.ContainsFunc(cfg.backend, func(l string) bool { return strings.HasPrefix(l, rule) }) {
				t.Errorf("haproxy.cfg's backend lacks %q", rule)
			}
		}
	})
}

// TestComposeNeedsToken: without MCP_BRIDGE_TOKEN (no .env), compose
// refuses to start, naming the variable and where to set it.
func TestComposeNeedsToken(t *testing.T) {
	for _, env := range [][]string{nil, {"MCP_BRIDGE_TOKEN="}} {
		_, err := loadCompose(t, env)
		if err == nil || !strings.Contains(err.Error(), "MCP_BRIDGE_TOKEN") || !strings.Contains(err.Error(), ".env") {
			t.Errorf("env %q: err %v, want one naming MCP_BRIDGE_TOKEN and .env", env, err)
		}
	}
}

// TestComposeEnvMatchesConfig catches drift between the deployment files
// and Config: every MCP_BRIDGE_* variable that compose.yaml sets for a
// service, or the Dockerfile sets with ENV, must be one the bridge reads
// (an env tag of Config; the loader ignores any other), and each service's
// environment must load through the bridge's own loadConfig.
func TestComposeEnvMatchesConfig(t *testing.T) {
	known := envNames(reflect.TypeOf(Config{}), envPrefix)
	p, err := loadCompose(t, composeEnv, "replicas")
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range p.Services {
		env := environment(s)
		if len(env) == 0 {
			continue // not a bridge
		}
		t.Run(name, func(t *testing.T) {
			for v := range env {
				if strings.HasPrefix(v, envPrefix) && !known[v] {
					t.Errorf("compose.yaml sets %s, which is no option of the bridge (Config has no env tag %q)", v, strings.TrimPrefix(v, envPrefix))
				}
			}
			if _, err := loadConfig(nil, env, io.Discard); err != nil {
				t.Errorf("the bridge refuses this environment: %v", err)
			}
		})
	}
	// HAProxy routes a 2026-07-28 retry by the replica its requestState
	// names: each replica's --replica-id must be its server's name there,
	// with a use-server rule.
	t.Run("replica names", func(t *testing.T) {
		cfg := readHAProxyConfig(t)
		for _, name := range []string{"replica-a", "replica-b"} {
			if id := environment(p.Services[name])["MCP_BRIDGE_REPLICA_ID"]; id != name {
				t.Errorf("%s: MCP_BRIDGE_REPLICA_ID=%q, want its HAProxy server name %q", name, id, name)
			}
			if !slices.ContainsFunc(cfg.servers, func(l string) bool { return strings.Fields(l)[1] == name }) ||
				!slices.ContainsFunc(cfg.backend, func(l string) bool {
					return strings.HasPrefix(l, "use-server "+name+" ") && strings.Contains(l, `mb1\.`+name+`\.`)
				}) {
				t.Errorf("deploy/haproxy.cfg has no server %s with a use-server rule for its requestState", name)
			}
		}
	})
	t.Run("Dockerfile", func(t *testing.T) {
		vars := dockerfileEnv(t)
		if len(vars) == 0 {
			t.Fatal("the Dockerfile sets no MCP_BRIDGE_* variable; it must set MCP_BRIDGE_HOST=0.0.0.0")
		}
		for v := range vars {
			if !known[v] {
				t.Errorf("the Dockerfile sets %s, which is no option of the bridge", v)
			}
		}
		if vars["MCP_BRIDGE_HOST"] != "0.0.0.0" {
			t.Errorf("Dockerfile MCP_BRIDGE_HOST=%q, want 0.0.0.0", vars["MCP_BRIDGE_HOST"])
		}
	})
}

// environment is a service's environment with every value resolved.
func environment(s types.ServiceConfig) map[string]string {
	out := map[string]string{}
	for k, v := range s.Environment {
		if v != nil {
			out[k] = *v
		}
	}
	return out
}

// envNames lists the variables Config reads: prefix + each env tag,
// following nested structs' envPrefix as caarlos0/env does.
func envNames(t reflect.Type, prefix string) map[string]bool {
	out := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		if p, ok := f.Tag.Lookup("envPrefix"); ok && f.Type.Kind() == reflect.Struct {
			for n := range envNames(f.Type, prefix+p) {
				out[n] = true
			}
			continue
		}
		if name, _, _ := strings.Cut(f.Tag.Get("env"), ","); name != "" {
			out[prefix+name] = true
		}
	}
	return out
}

// dockerfileEnv reads the MCP_BRIDGE_* variables of the Dockerfile's ENV
// instructions (KEY=VALUE form, continued lines joined).
func dockerfileEnv(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(testpeers.ModuleRoot(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	var instr strings.Builder
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") {
			continue
		}
		cont := strings.HasSuffix(line, "\\")
		instr.WriteString(strings.TrimSuffix(line, "\\") + " ")
		if cont {
			continue
		}
		fields := strings.Fields(instr.String())
		instr.Reset()
		if len(fields) < 2 || !strings.EqualFold(fields[0], "ENV") {
			continue
		}
		for _, kv := range fields[1:] {
			if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, envPrefix) {
				out[k] = v
			}
		}
	}
	return out
}
