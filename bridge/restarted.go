package bridge

import "sync"

// restartSignal tells whoever holds sessions on a bridge's multiplexed
// children (a shared child, a per-identity one) that one of them was
// restarted after a crash and re-initialized: their sessions live on, so
// nothing else tells them, yet the new child's lists may differ from the
// old one's. Closing a channel is the signal, so any number of watchers
// hear one restart, and a new channel is made for the next.
type restartSignal struct {
	mu sync.Mutex
	ch chan struct{}
}

// ChildRestarted is closed at the next restart of one of the bridge's
// shared or per-identity children (after a crash, once it is
// re-initialized and taking requests). A watcher takes a new one after
// each. Sessions of a per-session child never see it: its end ends them.
func (b *Bridge) ChildRestarted() <-chan struct{} {
	s := &b.restarted
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// noteRestart signals a restart to the watchers of ChildRestarted.
func (b *Bridge) noteRestart() {
	s := &b.restarted
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}
