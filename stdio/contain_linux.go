package stdio

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Every child is started from one goroutine locked to its thread for the
// life of the process. The direct child gets Pdeathsig SIGKILL, so it dies
// with the bridge even when the bridge is SIGKILLed; but the kernel sends
// it when the *thread* that forked the child exits, not the process
// (golang/go#27505), and Go ends a thread whenever a goroutine that locked
// it exits. Forking from a thread that never exits makes "parent died"
// mean "the bridge died".
var (
	spawnOnce sync.Once
	spawns    = make(chan spawnRequest)
)

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

// spawn starts cmd on the spawner thread and registers its pid.
func spawn(cmd *exec.Cmd) error {
	spawnOnce.Do(func() { go spawner() })
	req := spawnRequest{cmd, make(chan error, 1)}
	spawns <- req
	return <-req.done
}

// spawner never returns: its thread must live as long as the process (see
// spawns). It only forks; waiting for anything happens elsewhere.
func spawner() {
	runtime.LockOSThread() // never unlocked
	for req := range spawns {
		req.done <- startRegistered(req.cmd)
	}
}

// startTree starts cmd contained by s. With a sandbox (sp), cmd becomes
// its launcher, in the sandbox's namespaces besides the strategy's own:
// under ContainPIDNamespace the init is made in them and the launcher is
// the command it runs (the launcher's report pipe is the init's fd 4,
// which it hands on as the command's fd 3); otherwise the launcher is the
// command.
func startTree(cmd *exec.Cmd, s Containment, sp *sandboxSpawn) (tree, error) {
	switch s {
	case ContainPIDNamespace:
		ns, err := probeNamespace()
		if err != nil {
			return nil, err
		}
		return startNamespaced(cmd, ns, sp)
	case ContainCgroup:
		cg, err := probeCgroup()
		if err != nil {
			return nil, err
		}
		return startCgroup(cmd, cg, sp)
	case ContainProcessGroup:
		return startGroup(cmd, sp)
	case ContainJobObject:
		return nil, errOtherSystem{s, "Windows"}
	}
	return nil, fmt.Errorf("unknown containment %q", s)
}

// probe says whether this system gives strategy c, and how.
func probe(c Containment) (string, error) {
	switch c {
	case ContainPIDNamespace:
		ns, err := probeNamespace()
		return ns.why(), err
	case ContainCgroup:
		cg, err := probeCgroup()
		return cg.why(), err
	case ContainProcessGroup:
		return "a process group per child", nil
	case ContainJobObject:
		return "", errOtherSystem{c, "Windows"}
	}
	return "", fmt.Errorf("unknown containment %q", c)
}

// stopSignals are Stop's steps after closing stdin, one grace period
// apart: the polite request, then the end.
var stopSignals = []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL}

// ---- PID namespace ----

// nsConfig is how a PID namespace is made here: alone where the bridge
// may (root, CAP_SYS_ADMIN), else inside a user namespace that maps the
// bridge's own uid and gid to themselves. Root gets no user namespace: in
// one, root's privileges would not reach files of unmapped users.
type nsConfig struct{ userns bool }

var probeNamespace = sync.OnceValues(func() (nsConfig, error) {
	errAlone := runProbe(nsConfig{}.attr())
	if errAlone == nil {
		return nsConfig{}, nil
	}
	withUser := nsConfig{userns: true}
	errUser := runProbe(withUser.attr())
	if errUser == nil {
		return withUser, nil
	}
	return nsConfig{}, fmt.Errorf("no PID namespace (%v; in a user namespace: %v)", errAlone, errUser)
})

func (c nsConfig) why() string {
	if c.userns {
		return "a PID namespace per child, in a user namespace"
	}
	return "a PID namespace per child"
}

func (c nsConfig) attr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWPID,
		Setpgid:    true, // a terminal's Ctrl-C reaches the bridge only
		Pdeathsig:  syscall.SIGKILL,
	}
	if c.userns {
		a.Cloneflags |= syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getegid(), HostID: os.Getegid(), Size: 1}}
		// An unprivileged process may map its gid only with setgroups
		// denied; its supplementary groups still apply to file access.
		a.GidMappingsEnableSetgroups = false
	}
	return a
}

// initCommand runs this executable as the init of a PID namespace.
func initCommand(args ...string) *exec.Cmd {
	return &exec.Cmd{Path: "/proc/self/exe", Args: append([]string{initArg0}, args...), Env: []string{initEnv}}
}

// runProbe starts an init in probe mode with attr and checks it ran.
func runProbe(attr *syscall.SysProcAttr) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cmd := initCommand("probe")
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = attr
	err = spawn(cmd)
	w.Close()
	if err != nil {
		return err
	}
	kind, _ := readInitReport(bufio.NewReader(r))
	err = cmd.Wait()
	unregister(cmd.Process.Pid)
	if err == nil && kind != 'P' {
		err = errors.New("the init process did not recognise itself")
	}
	return err
}

// nsTree is a command run by an init process in a PID namespace of its own.
type nsTree struct {
	init    *exec.Cmd
	report  *os.File
	br      *bufio.Reader
	cmdPid  int
	initPid int

	mu     sync.Mutex // orders signals against reaping the init (see signal)
	reaped bool
}

func startNamespaced(cmd *exec.Cmd, ns nsConfig, sp *sandboxSpawn) (tree, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	userPath := cmd.Path
	if sp != nil {
		if err := sp.command(cmd, true); err != nil {
			return nil, err
		}
	}
	init := initCommand(append([]string{"run", cmd.Path}, cmd.Args...)...)
	init.Env = append(init.Env, cmd.Env...)
	init.Dir = cmd.Dir
	init.Stdin, init.Stdout, init.Stderr = cmd.Stdin, cmd.Stdout, cmd.Stderr
	init.ExtraFiles = []*os.File{w}
	init.SysProcAttr = ns.attr()
	if sp != nil {
		init.ExtraFiles = append(init.ExtraFiles, sp.reportW)
		sp.attr(init.SysProcAttr, ns.userns)
	}
	err = spawn(init)
	w.Close()
	if err != nil {
		r.Close()
		if pe, ok := errors.AsType[*os.PathError](err); ok && pe.Path == init.Path {
			pe.Path = userPath // the user's command, not this executable
		}
		return nil, err
	}
	t := &nsTree{init: init, report: r, br: bufio.NewReader(r), initPid: init.Process.Pid}
	kind, rest := readInitReport(t.br)
	if kind != 'P' {
		werr := t.wait()
		if kind == 'E' {
			return nil, errors.New(rest)
		}
		return nil, fmt.Errorf("the init process failed: %v", werr)
	}
	t.cmdPid, _ = strconv.Atoi(rest)
	if t.cmdPid == 0 {
		t.cmdPid = t.initPid // /proc could not tell: the init stands for it
	}
	return t, nil
}

func (t *nsTree) pid() int { return t.cmdPid }

// signal signals the init, which is this process's child: until it is
// reaped its pid cannot be reused, so under mu with reaped false it is
// never a stranger. The init forwards SIGTERM, SIGINT and SIGHUP to every
// process of the namespace; SIGKILL ends it, and the kernel then kills
// everything in the namespace.
func (t *nsTree) signal(sig syscall.Signal) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.reaped {
		_ = syscall.Kill(t.initPid, sig)
	}
}

func (t *nsTree) wait() error {
	// The init exits once the command has exited; by the time it is a
	// zombie, the kernel has killed every other process of its namespace.
	waitExitNoReap(t.initPid)
	t.mu.Lock()
	werr := t.init.Wait()
	t.reaped = true
	t.mu.Unlock()
	unregister(t.initPid)
	defer t.report.Close()
	for {
		switch kind, rest := readInitReport(t.br); kind {
		case 'S':
			ws, err := strconv.ParseUint(rest, 10, 32)
			if err != nil {
				return fmt.Errorf("the init process reported %q", rest)
			}
			return exitError(syscall.WaitStatus(ws))
		case 0:
			// No status: the init was killed (SIGKILL from Stop or Kill),
			// and the command with its namespace.
			return waitError(werr)
		}
	}
}

// ---- cgroup v2 ----

// cgroupConfig is where the groups of the children are made: under the
// bridge's own group.
type cgroupConfig struct {
	dir string // the bridge's group's directory
	rel string // the same, as /proc/<pid>/cgroup names it
}

func (c cgroupConfig) why() string { return "a cgroup per child under " + c.dir }

var probeCgroup = sync.OnceValues(func() (cgroupConfig, error) {
	cg, err := ownCgroup()
	if err != nil {
		return cg, fmt.Errorf("no cgroup v2 group: %w", err)
	}
	dir, err := cg.make()
	if err != nil {
		return cg, fmt.Errorf("no cgroup v2 group: %w", err)
	}
	defer os.Remove(dir)
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		return cg, fmt.Errorf("no cgroup.kill (Linux 5.14+): %w", err)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return cg, fmt.Errorf("no cgroup v2 group: %w", err)
	}
	defer unix.Close(fd)
	if err := runProbe(&syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}); err != nil {
		return cg, fmt.Errorf("cannot start a process in a cgroup of %s: %w", cg.dir, err)
	}
	return cg, nil
})

// ownCgroup finds this process's cgroup v2 group: its path from the "0::"
// line of /proc/self/cgroup, under the cgroup2 mount of mountinfo.
func ownCgroup() (cgroupConfig, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return cgroupConfig{}, err
	}
	var rel string
	for line := range strings.Lines(string(b)) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			rel = p
		}
	}
	if rel == "" {
		return cgroupConfig{}, errors.New("not in a cgroup v2 hierarchy")
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return cgroupConfig{}, err
	}
	for line := range strings.Lines(string(mi)) {
		// id parent major:minor root mountpoint options... - fstype source options
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 1 || g[0] != "cgroup2" {
			continue
		}
		root, mount := f[3], f[4]
		sub, ok := strings.CutPrefix(rel, root)
		if !ok {
			continue
		}
		return cgroupConfig{dir: filepath.Join(mount, sub), rel: rel}, nil
	}
	return cgroupConfig{}, errors.New("no cgroup2 mount")
}

var cgroupSeq atomic.Int64

// make creates a new group under the bridge's and returns its directory.
func (c cgroupConfig) make() (string, error) {
	dir := filepath.Join(c.dir, fmt.Sprintf("mcp-bridge-%d-%d", os.Getpid(), cgroupSeq.Add(1)))
	return dir, os.Mkdir(dir, 0o755)
}

// cgroupTree is a command in a cgroup of its own.
type cgroupTree struct {
	cmd *exec.Cmd
	dir string
	rel string // the group as /proc/<pid>/cgroup names it

	mu     sync.Mutex // orders signals against removing the group
	reaped bool
}

func startCgroup(cmd *exec.Cmd, cg cgroupConfig, sp *sandboxSpawn) (tree, error) {
	dir, err := cg.make()
	if err != nil {
		return nil, fmt.Errorf("make a cgroup: %w", err)
	}
	if sp != nil {
		writeCgroupLimits(dir, sp.plan.limits)
		if err := sp.command(cmd, false); err != nil {
			os.Remove(dir)
			return nil, err
		}
		cmd.ExtraFiles = []*os.File{sp.reportW}
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("open a cgroup: %w", err)
	}
	defer unix.Close(fd)
	// CLONE_INTO_CGROUP: the child is in its group from its first
	// instruction, so nothing it starts can escape before it is moved.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, UseCgroupFD: true, CgroupFD: fd}
	sp.attr(cmd.SysProcAttr, false)
	if err := spawn(cmd); err != nil {
		os.Remove(dir)
		return nil, err
	}
	return &cgroupTree{cmd: cmd, dir: dir, rel: filepath.Join(cg.rel, filepath.Base(dir))}, nil
}

func (t *cgroupTree) pid() int { return t.cmd.Process.Pid }

// signal: SIGKILL through cgroup.kill, which reaches every member at once
// and cannot miss one being forked; other signals to each member.
func (t *cgroupTree) signal(sig syscall.Signal) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.reaped {
		return
	}
	if sig == syscall.SIGKILL {
		t.kill()
		return
	}
	b, err := os.ReadFile(filepath.Join(t.dir, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			signalIf(pid, sig, func() bool { return cgroupOf(pid) == t.rel })
		}
	}
}

func (t *cgroupTree) kill() {
	_ = os.WriteFile(filepath.Join(t.dir, "cgroup.kill"), []byte("1"), 0)
}

func (t *cgroupTree) wait() error {
	pid := t.cmd.Process.Pid
	waitExitNoReap(pid)
	t.kill() // whatever the child left in its group
	t.waitEmpty()
	t.mu.Lock()
	werr := t.cmd.Wait()
	t.reaped = true
	// Only a process stuck in the kernel (state D) for over a minute keeps
	// a killed group populated, and then its empty directory is left.
	_ = os.Remove(t.dir)
	t.mu.Unlock()
	unregister(pid)
	return waitError(werr)
}

// waitEmpty waits until no process of the group is left, reading
// cgroup.events when the kernel says it changed. It gives up after a
// minute: only a process stuck in the kernel outlives SIGKILL that long.
func (t *cgroupTree) waitEmpty() {
	f, err := os.Open(filepath.Join(t.dir, "cgroup.events"))
	if err != nil {
		return
	}
	defer f.Close()
	deadline := time.Now().Add(time.Minute)
	buf := make([]byte, 256)
	for time.Now().Before(deadline) {
		n, err := f.ReadAt(buf, 0)
		if err != nil && err != io.EOF {
			return
		}
		if bytes.Contains(buf[:n], []byte("populated 0")) {
			return
		}
		// The file signals a change with POLLPRI; the timeout only guards
		// against a missed one.
		fds := []unix.PollFd{{Fd: int32(f.Fd()), Events: unix.POLLPRI}}
		_, _ = unix.Poll(fds, 100)
	}
}

// cgroupOf is pid's cgroup v2 path, "" if it has none or is gone.
func cgroupOf(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(b)) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			return p
		}
	}
	return ""
}

// ---- process group ----

// startGroup starts cmd leading a process group of its own (groupTree).
// Signals go to the group, to every descendant still linked to the
// command by its parent chain (setsid'd ones included), and to every
// process the command started that was re-parented to the bridge, found
// by its mark (see markedOrphans), with its own descendants.
func startGroup(cmd *exec.Cmd, sp *sandboxSpawn) (tree, error) {
	mark := rand.Text()
	cmd.Env = withMark(cmd.Env, mark)
	if sp != nil {
		if err := sp.command(cmd, false); err != nil {
			return nil, err
		}
		cmd.ExtraFiles = []*os.File{sp.reportW}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	sp.attr(cmd.SysProcAttr, false)
	if err := spawn(cmd); err != nil {
		return nil, err
	}
	return &groupTree{cmd: cmd, kin: markedKin{mark: mark}}, nil
}

// withMark is env with ContainmentMarkEnv set to mark, in place of any
// value it had (the bridge strips its own variables from what the child
// inherits, but another caller of Start may not).
func withMark(env []string, mark string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if envName(kv) != ContainmentMarkEnv {
			out = append(out, kv)
		}
	}
	return append(out, ContainmentMarkEnv+"="+mark)
}

// markedKin finds a group's descendants through /proc, each held by a
// pidfd, and the orphans re-parented to the bridge by the group's mark.
type markedKin struct{ mark string }

func (k markedKin) below(pid int) []kinRef {
	return pidfds(append(descendants(pid), markedOrphans(k.mark)...))
}

// left: the leader's children were re-parented to the bridge as it
// exited, before it could be waited for; they, and what they started, are
// found by the mark.
func (k markedKin) left() []kinRef { return pidfds(markedOrphans(k.mark)) }

func (markedKin) waitExit(cmd *exec.Cmd) (bool, error) {
	waitExitNoReap(cmd.Process.Pid)
	return false, nil
}

func (markedKin) done(pid int) { unregister(pid) }

// pidfd names one process for good.
type pidfd int

func (fd pidfd) signal(sig syscall.Signal) { _ = unix.PidfdSendSignal(int(fd), sig, nil, 0) }
func (fd pidfd) release()                  { unix.Close(int(fd)) }

func pidfds(fds []int) []kinRef {
	out := make([]kinRef, len(fds))
	for i, fd := range fds {
		out[i] = pidfd(fd)
	}
	return out
}

// descendants returns pidfds of every process below pid, found through the
// children lists of /proc. A pidfd names one process for good; each is
// opened, then its parent checked, so a pid reused between the two reads
// is never taken for a descendant.
func descendants(pid int) []int {
	var fds []int
	queue := []int{pid}
	for len(queue) > 0 && len(fds) < 1<<16 {
		parent := queue[0]
		queue = queue[1:]
		for _, c := range childrenOf(parent) {
			fd, err := unix.PidfdOpen(c, 0)
			if err != nil {
				continue
			}
			if _, ppid, err := procStat(c); err != nil || ppid != parent {
				unix.Close(fd)
				continue
			}
			fds = append(fds, fd)
			queue = append(queue, c)
		}
	}
	return fds
}

// markedOrphans returns pidfds of every process re-parented to this one
// that carries ContainmentMarkEnv=mark in its environment, and of every
// descendant of each.
//
// A process whose parent dies before it is re-parented to the nearest
// child subreaper, which is the bridge (EnableSubreaper): a daemon that
// forked twice, or a grandchild whose parent the group kill ended, is no
// longer linked to the child by its parent chain, and outside the child's
// group if it called setsid. What still ties it to the child is the
// environment it inherited, which /proc/PID/environ shows to a process of
// the same user: the mark, random per child, names whose it is. The
// bridge's own children (the registry) are no orphans, and are skipped.
//
// What this cannot find escapes until ReapOrphans at shutdown: a process
// started with an environment of its own, without the mark (env -i, or a
// daemon that rebuilds its environment and execs itself again), one whose
// environment this process may not read (it changed its user), one whose
// parent is still alive but was itself found by nothing, and anything
// forked between the walk and the signal. Without a subreaper (a test
// binary) orphans go to PID 1 and none is found.
func markedOrphans(mark string) []int {
	self := os.Getpid()
	children := childrenOf(self)
	want := []byte("\x00" + ContainmentMarkEnv + "=" + mark + "\x00")
	var fds []int
	for _, pid := range children {
		regMu.Lock()
		own := known[pid]
		regMu.Unlock()
		if own {
			continue
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue
		}
		// Pinned by the pidfd: still ours, and carrying the mark, it is
		// the process meant and not one that reuses a dead one's pid.
		env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		if _, ppid, serr := procStat(pid); serr != nil || ppid != self || err != nil ||
			!bytes.Contains(append([]byte{0}, env...), want) {
			unix.Close(fd)
			continue
		}
		fds = append(fds, fd)
		fds = append(fds, descendants(pid)...)
	}
	return fds
}

// signalIf sends sig to pid if check, made after pid is pinned by a pidfd,
// says it is still the process meant.
func signalIf(pid int, sig syscall.Signal, check func() bool) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	if check() {
		_ = unix.PidfdSendSignal(fd, sig, nil, 0)
	}
}

// childrenOf lists the children of pid from the children files of its
// threads (a child belongs to the thread that forked it).
func childrenOf(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// procStat is the state letter and parent pid of pid.
func procStat(pid int) (state string, ppid int, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, err
	}
	// The command name may hold spaces and parens: fields start after the
	// last ')'.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 {
		return "", 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	ppid, err = strconv.Atoi(f[1])
	return f[0], ppid, err
}
