package main

// The sandbox's wiring (README "Sandboxing"): each server's sandbox
// checked against what this system enforces before it is served, its
// refusals in the audit log, and the two subcommands: `pin`, which prints
// the hash to pin a program with, and `sandbox check`, a dry run.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcp-bridge/mcp-bridge/internal/config"
	"github.com/mcp-bridge/mcp-bridge/stdio"
)

// checkSandbox checks a server's sandbox against this system before it
// is served: an error for one that cannot start (a right not enforced
// under required, a path gone), else a log of what is enforced, with a
// warning for each right that is not (best-effort). It wires refusals
// to the audit log (nil: none). sb nil: nothing to check.
func checkSandbox(sb *stdio.Sandbox, server string, command []string, dir string, env []string, audit io.Writer, log *slog.Logger) error {
	if sb == nil {
		return nil
	}
	if audit != nil {
		sb.OnRefuse = func(e *stdio.StartError) { auditRefusal(audit, server, e) }
	}
	rep, err := sb.Check(command, dir, env)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	log.Info("sandbox", "server", server, "program", rep.Program, "enforce", rep.Enforce, "landlock_abi", rep.Landlock,
		"namespaces", strings.Join(rep.Namespaces, ","), "seccomp", rep.Seccomp, "net", strings.Join(rep.Net, ","), "limits", rep.Limits, "pinned", rep.Pinned)
	for _, r := range rep.Rights {
		if !r.Enforced {
			log.Warn("sandbox right not enforced (best-effort)", "server", server, "right", r.Right, "why", r.Why)
		}
	}
	for _, n := range rep.Notes {
		log.Info("sandbox note", "server", server, "note", n)
	}
	return nil
}

// logSandboxSystem says once, at start, what this system offers the
// sandboxes: it names the sysctl that refuses user namespaces where one
// does.
func logSandboxSystem(log *slog.Logger) {
	s := stdio.ProbeSandbox()
	log.Info("sandbox support", "system", s.String())
	if s.UsernsNote != "" {
		log.Warn("sandboxes run without a user namespace of their own", "why", s.UsernsNote)
	}
}

// auditRefusal writes the audit log's line for a server its sandbox or
// its pin refused to start: both hashes of a pin mismatch, which the
// client never sees.
func auditRefusal(w io.Writer, server string, e *stdio.StartError) {
	line, _ := json.Marshal(struct {
		Time    string `json:"time"`
		Event   string `json:"event"`
		Server  string `json:"server"`
		Reason  string `json:"reason"`
		Program string `json:"program,omitempty"`
		SHA256  string `json:"sha256,omitempty"`
		Pinned  string `json:"pinned_sha256,omitempty"`
		Detail  string `json:"detail"`
	}{time.Now().UTC().Format(time.RFC3339Nano), "server_refused", server, e.Kind, e.Program, e.SHA256, e.Pinned, e.Detail})
	_, _ = w.Write(append(line, '\n'))
}

// launchers are programs that run code they fetch or are given: a pin of
// one covers the launcher, not what it runs.
var launchers = []string{"npx", "npm", "pnpm", "pnpx", "yarn", "bunx", "uvx", "uv", "pipx", "docker", "podman"}

// interpreters run a script they are given: a pin of one covers the
// interpreter, not the script.
var interpreters = []string{"node", "nodejs", "python", "python3", "bun", "deno", "ruby", "perl", "sh", "bash", "java"}

// runPin is `mcp-bridge pin -- CMD [args]`: the SHA-256 of the program
// CMD names (found as the bridge finds it), to give --pin-sha256 or a
// server's "sha256", and what such a pin does not cover.
func runPin(args, environ []string, stdout, stderr io.Writer) int {
	if len(args) < 2 || args[0] != "--" {
		fmt.Fprintln(stderr, "usage: mcp-bridge pin -- command [args...]")
		return 2
	}
	cmd := args[1:]
	path, err := stdio.LookPath(cmd[0], "", environ)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-bridge pin: %v\n", err)
		return 2
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-bridge pin: %v\n", err)
		return 2
	}
	defer f.Close()
	h := sha256.New()
	head := make([]byte, 256)
	n, _ := io.ReadFull(f, head)
	h.Write(head[:n])
	if _, err := io.Copy(h, f); err != nil {
		fmt.Fprintf(stderr, "mcp-bridge pin: %v\n", err)
		return 2
	}
	sum := hex.EncodeToString(h.Sum(nil))
	fmt.Fprintf(stdout, "%s  %s\n", sum, path)
	fmt.Fprintf(stderr, "pin it with: mcp-bridge --pin-sha256 %s -- %s (or \"sha256\": %q in the server's --config entry)\n", sum, strings.Join(cmd, " "), sum)

	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	switch {
	case slices.Contains(launchers, name) || slices.Contains(launchers, filepath.Base(cmd[0])):
		fmt.Fprintf(stderr, "warning: %s is a launcher: it runs a package it fetches or is told of, which this pin does not cover. "+
			"Install the package instead, pin its interpreter and point --sandbox-exec at the installation, not at a cache: "+
			"npm install --prefix DIR PACKAGE; mcp-bridge pin -- node; mcp-bridge --pin-sha256 HASH --sandbox node --sandbox-exec DIR -- node DIR/node_modules/PACKAGE/...\n", cmd[0])
	case n >= 2 && string(head[:2]) == "#!":
		interp, _, _ := strings.Cut(strings.TrimSpace(strings.SplitN(string(head[2:n]), "\n", 2)[0]), " ")
		fmt.Fprintf(stderr, "warning: %s is a script: the pin covers its text, not %s, which runs it (pin that too, or the entry file of what it starts)\n", path, interp)
	case slices.Contains(interpreters, name) || strings.HasPrefix(name, "python3."):
		fmt.Fprintf(stderr, "warning: %s is an interpreter: the pin covers it, not the script it runs; give the script's directory with --sandbox-read or --sandbox-exec, outside any writable path\n", cmd[0])
	}
	return 0
}

// runSandboxCheck is `mcp-bridge sandbox check [flags] -- CMD [args]`, or
// with --config each server of the file: what this system offers, what
// it would enforce of each sandbox, and whether each would start. It
// starts nothing. Exit status 0: every server would start; 1: one would
// be refused; 2: the flags are wrong.
func runSandboxCheck(args, environ []string, stdout, stderr io.Writer) int {
	cfg, err := config.Load(args, environ, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		return refuse(stderr, err)
	}
	fmt.Fprintf(stdout, "system: %s\n", stdio.ProbeSandbox())
	type server struct {
		name    string
		command []string
		dir     string
		env     []string
		sandbox *stdio.Sandbox
	}
	var servers []server
	if cfg.ConfigFile != "" {
		specs, err := cfg.LoadServers(environ)
		if err != nil {
			return refuse(stderr, err)
		}
		for _, sp := range specs {
			servers = append(servers, server{sp.Name, sp.Command, sp.Dir, sp.Env, sp.Sandbox})
		}
	} else {
		if len(cfg.Command) == 0 {
			fmt.Fprintln(stderr, "usage: mcp-bridge sandbox check [flags] -- command [args...] (or --config FILE)")
			return 2
		}
		sb, err := cfg.SandboxFor("default", cfg.Dir, nil, "", environ)
		if err != nil {
			return refuse(stderr, err)
		}
		bc := cfg.Bridge(cfg.Command, environ)
		servers = append(servers, server{"default", cfg.Command, bc.Dir, bc.Env, sb})
	}
	status := 0
	for _, s := range servers {
		fmt.Fprintf(stdout, "\nserver %s: %s\n", s.name, strings.Join(s.command, " "))
		if s.sandbox == nil {
			fmt.Fprintln(stdout, "no sandbox: the server can do whatever the bridge's user can")
			continue
		}
		rep, err := s.sandbox.Check(s.command, s.dir, s.env)
		if rep != nil {
			fmt.Fprint(stdout, rep)
		}
		if err != nil {
			fmt.Fprintf(stdout, "would be refused: %v\n", err)
			status = 1
			continue
		}
		fmt.Fprintln(stdout, "would start")
	}
	return status
}
