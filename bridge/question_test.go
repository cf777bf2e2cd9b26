package bridge

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// TestQuestionState: the requestState of a question of the bridge's own
// (an approval asked in an input_required result) is bound like every
// requestState the bridge issues: the principal, the method, the target
// and the arguments' digest, an expiry no later than the one asked for or
// --input-ttl, single use; and a child's wrapped state is not one.
func TestQuestionState(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1_000_000, 0)
	b := logBridge(t, Config{InputTTL: 10 * time.Minute, ReplicaID: "r1",
		Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	bind := Binding{Owner: "token:ALICE", Method: "tools/call", Target: "delete_file", Arguments: []byte(`{"path":"/tmp/x","n":1}`)}
	seal := func() string { return b.SealQuestion(bind, "approval-1", b.cfg.Now().Add(time.Minute)) }

	rs := seal()
	if !strings.HasPrefix(rs, "mb1.r1.a.") || !IsQuestionState(rs) {
		t.Fatalf("state %q: not a question's", rs)
	}
	if id, why := b.OpenQuestion(rs, Binding{Owner: bind.Owner, Method: bind.Method, Target: bind.Target, Arguments: []byte(`{ "n": 1, "path": "/tmp/x" }`)}); id != "approval-1" || why != "" {
		t.Fatalf("the same arguments written otherwise: %q, %q", id, why)
	}
	if _, why := b.OpenQuestion(rs, bind); why != whyStateGone {
		t.Errorf("used twice: %q", why)
	}
	for _, tt := range []struct {
		name string
		bind Binding
	}{
		{"another principal", Binding{"token:BOB", bind.Method, bind.Target, bind.Arguments}},
		{"another method", Binding{bind.Owner, "prompts/get", bind.Target, bind.Arguments}},
		{"another tool", Binding{bind.Owner, bind.Method, "delete_all", bind.Arguments}},
		{"arguments changed", Binding{bind.Owner, bind.Method, bind.Target, []byte(`{"path":"/","n":1}`)}},
		{"a number written otherwise", Binding{bind.Owner, bind.Method, bind.Target, []byte(`{"path":"/tmp/x","n":1.0}`)}},
		{"no arguments", Binding{bind.Owner, bind.Method, bind.Target, nil}},
	} {
		if id, why := b.OpenQuestion(seal(), tt.bind); id != "" || why != whyStateForeign {
			t.Errorf("%s: %q, %q", tt.name, id, why)
		}
	}
	rs = seal()
	advance(time.Minute) // the approval's expiry, before --input-ttl
	if _, why := b.OpenQuestion(rs, bind); why != whyStateGone {
		t.Errorf("past the approval's expiry: %q", why)
	}
	rs = b.SealQuestion(bind, "approval-2", b.cfg.Now().Add(time.Hour))
	advance(10 * time.Minute) // --input-ttl, before the expiry asked for
	if _, why := b.OpenQuestion(rs, bind); why != whyStateGone {
		t.Errorf("past --input-ttl: %q", why)
	}
	// Kinds do not mix: a question's state is no child's, and the other
	// way round; a forged or altered one opens nothing.
	mc := &ModernCall{b: b, owner: Owner{Key: bind.Owner}, method: bind.Method, target: bind.Target, argsRaw: bind.Arguments}
	child := mc.wrapState("the child's own")
	if IsQuestionState(child) {
		t.Errorf("a child's state %q taken for a question's", child)
	}
	if _, why := b.OpenQuestion(child, bind); why != whyStateGone {
		t.Errorf("a child's state as a question's: %q", why)
	}
	if _, why := mc.unwrapState(seal()); why != whyStateGone {
		t.Errorf("a question's state as a child's: %q", why)
	}
	rs = seal()
	for _, forged := range []string{"mb1.r1.a.AAAA", rs[:len(rs)-2] + "AA", strings.Replace(rs, "mb1.r1.a.", "mb1.r1.c.", 1), "approve"} {
		if id, why := b.OpenQuestion(forged, bind); id != "" || why == "" {
			t.Errorf("forged %q opened: %q", forged, id)
		}
	}
	if _, why := b.OpenQuestion(strings.Replace(rs, "mb1.r1.", "mb1.r2.", 1), bind); !strings.Contains(why, "replica") {
		t.Errorf("another replica's: %q", why)
	}
}
