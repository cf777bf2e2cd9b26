package stdio

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// The registry of children started by Start. It exists for the subreaper:
// a reaper may reap only processes nobody else waits for, and a child of
// ours is waited for by its own supervise goroutine.
var (
	regMu sync.Mutex
	known = map[int]bool{}
)

// startRegistered starts cmd and records its pid before any reaper can
// look, so a child that dies at once is never taken for an orphan.
func startRegistered(cmd *exec.Cmd) error {
	regMu.Lock()
	defer regMu.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	known[cmd.Process.Pid] = true
	return nil
}

func unregister(pid int) {
	regMu.Lock()
	delete(known, pid)
	regMu.Unlock()
}

// waitExitNoReap blocks until the process has exited, leaving it a zombie
// so its pid (and group id) cannot be reused until cmd.Wait reaps it.
func waitExitNoReap(pid int) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, syscall.EINTR) {
			return // exited, or not waitable (then cmd.Wait reports why)
		}
	}
}

// EnableSubreaper makes the bridge the reaper of every orphan its children
// leave behind, and reaps them until ctx ends.
//
// Without it, a grandchild whose parent died is re-parented to PID 1, and
// where PID 1 does not reap (a container without an init, some sandboxes)
// it stays a zombie. Under ContainPIDNamespace orphans stay in their
// namespace and its init reaps them; under the other strategies they come
// here: Stop kills them, but only a parent can remove a dead process from
// the process table, and ReapOrphans must find the ones no Child could
// attribute to itself. The reaper
// reaps only zombies that are not in the registry, so it never steals the
// exit status a supervise goroutine waits for. Call it once, from main,
// and only where every other child of the process is started by this
// package (tests that run other commands must not call it).
func EnableSubreaper(ctx context.Context, log *slog.Logger) error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("stdio: become child subreaper: %w", err)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGCHLD)
	go func() {
		defer signal.Stop(sigs)
		for {
			select {
			case <-ctx.Done():
				return
			case <-sigs:
				if n, _ := reapOrphans(false); n > 0 {
					log.Debug("reaped orphaned descendants", "count", n)
				}
			}
		}
	}()
	return nil
}

// ReapOrphans kills and reaps the orphans left with this process until
// none is left or ctx ends. Call it after every Child is stopped, before
// the process exits: whatever is still re-parented to the bridge then is
// a descendant whose own parent died before it and that no Child will
// stop (under ContainProcessGroup, one without its child's mark, see
// markedOrphans), or one
// that died after the reaper of EnableSubreaper stopped and would stay a
// zombie of PID 1, which may never reap it.
func ReapOrphans(ctx context.Context) error {
	// Listen before looking, so no death between the two goes unnoticed.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGCHLD)
	defer signal.Stop(sigs)
	for {
		_, running := reapOrphans(true)
		if running == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stdio: %d orphaned descendants still running: %w", running, ctx.Err())
		case <-sigs:
		}
	}
}

// reapOrphans reaps every zombie child of this process that no Child owns,
// and counts the others, still running; with kill it sends them SIGKILL.
// It runs on every SIGCHLD, so it reads only the children lists of this
// process's threads (an orphan is re-parented to one of them), never all
// of /proc, and lets wait4 with WNOHANG tell a dead orphan from a live one.
// regMu, held throughout, keeps every other reaper of this package away,
// so an orphan found running is not reaped before it is signalled, and its
// pid is still its own.
func reapOrphans(kill bool) (reaped, running int) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0, 0 // nothing can be found without /proc
	}
	regMu.Lock()
	defer regMu.Unlock()
	for _, t := range tasks {
		list, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(list)) {
			pid, err := strconv.Atoi(f)
			if err != nil || known[pid] {
				continue
			}
			var ws syscall.WaitStatus
			switch p, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); {
			case err == nil && p == pid:
				reaped++
			case err == nil:
				running++
				if kill {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
	}
	return reaped, running
}
