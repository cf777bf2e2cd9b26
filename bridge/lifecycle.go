package bridge

import (
	"context"
	"sync"
	"time"
)

// phase is where a Bridge is in its life. It only moves forward: open,
// draining (Drain), closed (Close).
type phase int

const (
	phaseOpen     phase = iota
	phaseDraining       // no new sessions; the rest goes on
	phaseClosed         // shutdown is closed: nothing new starts, not even a goroutine
)

// phaseNow is the bridge's phase.
func (b *Bridge) phaseNow() phase {
	b.stateMu.Lock()
	defer b.stateMu.Unlock()
	return b.state
}

// spawn runs f on a goroutine of the bridge's own, which Close waits for.
// Every goroutine of the package starts here: the janitor, refill, a
// child's watcher (upstream.watch, which restarts a shared child), the
// stop of a session the janitor ends, an owner's child retired with its
// last session, the stop of a child that stopped reading
// (unanswerable), a request's deadline (expire), a shared child's
// answer to a request it cannot route, and initialized to a child the
// bridge initialized itself. (Close's own goroutines, which it waits for
// before it returns, are the exception.) Once the bridge is closed
// it runs nothing and reports false: what f would have done is then
// Close's to do (it stops every session and child), and each caller says
// what it leaves to Close.
//
// The state is checked and the goroutine counted under one lock, the one
// Close changes the state under, so Close's Wait never races an Add.
func (b *Bridge) spawn(f func()) bool {
	b.stateMu.Lock()
	ok := b.state != phaseClosed
	if ok {
		b.wg.Add(1)
	}
	b.stateMu.Unlock()
	if ok {
		go func() {
			defer b.wg.Done()
			f()
		}()
	}
	return ok
}

// Drain prepares for shutdown: no new sessions, and every GET stream ends
// (their clients reconnect elsewhere), so the HTTP server can wait for the
// requests in flight alone.
func (b *Bridge) Drain() {
	b.stateMu.Lock()
	if b.state == phaseOpen {
		b.state = phaseDraining
	}
	b.stateMu.Unlock()
	b.mu.Lock()
	sessions := b.readyLocked()
	listens := b.listenBoxesLocked()
	b.mu.Unlock()
	for _, s := range sessions {
		s.drain()
	}
	for _, x := range listens {
		// A listen ends gracefully: its client gets the listen's
		// completion result (ModernCall.ending).
		x.finish()
	}
}

// Close refuses new sessions, ends every session and stops every child,
// each with the graceful sequence; when ctx ends, children left get
// SIGKILL. It returns once every child is reaped and every goroutine of
// the bridge has returned. It may be called more than once.
func (b *Bridge) Close(ctx context.Context) error {
	b.stateMu.Lock()
	if b.state != phaseClosed {
		b.state = phaseClosed
		b.stopCtx = ctx
		close(b.shutdown)
	}
	b.stateMu.Unlock()

	// Sessions, then the children sessions share. The goroutines here are
	// Close's own (spawn refuses from now on), and it waits for them.
	b.mu.Lock()
	all := b.readyLocked() // one still starting finds the bridge closed (markReady)
	b.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Go(func() { s.stop(ctx, reasonShutdown) })
	}
	wg.Wait()
	b.closeExchanges()
	b.mu.Lock()
	ups := append(b.multiplexedLocked(), b.poolsChildrenLocked()...)
	b.mu.Unlock()
	for _, u := range ups {
		wg.Go(func() { u.stop(ctx) })
	}
	wg.Wait()
	// The janitor and refill (which stops the children waiting in the
	// pool) see shutdown; the watchers see their children reaped.
	b.wg.Wait()
	return ctx.Err()
}

// janitor ends the sessions whose time is up (Session.expiry: idle for
// IdleTimeout, or no client can reach them for UnreachableTimeout), and
// reclaims idle pooled children, until the bridge closes.
func (b *Bridge) janitor() {
	every := time.Minute
	for _, d := range []time.Duration{b.cfg.IdleTimeout, b.cfg.UnreachableTimeout} {
		if d > 0 {
			every = min(every, max(d/4, 10*time.Millisecond))
		}
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-b.shutdown:
			return
		case <-t.C:
			now := b.cfg.Now()
			b.endDue(now)
			if b.cfg.IdleTimeout > 0 {
				b.reclaimPools(now)
			}
		}
	}
}

// closeContext is Close's context, which bounds the stops of what is left
// after the shutdown (refill's children). Read once the bridge is closed.
func (b *Bridge) closeContext() context.Context {
	b.stateMu.Lock()
	defer b.stateMu.Unlock()
	return b.stopCtx
}
