package web

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/r3labs/sse/v2"
)

// Defaults for the zero values of FeedOptions.
const (
	DefaultInterval     = 500 * time.Millisecond
	DefaultKeepAlive    = 15 * time.Second
	DefaultWriteTimeout = 30 * time.Second
)

// streamID is the feed's one r3labs stream; every page watches it.
const streamID = "events"

// FeedOptions configures a Feed. Only Snapshot is required.
type FeedOptions struct {
	// Snapshot returns what the live view shows, marshalled to JSON as
	// the data of each "snapshot" event. It must hold nothing a watcher
	// may not see: every authenticated page gets the same events.
	Snapshot func() any
	// Interval is how often Snapshot is polled while at least one page
	// watches; an event is sent only when the JSON changed. Default
	// 500 ms. Nothing is polled while no page watches.
	Interval time.Duration
	// KeepAlive is the interval of comment frames, which stop proxies
	// from closing a feed that has nothing new to say. Default 15 s.
	KeepAlive time.Duration
	// WriteTimeout bounds each write to a page. r3labs/sse sends to its
	// subscribers one after the other and waits, so a page that stops
	// reading stalls every page's feed until its write times out.
	// Default 30 s.
	WriteTimeout time.Duration
	// Logger is the logger. Default slog.Default().
	Logger *slog.Logger
}

// Feed is the live view's event stream: a broadcast, by r3labs/sse, of
// the bridge's snapshot each time it changes, to every page that watches.
// It loses events by design (a page only needs the latest snapshot) and
// never blocks the bridge. Serve it behind authentication; Close it at
// shutdown.
//
// r3labs/sse is set up as LIBS.md section 1 says it fits: one stream,
// created once and never removed (RemoveStream leaks a goroutine per
// connected client); no replay (its log is unbounded and off by one; a
// new page gets the current snapshot instead); no EventTTL (with replay
// off it drops every event, r3labs/sse#176); TryPublish only.
type Feed struct {
	opts FeedOptions
	srv  *sse.Server

	// ctx ends with Close: the publisher stops and every page's request
	// is cancelled.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	closed   bool
	pages    sync.WaitGroup // ServeHTTP calls under way
	watchers atomic.Int32   // pages subscribed now
	poke     chan struct{}  // a page subscribed: publish the snapshot even if unchanged
	done     chan struct{}  // closed when the publisher has returned
	stopOnce sync.Once
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
	f := &Feed{opts: opts, poke: make(chan struct{}, 1), done: make(chan struct{})}
	f.ctx, f.cancel = context.WithCancel(context.Background())

	s := sse.New()
	s.AutoReplay = false
	s.AutoStream = false // else any caller could create streams
	s.EventTTL = 0
	s.BufferSize = 256
	s.SplitData = true // a payload's newlines cannot end the event early
	s.Headers = map[string]string{"X-Accel-Buffering": "no"}
	// Called (in a goroutine of its own) once the stream has registered
	// the subscriber, so the event the publisher sends next reaches it.
	s.OnSubscribe = func(string, *sse.Subscriber) {
		select {
		case f.poke <- struct{}{}:
		default: // a publication is already due
		}
	}
	s.CreateStream(streamID)
	f.srv = s
	go f.publish()
	return f
}

// publish owns the polling: while any page watches, it marshals the
// snapshot every Interval and publishes it when it changed. It returns
// when the feed is closed.
func (f *Feed) publish() {
	defer close(f.done)
	tick := time.NewTicker(f.opts.Interval)
	defer tick.Stop()
	keepAlive := time.NewTicker(f.opts.KeepAlive)
	defer keepAlive.Stop()
	var last []byte // the JSON the pages have
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-f.poke:
			last = nil // the new page has nothing yet
		case <-tick.C:
			if f.watchers.Load() == 0 {
				last = nil
				continue
			}
		case <-keepAlive.C:
			if f.watchers.Load() > 0 {
				f.srv.TryPublish(streamID, &sse.Event{Comment: []byte("keep-alive")})
			}
			continue
		}
		data, err := json.Marshal(f.opts.Snapshot())
		if err != nil {
			f.opts.Logger.Error("web feed: cannot marshal the snapshot", "err", err)
			continue
		}
		if bytes.Equal(data, last) {
			continue
		}
		// Dropped when 256 events wait already (a page is stalled): last
		// stays as it was, so the next tick tries again.
		if f.srv.TryPublish(streamID, &sse.Event{Event: []byte("snapshot"), Data: data}) {
			last = data
		}
	}
}

// ServeHTTP streams the feed to one page until the page goes away or the
// feed is closed.
func (f *Feed) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !f.enter() {
		http.Error(w, "the bridge is shutting down", http.StatusServiceUnavailable)
		return
	}
	defer f.pages.Done()
	f.watchers.Add(1)
	defer f.watchers.Add(-1)

	// r3labs/sse ends a subscription when the request's context ends, so
	// Close ends every subscription by cancelling it.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(f.ctx, cancel)
	defer stop()

	// The stream is fixed here, whatever the query asks for; and with
	// replay off a Last-Event-ID means nothing (r3labs answers 400 to one
	// that is not a number).
	sub := r.Clone(ctx)
	sub.URL = &url.URL{Path: r.URL.Path, RawQuery: url.Values{"stream": {streamID}}.Encode()}
	sub.Header.Del("Last-Event-ID")
	f.srv.ServeHTTP(&deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: f.opts.WriteTimeout}, sub)
}

// enter counts a page in, unless the feed is closed.
func (f *Feed) enter() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.pages.Add(1)
	return true
}

// Close ends every page's feed and stops the publisher, then the r3labs
// server. The order matters: a subscriber still registered when the
// r3labs stream stops blocks for ever in Subscriber.close (LIBS.md
// section 1), so the stream is closed only once every ServeHTTP has
// returned, which r3labs lets it do only after it has deregistered the
// subscriber. A page that does not read delays Close by at most
// WriteTimeout.
func (f *Feed) Close() error {
	f.stopOnce.Do(func() {
		f.mu.Lock()
		f.closed = true
		f.mu.Unlock()
		f.cancel()
		f.pages.Wait()
		<-f.done
		f.srv.Close()
	})
	return nil
}

// deadlineWriter sets a write deadline before each write and flush, so a
// page that stopped reading cannot hold the feed for ever. When a write
// fails, net/http cancels the request's context, which ends the
// subscription.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	_ = d.rc.SetWriteDeadline(time.Now().Add(d.timeout))
	return d.ResponseWriter.Write(p)
}

// Flush is what r3labs/sse asks for (a type assertion to http.Flusher);
// the controller finds the flusher under any wrapper that has Unwrap.
func (d *deadlineWriter) Flush() {
	_ = d.rc.SetWriteDeadline(time.Now().Add(d.timeout))
	_ = d.rc.Flush()
}

func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }
