package config

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/stdio"
)

// TestSandboxFor: what the flags and a server's entry resolve to. No
// flag and no entry: no sandbox at all (today's behaviour). A pin alone
// is a sandbox that confines nothing. Relative paths are the server's
// cwd's; lists add to the flags', single values replace them; a preset
// keeps its state under XDG_CACHE_HOME, per server.
func TestSandboxFor(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"data", "srv", "srv/more"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	environ := []string{"XDG_CACHE_HOME=" + filepath.Join(dir, "cache"), "HOME=/nonexistent"}
	pin := strings.Repeat("ab", 32)
	tests := []struct {
		name  string
		args  []string
		cwd   string
		entry *sandboxEntry
		pin   string
		want  *stdio.Sandbox
	}{
		{name: "nothing", want: nil},
		{name: "a pin alone", args: []string{"--pin-sha256", pin}, want: &stdio.Sandbox{Enforce: "required", PinSHA256: pin, Read: []string{}, Write: []string{}, Exec: []string{}}},
		{
			name: "flags, relative to --cwd",
			args: []string{"--cwd", dir, "--sandbox", "none", "--sandbox-write", "data", "--sandbox-net", "8080", "--sandbox-limit", "mem=64M,cpu=2s"},
			cwd:  dir,
			want: &stdio.Sandbox{Preset: "none", Write: []string{filepath.Join(dir, "data")}, Net: []string{"8080"}, Read: []string{}, Exec: []string{},
				Enforce: "required", Limits: stdio.Limits{Memory: 64 << 20, CPU: 2 * time.Second}},
		},
		{
			name:  "an entry over the flags",
			args:  []string{"--sandbox", "none", "--sandbox-read", filepath.Join(dir, "data"), "--sandbox-enforce", "required", "--pin-sha256", strings.Repeat("cd", 32)},
			cwd:   filepath.Join(dir, "srv"),
			entry: &sandboxEntry{Preset: "node", Read: []string{"more"}, Net: []string{"443"}, Enforce: "best-effort", Limit: "files=64"},
			pin:   pin,
			want: &stdio.Sandbox{Preset: "node", Read: []string{filepath.Join(dir, "data"), filepath.Join(dir, "srv", "more")}, Write: []string{}, Exec: []string{},
				Net: []string{"443"}, Enforce: "best-effort", Limits: stdio.Limits{Files: 64}, PinSHA256: pin,
				StateDir: filepath.Join(dir, "cache", "mcp-bridge", "sandbox", "files")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Load(tt.args, nil, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			got, err := cfg.SandboxFor("files", tt.cwd, tt.entry, tt.pin, environ)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
