package bridge

import (
	"context"
	"sync"
	"time"
)

// The 2026-07-28 layer's parties (party.go). A call has no session: what
// the child sends for it waits in a box, appended by the child's reader
// (which never blocks on a client) and taken by the one goroutine that
// serves the call's POST.

// box is the party of one 2026-07-28 call on a child: what the child
// sends for the call's request, its answer last.
type box struct {
	partyState
	stats *Stats
	up    *upstream

	mu     sync.Mutex // taken after the upstream's
	items  []childMsg
	final  bool // nothing more comes: the answer is here, or the box ended
	parked bool // the call waits for its client's retry (pause)
	wake   chan struct{}
}

func newBox(b *Bridge, u *upstream, owner Owner, level int) *box {
	return &box{partyState: partyState{log: u.logger(), owner: owner.Key, logLevel: level}, stats: &b.stats, up: u, wake: make(chan struct{}, 1)}
}

// put appends m. While the call is parked, what the child sends for it
// but requests and its answer is dropped: no client listens for it.
func (x *box) put(m *childMsg, answer bool) {
	x.mu.Lock()
	if x.parked && !answer && m.kind == Notification {
		x.stats.ParkedDrops.Add(1)
	} else {
		n := *m
		n.raw, n.owned, n.kept = m.keep(), true, nil
		x.items = append(x.items, n)
	}
	if answer {
		x.final = true
	}
	x.mu.Unlock()
	x.signal()
}

func (x *box) signal() {
	select {
	case x.wake <- struct{}{}:
	default:
	}
}

// finish says nothing more comes.
func (x *box) finish() {
	x.mu.Lock()
	x.final = true
	x.mu.Unlock()
	x.signal()
}

// park holds (true) or frees the box while its call waits for its
// client's retry.
func (x *box) park(parked bool) {
	x.mu.Lock()
	x.parked = parked
	x.mu.Unlock()
}

// wait blocks until the box has something or is final, ctx ends (its
// error is returned) or timeout fires (fired true). A nil timeout never
// fires.
func (x *box) wait(ctx context.Context, timeout <-chan time.Time) (fired bool, err error) {
	return waitWake(ctx, x.wake, timeout, x.ready)
}

// ready reports whether the box has something or is final.
func (x *box) ready() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.items) > 0 || x.final
}

// take takes what is there, appended to buf, and reports whether the box
// is final.
func (x *box) take(buf []childMsg) ([]childMsg, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	buf = append(buf, x.items...)
	clear(x.items)
	x.items = x.items[:0]
	return buf, x.final
}

// takeAnswerLocked is the party's: the answer ends the box (nil: the
// request was cancelled, and no answer comes).
func (x *box) takeAnswerLocked(_ *call, m *childMsg) {
	if m == nil {
		x.finish()
		return
	}
	x.put(m, true)
}

// takeFailureLocked is the party's: the bridge's error is the call's
// answer.
func (x *box) takeFailureLocked(c *call, code int, reason string, data any) bool {
	x.put(scanned(errorResponse(c.clientID, code, reason, data)), true)
	return false
}

// takeRelatedLocked is the party's: progress, a listen's notifications,
// and what the child asks while the call is the only request in flight,
// but log messages below the level the request asked for ("the server
// MUST NOT emit notifications/message for requests that didn't ask").
func (x *box) takeRelatedLocked(_ *call, m *childMsg, rel relation) {
	if rel == relAsked && m.method == methodLogMessage && (x.logLevel < 0 || !atLevel(m.params(), x.logLevel)) {
		return
	}
	x.put(m, false)
}

// hearLocked is the party's: a call takes only what relates to its own
// request.
func (x *box) hearLocked(*childMsg) {}

// end is the party's: the box leaves its child, and nothing more comes.
func (x *box) end() {
	x.up.leave(x)
	x.finish()
}

// listenBox is the party of a listen the bridge serves in front of a
// legacy child: it takes the changes its client asked for, from the
// child and from the pool's leased children.
type listenBox struct {
	box
	filter listenFilter
}

func (x *listenBox) hearLocked(m *childMsg) {
	if x.filter.wants(m.method) {
		x.put(m, false)
	}
}

// end is the party's (the box's end would leave as the box, not as the
// listen).
func (x *listenBox) end() {
	x.up.leave(x)
	x.finish()
}

// scanned is msg, a message of the bridge's own making, scanned.
func scanned(msg []byte) *childMsg {
	f, _ := scanFields(msg)
	m := &childMsg{raw: msg, f: f, owned: true, kind: Response}
	if f.method.ok() {
		_ = unquote(f.method.of(msg), &m.method)
		m.kind = Notification
		if f.id.ok() {
			m.kind = Request
		}
	}
	return m
}
