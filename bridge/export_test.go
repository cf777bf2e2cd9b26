package bridge

// What the tests of package bridge_test, which drive a bridge through
// the HTTP layer, need of its insides.

// NewInMemory is New with in-memory children (memchild_test.go), for
// tests that serve thousands of principals.
func NewInMemory(cfg Config) (*Bridge, error) { return newBridge(cfg, memStart) }

// PrincipalEntries counts the entries the bridge keeps by principal: its
// modern pools (but the one of shared and stateless mode, which is
// everyone's), their warm leases' owners, the principals with calls on
// leased children, and the parked calls.
func (b *Bridge) PrincipalEntries() int {
	n := 0
	b.mu.Lock()
	for _, p := range b.pools {
		p.mu.Lock()
		n += len(p.idle)
		p.mu.Unlock()
		if b.cfg.Mode != ModeShared && !b.cfg.Stateless {
			n++
		}
	}
	b.mu.Unlock()
	b.exMu.Lock()
	n += len(b.leasedBy) + len(b.exchanges)
	b.exMu.Unlock()
	return n
}
