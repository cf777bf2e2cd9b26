package stdio

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
)

// Containment is how a child and everything it starts are kept from
// outliving their session and the bridge. Each operating system offers
// its own; ContainmentInUse says which one this process uses and why.
type Containment string

// The strategies, best first. docs/containment.md says what each guarantees.
const (
	// ContainAuto picks the best strategy the system allows, once per
	// process (see ContainmentInUse).
	ContainAuto Containment = "auto"
	// ContainPIDNamespace runs each child in a PID namespace of its own
	// under a small init process (this executable, re-executed): when the
	// child exits, is stopped, or the bridge dies, the init exits and the
	// kernel kills everything left in the namespace, daemons included.
	// Linux; unprivileged where user namespaces are allowed.
	ContainPIDNamespace Containment = "pid-namespace"
	// ContainCgroup runs each child in a cgroup v2 group of its own, under
	// the bridge's own (delegated) group, and ends it with cgroup.kill.
	// Linux 5.14 or later, with a writable cgroup.
	ContainCgroup Containment = "cgroup"
	// ContainJobObject runs each child in a Windows Job Object of its own
	// that kills every process in it when its last handle closes, which
	// the bridge holds: at the end of the session, and when the bridge
	// dies, however it dies. Windows only.
	ContainJobObject Containment = "job-object"
	// ContainProcessGroup runs each child in a process group of its own and
	// ends the group and every descendant still linked to the child by its
	// parent chain. On Linux, also the orphans re-parented to the bridge
	// that carry the child's ContainmentMarkEnv (any other orphan dies at
	// shutdown), and the child dies with the bridge (Pdeathsig); macOS has
	// neither subreaper nor Pdeathsig (see contain_darwin.go). Linux and
	// macOS.
	ContainProcessGroup Containment = "process-group"
)

// ContainmentMarkEnv is the variable that ContainProcessGroup adds to each
// child's environment, with a random value of that child's own, after
// whatever Options.Env says: the processes the child starts inherit it,
// and once their parent has died and they are re-parented to the bridge
// (a child subreaper), it is how the bridge tells whose they are.
const ContainmentMarkEnv = "MCP_BRIDGE_CONTAINMENT_MARK"

// Containments lists every strategy name SetContainment accepts: auto,
// then the strategies best first, the order auto tries them in. Each
// system gives only some of them (ProbeContainment says which); the list
// is the same everywhere, so a setting written for one system reads as
// "not on this system" on another rather than as a typo.
var Containments = []Containment{ContainAuto, ContainPIDNamespace, ContainCgroup, ContainJobObject, ContainProcessGroup}

// errOtherSystem is what probe says of a strategy that belongs to another
// operating system. auto passes over it without a word: that macOS has no
// cgroups says nothing about this machine worth logging.
type errOtherSystem struct {
	c    Containment
	goos string // where c is to be had
}

func (e errOtherSystem) Error() string { return fmt.Sprintf("%s: %s only", e.c, e.goos) }

// The process-wide strategy, chosen once.
var (
	containMu  sync.Mutex
	contained  Containment // "" until chosen
	containWhy string
)

// ProbeContainment says whether this system can give strategy want, and
// why: it returns the strategy want stands for (with ContainAuto, the best
// one allowed), or an error saying why it cannot be had. It changes
// nothing; the probes behind it run once per process.
func ProbeContainment(want Containment) (Containment, string, error) {
	if want == "" {
		want = ContainAuto
	}
	return chooseContainment(want)
}

// SetContainment chooses the strategy for every Child started afterwards
// whose Options do not name one: want, or with ContainAuto the best this
// system allows. It returns the strategy in use and why, for the log. A
// strategy the system cannot give is an error, and changes nothing.
func SetContainment(want Containment) (Containment, string, error) {
	if want == "" {
		want = ContainAuto
	}
	got, why, err := chooseContainment(want)
	if err != nil {
		return "", "", err
	}
	containMu.Lock()
	defer containMu.Unlock()
	contained, containWhy = got, why
	return got, why, nil
}

// ContainmentInUse is the strategy Children use when their Options name
// none, and why: the one SetContainment chose, or else the best this
// system allows, probed on first use and then kept.
func ContainmentInUse() (Containment, string) {
	containMu.Lock()
	defer containMu.Unlock()
	if contained == "" {
		// The auto choice never fails: the last strategy always works.
		contained, containWhy, _ = chooseContainment(ContainAuto)
	}
	return contained, containWhy
}

// chooseContainment resolves want with this system's probe.
func chooseContainment(want Containment) (Containment, string, error) {
	return choose(want, probe)
}

// choose resolves want (ContainAuto: the first strategy probe allows,
// best first) and says why: what it is, then why each better one is not
// to be had here. Strategies of other systems go unmentioned.
func choose(want Containment, probe func(Containment) (string, error)) (Containment, string, error) {
	switch want {
	case ContainAuto:
		var without []string
		for _, c := range Containments[1:] {
			why, err := probe(c)
			if err == nil {
				return c, strings.Join(append([]string{why}, without...), "; "), nil
			}
			if _, other := errors.AsType[errOtherSystem](err); !other {
				without = append(without, err.Error())
			}
		}
		return "", "", errors.New(strings.Join(without, "; "))
	case ContainPIDNamespace, ContainCgroup, ContainJobObject, ContainProcessGroup:
		why, err := probe(want)
		if err != nil {
			return "", "", err
		}
		return want, why + " (as asked)", nil
	}
	return "", "", fmt.Errorf("unknown containment %q: want one of %q", want, Containments)
}

// tree is how the operating system contains one child and everything it
// starts: the seam between what is the same everywhere (child.go: pipes,
// framing, the stop sequence) and what each system does its own way. A
// tree is started by startTree, signalled, and waited for. Each system
// has its own file:
//
//   - contain_linux.go: a PID namespace, a cgroup or a process group;
//   - contain_darwin.go: a process group, with descendants found in the
//     process table;
//   - contain_windows.go: a Job Object;
//   - contain_other.go: the portable fallback for the other Unix systems
//     (FreeBSD and the other BSDs), a process group alone.
//
// The process-group tree is the same on every Unix system but for how
// descendants are found (contain_group.go: groupTree and its kin).
// Besides the tree, each system's file defines:
//
//	startTree(cmd *exec.Cmd, s Containment, sp *sandboxSpawn) (tree, error)
//	probe(c Containment) (why string, err error)
//	var stopSignals []syscall.Signal // Stop's steps after closing stdin
type tree interface {
	// pid is the pid of the command (not of any helper process), as this
	// process sees it.
	pid() int
	// signal sends sig to the child and every descendant still running. It
	// never signals a process outside the tree (a pid reused after the
	// child was reaped), and does nothing once wait has returned. SIGKILL
	// ends the tree at once everywhere (on Windows, by terminating its
	// job); other signals are what the system makes of them.
	signal(sig syscall.Signal)
	// wait blocks until the child has exited and nothing it started is left
	// running (the tree kills what is left once the child has exited), and
	// says how the child ended: nil for exit status 0, an *ExitError, or the
	// error that stopped it. It is called once.
	wait() error
}

// startContained starts cmd, whose Path, Args, Env, Dir and standard files
// are set, contained by strategy s (ContainAuto: the process-wide one),
// through its sandbox's launcher if sp is set.
func startContained(cmd *exec.Cmd, s Containment, sp *sandboxSpawn) (tree, error) {
	if s == "" || s == ContainAuto {
		s, _ = ContainmentInUse()
	}
	return startTree(cmd, s, sp)
}

// exitError is nil for exit status 0, else an *ExitError.
func exitError(ws syscall.WaitStatus) error {
	if ws.Exited() && ws.ExitStatus() == 0 {
		return nil
	}
	return &ExitError{Status: ws}
}

// waitError turns exec.Cmd.Wait's error into what Child.Err reports.
func waitError(err error) error {
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok {
			return exitError(ws)
		}
	}
	return err
}

// ExitError reports a child that did not exit with status 0.
type ExitError struct {
	// Status is the child's wait status: an exit status, or the signal
	// that ended it. With ContainPIDNamespace it is the command's own, as
	// its init process reported it. On Windows it is an exit code only: a
	// child ended by its job being terminated exits with status 1.
	Status syscall.WaitStatus
}

// Error says how the child ended in the words of os.ProcessState: "exit
// status 3", "signal: killed".
func (e *ExitError) Error() string {
	ws := e.Status
	var s string
	switch {
	case ws.Exited():
		s = fmt.Sprintf("exit status %d", ws.ExitStatus())
	case ws.Signaled():
		s = "signal: " + ws.Signal().String()
	default:
		s = fmt.Sprintf("wait status %v", ws)
	}
	if ws.CoreDump() {
		s += " (core dumped)"
	}
	return s
}

// ExitCode is the exit status, or -1 if a signal ended the child.
func (e *ExitError) ExitCode() int {
	if !e.Status.Exited() {
		return -1
	}
	return e.Status.ExitStatus()
}
