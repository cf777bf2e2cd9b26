package stdio

// How Linux enforces a Sandbox. The child is this executable again, the
// launcher (internal/launch), started in namespaces of the sandbox's
// own; it applies the plan made here to itself and executes the server:
//
//   - Files: a Landlock ruleset at the best ABI the kernel has. It grants
//     the base rights (SandboxBase), the program with its loader and
//     libraries (programFiles), the preset's paths and Read, Write and
//     Exec; everything else is refused (EACCES).
//   - Network: none is a network namespace of the sandbox's own (no
//     interface but a loopback that is down) where the kernel allows one,
//     else a seccomp filter refusing socket(AF_INET, AF_INET6); and
//     Landlock's TCP rules (ABI 4) refuse every connect and bind. Ports
//     are Landlock's connect rules, in the host's network, with a filter
//     refusing multipath TCP, which those rules do not cover. Unix
//     sockets: Landlock (ABI 9) refuses connecting to one made outside the
//     sandbox, and abstract ones (ABI 6); below ABI 9 the filter refuses
//     socket(AF_UNIX) instead.
//   - Namespaces: a user namespace (the bridge's uid and gid mapped to
//     themselves; for root, every id to itself), mount, IPC and UTS, and
//     network for none, where the kernel allows them. Under
//     ContainPIDNamespace the init's PID namespace is the sandbox's, and
//     the launcher mounts a /proc of it, showing only the sandbox's
//     processes.
//   - Limits: rlimits of the launcher, inherited by everything it starts.
//     In a user namespace of its own RLIMIT_NPROC counts the sandbox's
//     processes alone (the kernel counts per user per namespace) and
//     binds root too; without one it would count every process of the
//     bridge's user and bind no root, so it is reported as not enforced.
//     Under ContainCgroup with the memory and pids controllers delegated
//     to the bridge's group, memory.max and pids.max bound the tree too.
//   - The launcher drops every capability, sets no_new_privs, and installs
//     a seccomp filter refusing what changes the machine (modules, mounts,
//     the clock, reboot) and new user namespaces.
//   - The pin: a sealed memfd copy, hashed as it is made, executed with
//     execveat.

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/mcp-bridge/mcp-bridge/stdio/internal/launch"
)

// Landlock rights as the sandbox grants them.
const (
	llRead  = ll.AccessFSReadFile | ll.AccessFSReadDir
	llExec  = llRead | ll.AccessFSExecute
	llWrite = llRead | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile |
		ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeSym | ll.AccessFSRefer
	// llFilesABI is the ABI from which Landlock restricts every write to
	// a file (ABI 3 adds truncation).
	llFilesABI = 3
)

// landlockABIs are go-landlock's configurations by ABI: what each
// handles.
var landlockABIs = []landlock.Config{{}, landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5,
	landlock.V6, landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11}

// SandboxBase are the files every sandboxed process may use besides its
// program, and what it may do with them: what any process needs and
// nothing more (its own /proc/self is granted by the launcher, which
// knows it).
var SandboxBase = []struct{ Path, Rights string }{
	{"/dev/null", "read, write"},
	{"/dev/zero", "read"},
	{"/dev/urandom", "read"},
	{"/dev/random", "read"},
	{"/etc/ld.so.cache", "read"},
}

// baseRules are the files every sandboxed process may use besides its
// program, and how: what any process needs and nothing more (its own
// /proc/self is granted by the launcher, which knows it).
func baseRules() []launch.PathRule {
	return []launch.PathRule{
		{Path: "/dev/null", Access: ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate, Optional: true},
		{Path: "/dev/zero", Access: ll.AccessFSReadFile, Optional: true},
		{Path: "/dev/urandom", Access: ll.AccessFSReadFile, Optional: true},
		{Path: "/dev/random", Access: ll.AccessFSReadFile, Optional: true},
		{Path: "/etc/ld.so.cache", Access: ll.AccessFSReadFile, Optional: true},
	}
}

// presetFiles are what the presets read besides their interpreter's
// installation: the system's programs and libraries, and the few files
// of /etc that name resolution, TLS, users and time zones read.
var presetFiles = []string{
	"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32",
	"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/hosts", "/etc/resolv.conf",
	"/etc/host.conf", "/etc/gai.conf", "/etc/localtime", "/etc/ssl", "/etc/ca-certificates",
	"/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/mime.types",
}

// sandboxSupport is what this kernel offers a sandbox, probed once.
type sandboxSupport struct {
	landlock   int // ABI; 0 without Landlock
	landlockNo string
	userns     bool   // a user namespace of the sandbox's own
	usernsNo   string // why not, with the sysctl that decides it
	ns         bool   // mount, IPC, UTS and network namespaces (with or without a user namespace)
	seccomp    bool
	seccompNo  string
	root       bool
}

var probeSandbox = sync.OnceValue(func() sandboxSupport {
	s := sandboxSupport{root: os.Geteuid() == 0}
	if abi, err := ll.LandlockGetABIVersion(); err != nil || abi <= 0 {
		s.landlockNo = "the kernel has no Landlock (or it is not enabled at boot: lsm=landlock)"
	} else {
		s.landlock = abi
	}
	s.seccomp = seccomp.Supported()
	if !s.seccomp {
		s.seccompNo = "the kernel has no seccomp filter"
	}
	err := runProbe(nsAttr(true, unix.CLONE_NEWNS|unix.CLONE_NEWIPC|unix.CLONE_NEWUTS|unix.CLONE_NEWNET))
	switch {
	case err == nil:
		s.userns, s.ns = true, true
	default:
		s.usernsNo = usernsRefusal(err)
		// Root makes namespaces without a user namespace.
		s.ns = runProbe(nsAttr(false, unix.CLONE_NEWNS|unix.CLONE_NEWIPC|unix.CLONE_NEWUTS|unix.CLONE_NEWNET)) == nil
	}
	return s
})

// ProbeSandbox says what this system offers a sandbox; the probes behind
// it run once per process.
func ProbeSandbox() SandboxSystem {
	sup := probeSandbox()
	return SandboxSystem{Landlock: sup.landlock, Userns: sup.userns, UsernsNote: sup.usernsNo,
		Namespaces: sup.ns, Seccomp: sup.seccomp, Cgroup: cgroupControllers()}
}

// usernsRefusal says why a user namespace was refused, naming the sysctl
// that decides it where one does.
func usernsRefusal(err error) string {
	for _, c := range []struct{ file, want, name string }{
		{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1", "kernel.apparmor_restrict_unprivileged_userns=1"},
		{"/proc/sys/kernel/unprivileged_userns_clone", "0", "kernel.unprivileged_userns_clone=0"},
		{"/proc/sys/user/max_user_namespaces", "0", "user.max_user_namespaces=0"},
	} {
		if b, e := os.ReadFile(c.file); e == nil && strings.TrimSpace(string(b)) == c.want {
			return fmt.Sprintf("user namespaces are refused (%v): the sysctl %s decides it", err, c.name)
		}
	}
	return fmt.Sprintf("user namespaces are refused (%v)", err)
}

// nsAttr is the SysProcAttr of a process in the sandbox's namespaces
// (flags), in a user namespace of its own when userns.
func nsAttr(userns bool, flags uintptr) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Cloneflags: flags, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if userns {
		addUserns(a)
	}
	return a
}

// addUserns makes a's process the first of a user namespace: root's every
// id mapped to itself, another user's uid and gid to themselves. It
// starts with every capability there; a non-root launcher keeps
// CAP_SYS_ADMIN across its exec (ambient) to mount its /proc, then drops
// it with the rest.
func addUserns(a *syscall.SysProcAttr) {
	a.Cloneflags |= unix.CLONE_NEWUSER
	if os.Geteuid() == 0 {
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: math.MaxInt32}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: math.MaxInt32}}
		a.GidMappingsEnableSetgroups = true
		return
	}
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getegid(), HostID: os.Getegid(), Size: 1}}
	a.GidMappingsEnableSetgroups = false
	a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
}

// sandboxPlan is a Sandbox made concrete for one program on this system.
type sandboxPlan struct {
	launch launch.Plan // MountProc is decided per child (spawn)
	env    []string    // what the preset adds to the child's environment
	userns bool        // the sandbox's own user namespace
	flags  uintptr     // the other namespaces
	limits Limits
	report *SandboxReport
}

// plan makes the sandbox concrete for the program at path (LookPath's).
func (s *Sandbox) plan(path, dir string, env []string) (*sandboxPlan, error) {
	sup := probeSandbox()
	net, _ := parseNet(s.Net) // Validate checked it
	if len(s.Net) == 0 && (s.Preset == PresetNode || s.Preset == PresetPython) {
		// The package registries, over HTTPS: npx -y and uvx download.
		net = netPolicy{ports: []uint16{443}}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if !filepath.IsAbs(path) && dir != "" {
		abs = filepath.Join(dir, path)
	}
	p := &sandboxPlan{launch: launch.Plan{Path: abs, PinSHA256: s.PinSHA256}, limits: s.Limits}
	r := &SandboxReport{Enforce: cmp.Or(s.Enforce, EnforceRequired), Preset: s.Preset, Program: abs,
		Read: s.Read, Write: s.Write, Exec: s.Exec, Net: netNames(net, s.Net), Limits: s.Limits.String(),
		Pinned: s.PinSHA256 != "", Landlock: sup.landlock, Seccomp: sup.seccomp && s.Confines()}
	p.report = r
	if s.PinSHA256 != "" {
		r.Rights = append(r.Rights, Right{Right: "the program matches its pin", Enforced: true, By: "a sealed in-memory copy, hashed as it is made, is what runs (execveat)"})
	}
	if !s.Confines() {
		return p, nil
	}

	if s.Preset == PresetNode || s.Preset == PresetPython {
		if p.env, err = presetEnv(s.Preset, s.StateDir); err != nil {
			return nil, err
		}
	}
	env = Environ(env, nil, p.env)
	rules, err := s.pathRules(abs, env)
	if err != nil {
		return nil, err
	}
	p.planNamespaces(sup, net, r)
	p.planLandlock(s, sup, net, rules, r)
	p.planSeccomp(sup, net, r)
	p.planLimits(sup, r)
	return p, nil
}

func netNames(n netPolicy, given []string) []string {
	if len(given) > 0 {
		return given
	}
	if n.none() {
		return []string{NetNone}
	}
	var out []string
	for _, p := range n.ports {
		out = append(out, strconv.Itoa(int(p)))
	}
	return out
}

// pathRules are the Landlock rules of the files: the base, the program's
// own, the preset's, then the profile's.
func (s *Sandbox) pathRules(program string, env []string) ([]launch.PathRule, error) {
	rules := baseRules()
	for _, f := range programFiles(program, env) {
		rules = append(rules, launch.PathRule{Path: f, Access: llExec})
	}
	switch s.Preset {
	case PresetNode, PresetPython:
		for _, f := range presetFiles {
			rules = append(rules, launch.PathRule{Path: f, Access: llExec, Optional: true})
		}
		for _, name := range presetPrograms[s.Preset] {
			if found, err := LookPath(name, "", env); err == nil {
				if prefix := installPrefix(found); prefix != "" {
					rules = append(rules, launch.PathRule{Path: prefix, Access: llExec})
				}
			}
		}
		for _, d := range presetDirs(s.StateDir) {
			rules = append(rules, launch.PathRule{Path: d, Access: llWrite | ll.AccessFSExecute})
		}
	}
	var missing []string
	for _, list := range []struct {
		paths  []string
		access uint64
	}{{s.Read, llRead}, {s.Exec, llExec}, {s.Write, llWrite}} {
		for _, path := range list.paths {
			if _, err := os.Stat(path); err != nil {
				missing = append(missing, path)
				continue
			}
			rules = append(rules, launch.PathRule{Path: path, Access: list.access})
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("the sandbox names paths that do not exist: %s", strings.Join(missing, ", "))
	}
	return rules, nil
}

// presetPrograms are the launchers whose installation a preset reads and
// executes.
var presetPrograms = map[string][]string{
	PresetNode:   {"node", "npx", "npm"},
	PresetPython: {"python3", "python", "uv", "uvx", "pip"},
}

// installPrefix is the installation a program belongs to: the directory
// above the bin directory its file (resolved) is in, "" for one not in a
// bin directory.
func installPrefix(program string) string {
	real, err := filepath.EvalSymlinks(program)
	if err != nil {
		return ""
	}
	bin := filepath.Dir(real)
	if filepath.Base(bin) != "bin" {
		return bin
	}
	return filepath.Dir(bin)
}

// presetDirs are a preset's directories under the state directory.
func presetDirs(state string) []string {
	return []string{filepath.Join(state, "home"), filepath.Join(state, "cache"), filepath.Join(state, "tmp")}
}

// presetEnv makes a preset's directories and says where they are: the
// server's own HOME, its package manager's cache and an executable
// TMPDIR, so that npx and uvx work without reaching the bridge's.
func presetEnv(preset, state string) ([]string, error) {
	dirs := presetDirs(state)
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("sandbox state directory: %w", err)
		}
	}
	home, cache, tmp := dirs[0], dirs[1], dirs[2]
	env := []string{"HOME=" + home, "TMPDIR=" + tmp, "XDG_CACHE_HOME=" + cache,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_DATA_HOME=" + filepath.Join(home, ".local", "share")}
	switch preset {
	case PresetNode:
		env = append(env, "npm_config_cache="+filepath.Join(cache, "npm"), "npm_config_update_notifier=false", "NO_UPDATE_NOTIFIER=1")
	case PresetPython:
		env = append(env, "UV_CACHE_DIR="+filepath.Join(cache, "uv"), "UV_TOOL_DIR="+filepath.Join(home, ".local", "share", "uv", "tools"),
			"UV_PYTHON_INSTALL_DIR="+filepath.Join(home, ".local", "share", "uv", "python"), "PIP_CACHE_DIR="+filepath.Join(cache, "pip"))
	}
	return env, nil
}

// planNamespaces decides the sandbox's namespaces.
func (p *sandboxPlan) planNamespaces(sup sandboxSupport, net netPolicy, r *SandboxReport) {
	if !sup.ns {
		r.Notes = append(r.Notes, "no namespaces of its own: "+sup.usernsNo)
		return
	}
	p.userns = sup.userns
	p.flags = unix.CLONE_NEWNS | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS
	if p.userns {
		r.Namespaces = append(r.Namespaces, "user")
	} else {
		r.Notes = append(r.Notes, "no user namespace of its own: "+sup.usernsNo)
	}
	r.Namespaces = append(r.Namespaces, "mount", "ipc", "uts")
	if net.none() {
		p.flags |= unix.CLONE_NEWNET
		r.Namespaces = append(r.Namespaces, "network")
	}
	if c, _ := ContainmentInUse(); c == ContainPIDNamespace {
		r.Namespaces = append(r.Namespaces, "pid")
		r.Notes = append(r.Notes, "a /proc of its own PID namespace: it sees only its own processes")
	} else {
		r.Notes = append(r.Notes, "no PID namespace of its own under --containment "+string(c)+" (pid-namespace gives one): it reads only its own /proc/self")
	}
}

// planLandlock decides the Landlock ruleset and reports the rights it
// enforces.
func (p *sandboxPlan) planLandlock(s *Sandbox, sup sandboxSupport, net netPolicy, rules []launch.PathRule, r *SandboxReport) {
	abi := min(sup.landlock, len(landlockABIs)-1)
	cfg := landlockABIs[abi]
	l := &launch.Landlock{HandledFS: uint64(cfg.HandledAccessFS), Scoped: uint64(cfg.Scoped), Paths: rules, Proc: ll.AccessFSReadFile | ll.AccessFSReadDir}
	if net.unix {
		l.HandledFS &^= ll.AccessFSResolveUnix
		l.Scoped &^= ll.ScopeAbstractUnixSocket
	}
	if abi >= 4 {
		l.HandledNet = ll.AccessNetBindTCP | ll.AccessNetConnectTCP
		if net.none() && abi >= 10 {
			l.HandledNet |= ll.AccessNetBindUDP | ll.AccessNetConnectSendUDP
		}
		l.ConnectTCP = net.ports
	}
	if abi > 0 {
		p.launch.Landlock = l
	}
	by := fmt.Sprintf("Landlock ABI %d", sup.landlock)
	files := Right{Right: "files: only the program, the base files and the paths given"}
	switch {
	case abi >= llFilesABI:
		files.Enforced, files.By = true, by
	case abi > 0:
		files.Why = fmt.Sprintf("Landlock ABI %d cannot refuse truncating a readable file (ABI %d can)", abi, llFilesABI)
	default:
		files.Why = sup.landlockNo
	}
	r.Rights = append(r.Rights, files)
	for _, ro := range append(slices.Clone(s.Read), s.Exec...) {
		for _, w := range s.Write {
			if ro != w && strings.HasPrefix(ro, w+string(filepath.Separator)) {
				r.Rights = append(r.Rights, Right{Right: "read-only " + ro + " inside writable " + w,
					Why: "Landlock grants rights by adding them: a path inside a writable tree stays writable"})
			}
		}
	}
	if s.LandlockABI > 0 {
		asked := Right{Right: fmt.Sprintf("Landlock ABI %d (asked)", s.LandlockABI)}
		if sup.landlock >= s.LandlockABI {
			asked.Enforced, asked.By = true, by
		} else {
			asked.Why = fmt.Sprintf("this kernel has Landlock ABI %d", sup.landlock)
		}
		r.Rights = append(r.Rights, asked)
	}
	if abi >= 6 {
		r.Notes = append(r.Notes, "it cannot signal processes outside its sandbox (Landlock scope)")
	}
}

// planSeccomp decides the seccomp filter and reports the network rights,
// which Landlock, the network namespace and the filter enforce together.
func (p *sandboxPlan) planSeccomp(sup sandboxSupport, net netPolicy, r *SandboxReport) {
	abi := sup.landlock
	netns := p.flags&unix.CLONE_NEWNET != 0
	sc := &launch.Seccomp{}
	if sup.seccomp {
		p.launch.Seccomp = sc
	}
	if abi >= 4 && sup.seccomp {
		// Landlock's TCP rules do not cover multipath TCP, which Go's
		// net.Listen uses by default.
		sc.DenyMPTCP = true
	}
	if net.none() {
		tcp, udp := net4(netns, abi >= 4 && sup.seccomp, "Landlock ABI 4, and seccomp refuses multipath TCP"), net4(netns, abi >= 10, "Landlock ABI 10")
		if !netns && sup.seccomp {
			sc.DenyInet = true
			udp = []string{"seccomp refuses socket(AF_INET, AF_INET6)"}
			tcp = append(tcp, udp...)
		}
		r.Rights = append(r.Rights, both("network: no TCP connection or listening socket", tcp,
			"neither a network namespace ("+sup.usernsNo+") nor Landlock ABI 4"))
		r.Rights = append(r.Rights, both("network: no UDP", udp, "neither a network namespace nor seccomp"))
	} else {
		ports := Right{Right: "network: TCP connections to port " + joinPorts(net.ports) + " only, no listening socket"}
		switch {
		case abi >= 4 && sup.seccomp:
			ports.Enforced, ports.By = true, fmt.Sprintf("Landlock ABI %d, and seccomp refuses multipath TCP", abi)
		case abi >= 4:
			ports.Why = "multipath TCP escapes Landlock's TCP rules, and there is no seccomp to refuse it"
		default:
			ports.Why = fmt.Sprintf("Landlock ABI 4 filters TCP by port; this kernel has %d", abi)
		}
		r.Rights = append(r.Rights, ports)
		for _, h := range net.hosts {
			r.Rights = append(r.Rights, Right{Right: "network: only the host of " + h,
				Why: "Landlock filters TCP by port, not by address: every host is reachable on that port"})
		}
		r.Notes = append(r.Notes, "UDP is not restricted when TCP ports are allowed (name resolution needs it)")
	}
	if net.unix {
		return
	}
	unixRight := Right{Right: "network: no unix socket made outside the sandbox (e.g. docker.sock)"}
	switch {
	case abi >= 9:
		unixRight.Enforced, unixRight.By = true, fmt.Sprintf("Landlock ABI %d", abi)
	case sup.seccomp:
		sc.DenyUnix = true
		unixRight.Enforced, unixRight.By = true, fmt.Sprintf("seccomp refuses socket(AF_UNIX) (Landlock ABI 9 would refuse only outside ones; this kernel has %d); --sandbox-net unix allows them", abi)
	default:
		unixRight.Why = "neither Landlock ABI 9 nor seccomp"
	}
	r.Rights = append(r.Rights, unixRight)
}

// net4 names what enforces a network rule: the namespace, Landlock.
func net4(netns, landlock bool, abi string) []string {
	var by []string
	if netns {
		by = append(by, "a network namespace of its own")
	}
	if landlock {
		by = append(by, abi)
	}
	return by
}

// both is a right enforced by what by names, or not with why.
func both(right string, by []string, why string) Right {
	if len(by) == 0 {
		return Right{Right: right, Why: why}
	}
	return Right{Right: right, Enforced: true, By: strings.Join(by, ", ")}
}

func joinPorts(ports []uint16) string {
	var s []string
	for _, p := range ports {
		s = append(s, strconv.Itoa(int(p)))
	}
	return strings.Join(s, ", ")
}

// planLimits turns the limits into rlimits and reports them.
func (p *sandboxPlan) planLimits(sup sandboxSupport, r *SandboxReport) {
	l := p.limits
	add := func(res int, v uint64, max uint64) {
		p.launch.Rlimits = append(p.launch.Rlimits, launch.Rlimit{Resource: res, Cur: v, Max: max})
	}
	cg := ""
	if c, _ := ContainmentInUse(); c == ContainCgroup {
		if ctl := cgroupControllers(); ctl != "" {
			cg = ctl
		}
	}
	if l.Memory > 0 {
		add(unix.RLIMIT_DATA, uint64(l.Memory), uint64(l.Memory))
		by := "RLIMIT_DATA, per process"
		if strings.Contains(cg, "memory") {
			by += "; memory.max of its cgroup, for the whole tree"
		}
		r.Rights = append(r.Rights, Right{Right: "memory: " + formatSize(l.Memory), Enforced: true, By: by})
	}
	if l.Procs > 0 {
		add(unix.RLIMIT_NPROC, uint64(l.Procs), uint64(l.Procs))
		procs := Right{Right: fmt.Sprintf("processes: %d", l.Procs)}
		switch {
		case strings.Contains(cg, "pids"):
			procs.Enforced, procs.By = true, "pids.max of its cgroup"
		case sup.root:
			// copy_process exempts the root user (INIT_USER), whatever
			// its namespace.
			procs.Why = "RLIMIT_NPROC never binds a process of uid 0, a bridge run as root; a delegated cgroup (pids.max, --containment cgroup) would"
		case p.userns:
			procs.Enforced, procs.By = true, "RLIMIT_NPROC in its own user namespace (threads count)"
		default:
			procs.Why = "without a user namespace of its own, RLIMIT_NPROC counts every process of the bridge's user"
		}
		r.Rights = append(r.Rights, procs)
	}
	if l.Files > 0 {
		add(unix.RLIMIT_NOFILE, uint64(l.Files), uint64(l.Files))
		r.Rights = append(r.Rights, Right{Right: fmt.Sprintf("open files: %d", l.Files), Enforced: true, By: "RLIMIT_NOFILE, per process"})
	}
	if l.CPU > 0 {
		secs := uint64(l.CPU.Seconds())
		// SIGXCPU at the soft limit says why it ended; SIGKILL a second
		// later for one that ignores it.
		add(unix.RLIMIT_CPU, secs, secs+1)
		r.Rights = append(r.Rights, Right{Right: "CPU time: " + l.CPU.String(), Enforced: true, By: "RLIMIT_CPU, per process"})
	}
}

// cgroupControllers are the controllers among memory and pids that the
// bridge's cgroup hands to the groups of its children ("" for none):
// enabled in its cgroup.subtree_control, which only a delegated group
// can have.
func cgroupControllers() string {
	cg, err := probeCgroup()
	if err != nil {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(cg.dir, "cgroup.subtree_control"))
	if err != nil {
		return ""
	}
	var out []string
	for _, c := range strings.Fields(string(b)) {
		if c == "memory" || c == "pids" {
			out = append(out, c)
		}
	}
	return strings.Join(out, " ")
}

// writeCgroupLimits writes the limits a child's group can hold.
func writeCgroupLimits(dir string, l Limits) {
	ctl := cgroupControllers()
	if l.Memory > 0 && strings.Contains(ctl, "memory") {
		_ = os.WriteFile(filepath.Join(dir, "memory.max"), []byte(strconv.FormatInt(l.Memory, 10)), 0)
		_ = os.WriteFile(filepath.Join(dir, "memory.swap.max"), []byte("0"), 0)
	}
	if l.Procs > 0 && strings.Contains(ctl, "pids") {
		_ = os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(l.Procs)), 0)
	}
}

// sandboxSpawn is one sandboxed child being started: its plan, and the
// launcher's report pipe.
type sandboxSpawn struct {
	plan     *sandboxPlan
	reportR  *os.File
	reportW  *os.File // the launcher's ReportFD; closed here once it is started
	mountPID bool     // the launcher runs in the init's PID namespace
}

// prepareSandbox turns cmd into the launcher of its sandboxed self: the
// launcher's argv carries the plan, and its environment starts with its
// marker. Nil for a child without a sandbox.
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
		return nil, &StartError{Kind: StartSandbox, Detail: notEnforcedError(bad).Error(), Program: p.launch.Path}
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	return &sandboxSpawn{plan: p, reportR: r, reportW: w}, nil
}

// command rewrites cmd to run the launcher, once the containment is known
// (mountProc: the launcher will be in a PID namespace of the init's).
func (sp *sandboxSpawn) command(cmd *exec.Cmd, mountProc bool) error {
	lp := sp.plan.launch
	lp.MountProc = mountProc && sp.plan.launch.Landlock != nil
	b, err := json.Marshal(lp)
	if err != nil {
		return err
	}
	cmd.Env = append([]string{launch.Env}, Environ(cmd.Env, nil, sp.plan.env)...)
	cmd.Args = append([]string{launch.Arg0, string(b)}, cmd.Args...)
	cmd.Path = "/proc/self/exe"
	return nil
}

// attr adds the sandbox's namespaces to the attributes a containment
// made (hasUserns: they make a user namespace already, mapped alike).
func (sp *sandboxSpawn) attr(a *syscall.SysProcAttr, hasUserns bool) {
	if sp == nil {
		return
	}
	a.Cloneflags |= sp.plan.flags
	if sp.plan.userns && !hasUserns {
		addUserns(a)
	} else if hasUserns && sp.plan.launch.Landlock != nil {
		a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
	}
}
