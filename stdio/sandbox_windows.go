package stdio

// How Windows enforces a Sandbox: the child's Job Object (contain_windows.go)
// carries its memory, process and CPU time limits, for the whole tree:
// JOB_OBJECT_LIMIT_JOB_MEMORY (committed memory of every process of the
// job together), JOB_OBJECT_LIMIT_ACTIVE_PROCESS and
// JOB_OBJECT_LIMIT_JOB_TIME (user-mode CPU time of the job; Windows then
// terminates every process in it). The pin: the bridge opens the program
// sharing it for reading only, hashes it through that handle, and keeps
// the handle until the process has been created from the file, so nobody
// can write, rename or delete it between the check and the start. Nothing
// confines files or the network here, and open files have no limit: a
// right not enforced, which EnforceRequired refuses and EnforceBestEffort
// logs.

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/windows"
)

// ProbeSandbox says what this system offers a sandbox.
func ProbeSandbox() SandboxSystem {
	return SandboxSystem{Other: "Windows: a Job Object per child carries memory, process and CPU time limits; nothing confines files or the network"}
}

// sandboxPlan is a Sandbox made concrete for one program on this system.
type sandboxPlan struct {
	path   string
	limits Limits
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
	p := &sandboxPlan{path: abs, limits: s.Limits}
	r := &SandboxReport{Enforce: cmp.Or(s.Enforce, EnforceRequired), Preset: s.Preset, Program: abs,
		Read: s.Read, Write: s.Write, Exec: s.Exec, Net: s.Net, Limits: s.Limits.String(), Pinned: s.PinSHA256 != ""}
	p.report = r
	if s.PinSHA256 != "" {
		r.Rights = append(r.Rights, Right{Right: "the program matches its pin", Enforced: true,
			By: "hashed through a handle that lets nobody write, rename or delete it until the process is created"})
	}
	if !s.Confines() {
		return p, nil
	}
	if net.none() {
		r.Net = []string{NetNone}
	}
	nothing := "Windows gives a process no file or network confinement the bridge can apply"
	r.Rights = append(r.Rights, Right{Right: "files: only the program, the base files and the paths given", Why: nothing},
		Right{Right: "network: " + strings.Join(r.Net, ", "), Why: nothing})
	l := s.Limits
	if l.Memory > 0 {
		r.Rights = append(r.Rights, Right{Right: "memory: " + formatSize(l.Memory), Enforced: true, By: "its Job Object, for the whole tree"})
	}
	if l.Procs > 0 {
		r.Rights = append(r.Rights, Right{Right: fmt.Sprintf("processes: %d", l.Procs), Enforced: true, By: "its Job Object"})
	}
	if l.Files > 0 {
		r.Rights = append(r.Rights, Right{Right: fmt.Sprintf("open files: %d", l.Files), Why: "Windows has no limit of open handles per process"})
	}
	if l.CPU > 0 {
		r.Rights = append(r.Rights, Right{Right: "CPU time: " + l.CPU.String(), Enforced: true, By: "its Job Object, user-mode time of the whole tree"})
	}
	return p, nil
}

// sandboxSpawn is one sandboxed child being started: its limits, and the
// handle that holds its pinned program still.
type sandboxSpawn struct {
	limits Limits
	pinned windows.Handle
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
		return nil, &StartError{Kind: StartSandbox, Detail: notEnforcedError(bad).Error(), Program: p.path}
	}
	sp := &sandboxSpawn{limits: p.limits}
	if s.PinSHA256 != "" {
		h, got, err := holdAndHash(p.path)
		if err != nil {
			return nil, &StartError{Kind: StartPin, Detail: fmt.Sprintf("cannot check %s against its pin: %v", p.path, err), Program: p.path, Pinned: s.PinSHA256}
		}
		if got != s.PinSHA256 {
			windows.CloseHandle(h)
			return nil, &StartError{Kind: StartPin, Detail: fmt.Sprintf("%s has sha256 %s, pinned %s", p.path, got, s.PinSHA256),
				Program: p.path, SHA256: got, Pinned: s.PinSHA256}
		}
		sp.pinned = h
	}
	return sp, nil
}

// holdAndHash opens path sharing it for reading only and hashes it
// through that handle.
func holdAndHash(path string) (windows.Handle, string, error) {
	name, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return 0, "", err
	}
	h, err := windows.CreateFile(name, windows.GENERIC_READ, windows.FILE_SHARE_READ, nil, windows.OPEN_EXISTING, windows.FILE_ATTRIBUTE_NORMAL, 0)
	if err != nil {
		return 0, "", err
	}
	// A second handle to read through: os.File closes its own.
	var dup windows.Handle
	if err := windows.DuplicateHandle(windows.CurrentProcess(), h, windows.CurrentProcess(), &dup, 0, false, windows.DUPLICATE_SAME_ACCESS); err != nil {
		windows.CloseHandle(h)
		return 0, "", err
	}
	f := os.NewFile(uintptr(dup), path)
	defer f.Close()
	sum := sha256.New()
	if _, err := io.Copy(sum, f); err != nil {
		windows.CloseHandle(h)
		return 0, "", err
	}
	return h, hex.EncodeToString(sum.Sum(nil)), nil
}

// jobLimits are the limits the child's job carries.
func (sp *sandboxSpawn) jobLimits() Limits {
	if sp == nil {
		return Limits{}
	}
	return sp.limits
}

func (sp *sandboxSpawn) started() {
	if sp != nil && sp.pinned != 0 {
		windows.CloseHandle(sp.pinned)
		sp.pinned = 0
	}
}

func (sp *sandboxSpawn) close() { sp.started() }

func (sp *sandboxSpawn) await(*slog.Logger) *StartError { return nil }
