package bridge

import (
	"context"
	"errors"
	"sync/atomic"
)

// The process budget (--max-children) is a hard bound: a child process
// takes a slot before it starts, atomically, and gives it back once it is
// gone (reaped), so at no moment do more processes run than the budget
// allows, starts in flight included. Every way a process starts goes
// through upstream.startWith, which takes the slot: a session's child, the
// warm pool, the shared child, a principal's child, a modern pool's base
// child and a leased one. A shared child keeps its slot from its crash to
// its restart, so a restart never finds the budget spent by others.
//
// A start that finds no slot free may make room (makeRoom): a warm leased
// child nobody uses is stopped, the one idle longest first, since a warm
// child must not keep another principal's call from running. Failing
// that, a call parked for its client's input is taken back from the
// principal holding the most leased children, if that is at least two
// more than the starter's own (preemptParked): parked calls hold their
// processes while people answer, and one principal's must not leave
// another's with nothing. Running calls are never taken back.

// slots counts the slots taken out of max.
type slots struct {
	max int64
	n   atomic.Int64
}

// take takes a slot, if one is free.
func (s *slots) take() bool {
	for {
		n := s.n.Load()
		if n >= s.max {
			return false
		}
		if s.n.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// give gives a slot back.
func (s *slots) give() { s.n.Add(-1) }

// errNoSlot: every slot of the budget is taken.
var errNoSlot = errors.New("every --max-children slot is taken")

// errTooManyChildren is errNoSlot for the client.
var errTooManyChildren = &Error{Kind: KindUnavailable, Code: CodeInternalError, Message: "too many MCP server processes (--max-children); try again shortly"}

// takeSlot takes a slot of the budget for u's next child, unless it holds
// one already (a shared child restarting, or one reserved for it).
func (u *upstream) takeSlot() bool {
	if u.slot.Load() {
		return true
	}
	if !u.b.children.take() {
		return false
	}
	u.slot.Store(true)
	return true
}

// giveSlot gives u's slot back, if it holds one: exactly once per slot
// taken, however the child ended or failed to start.
func (u *upstream) giveSlot() {
	if u.slot.CompareAndSwap(true, false) {
		u.b.children.give()
		u.freedOnce.Do(func() { close(u.freed) })
	}
}

// maxRoomTries bounds how often one start makes room and tries again,
// when others keep taking the slots it frees.
const maxRoomTries = 8

// withRoom runs start, which starts a process for owner; while it fails
// for want of a slot, it makes room (makeRoom) and tries again. It returns
// start's result, or errTooManyChildren once no room can be made.
func withRoom[T any](ctx context.Context, b *Bridge, owner string, start func() (T, error)) (T, error) {
	for try := 0; ; try++ {
		v, err := start()
		if !errors.Is(err, errNoSlot) {
			return v, err
		}
		if try == maxRoomTries || !b.makeRoom(ctx, owner) {
			return v, errTooManyChildren
		}
	}
}

// makeRoom frees a slot of the budget for a start of owner's, if it can:
// it stops the warm leased child idle longest, of any pool, or else ends
// a parked call of a principal holding more (preemptParked), and returns
// once the slot is given back (or ctx ends). It reports whether it freed
// one.
func (b *Bridge) makeRoom(ctx context.Context, owner string) bool {
	u := b.takeIdleLease()
	if u != nil {
		b.track(func() { u.stop(context.Background()) })
	} else if u = b.preemptParked(owner); u == nil {
		return false
	}
	select {
	case <-u.freed:
		return true
	case <-ctx.Done():
		return false
	case <-b.shutdown:
		return false
	}
}
