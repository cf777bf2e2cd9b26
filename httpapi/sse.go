package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// sseWriter writes one MCP SSE stream. It is written by hand rather than
// with an SSE library such as r3labs/sse because MCP streams need what
// that library cannot do (docs/decisions.md, "The SSE writers"): a stream
// per POST that ends after its response, exactly one reader per stream
// with no broadcast, events with empty data, bounded buffers, per-write
// deadlines, and no goroutine per stream left behind when it closes.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	buf     []byte
	// ctx ends when the stream is to stop (cut); no write starts after.
	ctx context.Context
}

// bigEvent is the size from which an event's data is written through
// rather than copied into the buffer: a message of tens of MiB for a slow
// client is then held once, by the bridge, not twice.
const bigEvent = 64 << 10

// startSSE sends the stream's headers at once, so the client sees the
// stream open before the first event. ctx ends the stream's writes (cut).
func startSSE(ctx context.Context, w http.ResponseWriter, timeout time.Duration) (*sseWriter, error) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	// nginx buffers proxied responses unless told not to; an SSE event
	// stuck in a proxy buffer is a hung call for the client.
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w), timeout: timeout, ctx: ctx}
	return s, s.flush()
}

// retryMillis is the reconnection delay announced on resumable streams.
const retryMillis = "1000"

// prime queues the 2025-11-25 priming event: "the server SHOULD
// immediately send an SSE event consisting of an event ID and an empty
// data field in order to prime the client to reconnect", with a retry
// field telling the client how long to wait before it does.
func (s *sseWriter) prime(id string) {
	s.buf = append(s.buf, "id: "...)
	s.buf = append(s.buf, id...)
	s.buf = append(s.buf, "\nretry: "+retryMillis+"\ndata: \n\n"...)
}

// message queues one JSON-RPC message as an SSE event, with an id unless
// id is empty. JSON from the bridge is always a single line, so one data
// field carries it. A big message is written at once, without a copy.
func (s *sseWriter) message(id string, data []byte) error {
	if id != "" {
		s.buf = append(s.buf, "id: "...)
		s.buf = append(s.buf, id...)
		s.buf = append(s.buf, '\n')
	}
	s.buf = append(s.buf, "event: message\ndata: "...)
	if len(data) >= bigEvent {
		if err := s.write(s.buf); err != nil {
			return err
		}
		if err := s.write(data); err != nil {
			return err
		}
		s.buf = s.buf[:0]
	} else {
		s.buf = append(s.buf, data...)
	}
	s.buf = append(s.buf, '\n', '\n')
	return nil
}

// events writes a batch that bridge.Stream.Serve emits, each message
// through out, and flushes it: the priming event (an ID and no Data), the
// stream's messages, or, for an empty batch, a keep-alive.
func (s *sseWriter) events(evs []bridge.Event, out outbound) error {
	if len(evs) == 0 {
		s.comment("keep-alive")
	}
	for _, ev := range evs {
		if ev.Data == nil {
			s.prime(ev.ID)
			continue
		}
		if err := s.message(ev.ID, out.message(ev)); err != nil {
			return err
		}
	}
	return s.flush()
}

// endpoint queues the first event of a legacy (2024-11-05) stream: "the
// server MUST send an endpoint event containing a URI for the client to
// use for sending messages".
func (s *sseWriter) endpoint(uri string) {
	s.buf = append(s.buf, "event: endpoint\ndata: "...)
	s.buf = append(s.buf, uri...)
	s.buf = append(s.buf, '\n', '\n')
}

// comment queues a comment line, which clients ignore: a keep-alive.
func (s *sseWriter) comment(text string) {
	s.buf = append(s.buf, ": "...)
	s.buf = append(s.buf, text...)
	s.buf = append(s.buf, '\n', '\n')
}

// flush writes what is queued and pushes it to the client now: an SSE
// event held in a buffer is an event late.
func (s *sseWriter) flush() error {
	if len(s.buf) > 0 {
		if err := s.write(s.buf); err != nil {
			return err
		}
		s.buf = s.buf[:0]
	}
	return s.rc.Flush()
}

// write writes b within the write timeout. The deadline is set before the
// check of ctx, so a cut either stops the write before it starts or, by
// moving the deadline to now, ends it.
func (s *sseWriter) write(b []byte) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	if err := s.ctx.Err(); err != nil {
		return err
	}
	_, err := s.w.Write(b)
	return err
}

// cut ends the stream from another goroutine: a write in progress fails
// at once, and so does any later one (the caller cancels ctx too).
func (s *sseWriter) cut() {
	_ = s.rc.SetWriteDeadline(time.Now())
}
