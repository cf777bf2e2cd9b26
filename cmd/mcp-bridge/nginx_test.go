package main

// SSE through a real nginx with its default proxy buffering on: the
// bridge's X-Accel-Buffering: no is what lets each event through as it is
// written. nginx otherwise holds a proxied response in its buffers (4 or
// 8 KiB) until they fill or the response ends, and a progress event of a
// long call would reach the client minutes late.
//
// Found on the way (nginx 1.22): with proxy_http_version 1.1, Go answers
// with chunked encoding, and nginx passes each chunk on as it arrives even
// with buffering on; the header matters when nginx speaks HTTP/1.0 to the
// bridge (its default), where the response is delimited by the close and
// buffering holds it. Both are tested. Checked by hand: with
// "proxy_ignore_headers X-Accel-Buffering;" added, the HTTP/1.0 case
// hangs until the test times out, and the HTTP/1.1 case still passes.

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// nginxConfig proxies everything to upstream, with the directives of
// {{proxy}}. Buffering is left at its default (on): what the test shows
// is that the bridge turns it off for its streams, not that this
// configuration does.
const nginxConfig = `daemon off;
{{user}}
worker_processes 1;
pid {{dir}}/nginx.pid;
error_log {{dir}}/error.log info;
events { worker_connections 64; }
http {
    access_log {{dir}}/access.log;
    client_body_temp_path {{dir}}/client_body;
    proxy_temp_path {{dir}}/proxy;
    fastcgi_temp_path {{dir}}/fastcgi;
    uwsgi_temp_path {{dir}}/uwsgi;
    scgi_temp_path {{dir}}/scgi;
    server {
        listen {{listen}};
        location / {
            proxy_pass http://{{upstream}};
{{proxy}}
        }
    }
}
`

// requireNginx is nginx on PATH or where Debian puts it; without it the
// test is skipped.
func requireNginx(t *testing.T) string {
	t.Helper()
	if bin, err := exec.LookPath("nginx"); err == nil {
		return bin
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx"
	}
	t.Skip("nginx is not installed (test.sh installs the Debian package)")
	return ""
}

// startNginx runs nginx in the foreground (a master and one worker, in a
// process group of their own) proxying to upstream (host:port), and
// returns its base URL. It listens on a socket of 127.0.0.1 the test
// opened and hands it over as fd 3 (nginx takes inherited sockets from the
// NGINX variable, as in a binary upgrade), so it accepts before it has
// even started. (With master_process off, nginx 1.22 crashes on the first
// connection to an inherited socket.) On cleanup the master gets SIGTERM,
// which stops the worker and waits for it; the group is killed only if
// that fails.
func startNginx(t *testing.T, upstream, proxy string) string {
	t.Helper()
	bin := requireNginx(t)
	dir := t.TempDir()
	f, addr := loopbackListener(t)
	defer f.Close() // nginx has its own copy once started
	// Run by another user, nginx runs its worker as that user.
	user := ""
	if os.Geteuid() == 0 {
		// Not "nobody", nginx's default for root: the worker could not
		// reach its temporary directories inside the test's 0700 one.
		user = "user root root;"
	}
	conf := strings.NewReplacer("{{user}}", user, "{{dir}}", dir, "{{listen}}", addr, "{{upstream}}", upstream, "{{proxy}}", proxy).Replace(nginxConfig)
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	errorLog := filepath.Join(dir, "error.log")
	logs := func() string { b, _ := os.ReadFile(errorLog); return string(b) }
	cmd := exec.Command(bin, "-p", dir, "-c", path, "-e", errorLog)
	cmd.Env = append(os.Environ(), "NGINX=3;")
	cmd.ExtraFiles = []*os.File{f}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t.Cleanup(func() { // runs after runDaemon's: nginx has stopped
		if t.Failed() {
			t.Logf("nginx error log:\n%s%s", logs(), out.String())
		}
	})
	runDaemon(t, cmd)
	return "http://" + addr
}

// sseLines reads an SSE response line by line, handing each event's data
// (and event name) over as it arrives.
type sseLines struct {
	sc *bufio.Scanner
}

type sseEvent struct{ name, data string }

// eventSource is a stream of events, or a part of one.
type eventSource interface {
	next() (sseEvent, bool)
}

// next returns the next event with data; ok is false at the end of the
// stream.
func (s *sseLines) next() (ev sseEvent, ok bool) {
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case line == "" && ev.data != "":
			return ev, true
		case strings.HasPrefix(line, "event:"):
			ev.name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			ev.data += strings.TrimSpace(strings.TrimPrefix(line, "data:"))
		}
	}
	return ev, false
}

// TestThroughNginx: through nginx, the first progress event of a long
// call reaches the client while the call is still running, on a Streamable
// HTTP POST stream and on a legacy HTTP+SSE stream. The call would take
// over 16 minutes (100 steps 10 s apart); the client reads its first
// event, cancels it, and then sees the stream end without a result. Had
// nginx held the event in its buffer, it would have arrived only once the
// buffer filled, minutes later, and the test would time out.
func TestThroughNginx(t *testing.T) {
	requireNginx(t)
	p := startBridge(t, nil)
	for _, tc := range []struct{ name, directives string }{
		{"HTTP/1.1 upstream", "            proxy_http_version 1.1;\n            proxy_set_header Connection \"\";"},
		{"HTTP/1.0 upstream", "            # proxy_http_version 1.0: the default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testThroughNginx(t, startNginx(t, strings.TrimPrefix(p.Base, "http://"), tc.directives))
		})
	}
}

func testThroughNginx(t *testing.T, proxy string) {
	hc := &http.Client{}
	t.Cleanup(hc.CloseIdleConnections)
	const slowCall = `{"jsonrpc":"2.0","id":"long","method":"tools/call","params":{"name":"slow","arguments":{"steps":100,"delay_ms":10000},"_meta":{"progressToken":"p"}}}`
	const cancel = `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"long","reason":"seen enough"}}`

	post := func(t *testing.T, u, sid, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, u, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(resp.Header.Get("Server"), "nginx") {
			t.Fatalf("Server %q: the response did not come through nginx", resp.Header.Get("Server"))
		}
		return resp
	}
	accepted := func(t *testing.T, resp *http.Response) {
		t.Helper()
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("%s %s, want 202", resp.Status, body)
		}
	}
	// firstThenEnd reads the call's events: the first must be its first
	// progress; after the cancellation, the stream must end with no
	// result (other events, such as logs, may come between).
	firstThenEnd := func(t *testing.T, events eventSource, cancelCall func()) {
		t.Helper()
		ev, ok := events.next()
		if !ok || !strings.Contains(ev.data, `"notifications/progress"`) || !strings.Contains(ev.data, `"progress":0`) {
			t.Fatalf("first event %+v (ok %v), want progress 0", ev, ok)
		}
		cancelCall()
		for {
			ev, ok := events.next()
			if !ok {
				return
			}
			if strings.Contains(ev.data, `"id":"long"`) {
				t.Fatalf("the call answered %s: it was over before its first event came through", ev.data)
			}
		}
	}

	t.Run("streamable POST stream", func(t *testing.T) {
		resp := post(t, proxy+"/mcp", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"nginx-test","version":"1"}}}`)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		sid := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != 200 || sid == "" {
			t.Fatalf("initialize: %s, session %q", resp.Status, sid)
		}
		accepted(t, post(t, proxy+"/mcp", sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`))
		call := post(t, proxy+"/mcp", sid, slowCall)
		defer call.Body.Close()
		if ct := call.Header.Get("Content-Type"); call.StatusCode != 200 || ct != "text/event-stream" {
			t.Fatalf("call: %s %q", call.Status, ct)
		}
		firstThenEnd(t, &sseLines{sc: bufio.NewScanner(call.Body)}, func() {
			accepted(t, post(t, proxy+"/mcp", sid, cancel))
		})
	})

	t.Run("legacy stream", func(t *testing.T) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, proxy+"/sse", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", "text/event-stream")
		stream, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer stream.Body.Close()
		events := &sseLines{sc: bufio.NewScanner(stream.Body)}
		// The client can say nothing before it has the endpoint: that the
		// test goes on at all shows the first event came through at once.
		ev, ok := events.next()
		if !ok || ev.name != "endpoint" {
			t.Fatalf("first event %+v, want the endpoint", ev)
		}
		base, _ := url.Parse(proxy + "/sse")
		endpoint, err := base.Parse(ev.data)
		if err != nil {
			t.Fatal(err)
		}
		send := func(body string) { accepted(t, post(t, endpoint.String(), "", body)) }
		send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"nginx-test","version":"1"}}}`)
		if ev, ok := events.next(); !ok || !strings.Contains(ev.data, `"protocolVersion"`) {
			t.Fatalf("want the InitializeResult, got %+v", ev)
		}
		send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		send(slowCall)
		// On the legacy stream the call's events end with the stream
		// itself only if the session ends; here, a ping after the
		// cancellation marks where the call's events stop.
		firstThenEnd(t, &legacyCallEvents{sseLines: events, done: `"id":"after"`}, func() {
			send(cancel)
			send(`{"jsonrpc":"2.0","id":"after","method":"ping"}`)
		})
	})
}

// legacyCallEvents ends a legacy stream's events at the one whose data
// contains done: the legacy stream carries every call of the session and
// stays open after each.
type legacyCallEvents struct {
	*sseLines
	done string
}

func (l *legacyCallEvents) next() (sseEvent, bool) {
	ev, ok := l.sseLines.next()
	if ok && strings.Contains(ev.data, l.done) {
		return ev, false
	}
	return ev, ok
}
