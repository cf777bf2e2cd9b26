package endpoint

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// TestRewind: a GET stream's events are numbered; a resume after event
// n gives the events after n again, then what waits, in order; an id the
// stream never gave is refused, and so is one whose following events
// are no longer kept (past maxWaiting taken, or dropped unread), with the
// error saying what to do.
func TestRewind(t *testing.T) {
	msg := func(i int) []byte { return fmt.Appendf(nil, `{"n":%d}`, i) }
	tests := []struct {
		name          string
		pushed, taken int // pushed events, of which the first taken were read
		last          string
		want          string // the ids read after the rewind, or the error's code
	}{
		{"after the last taken: what waits", 5, 3, "3", "4 5"},
		{"after an earlier one: again, then what waits", 5, 3, "1", "2 3 4 5"},
		{"after every one", 3, 3, "3", ""},
		{"from the first", 3, 3, "0", "1 2 3"},
		{"an id not given yet", 3, 3, "4", "-32600"},
		{"not a number", 3, 3, "abc", "-32600"},
		{"aged out of the log", maxWaiting + 10, maxWaiting + 10, "5", "-32006"},
		{"the oldest still kept", maxWaiting + 10, maxWaiting + 10, "10", ""},
		{"dropped unread", maxWaiting + 10, 0, "5", "-32006"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := newStream()
			var taken []bridge.Event
			for i := 1; i <= tc.pushed; i++ {
				o.push(msg(i), false)
				if i <= tc.taken {
					taken, _ = o.take(taken[:0])
				}
			}
			var got string
			if err := o.rewind(tc.last); err != nil {
				var be *bridge.Error
				if !errors.As(err, &be) || !strings.Contains(be.Message, "open the GET stream again without Last-Event-ID") {
					t.Fatalf("rewind error %v does not say what to do", err)
				}
				got = fmt.Sprint(be.Code)
			} else {
				evs, _ := o.take(nil)
				var ids []string
				for _, ev := range evs {
					if string(ev.Data) != `{"n":`+ev.ID+`}` {
						t.Errorf("event %s carries %s", ev.ID, ev.Data)
					}
					ids = append(ids, ev.ID)
				}
				got = strings.Join(ids, " ")
				if tc.name == "the oldest still kept" {
					got = "" // what follows 10 is everything after: checked below
					if len(ids) != maxWaiting || ids[0] != "11" {
						t.Errorf("resumed with %d events from %v, want %d from 11", len(ids), ids[:1], maxWaiting)
					}
				}
			}
			if got != tc.want {
				t.Errorf("rewind(%s) gave %q, want %q", tc.last, got, tc.want)
			}
		})
	}
}
