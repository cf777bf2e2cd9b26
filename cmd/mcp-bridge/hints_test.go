package main

// What a person meets in their first minutes with the command line: help
// they can pipe, and a hint beside each of the usual mistakes.

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// runSplit runs the binary to its end and returns its exit status, its
// stdout and its stderr, apart.
func runSplit(t *testing.T, bin string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = environWithout(envPrefix)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("mcp-bridge %q did not exit:\n%s", args, stderr.String())
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("run mcp-bridge: %v", err)
	return -1, "", ""
}

// TestHelpGoesToStdout: help that was asked for is output, as GNU tools
// have it, so mcp-bridge --help | grep token finds the token flags; its
// first flags are the common ones; "mcp-bridge help" is help too, not a
// server's command.
func TestHelpGoesToStdout(t *testing.T) {
	bin := testpeers.BuildGo(t, "./cmd/mcp-bridge")
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"--port", "9000", "--help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runSplit(t, bin, args...)
			if code != 0 || stderr != "" {
				t.Errorf("exit status %d, stderr %q; want 0 and nothing", code, stderr)
			}
			if !strings.HasPrefix(stdout, "Usage: mcp-bridge") || !strings.Contains(stdout, "--token-env NAME") || !strings.Contains(stdout, "--config FILE") {
				t.Errorf("stdout is not the help:\n%s", stdout)
			}
			_, common, _ := strings.Cut(stdout, "\nCommon flags:\n")
			if !strings.HasPrefix(common, "  --port N\n") {
				t.Errorf("the help's first flags are not the common ones, --port first:\n%s", stdout)
			}
		})
	}
}

// TestHints: each of the usual mistakes gets one line that names what to
// do, and the bridge does not start.
func TestHints(t *testing.T) {
	bin := testpeers.BuildGo(t, "./cmd/mcp-bridge")
	// A port in use: another listener holds it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	busy := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	dir := t.TempDir()
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"port in use", []string{"--port", busy}, 1, []string{"address already in use", "give another with --port, or --port 0 for a free one"}},
		{"a command quoted as one word", []string{"--port", "0", "--", "npx -y @modelcontextprotocol/server-everything"}, 2,
			[]string{"it is one word with spaces: give the program and each argument as a word of its own, as in -- npx -y @modelcontextprotocol/server-everything"}},
		{"--token", []string{"--port", "0", "--token", "MY_TOKEN"}, 2, []string{"unknown flag --token (did you mean --token-env?)"}},
		{"-p 9000", []string{"-p", "9000"}, 2, []string{"unknown flag -p (did you mean --port?)"}},
		{"--config names its file", []string{"--port", "0", "--config", "nofile.json"}, 2,
			[]string{`--config / MCP_BRIDGE_CONFIG: cannot read "nofile.json" (in ` + cwd + `): no such file or directory`}},
		{"--config names its file, absolute", []string{"--port", "0", "--config", filepath.Join(dir, "servers.json")}, 2,
			[]string{`cannot read "` + filepath.Join(dir, "servers.json") + `"`}},
		{"help after a flag is a stray word", []string{"--port", "0", "help"}, 2, []string{"mcp-bridge help, mcp-bridge version"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runSplit(t, bin, tt.args...)
			if code != tt.code {
				t.Errorf("exit status %d, want %d", code, tt.code)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "mcp-bridge listening") || strings.Contains(stdout+stderr, "Usage:") {
				t.Errorf("want a line of error, not a bridge or the whole help:\nstdout %s\nstderr %s", stdout, stderr)
			}
		})
	}
}
