package endpoint

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// TestOutbox: a POST's answers are complete once every request has its
// answer, whatever came between; TakeOnly takes a lone final answer only;
// a GET stream keeps at most maxWaiting messages for a client not
// reading, the oldest dropped, and is complete only once ended.
func TestOutbox(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second) // a safety net
	defer cancel()
	type push struct {
		msg    string
		answer bool
	}
	for _, tc := range []struct {
		name     string
		want     int
		pushes   []push
		takeOnly bool
		collect  []string
	}{
		{"one answer", 1, []push{{"a", true}}, true, []string{"a"}},
		{"progress then answer", 1, []push{{"p", false}, {"a", true}}, false, []string{"p", "a"}},
		{"two answers of a batch", 2, []push{{"a1", true}, {"r", false}, {"a2", true}}, false, []string{"a1", "r", "a2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newReply(tc.want)
			for _, p := range tc.pushes {
				o.push([]byte(p.msg), p.answer)
			}
			if _, ok := o.TakeOnly(); ok != tc.takeOnly {
				t.Fatalf("TakeOnly: %v, want %v", ok, tc.takeOnly)
			}
			if tc.takeOnly {
				return
			}
			evs, err := o.Collect(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ev := range evs {
				got = append(got, string(ev.Data))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.collect) {
				t.Errorf("Collect: %q, want %q", got, tc.collect)
			}
		})
	}

	t.Run("a POST whose answers are owed waits", func(t *testing.T) {
		o := newReply(1)
		o.push([]byte("p"), false)
		evs, final, err := o.Next(ctx, nil, nil)
		if err != nil || final || len(evs) != 1 {
			t.Fatalf("Next: %d events, final %v, %v", len(evs), final, err)
		}
		tick := make(chan time.Time, 1)
		tick <- time.Time{}
		if evs, final, _ := o.Next(ctx, tick, nil); final || len(evs) != 0 {
			t.Errorf("Next with nothing: %d events, final %v: want a keep-alive", len(evs), final)
		}
		o.Close()
		o.push([]byte("late"), true) // dropped: the client let go
		if o.ready() && len(o.evs) != 0 {
			t.Error("a closed outbox kept a message")
		}
	})

	t.Run("GET stream", func(t *testing.T) {
		o := newStream()
		for i := range maxWaiting + 5 {
			o.push(fmt.Appendf(nil, "%d", i), false)
		}
		evs, final, err := o.Next(ctx, nil, []bridge.Event(nil))
		if err != nil || final || len(evs) != maxWaiting || string(evs[0].Data) != "5" {
			t.Fatalf("Next: %d events from %q, final %v, %v; want the last %d", len(evs), evs[0].Data, final, err, maxWaiting)
		}
		o.end()
		if _, final, _ := o.Next(ctx, nil, nil); !final {
			t.Error("an ended stream is not final")
		}
	})
}
