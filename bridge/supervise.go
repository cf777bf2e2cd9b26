package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcp-bridge/mcp-bridge/stdio"
)

// The life of a child: its exit watched and its requests failed with why,
// a child that can no longer answer stopped, a request that is not
// answered in time expired, a shared child restarted after a crash
// (within its breaker) and re-initialized. Routing what it says is
// route.go's; this file is what happens when it says nothing more.

// watch handles the child's end: every request in flight fails at once
// with the exit status and the last lines of stderr. In per-session mode
// the session ends with it; a shared child is restarted.
func (u *upstream) watch(child child) {
	u.waitExit(child)
	err := child.Err()
	tail := child.StderrTail()
	status := exitStatus(err)
	// A child the bridge's shutdown stopped did not fail: its requests
	// are told the bridge is shutting down, whoever they are for (a
	// session's ended with that reason already; a 2026-07-28 call's has
	// no session of a client's to carry it).
	ended := "the MCP server process exited (" + status + ")"
	closing := u.b.phaseNow() == phaseClosed

	u.mu.Lock()
	if u.child == child {
		u.child = nil
	}
	stopping := u.stopping
	unresponsive := u.unresponsive == child
	exited := u.exitCounterLocked()
	data := map[string]any{"exitStatus": status}
	if len(tail) > 0 {
		data["stderr"] = strings.Join(tail, "\n")
	}
	if closing && stopping {
		ended = reasonShutdown
	}
	ending := u.failAllLocked(ended, data)
	if u.role.multiplexed() {
		u.initFailedLocked(child, &Error{Kind: KindUnavailable, Code: CodeChildExited,
			Message: "the MCP server exited (" + status + ") before it initialized; try again shortly"}, false)
	}
	restart := u.role.multiplexed() && !stopping && u.breakerLocked()
	if !restart {
		if u.role.multiplexed() {
			down := ErrSharedDown
			if stopping {
				down = ErrClosing
			}
			u.downLocked(down)
		}
		ending = ending[:0]
		for s := range u.sessions {
			if s.endReason == "" {
				s.endReason = "the MCP server process exited (" + status + ")"
			}
			ending = append(ending, s)
		}
	}
	u.mu.Unlock()
	if !restart {
		u.giveSlot() // gone, and nothing follows it; a restart keeps the slot
	}

	switch {
	case unresponsive:
		u.b.stats.ChildrenUnresponsive.Add(1)
		u.logger().Info("child stopped: it could no longer answer", "child_pid", child.Pid(), "child_exit", status, "restart", restart)
	case stopping:
		u.b.stats.ChildrenExitedOK.Add(1)
		exited.Add(1)
		u.logger().Info("child stopped", "child_pid", child.Pid(), "child_exit", status)
	case u.role.multiplexed():
		u.b.stats.ChildrenCrashed.Add(1)
		u.logger().Warn("the shared child exited", "child_pid", child.Pid(), "child_exit", status, "stderr_tail", tail, "restart", restart)
	default:
		u.b.stats.ChildrenCrashed.Add(1)
		u.logger().Warn("child exited; session ended", "child_exit", status, "child_pid", child.Pid(), "stderr_tail", tail)
	}
	for _, s := range ending {
		s.end()
	}
	if (len(ending) == 0 && !u.role.multiplexed() && !stopping) || (stopping && !restart) {
		// A waiting child died, or a child the bridge stopped gave its
		// slot back: the warm pool may refill.
		u.b.kickPool()
	}
	if restart {
		u.restart()
	}
}

// waitExit waits for the child to exit. One that closes its stdout and
// runs on can never answer again: it is stopped (stdoutClosed). Stdout
// also ends just before an exiting child is reaped, so the exit is given
// the stop grace to show first.
func (u *upstream) waitExit(child child) {
	select {
	case <-child.Done():
		return
	case <-child.StdoutClosed():
	}
	grace := u.b.cfg.StopGrace
	if grace <= 0 {
		grace = stdio.DefaultStopGrace
	}
	t := time.NewTimer(grace)
	select {
	case <-child.Done():
		t.Stop()
		return
	case <-t.C:
	}
	u.mu.Lock()
	stopping := u.stopping
	u.mu.Unlock()
	if stopping {
		// The bridge is stopping it anyway (its session ended, or the
		// bridge closes): the stop sequence is under way, and a slow exit
		// is not a child that stopped answering.
		<-child.Done()
		return
	}
	u.stdoutClosed(child)
	<-child.Done()
}

// stdoutClosed handles a child that closed its stdout and runs on: it can
// no longer answer.
func (u *upstream) stdoutClosed(child child) {
	u.unanswerable(child, "the MCP server closed its stdout and can no longer answer",
		"the MCP server closed its stdout but is still running; stopping it")
}

// unanswerable handles a child that runs on but can no longer serve (it
// closed its stdout, or stopped reading its stdin), once per child: every
// request in flight fails now with -32005, reason and the last lines of
// its stderr, and it is stopped with the grace sequence; a shared child
// is then restarted as after a crash.
func (u *upstream) unanswerable(child child, reason, warn string) {
	u.mu.Lock()
	if u.unresponsive == child || u.stopping {
		u.mu.Unlock()
		return // already being stopped
	}
	u.unresponsive, u.unresponsiveWhy = child, reason
	u.mu.Unlock()
	tail := child.StderrTail()
	u.logger().Warn(warn, "child_pid", child.Pid(), "stderr_tail", tail)
	data := map[string]any{}
	if len(tail) > 0 {
		data["stderr"] = strings.Join(tail, "\n")
	}
	u.mu.Lock()
	ending := u.failAllLocked(reason, data)
	if u.role.multiplexed() {
		u.initFailedLocked(child, &Error{Kind: KindUnavailable, Code: CodeChildExited, Message: reason + "; try again shortly"}, false)
	}
	u.mu.Unlock()
	for _, s := range ending {
		s.end()
	}
	u.stopUnresponsive(child, reason)
}

// failAllLocked fails every request in flight with -32005: with reason,
// or the reason its session ended, and data. It returns the sessions of a
// shared child whose initialize it failed: they end, as their clients
// have no session.
func (u *upstream) failAllLocked(reason string, data map[string]any) []*Session {
	var initFailed []*Session
	for id := range u.calls {
		c := u.settleLocked(id)
		if c.sess == nil {
			if c.answered != nil {
				c.answered <- errors.New(reason)
			}
			continue
		}
		c.sess.doneLocked(c)
		r := c.sess.endReason
		if r == "" {
			r = reason
		}
		if c.init && u.role.multiplexed() {
			c.sess.endReason = "its initialize failed: " + r
			initFailed = append(initFailed, c.sess)
		}
		c.sess.answerLocked(c, errorResponse(c.clientID, CodeChildExited, r, data))
	}
	if u.mux != nil {
		clear(u.mux.serverReqs)
	}
	return initFailed
}

// stopUnresponsive stops a child that can no longer serve, with the grace
// sequence, and returns once it is reaped. In per-session mode its session
// ends with reason; a shared child is restarted as after a crash (watch).
func (u *upstream) stopUnresponsive(child child, reason string) {
	u.mu.Lock()
	u.unresponsive, u.unresponsiveWhy = child, reason
	if !u.role.multiplexed() {
		for s := range u.sessions {
			if s.endReason == "" {
				s.endReason = reason
			}
		}
	}
	u.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*u.b.cfg.StopGrace+time.Second)
	defer cancel()
	if err := child.Stop(ctx); err != nil {
		u.logger().Warn("child did not stop in time; killed its group", "err", err)
		child.Kill()
		<-child.Done()
	}
}

// expire settles a request the child did not answer within d: the child
// gets notifications/cancelled for it, so its late answer is dropped, and
// then the client a JSON-RPC error naming the flag (in that order, so a
// client that asks the child next finds the cancel there before it). An
// initialize is not cancelled ("MUST NOT be cancelled"): a child that does
// not answer it cannot serve, so it is stopped (per-session: its session
// ends; shared: the sessions waiting for it get the error, and it is
// restarted as after a crash).
func (u *upstream) expire(id int64, c *call, d time.Duration) {
	u.mu.Lock()
	if u.calls[id] != c {
		u.mu.Unlock()
		return // answered meanwhile
	}
	if c.init {
		u.settleLocked(id)
	}
	// Any other request stays in flight while its cancel is written, which
	// can take as long as a stalled child lets it: if the child dies or is
	// found unresponsive meanwhile, failAllLocked answers it with why;
	// if it answers after all, that answer goes out; else the timeout
	// error below. Exactly one of them, never none.
	child := u.child
	u.mu.Unlock()
	u.b.stats.RequestsTimedOut.Add(1)
	flag := "--request-timeout"
	if c.init {
		flag = "--init-timeout"
	}
	msg := fmt.Sprintf("the MCP server did not answer %s within %v (%s)", c.method, d, flag)
	log := u.logger()
	if c.sess != nil {
		log = c.sess.log
	}
	if c.init {
		log.Warn("the MCP server did not answer initialize in time; stopping it", "child_id", id, "timeout", d)
	} else {
		log.Warn("the MCP server did not answer a request in time; cancelled it", "method", c.method, "child_id", id, "timeout", d)
		if child != nil {
			u.write(child, [][]byte{cancelNotification(id, msg)})
		}
	}

	u.mu.Lock()
	if !c.init {
		if u.calls[id] != c {
			u.mu.Unlock()
			return // answered or failed while the cancel was written
		}
		u.settleLocked(id)
	}
	if c.sess != nil {
		c.sess.doneLocked(c)
		c.sess.touchLocked() // the session idles from now, not from its last message
		if !c.sess.closed {
			c.sess.answerLocked(c, errorResponse(c.clientID, CodeRequestTimeout, msg, nil))
		}
	} else if c.answered != nil {
		c.answered <- &Error{Kind: KindUnavailable, Code: CodeRequestTimeout, Message: msg}
	}
	// A restart's own initialize (answered) fails the restart instead.
	stop := c.init && c.answered == nil && child != nil && u.child == child && !u.stopping
	if stop && u.role.multiplexed() {
		u.initFailedLocked(child, &Error{Kind: KindUnavailable, Code: CodeRequestTimeout, Message: msg}, false)
		if c.sess != nil && c.sess.endReason == "" {
			c.sess.endReason = "its initialize failed: " + msg
		}
	}
	u.mu.Unlock()
	if !stop {
		return
	}
	if c.sess != nil && u.role.multiplexed() {
		c.sess.end() // its client has no session
	}
	u.stopUnresponsive(child, msg)
}

// cancelNotification is notifications/cancelled for the child's request id.
func cancelNotification(id int64, reason string) []byte {
	type params struct {
		RequestID int64  `json:"requestId"`
		Reason    string `json:"reason"`
	}
	b, _ := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  params `json:"params"`
	}{"2.0", methodCancelled, params{id, reason}})
	return b
}

// Restart policy of a shared child.
const (
	restartMin   = 100 * time.Millisecond
	restartMax   = 10 * time.Second
	breakerCount = 5           // crashes within breakerSpan trip the breaker
	breakerSpan  = time.Minute // ...
)

// breakerLocked records a crash and reports whether another restart is
// allowed: not after breakerCount crashes within breakerSpan.
func (u *upstream) breakerLocked() bool {
	now := u.b.cfg.Now()
	keep := u.mux.crashes[:0]
	for _, t := range u.mux.crashes {
		if now.Sub(t) < breakerSpan {
			keep = append(keep, t)
		}
	}
	u.mux.crashes = append(keep, now)
	if len(u.mux.crashes) >= breakerCount {
		u.mux.dead = true
		u.logger().Error("the shared MCP server keeps crashing; not restarting it (crash-loop breaker)", "crashes", len(u.mux.crashes), "within", breakerSpan)
		return false
	}
	return true
}

// restart starts a shared child again after a backoff, initializes it with
// the parameters the first session used, and restores subscriptions and
// the log level, so sessions continue.
func (u *upstream) restart() {
	u.mu.Lock()
	backoff := restartMin << (len(u.mux.crashes) - 1)
	u.mu.Unlock()
	backoff = min(backoff, restartMax)
	u.logger().Info("restarting the shared MCP server", "after", backoff)
	t := time.NewTimer(backoff)
	select {
	case <-t.C:
	case <-u.b.shutdown:
		t.Stop()
		u.giveSlot() // kept for the restart that will not be
		u.mu.Lock()
		u.downLocked(ErrClosing)
		u.mu.Unlock()
		u.endAll()
		return
	}
	u.mu.Lock()
	u.mux.restarts++
	u.mu.Unlock()
	u.b.stats.ChildrenRestarted.Add(1)
	err := u.startWith(u.logger(), u.reinitialize)
	switch {
	case err == nil:
		u.mu.Lock()
		if u.mux.initResult != nil && u.child != nil {
			u.mux.gate.settle(nil) // re-initialized, and now taking requests
		}
		u.mu.Unlock()
	case errors.Is(err, ErrClosing):
		// The bridge closed meanwhile.
		u.mu.Lock()
		u.downLocked(ErrClosing)
		u.mu.Unlock()
		u.endAll()
	case errors.Is(err, errNotStarted):
		u.logger().Error("cannot restart the shared MCP server", "err", err)
		u.mu.Lock()
		u.mux.dead = true
		u.downLocked(ErrSharedDown)
		u.mu.Unlock()
		u.endAll()
	default:
		u.logger().Warn("the restarted MCP server failed to re-initialize", "err", err)
	}
}

// errNotStarted wraps a failure to start the process at all.
var errNotStarted = errors.New("the MCP server process did not start")

// reinitialize replays to a restarted shared child what the sessions on
// it rely on: initialize with the first session's parameters (waiting for
// its answer, within --init-timeout: expire), initialized, the
// subscriptions and the log level.
func (u *upstream) reinitialize(child child) error {
	u.mu.Lock()
	if u.mux.initParams == nil {
		u.mu.Unlock()
		return nil
	}
	answered := make(chan error, 1)
	line := u.ownRequestLocked(MethodInitialize, u.mux.initParams, &call{init: true, answered: answered})
	u.mu.Unlock()
	if err := child.Write(line); err != nil {
		return err
	}
	// The child's death answers too (watch fails what is in flight).
	select {
	case err := <-answered:
		if err != nil {
			return err
		}
	case <-u.b.shutdown:
		return ErrClosing
	}
	u.mu.Lock()
	u.mux.initSent = true
	lines := [][]byte{[]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)}
	for uri := range u.mux.subs {
		p, _ := json.Marshal(map[string]string{"uri": uri})
		lines = append(lines, u.ownRequestLocked("resources/subscribe", p, nil))
	}
	if u.mux.level != "" {
		p, _ := json.Marshal(map[string]string{"level": u.mux.level})
		lines = append(lines, u.ownRequestLocked("logging/setLevel", p, nil))
	}
	u.mu.Unlock()
	for _, l := range lines {
		if err := child.Write(l); err != nil {
			return err
		}
	}
	return nil
}

// endAll ends every session of the upstream.
func (u *upstream) endAll() {
	u.mu.Lock()
	var all []*Session
	for s := range u.sessions {
		all = append(all, s)
	}
	u.mu.Unlock()
	for _, s := range all {
		s.end()
	}
}

// stop stops the child for good (per-session: the session ended; shared:
// the bridge closes).
func (u *upstream) stop(ctx context.Context) {
	u.mu.Lock()
	u.stopping = true
	child := u.child
	u.mu.Unlock()
	if child == nil {
		return
	}
	if err := child.Stop(ctx); err != nil {
		u.logger().Warn("child did not stop in time; killed its group", "err", err)
		child.Kill()
		<-child.Done()
	}
}
