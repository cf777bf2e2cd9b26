//go:build !linux && !windows

package stdio

// How macOS (and the other Unix systems the bridge builds for) enforce a
// Sandbox: the limits this system's rlimits really bind (open files, CPU
// time), through the launcher (internal/launch), which sets them and then
// executes the server. Nothing confines files or the network here:
// macOS's only mechanism, sandbox-exec, is deprecated and undocumented.
// The pin is checked on the file before it is executed by path, and a
// swap between the two can win: there is no sealed in-memory copy to
// execute. So each of these is a right not enforced, which
// EnforceRequired refuses and EnforceBestEffort logs.

import (
	"cmp"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/mcp-bridge/mcp-bridge/stdio/internal/launch"
)

// ProbeSandbox says what this system offers a sandbox.
func ProbeSandbox() SandboxSystem {
	return SandboxSystem{Other: "no Landlock, namespaces or seccomp on this system: limits of open files and CPU time only (rlimits)"}
}

// sandboxPlan is a Sandbox made concrete for one program on this system.
type sandboxPlan struct {
	launch launch.Plan
	report *SandboxReport
}

func (s *Sandbox) plan(path, dir string, env []string) (*sandboxPlan, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if !filepath.IsAbs(path) && dir != "" {
		abs = filepath.Join(dir, path)
	}
	net, _ := parseNet(s.Net)
	p := &sandboxPlan{launch: launch.Plan{Path: abs, PinSHA256: s.PinSHA256}}
	r := &SandboxReport{Enforce: cmp.Or(s.Enforce, EnforceRequired), Preset: s.Preset, Program: abs,
		Read: s.Read, Write: s.Write, Exec: s.Exec, Net: s.Net, Limits: s.Limits.String(), Pinned: s.PinSHA256 != ""}
	p.report = r
	if s.PinSHA256 != "" {
		r.Rights = append(r.Rights, Right{Right: "the program matches its pin",
			Why: "checked on the file, which is then executed by path: no sealed in-memory copy on this system, so a swap in between can win"})
	}
	if !s.Confines() {
		return p, nil
	}
	if net.none() {
		r.Net = []string{NetNone}
	}
	nothing := "this system has no Landlock (macOS's sandbox-exec is deprecated)"
	r.Rights = append(r.Rights, Right{Right: "files: only the program, the base files and the paths given", Why: nothing},
		Right{Right: "network: " + strings.Join(r.Net, ", "), Why: nothing})
	l := s.Limits
	if l.Memory > 0 {
		r.Rights = append(r.Rights, Right{Right: "memory: " + formatSize(l.Memory), Why: "RLIMIT_DATA and RLIMIT_AS do not bind mmap here"})
	}
	if l.Procs > 0 {
		r.Rights = append(r.Rights, Right{Right: "processes", Why: "RLIMIT_NPROC counts every process of the bridge's user, and there is no user namespace"})
	}
	if l.Files > 0 {
		p.launch.Rlimits = append(p.launch.Rlimits, launch.Rlimit{Resource: unix.RLIMIT_NOFILE, Cur: uint64(l.Files), Max: uint64(l.Files)})
		r.Rights = append(r.Rights, Right{Right: "open files", Enforced: true, By: "RLIMIT_NOFILE, per process"})
	}
	if l.CPU > 0 {
		secs := uint64(l.CPU.Seconds())
		p.launch.Rlimits = append(p.launch.Rlimits, launch.Rlimit{Resource: unix.RLIMIT_CPU, Cur: secs, Max: secs + 1})
		r.Rights = append(r.Rights, Right{Right: "CPU time: " + l.CPU.String(), Enforced: true, By: "RLIMIT_CPU, per process"})
	}
	return p, nil
}

// sandboxSpawn is one sandboxed child being started: its plan, and the
// launcher's report pipe.
type sandboxSpawn struct {
	plan    *sandboxPlan
	reportR *os.File
	reportW *os.File
}

func prepareSandbox(s *Sandbox, cmd *exec.Cmd, dir string, env []string) (*sandboxSpawn, error) {
	if s == nil || !s.Confines() && s.PinSHA256 == "" {
		return nil, nil // nothing to apply: no launcher
	}
	if err := s.Validate(); err != nil {
		return nil, &StartError{Kind: StartSandbox, Detail: err.Error()}
	}
	p, err := s.planFor(cmd.Path, dir, env)
	if err != nil {
		return nil, &StartError{Kind: StartSandbox, Detail: err.Error()}
	}
	if bad := p.report.NotEnforced(); len(bad) > 0 && s.required() {
		return nil, &StartError{Kind: StartSandbox, Detail: notEnforcedError(bad).Error(), Program: p.launch.Path}
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	return &sandboxSpawn{plan: p, reportR: r, reportW: w}, nil
}

// command rewrites cmd to run the launcher, with its report pipe as fd 3.
func (sp *sandboxSpawn) command(cmd *exec.Cmd) error {
	b, err := json.Marshal(sp.plan.launch)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd.Env = append([]string{launch.Env}, cmd.Env...)
	cmd.Args = append([]string{launch.Arg0, string(b)}, cmd.Args...)
	cmd.Path = self
	cmd.ExtraFiles = []*os.File{sp.reportW}
	return nil
}
