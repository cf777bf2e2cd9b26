package main

// A slow body: a client that sends complete headers and then its body at a
// trickle holds its connection no longer than --read-timeout, on a request
// the bridge reads (408) and on one it refuses without reading (401); the
// bridge's long-lived responses, a GET stream and the SSE answer of a slow
// call, live on past it.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

func TestSlowRequestBody(t *testing.T) {
	badchild := testpeers.BuildGo(t, "./testdata/badchild")
	const readTimeout = 400 * time.Millisecond
	env := append(environWithout(envPrefix), "ALICE_TOKEN="+tokenAlice)
	p := startBridge(t, env, "--read-timeout", readTimeout.String(), "--keepalive", "100ms",
		"--token-env", "ALICE_TOKEN", "--", badchild)

	// The body is far longer than the trickle can send before the
	// safety net, and shorter than what net/http would drain at most
	// (256 KiB) before answering a request that did not read it.
	body := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 100_000) + `"}}`
	for _, tc := range []struct {
		name  string
		token string
		want  int
	}{
		{"valid token: the bridge reads the body", tokenAlice, http.StatusRequestTimeout},
		{"no token: 401 without reading the body", "", http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp, rest := trickle(t, p.URL, tc.token, body)
			if resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.want)
			}
			if !resp.Close {
				t.Errorf("the response keeps the connection (Connection: %q); the rest of the body is still coming", resp.Header.Get("Connection"))
			}
			// Closed: EOF, or a reset once the bridge closes for good
			// with trickled bytes unread (net/http half-closes first, so
			// the answer itself is never lost to the reset).
			if err := rest(); err != io.EOF && !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("after the answer, the connection gives %v, want it closed", err)
			}
		})
	}

	t.Run("streams outlive the read timeout", func(t *testing.T) {
		t.Parallel()
		s := openSessionAs(t, p.URL, tokenAlice)
		ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
		defer cancel()
		get, err := s.request(ctx, http.MethodGet, "")
		if err != nil || get.StatusCode != http.StatusOK {
			t.Fatalf("GET stream: %v %v", err, get)
		}
		defer get.Body.Close()
		lines := bufio.NewScanner(get.Body)
		events := &sseLines{sc: lines}

		// Keep-alives come every 100 ms: read them until the stream is
		// three read timeouts old.
		opened := time.Now()
		for time.Since(opened) < 3*readTimeout {
			if !lines.Scan() {
				t.Fatalf("the GET stream ended after %v (read timeout %v): %v", time.Since(opened), readTimeout, lines.Err())
			}
		}
		// A call that answers only after three read timeouts, on an SSE
		// response, gets its answer; its notification on the way reaches
		// the GET stream, still open.
		r, err := s.call(ctx, "slow", map[string]any{"ms": (3 * readTimeout).Milliseconds(), "steps": 2})
		if err != nil || r.Error != nil || !strings.Contains(string(r.Result), "slow done") {
			t.Fatalf("slow call past the read timeout: %v %s", err, r.raw)
		}
		if r, err := s.call(ctx, "notify", map[string]any{"method": "notifications/tools/list_changed"}); err != nil || r.Error != nil {
			t.Fatalf("notify: %v %s", err, r.raw)
		}
		ev, ok := events.next()
		if !ok || !strings.Contains(ev.data, "notifications/tools/list_changed") {
			t.Fatalf("the GET stream, %v old: got %+v (open: %v), want the list_changed notification", time.Since(opened), ev, ok)
		}
	})
}

// trickle POSTs body to url over a raw connection: the headers at once,
// then the body one byte every 50 ms until the bridge answers. It returns
// the answer and a function that stops the trickle and reads what comes
// after the answer on the connection.
func trickle(t *testing.T, rawURL, token, body string) (*http.Response, func() error) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	// A safety net for every read below, not a timing assertion.
	_ = conn.SetReadDeadline(time.Now().Add(safetyNet))
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n", u.Path, u.Host, len(body))
	if token != "" {
		head += "Authorization: Bearer " + token + "\r\n"
	}
	if _, err := io.WriteString(conn, head+"\r\n"); err != nil {
		t.Fatal(err)
	}
	answered := make(chan struct{})
	stop := sync.OnceFunc(func() { close(answered) })
	trickled := make(chan struct{})
	go func() {
		defer close(trickled)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := range len(body) {
			select {
			case <-answered:
				return
			case <-tick.C:
			}
			if _, err := io.WriteString(conn, body[i:i+1]); err != nil {
				return // the bridge closed the connection
			}
		}
	}()
	t.Cleanup(func() { stop(); <-trickled })
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer to a trickling body: %v", err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return resp, func() error {
		stop()
		<-trickled
		_, err := br.ReadByte()
		return err
	}
}
