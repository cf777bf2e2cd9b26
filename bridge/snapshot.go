package bridge

import (
	"slices"
	"time"

	"github.com/mcp-bridge/mcp-bridge/stdio"
)

// Snapshot is what an operator sees of a bridge at one moment: its
// sessions and its children. It holds no secrets (no tokens, no
// environment, the command's secret-looking arguments masked), only ids,
// principals' names and timings, and each child's last stderr lines,
// which may hold anything the child wrote: For is what one principal may
// see of it.
type Snapshot struct {
	Mode    string `json:"mode"`
	Command string `json:"command"` // the program
	// Argv is the whole command, program and arguments, as RedactArgv
	// shows it.
	Argv     []string          `json:"argv,omitempty"`
	Sessions []SessionSnapshot `json:"sessions"`
	// Modern are the 2026-07-28 requests in progress: running, listening,
	// or parked for their client's input.
	Modern   []ModernSnapshot `json:"modern"`
	Children []ChildSnapshot  `json:"children"`
	Waiting  int              `json:"waitingChildren"` // started children in the warm pool
	// Servers, in a snapshot that combines several bridges (one per
	// server), says what each runs. The bridge itself leaves it empty.
	Servers []ServerSnapshot `json:"servers,omitempty"`
	// Sandbox is the children's sandbox as this system enforces it; nil
	// without one.
	Sandbox *stdio.SandboxReport `json:"sandbox,omitempty"`
}

// ServerSnapshot is one of several servers of a combined Snapshot.
type ServerSnapshot struct {
	Name    string               `json:"name"`
	Mode    string               `json:"mode"`
	Argv    []string             `json:"argv"` // as RedactArgv shows it
	Sandbox *stdio.SandboxReport `json:"sandbox,omitempty"`
}

// SessionSnapshot describes one session.
type SessionSnapshot struct {
	Server       string    `json:"server,omitempty"` // with several servers: its name
	ID           string    `json:"id"`
	Principal    string    `json:"principal,omitempty"` // the owner's name (Owner.Name)
	Version      string    `json:"protocolVersion,omitempty"`
	Created      time.Time `json:"created"`
	LastActivity time.Time `json:"lastActivity"`
	InFlight     int       `json:"inFlight"`
	ChildPid     int       `json:"childPid,omitempty"`
	StreamOpen   bool      `json:"streamOpen"`
	// Expires is when the bridge ends the session if nothing happens
	// before (its idle timeout, or sooner, Unreachable, when no client
	// can reach it any more); nil while a request or a stream keeps it.
	Expires     *time.Time `json:"expires,omitempty"`
	Unreachable bool       `json:"unreachable,omitempty"`

	owner string // Owner.Key, which For filters by; never shown
}

// ModernSnapshot describes one 2026-07-28 request in progress.
type ModernSnapshot struct {
	Server    string    `json:"server,omitempty"`    // with several servers: its name
	Principal string    `json:"principal,omitempty"` // the owner's name (Owner.Name)
	Method    string    `json:"method"`
	Target    string    `json:"target,omitempty"` // the tool, prompt or resource
	Started   time.Time `json:"started"`
	// State is running, listening, or waiting for input (parked for its
	// client's retry, until Expires).
	State    string     `json:"state"`
	Expires  *time.Time `json:"expires,omitempty"`
	ChildPid int        `json:"childPid,omitempty"`
	Leased   bool       `json:"leased,omitempty"` // on a child of its own

	owner string
}

// Modern request states (ModernSnapshot.State).
const (
	ModernRunning   = "running"
	ModernListening = "listening"
	ModernWaiting   = "waiting for input"
)

// ChildSnapshot describes one child process.
type ChildSnapshot struct {
	Server     string    `json:"server,omitempty"` // with several servers: its name
	Pid        int       `json:"pid"`
	Started    time.Time `json:"started"`
	Restarts   int       `json:"restarts"`
	Sessions   int       `json:"sessions"`
	Identity   string    `json:"identity,omitempty"` // per-identity: its owner's name
	StderrTail []string  `json:"stderrTail,omitempty"`
	// StderrHidden says the viewer may not see this child's stderr
	// (For): it serves every principal.
	StderrHidden bool `json:"stderrHidden,omitempty"`

	// owners are the keys of the principals the child serves: its
	// session's owner (per-session), its identity (per-identity). Never
	// shown.
	owners []string
	// everyone marks the child every principal's sessions share (shared
	// and stateless mode).
	everyone bool
}

// Snapshot returns the bridge's sessions (oldest first) and children.
func (b *Bridge) Snapshot() Snapshot {
	snap := Snapshot{Mode: b.cfg.Mode, Command: b.cfg.Command[0], Argv: RedactArgv(b.cfg.Command), Modern: b.modernSnapshot(), Sandbox: b.sandbox}
	seen := map[*upstream]bool{}
	snap.Sessions, snap.Children = b.sessionSnapshots(seen)
	snap.Children = append(snap.Children, b.poolSnapshots(seen)...)
	snap.Waiting = b.WaitingChildren()
	slices.SortFunc(snap.Sessions, func(a, b SessionSnapshot) int { return a.Created.Compare(b.Created) })
	slices.SortFunc(snap.Children, func(a, b ChildSnapshot) int { return a.Started.Compare(b.Started) })
	return snap
}

// For is what the principal whose key is owner may see of s: its own
// sessions; the children that serve only it (its sessions' own in
// per-session mode, its own in per-identity mode), whole; and of the
// child that serves every principal (shared and stateless mode) that it
// runs (pid, uptime, restarts, and the count of owner's own sessions on
// it) but not its stderr, which carries every principal's traffic. Other
// principals' sessions and children are left out.
func (s Snapshot) For(owner string) Snapshot {
	out := s
	out.Sessions = []SessionSnapshot{}
	out.Children = []ChildSnapshot{}
	for _, x := range s.Sessions {
		if x.owner == owner {
			out.Sessions = append(out.Sessions, x)
		}
	}
	out.Modern = []ModernSnapshot{}
	for _, x := range s.Modern {
		if x.owner == owner {
			out.Modern = append(out.Modern, x)
		}
	}
	for _, c := range s.Children {
		switch {
		case c.everyone:
			c.StderrTail, c.StderrHidden = nil, true
			c.Sessions = 0
			for _, x := range out.Sessions {
				if x.ChildPid == c.Pid && x.Server == c.Server {
					c.Sessions++
				}
			}
		case !slices.Contains(c.owners, owner):
			continue
		}
		out.Children = append(out.Children, c)
	}
	return out
}

// ModernCounts is what the modern era holds at one moment.
type ModernCounts struct {
	Parked  int `json:"parked"`  // calls waiting for their client's retry
	Leased  int `json:"leased"`  // children leased to one call each
	Listens int `json:"listens"` // open subscriptions/listen streams
}
