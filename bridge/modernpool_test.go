package bridge

import (
	"context"
	"strings"
	"testing"
	"time"
)

// modernCall serves one 2026-07-28 tools/call of the badchild's echo as
// owner, with capabilities caps, and returns its final message.
func modernEcho(t *testing.T, b *Bridge, owner string, caps string) string {
	t.Helper()
	m := mustParse(t, modernBody("1", "tools/call", `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":`+caps, `"name":"echo","arguments":{"message":"hi"}`))
	h := hdr("tools/call")
	h.Name, h.HasName = "echo", true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a safety net
	defer cancel()
	mc, err := b.Modern(ctx, ModernRequest{Message: m, Headers: h, Owner: Owner{Key: owner, Name: owner}})
	if err != nil {
		t.Fatalf("%s: %v", owner, err)
	}
	defer mc.Close()
	for {
		evs, final, err := mc.Next(ctx, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", owner, err)
		}
		if final {
			return string(evs[len(evs)-1].Data)
		}
	}
}

// TestLeases: a call from a client that may be asked for input runs on a
// child leased to it; the child is kept warm for the same principal's
// next call, never given to another principal's (in per-session mode each
// principal has a pool of its own, base child included); when
// --max-children is reached, the warm child idle longest makes room; the
// janitor reclaims warm children nobody used for --idle-timeout, and a
// pool's base once the pool has had no call for as long.
func TestLeases(t *testing.T) {
	b := logBridge(t, Config{MaxChildren: 3, IdleTimeout: time.Hour})
	const input = `{"sampling":{}}`
	if got := modernEcho(t, b, "alice", input); !strings.Contains(got, `"hi"`) {
		t.Fatalf("alice's call: %s", got)
	}
	// alice's pool: its base child (initialized for it) and her lease.
	if n := b.Children(); n != 2 {
		t.Fatalf("%d children, want alice's base and her lease", n)
	}
	pool := func(owner string) *modernPool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.pools[owner]
	}
	warm := func(owner string) int {
		p := pool(owner)
		if p == nil {
			return 0
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.idle[owner])
	}
	alice := pool("alice")
	if warm("alice") != 1 {
		t.Fatalf("alice's lease is not kept warm")
	}
	alice.mu.Lock()
	alicesLease := alice.idle["alice"][0].u
	alice.mu.Unlock()
	// alice again: her warm child, no new process.
	modernEcho(t, b, "alice", input)
	alice.mu.Lock()
	again := alice.idle["alice"][0].u
	alice.mu.Unlock()
	if again != alicesLease || b.Stats().ChildrenSpawned.Load() != 2 {
		t.Errorf("alice's second call did not reuse her warm child (%d started)", b.Stats().ChildrenSpawned.Load())
	}
	// bob: a pool of his own; its base takes the third process, and at
	// --max-children alice's idle child makes room for his lease.
	if got := modernEcho(t, b, "bob", input); !strings.Contains(got, `"hi"`) {
		t.Fatalf("bob's call: %s", got)
	}
	if warm("alice") != 0 || warm("bob") != 1 {
		t.Errorf("warm children: alice %d, bob %d; want 0 and 1", warm("alice"), warm("bob"))
	}
	// A client that cannot be asked anything runs on its pool's base.
	spawned := b.Stats().ChildrenSpawned.Load()
	modernEcho(t, b, "bob", `{}`)
	if b.Stats().ChildrenSpawned.Load() != spawned {
		t.Error("a call of a client without input capabilities started a child")
	}
	// The janitor's reclaim: bob's warm child and his idle pool's base go
	// once idle long enough.
	stop := pool("bob").reclaim(b.cfg.Now().Add(2*time.Hour), time.Hour)
	if len(stop) != 2 || warm("bob") != 0 {
		t.Errorf("reclaim took %d children, want bob's warm one and his pool's base", len(stop))
	}
	for _, u := range stop {
		u.stop(context.Background())
	}
}
