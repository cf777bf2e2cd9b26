package stdio

import (
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Sandbox is what a child, and everything it starts, may touch: the files
// it may read, write and execute, the network it may reach, the resources
// it may use, and the binary it must be. Everything else is denied. Each
// system enforces what it can of it (sandbox_linux.go says how on Linux;
// elsewhere, limits and the pin only); Enforce says what happens to a
// right the system cannot enforce. A nil *Sandbox in Options is no
// sandbox at all: the child can do whatever the bridge's user can.
//
// The first child started with a sandbox plans its rules once (finding
// its program's loader and libraries), and every later child of the same
// program and profile reuses the plan.
type Sandbox struct {
	// Preset adds what a kind of server needs: PresetNode (npx), PresetPython
	// (uvx), or PresetNone for nothing beyond the base rights. Empty: no
	// preset, and the sandbox confines the child only if some other field
	// asks it to (a path, Net, Limits).
	Preset string
	// Read, Write and Exec are absolute paths: files, or directories and
	// everything below them. Write includes reading; Exec includes
	// reading. Every sandbox also gets what any process needs: /dev/null,
	// /dev/zero, /dev/urandom, /dev/random, the loader's cache and its own
	// /proc/self.
	// Landlock grants by adding: a path in Read inside one in Write stays
	// writable (a right reported as not enforced).
	Read, Write, Exec []string
	// Net is what the child may connect to: NetNone (the default, also
	// when empty), TCP ports ("443", or "HOST:PORT", of which only the
	// port can be enforced), and NetUnix to allow unix sockets.
	Net []string
	// Limits on memory, processes, open files and CPU time.
	Limits Limits
	// Enforce: EnforceRequired (the default) refuses to start a child
	// when a right it asks for cannot be enforced here; EnforceBestEffort
	// starts it and logs each right that is not.
	Enforce string
	// PinSHA256 is the hex SHA-256 the program (the file argv[0] names, as
	// LookPath finds it) must have; a child whose program differs is not
	// started (StartError, StartPin). A pin alone confines nothing.
	PinSHA256 string
	// StateDir holds what a preset gives the server of its own (HOME,
	// its package manager's cache, an executable TMPDIR), created on first
	// use. Required with a preset.
	StateDir string
	// LandlockABI is the Landlock ABI the profile asks for at least; 0:
	// what its rights need. One above the kernel's is a right not enforced.
	LandlockABI int
	// OnRefuse, if set, is called when a child is refused because of its
	// pin or because its sandbox could not be applied, with the error
	// (both hashes in it): for the audit log.
	OnRefuse func(*StartError) `json:"-"`
}

// Presets (Sandbox.Preset) and the special values of Sandbox.Net.
const (
	PresetNone   = "none"
	PresetNode   = "node"
	PresetPython = "python"

	NetNone = "none"
	NetUnix = "unix"
)

// Enforcement (Sandbox.Enforce).
const (
	EnforceRequired   = "required"
	EnforceBestEffort = "best-effort"
)

// Presets lists the values Sandbox.Preset takes.
var Presets = []string{PresetNode, PresetPython, PresetNone}

// Confines says whether s confines the child at all, rather than only
// checking its pin.
func (s *Sandbox) Confines() bool {
	return s != nil && (s.Preset != "" || len(s.Read)+len(s.Write)+len(s.Exec)+len(s.Net) > 0 || s.Limits != Limits{})
}

// required says whether a right not enforced refuses the child.
func (s *Sandbox) required() bool { return s.Enforce != EnforceBestEffort }

// Validate checks what can be checked without the system: the values of
// each field, never whether a path exists.
func (s *Sandbox) Validate() error {
	var errs []error
	switch s.Preset {
	case "", PresetNone, PresetNode, PresetPython:
	default:
		errs = append(errs, fmt.Errorf("unknown preset %q: want %s", s.Preset, strings.Join(Presets, ", ")))
	}
	if (s.Preset == PresetNode || s.Preset == PresetPython) && s.StateDir == "" {
		errs = append(errs, errors.New("the preset needs a state directory"))
	}
	for _, list := range [][]string{s.Read, s.Write, s.Exec} {
		for _, p := range list {
			if !filepath.IsAbs(p) {
				errs = append(errs, fmt.Errorf("path %q is not absolute", p))
			}
		}
	}
	if _, err := parseNet(s.Net); err != nil {
		errs = append(errs, err)
	}
	switch s.Enforce {
	case "", EnforceRequired, EnforceBestEffort:
	default:
		errs = append(errs, fmt.Errorf("unknown enforcement %q: want %s or %s", s.Enforce, EnforceRequired, EnforceBestEffort))
	}
	if s.PinSHA256 != "" {
		if b, err := hex.DecodeString(s.PinSHA256); err != nil || len(b) != 32 || s.PinSHA256 != strings.ToLower(s.PinSHA256) {
			errs = append(errs, errors.New("the pin is not a SHA-256 in lowercase hex (64 characters)"))
		}
	}
	return errors.Join(errs...)
}

// Limits are a child's resource limits; zero is no limit. Each applies
// as an rlimit of every process of the sandbox (so Memory and CPU are per
// process, and Procs counts threads, as RLIMIT_NPROC does), and, where
// the bridge has a cgroup per child with the controllers delegated to
// it, Memory and Procs also bound the whole tree (memory.max, pids.max).
type Limits struct {
	Memory int64         // bytes of private writable memory (RLIMIT_DATA)
	Procs  int           // processes and threads (RLIMIT_NPROC)
	Files  int           // open files (RLIMIT_NOFILE)
	CPU    time.Duration // CPU time (RLIMIT_CPU): SIGXCPU when it is used up
}

// ParseLimits reads "mem=512M,procs=64,files=256,cpu=60s" (any of them,
// in any order). Sizes take K, M, G (powers of 1024); CPU time a Go
// duration of whole seconds.
func ParseLimits(s string) (Limits, error) {
	var l Limits
	if strings.TrimSpace(s) == "" {
		return l, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || v == "" {
			return Limits{}, fmt.Errorf("limit %q: want KEY=VALUE (mem, procs, files, cpu)", kv)
		}
		var err error
		switch k {
		case "mem":
			l.Memory, err = parseSize(v)
		case "procs":
			l.Procs, err = parseCount(v)
		case "files":
			l.Files, err = parseCount(v)
		case "cpu":
			l.CPU, err = time.ParseDuration(v)
			if err == nil && (l.CPU < time.Second || l.CPU%time.Second != 0) {
				err = errors.New("want whole seconds, at least 1s")
			}
		default:
			return Limits{}, fmt.Errorf("unknown limit %q: want mem, procs, files or cpu", k)
		}
		if err != nil {
			return Limits{}, fmt.Errorf("limit %s: %v", k, err)
		}
	}
	return l, nil
}

func parseSize(v string) (int64, error) {
	mult := int64(1)
	switch v[len(v)-1] {
	case 'K', 'k':
		mult = 1 << 10
	case 'M', 'm':
		mult = 1 << 20
	case 'G', 'g':
		mult = 1 << 30
	}
	if mult > 1 {
		v = v[:len(v)-1]
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || n > (1<<50)/mult {
		return 0, errors.New("want a size like 512M")
	}
	return n * mult, nil
}

func parseCount(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, errors.New("want a whole number above 0")
	}
	return n, nil
}

// String is the limits as ParseLimits reads them.
func (l Limits) String() string {
	var parts []string
	if l.Memory > 0 {
		parts = append(parts, "mem="+formatSize(l.Memory))
	}
	if l.Procs > 0 {
		parts = append(parts, "procs="+strconv.Itoa(l.Procs))
	}
	if l.Files > 0 {
		parts = append(parts, "files="+strconv.Itoa(l.Files))
	}
	if l.CPU > 0 {
		parts = append(parts, "cpu="+l.CPU.String())
	}
	return strings.Join(parts, ",")
}

func formatSize(n int64) string {
	for _, u := range []struct {
		s string
		m int64
	}{{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n%u.m == 0 {
			return strconv.FormatInt(n/u.m, 10) + u.s
		}
	}
	return strconv.FormatInt(n, 10)
}

// netPolicy is Sandbox.Net read.
type netPolicy struct {
	ports []uint16 // TCP connect allowed to these
	hosts []string // entries that named a host (HOST:PORT): not enforceable
	unix  bool     // unix sockets allowed
}

// none: no TCP port at all.
func (n netPolicy) none() bool { return len(n.ports) == 0 }

func parseNet(list []string) (netPolicy, error) {
	var n netPolicy
	none := false
	for _, e := range list {
		switch e {
		case NetNone:
			none = true
			continue
		case NetUnix:
			n.unix = true
			continue
		}
		host, port, ok := strings.Cut(e, ":")
		if !ok {
			host, port = "", e
		} else if i := strings.LastIndexByte(e, ':'); i > 0 {
			host, port = e[:i], e[i+1:] // [::1]:443
		}
		p, err := strconv.ParseUint(port, 10, 16)
		if err != nil || p == 0 {
			return netPolicy{}, fmt.Errorf("network %q: want none, unix, a TCP port (443) or HOST:PORT", e)
		}
		if !slices.Contains(n.ports, uint16(p)) {
			n.ports = append(n.ports, uint16(p))
		}
		if host != "" && host != "*" {
			n.hosts = append(n.hosts, e)
		}
	}
	if none && (len(n.ports) > 0 || n.unix) {
		return netPolicy{}, errors.New("network none with ports or unix: give one or the other")
	}
	return n, nil
}

// SandboxReport is a sandbox as this system enforces it: what the web
// page and /status show of a server, what `mcp-bridge sandbox check`
// prints and what the bridge logs at start.
type SandboxReport struct {
	Enforce string   `json:"enforce"`
	Preset  string   `json:"preset,omitempty"`
	Program string   `json:"program"`
	Read    []string `json:"read,omitempty"`
	Write   []string `json:"write,omitempty"`
	Exec    []string `json:"exec,omitempty"`
	Net     []string `json:"net"`
	Limits  string   `json:"limits,omitempty"`
	Pinned  bool     `json:"pinned,omitempty"`
	// Landlock is the kernel's Landlock ABI (0: none).
	Landlock   int      `json:"landlockABI"`
	Namespaces []string `json:"namespaces,omitempty"`
	Seccomp    bool     `json:"seccomp"`
	// Rights are what the profile asks for, each enforced or not.
	Rights []Right `json:"rights"`
	// Notes are what the system adds or lacks beyond the rights asked
	// for (a namespace it refused, a private /proc).
	Notes []string `json:"notes,omitempty"`
}

// Right is one thing a sandbox asks for, and whether this system
// enforces it: By how, or Why not.
type Right struct {
	Right    string `json:"right"`
	Enforced bool   `json:"enforced"`
	By       string `json:"by,omitempty"`
	Why      string `json:"why,omitempty"`
}

// NotEnforced lists the rights of the report that are not enforced.
func (r *SandboxReport) NotEnforced() []Right {
	var out []Right
	for _, x := range r.Rights {
		if !x.Enforced {
			out = append(out, x)
		}
	}
	return out
}

// String is the report in a few lines, for a terminal and the log.
func (r *SandboxReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "program %s; enforcement %s", r.Program, r.Enforce)
	if r.Preset != "" {
		fmt.Fprintf(&b, "; preset %s", r.Preset)
	}
	fmt.Fprintf(&b, "\nLandlock ABI %d; seccomp %v; namespaces: %s\n", r.Landlock, r.Seccomp, orNone(r.Namespaces))
	for _, x := range r.Rights {
		if x.Enforced {
			fmt.Fprintf(&b, "  enforced      %s (%s)\n", x.Right, x.By)
		} else {
			fmt.Fprintf(&b, "  NOT ENFORCED  %s: %s\n", x.Right, x.Why)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	return b.String()
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// SandboxSystem is what this system offers a sandbox (ProbeSandbox).
type SandboxSystem struct {
	Landlock   int    // the kernel's Landlock ABI; 0 without Landlock
	Userns     bool   // a user namespace of the sandbox's own
	UsernsNote string // why not, naming the sysctl that decides it
	Namespaces bool   // mount, IPC, UTS and network namespaces
	Seccomp    bool
	// Cgroup names the controllers a delegated cgroup gives the
	// children's groups under --containment cgroup ("" for none).
	Cgroup string
	// Other is what stands in for all of it on a system without them.
	Other string
}

// String is the system in one line.
func (s SandboxSystem) String() string {
	if s.Other != "" {
		return s.Other
	}
	us := "yes"
	if !s.Userns {
		us = "no: " + s.UsernsNote
	}
	return fmt.Sprintf("Landlock ABI %d; user namespaces: %s; other namespaces: %v; seccomp: %v; cgroup limits: %s",
		s.Landlock, us, s.Namespaces, s.Seccomp, orNone(strings.Fields(s.Cgroup)))
}

// ErrNotEnforced is the error of a required sandbox with a right this
// system cannot enforce.
var ErrNotEnforced = errors.New("the sandbox asks for rights this system cannot enforce")

// notEnforcedError names the rights not enforced.
func notEnforcedError(rights []Right) error {
	var parts []string
	for _, r := range rights {
		parts = append(parts, r.Right+" ("+r.Why+")")
	}
	return fmt.Errorf("%w: %s; --sandbox-enforce best-effort runs it anyway", ErrNotEnforced, strings.Join(parts, "; "))
}

// Check plans the sandbox for the program argv[0] names (found as Start
// finds it, in dir with env) and reports what this system enforces of
// it. The error is for a profile that cannot be applied at all (a path
// that does not exist, a program not found), or, under EnforceRequired,
// one with a right not enforced (ErrNotEnforced); the report is returned
// with it when there is one. It starts nothing, and Start reuses the
// plan.
func (s *Sandbox) Check(argv []string, dir string, env []string) (*SandboxReport, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("stdio: empty command")
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	path, err := LookPath(argv[0], dir, env)
	if err != nil {
		return nil, err
	}
	p, err := s.planFor(path, dir, env)
	if err != nil {
		return nil, err
	}
	if bad := p.report.NotEnforced(); len(bad) > 0 && s.required() {
		return p.report, notEnforcedError(bad)
	}
	return p.report, nil
}

// The plans made, by what they depend on (planKey). A reload that
// changes a profile makes a new one; the old ones are dropped when there
// are too many.
var (
	plansMu sync.Mutex
	plans   = map[string]*sandboxPlan{}
)

// planFor is the plan for the program at path, made once per profile.
func (s *Sandbox) planFor(path, dir string, env []string) (*sandboxPlan, error) {
	key := s.planKey(path, dir, env)
	plansMu.Lock()
	defer plansMu.Unlock()
	if p := plans[key]; p != nil {
		return p, nil
	}
	p, err := s.plan(path, dir, env)
	if err != nil {
		return nil, err
	}
	if len(plans) >= 256 {
		clear(plans)
	}
	plans[key] = p
	return p, nil
}

// planKey is everything a plan depends on: the profile, the program, and
// what of the environment finds its files.
func (s *Sandbox) planKey(path, dir string, env []string) string {
	pathVar, _ := lookupEnv(env, "PATH")
	libs, _ := lookupEnv(env, "LD_LIBRARY_PATH")
	return strings.Join([]string{s.Preset, strings.Join(s.Read, "\x00"), strings.Join(s.Write, "\x00"), strings.Join(s.Exec, "\x00"),
		strings.Join(s.Net, ","), s.Limits.String(), s.Enforce, s.PinSHA256, s.StateDir, strconv.Itoa(s.LandlockABI),
		path, dir, pathVar, libs}, "\x01")
}

// StartError is why a child did not start: its pin did not match, its
// sandbox could not be applied, or its program could not be executed.
// Error says all of it, for the log (both hashes of a pin mismatch);
// ClientMessage says what a client may see.
type StartError struct {
	Kind    string // StartPin, StartSandbox, StartExec
	Detail  string
	Program string // the file that was to run
	// SHA256 and Pinned: of a pin mismatch, the hash the program has
	// ("" if it could not be read) and the pin.
	SHA256, Pinned string
}

// The kinds of StartError.
const (
	StartPin     = "pin_mismatch"
	StartSandbox = "sandbox"
	StartExec    = "exec"
)

func (e *StartError) Error() string {
	switch e.Kind {
	case StartPin:
		return "server refused to start: binary does not match its pin: " + e.Detail
	case StartSandbox:
		return "server refused to start: its sandbox cannot be applied: " + e.Detail
	}
	return "server failed to start: " + e.Detail
}

// ClientMessage is the error without what only the operator should see:
// hashes, paths.
func (e *StartError) ClientMessage() string {
	switch e.Kind {
	case StartPin:
		return "server refused to start: binary does not match its pin"
	case StartSandbox:
		return "server refused to start: its sandbox cannot be applied here (the bridge's log says why)"
	}
	return "server failed to start: its program could not be executed (the bridge's log says why)"
}

// SandboxExit is how a sandboxed child ended, with what the sandbox may
// have had to do with it: a limit it reached, a file or a port it was
// refused (read from its last stderr lines), and the flag that would
// allow it. Err is the child's own ending (an *ExitError).
type SandboxExit struct {
	Err  error
	Hint string
}

func (e *SandboxExit) Error() string { return e.Err.Error() + "; " + e.Hint }
func (e *SandboxExit) Unwrap() error { return e.Err }

// Patterns of the stderr lines explain reads. Servers word errors in
// their own runtime's way: Node's "EACCES: permission denied, open
// '/x'", Go's "open /x: permission denied", Python's "[Errno 13]
// Permission denied: '/x'", glibc's "Cannot allocate memory".
var (
	deniedRE  = regexp.MustCompile(`(?i)EACCES|EPERM|permission denied|operation not permitted|Errno 13`)
	netRE     = regexp.MustCompile(`(?i)connect|socket|ENETUNREACH|network is unreachable|dial`)
	pathRE    = regexp.MustCompile(`(/[^\s'"(),:;]+)`)
	portRE    = regexp.MustCompile(`:(\d{1,5})\b`)
	oomRE     = regexp.MustCompile(`(?i)out of memory|cannot allocate memory|ENOMEM|errno=12\b|allocation failed`)
	nprocRE   = regexp.MustCompile(`(?i)resource temporarily unavailable|EAGAIN|cannot fork|fork.*failed|pthread_create|create new OS thread`)
	nofilesRE = regexp.MustCompile(`(?i)too many open files|EMFILE`)
)

// sigxcpu is SIGXCPU, which RLIMIT_CPU sends (24 on Linux and macOS;
// Windows, which has no rlimits, never sees it).
const sigxcpu = syscall.Signal(24)

// maxNotable bounds the stderr lines a child keeps for explain.
const maxNotable = 8

// notable says whether a stderr line may say what the sandbox refused.
func notable(line string) bool {
	return deniedRE.MatchString(line) || oomRE.MatchString(line) || nprocRE.MatchString(line) ||
		nofilesRE.MatchString(line) || strings.Contains(line, "ENETUNREACH")
}

// explain says what the sandbox may have had to do with a child that
// ended with err after writing tail to stderr; "" when nothing points to
// it. stopped: the bridge stopped or killed it. It guesses from words,
// except for SIGXCPU, which only the CPU limit sends; a SIGKILL nobody
// here sent is the CPU limit's too when there is one (a second past it,
// for a runtime that ignores SIGXCPU, as Go's does).
func (s *Sandbox) explain(err error, tail []string, stopped bool) string {
	var hints []string
	add := func(h string) {
		if !slices.Contains(hints, h) && len(hints) < 3 {
			hints = append(hints, h)
		}
	}
	var ee *ExitError
	if errors.As(err, &ee) && ee.Status.Signaled() && s.Limits.CPU > 0 {
		switch sig := ee.Status.Signal(); {
		case sig == sigxcpu:
			add(fmt.Sprintf("it used up its CPU time (cpu=%v, --sandbox-limit)", s.Limits.CPU))
		case sig == syscall.SIGKILL && !stopped:
			add(fmt.Sprintf("it may have used up its CPU time (cpu=%v, --sandbox-limit)", s.Limits.CPU))
		}
	}
	for _, line := range tail {
		switch {
		case s.Limits.Memory > 0 && oomRE.MatchString(line):
			add(fmt.Sprintf("it reached its memory limit (mem=%s, --sandbox-limit)", formatSize(s.Limits.Memory)))
		case s.Limits.Procs > 0 && nprocRE.MatchString(line):
			add(fmt.Sprintf("it reached its process limit (procs=%d, --sandbox-limit; threads count)", s.Limits.Procs))
		case s.Limits.Files > 0 && nofilesRE.MatchString(line):
			add(fmt.Sprintf("it reached its open-file limit (files=%d, --sandbox-limit)", s.Limits.Files))
		case deniedRE.MatchString(line) && netRE.MatchString(line):
			if m := portRE.FindStringSubmatch(line); m != nil {
				add(fmt.Sprintf("the sandbox refuses connections to port %s: --sandbox-net %s would allow it", m[1], m[1]))
			} else {
				add("the sandbox refuses network connections: --sandbox-net PORT would allow one")
			}
		case deniedRE.MatchString(line):
			if m := pathRE.FindString(line); m != "" {
				add(fmt.Sprintf("the sandbox may refuse %s: --sandbox-read %s (or --sandbox-write, --sandbox-exec) would allow it", m, m))
			}
		case strings.Contains(line, "ENETUNREACH") || strings.Contains(strings.ToLower(line), "network is unreachable"):
			add("the sandbox has no network: --sandbox-net PORT would allow connections to a port")
		}
	}
	return strings.Join(hints, "; ")
}

// refused is the error of a child its sandbox refused to start (err),
// told to OnRefuse first when it is about the pin or the sandbox.
func (s *Sandbox) refused(name string, err error) error {
	var se *StartError
	if errors.As(err, &se) && s != nil && s.OnRefuse != nil && se.Kind != StartExec {
		s.OnRefuse(se)
	}
	return fmt.Errorf("stdio: start %q: %w", name, err)
}
