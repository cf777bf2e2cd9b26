package stdio

import (
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// macOS gives a process group per child, and no more. What holds there,
// against Linux:
//
//   - Stop, Kill, the end of a session and the bridge's own shutdown
//     (SIGTERM, SIGINT) reach the child, its process group, and every
//     descendant still linked to it by its parent chain, setsid'd ones
//     included: the same stop sequence as on Linux (stdin closed, grace,
//     SIGTERM, grace, SIGKILL). macOS has no /proc and no pidfds; the
//     descendants are read from the process table (sysctl kern.proc.all)
//     just before each signal, and each is named by its pid and start
//     time (see signal).
//   - A descendant whose own parent died before it is re-parented to
//     launchd, and nothing links it to the child any more: macOS has no
//     subreaper (PR_SET_CHILD_SUBREAPER) to bring it to the bridge. It is
//     still reached if it stayed in the child's process group. launchd
//     reaps it when it exits, so it never stays a zombie.
//   - When the child exits by itself, what it left in its process group
//     gets SIGKILL, as on Linux; what left the group and lost its parent
//     is out of reach (above).
//   - When the bridge is killed with SIGKILL (or crashes), nothing of it
//     runs any more to stop its children, and macOS has no Pdeathsig to
//     have the kernel do it. What the child gets is the end of its stdin:
//     the bridge held the only write end of that pipe, and the kernel
//     closes it as the bridge dies. A server that follows the MCP stdio
//     transport exits on it (its shutdown begins by "closing the input
//     stream to the child process"), and with it, usually, the
//     processes it started. A server that ignores the end of its input,
//     or a descendant that outlives it, is left running.
//
// Something could watch for the bridge's death (a kqueue EVFILT_PROC
// NOTE_EXIT on the bridge's pid) and then kill every group, but it would
// have to be a process of its own, outside the bridge, started with it
// and told of every child: an extra process that itself can be killed
// first. The end of stdin needs nothing more and is what MCP servers
// already obey, so that is what this file relies on; a watcher process is
// the way to go further.

// stopSignals are Stop's steps after closing stdin, one grace period
// apart: the polite request, then the end.
var stopSignals = []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL}

func probe(c Containment) (string, error) {
	switch c {
	case ContainProcessGroup:
		return "a process group per child, with its descendants found in the process table", nil
	case ContainPIDNamespace, ContainCgroup:
		return "", errOtherSystem{c, "Linux"}
	case ContainJobObject:
		return "", errOtherSystem{c, "Windows"}
	}
	return "", fmt.Errorf("unknown containment %q", c)
}

func startTree(cmd *exec.Cmd, s Containment, sp *sandboxSpawn) (tree, error) {
	if _, err := probe(s); err != nil {
		return nil, err
	}
	if sp != nil {
		if err := sp.command(cmd); err != nil {
			return nil, err
		}
	}
	// Setpgid: the child leads a group of its own, so a terminal's Ctrl-C
	// reaches only the bridge, and one signal reaches the whole group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &groupTree{cmd: cmd}, nil
}

// groupTree is a command leading a process group of its own.
type groupTree struct {
	cmd *exec.Cmd

	mu     sync.Mutex // orders signals against reaping the leader
	reaped bool
	// seen holds every descendant a signal reached, so that wait can kill
	// those still alive once the command is gone (they are no longer its
	// descendants then).
	seen []procEntry
}

func (t *groupTree) pid() int { return t.cmd.Process.Pid }

// signal sends sig to the group and to every descendant of the command.
// The descendants are read first: once the leader dies (SIGKILL), its
// children are re-parented and no walk from it finds them. Each is
// signalled only if the process table still shows the pid with the start
// time it had in the snapshot, right before the kill: without pidfds
// there is no way to close the gap between that check and the kill, but
// macOS hands out pids in increasing order, so for a pid to be reused in
// that gap the whole pid space would have to wrap around within it.
func (t *groupTree) signal(sig syscall.Signal) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.reaped {
		return
	}
	pid := t.cmd.Process.Pid
	var desc []procEntry
	if table, err := processTable(); err == nil {
		desc = descendantsIn(table, pid)
	}
	// Until the leader is reaped its pid, which is the group id, cannot be
	// reused, so the group signal never reaches a stranger.
	_ = syscall.Kill(-pid, sig)
	for _, d := range desc {
		signalIfSame(d, sig)
		t.seen = append(t.seen, d)
	}
}

func (t *groupTree) wait() error {
	pid := t.cmd.Process.Pid
	// Wait for the exit without reaping, so the group id stays ours while
	// the leftovers are killed.
	waitExitNoReap(pid)
	t.mu.Lock()
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	for _, d := range t.seen {
		signalIfSame(d, syscall.SIGKILL)
	}
	t.seen = nil
	err := t.cmd.Wait()
	t.reaped = true
	t.mu.Unlock()
	return waitError(err)
}

// processTable reads every process's pid, parent and start time.
func processTable() ([]procEntry, error) {
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil, fmt.Errorf("read the process table: %w", err)
	}
	out := make([]procEntry, 0, len(procs))
	for i := range procs {
		out = append(out, entryOf(&procs[i]))
	}
	return out, nil
}

func entryOf(k *unix.KinfoProc) procEntry {
	st := k.Proc.P_starttime
	return procEntry{
		pid:   int(k.Proc.P_pid),
		ppid:  int(k.Eproc.Ppid),
		start: st.Sec*1e6 + int64(st.Usec),
	}
}

// szomb is the state of a zombie in kinfo_proc's p_stat (sys/proc.h).
const szomb = 5

// current is what the process table says of pid now; ok is false if it
// has no such process or it is a zombie.
func current(pid int) (procEntry, bool) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil || int(k.Proc.P_pid) != pid || k.Proc.P_stat == szomb {
		return procEntry{}, false
	}
	return entryOf(k), true
}

// signalIfSame sends sig to d.pid if it is still the process d names.
func signalIfSame(d procEntry, sig syscall.Signal) {
	if now, ok := current(d.pid); ok && now.start == d.start {
		_ = syscall.Kill(d.pid, sig)
	}
}

// waitExitNoReap blocks until the process, a child of this one, has
// exited, leaving it a zombie so its pid (and group id) cannot be reused
// until cmd.Wait reaps it. macOS has no waitid with WNOWAIT that os/exec
// trusts (os.Process does without, golang/go#13987), so the exit is read
// from a kqueue: EVFILT_PROC with NOTE_EXIT. Registering it for a process
// that has already exited fails with ESRCH (XNU finds no live process by
// that pid), and since the zombie is ours the pid cannot name anyone
// else, so ESRCH means it has exited. The kernel's note says a
// registration that succeeds catches the exit, but the wait also looks at
// the process table once a second, so a lost event costs a second, not
// the child.
func waitExitNoReap(pid int) {
	kq, err := unix.Kqueue()
	if err != nil {
		return // cmd.Wait waits then, reaping: only the leftovers' kill is less safe
	}
	defer unix.Close(kq)
	change := unix.Kevent_t{Ident: uint64(pid), Filter: unix.EVFILT_PROC, Flags: unix.EV_ADD | unix.EV_ONESHOT, Fflags: unix.NOTE_EXIT}
	for {
		_, err := unix.Kevent(kq, []unix.Kevent_t{change}, nil, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return // ESRCH: it has exited already
		}
		break
	}
	events := make([]unix.Kevent_t, 1)
	timeout := unix.NsecToTimespec(int64(time.Second))
	for {
		n, err := unix.Kevent(kq, nil, events, &timeout)
		switch {
		case n > 0:
			return
		case err != nil && !errors.Is(err, syscall.EINTR):
			return
		}
		if _, alive := current(pid); !alive {
			return
		}
	}
}
