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
// it stays a zombie. Stop kills the whole group, so orphans die, but only a
// parent can remove a dead process from the process table. The reaper
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
				if n, _ := reapOrphans(); n > 0 {
					log.Debug("reaped orphaned descendants", "count", n)
				}
			}
		}
	}()
	return nil
}

// ReapOrphans reaps the orphans left with this process until none is left
// or ctx ends. Call it after every Child is stopped, before the process
// exits: Stop kills a child's whole group, but an orphan that dies after
// that, or after the reaper of EnableSubreaper stopped, would otherwise be
// left a zombie of PID 1, which may never reap it.
func ReapOrphans(ctx context.Context) error {
	// Listen before looking, so no death between the two goes unnoticed.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGCHLD)
	defer signal.Stop(sigs)
	for {
		_, running := reapOrphans()
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
// and counts the others, still running.
func reapOrphans() (reaped, running int) {
	self := os.Getpid()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, 0 // nothing can be found without /proc
	}
	regMu.Lock()
	defer regMu.Unlock()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || known[pid] {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name may hold spaces and parens: fields start after
		// the last ')'. Then: state ppid ...
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 || f[1] != strconv.Itoa(self) {
			continue
		}
		if f[0] != "Z" {
			running++
			continue
		}
		var ws syscall.WaitStatus
		if p, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); err == nil && p == pid {
			reaped++
		}
	}
	return reaped, running
}
