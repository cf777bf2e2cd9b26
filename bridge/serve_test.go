package bridge

// Unit tests of the stream seam: Serve, Collect, Await and Detach, on
// real sessions with streams driven as in eventlog_test.go.

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// served runs Serve on st in a goroutine, handing each batch it emits to
// the test (on the returned channel) and returning what emitAnswer says
// for it; the second channel gets Serve's result.
func served(ctx context.Context, st *Stream, o ServeOptions, emitAnswer func([]Event) error) (<-chan []Event, <-chan error) {
	batches := make(chan []Event, 64)
	done := make(chan error, 1)
	go func() {
		done <- st.Serve(ctx, o, func(evs []Event) error {
			batches <- append([]Event(nil), evs...) // Serve clears its own
			if emitAnswer != nil {
				return emitAnswer(evs)
			}
			return nil
		})
	}()
	return batches, done
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second): // a hang guard, not a timing assertion
		t.Fatalf("no %s", what)
		panic("unreachable")
	}
}

func attached(st *Stream) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.attached
}

// TestServeOrder: on a stream that primes, the priming event (an id,
// "<stream>_0" on a fresh stream, and no data) is emitted alone, before
// the reader is registered: a burst pushed while it is being written
// cuts nothing; the reader's cut is registered only after it. Then the
// events, with their ids, until the response completes the stream: Serve
// returns nil, and the reader has let go.
func TestServeOrder(t *testing.T) {
	b := logBridge(t, Config{EventLogEvents: 4})
	s := logSession(t, b, "2025-11-25")
	st := postStream(s)
	var cuts atomic.Int32
	cutAtPrime := make(chan bool, 1)
	first := true
	batches, done := served(t.Context(), st, ServeOptions{Cut: func() { cuts.Add(1) }}, func(evs []Event) error {
		if first {
			first = false
			s.logMu.Lock()
			cutAtPrime <- st.cut != nil
			s.logMu.Unlock()
			push(st, `{"b":1}`, `{"b":2}`) // outruns the priming event
		}
		return nil
	})
	prime := recv(t, batches, "priming event")
	if len(prime) != 1 || prime[0].ID != fmt.Sprintf("%d_0", st.ID()) || prime[0].Data != nil {
		t.Fatalf("first batch %+v, want the priming event alone", prime)
	}
	if recv(t, cutAtPrime, "the priming event's check") {
		t.Fatal("the reader's cut was registered before the priming event was out")
	}
	evs := recv(t, batches, "the burst")
	if len(evs) != 2 || evs[0].ID != fmt.Sprintf("%d_1", st.ID()) || evs[1].ID != fmt.Sprintf("%d_2", st.ID()) {
		t.Fatalf("after the priming event: %+v", evs)
	}
	st.sess.up.mu.Lock()
	st.push([]byte(`{"response":1}`), true)
	st.sess.up.mu.Unlock()
	if evs := recv(t, batches, "the response"); len(evs) != 1 || string(evs[0].Data) != `{"response":1}` {
		t.Fatalf("last batch %+v", evs)
	}
	if err := recv(t, done, "Serve's return"); err != nil {
		t.Fatalf("Serve of a complete stream: %v", err)
	}
	if attached(st) || cuts.Load() != 0 {
		t.Fatalf("after the stream completed: attached %v, cut %d times", attached(st), cuts.Load())
	}
}

// TestServeNoPriming: a 2025-06-18 stream, and any Plain one, starts with
// its messages: no priming event, which older clients crash on. Plain
// events have no ids.
func TestServeNoPriming(t *testing.T) {
	b := logBridge(t, Config{})
	for _, tc := range []struct {
		version string
		plain   bool
		id      bool
	}{{"2025-06-18", false, true}, {"2025-11-25", true, false}} {
		t.Run(fmt.Sprintf("%s plain %v", tc.version, tc.plain), func(t *testing.T) {
			st := postStream(logSession(t, b, tc.version))
			push(st, `{"a":1}`)
			batches, _ := served(t.Context(), st, ServeOptions{Plain: tc.plain}, nil)
			evs := recv(t, batches, "the first batch")
			if len(evs) != 1 || string(evs[0].Data) != `{"a":1}` || (evs[0].ID != "") != tc.id {
				t.Fatalf("first batch %+v, want the message, with an id: %v", evs, tc.id)
			}
			st.Detach()
		})
	}
}

// TestServeKeepAlive: a quiet stream gets an empty batch every KeepAlive;
// the client leaving (ctx) ends Serve with ctx's error and lets go of the
// reader, so a GET stream's session can open another.
func TestServeKeepAlive(t *testing.T) {
	b := logBridge(t, Config{})
	s := logSession(t, b, "2025-06-18")
	g, err := s.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	batches, done := served(ctx, g, ServeOptions{KeepAlive: time.Millisecond}, nil)
	for range 2 {
		if evs := recv(t, batches, "a keep-alive"); len(evs) != 0 {
			t.Fatalf("on a quiet stream: %+v, want an empty batch", evs)
		}
	}
	cancel()
	if err := recv(t, done, "Serve's return"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve after the client left: %v", err)
	}
	if attached(g) {
		t.Fatal("the GET stream is still held")
	}
	if _, err := s.OpenStream(); err != nil {
		t.Fatalf("a new GET stream after the old one's client left: %v", err)
	}
}

// TestServeCut: a reader so slow that events it has not read age out of
// the log is cut (Cut, once), then Serve ends with ErrStreamBehind and
// lets go: its resume is told what is gone.
func TestServeCut(t *testing.T) {
	b := logBridge(t, Config{EventLogEvents: 4})
	s := logSession(t, b, "2025-06-18")
	st := postStream(s)
	var cuts atomic.Int32
	stuck := make(chan struct{})
	push(st, `{"i":0}`)
	batches, done := served(t.Context(), st, ServeOptions{Cut: func() { cuts.Add(1) }}, func([]Event) error {
		<-stuck // a client that stopped reading
		return nil
	})
	recv(t, batches, "the first batch")
	for i := 1; i <= 8; i++ {
		push(st, fmt.Sprintf(`{"i":%d}`, i))
	}
	if cuts.Load() != 1 {
		t.Fatalf("cut %d times with 8 unread events in a log of 4, want once", cuts.Load())
	}
	close(stuck)
	if err := recv(t, done, "Serve's return"); !errors.Is(err, ErrStreamBehind) {
		t.Fatalf("Serve of a reader that fell behind: %v", err)
	}
	if attached(st) {
		t.Fatal("the stream is still held")
	}
}

// TestServeMaxDuration: on a stream that primes, the connection ends after
// MaxDuration (ctx's deadline error) without the stream: its reader lets
// go, and the response still owed waits in the log for the resume. On a
// stream that does not prime, there is no resuming, and MaxDuration does
// not apply: keep-alives go on past it.
func TestServeMaxDuration(t *testing.T) {
	b := logBridge(t, Config{})
	t.Run("primes", func(t *testing.T) {
		st := postStream(logSession(t, b, "2025-11-25"))
		batches, done := served(t.Context(), st, ServeOptions{MaxDuration: time.Millisecond}, nil)
		recv(t, batches, "the priming event")
		if err := recv(t, done, "Serve's return"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Serve past MaxDuration: %v", err)
		}
		if attached(st) {
			t.Fatal("the stream is still held")
		}
		st.sess.up.mu.Lock()
		st.push([]byte(`{"response":1}`), true)
		st.sess.up.mu.Unlock()
		re, err := st.sess.Resume(fmt.Sprintf("%d_0", st.ID()))
		if err != nil {
			t.Fatal(err)
		}
		if evs, final, err := re.next(nil); err != nil || !final || len(evs) != 1 {
			t.Fatalf("resume: %+v %v %v", evs, final, err)
		}
	})
	t.Run("does not prime", func(t *testing.T) {
		st := postStream(logSession(t, b, "2025-06-18"))
		ctx, cancel := context.WithCancel(t.Context())
		batches, done := served(ctx, st, ServeOptions{MaxDuration: time.Millisecond, KeepAlive: 5 * time.Millisecond}, nil)
		for range 2 {
			recv(t, batches, "a keep-alive")
		}
		cancel()
		if err := recv(t, done, "Serve's return"); !errors.Is(err, context.Canceled) {
			t.Fatalf("Serve: %v, want the client's leaving", err)
		}
	})
}

// TestDetachOnce: Detach may be called again, and Serve's own letting go
// when it is over never lets go of the reader after it: a client that
// resumes a stream the moment its first reader has taken the last event
// keeps it.
func TestDetachOnce(t *testing.T) {
	b := logBridge(t, Config{})
	s := logSession(t, b, "2025-11-25")

	t.Run("twice", func(t *testing.T) {
		g, err := s.OpenStream()
		if err != nil {
			t.Fatal(err)
		}
		push(g, `{"g":1}`)
		g.Detach()
		g.Detach()
		s.up.mu.Lock()
		queued := len(s.queue)
		s.up.mu.Unlock()
		if queued != 1 || attached(g) {
			t.Fatalf("after two Detaches: %d queued, attached %v; want the message queued once", queued, attached(g))
		}
		g2, err := s.OpenStream() // takes the queue back
		if err != nil {
			t.Fatal(err)
		}
		g.Detach() // the old handle: not the new stream's reader
		if !attached(g2) {
			t.Fatal("Detach of a stream let go of another")
		}
		g2.Detach()
	})

	t.Run("after a resume", func(t *testing.T) {
		st := postStream(s)
		var resumed *Stream
		batches, done := served(t.Context(), st, ServeOptions{}, func(evs []Event) error {
			if len(evs) == 1 && evs[0].Data != nil {
				// The last event is taken and the reader has let go: the
				// client's next connection resumes before this one ends.
				var err error
				if resumed, err = s.Resume(fmt.Sprintf("%d_1", st.ID())); err != nil {
					return err
				}
			}
			return nil
		})
		recv(t, batches, "the priming event")
		st.sess.up.mu.Lock()
		st.push([]byte(`{"response":1}`), true)
		st.sess.up.mu.Unlock()
		recv(t, batches, "the response")
		if err := recv(t, done, "Serve's return"); err != nil {
			t.Fatal(err)
		}
		if resumed != st || !attached(st) {
			t.Fatal("the first reader's end let go of the resumed one")
		}
		st.Detach()
		st.Detach()
		if attached(st) {
			t.Fatal("Detach did not let go")
		}
	})
}

// TestCollectAndAwait: Collect gathers the responses for a JSON body;
// Await stops waiting at its delay with the stream still held, or lets go
// when the client leaves; the response then stays with the session.
func TestCollectAndAwait(t *testing.T) {
	b := logBridge(t, Config{})
	s := logSession(t, b, "2025-11-25")

	st := postStream(s)
	if err := st.Await(t.Context(), time.Millisecond); err != nil || !attached(st) {
		t.Fatalf("Await past its delay: %v, attached %v", err, attached(st))
	}
	st.sess.up.mu.Lock()
	st.push([]byte(`{"response":1}`), true)
	st.sess.up.mu.Unlock()
	msgs, err := st.Collect(t.Context(), nil)
	if err != nil || len(msgs) != 1 || attached(st) {
		t.Fatalf("Collect: %q %v, attached %v", msgs, err, attached(st))
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for name, read := range map[string]func(*Stream) error{
		"Collect": func(st *Stream) error { _, err := st.Collect(ctx, nil); return err },
		"Await":   func(st *Stream) error { return st.Await(ctx, time.Hour) },
	} {
		st := postStream(s)
		if err := read(st); !errors.Is(err, context.Canceled) || attached(st) {
			t.Errorf("%s after the client left: %v, attached %v", name, err, attached(st))
		}
	}
}
