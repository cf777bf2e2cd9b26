package bridge

import (
	"sync"
	"testing"
	"time"
)

// TestExpiry: when the janitor ends a session, by what its client did. A
// session no client can reach any more (its GET stream closed and nothing
// came since, or it never listened and sent nothing after initialized)
// ends UnreachableTimeout after its client's last contact; any other idle
// session IdleTimeout after its last activity; one with a stream open or
// a request in flight does not count down.
func TestExpiry(t *testing.T) {
	const idle, unreachable = 30 * time.Minute, time.Minute
	type step func(t *testing.T, s *Session, get **Stream)
	send := func(body string) step {
		return func(t *testing.T, s *Session, _ **Stream) {
			t.Helper()
			msgs, _, err := ParseBody([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			st, err := s.Send(msgs, true)
			if err != nil {
				t.Fatal(err)
			}
			if st != nil {
				if _, err := st.Collect(t.Context(), nil); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	initialized := send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	request := send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	listen := func(t *testing.T, s *Session, get **Stream) {
		t.Helper()
		st, err := s.OpenStream()
		if err != nil {
			t.Fatal(err)
		}
		*get = st
	}
	leave := func(_ *testing.T, _ *Session, get **Stream) { (*get).Detach() }
	// A call the transport holds (waiting for a human's approval) is a
	// request the session must live for, though the child has not seen it.
	var release func()
	hold := func(_ *testing.T, s *Session, _ **Stream) { release = s.Hold() }
	let := func(*testing.T, *Session, **Stream) { release(); release() } // twice: the second does nothing

	tests := []struct {
		name        string
		cfg         Config
		steps       []step
		counts      bool          // a countdown runs
		from        string        // what it counts from: "heard" (the client's last contact), "left" (its stream closed), "seen"
		after       time.Duration // how long
		unreachable bool
	}{
		{"abandoned after initialized", Config{}, []step{initialized}, true, "heard", unreachable, true},
		{"it spoke, never listened", Config{}, []step{initialized, request}, true, "seen", idle, false},
		{"it listens", Config{}, []step{initialized, listen}, false, "", 0, false},
		{"it listens and spoke", Config{}, []step{initialized, listen, request}, false, "", 0, false},
		{"its stream closed", Config{}, []step{initialized, listen, request, leave}, true, "left", unreachable, true},
		{"its stream closed, then it spoke", Config{}, []step{initialized, listen, leave, request}, true, "seen", idle, false},
		{"a call held after initialized", Config{}, []step{initialized, hold}, false, "", 0, false},
		{"a call held while its stream is closed", Config{}, []step{initialized, listen, leave, hold}, false, "", 0, false},
		{"a held call let go", Config{}, []step{initialized, hold, let}, true, "seen", idle, false},
		{"unreachable-timeout off", Config{UnreachableTimeout: -1}, []step{initialized}, true, "seen", idle, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			now := time.Unix(1_000_000, 0)
			cfg := tt.cfg
			cfg.IdleTimeout = idle
			if cfg.UnreachableTimeout == 0 {
				cfg.UnreachableTimeout = unreachable
			}
			cfg.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			b := logBridge(t, cfg)
			s := logSession(t, b, "2025-11-25")
			var get *Stream
			for _, step := range tt.steps {
				mu.Lock()
				now = now.Add(time.Second) // each step a second after the last
				mu.Unlock()
				step(t, s, &get)
			}
			at, gone := s.expiry()
			if at.IsZero() != !tt.counts || gone != tt.unreachable {
				t.Fatalf("expiry %v, unreachable %v; want a countdown %v, unreachable %v", at, gone, tt.counts, tt.unreachable)
			}
			if !tt.counts {
				return
			}
			s.up.mu.Lock()
			from := map[string]time.Time{"heard": s.heard, "left": s.getLeft, "seen": s.lastSeen}[tt.from]
			s.up.mu.Unlock()
			if want := from.Add(tt.after); !at.Equal(want) {
				t.Errorf("expires at %v, want %s + %v = %v", at, tt.from, tt.after, want)
			}
		})
	}
}
