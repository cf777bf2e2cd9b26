package bridge

// Unit tests of a session's event log and of slow readers:
// the ids events get, what ages out of the log and in which order, what a
// resume replays, and when a slow reader is cut. The sessions are real
// (a badchild process each, or its in-memory double for the tests that
// run against both); the streams under test are driven directly,
// with the session's lock held as the router holds it, so that every
// count below is exact.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// logBridge starts a bridge on the badchild process with cfg (Command and
// Logger filled in) and stops it when the test ends.
func logBridge(t *testing.T, cfg Config) *Bridge {
	t.Helper()
	return peerLogBridge(t, processPeer, cfg)
}

// peerLogBridge is logBridge on p.
func peerLogBridge(t *testing.T, p peer, cfg Config) *Bridge {
	t.Helper()
	cfg.Command = p.command(t)
	cfg.Logger = slog.New(slog.DiscardHandler)
	b, err := newBridge(cfg, p.start)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			t.Errorf("bridge close: %v", err)
		}
	})
	return b
}

// logSession initializes a session at version. The InitializeResult is
// taken with take, which logs nothing, so the session's log starts empty
// and the tests count only their own events.
func logSession(t *testing.T, b *Bridge, version string) *Session {
	t.Helper()
	msgs, _, err := ParseBody(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, version))
	if err != nil {
		t.Fatal(err)
	}
	s, st, err := b.Initialize(t.Context(), InitRequest{Message: msgs[0]})
	if err != nil {
		t.Fatal(err)
	}
	for final := false; !final; {
		if err := st.wait(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		_, final = st.take(nil)
	}
	if s.Version() != version {
		t.Fatalf("negotiated %q, want %q", s.Version(), version)
	}
	return s
}

// postStream opens a POST stream on s that owes one response, as Send
// does for a request, without sending anything to the child.
func postStream(s *Session) *Stream {
	s.up.mu.Lock()
	defer s.up.mu.Unlock()
	st := newStream(s, false, 1, false)
	s.posts[st] = true
	return st
}

// push appends messages to st as the router does.
func push(st *Stream, msgs ...string) {
	st.sess.up.mu.Lock()
	defer st.sess.up.mu.Unlock()
	for _, m := range msgs {
		st.push([]byte(m), false)
	}
}

// emit pushes one message and has the stream's reader take it at once,
// so it is committed to the log: the order of emits is the log's order.
func emit(t *testing.T, st *Stream, msg string) Event {
	t.Helper()
	push(st, msg)
	evs, _, err := st.next(nil)
	if err != nil || len(evs) != 1 {
		t.Fatalf("Next: %v, %d events", err, len(evs))
	}
	return evs[0]
}

// kept is the numbers of st's events still in the log, and the number of
// the last one that aged out.
func kept(st *Stream) (ns []int64, evicted int64) {
	st.sess.logMu.Lock()
	defer st.sess.logMu.Unlock()
	for _, k := range st.kept {
		ns = append(ns, k.n)
	}
	return ns, st.evicted
}

// sized is a JSON message of exactly n bytes (n >= 8).
// waitFinal waits for st's last response, as a reader that has gone
// cannot: push signals wake for every message, logged or not, and wake
// holds one signal, so none is missed.
func waitFinal(t *testing.T, st *Stream) {
	t.Helper()
	for {
		st.mu.Lock()
		final := st.final
		st.mu.Unlock()
		if final {
			return
		}
		select {
		case <-st.wake:
		case <-t.Context().Done():
			t.Fatal("the call never finished")
		}
	}
}

func sized(n int) string { return `{"m":"` + strings.Repeat("x", n-8) + `"}` }

func wantKind(t *testing.T, err error, kind Kind, code int) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Kind != kind || e.Code != code {
		t.Fatalf("error %v (%#v): want kind %d, code %d", err, e, kind, code)
	}
}

// TestEventLogIDs: every event is "<stream>_<n>", n counting the stream's
// events from 1, stream ids unique across the bridge (so that an id of
// one session names nothing in another); the priming id names the last
// event the client has, "<stream>_0" on a fresh stream; only 2025-11-25
// sessions prime, and never on the stream that carries the
// InitializeResult (the client knows no version yet).
func TestEventLogIDs(t *testing.T) { forPeers(t, testEventLogIDs) }

func testEventLogIDs(t *testing.T, p peer) {
	b := peerLogBridge(t, p, Config{})
	s := logSession(t, b, "2025-11-25")
	old := logSession(t, b, "2025-06-18")

	a := postStream(s)
	g, err := s.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	o := postStream(old)
	if a.ID() == g.ID() || a.ID() == o.ID() || g.ID() == o.ID() {
		t.Fatalf("stream ids %d %d %d: want unique across the bridge", a.ID(), g.ID(), o.ID())
	}
	if got, want := a.primeID(), fmt.Sprintf("%d_0", a.ID()); got != want {
		t.Fatalf("fresh stream's priming id %q, want %q", got, want)
	}
	if !a.primes() || !g.primes() || o.primes() {
		t.Fatalf("Primes: 2025-11-25 POST %v, GET %v, 2025-06-18 %v; want true, true, false", a.primes(), g.primes(), o.primes())
	}
	s.up.mu.Lock()
	initSt := newStream(s, false, 1, false)
	initSt.init = true
	s.up.mu.Unlock()
	if initSt.primes() {
		t.Fatal("the InitializeResult's stream primes")
	}

	for i, tc := range []struct {
		st   *Stream
		want string
	}{
		{a, "%d_1"}, {g, "%d_1"}, {a, "%d_2"}, {o, "%d_1"}, {a, "%d_3"}, {g, "%d_2"}, {o, "%d_2"},
	} {
		msg := fmt.Sprintf(`{"i":%d}`, i)
		ev := emit(t, tc.st, msg)
		if want := fmt.Sprintf(tc.want, tc.st.ID()); ev.ID != want || string(ev.Data) != msg {
			t.Fatalf("event %d: %q %s, want %q %s", i, ev.ID, ev.Data, want, msg)
		}
	}
	// Several pending messages taken at once get consecutive ids.
	push(a, `{"i":"x"}`, `{"i":"y"}`)
	evs, _, err := a.next(nil)
	if err != nil || len(evs) != 2 || evs[0].ID != fmt.Sprintf("%d_4", a.ID()) || evs[1].ID != fmt.Sprintf("%d_5", a.ID()) {
		t.Fatalf("batch: %v %+v", err, evs)
	}
	if got, want := a.primeID(), fmt.Sprintf("%d_5", a.ID()); got != want {
		t.Fatalf("priming id after 5 events %q, want %q", got, want)
	}
}

// TestEventLogEvictsByCount: over EventLogEvents the session's oldest
// events age out first, whichever stream they belong to, and each one is
// counted in Stats().EventsEvicted.
func TestEventLogEvictsByCount(t *testing.T) { forPeers(t, testEventLogEvictsByCount) }

func testEventLogEvictsByCount(t *testing.T, p peer) {
	b := peerLogBridge(t, p, Config{EventLogEvents: 5})
	s := logSession(t, b, "2025-11-25")
	a := postStream(s)
	g, err := s.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	// Log order: a1 g1 a2 g2 a3 g3 g4; with room for 5, a1 and g1 go.
	for _, st := range []*Stream{a, g, a, g, a, g, g} {
		emit(t, st, `{}`)
	}
	if ns, ev := kept(a); fmt.Sprint(ns) != "[2 3]" || ev != 1 {
		t.Fatalf("POST stream keeps %v (evicted up to %d), want [2 3] (1)", ns, ev)
	}
	if ns, ev := kept(g); fmt.Sprint(ns) != "[2 3 4]" || ev != 1 {
		t.Fatalf("GET stream keeps %v (evicted up to %d), want [2 3 4] (1)", ns, ev)
	}
	if n := b.Stats().EventsEvicted.Load(); n != 2 {
		t.Fatalf("EventsEvicted %d, want 2", n)
	}
	// One more on a: the oldest left is a2.
	emit(t, a, `{}`)
	if ns, _ := kept(a); fmt.Sprint(ns) != "[3 4]" {
		t.Fatalf("POST stream keeps %v, want [3 4]", ns)
	}
	if ns, _ := kept(g); fmt.Sprint(ns) != "[2 3 4]" {
		t.Fatalf("GET stream keeps %v, want [2 3 4]", ns)
	}
	s.logMu.Lock()
	events := s.logEvents
	s.logMu.Unlock()
	if events != 5 || b.Stats().EventsEvicted.Load() != 3 {
		t.Fatalf("log holds %d events, %d evicted; want 5, 3", events, b.Stats().EventsEvicted.Load())
	}
}

// TestEventLogEvictsByBytes: over EventLogBytes the oldest events go
// first; the newest event stays even when it alone is over the bound (it
// may be the response a client is waiting for), and it can be resumed.
func TestEventLogEvictsByBytes(t *testing.T) { forPeers(t, testEventLogEvictsByBytes) }

func testEventLogEvictsByBytes(t *testing.T, p peer) {
	b := peerLogBridge(t, p, Config{EventLogBytes: 100})
	s := logSession(t, b, "2025-11-25")
	a := postStream(s)
	g, err := s.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	emit(t, a, sized(30)) // a1
	emit(t, g, sized(30)) // g1
	emit(t, a, sized(30)) // a2: 90 bytes
	emit(t, g, sized(30)) // g2: 120 bytes, a1 goes
	if ns, _ := kept(a); fmt.Sprint(ns) != "[2]" {
		t.Fatalf("POST stream keeps %v, want [2]", ns)
	}
	if ns, _ := kept(g); fmt.Sprint(ns) != "[1 2]" {
		t.Fatalf("GET stream keeps %v, want [1 2]", ns)
	}
	emit(t, a, sized(500)) // a3, alone over the bound: everything older goes
	if ns, ev := kept(a); fmt.Sprint(ns) != "[3]" || ev != 2 {
		t.Fatalf("POST stream keeps %v (evicted up to %d), want [3] (2)", ns, ev)
	}
	if ns, ev := kept(g); len(ns) != 0 || ev != 2 {
		t.Fatalf("GET stream keeps %v (evicted up to %d), want nothing (2)", ns, ev)
	}
	s.logMu.Lock()
	events, size := s.logEvents, s.logBytes
	s.logMu.Unlock()
	if events != 1 || size != 500 || b.Stats().EventsEvicted.Load() != 4 {
		t.Fatalf("log %d events, %d bytes, %d evicted; want 1, 500, 4", events, size, b.Stats().EventsEvicted.Load())
	}
	a.Detach()
	st, err := s.Resume(fmt.Sprintf("%d_2", a.ID()))
	if err != nil {
		t.Fatalf("resume before the big event: %v", err)
	}
	evs, _, err := st.next(nil)
	if err != nil || len(evs) != 1 || len(evs[0].Data) != 500 || evs[0].ID != fmt.Sprintf("%d_3", a.ID()) {
		t.Fatalf("replay: %v %d events", err, len(evs))
	}
}

// TestEventLogResume: a resume replays exactly the stream's events after
// n, none before and none of another stream, then goes on live; a
// Last-Event-ID that is malformed, names no stream of this session
// (another session's included) or an event not yet sent is invalid
// (400); one whose following events aged out is gone (410, never a silent
// gap), while one right at the eviction boundary still resumes; a GET
// stream cannot be resumed while another GET stream is open (409).
func TestEventLogResume(t *testing.T) { forPeers(t, testEventLogResume) }

func testEventLogResume(t *testing.T, p peer) {
	b := peerLogBridge(t, p, Config{EventLogEvents: 12})
	s := logSession(t, b, "2025-11-25")
	other := logSession(t, b, "2025-11-25")
	a := postStream(s)
	g, err := s.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		emit(t, a, fmt.Sprintf(`{"a":%d}`, i))
		emit(t, g, fmt.Sprintf(`{"g":%d}`, i))
	}
	foreign := postStream(other)
	emit(t, foreign, `{"other":1}`)
	a.Detach()

	st, err := s.Resume(fmt.Sprintf("%d_2", a.ID()))
	if err != nil || st != a {
		t.Fatalf("resume: %v (same stream %v)", err, st == a)
	}
	evs, final, err := st.next(nil)
	var got []string
	for _, ev := range evs {
		got = append(got, ev.ID+" "+string(ev.Data))
	}
	want := fmt.Sprintf(`[%[1]d_3 {"a":3} %[1]d_4 {"a":4} %[1]d_5 {"a":5}]`, a.ID())
	if err != nil || final || fmt.Sprint(got) != want {
		t.Fatalf("replay %v (final %v, err %v), want %s", got, final, err, want)
	}
	// Live again: the next event continues the numbering.
	if ev := emit(t, a, `{"a":6}`); ev.ID != fmt.Sprintf("%d_6", a.ID()) {
		t.Fatalf("live event after the replay: %q", ev.ID)
	}
	// Resuming from the last event replays nothing.
	a.Detach()
	if st, err = s.Resume(fmt.Sprintf("%d_6", a.ID())); err != nil {
		t.Fatal(err)
	}
	if evs, _, err := st.next(nil); err != nil || len(evs) != 0 {
		t.Fatalf("resume from the last event replayed %+v (%v)", evs, err)
	}
	a.Detach()

	for _, id := range []string{
		"", "x", "12", "_1", fmt.Sprintf("%d_", a.ID()), fmt.Sprintf("%d_x", a.ID()), fmt.Sprintf("%d_-1", a.ID()),
		fmt.Sprintf("%d_1_1", a.ID()), "999999999_1",
		fmt.Sprintf("%d_1", foreign.ID()), // another session's stream
		fmt.Sprintf("%d_7", a.ID()),       // not sent yet
	} {
		_, err := s.Resume(id)
		wantKind(t, err, KindInvalid, CodeInvalidRequest)
	}

	// Age out a's events up to a3: the log order is a1 g1 a2 g2 a3 g3 a4
	// g4 a5 g5 a6; six more events on g make 17, and the oldest 5 go.
	for i := 6; i <= 11; i++ {
		emit(t, g, fmt.Sprintf(`{"g":%d}`, i))
	}
	if ns, ev := kept(a); fmt.Sprint(ns) != "[4 5 6]" || ev != 3 {
		t.Fatalf("a keeps %v (evicted up to %d), want [4 5 6] (3)", ns, ev)
	}
	for _, n := range []int{0, 1, 2} {
		_, err := s.Resume(fmt.Sprintf("%d_%d", a.ID(), n))
		wantKind(t, err, KindGone, CodeEventsGone)
	}
	if st, err = s.Resume(fmt.Sprintf("%d_3", a.ID())); err != nil {
		t.Fatalf("resume at the eviction boundary: %v", err)
	}
	if evs, _, err := st.next(nil); err != nil || len(evs) != 3 || evs[0].ID != fmt.Sprintf("%d_4", a.ID()) {
		t.Fatalf("replay from the boundary: %+v (%v)", evs, err)
	}

	// The GET stream: while another GET stream is open, a conflict.
	g.Detach()
	g2, err := s.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Resume(fmt.Sprintf("%d_11", g.ID()))
	wantKind(t, err, KindConflict, CodeInvalidRequest)
	g2.Detach()
	if st, err = s.Resume(fmt.Sprintf("%d_10", g.ID())); err != nil {
		t.Fatalf("resume the GET stream once the other is gone: %v", err)
	}
	if evs, _, err := st.next(nil); err != nil || len(evs) != 1 || string(evs[0].Data) != `{"g":11}` {
		t.Fatalf("GET replay %+v (%v)", evs, err)
	}
}

// TestEventLogDetachedCall: a client that lets go of a POST stream does
// not cancel its request: the child's later progress and its response go
// into the log for that stream (not to the GET stream opened meanwhile),
// and a resume from the last event the client had gets them all, once.
func TestEventLogDetachedCall(t *testing.T) {
	b := logBridge(t, Config{})
	s := logSession(t, b, "2025-11-25")
	msgs, _, err := ParseBody([]byte(`{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"slow","arguments":{"ms":600,"steps":6},"_meta":{"progressToken":"p"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Send(msgs, false)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	var got []Event
	sawProgress := func() bool {
		for _, ev := range got {
			if strings.Contains(string(ev.Data), "notifications/progress") {
				return true
			}
		}
		return false
	}
	for !sawProgress() {
		if err := st.wait(ctx, nil); err != nil {
			t.Fatal(err)
		}
		evs, final, err := st.next(nil)
		if err != nil {
			t.Fatal(err)
		}
		if final {
			t.Fatalf("the call ended before any progress: %+v", evs)
		}
		got = append(got, evs...)
	}
	last := got[len(got)-1].ID
	st.Detach()
	g, err := s.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	waitFinal(t, st)
	if pending(st) != 0 {
		t.Fatalf("%d messages wait on a detached stream instead of the log", pending(st))
	}
	onGet, _, err := g.next(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range onGet {
		if strings.Contains(string(ev.Data), "notifications/progress") || strings.Contains(string(ev.Data), `"id":"c"`) {
			t.Fatalf("the detached call's message went to the GET stream: %s", ev.Data)
		}
	}
	g.Detach()

	re, err := s.Resume(last)
	if err != nil {
		t.Fatal(err)
	}
	evs, final, err := re.next(nil)
	if err != nil || !final {
		t.Fatalf("resume: final %v, %v", final, err)
	}
	got = append(got, evs...)
	var progress []string
	var n int64
	for i, ev := range got {
		want := fmt.Sprintf("%d_%d", st.ID(), n+1)
		if ev.ID != want {
			t.Fatalf("event %d has id %q, want %q", i, ev.ID, want)
		}
		n++
		var m struct {
			ID     string
			Method string
			Params struct {
				ProgressToken string
				Progress      int
			}
			Result struct{ Content []struct{ Text string } }
		}
		if err := json.Unmarshal(ev.Data, &m); err != nil {
			t.Fatal(err)
		}
		switch {
		case m.Method == "notifications/progress":
			if m.Params.ProgressToken != "p" {
				t.Fatalf("progress with token %q", m.Params.ProgressToken)
			}
			progress = append(progress, fmt.Sprint(m.Params.Progress))
		case m.ID == "c":
			if i != len(got)-1 || len(m.Result.Content) != 1 || m.Result.Content[0].Text != "slow done" {
				t.Fatalf("response %s at %d of %d", ev.Data, i, len(got))
			}
		}
	}
	if fmt.Sprint(progress) != "[1 2 3 4 5 6]" {
		t.Fatalf("progress %v, want each step once, in order", progress)
	}
}

// TestSlowReaderCut: a POST stream's messages go to the log as soon as an
// SSE writer reads it, so what its reader has not taken is bounded by the
// log; the reader is cut off (once, counted in StreamsCut) only when an
// event it has not read ages out. Then Next reports ErrStreamBehind, and a
// resume from before the lost event gets 410, one from after it the rest.
// A reader that keeps up is never cut, nor is one whose only unread event
// is bigger than the whole log (the newest event stays). A GET stream's
// reader is cut once more than the log's bounds wait for it, and what
// waited goes back to the session's queue. A burst before the transport
// has chosen JSON or SSE is spilled to the log in order.
func TestSlowReaderCut(t *testing.T) {
	t.Run("post", func(t *testing.T) {
		b := logBridge(t, Config{EventLogEvents: 8})
		s := logSession(t, b, "2025-11-25")

		fast := postStream(s)
		var fastCuts atomic.Int32
		fast.setCut(func() { fastCuts.Add(1) })
		for i := range 100 {
			emit(t, fast, fmt.Sprintf(`{"i":%d}`, i))
		}
		if fastCuts.Load() != 0 {
			t.Fatal("a reader that keeps up was cut")
		}

		st := postStream(s)
		var cuts atomic.Int32
		st.setCut(func() { cuts.Add(1) })
		if evs, _, err := st.next(nil); err != nil || len(evs) != 0 {
			t.Fatalf("first Next: %v %v", evs, err)
		}
		for i := 1; i <= 8; i++ {
			push(st, fmt.Sprintf(`{"i":%d}`, i))
		}
		if cuts.Load() != 0 || pending(st) != 0 {
			t.Fatalf("cut %d times with 8 unread events in a log of 8; pending %d, want 0 (in the log)", cuts.Load(), pending(st))
		}
		push(st, `{"i":9}`)
		push(st, `{"i":10}`)
		if cuts.Load() != 1 || b.Stats().StreamsCut.Load() != 1 {
			t.Fatalf("cut called %d times, StreamsCut %d; want 1, 1", cuts.Load(), b.Stats().StreamsCut.Load())
		}
		// Wait must not block on a stream that is behind: the transport
		// has to see it and let go.
		if err := st.wait(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.next(nil); !errors.Is(err, ErrStreamBehind) {
			t.Fatalf("Next after the cut: %v, want ErrStreamBehind", err)
		}
		st.Detach()
		_, err := s.Resume(fmt.Sprintf("%d_1", st.ID()))
		wantKind(t, err, KindGone, CodeEventsGone)
		re, err := s.Resume(fmt.Sprintf("%d_2", st.ID()))
		if err != nil {
			t.Fatal(err)
		}
		evs, _, err := re.next(nil)
		if err != nil || len(evs) != 8 {
			t.Fatalf("resume after the cut: %v, %d events, want 8", err, len(evs))
		}
		for i, ev := range evs {
			if ev.ID != fmt.Sprintf("%d_%d", st.ID(), i+3) || string(ev.Data) != fmt.Sprintf(`{"i":%d}`, i+3) {
				t.Fatalf("event %d: %q %s", i, ev.ID, ev.Data)
			}
		}
	})
	t.Run("big", func(t *testing.T) {
		b := logBridge(t, Config{EventLogBytes: 100})
		s := logSession(t, b, "2025-11-25")
		st := postStream(s)
		var cuts atomic.Int32
		st.setCut(func() { cuts.Add(1) })
		if _, _, err := st.next(nil); err != nil {
			t.Fatal(err)
		}
		push(st, sized(500))
		if cuts.Load() != 0 {
			t.Fatal("one unread message over the bytes bound cut the stream")
		}
		if evs, _, err := st.next(nil); err != nil || len(evs) != 1 || len(evs[0].Data) != 500 {
			t.Fatalf("Next: %v %d", err, len(evs))
		}
	})
	t.Run("get", func(t *testing.T) {
		b := logBridge(t, Config{EventLogEvents: 4})
		s := logSession(t, b, "2025-11-25")
		get, err := s.OpenStream()
		if err != nil {
			t.Fatal(err)
		}
		var cuts atomic.Int32
		get.setCut(func() { cuts.Add(1) })
		for i := 1; i <= 4; i++ {
			push(get, fmt.Sprintf(`{"i":%d}`, i))
		}
		if cuts.Load() != 0 {
			t.Fatal("cut at the bound, not over it")
		}
		push(get, `{"i":5}`)
		if cuts.Load() != 1 {
			t.Fatalf("cut %d times, want 1", cuts.Load())
		}
		if _, _, err := get.next(nil); !errors.Is(err, ErrStreamBehind) {
			t.Fatalf("Next after the cut: %v, want ErrStreamBehind", err)
		}
		get.Detach()
		again, err := s.OpenStream()
		if err != nil {
			t.Fatal(err)
		}
		evs, _, err := again.next(nil)
		if err != nil || len(evs) != 5 || string(evs[0].Data) != `{"i":1}` || string(evs[4].Data) != `{"i":5}` {
			t.Fatalf("the next GET stream got %v, %v: want the 5 that waited, in order", evs, err)
		}
	})
	t.Run("lost before the reader began", func(t *testing.T) {
		// A burst bigger than the log while the transport has not started
		// reading (auto mode's wait): nothing to cut yet; the first Next
		// finds the gap, so the connection goes and the resume gets 410.
		b := logBridge(t, Config{EventLogEvents: 4})
		s := logSession(t, b, "2025-11-25")
		st := postStream(s)
		for i := 1; i <= 10; i++ {
			push(st, fmt.Sprintf(`{"i":%d}`, i))
		}
		var cuts atomic.Int32
		st.setCut(func() { cuts.Add(1) })
		if _, _, err := st.next(nil); !errors.Is(err, ErrStreamBehind) {
			t.Fatalf("Next over a gap: %v, want ErrStreamBehind", err)
		}
		if cuts.Load() != 0 {
			t.Fatal("cut before the reader began")
		}
		st.Detach()
		_, err := s.Resume(fmt.Sprintf("%d_0", st.ID()))
		wantKind(t, err, KindGone, CodeEventsGone)
	})
	t.Run("burst before SSE", func(t *testing.T) {
		b := logBridge(t, Config{})
		s := logSession(t, b, "2025-11-25")
		st := postStream(s)
		for i := 1; i <= 3*spillEvents; i++ {
			push(st, fmt.Sprintf(`{"i":%d}`, i))
		}
		if _, ok := st.TakeOnly(); ok {
			t.Fatal("TakeOnly took one of a burst")
		}
		evs, _, err := st.next(nil)
		if err != nil || len(evs) != 3*spillEvents {
			t.Fatalf("Next: %v, %d events", err, len(evs))
		}
		for i, ev := range evs {
			if ev.ID != fmt.Sprintf("%d_%d", st.ID(), i+1) || string(ev.Data) != fmt.Sprintf(`{"i":%d}`, i+1) {
				t.Fatalf("event %d: %q %s", i, ev.ID, ev.Data)
			}
		}
	})
}

// TestQueueBounds: a message for no stream while none is open waits in
// the session's queue, bounded by QueueLimit messages and EventLogBytes
// bytes; what is over is dropped and counted, and the next GET stream
// gets what waited, in order.
func TestQueueBounds(t *testing.T) { forPeers(t, testQueueBounds) }

func testQueueBounds(t *testing.T, p peer) {
	b := peerLogBridge(t, p, Config{QueueLimit: 3, EventLogBytes: 100})
	deliver := func(s *Session, msgs ...string) {
		s.up.mu.Lock()
		defer s.up.mu.Unlock()
		for _, m := range msgs {
			s.deliverLocked([]byte(m))
		}
	}
	s := logSession(t, b, "2025-11-25")
	deliver(s, `{"q":1}`, `{"q":2}`, `{"q":3}`, `{"q":4}`, `{"q":5}`)
	if n := b.Stats().QueueDrops.Load(); n != 2 {
		t.Fatalf("QueueDrops %d, want 2", n)
	}
	g, err := s.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	evs, _, err := g.next(nil)
	if err != nil || len(evs) != 3 || string(evs[0].Data) != `{"q":1}` || string(evs[2].Data) != `{"q":3}` {
		t.Fatalf("queued: %v %+v", err, evs)
	}

	bs := logSession(t, b, "2025-11-25")
	deliver(bs, sized(40), sized(40), sized(40))
	if n := b.Stats().QueueDrops.Load(); n != 3 {
		t.Fatalf("QueueDrops %d, want 3 (the third 40-byte message is over 100 bytes)", n)
	}
}

// TestEventLogEvictAfterResume: a resume that succeeded must still replay
// every event after its Last-Event-ID. Between Resume and the transport's
// first Next (in httpapi, while the response headers are written and
// flushed) other streams of the session may commit events and evict the
// ones the resumed client still needs; Next must then fail (the client
// resumes again and gets 410), never hand out the rest with a silent gap.
func TestEventLogEvictAfterResume(t *testing.T) { forPeers(t, testEventLogEvictAfterResume) }

func testEventLogEvictAfterResume(t *testing.T, p peer) {
	b := peerLogBridge(t, p, Config{EventLogEvents: 4})
	s := logSession(t, b, "2025-11-25")
	a := postStream(s)
	g, err := s.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		emit(t, a, fmt.Sprintf(`{"a":%d}`, i))
	}
	a.Detach()
	st, err := s.Resume(fmt.Sprintf("%d_1", a.ID()))
	if err != nil {
		t.Fatalf("resume while a2 and a3 are kept: %v", err)
	}
	// a1 a2 a3 g1 g2 g3 with room for 4: a1 and a2 age out.
	for i := 1; i <= 3; i++ {
		emit(t, g, fmt.Sprintf(`{"g":%d}`, i))
	}
	evs, _, err := st.next(nil)
	if err == nil && len(evs) != 2 {
		var ids []string
		for _, ev := range evs {
			ids = append(ids, ev.ID)
		}
		t.Fatalf("resumed from %d_1, then a2 aged out: Next replayed %v with no error, a silent gap (want %d_2 and %d_3, or an error)",
			a.ID(), ids, a.ID(), a.ID())
	}
}

// TestEventLogGoneAfterSweep: a Last-Event-ID whose following events aged
// out is 410 Gone whatever else the session did meanwhile. A session
// forgets streams that nothing can resume any more once it tracks many
// (trackLocked); a stream whose unsent events all aged out must still be
// answered as gone, not as a stream that never existed (400).
func TestEventLogGoneAfterSweep(t *testing.T) { forPeers(t, testEventLogGoneAfterSweep) }

func testEventLogGoneAfterSweep(t *testing.T, p peer) {
	b := peerLogBridge(t, p, Config{EventLogEvents: 2})
	s := logSession(t, b, "2025-11-25")
	x := postStream(s)
	emit(t, x, `{"x":1}`) // the client has x1
	x.sess.up.mu.Lock()
	x.push([]byte(`{"x":"response"}`), true)
	x.sess.up.mu.Unlock()
	x.Detach() // the client went away before the response
	if _, err := s.Resume(fmt.Sprintf("%d_1", x.ID())); err != nil {
		t.Fatalf("resume while x2 is kept: %v", err)
	}
	x.Detach()
	// Forty more calls, each complete: x's events age out, and the
	// session's stream table is swept several times.
	for i := range 40 {
		st := postStream(s)
		st.sess.up.mu.Lock()
		st.push(fmt.Appendf(nil, `{"r":%d}`, i), true)
		st.sess.up.mu.Unlock()
		if _, _, err := st.next(nil); err != nil {
			t.Fatal(err)
		}
	}
	if ns, ev := kept(x); len(ns) != 0 || ev != 2 {
		t.Fatalf("x keeps %v (evicted up to %d), want nothing (2)", ns, ev)
	}
	_, err := s.Resume(fmt.Sprintf("%d_1", x.ID()))
	wantKind(t, err, KindGone, CodeEventsGone)
}

// TestJSONStreamLetGo: a client that takes one JSON body and leaves
// before its response can never have it (its stream has no ids and no
// log); once the response is in, nothing of it may stay behind, or every
// abandoned JSON request would hold its response, and its stream, for the
// rest of the session.
func TestJSONStreamLetGo(t *testing.T) {
	b := logBridge(t, Config{})
	s := logSession(t, b, "2025-11-25")
	msgs, _, err := ParseBody([]byte(`{"jsonrpc":"2.0","id":"j","method":"tools/call","params":{"name":"slow","arguments":{"ms":50,"steps":1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Send(msgs, true)
	if err != nil {
		t.Fatal(err)
	}
	st.Detach()
	waitFinal(t, st)
	if n := pending(st); n != 0 {
		t.Errorf("%d messages kept on a JSON-only stream whose client left: nobody can ever take them", n)
	}
}

// pending is how many messages wait on st, neither taken nor in the log.
func pending(st *Stream) int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.msgs)
}
