package httpapi_test

// SSE resumability and backpressure on real connections: clients that
// drop their streams at random points and resume with Last-Event-ID,
// Last-Event-IDs presented where they do not belong, events that aged out
// of the log, and clients that stop reading while the child floods them.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
)

// sseEv is one SSE event as sent, priming events (empty data) included.
type sseEv struct {
	id      string
	hasID   bool
	event   string
	data    string
	hasData bool
	retry   string
}

// evReader reads SSE events of any size from a live stream, one at a
// time; blocks of comments only (keep-alives) are skipped.
type evReader struct{ br *bufio.Reader }

func newEvReader(r io.Reader, size int) *evReader { return &evReader{br: bufio.NewReaderSize(r, size)} }

func (r *evReader) next() (sseEv, error) {
	var ev sseEv
	seen := false
	for {
		line, err := r.br.ReadString('\n')
		if err != nil {
			if err == io.EOF && (line != "" || seen) {
				err = io.ErrUnexpectedEOF // an event cut in the middle
			}
			return ev, err
		}
		line = strings.TrimSuffix(line, "\n")
		field := func(name string) (string, bool) {
			v, ok := strings.CutPrefix(line, name+":")
			return strings.TrimPrefix(v, " "), ok
		}
		if line == "" {
			if seen {
				return ev, nil
			}
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		seen = true
		if v, ok := field("id"); ok {
			ev.id, ev.hasID = v, true
		} else if v, ok := field("data"); ok {
			if ev.hasData {
				ev.data += "\n"
			}
			ev.data, ev.hasData = ev.data+v, true
		} else if v, ok := field("retry"); ok {
			ev.retry = v
		} else if v, ok := field("event"); ok {
			ev.event = v
		}
	}
}

// streamCheck follows one logical SSE stream across the connections a
// client reads it on, and checks every event against the contract: each
// data event has an id "<stream>_<n>" of the same stream, n going 1, 2,
// 3... with no gap and no repeat across connections; a priming event
// (empty data, retry 1000) comes only on sessions that prime, first on its
// connection, with the id of the last event the client has.
type streamCheck struct {
	primes bool
	post   bool   // a POST stream: after the last message, the stream ends
	prefix string // "<stream>_", from the first id
	lastID string // the last event id the client has: its Last-Event-ID
	nextN  int64  // the n the next data event must have
	// onData checks one message; done says the stream has given all it owes.
	onData func(m map[string]any) (done bool, err error)
}

func newStreamCheck(primes, post bool, onData func(map[string]any) (bool, error)) *streamCheck {
	return &streamCheck{primes: primes, post: post, nextN: 1, onData: onData}
}

// read reads up to k data events of one connection (k < 0: all there
// are), and in any case until the client has an event id to resume from
// (the priming event, or else the first data event). It reports done once
// onData has seen everything; a POST stream is then read to its end,
// which must come with no further event.
func (c *streamCheck) read(body io.Reader, k int) (done bool, err error) {
	r := newEvReader(body, 64<<10)
	first := true
	for got := 0; done || k < 0 || got < k || c.lastID == ""; {
		ev, err := r.next()
		if err != nil {
			if done && c.post && err == io.EOF {
				return true, nil
			}
			if !done && c.post && err == io.EOF {
				return false, fmt.Errorf("the POST stream ended before its response (last id %q)", c.lastID)
			}
			return done, fmt.Errorf("reading the stream after %q: %w", c.lastID, err)
		}
		if done {
			return true, fmt.Errorf("an event after the stream's last message: %+v", ev)
		}
		if !ev.hasData || ev.data == "" {
			if !c.primes {
				return false, fmt.Errorf("an event without data on a session that must not get one: %+v", ev)
			}
			if !first {
				return false, fmt.Errorf("a priming event that is not the first of its connection: %+v", ev)
			}
			want := c.lastID
			if want == "" {
				want = "<stream>_0"
				if p, ok := strings.CutSuffix(ev.id, "_0"); ok && p != "" {
					c.prefix, want = p+"_", ev.id
				}
			}
			if ev.id != want || ev.retry != "1000" {
				return false, fmt.Errorf("priming event %+v: want id %q and retry 1000", ev, want)
			}
			c.lastID = ev.id
			first = false
			continue
		}
		first = false
		if !ev.hasID {
			return false, fmt.Errorf("an event without an id: %q", ev.data)
		}
		if c.prefix == "" {
			i := strings.LastIndexByte(ev.id, '_')
			if i <= 0 {
				return false, fmt.Errorf("malformed event id %q", ev.id)
			}
			c.prefix = ev.id[:i+1]
		}
		if want := c.prefix + strconv.FormatInt(c.nextN, 10); ev.id != want {
			return false, fmt.Errorf("event id %q, want %q (events of one stream, each once, in order)", ev.id, want)
		}
		c.nextN++
		c.lastID = ev.id
		got++
		var m map[string]any
		d := json.NewDecoder(strings.NewReader(ev.data))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			return false, fmt.Errorf("event %s: bad JSON %q", ev.id, ev.data)
		}
		if done, err = c.onData(m); err != nil {
			return done, fmt.Errorf("event %s: %w", ev.id, err)
		}
		if done && !c.post {
			return true, nil
		}
	}
	return false, nil
}

// cutSeed is the seed of the random cuts: RESUME_SEED if set, so that a
// failure can be replayed, else a new one, logged.
func cutSeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("RESUME_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("RESUME_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("seed %d (replay with RESUME_SEED=%d)", seed, seed)
	return seed
}

func param(m map[string]any, k string) any {
	p, _ := m["params"].(map[string]any)
	return p[k]
}

// cutPOST runs one tools/call slow with progress on session sid and reads
// its stream the way a client on a bad network does: a random number of
// events, then the connection drops (the request's context is
// cancelled), then a GET with Last-Event-ID, again and again until the
// response. Every progress value must arrive once and in order, then the
// response once; log messages (which belong to no stream once the client
// is gone) may be missing but never repeat. It returns the stream's id
// prefix and the number of resumes.
func cutPOST(ctx context.Context, e *env, rng *rand.Rand, i int, sid, version string) (string, int, error) {
	token := fmt.Sprintf("tok-%d", i)
	reqID := fmt.Sprintf("call-%d", i)
	steps := 50 + i%16
	var progress int64
	lastLog := 0
	c := newStreamCheck(version == "2025-11-25", true, func(m map[string]any) (bool, error) {
		switch {
		case m["method"] == "notifications/progress":
			if tok := param(m, "progressToken"); tok != token {
				return false, fmt.Errorf("progress with token %v, want %s: another session's", tok, token)
			}
			if p, _ := param(m, "progress").(json.Number).Int64(); p != progress+1 {
				return false, fmt.Errorf("progress %d after %d", p, progress)
			}
			progress++
		case m["method"] == "notifications/message":
			var j int
			if _, err := fmt.Sscanf(fmt.Sprint(param(m, "data")), "slow step %d", &j); err != nil || j <= lastLog {
				return false, fmt.Errorf("log message %v after step %d", m, lastLog)
			}
			lastLog = j
		case m["id"] == reqID && m["method"] == nil:
			if text(m) != "slow done" || progress != int64(steps) {
				return false, fmt.Errorf("response %v after %d of %d progress", m, progress, steps)
			}
			return true, nil
		default:
			return false, fmt.Errorf("a message that is not this call's: %v", m)
		}
		return false, nil
	})
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":"slow","arguments":{"ms":%d,"steps":%d},"_meta":{"progressToken":%q}}}`,
		reqID, 3*steps, steps, token)
	r := req{sid: sid, version: version, body: body}
	for resumes := 0; ; resumes++ {
		cctx, cancel := context.WithCancel(ctx)
		resp, err := e.try(cctx, r)
		if err != nil {
			cancel()
			return c.prefix, resumes, err
		}
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			b, _ := io.ReadAll(resp.Body)
			cancel()
			return c.prefix, resumes, fmt.Errorf("%s with Last-Event-ID %q: %d %q %s", r.method, c.lastID, resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
		// k = 0: the connection drops as soon as the headers are in (on a
		// resume, before the replay is written).
		done, err := c.read(resp.Body, rng.IntN(8))
		cancel() // the connection drops, whatever the client has read
		resp.Body.Close()
		if err != nil || done {
			return c.prefix, resumes, err
		}
		r = req{method: http.MethodGet, sid: sid, version: version, header: map[string]string{"Last-Event-ID": c.lastID}}
	}
}

// cutGET reads the session's GET stream with random cuts and resumes
// while another goroutine makes the child send marks notifications, each
// with POSTs that take only JSON (so nothing but their response can go on
// them): every notification must arrive on the GET stream once, in order.
func cutGET(ctx context.Context, e *env, rng *rand.Rand, i int, sid, version string, marks int) (string, int, error) {
	seq := 0
	c := newStreamCheck(version == "2025-11-25", false, func(m map[string]any) (bool, error) {
		if m["method"] != "notifications/marker" || param(m, "session") != strconv.Itoa(i) {
			return false, fmt.Errorf("not this session's marker: %v", m)
		}
		if s, _ := param(m, "seq").(json.Number).Int64(); s != int64(seq+1) {
			return false, fmt.Errorf("marker %d after %d", s, seq)
		}
		seq++
		return seq == marks, nil
	})
	pctx, stop := context.WithCancel(ctx)
	var producer sync.WaitGroup
	defer producer.Wait() // the producer is stopped and gone when cutGET returns
	defer stop()
	produced := make(chan error, 1)
	produce := func() {
		for j := 1; j <= marks; j++ {
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":"n-%d","method":"tools/call","params":{"name":"notify","arguments":{"method":"notifications/marker","params":{"session":"%d","seq":%d}}}}`, j, i, j)
			resp, err := e.try(pctx, req{sid: sid, version: version, accept: "application/json", body: body})
			if err != nil {
				produced <- err
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(b), `"text":"ok"`) {
				produced <- fmt.Errorf("notify %d: %d %s", j, resp.StatusCode, b)
				return
			}
		}
		produced <- nil
	}
	r := req{method: http.MethodGet, sid: sid, version: version}
	for resumes := 0; ; resumes++ {
		cctx, cancel := context.WithCancel(ctx)
		resp, err := e.try(cctx, r)
		if err != nil {
			cancel()
			return c.prefix, resumes, err
		}
		if resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			cancel()
			return c.prefix, resumes, fmt.Errorf("GET with Last-Event-ID %q: %d %s", c.lastID, resp.StatusCode, b)
		}
		if resumes == 0 {
			producer.Go(produce)
		}
		done, err := c.read(resp.Body, rng.IntN(8))
		cancel()
		resp.Body.Close()
		if err != nil {
			return c.prefix, resumes, err
		}
		if done {
			return c.prefix, resumes, <-produced
		}
		r.header = map[string]string{"Last-Event-ID": c.lastID}
	}
}

// TestResumeRandomCuts: many sessions of every 2025 version at once, each
// dropping its connection at random points of a streamed tools/call (or
// of its GET stream) and resuming with Last-Event-ID until it has
// everything. Nothing is lost, repeated, reordered or taken from another
// stream or session; stream ids are unique across the bridge.
func TestResumeRandomCuts(t *testing.T) {
	seed := cutSeed(t)
	e := newEnv(t, envOpts{})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a hang guard only
	defer cancel()
	versions := []string{"2025-03-26", "2025-06-18", "2025-11-25"}
	type job struct {
		i       int
		sid     string
		version string
		get     bool
	}
	var jobs []job
	for i := range 18 {
		v := versions[i%3]
		jobs = append(jobs, job{i, e.initialize(v), v, false})
	}
	for i := 18; i < 21; i++ {
		v := versions[i%3]
		jobs = append(jobs, job{i, e.initialize(v), v, true})
	}
	prefixes := make([]string, len(jobs))
	resumes := make([]int, len(jobs))
	var wg sync.WaitGroup
	for k, j := range jobs {
		rng := rand.New(rand.NewPCG(seed, uint64(j.i)))
		wg.Go(func() {
			var err error
			if j.get {
				prefixes[k], resumes[k], err = cutGET(ctx, e, rng, j.i, j.sid, j.version, 120)
			} else {
				prefixes[k], resumes[k], err = cutPOST(ctx, e, rng, j.i, j.sid, j.version)
			}
			if err != nil {
				inFlight := -1
				if s, serr := e.b.Session(j.sid, ""); serr == nil {
					inFlight = s.InFlight()
				}
				t.Errorf("session %d (%s, GET stream %v), after %d resumes: %v (requests still in flight: %d)", j.i, j.version, j.get, resumes[k], err, inFlight)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.Fatalf("replay with RESUME_SEED=%d", seed)
	}
	total := 0
	seen := map[string]int{}
	for k, p := range prefixes {
		total += resumes[k]
		if o, dup := seen[p]; dup {
			t.Errorf("sessions %d and %d have the same stream id %q", jobs[o].i, jobs[k].i, p)
		}
		seen[p] = k
	}
	t.Logf("%d resumes in %d sessions", total, len(jobs))
	if total < len(jobs) {
		t.Errorf("only %d resumes: the cuts did not happen", total)
	}
}

// readAllEvents reads a stream to its end (a hang guard on ctx).
func readAllEvents(t *testing.T, body io.Reader) []sseEv {
	t.Helper()
	var out []sseEv
	r := newEvReader(body, 64<<10)
	for {
		ev, err := r.next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
}

// lastEvent reads the whole SSE response of a request and returns the id
// of its last event.
func lastEvent(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	evs := readAllEvents(t, resp.Body)
	if len(evs) == 0 || evs[len(evs)-1].id == "" {
		t.Fatalf("events %+v: want some, with ids", evs)
	}
	return evs[len(evs)-1].id
}

// checkBody checks a refusal: its status, a JSON-RPC error with code,
// and nothing of any stream in it.
func checkRefusal(t *testing.T, resp *http.Response, status, code int) {
	t.Helper()
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var m struct {
		Error *struct{ Code int } `json:"error"`
	}
	if resp.StatusCode != status || json.Unmarshal(body, &m) != nil || m.Error == nil || m.Error.Code != code {
		t.Fatalf("%d %s: want %d with JSON-RPC error %d", resp.StatusCode, body, status, code)
	}
	if ct := resp.Header.Get("Content-Type"); ct == "text/event-stream" || strings.Contains(string(body), "progress") || strings.Contains(string(body), "done") {
		t.Fatalf("a refusal that carries stream data (%q): %s", ct, body)
	}
}

func resumeReq(sid, last string) req {
	return req{method: http.MethodGet, sid: sid, version: "2025-11-25", header: map[string]string{"Last-Event-ID": last}}
}

// TestResumeIsolation: a Last-Event-ID only resumes a stream of the
// session it came from. Presented on another session of the same
// principal it is a 400 with no data (stream ids are unique across the
// bridge, so it names nothing there); another principal cannot even find
// the session (404); malformed or unknown ids, and ids of events not yet
// sent, are 400; a GET stream cannot be resumed while another GET stream
// of the session is open (409).
func TestResumeIsolation(t *testing.T) {
	t.Run("sessions", func(t *testing.T) {
		e := newEnv(t, envOpts{})
		a := e.initialize("2025-11-25")
		b := e.initialize("2025-11-25")
		call := `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"slow","arguments":{"ms":20,"steps":2},"_meta":{"progressToken":"secret-a"}}}`
		idA := lastEvent(t, e.do(req{sid: a, version: "2025-11-25", body: call}))
		stream, _, _ := strings.Cut(idA, "_")
		for _, last := range []string{idA, stream + "_0", stream + "_1"} {
			checkRefusal(t, e.do(resumeReq(b, last)), 400, bridge.CodeInvalidRequest)
		}
		for _, last := range []string{"garbage", "_1", stream + "_", stream + "_x", stream + "_-1", "999999999_1", stream + "_999"} {
			checkRefusal(t, e.do(resumeReq(a, last)), 400, bridge.CodeInvalidRequest)
		}
		// The same id on its own session resumes (the stream is complete:
		// nothing after its last event, and the connection ends).
		resp := e.do(resumeReq(a, idA))
		evs := readAllEvents(t, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(evs) != 1 || evs[0].id != idA || evs[0].data != "" {
			t.Fatalf("resume on the owning session: %d %+v, want only the priming event", resp.StatusCode, evs)
		}
	})

	t.Run("principals", func(t *testing.T) {
		f := newAuthFixture(t, httpapi.Options{})
		alice, bob := bearer(aliceToken), bearer(bobToken)
		sa := f.initializeAs(alice)
		sb := f.initializeAs(bob)
		resp := f.do(req{sid: sa, version: "2025-11-25", accept: "text/event-stream", header: alice, body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`})
		idA := lastEvent(t, resp)
		resume := func(sid string, h map[string]string) *http.Response {
			return f.do(req{method: http.MethodGet, sid: sid, version: "2025-11-25", header: withHeader(h, "Last-Event-ID", idA)})
		}
		checkRefusal(t, resume(sa, bob), 404, bridge.CodeSessionNotFound)
		checkRefusal(t, resume(sb, bob), 400, bridge.CodeInvalidRequest)
		resp = resume(sa, alice)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("the owner's resume: %d", resp.StatusCode)
		}
	})

	t.Run("second GET", func(t *testing.T) {
		e := newEnv(t, envOpts{})
		sid := e.initialize("2025-11-25")
		ctx, cancel := context.WithCancel(t.Context())
		get := e.doCtx(ctx, req{method: http.MethodGet, sid: sid, version: "2025-11-25"})
		e.notifyFromChildJSON(sid, 1)
		r := newEvReader(get.Body, 4<<10)
		var last sseEv
		for last.data == "" {
			var err error
			if last, err = r.next(); err != nil {
				t.Fatal(err)
			}
		}
		cancel()
		get.Body.Close()
		// A new GET stream once the old one is let go (409 until the
		// server has seen the connection drop).
		var get2 *http.Response
		cancel2 := openWhenFree(t, e, req{method: http.MethodGet, sid: sid, version: "2025-11-25"}, &get2)
		checkRefusal(t, e.do(resumeReq(sid, last.id)), 409, bridge.CodeInvalidRequest)
		cancel2()
		get2.Body.Close()
		var get3 *http.Response
		cancel3 := openWhenFree(t, e, resumeReq(sid, last.id), &get3)
		defer cancel3()
		defer get3.Body.Close()
		if ev, err := newEvReader(get3.Body, 4<<10).next(); err != nil || ev.id != last.id || ev.data != "" {
			t.Fatalf("resumed GET stream: %+v %v, want the priming event with id %q", ev, err, last.id)
		}
	})
}

// openWhenFree sends r until it is not refused with 409: a GET stream's
// slot is free only once the server has noticed that the previous
// connection dropped. Every attempt is a real request; the loop is
// bounded.
func openWhenFree(t *testing.T, e *env, r req, out **http.Response) context.CancelFunc {
	t.Helper()
	for range 1000 {
		ctx, cancel := context.WithCancel(t.Context())
		resp := e.doCtx(ctx, r)
		if resp.StatusCode == 200 {
			*out = resp
			return cancel
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if resp.StatusCode != 409 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	}
	t.Fatal("the previous stream was never let go")
	return nil
}

// notifyFromChildJSON makes the child send a notification unrelated to
// any request, with a POST that takes only JSON, so that it goes on the
// GET stream (or waits for one).
func (e *env) notifyFromChildJSON(sid string, j int) {
	e.t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":"n%d","method":"tools/call","params":{"name":"notify","arguments":{"method":"notifications/resources/list_changed","params":{}}}}`, j)
	if msgs := readMessages(e.t, e.do(req{sid: sid, version: "2025-11-25", accept: "application/json", body: body})); len(msgs) != 1 || text(msgs[0]) != "ok" {
		e.t.Fatalf("notify: %v", msgs)
	}
}

// TestResumeAgedOut: with a log of 8 events, a stream of 51 (50 progress
// notifications and the response) that the client left after its
// priming event keeps only its last 8: resuming from before them is 410
// Gone with code -32006 (a gap is never silent), from right before them
// replays exactly them, and from the last progress event gets the
// response.
func TestResumeAgedOut(t *testing.T) {
	e := newEnv(t, envOpts{bridge: bridge.Config{EventLogEvents: 8}})
	// Initialized with a JSON-only Accept, so its answer never goes to
	// the event log, whenever the child gives it (an answer later than
	// --sse-delay would otherwise be an SSE event, and one more to age
	// out below).
	resp := e.do(req{body: sprintf(initBody, "2025-11-25"), accept: "application/json"})
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: status %d, session %q", resp.StatusCode, sid)
	}
	resp = e.do(req{body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, sid: sid, version: "2025-11-25"})
	resp.Body.Close()
	ctx, cancel := context.WithCancel(t.Context())
	resp = e.doCtx(ctx, req{sid: sid, version: "2025-11-25",
		body: `{"jsonrpc":"2.0","id":"f","method":"tools/call","params":{"name":"flood","arguments":{"count":50,"bytes":10},"_meta":{"progressToken":"p"}}}`})
	prime, err := newEvReader(resp.Body, 4<<10).next()
	cancel()
	resp.Body.Close()
	stream, ok := strings.CutSuffix(prime.id, "_0")
	if err != nil || !ok || prime.data != "" {
		t.Fatalf("priming event %+v, %v (status %d, %s)", prime, err, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	id := func(n int) string { return fmt.Sprintf("%s_%d", stream, n) }

	// The call goes on without its client. Resuming from the 50th
	// progress event is refused (400) until it has been sent, or (409)
	// while the first connection is still held; then it gets the
	// response, live or from the log.
	var got []sseEv
	for try := 0; ; try++ {
		if try == 1000 {
			t.Fatal("the 50th progress event never came")
		}
		resp := e.do(resumeReq(sid, id(50)))
		if resp.StatusCode == 400 || resp.StatusCode == 409 {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			continue
		}
		if resp.StatusCode != 200 {
			t.Fatalf("resume from %s: %d", id(50), resp.StatusCode)
		}
		got = readAllEvents(t, resp.Body)
		resp.Body.Close()
		break
	}
	if len(got) != 2 || got[0].id != id(50) || got[1].id != id(51) || !strings.Contains(got[1].data, "flood done") {
		t.Fatalf("resume from the last progress: %+v", got)
	}

	for _, n := range []int{0, 1, 42} {
		checkRefusal(t, e.do(resumeReq(sid, id(n))), http.StatusGone, bridge.CodeEventsGone)
	}
	checkRefusal(t, e.do(resumeReq(sid, id(52))), 400, bridge.CodeInvalidRequest)
	resp = e.do(resumeReq(sid, id(43)))
	got = readAllEvents(t, resp.Body)
	resp.Body.Close()
	var ids []string
	for _, ev := range got[1:] {
		ids = append(ids, strings.TrimPrefix(ev.id, stream))
	}
	if resp.StatusCode != 200 || got[0].id != id(43) || fmt.Sprint(ids) != "[_44 _45 _46 _47 _48 _49 _50 _51]" {
		t.Fatalf("resume at the edge of the log: %d, priming %q, events %v", resp.StatusCode, got[0].id, ids)
	}
	if n := e.b.Stats().EventsEvicted.Load(); n != 43 {
		t.Errorf("EventsEvicted %d, want 43", n)
	}
}

// rawRequest sends one HTTP/1.1 request on a TCP connection of its own
// and reads the response's headers, nothing more; what the client then
// reads is up to the test. The connection's receive buffer is small, so
// that a client that stops reading holds up the server's writes soon. The
// read deadline is a hang guard.
func rawRequest(t *testing.T, e *env, method, target string, header map[string]string, body string) (net.Conn, *http.Response) {
	t.Helper()
	addr := e.srv.Listener.Addr().String()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.(*net.TCPConn).SetReadBuffer(4 << 10); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, target, addr)
	for k, v := range header {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	if method == http.MethodPost {
		fmt.Fprintf(&b, "Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n")
	b.WriteString(body)
	if _, err := io.WriteString(conn, b.String()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 4<<10), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%s %s: %d %q", method, target, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return conn, resp
}

// heapInuse is the live Go heap after a collection.
func heapInuse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// Flood sizes for the slow-reader tests: 1024 progress notifications of
// 64 KiB, 64 MiB in all, far more than any buffer of the bridge may hold
// (a 256 MiB flood takes over 20 s under -race on 2 cores, most of it in
// the bridge's JSON scanning, for no extra coverage). The heap bound is
// what the bridge may keep for one session with the default bounds (a
// 4 MiB event log, a 1 MiB stream buffer, a stream buffer's worth taken
// by a legacy pump, one message being read from the child and one being
// written), plus the test's and the HTTP server's own, with a wide
// margin: measured peaks under -race are 1 to 6 MiB over the baseline. A
// bridge that buffered for the stalled client would hold about the whole
// 64 MiB flood, twice the bound.
const (
	floodCount = 1024
	floodBytes = 64 << 10
	heapBound  = 32 << 20
)

// TestSlowReaderIsCut: a client that opens a POST stream and then never
// reads, while the child floods it, has its connection cut once the
// stream's buffer is over its bound (StreamsCut); meanwhile another
// session and another stream of the same session are served, the child
// finishes the flood (its response is in the log, after the events that
// aged out), and the Go heap stays far below what was flooded.
func TestSlowReaderIsCut(t *testing.T) {
	e := newEnv(t, envOpts{})
	a := e.initialize("2025-11-25")
	other := e.initialize("2025-06-18")
	sa, err := e.b.Session(a, "")
	if err != nil {
		t.Fatal(err)
	}
	base := heapInuse()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":"flood","method":"tools/call","params":{"name":"flood","arguments":{"count":%d,"bytes":%d},"_meta":{"progressToken":"f"}}}`, floodCount, floodBytes)
	_, resp := rawRequest(t, e, http.MethodPost, "/mcp", map[string]string{
		"Accept": "application/json, text/event-stream", "Mcp-Session-Id": a, "MCP-Protocol-Version": "2025-11-25",
	}, body)
	prime, err := newEvReader(resp.Body, 4<<10).next()
	stream, ok := strings.CutSuffix(prime.id, "_0")
	if err != nil || !ok {
		t.Fatalf("priming event %+v, %v (status %d, %s)", prime, err, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	// From here on the client reads nothing.

	deadline := time.Now().Add(60 * time.Second) // a hang guard only
	var peak uint64
	served := 0 // calls of the other session answered while the flood was in flight
	for j := 0; ; j++ {
		if time.Now().After(deadline) {
			t.Fatalf("after %d rounds: StreamsCut %d, flood in flight %d", j, e.b.Stats().StreamsCut.Load(), sa.InFlight())
		}
		mark := fmt.Sprintf("other-%d", j)
		if _, msgs := e.call(other, j, "echo", map[string]any{"message": mark}); len(msgs) != 1 || text(msgs[0]) != mark {
			t.Fatalf("the other session: %v", msgs)
		}
		if j%8 == 0 {
			// Another stream of the flooded session: the same child.
			if _, msgs := e.call(a, fmt.Sprintf("pid-%d", j), "pid", nil); len(msgs) != 1 || text(msgs[0]) == "" {
				t.Fatalf("a second stream of the flooded session: %v", msgs)
			}
		}
		if j%2 == 0 {
			peak = max(peak, heapInuse())
		}
		inFlight := sa.InFlight()
		if inFlight > 0 {
			served++
		}
		if e.b.Stats().StreamsCut.Load() > 0 && inFlight == 0 {
			break
		}
	}
	peak = max(peak, heapInuse())
	t.Logf("heap: baseline %d MiB, peak %d MiB; %d calls of another session answered during the flood", base>>20, peak>>20, served)
	if n := e.b.Stats().StreamsCut.Load(); n != 1 {
		t.Errorf("StreamsCut %d, want 1", n)
	}
	if served == 0 {
		t.Error("no call of the other session was answered while the flood was in flight")
	}
	if peak > base+heapBound {
		t.Errorf("heap grew by %d MiB while flooding %d MiB to a stalled client; want under %d MiB", (peak-base)>>20, floodCount*floodBytes>>20, heapBound>>20)
	}

	// The flood's first events have aged out of the log; its last
	// progress event and the response are there.
	checkRefusal(t, e.do(resumeReq(a, stream+"_0")), http.StatusGone, bridge.CodeEventsGone)
	resp = e.do(resumeReq(a, fmt.Sprintf("%s_%d", stream, floodCount)))
	got := readAllEvents(t, resp.Body)
	resp.Body.Close()
	if len(got) != 2 || got[1].id != fmt.Sprintf("%s_%d", stream, floodCount+1) || !strings.Contains(got[1].data, "flood done") {
		t.Fatalf("resume after the flood: %d events, last %+v", len(got), got[len(got)-1].id)
	}
}

// TestLegacySlowReaderIsCut: the legacy transport cannot resume, so a
// legacy stream that stops being read while the child floods it is cut
// and its session ends (its POSTs get 404), while another legacy session
// and a Streamable one go on, and the heap stays bounded.
func TestLegacySlowReaderIsCut(t *testing.T) {
	e := newEnv(t, envOpts{})
	good := openLegacy(t, e.client, e.srv.URL+"/sse", nil)
	good.initialize("2025-11-25")
	other := e.initialize("2025-11-25")
	base := heapInuse()

	_, resp := rawRequest(t, e, http.MethodGet, "/sse", map[string]string{"Accept": "text/event-stream"}, "")
	ev, err := newEvReader(resp.Body, 4<<10).next()
	if err != nil || ev.event != "endpoint" {
		t.Fatalf("first event %+v, %v", ev, err)
	}
	u, err := url.Parse(e.srv.URL + "/sse")
	if err != nil {
		t.Fatal(err)
	}
	endpoint, err := u.Parse(ev.data)
	if err != nil {
		t.Fatal(err)
	}
	// From here on the client reads nothing.
	post := func(body string) int {
		resp, err := e.client.Post(endpoint.String(), "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, body := range []string{
		sprintf(initBody, "2025-11-25"),
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		fmt.Sprintf(`{"jsonrpc":"2.0","id":"flood","method":"tools/call","params":{"name":"flood","arguments":{"count":%d,"bytes":%d},"_meta":{"progressToken":"f"}}}`, floodCount, floodBytes),
	} {
		if s := post(body); s != http.StatusAccepted {
			t.Fatalf("POST %s: %d", body[:40], s)
		}
	}

	deadline := time.Now().Add(60 * time.Second) // a hang guard only
	var peak uint64
	for j := 0; ; j++ {
		if time.Now().After(deadline) {
			t.Fatalf("after %d rounds the flooded legacy session still takes POSTs (StreamsCut %d)", j, e.b.Stats().StreamsCut.Load())
		}
		mark := fmt.Sprintf("m-%d", j)
		if msgs := good.callTool(fmt.Sprintf("g%d", j), "echo", map[string]any{"message": mark}, nil); len(msgs) != 1 || text(msgs[0]) != mark {
			t.Fatalf("the other legacy session: %v", msgs)
		}
		if _, msgs := e.call(other, j, "echo", map[string]any{"message": mark}); len(msgs) != 1 || text(msgs[0]) != mark {
			t.Fatalf("the Streamable session: %v", msgs)
		}
		peak = max(peak, heapInuse())
		s := post(fmt.Sprintf(`{"jsonrpc":"2.0","id":"p%d","method":"ping"}`, j))
		if s == http.StatusNotFound {
			break
		}
		if s != http.StatusAccepted {
			t.Fatalf("POST to the flooded session: %d", s)
		}
	}
	t.Logf("heap: baseline %d MiB, peak %d MiB", base>>20, peak>>20)
	if e.b.Stats().StreamsCut.Load() == 0 {
		t.Error("the legacy session ended, but not by a cut")
	}
	if peak > base+heapBound {
		t.Errorf("heap grew by %d MiB; want under %d MiB", (peak-base)>>20, heapBound>>20)
	}
	if msgs := good.callTool("after", "echo", map[string]any{"message": "after"}, nil); len(msgs) != 1 || text(msgs[0]) != "after" {
		t.Fatalf("the other legacy session after the cut: %v", msgs)
	}
}

// TestFastReaderNotCut: a client that reads as fast as it can is never
// cut, even by a burst of 5,000 small progress notifications, and gets
// them all, in order, on every 2025 version.
func TestFastReaderNotCut(t *testing.T) {
	e := newEnv(t, envOpts{})
	for _, version := range []string{"2025-03-26", "2025-06-18", "2025-11-25"} {
		sid := e.initialize(version)
		var progress int64
		c := newStreamCheck(version == "2025-11-25", true, func(m map[string]any) (bool, error) {
			if m["method"] == "notifications/progress" {
				if p, _ := param(m, "progress").(json.Number).Int64(); p != progress+1 {
					return false, fmt.Errorf("progress %d after %d", p, progress)
				}
				progress++
				return false, nil
			}
			if text(m) != "flood done" || progress != 5000 {
				return false, fmt.Errorf("%v after %d progress", m, progress)
			}
			return true, nil
		})
		resp := e.do(req{sid: sid, version: version,
			body: `{"jsonrpc":"2.0","id":"f","method":"tools/call","params":{"name":"flood","arguments":{"count":5000,"bytes":10},"_meta":{"progressToken":"p"}}}`})
		done, err := c.read(resp.Body, -1)
		resp.Body.Close()
		if err != nil || !done {
			t.Fatalf("%s: done %v, %v (StreamsCut %d: the bridge cut a client that reads as fast as it can)", version, done, err, e.b.Stats().StreamsCut.Load())
		}
	}
	if n := e.b.Stats().StreamsCut.Load(); n != 0 {
		t.Fatalf("StreamsCut %d: a client that keeps up was cut", n)
	}
}
