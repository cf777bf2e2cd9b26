package bridge

import (
	"sync"
	"time"
)

// ErrServerFailing: in per-session mode, the MCP server's last sessions
// all ended before it answered initialize (it exited, closed its stdout,
// or timed out), so a new one would too. Ready returns it, and Initialize
// while the start breaker is open.
var ErrServerFailing = &Error{Kind: KindUnavailable, Code: CodeChildExited, Message: "the MCP server keeps exiting before it answers initialize"}

// The start breaker of per-session mode: startFailures sessions in a row
// whose child ended before it answered initialize open it; it stays open
// startCoolDown, refusing new sessions, then lets one start through as a
// trial (half-open), whose success closes it and whose failure opens it
// again. The shared child's crash-loop breaker counts the same failures
// (5, and the 10 s its restarts back off to at most).
const (
	startFailures = 5
	startCoolDown = 10 * time.Second
)

// startBreaker follows, in per-session mode, whether the child starts: a
// readiness probe must not spawn a process per probe, so what the last
// sessions' children did is its evidence. Its lock is taken alone.
type startBreaker struct {
	mu       sync.Mutex
	failed   int       // sessions in a row whose child ended before answering initialize
	last     string    // why the last one ended, with its exit status (never its stderr: the breaker answers everyone)
	openedAt time.Time // zero while closed
	trial    time.Time // when the half-open trial started; zero if none runs
}

// admit says whether a new session may start its child now: nil while
// the breaker is closed, and for one trial once it has been open
// startCoolDown (a trial that never ends makes room for another after as
// long). Otherwise the refusal, with when to come back.
func (sb *startBreaker) admit(now time.Time) *Error {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.openedAt.IsZero() {
		return nil
	}
	wait := sb.openedAt.Add(startCoolDown).Sub(now)
	if !sb.trial.IsZero() {
		wait = sb.trial.Add(startCoolDown).Sub(now)
	}
	if wait <= 0 {
		sb.trial = now
		return nil
	}
	return sb.errorLocked(wait)
}

// ready is admit's verdict without taking the trial: nil while closed.
func (sb *startBreaker) ready() *Error {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.openedAt.IsZero() {
		return nil
	}
	return sb.errorLocked(0)
}

func (sb *startBreaker) errorLocked(wait time.Duration) *Error {
	data := map[string]any{"sessionsFailed": sb.failed, "last": sb.last}
	e := &Error{Kind: ErrServerFailing.Kind, Code: ErrServerFailing.Code, Message: ErrServerFailing.Message, Data: data}
	if wait > 0 {
		e.RetryAfter = wait
	}
	return e
}

// succeeded records a session whose child answered initialize: the
// breaker closes.
func (sb *startBreaker) succeeded() {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.failed, sb.openedAt, sb.trial = 0, time.Time{}, time.Time{}
}

// failedStart records a session whose child ended before answering
// initialize, and why; it reports whether the breaker
// opened (or opened again, after a failed trial).
func (sb *startBreaker) failedStart(now time.Time, status string) bool {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.failed++
	sb.last = status
	if sb.failed < startFailures {
		return false
	}
	sb.openedAt, sb.trial = now, time.Time{}
	return true
}

// startEnded tells the start breaker how a per-session session that
// never finished its initialize ended: only a child that ended on its own
// (not a DELETE, an idle expiry or the bridge's shutdown) counts against
// the server.
func (s *Session) startEnded(reason string) {
	b := s.b
	if b.cfg.Mode != ModePerSession || s.stateless {
		return
	}
	switch reason {
	case reasonDeleted, reasonExpired, reasonUnreachable, reasonShutdown:
		return
	}
	if b.starts.failedStart(b.cfg.Now(), reason) {
		b.log.Error("the MCP server keeps exiting before it answers initialize; refusing new sessions for a while (start breaker)",
			"sessions_failed", startFailures, "last", reason, "retry_in", startCoolDown)
	}
}
