//go:build unix

package stdio

import (
	"os/exec"
	"sync"
	"syscall"
)

// groupTree is a command leading a process group of its own, the
// process-group strategy of every Unix system. Signals go to the group and
// to every descendant the system's kin finds (setsid'd ones included,
// where it finds any); once the command has exited, what is left of its
// group, and what the signals reached, is killed. What differs from one
// system to another is only how descendants are found and named for good
// (kin): pidfds on Linux, pids with their start times on macOS, none on
// the other systems.
type groupTree struct {
	cmd *exec.Cmd
	kin kin

	mu     sync.Mutex // orders signals against reaping the leader
	reaped bool
	// seen holds every descendant a signal reached, so that wait can kill
	// those still alive once the command is gone (they are no longer its
	// descendants then).
	seen []kinRef
}

// kin is how one system finds the processes a command started.
type kin interface {
	// below names the processes below pid, found now: before a signal
	// to the group, since once the leader dies its children are
	// re-parented and no walk from it finds them.
	below(pid int) []kinRef
	// left names what is still to be killed once the leader has exited
	// (Linux: the orphans that carry its mark), before the group kill
	// orphans more of them.
	left() []kinRef
	// waitExit blocks until pid has exited, without reaping it where the
	// system allows (reaped false), so the group id stays the tree's
	// while the leftovers are killed; where it does not, it reaps it and
	// says how it ended (reaped true).
	waitExit(cmd *exec.Cmd) (reaped bool, err error)
	// done says the leader has been reaped.
	done(pid int)
}

// kinRef names one process for good: a signal through it never reaches
// a process that merely reuses its pid.
type kinRef interface {
	signal(sig syscall.Signal)
	release()
}

func (t *groupTree) pid() int { return t.cmd.Process.Pid }

func (t *groupTree) signal(sig syscall.Signal) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.reaped {
		return
	}
	pid := t.cmd.Process.Pid
	desc := t.kin.below(pid)
	// Until the leader is reaped its pid, which is the group id, cannot be
	// reused, so the group signal never reaches a stranger.
	_ = syscall.Kill(-pid, sig)
	for _, d := range desc {
		d.signal(sig)
		t.seen = append(t.seen, d)
	}
}

func (t *groupTree) wait() error {
	pid := t.cmd.Process.Pid
	reaped, err := t.kin.waitExit(t.cmd)
	t.mu.Lock()
	left := t.kin.left()
	// Before the leader is reaped, the group id is the tree's. After (a
	// system that cannot wait without reaping), the group id cannot be
	// reused while any process of the group is alive: the kill reaches
	// what is left of the group, or, once the group is empty, nothing
	// unless a new process of that pid has made itself a group leader in
	// the meantime.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	for _, d := range append(t.seen, left...) {
		d.signal(syscall.SIGKILL)
		d.release()
	}
	t.seen = nil
	if !reaped {
		err = t.cmd.Wait()
	}
	t.reaped = true
	t.mu.Unlock()
	t.kin.done(pid)
	return waitError(err)
}
