//go:build linux

package stdio_test

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
	"github.com/mcp-bridge/mcp-bridge/stdio"
)

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "server")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notexec"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	tests := []struct {
		name, cmd, dir string
		env            []string
		want           string // the path found; "" when not found
		notFound       bool   // else: the file's own problem
	}{
		{"on the bridge's PATH (no PATH in the child's environment)", "sh", "", nil, "", false},
		{"not on PATH", "no-such-mcp-server-xyz", "", nil, "", true},
		{"on the child's PATH only", "server", "", []string{"PATH=" + other + ":" + dir}, exe, false},
		{"the child's PATH wins over the bridge's", "sh", "", []string{"PATH=" + dir}, "", true},
		{"the last PATH of the environment counts", "server", "", []string{"PATH=" + other, "PATH=" + dir}, exe, false},
		{"relative PATH entries are skipped", "server", dir, []string{"PATH=.:"}, "", true},
		{"not executable on PATH", "notexec", "", []string{"PATH=" + dir}, "", true},
		{"absolute", exe, "", nil, exe, false},
		{"absolute, missing", filepath.Join(dir, "missing"), "", nil, "", false},
		{"relative to the child's directory", "./server", dir, nil, exe, false},
		{"relative, missing there", "./server", other, nil, "", false},
		{"relative, not executable", "./notexec", dir, nil, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := stdio.LookPath(tt.cmd, tt.dir, tt.env)
			if tt.name == "on the bridge's PATH (no PATH in the child's environment)" {
				if want, _ := exec.LookPath("sh"); err != nil || got != want {
					t.Fatalf("LookPath(sh) = %q, %v; want %q", got, err, want)
				}
				return
			}
			if tt.want != "" {
				if err != nil || got != tt.want {
					t.Fatalf("LookPath(%q, %q, %q) = %q, %v; want %q", tt.cmd, tt.dir, tt.env, got, err, tt.want)
				}
				return
			}
			var ee *exec.Error
			if err == nil || !errors.As(err, &ee) || ee.Name != tt.cmd {
				t.Fatalf("LookPath(%q, %q, %q) = %q, %v; want an *exec.Error naming %q", tt.cmd, tt.dir, tt.env, got, err, tt.cmd)
			}
			if isNotFound := errors.Is(err, exec.ErrNotFound); isNotFound != tt.notFound {
				t.Errorf("error %v: exec.ErrNotFound %v, want %v", err, isNotFound, tt.notFound)
			}
			if !tt.notFound && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
				t.Errorf("error %v: want the file's problem (not exist, or not executable)", err)
			}
		})
	}
}

// TestStartUsesTheChildsPath: Start runs what LookPath finds, so a server
// found only on the PATH given to the child starts, and a program only on
// the bridge's PATH does not.
func TestStartUsesTheChildsPath(t *testing.T) {
	bin := testpeers.BuildGo(t, "./testdata/badchild")
	dir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(dir, "my-mcp-server")); err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	p := startChild(t, stdio.Options{Argv: []string{"my-mcp-server"}, Env: []string{"PATH=" + dir}})
	p.call(1, "env", nil)
	if got := p.text(ctx, 1); got != "PATH="+dir {
		t.Errorf("child environment = %q, want PATH=%s", got, dir)
	}
	if c, err := stdio.Start(stdio.Options{Argv: []string{"sh"}, Env: []string{"PATH=" + dir}}); err == nil {
		c.Kill()
		<-c.Done()
		t.Error("sh started although it is not on the child's PATH")
	}
}
