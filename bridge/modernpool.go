package bridge

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Which child serves a modern request. Modern clients have no session, so
// the children that serve them are the bridge's own, in a pool per
// partition: in shared and stateless mode one for the whole server, whose
// base is the shared child; in per-session and per-identity mode one per
// principal, whose children run with that principal's --claim-env
// variables, so that no principal's request runs in a process that
// another principal's did, as the operator chose for 2025 sessions.
//
//   - The pool's base child takes what needs no client input: discovery,
//     lists, completion, listens, and the calls of clients that declared no
//     capability a server may ask them to use. In shared and stateless mode
//     it is the shared child, the one 2025 sessions use too.
//   - A tools/call, prompts/get or resources/read from a client that
//     declared sampling, elicitation or roots gets a child leased to that
//     call alone (modernPool.lease): whatever the child asks while the call
//     runs is that call's, without guessing, and reaches its client as an
//     input_required result (MRTR). A lease goes back to its pool when the
//     call is answered, for the same principal's next call; one whose call
//     was cancelled or abandoned is stopped instead, as its late messages
//     could reach the next call.
//
// What the child speaks is found once per bridge (childEra): a child that
// answers server/discover is modern, and its requests pass through; any
// other is legacy, initialized by the bridge with profileParams, and
// translated.

// modernEra is the state of the 2026-07-28 era, a part of the Bridge:
// its pools, the calls in progress, listening and parked, and the key
// that seals the requestStates it relays. pools, listens and running are
// guarded by the bridge's mutex.
type modernEra struct {
	pools    map[string]*modernPool // by partition
	childEra atomic.Int32           // what the children speak, once probed
	probeMu  sync.Mutex             // one probe at a time
	listens  map[*ModernCall]bool   // open listens, which Drain ends
	running  map[*ModernCall]bool   // calls in progress on a child (Snapshot)
	exMu     sync.Mutex             // guards exchanges and leasedBy; a leaf
	// exchanges are the calls parked for their clients' retries, by
	// requestState handle. leasedBy counts the calls on leased children,
	// running or parked, by owner (an owner with none has no entry), and
	// leased all of them (enterLeased).
	exchanges map[string]*exchange
	leasedBy  map[string]int
	leased    int
	// stateKey seals the modern child's requestStates the bridge relays
	// (wrapState, sealed.go); random, this process's own. spent holds the
	// ids of the wrappers used (until they expire), under exMu;
	// spentSweep is the size at which expired ones are swept.
	stateKey   [32]byte
	stateAEAD  cipher.AEAD
	spent      map[[16]byte]int64
	spentSweep int
}

// init makes the era's maps and its sealing key.
func (e *modernEra) init() error {
	e.pools = make(map[string]*modernPool)
	e.listens = make(map[*ModernCall]bool)
	e.running = make(map[*ModernCall]bool)
	e.exchanges = make(map[string]*exchange)
	e.leasedBy = make(map[string]int)
	if _, err := rand.Read(e.stateKey[:]); err != nil {
		return fmt.Errorf("bridge: requestState key: %w", err)
	}
	aead, err := newStateAEAD(e.stateKey[:])
	if err != nil {
		return fmt.Errorf("bridge: requestState cipher: %w", err)
	}
	e.stateAEAD, e.spent, e.spentSweep = aead, map[[16]byte]int64{}, 1024
	return nil
}

// childEra is what a server's children speak.
type childEra int32

const (
	eraUnknown childEra = iota
	eraLegacy           // 2025: initialize, requests of its own; translated
	eraModern           // 2026-07-28: answers discover; passed through
)

// ChildProtocol values (Config.ChildProtocol).
const (
	ChildProtocolAuto   = "auto"
	ChildProtocolLegacy = "legacy"
	ChildProtocolModern = "modern"
)

// Defaults of the modern era's settings.
const (
	DefaultInputTTL  = 2 * time.Minute
	DefaultMaxParked = 16
	// maxParkedTotal bounds the calls on leased children (running or
	// parked) of all principals together.
	maxParkedTotal = 1024
	// maxIdleLeases bounds the leased children a principal keeps warm.
	maxIdleLeases = 4
	// probeTimeout bounds the wait for the child's answer to the probe.
	probeTimeout = 10 * time.Second
)

// profileParams are the bridge's own initialize for a legacy child that
// serves modern clients. It declares every capability a server may ask a
// client to use, so the child offers the tools that need them; which
// client answers, and whether it can, is decided per call: a client that
// did not declare what the child asks gets -32021.
const profileParams = `{"protocolVersion":"2025-11-25","capabilities":{"sampling":{},"elicitation":{"form":{},"url":{}},"roots":{}},"clientInfo":{"name":"mcp-bridge","version":"1"}}`

// probeParams are the params of the bridge's server/discover probe.
const probeParams = `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"mcp-bridge","version":"1"}}}`

// modernPool is the children that serve one partition's modern clients.
type modernPool struct {
	b   *Bridge
	key string // the partition: "" (the whole server) or an owner's key
	env []string

	mu      sync.Mutex
	base    *upstream              // nil until first use; b.shared in shared mode
	ownBase bool                   // the pool started base, and stops it
	idle    map[string][]idleLease // warm leases, by owner key, oldest first
	leased  map[*upstream]string   // leases in use (by a call or a parked call), to their owner's key
	active  int                    // calls in progress, parked ones included
	used    time.Time              // when the last call ended
	headers toolHeaders            // the tools' Mcp-Param headers (params.go)
	// toolsFetched is when the bridge last read the tool list itself.
	toolsFetched time.Time
}

// idleLease is a warm leased child and when its last call ended.
type idleLease struct {
	u     *upstream
	since time.Time
}

// acquirePool returns the pool that serves owner's modern requests, with
// a use of it for one call, and the function that gives that use back
// (once, however often it is called).
func (b *Bridge) acquirePool(owner Owner, env []string) (*modernPool, func()) {
	p := b.modernPool(owner, env)
	var once sync.Once
	return p, func() { once.Do(p.done) }
}

// modernPool returns the pool that serves owner's modern requests, with
// one more use of it (done gives it back).
func (b *Bridge) modernPool(owner Owner, env []string) *modernPool {
	key := ""
	if b.cfg.Mode != ModeShared && !b.cfg.Stateless {
		key = owner.Key
	} else {
		env = nil // the shared child carries nobody's claims
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.pools[key]
	if p == nil {
		p = &modernPool{b: b, key: key, env: env, idle: map[string][]idleLease{}, leased: map[*upstream]string{}}
		b.pools[key] = p
	}
	p.mu.Lock()
	p.active++
	p.mu.Unlock()
	return p
}

// done ends one call's use of the pool.
func (p *modernPool) done() {
	p.mu.Lock()
	p.active--
	p.used = p.b.cfg.Now()
	empty := p.emptyLocked()
	p.mu.Unlock()
	if empty {
		p.b.forgetPool(p)
	}
}

// emptyLocked reports whether the pool holds no call and no child:
// nothing a principal's next request needs that a new pool lacks (its
// tool headers are learnt again from the new base child). Called with
// p.mu held.
func (p *modernPool) emptyLocked() bool {
	return p.active == 0 && p.base == nil && len(p.idle) == 0 && len(p.leased) == 0
}

// forgetPool drops a principal's pool from the bridge's map once it holds
// no call and no child, so the map holds the principals with something
// live, not every JWT subject ever seen. The one pool of shared and
// stateless mode stays: it serves everyone on the shared child.
func (b *Bridge) forgetPool(p *modernPool) {
	if b.cfg.Mode == ModeShared || b.cfg.Stateless {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	// A call that found the pool meanwhile made it active again
	// (modernPool counts it under b.mu).
	if b.pools[p.key] == p && p.emptyLocked() {
		delete(b.pools, p.key)
	}
}

// ready returns the pool's base child, started, its era known and, if it
// is legacy, initialized.
func (p *modernPool) ready(ctx context.Context) (*upstream, childEra, error) {
	u, err := p.baseUpstream(ctx)
	if err != nil {
		return nil, eraUnknown, err
	}
	b := p.b
	if u.initializing() {
		// A 2025 session started it: the probe waits for its initialize,
		// which a legacy server may need before any other request.
		if err := b.waitInit(ctx, u.gateNow(), nil); err != nil {
			return nil, eraUnknown, err
		}
	}
	era, err := b.era(ctx, u)
	if err != nil {
		return nil, eraUnknown, err
	}
	if era == eraLegacy {
		if err := b.initShared(ctx, u, profileParams); err != nil {
			return nil, era, err
		}
	}
	return u, era, nil
}

// baseUpstream returns the pool's base child, starting it on first use
// within the process budget and the spawn turns, as a session's child.
func (p *modernPool) baseUpstream(ctx context.Context) (*upstream, error) {
	b := p.b
	if b.cfg.Mode == ModeShared || b.cfg.Stateless {
		u, err := b.sharedUpstream(ctx, p.key)
		if err != nil {
			return nil, err
		}
		return u, nil
	}
	u, err := withRoom(ctx, b, p.key, func() (*upstream, error) {
		// p.mu is held while the base starts, so the pool starts one; it
		// is let go while room is made, which takes the pools' locks.
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.base != nil {
			dead, stopping := p.base.going()
			switch {
			case dead:
				// Its crash-loop breaker tripped: as for the shared
				// child, the server is down rather than started again
				// per request.
				return nil, ErrSharedDown
			case !stopping:
				return p.base, nil
			}
		}
		u := newChildFor(b, roleModernBase, p.env)
		if !u.takeSlot() {
			return nil, errNoSlot
		}
		release, err := b.spawnTurn(ctx)
		if err != nil {
			u.giveSlot()
			return nil, err
		}
		defer release()
		if err := u.start(b.log.With("serves", "2026-07-28 clients")); err != nil {
			return nil, err
		}
		p.base, p.ownBase = u, true
		return u, nil
	})
	if err != nil {
		return nil, errCannotStart(err)
	}
	return u, nil
}

// era is what the server's children speak: Config.ChildProtocol, or what
// the first probe found (probe). Probes do not overlap.
func (b *Bridge) era(ctx context.Context, u *upstream) (childEra, error) {
	switch b.cfg.ChildProtocol {
	case ChildProtocolLegacy:
		return eraLegacy, nil
	case ChildProtocolModern:
		u.speak(eraModern, nil)
		return eraModern, nil
	}
	if e := childEra(b.childEra.Load()); e != eraUnknown {
		if e == eraModern {
			u.speak(eraModern, nil)
		}
		return e, nil
	}
	b.probeMu.Lock()
	defer b.probeMu.Unlock()
	if e := childEra(b.childEra.Load()); e != eraUnknown {
		if e == eraModern {
			u.speak(eraModern, nil)
		}
		return e, nil
	}
	e, err := b.probe(ctx, u)
	if err != nil {
		return eraUnknown, err
	}
	b.childEra.Store(int32(e))
	if e == eraModern {
		u.speak(eraModern, nil)
	}
	return e, nil
}

// probe sends the child server/discover with a modern _meta: "a
// DiscoverResult ... means modern; any other error or a timeout means
// legacy", judged by the answer, never by one error code. A child that
// dies on it is legacy too, and is restarted by its upstream.
func (b *Bridge) probe(ctx context.Context, u *upstream) (childEra, error) {
	res, err := u.ask(ctx, "server/discover", []byte(probeParams), min(probeTimeout, max(b.cfg.InitTimeout, time.Second)))
	switch {
	case errors.Is(err, ErrClosing), errors.Is(err, errRestarting):
		return eraUnknown, err
	case ctx.Err() != nil:
		return eraUnknown, errClientGone
	}
	era := eraLegacy
	if err == nil {
		var r struct {
			SupportedVersions []string `json:"supportedVersions"`
		}
		if json.Unmarshal(res, &r) == nil && slices.ContainsFunc(r.SupportedVersions, servedModern) {
			era = eraModern
			u.speak(era, res) // what it can do (capability)
		}
	}
	b.log.Info("probed the MCP server's protocol era with server/discover", "era", eraName(era), "answer_error", errString(err))
	return era, nil
}

func eraName(e childEra) string {
	switch e {
	case eraLegacy:
		return "legacy (2025: initialize; the bridge translates for 2026-07-28 clients)"
	case eraModern:
		return "modern (2026-07-28: requests pass through)"
	}
	return "unknown"
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// lease returns a legacy child for one call of owner's, its own until the
// call is over: a warm one of owner's, or a new one initialized with
// profileParams, within MaxChildren. The call's place under --max-parked
// is taken first: a call over it costs no process. unlease gives the
// child back, once: to owner's warm ones if it may serve again (reuse),
// else it is stopped.
func (p *modernPool) lease(ctx context.Context, owner string, base *upstream) (u *upstream, unlease func(reuse bool), err error) {
	if err := p.b.enterLeased(owner); err != nil {
		return nil, nil, err
	}
	u, err = p.leaseChild(ctx, owner, base)
	if err != nil {
		p.b.leaveLeased(owner)
		return nil, nil, err
	}
	var once sync.Once
	return u, func(reuse bool) { once.Do(func() { p.release(u, owner, reuse) }) }, nil
}

// enterLeased takes a place for a call of owner's on a leased child,
// within MaxParked and maxParkedTotal.
func (b *Bridge) enterLeased(owner string) *Error {
	b.exMu.Lock()
	defer b.exMu.Unlock()
	switch {
	case b.leasedBy[owner] >= b.cfg.MaxParked:
		return &Error{Kind: KindTooMany, Code: CodeInternalError,
			Message: "too many calls of this principal may wait for its clients' input (--max-parked); answer or abandon one first"}
	case b.leased >= maxParkedTotal:
		return &Error{Kind: KindUnavailable, Code: CodeInternalError,
			Message: "too many calls may wait for their clients' input; try again shortly"}
	}
	b.leasedBy[owner]++
	b.leased++
	return nil
}

// leaveLeased gives back the place enterLeased took; an owner with none
// left is forgotten.
func (b *Bridge) leaveLeased(owner string) {
	b.exMu.Lock()
	defer b.exMu.Unlock()
	if b.leasedBy[owner]--; b.leasedBy[owner] <= 0 {
		delete(b.leasedBy, owner)
	}
	b.leased--
}

// leaseChild is lease's child: a warm one, or a new one.
func (p *modernPool) leaseChild(ctx context.Context, owner string, base *upstream) (*upstream, error) {
	b := p.b
	p.mu.Lock()
	for list := p.idle[owner]; len(list) > 0; list = p.idle[owner] {
		u := list[len(list)-1].u // the warmest
		p.setIdleLocked(owner, list[:len(list)-1])
		if u.alive() {
			p.leased[u] = owner
			p.mu.Unlock()
			return u, nil
		}
	}
	p.mu.Unlock()
	u := newLease(b, p.env, base)
	if err := b.reserve(ctx, u, owner); err != nil {
		return nil, err
	}
	release, err := b.spawnTurn(ctx)
	if err != nil {
		u.giveSlot()
		return nil, err
	}
	defer release()
	log := b.log.With("leased", true)
	u.setLogger(log)
	if err := u.start(log); err != nil {
		return nil, errCannotStart(err)
	}
	if err := u.initializeAlone(ctx, profileParams); err != nil {
		b.track(func() { u.stop(context.Background()) }) // its watch ends with it
		return nil, err
	}
	p.mu.Lock()
	p.leased[u] = owner
	p.mu.Unlock()
	return u, nil
}

// release gives a lease back after its call: to the owner's warm ones if
// it can serve again (reuse), else it is stopped. (lease's unlease.)
func (p *modernPool) release(u *upstream, owner string, reuse bool) {
	p.b.leaveLeased(owner)
	p.mu.Lock()
	delete(p.leased, u)
	if reuse && u.alive() && len(p.idle[owner]) < maxIdleLeases {
		p.idle[owner] = append(p.idle[owner], idleLease{u, p.b.cfg.Now()})
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.b.track(func() { u.stop(context.Background()) })
}

// setIdleLocked sets owner's warm leases; an owner with none left is
// forgotten (the shared pool keeps them by owner, for every principal).
// Called with p.mu held.
func (p *modernPool) setIdleLocked(owner string, list []idleLease) {
	if len(list) == 0 {
		delete(p.idle, owner)
		return
	}
	p.idle[owner] = list
}

// reclaim takes out of the pool, for the caller to stop, the warm leases
// no call used for d, and its base child of its own once the pool has had
// no call for d: the janitor's reclaiming of what nobody uses.
func (p *modernPool) reclaim(now time.Time, d time.Duration) []*upstream {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*upstream
	for k, list := range p.idle {
		keep := list[:0]
		for _, l := range list {
			if now.Sub(l.since) >= d {
				out = append(out, l.u)
			} else {
				keep = append(keep, l)
			}
		}
		p.setIdleLocked(k, keep)
	}
	if p.active == 0 && now.Sub(p.used) >= d && p.ownBase && p.base != nil && len(p.leased) == 0 {
		out = append(out, p.base)
		p.base = nil
	}
	return out
}

// takeIdleLease takes the warm lease idle longest, of any pool and owner,
// out of its pool, for the caller to stop: the room a process needs under
// --max-children (makeRoom). Nil if there is none.
func (b *Bridge) takeIdleLease() *upstream {
	b.mu.Lock()
	pools := make([]*modernPool, 0, len(b.pools))
	for _, p := range b.pools {
		pools = append(pools, p)
	}
	b.mu.Unlock()
	for {
		var oldest *modernPool
		var owner string
		var at time.Time
		for _, p := range pools {
			p.mu.Lock()
			for k, list := range p.idle {
				if len(list) > 0 && (oldest == nil || list[0].since.Before(at)) {
					oldest, owner, at = p, k, list[0].since
				}
			}
			p.mu.Unlock()
		}
		if oldest == nil {
			return nil
		}
		oldest.mu.Lock()
		list := oldest.idle[owner]
		if len(list) == 0 || !list[0].since.Equal(at) {
			oldest.mu.Unlock()
			continue // taken meanwhile: look again
		}
		u := list[0].u
		oldest.setIdleLocked(owner, list[1:])
		oldest.mu.Unlock()
		return u
	}
}

// all takes every child out of the pool, for Close to stop.
func (p *modernPool) all() []*upstream {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*upstream
	for _, list := range p.idle {
		for _, l := range list {
			out = append(out, l.u)
		}
	}
	clear(p.idle)
	for u := range p.leased {
		out = append(out, u)
	}
	clear(p.leased)
	if p.ownBase && p.base != nil {
		out = append(out, p.base)
		p.base = nil
	}
	return out
}

// String names the pool in logs.
func (p *modernPool) String() string { return fmt.Sprintf("modern pool %q", p.key) }

// reclaimPools stops the children of modern pools that no call used for
// IdleTimeout: warm leases, and a base child of the pool's own.
func (b *Bridge) reclaimPools(now time.Time) {
	b.mu.Lock()
	var stop []*upstream
	var left []*modernPool
	for _, p := range b.pools {
		stop = append(stop, p.reclaim(now, b.cfg.IdleTimeout)...)
		left = append(left, p)
	}
	b.mu.Unlock()
	for _, p := range left {
		p.mu.Lock()
		empty := p.emptyLocked()
		p.mu.Unlock()
		if empty {
			b.forgetPool(p)
		}
	}
	for _, u := range stop {
		u.logger().Info("modern pool idle; stopping its child", "idle_timeout", b.cfg.IdleTimeout)
		b.track(func() { u.stop(context.Background()) })
	}
}

// poolChild is a child of a modern pool, for Snapshot.
type poolChild struct {
	u        *upstream
	owners   []string // the principals it serves
	everyone bool     // it serves every principal
}

// poolChildren lists the children of the modern pools: each pool's base,
// which serves its partition, and its leases, each the principal's whose
// call it serves or whose warm ones it is.
func (b *Bridge) poolChildren() []poolChild {
	b.mu.Lock()
	pools := make([]*modernPool, 0, len(b.pools))
	for _, p := range b.pools {
		pools = append(pools, p)
	}
	b.mu.Unlock()
	var out []poolChild
	for _, p := range pools {
		p.mu.Lock()
		if p.base != nil {
			if p.key == "" {
				out = append(out, poolChild{u: p.base, everyone: true})
			} else {
				out = append(out, poolChild{u: p.base, owners: []string{p.key}})
			}
		}
		for u, owner := range p.leased {
			out = append(out, poolChild{u: u, owners: []string{owner}})
		}
		for owner, list := range p.idle {
			for _, l := range list {
				out = append(out, poolChild{u: l.u, owners: []string{owner}})
			}
		}
		p.mu.Unlock()
	}
	return out
}

// ModernSnapshot counts the modern era's parked calls, leased children
// and listens.
func (b *Bridge) ModernSnapshot() ModernCounts {
	var m ModernCounts
	b.exMu.Lock()
	m.Parked = len(b.exchanges)
	b.exMu.Unlock()
	b.mu.Lock()
	m.Listens = len(b.listens)
	pools := make([]*modernPool, 0, len(b.pools))
	for _, p := range b.pools {
		pools = append(pools, p)
	}
	b.mu.Unlock()
	for _, p := range pools {
		p.mu.Lock()
		m.Leased += len(p.leased)
		p.mu.Unlock()
	}
	return m
}

// poolsChildrenLocked takes every child out of every pool, for Close to
// stop. Called with b.mu held.
func (b *Bridge) poolsChildrenLocked() []*upstream {
	var ups []*upstream
	for _, p := range b.pools {
		ups = append(ups, p.all()...)
	}
	return ups
}

// poolSnapshots describes the children of the modern pools that seen
// does not have yet (a pool's base may be the shared child), and adds
// them to it.
func (b *Bridge) poolSnapshots(seen map[*upstream]bool) []ChildSnapshot {
	var out []ChildSnapshot
	for _, pc := range b.poolChildren() {
		if seen[pc.u] {
			continue // the shared child: listed already
		}
		seen[pc.u] = true
		if c, ok := pc.u.snapshot(pc.everyone); ok {
			c.owners = pc.owners
			out = append(out, c)
		}
	}
	return out
}
