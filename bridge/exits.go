package bridge

import "sync/atomic"

// Why the bridge ends a session (its endReason), also told to requests
// still in flight. The exit counters in Stats tell them apart.
const (
	reasonDeleted  = "the session was deleted"
	reasonExpired  = "the session expired"
	reasonShutdown = "the bridge is shutting down"
	// reasonUnreachable: no client could reach the session any more
	// (Session.unreachableLocked); counted with the idle ones.
	reasonUnreachable = "the session expired: its client had left"
)

// exitCounterLocked picks the Stats counter for a child the bridge
// stopped: by why its session ended; a child without a session of its own
// (shared, or a spare) is stopped only when the bridge shuts down. Called
// with u.mu held.
func (u *upstream) exitCounterLocked() *atomic.Int64 {
	if !u.role.multiplexed() {
		for p := range u.parties {
			switch p.party().endReason {
			case reasonDeleted:
				return &u.b.stats.ChildrenDeleted
			case reasonExpired, reasonUnreachable:
				return &u.b.stats.ChildrenIdle
			}
		}
	}
	return &u.b.stats.ChildrenShutdown
}
