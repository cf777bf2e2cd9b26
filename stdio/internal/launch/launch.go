// Package launch is the sandbox launcher of stdio: this executable,
// re-executed, between the bridge and a sandboxed MCP server. It applies
// the server's sandbox to itself (resource limits, a private /proc,
// Landlock, a seccomp filter, no capabilities, the pin check) and then
// executes the server in its place, so that the server and everything it
// starts inherit all of it. Go cannot run code between fork and exec, and
// Landlock and seccomp confine the thread that asks for them: a process of
// its own that confines itself and then execs is how a Go program gets
// them around another program.
//
// Like nsinit, it is recognised by a func init of this package (argv[0]
// and the first environment entry together), so every binary that imports
// stdio serves as its own launcher; it imports little, so that its init
// runs before most of the bridge's dependencies have run theirs.
//
// What the launcher has to say reaches the bridge on ReportFD, one line
// each: "W<text>" for a warning the bridge logs, "X" right before the
// exec, and "E<kind>\t<text>" for the reason it does not start the
// server (kinds below), after which it exits. The pipe is close-on-exec:
// the bridge reads its end to EOF. X then EOF: the server is running; an
// E line: it did not start; EOF without X: the launcher died.
package launch

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
)

const (
	Arg0 = "mcp-bridge-sandbox"
	Env  = "_MCP_BRIDGE_SANDBOX=1"
	// ReportFD is the launcher's report pipe (see the package comment).
	ReportFD = 3
)

// The kinds of an E line: why the server did not start.
const (
	KindSandbox = "sandbox" // the sandbox could not be applied
	KindPin     = "pin"     // the executable does not match its pin
	KindExec    = "exec"    // the sandbox is in place but the program could not be executed
)

// Plan is everything the launcher applies, computed by the bridge once
// per server (stdio's sandbox plan) and given as argv[1], JSON. It holds
// paths, limits and a hash, nothing secret: argv is visible in /proc.
type Plan struct {
	// Path is the program to execute; the server's argv follows the plan
	// on the launcher's command line.
	Path string `json:"path"`
	// Rlimits are set before anything else.
	Rlimits []Rlimit `json:"rlimits,omitempty"`
	// MountProc: mount a procfs of the launcher's PID namespace over
	// /proc, in a mount namespace of its own, so the server sees only the
	// processes of its sandbox. Set when the launcher runs in a PID
	// namespace whose user namespace it has CAP_SYS_ADMIN in.
	MountProc bool `json:"mountProc,omitempty"`
	// PinSHA256 is the hex SHA-256 Path must have; the launcher then
	// executes a sealed in-memory copy of it.
	PinSHA256 string `json:"pin,omitempty"`
	// Landlock, if set, is the ruleset the launcher restricts itself to.
	Landlock *Landlock `json:"landlock,omitempty"`
	// Seccomp, if set, is the filter the launcher installs last.
	Seccomp *Seccomp `json:"seccomp,omitempty"`
}

// Rlimit is one setrlimit.
type Rlimit struct {
	Resource int    `json:"resource"`
	Cur      uint64 `json:"cur"`
	Max      uint64 `json:"max"`
}

// Landlock is a ruleset: the rights it handles (denied unless a rule
// grants them) and the rules. Rights are Landlock's bits.
type Landlock struct {
	HandledFS  uint64     `json:"fs"`
	HandledNet uint64     `json:"net,omitempty"`
	Scoped     uint64     `json:"scoped,omitempty"`
	Paths      []PathRule `json:"paths,omitempty"`
	// ConnectTCP are the ports a TCP connect may reach.
	ConnectTCP []uint16 `json:"connectTCP,omitempty"`
	// Proc is the read right given to /proc: all of it once the launcher
	// has mounted a private one (MountProc), else its own /proc/self.
	Proc uint64 `json:"proc,omitempty"`
}

// PathRule grants Access beneath Path. On a file, the launcher keeps only
// the rights that apply to files. Optional: a path that does not exist is
// skipped (the base rights of every sandbox name files that some systems
// lack); otherwise it is an error.
type PathRule struct {
	Path     string `json:"path"`
	Access   uint64 `json:"access"`
	Optional bool   `json:"optional,omitempty"`
}

// Seccomp says which syscalls the filter refuses besides the ones every
// sandbox refuses (see the filter in launch_linux.go).
type Seccomp struct {
	// DenyInet refuses socket(AF_INET and AF_INET6): network none where
	// no network namespace could be made.
	DenyInet bool `json:"denyInet,omitempty"`
	// DenyUnix refuses socket(AF_UNIX): a connection to a pathname unix
	// socket (docker.sock) where Landlock cannot refuse it.
	DenyUnix bool `json:"denyUnix,omitempty"`
	// DenyMPTCP refuses multipath TCP sockets, which Landlock's TCP rules
	// do not cover.
	DenyMPTCP bool `json:"denyMPTCP,omitempty"`
}

func init() {
	if len(os.Args) < 2 || os.Args[0] != Arg0 {
		return
	}
	env := os.Environ()
	if len(env) == 0 || env[0] != Env {
		return
	}
	os.Exit(launch(os.Args[1], os.Args[2:], env[1:]))
}

// launch reads the plan and runs the server under it; it returns only if
// it cannot, with the exit status of the launcher.
func launch(planJSON string, argv, env []string) int {
	rep := reporter{os.NewFile(ReportFD, "sandbox report")}
	// The server must not hold the pipe: the bridge reads it to its end.
	syscall.CloseOnExec(ReportFD)
	var p Plan
	if err := json.Unmarshal([]byte(planJSON), &p); err != nil || p.Path == "" || len(argv) == 0 {
		return rep.fail(KindSandbox, "bad launcher arguments")
	}
	return run(&p, argv, env, rep)
}

// reporter writes the launcher's report lines.
type reporter struct{ f *os.File }

func (r reporter) warn(format string, a ...any) {
	fmt.Fprintf(r.f, "W%s\n", oneLine(fmt.Sprintf(format, a...)))
}

// pinMismatch reports a program that does not match its pin: the
// message, then the hash it has, for the bridge's audit log.
func (r reporter) pinMismatch(path, got, want string) int {
	fmt.Fprintf(r.f, "E%s\t%s has sha256 %s, pinned %s\t%s\n", KindPin, oneLine(path), got, want, got)
	return 126
}

// execing says the launcher is about to exec the server.
func (r reporter) execing() { fmt.Fprintf(r.f, "X\n") }

// fail reports why the server is not started and returns the launcher's
// exit status: 127 when the program could not be executed, as a shell
// says it, else 126.
func (r reporter) fail(kind, format string, a ...any) int {
	fmt.Fprintf(r.f, "E%s\t%s\n", kind, oneLine(fmt.Sprintf(format, a...)))
	if kind == KindExec {
		return 127
	}
	return 126
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
