package bridge

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Busy is what a shutdown waits for: the requests in flight, of sessions
// and of 2026-07-28 clients, by method. The operator who pressed Ctrl-C
// is told it, rather than waiting in silence.
type Busy struct {
	Requests int
	Sessions int            // sessions with a request in flight
	Methods  map[string]int // requests by method ("tools/call"), sessions' and 2026-07-28 ones'
}

// Busy is what the bridge's clients are waiting on now.
func (b *Bridge) Busy() Busy {
	busy := Busy{Methods: map[string]int{}}
	b.mu.Lock()
	sessions := b.readyLocked()
	b.mu.Unlock()
	for _, s := range sessions {
		n := s.busy(busy.Methods)
		busy.Requests += n
		if n > 0 {
			busy.Sessions++
		}
	}
	busy.Requests += b.modernBusy(busy.Methods)
	return busy
}

// Add is the sum of two bridges' Busy (Mounts: every server's).
func (x Busy) Add(y Busy) Busy {
	out := Busy{Requests: x.Requests + y.Requests, Sessions: x.Sessions + y.Sessions, Methods: maps.Clone(x.Methods)}
	if out.Methods == nil {
		out.Methods = map[string]int{}
	}
	for m, n := range y.Methods {
		out.Methods[m] += n
	}
	return out
}

// String says it for a log line: "tools/call×2, prompts/get".
func (x Busy) String() string {
	var parts []string
	for _, m := range slices.Sorted(maps.Keys(x.Methods)) {
		if n := x.Methods[m]; n > 1 {
			parts = append(parts, m+"×"+strconv.Itoa(n))
		} else {
			parts = append(parts, m)
		}
	}
	return strings.Join(parts, ", ")
}
