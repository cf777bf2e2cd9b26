package aggregate

import (
	"sync"
	"time"
)

// Changes are lists that changed, as a set.
type Changes uint8

const (
	ToolsChanged Changes = 1 << iota
	PromptsChanged
	ResourcesChanged

	// AllChanged: a server went down or came back, or the configuration
	// was reloaded: any list may have changed.
	AllChanged = ToolsChanged | PromptsChanged | ResourcesChanged
)

// Notifications are the list_changed notifications that announce c, in
// a fixed order.
func (c Changes) Notifications() [][]byte {
	var out [][]byte
	for _, n := range []struct {
		c      Changes
		method string
	}{{ToolsChanged, "tools"}, {PromptsChanged, "prompts"}, {ResourcesChanged, "resources"}} {
		if c&n.c != 0 {
			out = append(out, []byte(`{"jsonrpc":"2.0","method":"notifications/`+n.method+`/list_changed"}`))
		}
	}
	return out
}

// DefaultAnnounceInterval is the least time between two announcements of
// a Coalescer.
const DefaultAnnounceInterval = time.Second

// Clock is the time a Coalescer keeps: the real one by default, a fake
// one in tests, which then need no sleep.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed; Stop
	// prevents that if it has not happened yet.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is what Clock.AfterFunc returns.
type Timer interface{ Stop() bool }

type realClock struct{}

func (realClock) Now() time.Time                            { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// CoalescerOptions configure a Coalescer. The zero value works.
type CoalescerOptions struct {
	// Interval is the least time between two announcements. Default
	// DefaultAnnounceInterval.
	Interval time.Duration
	// Clock defaults to the real clock.
	Clock Clock
}

// A Coalescer turns any number of change signals for one client (a
// server's list_changed, a server going down or coming back, a reload)
// into announcements, at most one per Interval: the first signal after a
// quiet Interval is announced at once, and the signals that come within
// an Interval of an announcement are gathered into the next, when the
// Interval is over. So a client hears of a change within an Interval,
// and a server that sends list_changed in a loop costs the client one
// announcement per Interval.
//
// Its goroutines are its clock's timers, one at a time, armed while a
// change waits; Close stops it, and once Close returns announce is not
// called again.
type Coalescer struct {
	announce func(Changes)
	every    time.Duration
	clock    Clock

	fire sync.Mutex // held while announce runs, so Close can wait for it

	mu      sync.Mutex
	pending Changes
	last    time.Time // of the last announcement; zero before the first
	timer   Timer     // armed while pending is not empty
	closed  bool
}

// NewCoalescer is a Coalescer that calls announce with the lists that
// changed. announce runs in a timer's goroutine, never two at once; it
// must not block (it queues the notifications for the client) and must
// not call the Coalescer.
func NewCoalescer(announce func(Changes), o CoalescerOptions) *Coalescer {
	if o.Interval <= 0 {
		o.Interval = DefaultAnnounceInterval
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	return &Coalescer{announce: announce, every: o.Interval, clock: o.Clock}
}

// Signal says the lists ch changed.
func (c *Coalescer) Signal(ch Changes) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || ch == 0 {
		return
	}
	c.pending |= ch
	if c.timer != nil {
		return // an announcement is due: this change goes with it
	}
	wait := time.Duration(0)
	if !c.last.IsZero() {
		wait = max(c.every-c.clock.Now().Sub(c.last), 0)
	}
	c.timer = c.clock.AfterFunc(wait, c.fired)
}

// fired announces what is pending.
func (c *Coalescer) fired() {
	c.fire.Lock()
	defer c.fire.Unlock()
	c.mu.Lock()
	ch := c.pending
	if c.closed || ch == 0 {
		c.mu.Unlock()
		return
	}
	c.pending, c.timer, c.last = 0, nil, c.clock.Now()
	c.mu.Unlock()
	c.announce(ch)
}

// Close stops the Coalescer: what is pending is not announced, and once
// Close returns announce is not called again.
func (c *Coalescer) Close() {
	c.mu.Lock()
	c.closed = true
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	c.mu.Unlock()
	c.fire.Lock() // an announcement under way ends first
	c.fire.Unlock()
}

// A Hub passes the changes of the aggregate's servers to the Coalescer
// of every client. Safe for concurrent use.
type Hub struct {
	mu   sync.Mutex
	subs map[*Coalescer]struct{}
}

// Add subscribes c to the hub's signals until remove is called.
func (h *Hub) Add(c *Coalescer) (remove func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs == nil {
		h.subs = map[*Coalescer]struct{}{}
	}
	h.subs[c] = struct{}{}
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.subs, c)
	}
}

// Signal passes ch to every subscribed Coalescer.
func (h *Hub) Signal(ch Changes) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.subs {
		c.Signal(ch)
	}
}
