package bridge

import (
	"slices"
	"time"
)

// Snapshot is what an operator sees of a bridge at one moment: its
// sessions and its children. It holds no secrets (no tokens, no
// environment), only ids, principals' names and timings.
type Snapshot struct {
	Mode     string            `json:"mode"`
	Command  string            `json:"command"`
	Sessions []SessionSnapshot `json:"sessions"`
	Children []ChildSnapshot   `json:"children"`
	Waiting  int               `json:"waitingChildren"` // started children in the warm pool
}

// SessionSnapshot describes one session.
type SessionSnapshot struct {
	Server       string    `json:"server,omitempty"` // with several servers: its name
	ID           string    `json:"id"`
	Principal    string    `json:"principal,omitempty"`
	Version      string    `json:"protocolVersion,omitempty"`
	Created      time.Time `json:"created"`
	LastActivity time.Time `json:"lastActivity"`
	InFlight     int       `json:"inFlight"`
	ChildPid     int       `json:"childPid,omitempty"`
	StreamOpen   bool      `json:"streamOpen"`
}

// ChildSnapshot describes one child process.
type ChildSnapshot struct {
	Server     string    `json:"server,omitempty"` // with several servers: its name
	Pid        int       `json:"pid"`
	Started    time.Time `json:"started"`
	Restarts   int       `json:"restarts"`
	Sessions   int       `json:"sessions"`
	Identity   string    `json:"identity,omitempty"`
	StderrTail []string  `json:"stderrTail,omitempty"`
}

// Snapshot returns the bridge's sessions (oldest first) and children.
func (b *Bridge) Snapshot() Snapshot {
	snap := Snapshot{Mode: b.cfg.Mode, Command: b.cfg.Command[0], Sessions: []SessionSnapshot{}, Children: []ChildSnapshot{}}
	b.mu.Lock()
	sessions := make([]*Session, 0, len(b.sessions))
	for _, s := range b.sessions {
		if s.ready {
			sessions = append(sessions, s)
		}
	}
	ups := b.multiplexedLocked()
	b.mu.Unlock()
	seen := map[*upstream]bool{}
	for _, u := range ups {
		seen[u] = true
	}
	for _, s := range sessions {
		u := s.up
		u.mu.Lock()
		ss := SessionSnapshot{ID: s.id, Principal: s.owner, Version: s.version, Created: s.created,
			LastActivity: s.lastSeen, InFlight: len(s.byClient), StreamOpen: s.get != nil}
		if u.child != nil {
			ss.ChildPid = u.child.Pid()
		}
		u.mu.Unlock()
		snap.Sessions = append(snap.Sessions, ss)
		if !seen[u] {
			seen[u] = true
			ups = append(ups, u)
		}
	}
	for _, u := range ups {
		if c, ok := u.snapshot(); ok {
			snap.Children = append(snap.Children, c)
		}
	}
	snap.Waiting = len(b.pool)
	slices.SortFunc(snap.Sessions, func(a, b SessionSnapshot) int { return a.Created.Compare(b.Created) })
	slices.SortFunc(snap.Children, func(a, b ChildSnapshot) int { return a.Started.Compare(b.Started) })
	return snap
}

func (u *upstream) snapshot() (ChildSnapshot, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.child == nil {
		return ChildSnapshot{}, false
	}
	return ChildSnapshot{Pid: u.child.Pid(), Started: u.started, Restarts: u.restarts,
		Sessions: len(u.sessions), Identity: u.identity, StderrTail: u.child.StderrTail()}, true
}
