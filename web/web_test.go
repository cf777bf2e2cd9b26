package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/web"
)

func TestAssets(t *testing.T) {
	h, err := web.Handler(web.Page{Servers: []web.Server{{Name: "default", Path: "/api/mcp"}}, Auth: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	for _, tt := range []struct {
		method, path string
		status       int
		ctype        string
		body         string // a substring of the body
	}{
		{"GET", "/", 200, "text/html; charset=utf-8", `<script src="ui/app.js" defer></script>`},
		{"HEAD", "/", 200, "text/html; charset=utf-8", ""},
		{"GET", "/ui/app.js", 200, "text/javascript; charset=utf-8", `fetch("ui/events"`},
		{"GET", "/ui/style.css", 200, "text/css; charset=utf-8", ":root"},
		{"GET", "/ui/config.json", 200, "application/json", `{"servers":[{"name":"default","path":"/api/mcp","auth":false}],"auth":true}`},
		{"GET", "/ui/index.html", 404, "", ""}, // served at / only
		{"GET", "/ui/", 404, "", ""},
		{"GET", "/ui/../go.mod", 404, "", ""},
		{"POST", "/", 405, "", ""},
	} {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, srv.URL+tt.path, nil)
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if tt.ctype != "" && resp.Header.Get("Content-Type") != tt.ctype {
				t.Errorf("Content-Type %q, want %q", resp.Header.Get("Content-Type"), tt.ctype)
			}
			if !strings.Contains(string(body), tt.body) {
				t.Errorf("body does not contain %q:\n%.300s", tt.body, body)
			}
			csp := resp.Header.Get("Content-Security-Policy")
			for _, want := range []string{"script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
				}
			}
			if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Error("no X-Content-Type-Options: nosniff")
			}
		})
	}

	t.Run("revalidation", func(t *testing.T) {
		resp, err := srv.Client().Get(srv.URL + "/ui/app.js")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		etag := resp.Header.Get("ETag")
		if etag == "" || resp.Header.Get("Cache-Control") != "no-cache" {
			t.Fatalf("ETag %q, Cache-Control %q", etag, resp.Header.Get("Cache-Control"))
		}
		req, _ := http.NewRequest("GET", srv.URL+"/ui/app.js", nil)
		req.Header.Set("If-None-Match", etag)
		resp, err = srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotModified {
			t.Errorf("If-None-Match: status %d, want 304", resp.StatusCode)
		}
	})
}

// event is one SSE event of the feed.
type event struct{ name, data string }

// feedReader reads events (and counts comments) from a feed response.
type feedReader struct {
	sc       *bufio.Scanner
	comments int
}

func (f *feedReader) next() (event, bool) {
	var ev event
	for f.sc.Scan() {
		line := f.sc.Text()
		switch {
		case line == "":
			if ev.data != "" {
				return ev, true
			}
		case strings.HasPrefix(line, ":"):
			f.comments++
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.data += strings.TrimPrefix(line, "data: ")
		}
	}
	return ev, false
}

func openFeed(t *testing.T, ctx context.Context, url string, header http.Header) (*http.Response, *feedReader) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp, &feedReader{sc: bufio.NewScanner(resp.Body)}
}

func TestFeed(t *testing.T) {
	var gen atomic.Int64
	f := web.NewFeed(web.FeedOptions{
		Snapshot: func() any { return map[string]int64{"gen": gen.Load()} },
		Interval: time.Millisecond, // a test of changes, not of the poll rate
	})
	closed := false
	t.Cleanup(func() {
		if !closed {
			f.Close()
		}
	})
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	// A safety net for a broken feed, not a timing assertion.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// There is nothing to resume: a Last-Event-ID is ignored.
	resp, feed := openFeed(t, ctx, srv.URL+"/ui/events", http.Header{"Last-Event-Id": {"x"}})
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	// A new page gets the current snapshot at once, though it has not
	// changed since the feed started.
	ev, ok := feed.next()
	if !ok || ev.name != "snapshot" || ev.data != `{"gen":0}` {
		t.Fatalf("first event %+v (ok %v), want the current snapshot", ev, ok)
	}
	// Changes are published; a second page gets the current snapshot too.
	gen.Store(1)
	for {
		// The publisher's first poll may repeat what the page already
		// has; the change comes next.
		ev, ok := feed.next()
		if ok && ev.data == `{"gen":0}` {
			continue
		}
		if !ok || ev.data != `{"gen":1}` {
			t.Fatalf("after a change: %+v (ok %v)", ev, ok)
		}
		break
	}
	_, feed2 := openFeed(t, ctx, srv.URL+"/ui/events", nil)
	if ev, ok := feed2.next(); !ok || ev.data != `{"gen":1}` {
		t.Fatalf("second page: %+v (ok %v)", ev, ok)
	}
	// The first page may get the snapshot it has again (sent for the
	// second page), then the next change.
	gen.Store(2)
	for {
		ev, ok := feed.next()
		if !ok {
			t.Fatal("feed ended")
		}
		if ev.data == `{"gen":2}` {
			break
		}
		if ev.data != `{"gen":1}` {
			t.Fatalf("unexpected event %+v", ev)
		}
	}

	// Close ends every page's feed, returns once their handlers have,
	// and turns new pages away.
	f.Close()
	closed = true
	for _, fr := range []*feedReader{feed, feed2} {
		for {
			if _, ok := fr.next(); !ok {
				break
			}
		}
		if err := fr.sc.Err(); err != nil {
			t.Errorf("feed after Close: %v, want a clean end", err)
		}
	}
	resp, _ = openFeed(t, ctx, srv.URL+"/ui/events", nil)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("after Close: status %d, want 503", resp.StatusCode)
	}
}

func TestFeedKeepAlive(t *testing.T) {
	f := web.NewFeed(web.FeedOptions{
		Snapshot:  func() any { return json.RawMessage(`{}`) },
		KeepAlive: time.Millisecond,
	})
	t.Cleanup(func() { f.Close() })
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, feed := openFeed(t, ctx, srv.URL, nil)
	if ev, ok := feed.next(); !ok || ev.data != `{}` {
		t.Fatalf("first event %+v", ev)
	}
	// A comment is a line of its own; it never completes an event with
	// data, so read lines until one has come.
	for feed.comments == 0 && feed.sc.Scan() {
		if strings.HasPrefix(feed.sc.Text(), ": keep-alive") {
			feed.comments++
		}
	}
	if feed.comments == 0 {
		t.Fatalf("no keep-alive comment: %v", feed.sc.Err())
	}
}

// TestFeedViews: each page gets its own view of the snapshot, and an
// event only when its own view changed.
func TestFeedViews(t *testing.T) {
	var a, b atomic.Int64
	f := web.NewFeed(web.FeedOptions{
		Snapshot: func() any { return map[string]int64{"a": a.Load(), "b": b.Load()} },
		// The page sees the key its header names, as a principal sees
		// its own sessions.
		View:     func(r *http.Request, snap any) any { return snap.(map[string]int64)[r.Header.Get("X-Key")] },
		Interval: time.Millisecond,
	})
	t.Cleanup(func() { f.Close() })
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a safety net
	defer cancel()
	_, pageA := openFeed(t, ctx, srv.URL, http.Header{"X-Key": {"a"}})
	_, pageB := openFeed(t, ctx, srv.URL, http.Header{"X-Key": {"b"}})
	expect := func(page *feedReader, name, want string) {
		t.Helper()
		if ev, ok := page.next(); !ok || ev.data != want {
			t.Fatalf("page %s: event %+v (ok %v), want %s", name, ev, ok, want)
		}
	}
	expect(pageA, "a", "0")
	expect(pageB, "b", "0")
	// b changes, then a: page a's next event is a's change, with nothing
	// in between (its view did not change when b did).
	b.Store(1)
	expect(pageB, "b", "1")
	a.Store(1)
	expect(pageA, "a", "1")
	b.Store(2)
	expect(pageB, "b", "2")
	a.Store(2)
	expect(pageA, "a", "2")
}

// TestFeedStalledPage: a page that stops reading holds up neither the
// other pages nor Close, however long the write timeout.
func TestFeedStalledPage(t *testing.T) {
	var gen atomic.Int64
	pad := strings.Repeat("x", 128<<10)
	f := web.NewFeed(web.FeedOptions{
		// 128 KiB per event: a few dozen fill any socket buffer.
		Snapshot:     func() any { return map[string]any{"gen": gen.Load(), "pad": pad} },
		Interval:     5 * time.Millisecond,
		WriteTimeout: time.Hour,
	})
	closed := make(chan struct{})
	t.Cleanup(func() {
		select {
		case <-closed:
		default:
			f.Close()
		}
	})
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a safety net
	defer cancel()

	// The stalled page: its request is sent, its response never read.
	stalled, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stalled.Close() })
	_ = stalled.(*net.TCPConn).SetReadBuffer(4 << 10)
	if _, err := io.WriteString(stalled, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}

	_, page := openFeed(t, ctx, srv.URL, nil)
	page.sc.Buffer(make([]byte, 0, 512<<10), 1<<20)
	// 48 events of 128 KiB (6 MiB) pass the healthy page, more than
	// the stalled one's socket buffers hold.
	for want := range int64(48) {
		for {
			ev, ok := page.next()
			if !ok {
				t.Fatalf("the healthy page's feed ended: %v", page.sc.Err())
			}
			var got struct{ Gen int64 }
			if err := json.Unmarshal([]byte(ev.data), &got); err != nil {
				t.Fatal(err)
			}
			if got.Gen == want {
				break
			}
		}
		gen.Add(1)
	}

	// Close cuts the stalled page's write rather than wait an hour.
	done := make(chan struct{})
	go func() {
		f.Close()
		close(done)
	}()
	select {
	case <-done:
		close(closed)
	case <-ctx.Done():
		t.Fatal("Close waits for the stalled page")
	}
}
