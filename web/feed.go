package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// Defaults for the zero values of FeedOptions.
const (
	DefaultInterval     = 500 * time.Millisecond
	DefaultKeepAlive    = 15 * time.Second
	DefaultWriteTimeout = 30 * time.Second
)

// FeedOptions configures a Feed. Only Snapshot is required.
type FeedOptions struct {
	// Snapshot returns the state the live view shows. It is polled
	// every Interval while at least one page watches, and marshalled to
	// JSON to learn whether it changed; nothing is polled while no page
	// watches.
	Snapshot func() any
	// View returns what the page that sent r (whose context carries
	// whatever the mounter's middleware put there, such as the
	// principal) may see of a snapshot; the page gets it, marshalled to
	// JSON, as the data of a "snapshot" event, and only when it differs
	// from what the page has. It runs in the page's own goroutine, once
	// per change. Nil: every page sees the whole snapshot.
	View func(r *http.Request, snapshot any) any
	// Interval is how often Snapshot is polled while a page watches.
	// Default 500 ms.
	Interval time.Duration
	// KeepAlive is the interval of comment frames, which stop proxies
	// from closing a feed that has nothing new to say. Default 15 s.
	KeepAlive time.Duration
	// WriteTimeout bounds each write to a page; a page that stops
	// reading for that long is disconnected. It delays no other page.
	// Default 30 s.
	WriteTimeout time.Duration
	// Logger is the logger. Default slog.Default().
	Logger *slog.Logger
}

// Feed is the live view's event stream: the snapshot, each time it
// changes, to every page that watches, each page getting its own view of
// it (FeedOptions.View). It loses events by design (a page only needs the
// latest snapshot) and never blocks the bridge. Serve it behind
// authentication; Close it at shutdown.
//
// One goroutine (publish) polls the snapshot while pages watch and hands
// each page the newest one, through a mailbox of one that a newer
// snapshot overwrites; each page's own request goroutine makes its view,
// and writes it when it changed. So a stalled page holds up nobody (not
// the poller, not another page), and costs one mailbox, never a queue.
//
// The SSE is written here by hand, not with r3labs/sse: r3labs
// broadcasts one stream to all its subscribers, and the pages no longer
// see the same thing. It would take a stream per principal, created on
// demand, and r3labs cannot remove a stream without leaking a goroutine
// per client it had (RemoveStream; docs/decisions.md, "The SSE
// writers"), so streams would pile up with every principal ever seen (JWT
// subjects are unbounded); and it writes to a stream's subscribers one
// after the other, so one stalled page would stall its principal's other
// pages. What is left to write is small: the headers, an event of one line
// of JSON, a comment. (httpapi's SSE writer is MCP's, and web, a leaf,
// does not import httpapi.)
type Feed struct {
	opts FeedOptions

	// ctx ends with Close: the publisher stops and every page's feed
	// ends.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	closed   bool
	watchers map[*watcher]struct{} // pages watching now
	pages    sync.WaitGroup        // ServeHTTP calls under way
	poke     chan struct{}         // a page arrived: publish the snapshot even if unchanged
	done     chan struct{}         // closed when the publisher has returned
	stopOnce sync.Once
}

// watcher is one page's mailbox: the newest snapshot it has not taken.
// Only the publisher puts into it, so a put after draining it never
// blocks.
type watcher struct {
	latest chan any // capacity 1
}

// NewFeed creates the feed and starts its publisher, which runs until
// Close.
func NewFeed(opts FeedOptions) *Feed {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = DefaultKeepAlive
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	f := &Feed{opts: opts, watchers: map[*watcher]struct{}{}, poke: make(chan struct{}, 1), done: make(chan struct{})}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	go f.publish()
	return f
}

// publish owns the polling: while any page watches, it marshals the
// snapshot every Interval and hands it to every page when it changed, or
// at once when a page arrives (which has nothing yet; the others drop
// what they have already). It returns when the feed is closed.
func (f *Feed) publish() {
	defer close(f.done)
	tick := time.NewTicker(f.opts.Interval)
	defer tick.Stop()
	var last []byte // the JSON of the snapshot last handed out
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-f.poke:
			last = nil
		case <-tick.C:
			if !f.watched() {
				last = nil
				continue
			}
		}
		snap := f.opts.Snapshot()
		data, err := json.Marshal(snap)
		if err != nil {
			f.opts.Logger.Error("web feed: cannot marshal the snapshot", "err", err)
			continue
		}
		if bytes.Equal(data, last) {
			continue
		}
		last = data
		f.mu.Lock()
		for w := range f.watchers {
			select {
			case <-w.latest: // not taken yet: the new one replaces it
			default:
			}
			w.latest <- snap
		}
		f.mu.Unlock()
	}
}

func (f *Feed) watched() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.watchers) > 0
}

// ServeHTTP streams the feed to one page until the page goes away, a
// write to it times out, or the feed is closed.
func (f *Feed) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	me := &watcher{latest: make(chan any, 1)}
	if !f.enter(me) {
		http.Error(w, "the bridge is shutting down", http.StatusServiceUnavailable)
		return
	}
	defer f.leave(me)

	out := &pageWriter{w: w, rc: http.NewResponseController(w), timeout: f.opts.WriteTimeout}
	stop := context.AfterFunc(f.ctx, out.cut)
	defer stop()
	defer out.finish()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	// nginx buffers proxied responses unless told not to.
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if out.write(nil) != nil {
		return
	}
	select { // the publisher hands this page the current snapshot now
	case f.poke <- struct{}{}:
	default: // a publication is due already
	}

	keepAlive := time.NewTicker(f.opts.KeepAlive)
	defer keepAlive.Stop()
	var last []byte // the JSON this page has
	for {
		select {
		case <-r.Context().Done():
			return
		case <-f.ctx.Done():
			return
		case <-keepAlive.C:
			if out.write([]byte(": keep-alive\n\n")) != nil {
				return
			}
		case snap := <-me.latest:
			view := snap
			if f.opts.View != nil {
				view = f.opts.View(r, snap)
			}
			data, err := json.Marshal(view)
			if err != nil {
				f.opts.Logger.Error("web feed: cannot marshal a page's view", "err", err)
				continue
			}
			if bytes.Equal(data, last) {
				continue
			}
			// JSON from encoding/json is one line (it escapes every
			// control character in strings), so one data field carries
			// it whole.
			ev := make([]byte, 0, len(data)+len("event: snapshot\ndata: \n\n"))
			ev = append(ev, "event: snapshot\ndata: "...)
			ev = append(append(ev, data...), '\n', '\n')
			if out.write(ev) != nil {
				return
			}
			last = data
		}
	}
}

// enter counts a page in, unless the feed is closed.
func (f *Feed) enter(w *watcher) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.pages.Add(1)
	f.watchers[w] = struct{}{}
	return true
}

func (f *Feed) leave(w *watcher) {
	f.mu.Lock()
	delete(f.watchers, w)
	f.mu.Unlock()
	f.pages.Done()
}

// Close ends every page's feed (a write in progress included), stops the
// publisher, and returns once every ServeHTTP has returned.
func (f *Feed) Close() error {
	f.stopOnce.Do(func() {
		f.mu.Lock()
		f.closed = true
		f.mu.Unlock()
		f.cancel()
		f.pages.Wait()
		<-f.done
	})
	return nil
}

// pageWriter writes to one page, each write within timeout. Close cuts a
// write in progress (cut), so a page that stopped reading does not hold
// up the shutdown; a page that is not being written to is left alone, and
// its response ends cleanly (finish).
type pageWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration

	mu      sync.Mutex
	writing bool // a write is under way
	cutOff  bool // the feed is closed: no write starts
	failed  bool // a write failed: the connection is of no more use
}

var errFeedClosed = errors.New("web feed: closed")

// write writes b and flushes it: an event held in a buffer is an event
// late.
func (p *pageWriter) write(b []byte) error {
	p.mu.Lock()
	if p.cutOff {
		p.mu.Unlock()
		return errFeedClosed
	}
	p.writing = true
	_ = p.rc.SetWriteDeadline(time.Now().Add(p.timeout))
	p.mu.Unlock()
	var err error
	if len(b) > 0 {
		_, err = p.w.Write(b)
	}
	if err == nil {
		err = p.rc.Flush()
	}
	p.mu.Lock()
	p.writing = false
	p.failed = p.failed || err != nil
	p.mu.Unlock()
	return err
}

// cut runs when the feed closes: a write under way fails at once, and no
// other starts.
func (p *pageWriter) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutOff = true
	if p.writing {
		_ = p.rc.SetWriteDeadline(time.Now())
	}
}

// finish gives net/http the time to end the response (the last chunk)
// when the page is still reading: the deadline of the last write may
// have passed while the feed was quiet.
func (p *pageWriter) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.failed {
		_ = p.rc.SetWriteDeadline(time.Now().Add(p.timeout))
	}
}
