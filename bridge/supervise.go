package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcp-bridge/mcp-bridge/stdio"
)

// The life of a child: its exit watched and its requests failed with why,
// a child that can no longer answer stopped, a request that is not
// answered in time expired, a shared child restarted after a crash
// (within its breaker) and re-initialized. Routing what it says is
// route.go's; this file is what happens when it says nothing more.

// watch handles the child's end: every request in flight fails at once
// with the exit status and the last lines of stderr. A child of one
// client's ends its clients with it; a shared child is restarted, within
// its breaker.
func (u *upstream) watch(child child) {
	u.waitExit(child)
	x := exited{child: child, status: exitStatus(child.Err()), tail: child.StderrTail()}
	closing := u.b.phaseNow() == phaseClosed
	u.mu.Lock()
	u.exitedLocked(&x, closing)
	u.mu.Unlock()
	if !x.restart {
		u.giveSlot() // gone, and nothing follows it; a restart keeps the slot
	}
	u.logExit(&x)
	for _, p := range x.ending {
		p.end()
	}
	if (len(x.ending) == 0 && !u.role.multiplexed() && !x.stopping) || (x.stopping && !x.restart) {
		// A waiting child died, or a child the bridge stopped gave its
		// slot back: the warm pool may refill.
		u.b.kickPool()
	}
	if x.restart {
		u.restart()
	}
}

// exited is what a child's end means to its upstream (exitedLocked).
type exited struct {
	child        child
	status       string   // how it ended, in os.ProcessState's words
	tail         []string // the last lines of its stderr
	stopping     bool     // the bridge stopped it
	unresponsive bool     // the bridge stopped it because it could no longer answer
	restart      bool     // a shared child, started again
	counter      *atomic.Int64
	ending       []party // the clients that end with it
}

// exitedLocked records the child's end: what was in flight fails, a
// shared child's sessions waiting for it learn it did not initialize, and
// unless it restarts, its clients end. Called with mu held.
func (u *upstream) exitedLocked(x *exited, closing bool) {
	if u.child == x.child {
		u.child = nil
	}
	x.stopping, x.unresponsive = u.stopping, u.unresponsive == x.child
	x.counter = u.exitCounterLocked()
	data := map[string]any{"exitStatus": x.status}
	if len(x.tail) > 0 {
		data["stderr"] = strings.Join(x.tail, "\n")
	}
	// A child the bridge's shutdown stopped did not fail: its requests
	// are told the bridge is shutting down, whoever they are for (a
	// session's ended with that reason already; a 2026-07-28 call's has
	// no session of a client's to carry it).
	ended := "the MCP server process exited (" + x.status + ")"
	if closing && x.stopping {
		ended = reasonShutdown
	}
	x.ending = u.failAllLocked(ended, data)
	if u.role.multiplexed() {
		u.initFailedLocked(x.child, &Error{Kind: KindUnavailable, Code: CodeChildExited,
			Message: "the MCP server exited (" + x.status + ") before it initialized; try again shortly"}, false)
		x.restart = !x.stopping && u.breakerLocked()
		if !x.restart {
			down := ErrSharedDown
			if x.stopping {
				down = ErrClosing
			}
			u.downLocked(down)
		}
	}
	if !x.restart {
		x.ending = u.endingLocked("the MCP server process exited (" + x.status + ")")
	}
}

// endingLocked says why the child's clients end (reason, to those that do
// not know why yet) and returns them. Called with mu held.
func (u *upstream) endingLocked(reason string) []party {
	ending := make([]party, 0, len(u.parties))
	for p := range u.parties {
		if ps := p.party(); ps.endReason == "" {
			ps.endReason = reason
		}
		ending = append(ending, p)
	}
	return ending
}

// logExit logs and counts a child's end.
func (u *upstream) logExit(x *exited) {
	pid := x.child.Pid()
	switch {
	case x.unresponsive:
		u.b.stats.ChildrenUnresponsive.Add(1)
		u.logger().Info("child stopped: it could no longer answer", "child_pid", pid, "child_exit", x.status, "restart", x.restart)
	case x.stopping:
		u.b.stats.ChildrenExitedOK.Add(1)
		x.counter.Add(1)
		u.logger().Info("child stopped", "child_pid", pid, "child_exit", x.status)
	case u.role.multiplexed():
		u.b.stats.ChildrenCrashed.Add(1)
		u.logger().Warn("the shared child exited", "child_pid", pid, "child_exit", x.status, "stderr_tail", x.tail, "restart", x.restart)
	default:
		u.b.stats.ChildrenCrashed.Add(1)
		u.logger().Warn("child exited; session ended", "child_exit", x.status, "child_pid", pid, "stderr_tail", x.tail)
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
	for _, p := range ending {
		p.end()
	}
	u.stopUnresponsive(child, reason)
}

// failAllLocked fails every request in flight with -32005: with reason,
// or the reason its party is ending, and data. It returns the parties
// that end with it: sessions whose initialize on a shared child failed,
// whose clients have no session.
func (u *upstream) failAllLocked(reason string, data map[string]any) []party {
	var ending []party
	for id := range u.calls {
		c := u.settleLocked(id)
		if c.party == nil {
			if c.answered != nil {
				c.answered <- errors.New(reason)
			}
			continue
		}
		if c.party.takeFailureLocked(c, CodeChildExited, reason, data) {
			ending = append(ending, c.party)
		}
	}
	if u.mux != nil {
		clear(u.mux.serverReqs)
	}
	return ending
}

// stopUnresponsive stops a child that can no longer serve, with the grace
// sequence, and returns once it is reaped. In per-session mode its session
// ends with reason; a shared child is restarted as after a crash (watch).
func (u *upstream) stopUnresponsive(child child, reason string) {
	u.mu.Lock()
	u.unresponsive, u.unresponsiveWhy = child, reason
	if !u.role.multiplexed() {
		u.endingLocked(reason)
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
	msg := timeoutMessage(c, d)
	log := u.logger()
	if c.party != nil {
		log = c.party.party().log
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
	if !c.init && u.calls[id] != c {
		u.mu.Unlock()
		return // answered or failed while the cancel was written
	}
	u.settleLocked(id)
	ends := u.timedOutLocked(c, msg)
	// A restart's own initialize (answered) fails the restart instead.
	stop := c.init && c.answered == nil && child != nil && u.child == child && !u.stopping
	if stop && u.role.multiplexed() {
		u.initFailedLocked(child, &Error{Kind: KindUnavailable, Code: CodeRequestTimeout, Message: msg}, false)
	}
	u.mu.Unlock()
	if ends {
		c.party.end() // its client has no session
	}
	if stop {
		u.stopUnresponsive(child, msg)
	}
}

// timeoutMessage is what a client is told of its request c that the
// child did not answer within d, naming the flag that says so.
func timeoutMessage(c *call, d time.Duration) string {
	flag := "--request-timeout"
	if c.init {
		flag = "--init-timeout"
	}
	return fmt.Sprintf("the MCP server did not answer %s within %v (%s)", c.method, d, flag)
}

// timedOutLocked answers c, settled, with the timeout error msg, and
// reports whether its party ends with it. Called with mu held.
func (u *upstream) timedOutLocked(c *call, msg string) bool {
	if c.party != nil {
		return c.party.takeFailureLocked(c, CodeRequestTimeout, msg, nil)
	}
	if c.answered != nil {
		c.answered <- &Error{Kind: KindUnavailable, Code: CodeRequestTimeout, Message: msg}
	}
	return false
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
		u.b.noteRestart()
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

// endAll ends every client of the upstream.
func (u *upstream) endAll() {
	u.mu.Lock()
	all := make([]party, 0, len(u.parties))
	for p := range u.parties {
		all = append(all, p)
	}
	u.mu.Unlock()
	for _, p := range all {
		p.end()
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
