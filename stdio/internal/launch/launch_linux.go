package launch

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// FileRights are the Landlock rights that apply to a file (the others
// apply to directories only): a rule on a file keeps these.
const FileRights = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev

// run applies the plan to this thread and executes the server from it.
//
// Everything is applied to the one thread that then calls execve, and
// the new program inherits that thread's credentials, Landlock domain,
// seccomp filter, mount namespace and the process's limits: the other
// threads of this Go process vanish with the exec. So the thread is
// locked for good, and nothing needs the all-threads machinery (psx).
func run(p *Plan, argv, env []string, rep reporter) int {
	runtime.LockOSThread() // never unlocked: this thread becomes the server

	procMounted := false
	if p.MountProc {
		if err := privateProc(); err != nil {
			rep.warn("no private /proc (%v): the server reads only its own /proc/self", err)
		} else {
			procMounted = true
		}
	}

	var exe *os.File // the sealed copy of a pinned program
	if p.PinSHA256 != "" {
		f, got, err := sealedCopy(p.Path)
		if err != nil {
			return rep.fail(KindPin, "cannot check %s against its pin: %v", p.Path, err)
		}
		if got != p.PinSHA256 {
			return rep.pinMismatch(p.Path, got, p.PinSHA256)
		}
		exe = f
	}

	// No capability survives into the server, whatever user it runs as
	// (root keeps root's uid, inside a user namespace of its own).
	dropCapabilities()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return rep.fail(KindSandbox, "no_new_privs: %v", err)
	}
	if p.Landlock != nil {
		if err := restrictLandlock(p.Landlock, procMounted); err != nil {
			return rep.fail(KindSandbox, "landlock: %v", err)
		}
	}
	if p.Seccomp != nil {
		if err := loadSeccomp(p.Seccomp); err != nil {
			return rep.fail(KindSandbox, "seccomp: %v", err)
		}
	}
	// The limits come last, with nothing between them and the exec that
	// allocates: the launcher's own memory must not count against the
	// server's, nor a memory limit fail the launcher instead of the
	// server.
	x, err := prepareExec(exe, p.Path, argv, env)
	if err != nil {
		return rep.fail(KindExec, "exec %s: %v", p.Path, err)
	}
	for _, rl := range p.Rlimits {
		if err := unix.Setrlimit(rl.Resource, &unix.Rlimit{Cur: rl.Cur, Max: rl.Max}); err != nil {
			return rep.fail(KindSandbox, "setrlimit %d: %v", rl.Resource, err)
		}
	}
	rep.execing()
	err = x.exec()
	return rep.fail(KindExec, "exec %s: %v", p.Path, err)
}

// execArgs are an execve's or execveat's arguments, made before the call
// so that nothing is allocated between the limits and the exec.
type execArgs struct {
	fd         int // the pinned copy, or -1 to execute path
	path       *byte
	argv, envv []*byte
}

func prepareExec(exe *os.File, path string, argv, env []string) (*execArgs, error) {
	x := &execArgs{fd: -1}
	if exe != nil {
		x.fd = int(exe.Fd())
		path = ""
	}
	var err error
	if x.path, err = syscall.BytePtrFromString(path); err != nil {
		return nil, err
	}
	if x.argv, err = syscall.SlicePtrFromStrings(argv); err != nil {
		return nil, err
	}
	if x.envv, err = syscall.SlicePtrFromStrings(env); err != nil {
		return nil, err
	}
	return x, nil
}

// exec executes the program: the sealed copy with execveat
// (AT_EMPTY_PATH), as fexecve(3) does without needing /proc, or the path.
func (x *execArgs) exec() error {
	argv, envv := uintptr(unsafe.Pointer(&x.argv[0])), uintptr(unsafe.Pointer(&x.envv[0]))
	var e syscall.Errno
	if x.fd >= 0 {
		_, _, e = syscall.RawSyscall6(unix.SYS_EXECVEAT, uintptr(x.fd), uintptr(unsafe.Pointer(x.path)), argv, envv, unix.AT_EMPTY_PATH, 0)
	} else {
		_, _, e = syscall.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(x.path)), argv, envv)
	}
	return e
}

// privateProc mounts a procfs over /proc in a mount namespace of this
// thread's own: a procfs shows the processes of the PID namespace of its
// mounter, here the sandbox's. The mount namespace is this thread's
// (unshare(CLONE_NEWNS) gives the calling thread a copy), so the init
// process that shares the namespace the bridge made keeps its view.
func privateProc() error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("mount namespace: %w", err)
	}
	// Nothing mounted here may propagate back to the bridge's namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount proc: %w", err)
	}
	return nil
}

// sealedCopy copies the file at path into a sealed memfd while hashing
// what it copies, and returns the memfd and the hex SHA-256. The memfd
// is what runs: whatever happens to the file after it was read, the bytes
// that were hashed are the bytes that execute (runc's defence for
// CVE-2019-5736). A #! script keeps the memfd open across the exec,
// because the kernel hands its interpreter /dev/fd/N to read it from.
func sealedCopy(path string) (*os.File, string, error) {
	src, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer src.Close()
	flags := unix.MFD_CLOEXEC | unix.MFD_ALLOW_SEALING
	fd, err := unix.MemfdCreate("mcp-bridge-pinned", flags|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) { // before Linux 6.3, which knows no MFD_EXEC
		fd, err = unix.MemfdCreate("mcp-bridge-pinned", flags)
	}
	if err != nil {
		return nil, "", fmt.Errorf("memfd: %w", err)
	}
	dst := os.NewFile(uintptr(fd), "pinned copy")
	h := sha256.New()
	head := &prefix{b: make([]byte, 0, 2)}
	if _, err := io.Copy(io.MultiWriter(dst, h, head), src); err != nil {
		dst.Close()
		return nil, "", fmt.Errorf("copy: %w", err)
	}
	seals := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		dst.Close()
		return nil, "", fmt.Errorf("seal: %w", err)
	}
	if bytes.Equal(head.b, []byte("#!")) {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0); err != nil {
			dst.Close()
			return nil, "", err
		}
	}
	return dst, hex.EncodeToString(h.Sum(nil)), nil
}

// prefix keeps the first bytes written to it, up to its capacity.
type prefix struct{ b []byte }

func (p *prefix) Write(b []byte) (int, error) {
	if room := cap(p.b) - len(p.b); room > 0 {
		p.b = append(p.b, b[:min(room, len(b))]...)
	}
	return len(b), nil
}

// dropCapabilities empties this thread's ambient, bounding, effective,
// permitted and inheritable sets. The bounding set needs CAP_SETPCAP to
// shrink: a launcher without it is not root in its namespace, and an
// exec gives a non-root user no capability outside its ambient set.
func dropCapabilities() {
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	for c := 0; c < 64; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			break // EINVAL past the last capability; EPERM without CAP_SETPCAP
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	_ = unix.Capset(&hdr, &data[0])
}

// restrictLandlock restricts this thread to the ruleset.
func restrictLandlock(l *Landlock, procMounted bool) error {
	cfg := landlock.Config{
		HandledAccessFS:  landlock.AccessFSSet(l.HandledFS),
		HandledAccessNet: landlock.AccessNetSet(l.HandledNet),
		Scoped:           landlock.ScopedSet(l.Scoped),
	}
	var rules []landlock.Rule
	add := func(path string, access uint64) error {
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			access &= FileRights
		}
		if access &= l.HandledFS; access != 0 {
			rules = append(rules, landlock.PathAccess(landlock.AccessFSSet(access), path))
		}
		return nil
	}
	for _, r := range l.Paths {
		if err := add(r.Path, r.Access); err != nil {
			if r.Optional && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return fmt.Errorf("%s: %w", r.Path, err)
		}
	}
	if l.Proc != 0 {
		proc := "/proc/self" // resolved now: the launcher's pid, which the server keeps
		if procMounted {
			proc = "/proc"
		}
		if err := add(proc, l.Proc); err != nil {
			return err
		}
	}
	for _, port := range l.ConnectTCP {
		rules = append(rules, landlock.ConnectTCP(port))
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return err
	}
	if fd < 0 {
		return nil
	}
	defer unix.Close(fd)
	return ll.LandlockRestrictSelf(fd, flags)
}

// denied are the syscalls every sandboxed server is refused (EPERM):
// what changes the machine rather than the process (modules, reboot,
// swap, the clock, kexec), what Landlock already refuses but is better
// not reached at all (mounts), and kernel interfaces that are a common
// way into the kernel and that no MCP server needs (bpf, perf,
// userfaultfd, keyrings, io_uring). Names this architecture lacks are
// skipped.
var denied = []string{
	"acct", "add_key", "adjtimex", "bpf", "clock_adjtime", "clock_settime", "delete_module",
	"finit_module", "fsconfig", "fsmount", "fsopen", "fspick", "init_module", "io_uring_enter",
	"io_uring_register", "io_uring_setup", "ioperm", "iopl", "kexec_file_load", "kexec_load",
	"keyctl", "lookup_dcookie", "mount", "mount_setattr", "move_mount", "name_to_handle_at",
	"open_by_handle_at", "open_tree", "perf_event_open", "pivot_root", "quotactl", "reboot",
	"request_key", "setns", "settimeofday", "swapoff", "swapon", "syslog", "umount2",
	"userfaultfd", "vhangup",
}

// loadSeccomp installs the filter on this thread. Everything not listed
// is allowed: this is a cut of the kernel's surface, not an allow-list,
// which every new runtime would break.
func loadSeccomp(s *Seccomp) error {
	info, err := arch.GetInfo("")
	if err != nil {
		return err
	}
	var names []string
	for _, n := range denied {
		if _, ok := info.SyscallNames[n]; ok {
			names = append(names, n)
		}
	}
	errno := func(e syscall.Errno) seccomp.Action { return seccomp.ActionErrno | seccomp.Action(e) }
	arg := func(name string, n uint32, op seccomp.Operation, v uint64) seccomp.NameWithConditions {
		return seccomp.NameWithConditions{Name: name, Conditions: seccomp.ArgumentConditions{{Argument: n, Operation: op, Value: v}}}
	}
	groups := []seccomp.SyscallGroup{
		{Names: names, Action: errno(unix.EPERM)},
		// No user namespace of its own: one would give the server every
		// capability over what it makes there, and the kernel code that
		// only capabilities reach.
		{NamesWithCondtions: []seccomp.NameWithConditions{
			arg("unshare", 0, seccomp.BitsSet, unix.CLONE_NEWUSER),
			arg("clone", 0, seccomp.BitsSet, unix.CLONE_NEWUSER),
		}, Action: errno(unix.EPERM)},
	}
	if _, ok := info.SyscallNames["clone3"]; ok {
		// clone3's flags are in memory a filter cannot read: ENOSYS sends
		// the C library back to clone, whose flags it can.
		groups = append(groups, seccomp.SyscallGroup{Names: []string{"clone3"}, Action: errno(unix.ENOSYS)})
	}
	var socks []seccomp.NameWithConditions
	if s.DenyInet {
		socks = append(socks, arg("socket", 0, seccomp.Equal, unix.AF_INET), arg("socket", 0, seccomp.Equal, unix.AF_INET6))
	}
	if s.DenyUnix {
		socks = append(socks, arg("socket", 0, seccomp.Equal, unix.AF_UNIX))
	}
	if s.DenyMPTCP {
		socks = append(socks, arg("socket", 2, seccomp.Equal, unix.IPPROTO_MPTCP))
	}
	if len(socks) > 0 {
		groups = append(groups, seccomp.SyscallGroup{NamesWithCondtions: socks, Action: errno(unix.EACCES)})
	}
	return seccomp.LoadFilter(seccomp.Filter{
		NoNewPrivs: true,
		Policy:     seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: groups},
	})
}
