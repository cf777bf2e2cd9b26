package stdio

import (
	"errors"
	"fmt"
	"os/exec"
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

// groupWhy is what the log says of the process-group strategy here.
const groupWhy = "a process group per child, with its descendants found in the process table"

func groupKin() kin { return tableKin{} }

// tableKin finds a group's descendants in the process table, each named
// by its pid and start time: before each signal the table is read again,
// and a process is signalled only if the table still shows the pid with
// the start time it had in the snapshot. Without pidfds there is no way
// to close the gap between that check and the kill, but macOS hands out
// pids in increasing order, so for a pid to be reused in that gap the
// whole pid space would have to wrap around within it.
type tableKin struct{}

func (tableKin) below(pid int) []kinRef {
	table, err := processTable()
	if err != nil {
		return nil
	}
	desc := descendantsIn(table, pid)
	out := make([]kinRef, len(desc))
	for i, d := range desc {
		out[i] = d
	}
	return out
}

func (tableKin) left() []kinRef { return nil }

func (tableKin) waitExit(cmd *exec.Cmd) (bool, error) {
	waitExitNoReap(cmd.Process.Pid)
	return false, nil
}

func (tableKin) done(int) {}

// signal sends sig to d.pid if it is still the process d names.
func (d procEntry) signal(sig syscall.Signal) {
	if now, ok := current(d.pid); ok && now.start == d.start {
		_ = syscall.Kill(d.pid, sig)
	}
}

func (procEntry) release() {}

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
