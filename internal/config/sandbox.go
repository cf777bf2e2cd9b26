package config

// The sandbox of a server (README "Sandboxing"): the --sandbox* flags
// and --pin-sha256, and for a server of the --config file its "sandbox"
// object and "sha256", turned into a stdio.Sandbox. What the system
// enforces of it is stdio's to say (Sandbox.Check); cmd/mcp-bridge asks
// before it serves.

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcp-bridge/mcp-bridge/stdio"
)

// sandboxEntry is a server's "sandbox" object in the --config file: the
// flags' names without --sandbox-. Single values replace the flag's;
// lists add to the flag's.
type sandboxEntry struct {
	Preset  string   `json:"preset"`
	Read    []string `json:"read"`
	Write   []string `json:"write"`
	Exec    []string `json:"exec"`
	Net     []string `json:"net"`
	Limit   string   `json:"limit"`
	Enforce string   `json:"enforce"`
}

// sandboxGiven says whether the flags ask for a sandbox (a pin alone is
// not one, but still goes through stdio's launcher).
func (c *Config) sandboxGiven() bool {
	return c.Sandbox != "" || len(c.SandboxRead)+len(c.SandboxWrite)+len(c.SandboxExec)+len(c.SandboxNet) > 0 || c.SandboxLimit != ""
}

// SandboxFor is the sandbox of the server name run in dir (its working
// directory; "" for the bridge's), from the flags and, for a server of the
// --config file, its entry and pin (nil, ""): nil when neither asks for a
// sandbox or a pin. Relative paths are taken from dir. environ is the
// bridge's environment, which says where a preset's state directory goes.
func (c *Config) SandboxFor(name, dir string, e *sandboxEntry, pin string, environ []string) (*stdio.Sandbox, error) {
	r := c.withDefaults()
	pin = cmp.Or(pin, r.PinSHA256)
	if !r.sandboxGiven() && e == nil && pin == "" {
		return nil, nil
	}
	sb := &stdio.Sandbox{Preset: r.Sandbox, Net: r.SandboxNet, Enforce: *r.SandboxEnforce, PinSHA256: pin}
	limit := r.SandboxLimit
	read, write, exec := r.SandboxRead, r.SandboxWrite, r.SandboxExec
	if e != nil {
		sb.Preset = cmp.Or(e.Preset, sb.Preset)
		sb.Enforce = cmp.Or(e.Enforce, sb.Enforce)
		limit = cmp.Or(e.Limit, limit)
		read, write, exec = concat(read, e.Read), concat(write, e.Write), concat(exec, e.Exec)
		sb.Net = concat(sb.Net, e.Net)
	}
	var err error
	if sb.Limits, err = stdio.ParseLimits(limit); err != nil {
		return nil, err
	}
	base := dir
	if base == "" {
		if base, err = os.Getwd(); err != nil {
			return nil, err
		}
	}
	abs := func(paths []string) []string {
		out := make([]string, 0, len(paths))
		for _, p := range paths {
			if !filepath.IsAbs(p) {
				p = filepath.Join(base, p)
			}
			out = append(out, filepath.Clean(p))
		}
		return out
	}
	sb.Read, sb.Write, sb.Exec = abs(read), abs(write), abs(exec)
	if sb.Preset == stdio.PresetNode || sb.Preset == stdio.PresetPython {
		sb.StateDir = stateDir(environ, name)
	}
	if !sb.Confines() && sb.PinSHA256 == "" {
		return nil, nil // an empty "sandbox" object: nothing asked for
	}
	return sb, sb.Validate()
}

func concat(a, b []string) []string { return append(slices.Clone(a), b...) }

// stateDir is where a preset keeps the server's own HOME, caches and
// TMPDIR: $XDG_CACHE_HOME/mcp-bridge/sandbox/NAME, else under
// $HOME/.cache, else the system's temporary directory.
func stateDir(environ []string, name string) string {
	vars := envMap(environ)
	base := vars["XDG_CACHE_HOME"]
	if base == "" && vars["HOME"] != "" {
		base = filepath.Join(vars["HOME"], ".cache")
	}
	if base == "" {
		base = filepath.Join(os.TempDir(), fmt.Sprintf("mcp-bridge-%d", os.Getuid()))
	}
	return filepath.Join(base, "mcp-bridge", "sandbox", name)
}

// checkSandbox: the sandbox flags read, and the paths they name exist.
func checkSandbox(c *Config, bad report) {
	if c.Sandbox != "" && !slices.Contains(stdio.Presets, c.Sandbox) {
		bad("Sandbox", "want %s", strings.Join(stdio.Presets, ", "))
	}
	if _, err := stdio.ParseLimits(c.SandboxLimit); err != nil {
		bad("SandboxLimit", "want KEY=VALUE pairs of mem (512M), procs, files and cpu (60s), separated by commas")
	}
	if e := *c.SandboxEnforce; e != stdio.EnforceRequired && e != stdio.EnforceBestEffort {
		bad("SandboxEnforce", "want %s or %s", stdio.EnforceRequired, stdio.EnforceBestEffort)
	}
	if err := (&stdio.Sandbox{Net: c.SandboxNet}).Validate(); err != nil {
		bad("SandboxNet", "want none, unix, a TCP port (443) or HOST:PORT, and not none with a port")
	}
	if c.PinSHA256 != "" && (&stdio.Sandbox{PinSHA256: c.PinSHA256}).Validate() != nil {
		bad("PinSHA256", "want the SHA-256 in lowercase hex (64 characters), as mcp-bridge pin prints it")
	}
	for _, f := range []struct {
		field string
		paths []string
	}{{"SandboxRead", c.SandboxRead}, {"SandboxWrite", c.SandboxWrite}, {"SandboxExec", c.SandboxExec}} {
		for i, p := range f.paths {
			if !filepath.IsAbs(p) && c.Dir != "" {
				p = filepath.Join(c.Dir, p)
			}
			if _, err := os.Stat(p); err != nil {
				bad(f.field, "%sno such file or directory", entry(i, len(f.paths)))
			}
		}
	}
}

// checkServerSandbox checks a server's "sandbox" object and "sha256".
func checkServerSandbox(sc *serverCheck, bad fieldReport) {
	if sc.e.SHA256 != "" && (&stdio.Sandbox{PinSHA256: sc.e.SHA256}).Validate() != nil {
		bad("sha256", "want the SHA-256 in lowercase hex (64 characters), as mcp-bridge pin prints it")
	}
	e := sc.e.Sandbox
	if e == nil {
		return
	}
	if e.Preset != "" && !slices.Contains(stdio.Presets, e.Preset) {
		bad("sandbox", "preset: want %s", strings.Join(stdio.Presets, ", "))
	}
	if _, err := stdio.ParseLimits(e.Limit); err != nil {
		bad("sandbox", "limit: want KEY=VALUE pairs of mem (512M), procs, files and cpu (60s), separated by commas")
	}
	if e.Enforce != "" && e.Enforce != stdio.EnforceRequired && e.Enforce != stdio.EnforceBestEffort {
		bad("sandbox", "enforce: want %s or %s", stdio.EnforceRequired, stdio.EnforceBestEffort)
	}
	if err := (&stdio.Sandbox{Net: concat(sc.cfg.SandboxNet, e.Net)}).Validate(); err != nil {
		bad("sandbox", "net: want none, unix, a TCP port (443) or HOST:PORT, and not none with a port")
	}
	dir := sc.s.Dir
	for _, f := range []struct {
		name  string
		paths []string
	}{{"read", e.Read}, {"write", e.Write}, {"exec", e.Exec}} {
		for i, p := range f.paths {
			if !filepath.IsAbs(p) && dir != "" {
				p = filepath.Join(dir, p)
			}
			if _, err := os.Stat(p); err != nil {
				bad("sandbox", "%s: %sno such file or directory", f.name, entry(i, len(f.paths)))
			}
		}
	}
}
