// Package nsinit is the init process of stdio's ContainPIDNamespace: this executable, re-executed
// through /proc/self/exe as the first process (PID 1) of a child's PID
// namespace. The command itself is not PID 1, for two reasons: the kernel
// drops every signal to a namespace's PID 1 that it has no handler for
// (SIGTERM to a node server would do nothing), and PID 1 must reap the
// orphans of the namespace, which servers do not do. When this init exits,
// the kernel kills everything left in the namespace (setsid'd daemons
// included) before its parent can reap it.
//
// It is recognised by a func init of this package, so every binary that
// imports stdio (the bridge, the load tool, every test binary) serves as
// its own init without a hook in main. The marker is argv[0] and the first
// environment entry together, neither of which a user sets by accident.
//
// It is a package of its own, importing little, because a package's init
// runs only once everything it imports is initialized, and Go initializes
// ready packages in the order of their import paths: stdio, importing
// path/filepath, os/exec and x/sys, would run its init after most of the
// bridge's dependencies (protobuf, prometheus, the MCP SDK, net/http)
// had run theirs, a cost every child would pay at start.
package nsinit

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
)

const (
	Arg0 = "mcp-bridge-init"
	Env  = "_MCP_BRIDGE_INIT=1"
	// ReportFD is where the init tells the bridge how things went, one
	// line each: "P<pid>" once the command runs (its pid as the bridge's
	// /proc sees it) or "E<error>" if it could not start; then "S<wait
	// status>" when it has exited. A pipe, because the init cannot report
	// a death by signal by dying of it: the kernel protects PID 1 from
	// every signal but the parent's SIGKILL.
	ReportFD = 3
	// CommandReportFD, when the bridge gives the init one, is handed on
	// to the command as its fd 3: the report pipe of the sandbox launcher
	// (stdio/internal/launch), which the command is then.
	CommandReportFD = 4
)

func init() {
	if len(os.Args) < 2 || os.Args[0] != Arg0 {
		return
	}
	env := os.Environ()
	if len(env) == 0 || env[0] != Env {
		return
	}
	os.Exit(runInit(os.Args[1:], env[1:]))
}

// runInit is the init process: argv is "probe", or "run", the command's
// path, then its argv. It returns the exit status of the init.
func runInit(argv []string, env []string) int {
	report := os.NewFile(ReportFD, "init report")
	// The command must not hold the report pipe: the bridge reads it to its
	// end once this process has exited.
	syscall.CloseOnExec(ReportFD)
	if argv[0] == "probe" {
		// Being here shows the namespace was made and this executable ran
		// again and knew itself: all a child needs.
		fmt.Fprintf(report, "P0\n")
		return 0
	}
	if argv[0] != "run" || len(argv) < 3 {
		fmt.Fprintf(report, "Ebad init arguments %q\n", argv)
		return 125
	}
	// Catch the signals to forward before the command exists: PID 1 drops
	// those it has no handler for.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	// Its own standard files straight through: no copying, and no
	// process in between on the pipes.
	files := []uintptr{0, 1, 2}
	if handsOn() {
		// Its fd 3, and not also its fd 4 (the bridge gave it to this
		// process without close-on-exec).
		files = append(files, CommandReportFD)
		syscall.CloseOnExec(CommandReportFD)
	}
	pid, err := syscall.ForkExec(argv[1], argv[2:], &syscall.ProcAttr{
		Env:   env,
		Files: files,
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	if len(files) > 3 {
		// The command holds it now: its end must come with the command's.
		syscall.Close(CommandReportFD)
	}
	if err != nil {
		fmt.Fprintf(report, "E%s\n", oneLine(fmt.Sprintf("fork/exec %s: %v", argv[1], err)))
		return 127
	}
	if _, err := fmt.Fprintf(report, "P%d\n", childHostPid()); err != nil {
		// The bridge died before this process could be told to die with
		// it (Pdeathsig is set after the fork): exiting ends the namespace.
		return 125
	}
	// Drop this process's copies of the pipes, so that a command which
	// closes its stdout really closes it.
	releaseStdio()
	go func() {
		for s := range sigs {
			// kill(-1) from a namespace's PID 1 reaches every other
			// process in it: the command, its group, and the daemons that
			// left both.
			_ = syscall.Kill(-1, s.(syscall.Signal))
		}
	}()
	for {
		var ws syscall.WaitStatus
		p, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			fmt.Fprintf(report, "Ewait: %v\n", err)
			return 125
		case p != pid:
			continue // an orphan of the namespace, reaped
		}
		fmt.Fprintf(report, "S%d\n", uint32(ws))
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
}

// handsOn says whether the bridge gave this init a CommandReportFD.
func handsOn() bool {
	_, _, e := syscall.RawSyscall(syscall.SYS_FCNTL, CommandReportFD, syscall.F_GETFD, 0)
	return e == 0
}

// childHostPid is the pid of this process's only child as the bridge sees
// it. /proc is the bridge's, mounted in its PID namespace, so it names
// processes by the bridge's pids; the children of one of this process's
// threads is the command. 0 if /proc cannot tell.
func childHostPid() int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0
	}
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) == 1 {
			if pid, err := strconv.Atoi(f[0]); err == nil {
				return pid
			}
		}
	}
	return 0
}

// releaseStdio points fds 0, 1 and 2 at /dev/null.
func releaseStdio() {
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		for fd := range 3 {
			syscall.Close(fd)
		}
		return
	}
	for fd := range 3 {
		_ = syscall.Dup3(int(null.Fd()), fd, 0)
	}
	null.Close()
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
