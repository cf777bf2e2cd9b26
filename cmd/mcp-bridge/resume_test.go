package main

// SSE resumability and backpressure, end to end: real SDK clients whose
// connections a proxy cuts part way must get every event of a long call
// exactly once, by resuming with Last-Event-ID; and a client that reads a
// huge message slowly, or a flood not at all, must not make the bridge's
// memory grow with what the child writes.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The long call the SDK clients make through the cutting proxy: badchild's
// slow sends a progress notification and a log message per step.
const (
	cutSteps = 40
	cutMS    = 2000 // the whole call; 50 ms a step
	// maxCut: a cut comes 1 to maxCut bytes into a stream, past what the
	// proxy spares. A step is some 350 bytes (progress and log), so the
	// slow call's stream (about 14 KB) is always cut at least once, and a
	// few times on average: each cut costs the client the server's retry
	// interval (1 s) before it resumes.
	maxCut = 5000
	// maxCuts bounds the cuts per test, and so its time, whatever the
	// draws: past it, streams pass whole.
	maxCuts = 6
)

// TestResumeGoSDKThroughCuts: the official Go SDK client, pinned to
// 2025-11-25, makes a long call through a proxy that cuts its SSE
// connections part way. The SDK resumes each cut stream with a GET carrying
// Last-Event-ID; the call must succeed, every progress notification must
// arrive exactly once and in order, and every log message exactly once.
func TestResumeGoSDKThroughCuts(t *testing.T) {
	badchild := testpeers.BuildGo(t, "./testdata/badchild")
	p := startBridge(t, nil, "--", badchild)
	testGoThroughCuts(t, startCutProxy(t, strings.TrimPrefix(p.Base, "http://")))
}

// TestResumeGoSDKThroughNginxCuts is TestResumeGoSDKThroughCuts with nginx
// (its default buffering on, HTTP/1.1 to the bridge) between the cutting
// proxy and the bridge: the cut reaches the bridge as nginx giving up its
// upstream connection, and the resuming GET's Last-Event-ID goes through
// nginx.
func TestResumeGoSDKThroughNginxCuts(t *testing.T) {
	requireNginx(t)
	badchild := testpeers.BuildGo(t, "./testdata/badchild")
	p := startBridge(t, nil, "--", badchild)
	nginx := startNginx(t, strings.TrimPrefix(p.Base, "http://"),
		"            proxy_http_version 1.1;\n            proxy_set_header Connection \"\";")
	testGoThroughCuts(t, startCutProxy(t, strings.TrimPrefix(nginx, "http://")))
}

func testGoThroughCuts(t *testing.T, px *cutProxy) {
	ctx, cancel := context.WithTimeout(t.Context(), e2eTimeout)
	defer cancel()
	c := connectGo(ctx, t, px.URL, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"ms": cutMS, "steps": cutSteps}}
	params.SetProgressToken("cut-1")
	if got := c.callText(ctx, t, params); got != "slow done" {
		t.Errorf("slow = %q, want %q", got, "slow done")
	}
	// In order, so a replayed event shows up in place of the one due.
	for i := 1; i <= cutSteps; i++ {
		got := receive(ctx, t, c.progress, fmt.Sprintf("progress %d (%d dropped)", i, c.dropped.Load()))
		if got.ProgressToken != "cut-1" || got.Progress != float64(i) || got.Total != cutSteps {
			t.Fatalf("progress #%d = token %v, %v of %v; want cut-1, %d of %d (a repeat or a gap)",
				i, got.ProgressToken, got.Progress, got.Total, i, cutSteps)
		}
	}
	// Log messages travel on the call's stream while it is read, else on
	// the GET stream: across the two their order is not kept, so each
	// must come once, in any order. The last may come after the result.
	logs := make([]string, 0, cutSteps)
	for range cutSteps {
		l := receive(ctx, t, c.logs, fmt.Sprintf("log message after %q", logs))
		logs = append(logs, fmt.Sprint(l.Data))
	}
	checkStepLogs(t, logs)
	if err := c.cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	// A repeat of the last events would come after all of the above.
	if n, l := len(c.progress), len(c.logs); n+l > 0 || c.dropped.Load() > 0 {
		t.Errorf("%d more progress notifications and %d more log messages than sent (%d dropped)", n, l, c.dropped.Load())
	}
	px.check(t)
}

// TestResumeTypeScriptSDKThroughCuts is TestResumeGoSDKThroughCuts with the
// official TypeScript SDK client (testdata/node/resumeclient.mjs), as
// shipped: it resumes with Last-Event-ID after the server's retry interval.
// It may miss the last progress notification (typescript-sdk#2580), so the
// progress it saw must be 1, 2, ... k with no repeat and no gap.
func TestResumeTypeScriptSDKThroughCuts(t *testing.T) {
	node := testpeers.Node(t)
	script := filepath.Join(filepath.Dir(testpeers.NodeModules(t)), "resumeclient.mjs")
	badchild := testpeers.BuildGo(t, "./testdata/badchild")
	p := startBridge(t, nil, "--", badchild)
	px := startCutProxy(t, strings.TrimPrefix(p.Base, "http://"))

	ctx, cancel := context.WithTimeout(t.Context(), e2eTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, px.URL)
	cmd.Env = append(os.Environ(), "RESUME_STEPS="+strconv.Itoa(cutSteps), "RESUME_MS="+strconv.Itoa(cutMS))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	runErr := cmd.Run()
	var res struct {
		ProtocolVersion string    `json:"protocolVersion"`
		SessionID       string    `json:"sessionId"`
		Result          string    `json:"result"`
		Progress        []float64 `json:"progress"`
		Logs            []string  `json:"logs"`
		Disconnects     int       `json:"disconnects"`
		Errors          []string  `json:"errors"`
		Warnings        []string  `json:"warnings"`
	}
	lines := bytes.Split(bytes.TrimSpace(stdout.Bytes()), []byte("\n"))
	if err := json.Unmarshal(lines[len(lines)-1], &res); err != nil || runErr != nil {
		t.Fatalf("resumeclient: %v (parse: %v)\nstdout:\n%s\nstderr:\n%s", runErr, err, stdout.Bytes(), stderr.Bytes())
	}
	// The SDK may read a cut as the stream's end rather than an error, and
	// then reports nothing: the proxy's record, not this count, says
	// whether it resumed.
	t.Logf("the TS SDK reported %d disconnects as errors; progress %v; warnings %q", res.Disconnects, res.Progress, res.Warnings)
	if res.ProtocolVersion != "2025-11-25" {
		t.Errorf("negotiated %q, want 2025-11-25 (the bridge primes only from it)", res.ProtocolVersion)
	}
	if res.Result != "slow done" {
		t.Errorf("slow = %q, want %q", res.Result, "slow done")
	}
	if len(res.Progress) < cutSteps-1 {
		t.Errorf("progress %v: want 1..%d (the last may be missed)", res.Progress, cutSteps)
	}
	for i, v := range res.Progress {
		if v != float64(i+1) {
			t.Errorf("progress %v: value #%d is %v, want %d (a repeat or a gap)", res.Progress, i, v, i+1)
			break
		}
	}
	checkStepLogs(t, res.Logs)
	px.check(t)
}

// checkStepLogs checks that logs are badchild's "slow step i" for each
// step, each once.
func checkStepLogs(t *testing.T, logs []string) {
	t.Helper()
	seen := map[string]int{}
	for _, l := range logs {
		seen[l]++
	}
	for i := 1; i <= cutSteps; i++ {
		if n := seen[fmt.Sprintf("slow step %d", i)]; n != 1 {
			t.Errorf("log %q came %d times, want once; all logs: %q", fmt.Sprintf("slow step %d", i), n, logs)
		}
	}
	if len(logs) != cutSteps {
		t.Errorf("%d log messages, want %d: %q", len(logs), cutSteps, logs)
	}
}

// cutProxy is a TCP proxy on 127.0.0.1 that breaks SSE responses part way,
// as a flaky network or a proxy's idle timeout would: each connection that
// carries a text/event-stream response is closed after a random number of
// bytes of it (math/rand/v2, seeded; the seed is logged, and
// RESUME_TEST_SEED replays it, up to the order in which connections come),
// up to maxCuts cuts. Other responses pass untouched.
//
// It asks the bridge to close every connection after its response
// ("Connection: close" in place of the client's own Connection header), so
// each TCP connection carries one HTTP exchange and the proxy needs to
// parse only its head.
//
// It spares the start of each stream, up to the end of its first event
// that has an id. Cut before that, neither SDK can resume, by design: the
// Go SDK fails the call ("request terminated without response") when a
// call's stream breaks before it saw an id, and the TypeScript SDK
// reconnects without Last-Event-ID, opening a new standalone stream that
// will never carry the call's response. The bridge's priming event
// (2025-11-25) exists to hand the client an id at once; cutting before it
// tests the clients, not the bridge.
type cutProxy struct {
	URL    string // the MCP endpoint through the proxy
	ln     net.Listener
	target string
	seed   uint64

	mu    sync.Mutex
	rng   *rand.Rand
	open  map[net.Conn]bool
	log   []*proxied
	cuts  int
	wg    sync.WaitGroup
	close bool
}

// proxied is what the proxy saw of one exchange.
type proxied struct {
	method      string
	lastEventID string // the request's Last-Event-ID
	status      int
	sse         bool
	cutAfter    int // bytes of the stream past the spared start after which it was cut; 0: not cut
}

func startCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	seed := rand.Uint64()
	if s := os.Getenv("RESUME_TEST_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("RESUME_TEST_SEED: %v", err)
		}
	}
	t.Logf("cut proxy seed %d (RESUME_TEST_SEED=%d replays it)", seed, seed)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	px := &cutProxy{URL: "http://" + ln.Addr().String() + "/mcp", ln: ln, target: target, seed: seed,
		rng: rand.New(rand.NewPCG(seed, seed)), open: map[net.Conn]bool{}}
	px.wg.Go(px.accept)
	t.Cleanup(px.stop)
	return px
}

func (px *cutProxy) accept() {
	for {
		c, err := px.ln.Accept()
		if err != nil {
			return // stop closed the listener
		}
		px.mu.Lock()
		if px.close {
			px.mu.Unlock()
			c.Close()
			return
		}
		px.open[c] = true
		px.wg.Go(func() { px.serve(c) })
		px.mu.Unlock()
	}
}

// stop closes the listener and every connection, and waits for the
// proxy's goroutines.
func (px *cutProxy) stop() {
	px.ln.Close()
	px.mu.Lock()
	px.close = true
	for c := range px.open {
		c.Close()
	}
	px.mu.Unlock()
	px.wg.Wait()
}

func (px *cutProxy) track(c net.Conn) bool {
	px.mu.Lock()
	defer px.mu.Unlock()
	if px.close {
		return false
	}
	px.open[c] = true
	return true
}

func (px *cutProxy) untrack(cs ...net.Conn) {
	px.mu.Lock()
	defer px.mu.Unlock()
	for _, c := range cs {
		delete(px.open, c)
		c.Close()
	}
}

// serve proxies one connection: the request head (with Connection:
// close), then both directions as they come; a stream is cut where the
// random draw says.
func (px *cutProxy) serve(client net.Conn) {
	defer px.untrack(client)
	server, err := net.Dial("tcp", px.target)
	if err != nil {
		return
	}
	if !px.track(server) {
		server.Close()
		return
	}
	defer px.untrack(server)
	rec := &proxied{}
	var once sync.Once
	closeBoth := func() { once.Do(func() { client.Close(); server.Close() }) }

	px.wg.Go(func() { // client to server
		defer closeBoth()
		cr := bufio.NewReader(client)
		head, method, lastID, err := requestHead(cr)
		if err != nil {
			return
		}
		px.mu.Lock()
		rec.method, rec.lastEventID = method, lastID
		px.log = append(px.log, rec)
		px.mu.Unlock()
		if _, err := server.Write(head); err != nil {
			return
		}
		_, _ = io.Copy(server, cr)
	})

	defer closeBoth()
	sr := bufio.NewReader(server)
	head, status, sse, err := responseHead(sr)
	if err != nil {
		return
	}
	px.mu.Lock()
	rec.status, rec.sse = status, sse
	n := 1 + px.rng.IntN(maxCut)
	px.mu.Unlock()
	if _, err := client.Write(head); err != nil {
		return
	}
	if !sse {
		_, _ = io.Copy(client, sr)
		return
	}
	cutStream(client, sr, n, func() bool {
		px.mu.Lock()
		defer px.mu.Unlock()
		if px.cuts >= maxCuts {
			return false
		}
		px.cuts++
		rec.cutAfter = n
		return true
	})
}

// requestHead reads a request's head and returns it with any Connection
// and Keep-Alive headers replaced by "Connection: close", with its method
// and Last-Event-ID.
func requestHead(r *bufio.Reader) (head []byte, method, lastEventID string, err error) {
	for first := true; ; first = false {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, "", "", err
		}
		name, value, _ := strings.Cut(line, ":")
		switch {
		case first:
			method, _, _ = strings.Cut(line, " ")
		case line == "\r\n":
			return append(head, "Connection: close\r\n\r\n"...), method, lastEventID, nil
		case strings.EqualFold(name, "Connection"), strings.EqualFold(name, "Keep-Alive"):
			continue
		case strings.EqualFold(name, "Last-Event-ID"):
			lastEventID = strings.TrimSpace(value)
		}
		head = append(head, line...)
	}
}

// responseHead reads a response's head and returns it with its status and
// whether it is an SSE stream.
func responseHead(r *bufio.Reader) (head []byte, status int, sse bool, err error) {
	for first := true; ; first = false {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, 0, false, err
		}
		head = append(head, line...)
		name, value, _ := strings.Cut(line, ":")
		switch {
		case first:
			f := strings.Fields(line)
			if len(f) > 1 {
				status, _ = strconv.Atoi(f[1])
			}
		case line == "\r\n":
			return head, status, sse, nil
		case strings.EqualFold(name, "Content-Type"):
			sse = strings.HasPrefix(strings.TrimSpace(value), "text/event-stream")
		}
	}
}

// cutStream copies a stream's body (chunked framing and all) to client,
// and stops n bytes after the end of its first event with an id if cut
// allows it: the caller then drops the connection. A stream that ends
// first, or has no event with an id, is copied whole.
func cutStream(client io.Writer, sr io.Reader, n int, cut func() bool) {
	buf := make([]byte, 32<<10)
	var start []byte // the stream up to the end of its first event with an id
	armed := false
	for {
		k, err := sr.Read(buf)
		chunk := buf[:k]
		if !armed && k > 0 {
			if len(start) < 64<<10 {
				start = append(start, chunk...)
			}
			if end := firstIDEventEnd(start); end >= 0 {
				armed = true
				rest := len(start) - end // bytes of chunk past the event
				if _, err := client.Write(chunk[:k-rest]); err != nil {
					return
				}
				chunk = chunk[k-rest:]
			} else {
				if _, err := client.Write(chunk); err != nil {
					return
				}
				chunk = nil
			}
		}
		if armed && len(chunk) > 0 {
			if len(chunk) >= n && cut() {
				_, _ = client.Write(chunk[:n])
				return
			}
			if _, err := client.Write(chunk); err != nil {
				return
			}
			n -= len(chunk)
		}
		if err != nil {
			return
		}
	}
}

// firstIDEventEnd is the offset just past the first SSE event in b that
// has an id field, or -1. Chunk-size lines of the HTTP framing may sit
// inside an event's text; they end in "\r\n", so an id field still starts
// a line.
func firstIDEventEnd(b []byte) int {
	for start := 0; ; {
		i := bytes.Index(b[start:], []byte("\n\n"))
		if i < 0 {
			return -1
		}
		ev := b[start : start+i]
		if bytes.HasPrefix(ev, []byte("id:")) || bytes.Contains(ev, []byte("\nid:")) {
			return start + i + 2
		}
		start += i + 2
	}
}

// check fails the test unless the proxy cut something and the client
// resumed, and logs what it did. Every GET with Last-Event-ID must have
// been accepted: anything but 200 there means the client lost a stream.
func (px *cutProxy) check(t *testing.T) {
	t.Helper()
	px.mu.Lock()
	defer px.mu.Unlock()
	cuts, resumes := 0, 0
	var summary []string
	for _, r := range px.log {
		if r.cutAfter > 0 {
			cuts++
		}
		if r.lastEventID != "" {
			resumes++
			if r.status != http.StatusOK {
				t.Errorf("a GET with Last-Event-ID %s was answered %d", r.lastEventID, r.status)
			}
		}
		if r.sse {
			s := r.method
			if r.lastEventID != "" {
				s += " (Last-Event-ID " + r.lastEventID + ")"
			}
			if r.cutAfter > 0 {
				s += fmt.Sprintf(" cut %d bytes in", r.cutAfter)
			}
			summary = append(summary, s)
		}
	}
	t.Logf("seed %d: %d streams cut, %d resumed; SSE exchanges: %s", px.seed, cuts, resumes, strings.Join(summary, "; "))
	if cuts == 0 || resumes == 0 {
		t.Errorf("%d streams cut and %d resumed: the test tested nothing", cuts, resumes)
	}
}

// bigMessage is the size of the text of the big answer, and bigLimit the
// bridge's --max-message-bytes for it.
const (
	bigMessage = 40 << 20
	bigLimit   = 64 << 20
)

// TestSlowReaderBigMessage: a client asks for a 40 MiB answer as SSE and
// does not read it until the bridge has all of it, then reads it all. The
// bridge writes a single message of any size through, without cutting the
// stream (one message is not "falling behind") and without an extra copy
// (httpapi/sse.go, bigEvent): the client must get it intact, the session's
// other requests and other sessions must be served meanwhile, the bridge
// must allocate next to nothing while writing it out, and its peak RSS
// must stay within a small factor of the message.
func TestSlowReaderBigMessage(t *testing.T) {
	badchild := testpeers.BuildGo(t, "./testdata/badchild")
	p := startBridge(t, nil, "--max-message-bytes", strconv.Itoa(bigLimit), "--", badchild)
	pid := p.cmd.Process.Pid
	s := openSession(t, p.URL)
	other := openSession(t, p.URL)
	baseline := vmHWM(t, pid)
	allocStart := scrapeMetrics(t, http.DefaultClient, p.Base)["go_memstats_alloc_bytes_total"]

	conn, req := rawPost(t, p, s.sid, `{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"big","arguments":{"bytes":`+strconv.Itoa(bigMessage)+`}}}`)
	// Read the head, the priming event, and the first bytes of the next
	// event: the bridge writes an event's head only once it has the whole
	// message (40 MiB, held once), and is now stuck writing it to a client
	// that reads no further for a while.
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 4<<10), req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("big: %s %q, want 200 text/event-stream", resp.Status, ct)
	}
	body := bufio.NewReaderSize(resp.Body, 4<<10)
	prime, err := nextEvent(body)
	if err != nil || prime.data != "" || !strings.HasSuffix(prime.id, "_0") {
		t.Fatalf("big: first event %+v (%v), want a priming event", prime, err)
	}
	if start, err := body.Peek(len("id: ")); err != nil || string(start) != "id: " {
		t.Fatalf("big: after the priming event %q (%v), want the start of an event with an id", start, err)
	}
	if got := echo(t, s, "same session"); got != "same session" {
		t.Errorf("echo on the big answer's session = %q", got)
	}
	if got := echo(t, other, "other session"); got != "other session" {
		t.Errorf("echo on another session = %q", got)
	}
	stuck := vmHWM(t, pid)
	allocStuck := scrapeMetrics(t, http.DefaultClient, p.Base)["go_memstats_alloc_bytes_total"]

	events := append([]sseEvt{prime}, readEvents(t, body)...)
	if len(events) != 2 || events[1].id == "" {
		t.Fatalf("big: %s, want a priming event and the answer", describeEvents(events))
	}
	stream := strings.TrimSuffix(prime.id, "_0")
	if events[1].id != stream+"_1" {
		t.Errorf("big: answer's event id %q, want %s_1", events[1].id, stream)
	}
	var answer struct {
		ID     string `json:"id"`
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(events[1].data), &answer); err != nil || answer.ID != "big" || len(answer.Result.Content) != 1 {
		t.Fatalf("big: answer of %d bytes does not parse as the answer to \"big\": %v", len(events[1].data), err)
	}
	if text := answer.Result.Content[0].Text; len(text) != bigMessage || strings.Count(text, "x") != bigMessage {
		t.Errorf("big: text of %d bytes (%d of them 'x'), want %d 'x'", len(text), strings.Count(text, "x"), bigMessage)
	}
	peak := vmHWM(t, pid)
	m := scrapeMetrics(t, http.DefaultClient, p.Base)
	written := m["go_memstats_alloc_bytes_total"] - allocStuck
	t.Logf("bridge VmHWM: %d MiB at start, %d MiB with the answer stuck, %d MiB after; allocated: %.1f MiB while reading the answer from the child, %.1f MiB while writing it out; streams cut %v",
		baseline>>20, stuck>>20, peak>>20, (allocStuck-allocStart)/(1<<20), written/(1<<20), m["mcp_bridge_streams_cut_total"])
	// Writing the answer out must not copy it: the bridge's own count of
	// the bytes it allocated from the moment it was stuck writing it to
	// the moment the client had it all (a /metrics scrape included) must
	// stay far below the message's size: about 1 MiB is measured where
	// nothing copies it. A copy of the 40 MiB anywhere on the way out
	// shows here, whatever the GC does.
	if written > bigMessage/4 {
		t.Errorf("the bridge allocated %.1f MiB while writing the %d MiB answer to the client, want less than %d MiB: the message is copied on its way out",
			written/(1<<20), bigMessage>>20, bigMessage/4>>20)
	}
	if cut := m["mcp_bridge_streams_cut_total"]; cut != 0 {
		t.Errorf("mcp_bridge_streams_cut_total = %v: a stream holding one message was cut", cut)
	}
	// The bound: what the bridge holds of the message. The line read
	// from the child is gathered in blocks and joined once into a buffer
	// of its size (stdio's longLine), in which the client's id is put
	// back in place; writing it out adds nothing. That is some 2 times
	// the message allocated in all, and the heap grows only by what is
	// allocated, so the GC's timing hardly matters: measured, 97 MiB of
	// peak RSS for the 40 MiB message on a 14 MiB baseline (when the line
	// grew by append and was copied again for its id: 107 to 220 MiB,
	// over 45 runs). So: the baseline plus 3 times the message, 134 MiB
	// here. A bridge that also buffered the message per stream or per
	// write, or copied it on the way, would go over it.
	if bound := baseline + 3*bigMessage; peak > bound {
		t.Errorf("bridge peak RSS %d MiB, want at most %d MiB (baseline %d MiB + 3 x the %d MiB message)",
			peak>>20, bound>>20, baseline>>20, bigMessage>>20)
	}
}

// The flood: badchild's flood writes floodCount progress notifications of
// floodBytes each (200 MiB in all) for a client that never reads.
const (
	floodCount = 200
	floodBytes = 1 << 20
)

// TestFloodNeverRead: a client asks for a flood of 200 progress
// notifications of 1 MiB each on its POST stream and never reads it. The
// bridge must keep what it holds for the stream bounded (the session's
// event log, 4 MiB by default; the rest is evicted), cut the connection of
// a reader that fell that far behind (mcp_bridge_streams_cut_total), keep
// serving the session's other requests and other sessions meanwhile, and
// then let the client resume: the flood's answer is in the log, on the cut
// stream, while the events that aged out are refused with 410 rather than
// skipped. Its peak RSS must stay far below the 200 MiB an unbounded buffer
// would hold. In both session modes: on a shared child, the stuck stream
// must not hold up the other sessions' answers either.
func TestFloodNeverRead(t *testing.T) { forEachMode(t, testFloodNeverRead) }

func testFloodNeverRead(t *testing.T, mode string) {
	badchild := testpeers.BuildGo(t, "./testdata/badchild")
	p := startBridge(t, nil, "--mode", mode, "--", badchild)
	pid := p.cmd.Process.Pid
	s := openSession(t, p.URL)
	other := openSession(t, p.URL)
	baseline := vmHWM(t, pid)
	allocStart := scrapeMetrics(t, http.DefaultClient, p.Base)["go_memstats_alloc_bytes_total"]

	conn, req := rawPost(t, p, s.sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":"flood","method":"tools/call","params":{"name":"flood","arguments":{"count":%d,"bytes":%d},"_meta":{"progressToken":"f"}}}`, floodCount, floodBytes))
	// Only the head and the priming event are read, for the stream's id;
	// the rest stays unread.
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("flood: %s %q, want 200 text/event-stream", resp.Status, ct)
	}
	prime, err := nextEvent(bufio.NewReader(resp.Body))
	if err != nil || prime.data != "" || !strings.HasSuffix(prime.id, "_0") {
		t.Fatalf("flood: first event %+v (%v), want a priming event", prime, err)
	}
	stream := strings.TrimSuffix(prime.id, "_0")

	// Meanwhile, the session's other requests and other sessions are
	// served.
	if got := echo(t, s, "same session"); got != "same session" {
		t.Errorf("echo on the flooded session = %q", got)
	}
	if got := echo(t, other, "other session"); got != "other session" {
		t.Errorf("echo on another session = %q", got)
	}
	poll(t, "the bridge to cut the flooded stream (mcp_bridge_streams_cut_total)", func() bool {
		return scrapeMetrics(t, http.DefaultClient, p.Base)["mcp_bridge_streams_cut_total"] >= 1
	})
	if got := echo(t, other, "after the cut"); got != "after the cut" {
		t.Errorf("echo on another session after the cut = %q", got)
	}

	// The flood's events are numbered 1..floodCount, its answer
	// floodCount+1. Resuming after the last progress must bring exactly
	// the answer, put in the log after the cut. Until the flood has got
	// that far the id names an event not yet sent (400): a bounded poll.
	last := fmt.Sprintf("%s_%d", stream, floodCount)
	var evs []sseEvt
	poll(t, "the flood's last progress to reach the log", func() bool {
		status, body, events := resume(t, s, last)
		if status == http.StatusBadRequest {
			return false
		}
		if status != http.StatusOK {
			t.Fatalf("resume from %s: %d %s", last, status, body)
		}
		evs = events
		return true
	})
	if len(evs) != 2 || evs[0].id != last || evs[0].data != "" || evs[1].id != fmt.Sprintf("%s_%d", stream, floodCount+1) ||
		!strings.Contains(evs[1].data, `"id":"flood"`) || !strings.Contains(evs[1].data, "flood done") {
		t.Errorf("resume from %s brought %s, want a priming event %s and the answer %s_%d", last, describeEvents(evs), last, stream, floodCount+1)
	}

	// The start of the flood aged out of the 4 MiB log: 410, not a gap.
	status, body, _ := resume(t, s, stream+"_0")
	if status != http.StatusGone || !strings.Contains(body, "-32006") {
		t.Errorf("resume from %s_0: %d %s, want 410 with JSON-RPC error -32006", stream, status, body)
	}
	// An event not sent yet, and a stream of another session: 400.
	if status, body, _ := resume(t, s, fmt.Sprintf("%s_%d", stream, floodCount+5)); status != http.StatusBadRequest {
		t.Errorf("resume from an event not sent: %d %s, want 400", status, body)
	}
	foreign := openGET(t, other)
	if status, body, _ := resume(t, s, foreign); status != http.StatusBadRequest {
		t.Errorf("resume from %s, another session's event: %d %s, want 400", foreign, status, body)
	}

	peak := vmHWM(t, pid)
	m := scrapeMetrics(t, http.DefaultClient, p.Base)
	t.Logf("bridge VmHWM: %d MiB at start, %d MiB after %d MiB of flood (%.0f MiB allocated); streams cut %v, events evicted %v",
		baseline>>20, peak>>20, floodCount*floodBytes>>20, (m["go_memstats_alloc_bytes_total"]-allocStart)/(1<<20),
		m["mcp_bridge_streams_cut_total"], m["mcp_bridge_events_evicted_total"])
	if cut := m["mcp_bridge_streams_cut_total"]; cut < 1 {
		t.Errorf("mcp_bridge_streams_cut_total = %v, want at least 1", cut)
	}
	// Each event is a little over 1 MiB, so a 4 MiB log keeps at most 3
	// of them and the answer.
	if ev := m["mcp_bridge_events_evicted_total"]; ev < floodCount-4 {
		t.Errorf("mcp_bridge_events_evicted_total = %v, want at least %d", ev, floodCount-4)
	}
	// The bound: the baseline plus what the bridge keeps, the event log
	// (4 MiB) and what waits for a writer, plus a line or two being
	// read and what the GC lets pile up before it runs. Each 1 MiB line
	// is gathered in pooled blocks and joined once, its token put back in
	// place: about 1 MiB allocated per line, some 210 MiB in all (when
	// lines grew by append and were copied again: 6 MiB per line, over
	// 1 GiB). Measured: 32 MiB of peak RSS on a 14 MiB baseline (then:
	// 31 to 42 MiB, with outliers up to 84 MiB on a loaded machine). So:
	// the baseline plus 96 MiB, half of the 200 MiB that a buffer keeping
	// the flood would hold on top.
	if bound := baseline + 96<<20; peak > bound {
		t.Errorf("bridge peak RSS %d MiB, want at most %d MiB (baseline %d MiB + 96 MiB)", peak>>20, bound>>20, baseline>>20)
	}
}

// vmHWM is the peak resident set size of process pid, in bytes.
func vmHWM(t testing.TB, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatalf("VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// rawPost sends a POST on a TCP connection of its own, accepting only SSE,
// and returns the connection unread. Its receive buffer is small, so the
// bridge is soon stuck writing to it. The connection is closed on cleanup.
func rawPost(t *testing.T, p *bridgeProc, sid, body string) (net.Conn, *http.Request) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(p.Base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.(*net.TCPConn).SetReadBuffer(16 << 10); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, p.URL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	// A safety net for the reads of the test, not a timing assertion.
	_ = conn.SetReadDeadline(time.Now().Add(safetyNet))
	return conn, req
}

// echo calls badchild's echo on s and returns its text.
func echo(t *testing.T, s *rawSession, msg string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), safetyNet)
	defer cancel()
	r, err := s.call(ctx, "echo", map[string]any{"message": msg})
	if err != nil {
		t.Fatalf("echo: %v", err)
	}
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &res) != nil || len(res.Content) != 1 {
		t.Fatalf("echo: unexpected answer %s", r.raw)
	}
	return res.Content[0].Text
}

// resume sends GET with Last-Event-ID on s and returns the status and, for
// a stream, its events up to its end; else the body.
func resume(t *testing.T, s *rawSession, lastEventID string) (int, string, []sseEvt) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), safetyNet)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", s.sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Last-Event-ID", lastEventID)
	resp, err := s.hc.Do(req)
	if err != nil {
		t.Fatalf("resume from %s: %v", lastEventID, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), nil
	}
	return resp.StatusCode, "", readEvents(t, resp.Body)
}

// openGET opens s's standalone GET stream and returns the id of its
// priming event; the stream stays open until cleanup.
func openGET(t *testing.T, s *rawSession) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	resp, err := s.request(ctx, http.MethodGet, "")
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: status %d, want 200", resp.StatusCode)
	}
	ev, err := nextEvent(bufio.NewReader(resp.Body))
	if err != nil || ev.id == "" {
		t.Fatalf("GET: first event %+v (%v), want a priming event", ev, err)
	}
	return ev.id
}

// sseEvt is one SSE event: its id and data (empty for a priming event).
type sseEvt struct{ id, data string }

// nextEvent reads one SSE event, skipping comments (keep-alives).
func nextEvent(r *bufio.Reader) (sseEvt, error) {
	var ev sseEvt
	seen := false
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && line == "" && !seen {
				return ev, io.EOF
			}
			return ev, fmt.Errorf("SSE stream broke inside an event: %w", err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if seen {
				return ev, nil
			}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id:"):
			ev.id, seen = strings.TrimPrefix(strings.TrimPrefix(line, "id:"), " "), true
		case strings.HasPrefix(line, "data:"):
			ev.data, seen = ev.data+strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "), true
		default:
			seen = true // event:, retry:
		}
	}
}

// readEvents reads a stream's events up to its end.
func readEvents(t *testing.T, body io.Reader) []sseEvt {
	t.Helper()
	r := bufio.NewReaderSize(body, 1<<20)
	var evs []sseEvt
	for {
		ev, err := nextEvent(r)
		if errors.Is(err, io.EOF) {
			return evs
		}
		if err != nil {
			t.Fatalf("after %s: %v", describeEvents(evs), err)
		}
		evs = append(evs, ev)
	}
}

// describeEvents names events by id and size, for messages.
func describeEvents(evs []sseEvt) string {
	var s []string
	for _, ev := range evs {
		d := ev.data
		if len(d) > 80 {
			d = fmt.Sprintf("%s... (%d bytes)", d[:80], len(d))
		}
		s = append(s, fmt.Sprintf("[%s %q]", ev.id, d))
	}
	return "events " + strings.Join(s, " ")
}

// poll checks cond until it holds, failing the test at a generous
// deadline: a bounded poll for a state the test cannot be told of, not a
// timing assertion.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(safetyNet)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("waited in vain for %s", what)
		case <-tick.C:
		}
	}
}
