package aggregate

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeClock is a Clock that moves only when told (Advance), firing the
// timers that come due in the calling goroutine, in order.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c       *fakeClock
	at      time.Time
	f       func()
	stopped bool
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

// Advance moves the clock by d and fires what comes due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		var due *fakeTimer
		for _, t := range c.timers {
			if !t.stopped && !t.at.After(end) && (due == nil || t.at.Before(due.at)) {
				due = t
			}
		}
		if due == nil {
			c.now = end
			c.mu.Unlock()
			return
		}
		due.stopped = true
		c.now = due.at
		c.mu.Unlock()
		due.f()
	}
}

// announcements records what a Coalescer announced, and when.
type announcements struct {
	mu  sync.Mutex
	got []Changes
	at  []time.Time
	clk *fakeClock
}

func (a *announcements) record(c Changes) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.got = append(a.got, c)
	a.at = append(a.at, a.clk.Now())
}

func (a *announcements) take() []Changes {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.got
	a.got = nil
	return out
}

func TestCoalescer(t *testing.T) {
	clk := newFakeClock()
	a := &announcements{clk: clk}
	c := NewCoalescer(a.record, CoalescerOptions{Clock: clk})
	defer c.Close()

	// The first change is announced at once.
	c.Signal(ToolsChanged)
	clk.Advance(0)
	if got := a.take(); !slices.Equal(got, []Changes{ToolsChanged}) {
		t.Fatalf("first change: %v", got)
	}
	// Changes within the second after it wait for the second's end, and
	// go as one.
	c.Signal(PromptsChanged)
	clk.Advance(300 * time.Millisecond)
	c.Signal(ToolsChanged)
	c.Signal(AllChanged &^ ToolsChanged)
	clk.Advance(699 * time.Millisecond)
	if got := a.take(); len(got) != 0 {
		t.Fatalf("announced %v within the second", got)
	}
	clk.Advance(time.Millisecond)
	if got := a.take(); !slices.Equal(got, []Changes{AllChanged}) {
		t.Fatalf("gathered changes: %v", got)
	}
	// After a quiet second, at once again.
	clk.Advance(5 * time.Second)
	c.Signal(ResourcesChanged)
	clk.Advance(0)
	if got := a.take(); !slices.Equal(got, []Changes{ResourcesChanged}) {
		t.Fatalf("after a quiet time: %v", got)
	}
	// Nothing changed, nothing announced.
	c.Signal(0)
	clk.Advance(10 * time.Second)
	if got := a.take(); len(got) != 0 {
		t.Fatalf("announced %v for no change", got)
	}
}

// TestCoalescerFlood: a server that signals a change every 10 ms for 10
// s costs its client at most one announcement a second, and the last
// change is announced within a second.
func TestCoalescerFlood(t *testing.T) {
	clk := newFakeClock()
	a := &announcements{clk: clk}
	c := NewCoalescer(a.record, CoalescerOptions{Clock: clk})
	defer c.Close()
	start := clk.Now()
	for range 1000 {
		c.Signal(ToolsChanged)
		clk.Advance(10 * time.Millisecond)
	}
	last := clk.Now()
	clk.Advance(time.Second)
	if n := len(a.at); n < 10 || n > 11 {
		t.Errorf("%d announcements in 10 s", n)
	}
	for i := 1; i < len(a.at); i++ {
		if gap := a.at[i].Sub(a.at[i-1]); gap < time.Second {
			t.Errorf("announcements %d and %d %v apart", i-1, i, gap)
		}
	}
	if a.at[0] != start {
		t.Errorf("the first announcement at %v, want at once", a.at[0].Sub(start))
	}
	if end := a.at[len(a.at)-1]; end.Before(last.Add(-10*time.Millisecond)) || end.After(last.Add(time.Second)) {
		t.Errorf("the last change (at %v) announced at %v", last.Sub(start), end.Sub(start))
	}
}

// TestCoalescerClose: once closed, nothing more is announced, pending or
// not.
func TestCoalescerClose(t *testing.T) {
	clk := newFakeClock()
	a := &announcements{clk: clk}
	c := NewCoalescer(a.record, CoalescerOptions{Clock: clk})
	c.Signal(ToolsChanged)
	clk.Advance(0)
	c.Signal(PromptsChanged)
	c.Close()
	c.Signal(ResourcesChanged)
	clk.Advance(time.Hour)
	if got := a.take(); !slices.Equal(got, []Changes{ToolsChanged}) {
		t.Errorf("announced %v", got)
	}
}

// TestCoalescerRealClock: with the real clock, a change is announced, in
// a timer's goroutine.
func TestCoalescerRealClock(t *testing.T) {
	got := make(chan Changes, 1)
	c := NewCoalescer(func(ch Changes) { got <- ch }, CoalescerOptions{})
	defer c.Close()
	c.Signal(PromptsChanged)
	select {
	case ch := <-got:
		if ch != PromptsChanged {
			t.Errorf("announced %v", ch)
		}
	case <-t.Context().Done():
		t.Fatal("no announcement")
	}
}

func TestHub(t *testing.T) {
	clk := newFakeClock()
	a1, a2 := &announcements{clk: clk}, &announcements{clk: clk}
	c1 := NewCoalescer(a1.record, CoalescerOptions{Clock: clk})
	c2 := NewCoalescer(a2.record, CoalescerOptions{Clock: clk})
	var h Hub
	h.Add(c1)
	remove := h.Add(c2)
	h.Signal(AllChanged)
	clk.Advance(0)
	if !slices.Equal(a1.take(), []Changes{AllChanged}) || !slices.Equal(a2.take(), []Changes{AllChanged}) {
		t.Error("a signal did not reach both")
	}
	remove()
	h.Signal(ToolsChanged)
	clk.Advance(time.Second)
	if got1, got2 := a1.take(), a2.take(); !slices.Equal(got1, []Changes{ToolsChanged}) || len(got2) != 0 {
		t.Errorf("after removal: %v, %v", got1, got2)
	}
}

func TestChangesNotifications(t *testing.T) {
	var got []string
	for _, n := range AllChanged.Notifications() {
		got = append(got, string(n))
	}
	want := []string{
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
		`{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}`,
		`{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("Notifications = %q", got)
	}
	if len(Changes(0).Notifications()) != 0 || len(PromptsChanged.Notifications()) != 1 {
		t.Error("a subset")
	}
}
