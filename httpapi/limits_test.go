package httpapi

import (
	"strconv"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/auth"
)

// TestLimitsForget: the per-principal map keeps only principals with
// something live or a bucket still refilling, so a stream of one-off
// principals (JWT subjects) cannot grow it without bound; a principal with
// a request in flight is never forgotten.
func TestLimitsForget(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newLimits(Options{RateLimit: 1, MaxInFlightPerPrincipal: 1, Now: func() time.Time { return now }})
	busy := auth.Principal{Method: auth.MethodToken, Name: "BUSY"}
	leave, err := l.enter(busy)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3000 {
		if err := l.allow(auth.Principal{Method: auth.MethodJWT, Name: strconv.Itoa(i), Issuer: "i"}); err != nil {
			t.Fatalf("principal %d: %v", i, err)
		}
	}
	if len(l.m) != 3001 {
		t.Fatalf("%d principals tracked, want 3001: every bucket is still refilling", len(l.m))
	}
	now = now.Add(2 * time.Second) // every bucket is full again
	for i := 0; len(l.m) >= 3001; i++ {
		if i > 5000 {
			t.Fatal("the map was never swept")
		}
		_ = l.allow(auth.Principal{Method: auth.MethodJWT, Name: "new" + strconv.Itoa(i), Issuer: "i"})
	}
	if _, ok := l.m[busy.Key()]; !ok {
		t.Fatal("a principal with a request in flight was forgotten")
	}
	if _, err := l.enter(busy); err == nil {
		t.Fatal("the in-flight cap forgot the request in flight")
	}
	leave()
	if _, err := l.enter(busy); err != nil {
		t.Fatalf("after leave: %v", err)
	}
}
