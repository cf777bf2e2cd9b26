package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/approval"
	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// Calls held for a human's approval. admit finds a tools/call the
// server's approval rules hold (post.held); the transport then answers
// the POST with a held reader instead of sending the call: a Reader like
// any other (respond and the legacy pumps read it as they read a
// session's stream), behind which one goroutine asks the engine
// (decideHeld). Meanwhile the reader carries the bridge's own messages:
// the question (elicitation/create, to a 2025 client that declared form
// elicitation), progress notifications (where the call has a progress
// token). Approved, the call is sent, once, and the reader reads on from
// the session's stream; otherwise it ends with an isError result that says
// why, and the server never sees the call. A 2026-07-28 client is asked
// in an input_required result instead, whose requestState is sealed and
// bound like every requestState the bridge issues.

// heldCall is a tools/call the approval rules hold: what the engine is
// asked about.
type heldCall struct {
	index int // in the POST's record
	id    []byte
	tool  string // as the client named it
	args  json.RawMessage
	rule  approval.Rule
	pr    auth.Principal
	// On the aggregate endpoint, the server the call goes to: its
	// Options (its approval rules; nil on a server's own endpoint, whose
	// are the handler's) and the tool's name there, which its rules and
	// its approvers know it by.
	opts *Options
	own  string
	b    *bridge.Bridge // the server's, which seals its questions' states
}

// bridge is the bridge whose key seals the requestState of c's question
// to a 2026-07-28 client: the handler's, or on the aggregate endpoint, the
// call's server's (the retry resolves to the same server).
func (c *heldCall) bridge(h *mcpHandler) *bridge.Bridge {
	if c.b != nil {
		return c.b
	}
	return h.b
}

// options are the Options of the server whose rules hold c: the
// handler's own, or on the aggregate endpoint, the call's server's.
func (c *heldCall) options(h *mcpHandler) *Options {
	if c.opts != nil {
		return c.opts
	}
	return &h.opts
}

// serverTool is c's tool as its server names it.
func (c *heldCall) serverTool() string {
	if c.own != "" {
		return c.own
	}
	return c.tool
}

// held finds the first tools/call of the POST that the server's approval
// rules hold for pr (after the tool policy: a denied call is never held),
// nil for none.
func (h *mcpHandler) held(p *post, pr auth.Principal) *heldCall {
	if h.agg != nil {
		return h.agg.held(p, pr)
	}
	i, rule := p.rec.heldCall(h.opts.Approval, pr)
	if i < 0 {
		return nil
	}
	c := &p.rec.calls[i]
	tool, args := c.toolCall()
	return &heldCall{index: i, id: c.id, tool: tool, args: args, rule: rule, pr: pr}
}

// callerChannel is how the caller can be asked about its held call, each
// nil or false where it cannot: approval.Request's hooks.
type callerChannel struct {
	ask      func(ctx context.Context, q approval.Question) (json.RawMessage, error)
	askLater bool
	answer   *approval.Answer
	progress func(approval.Waiting)
}

// decideHeld is the one place a held call of a server (o, that server's
// Options: its approval rules and the process's engine) is decided, for
// every transport and endpoint: it blocks until the call is approved,
// denied or expired, ctx ends (Pending: the approval waits for a retry),
// or, for a caller asked later, the question is ready (Pending with the
// Question).
func decideHeld(ctx context.Context, o *Options, c *heldCall, ch callerChannel) (approval.Outcome, error) {
	if o.Approvals == nil {
		// Rules without an engine: nobody could ever say yes.
		return approval.Outcome{Decision: approval.Denied, Channel: approval.ChannelBridge,
			Message: "tool " + strconv.Quote(c.tool) + " was not run: it needs a human's approval (rule " + c.rule.String() + "), and the bridge has no approvals configured"}, nil
	}
	return o.Approvals.Decide(ctx, approval.Request{
		Principal: c.pr, Server: o.Approval.Server(), Tool: c.serverTool(), Arguments: c.args, Rule: c.rule,
		Ask: ch.ask, AskLater: ch.askLater, Answer: ch.answer, Progress: ch.progress,
	})
}

// heldReader is the answer to a POST whose call is held: a bridge.Reader
// that carries the bridge's own messages while the call waits, then the
// call's answers from the server (approved), or the bridge's answer. Its
// one goroutine runs decideHeld; Close ends it and waits for it.
type heldReader struct {
	call *heldCall
	rec  *record
	// send sends the call to the server, once approved: the Reader of its
	// answers.
	send func() (bridge.Reader, error)
	// later is the answer of a call whose caller is asked later
	// (2026-07-28: an input_required result), nil for a 2025 one.
	later func(approval.Outcome) []byte
	// modern: the call is of 2026-07-28, whose results say their type.
	modern bool
	// release lets go of the session's Hold, nil for none.
	release func()

	cancel context.CancelFunc
	done   chan struct{} // closed when decideHeld has returned (start)

	mu     sync.Mutex
	wake   chan struct{} // signalled when queue, out or inner change
	queue  []bridge.Event
	out    *approval.Outcome
	inner  bridge.Reader // the session's stream, once sent
	sent   bool
	o      bridge.ServeOptions
	begun  bool // Begin was called: the inner reader gets it too
	ended  bool // the bridge's final answer was taken
	closed bool
}

// start starts deciding the call on o's engine, with the caller's
// channel ch: the reader's one goroutine, which Close ends and waits for.
func (x *heldReader) start(ctx context.Context, o *Options, ch callerChannel) {
	x.done, x.wake = make(chan struct{}), make(chan struct{}, 1)
	ctx, x.cancel = context.WithCancel(ctx)
	c := x.call
	go func() {
		defer close(x.done)
		out, err := decideHeld(ctx, o, c, ch)
		if err != nil && out.Decision != approval.Pending {
			out = approval.Outcome{Decision: approval.Denied, Channel: approval.ChannelBridge,
				Message: "tool " + strconv.Quote(c.tool) + " was not run: " + err.Error()}
		}
		x.mu.Lock()
		x.out = &out
		x.mu.Unlock()
		x.signal()
	}()
}

func (x *heldReader) signal() {
	select {
	case x.wake <- struct{}{}:
	default:
	}
}

// enqueue puts a message of the bridge's own on the way to the client.
func (x *heldReader) enqueue(msg []byte) {
	x.mu.Lock()
	x.queue = append(x.queue, bridge.Event{Data: msg})
	x.mu.Unlock()
	x.signal()
}

// progressMessage is the notifications/progress of a call waiting, with the
// call's own token: the seconds waited of the seconds it may wait.
func progressMessage(token []byte, w approval.Waiting) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{
		"progressToken": json.RawMessage(token),
		"progress":      w.Elapsed.Round(time.Millisecond).Seconds(),
		"total":         w.Timeout.Seconds(),
		"message":       "waiting for a human's approval",
	}})
	return b
}

// heldStep is what the reader has to give now.
type heldStep struct {
	inner bridge.Reader     // the session's stream, once the call is sent
	evs   []bridge.Event    // the bridge's own messages, taken
	out   *approval.Outcome // once decided
	over  bool              // evs end the answer (the call could not be sent)
}

// step takes what the reader has to give: the bridge's messages first,
// then, once they are out, the approved call is sent (once).
func (x *heldReader) step() heldStep {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.out != nil && x.out.Decision == approval.Approved && !x.sent && len(x.queue) == 0 {
		x.sendLocked()
	}
	s := heldStep{inner: x.inner, out: x.out}
	if len(x.queue) > 0 {
		s.evs, x.queue = x.queue, nil
		s.over = x.inner == nil && x.ended
	}
	return s
}

// sendLocked sends the approved call: once, whatever happens next.
func (x *heldReader) sendLocked() {
	x.sent = true
	rd, err := x.send()
	if err != nil || rd == nil {
		msg := "the call could not be sent to the server"
		if err != nil {
			msg += ": " + err.Error()
		}
		x.queue = append(x.queue, bridge.Event{Data: bridge.ErrorBody(&bridge.Error{Code: bridge.CodeInternalError, Message: msg, ID: x.call.id})})
		x.ended = true
		return
	}
	x.inner = rd
	if x.begun {
		if prime, primes := rd.Begin(x.o); primes {
			x.queue = append(x.queue, prime)
		}
	}
}

// final is the bridge's own answer to a call it did not send, and it is
// the last message: an isError result saying why (or, asked later, the
// input_required result). The record counts the call as denied.
func (x *heldReader) final(out *approval.Outcome) (bridge.Event, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.ended {
		return bridge.Event{}, false
	}
	x.ended = true
	if out.Decision == approval.Pending && out.Question != nil && x.later != nil {
		return bridge.Event{Data: x.later(*out)}, true
	}
	x.rec.deny(x.call.index)
	msg := out.Message
	if msg == "" {
		msg = "tool " + strconv.Quote(x.call.tool) + " was not run: it needs a human's approval"
	}
	result := map[string]any{"content": []map[string]string{{"type": "text", "text": msg}}, "isError": true}
	if x.modern {
		result["resultType"] = "complete"
	}
	res, _ := json.Marshal(result)
	return bridge.Event{Data: []byte(`{"jsonrpc":"2.0","id":` + string(x.call.id) + `,"result":` + string(res) + `}`)}, true
}

// wait waits for a change, tick (a keep-alive due: fired) or ctx's end.
func (x *heldReader) wait(ctx context.Context, tick <-chan time.Time) (fired bool, err error) {
	select {
	case <-x.wake:
		return false, nil
	case <-tick:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

func (x *heldReader) Begin(o bridge.ServeOptions) (bridge.Event, bool) {
	x.mu.Lock()
	x.o, x.begun = o, true
	x.mu.Unlock()
	// The bridge's own messages have no event ids: nothing to prime.
	// The session's stream primes when the call is sent (sendLocked).
	return bridge.Event{}, false
}

func (x *heldReader) Next(ctx context.Context, tick <-chan time.Time, buf []bridge.Event) ([]bridge.Event, bool, error) {
	for {
		s := x.step()
		switch {
		case len(s.evs) > 0:
			return append(buf, s.evs...), s.over, nil
		case s.inner != nil:
			return s.inner.Next(ctx, tick, buf)
		case gone(s.out):
			return buf, false, context.Canceled // nothing to answer
		case s.out != nil:
			if ev, ok := x.final(s.out); ok {
				buf = append(buf, ev)
			}
			return buf, true, nil
		}
		if fired, err := x.wait(ctx, tick); err != nil || fired {
			return buf, false, err
		}
	}
}

// gone: the decision ended because the client left (the approval waits
// for a retry).
func gone(out *approval.Outcome) bool {
	return out != nil && out.Decision == approval.Pending && out.Question == nil
}

func (x *heldReader) Await(ctx context.Context, d time.Duration) error {
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	for {
		x.mu.Lock()
		if x.out != nil && x.out.Decision == approval.Approved && !x.sent && len(x.queue) == 0 {
			x.sendLocked()
		}
		inner, queued, out := x.inner, len(x.queue) > 0, x.out
		x.mu.Unlock()
		switch {
		case inner != nil && !queued:
			return inner.Await(ctx, d)
		case queued || out != nil:
			return nil
		}
		if fired, err := x.wait(ctx, timeout); err != nil || fired {
			return err
		}
	}
}

func (x *heldReader) TakeOnly() (bridge.Event, bool) {
	x.mu.Lock()
	inner, queued, out := x.inner, len(x.queue) > 0, x.out
	x.mu.Unlock()
	switch {
	case inner != nil && !queued:
		return inner.TakeOnly()
	case inner != nil || queued || out == nil || out.Decision == approval.Approved || gone(out):
		return bridge.Event{}, false
	}
	return x.final(out)
}

// Collect is for a client that takes one JSON body, which is sent no
// message of the bridge's own (nor asked, nor sent progress).
func (x *heldReader) Collect(ctx context.Context, buf []bridge.Event) ([]bridge.Event, error) {
	for {
		s := x.step()
		switch {
		case s.over:
			return append(buf, s.evs...), nil
		case s.inner != nil:
			return s.inner.Collect(ctx, buf)
		case gone(s.out):
			return buf, context.Canceled
		case s.out != nil && s.out.Decision != approval.Approved:
			if ev, ok := x.final(s.out); ok {
				buf = append(buf, ev)
			}
			return buf, nil
		case s.out != nil:
			continue // sent on the next step
		}
		if _, err := x.wait(ctx, nil); err != nil {
			return buf, err
		}
	}
}

func (x *heldReader) Close() {
	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		return
	}
	x.closed = true
	x.mu.Unlock()
	x.cancel()
	<-x.done
	x.mu.Lock()
	if x.out != nil && x.out.Decision == approval.Approved && !x.sent {
		x.sendLocked()
	}
	inner := x.inner
	x.mu.Unlock()
	if inner != nil {
		inner.Close()
	}
	if x.release != nil {
		x.release()
	}
}

// questions are the bridge's own requests to clients waiting for their
// answers (an approval's elicitation/create), by session and request id.
// An entry lives while its question is asked; an answer is consumed by the
// bridge, never forwarded to the server.
type questions struct {
	mu   sync.Mutex
	open map[questionKey]chan []byte
}

type questionKey struct{ session, id string }

// ask opens a question of id on session: its answer comes on the channel.
func (q *questions) ask(session, id string) (<-chan []byte, func()) {
	k := questionKey{session, id}
	ch := make(chan []byte, 1)
	q.mu.Lock()
	if q.open == nil {
		q.open = map[questionKey]chan []byte{}
	}
	q.open[k] = ch
	q.mu.Unlock()
	return ch, func() {
		q.mu.Lock()
		delete(q.open, k)
		q.mu.Unlock()
	}
}

// take removes from the POST the responses that answer a question of the
// bridge's own on session, and hands each to its asker. Only the session
// it was asked on can answer a question: another's answer with the same
// id is the child's business (and the id is 128 random bits).
func (q *questions) take(p *post, session string) {
	var keep []bridge.Message
	for i := range p.msgs {
		m := &p.msgs[i]
		if m.Kind == bridge.Response && q.answer(session, m) {
			if keep == nil {
				keep = append(make([]bridge.Message, 0, len(p.msgs)), p.msgs[:i]...)
			}
			continue
		}
		if keep != nil {
			keep = append(keep, *m)
		}
	}
	if keep != nil {
		p.msgs = keep
	}
}

// answer hands m to the question it answers, if one of the bridge's own
// on session is open, and reports whether m is the bridge's: any response
// whose id has the bridge's prefix is, answered late, replayed or forged,
// and goes no further.
func (q *questions) answer(session string, m *bridge.Message) bool {
	id := m.ID()
	if len(id) < len(questionPrefix)+2 || string(id[1:len(questionPrefix)+1]) != questionPrefix {
		return false
	}
	q.mu.Lock()
	ch, ok := q.open[questionKey{session, string(id)}]
	q.mu.Unlock()
	if ok {
		select {
		case ch <- m.Raw:
		default: // answered already: the first answer counts
		}
	}
	return true
}

// questionPrefix starts the id of every request of the bridge's own: a
// string no child's id is rewritten to, with 128 random bits after it.
const questionPrefix = "mcp-bridge-approval-"

// askSession is the caller's channel of a 2025 session's held call: the
// question as elicitation/create on the call's own stream, its answer
// taken from the session's POSTs; withdrawn (notifications/cancelled)
// when the answer no longer matters.
func (h *mcpHandler) askSession(x *heldReader, session string) func(ctx context.Context, q approval.Question) (json.RawMessage, error) {
	return func(ctx context.Context, q approval.Question) (json.RawMessage, error) {
		id := strconv.Quote(questionPrefix + bridge.NewID())
		answers, forget := h.questions.ask(session, id)
		defer forget()
		x.enqueue([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"elicitation/create","params":` + string(q.Params()) + `}`))
		select {
		case raw := <-answers:
			var resp struct {
				Result json.RawMessage `json:"result"`
				Error  *struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			if json.Unmarshal(raw, &resp) != nil || resp.Error != nil || resp.Result == nil {
				msg := "the client answered with an error"
				if resp.Error != nil {
					msg += ": " + resp.Error.Message
				}
				return nil, errors.New(msg)
			}
			return resp.Result, nil
		case <-ctx.Done():
			x.enqueue([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `,"reason":"the approval was decided, expired, or the call withdrawn"}}`))
			return nil, ctx.Err()
		}
	}
}

// hold answers a POST of a 2025 session whose call is held (p.held): the
// held reader, whose approved call goes to conn. The caller's user is
// asked when the client declared form elicitation and reads the call's
// stream (not a client that takes one JSON body); progress goes where the
// call has a token.
func (h *mcpHandler) hold(ctx context.Context, p *post, conn bridge.Conn, jsonOnly bool) *heldReader {
	msgs := p.msgs
	send := func() (bridge.Reader, error) { return conn.Send(msgs, jsonOnly) }
	x := &heldReader{call: p.held, rec: p.rec, send: send}
	var ch callerChannel
	hc, canAsk := conn.(bridge.Holder)
	if canAsk {
		x.release = hc.Hold()
		if !jsonOnly && hc.ElicitsForm() {
			ch.ask = h.askSession(x, conn.ID())
		}
	}
	ch.progress = x.progress(p, jsonOnly)
	x.start(ctx, x.call.options(h), ch)
	return x
}

// progress is the Progress hook of a held call: notifications/progress
// with the call's token, nil for a call without one, or a client that
// takes one JSON body.
func (x *heldReader) progress(p *post, jsonOnly bool) func(approval.Waiting) {
	tok := p.rec.calls[p.held.index].msg.ProgressToken()
	if tok == nil || jsonOnly {
		return nil
	}
	return func(w approval.Waiting) { x.enqueue(progressMessage(tok, w)) }
}

// holdStateless answers a stateless POST whose call is held: nobody to
// ask on the call's side (no session to answer in), so operators decide;
// approved, the call goes to a stateless session of its own.
func (h *mcpHandler) holdStateless(ctx context.Context, p *post) *heldReader {
	msgs := p.msgs
	send := func() (bridge.Reader, error) {
		sess, _, err := h.srv.Stateless(ctx, &msgs[0])
		if err != nil {
			return nil, err
		}
		rd, err := sess.Send(msgs, p.jsonOnly)
		if err != nil || rd == nil {
			sess.Close()
			return nil, err
		}
		return closingReader{rd, sess}, nil
	}
	x := &heldReader{call: p.held, rec: p.rec, send: send}
	x.start(ctx, x.call.options(h), callerChannel{progress: x.progress(p, p.jsonOnly)})
	return x
}

// closingReader is a stateless request's reader, whose session ends when
// the answer is out.
type closingReader struct {
	bridge.Reader
	sess bridge.Conn
}

func (c closingReader) Close() {
	c.Reader.Close()
	c.sess.Close()
}

// approvalInput is the key of the bridge's question in an input_required
// result's inputRequests, and of its answer in the retry's inputResponses.
const approvalInput = "mcp-bridge-approval"

// modernHeld answers a 2026-07-28 tools/call the approval rules hold. A
// client that declared form elicitation is asked in an input_required
// result, whose requestState names the approval, sealed and bound like
// every requestState the bridge issues (the principal, the method, the
// tool, the arguments' digest; an expiry no later than the approval's;
// single use); its retry brings the answer. Approved, the call is served
// as the request it was, without the answer. A client that cannot be
// asked waits for an operator, with progress where it gave a token.
func (h *mcpHandler) modernHeld(w http.ResponseWriter, r *http.Request, p *post, pr auth.Principal) error {
	c := p.held
	msg := p.msgs[0]
	bind := bridge.Binding{Owner: owner(pr).Key, Method: msg.Method, Target: c.tool, Arguments: c.args}
	var ch callerChannel
	var rs string
	if raw := msg.Param("requestState"); raw != nil && json.Unmarshal(raw, &rs) == nil && bridge.IsQuestionState(rs) {
		id, why := c.bridge(h).OpenQuestion(rs, bind)
		if why != "" {
			p.rec.deny(c.index)
			return h.answerOne(w, r, p, bridge.ErrorBody(&bridge.Error{Code: bridge.CodeInvalidParams, Message: "Invalid params: " + why, ID: c.id}))
		}
		var responses map[string]json.RawMessage
		_ = json.Unmarshal(msg.Param("inputResponses"), &responses)
		ch.answer = &approval.Answer{ID: id, Result: responses[approvalInput]}
		msg = msg.WithoutParams("requestState", "inputResponses")
	}
	ch.askLater = bridge.DeclaresFormElicitation(msg.ClientCapabilities())
	ctx := r.Context()
	x := &heldReader{call: c, rec: p.rec, modern: true}
	x.send = func() (bridge.Reader, error) {
		call, err := h.srv.Modern(ctx, bridge.ModernRequest{Message: msg, Headers: modernHeaders(r), Owner: owner(pr),
			Env: claimEnv(h.opts.ClaimEnv, pr), Private: pr.Method != "" || h.opts.ToolPolicy != nil})
		if call == nil {
			return nil, err
		}
		return call, err
	}
	x.later = func(out approval.Outcome) []byte {
		expires := h.opts.Now().Add(c.options(h).Approvals.Timeout() - out.Waited)
		q, _ := json.Marshal(map[string]any{"method": "elicitation/create", "params": json.RawMessage(out.Question.Params())})
		res, _ := json.Marshal(map[string]any{"resultType": "input_required",
			"inputRequests": map[string]json.RawMessage{approvalInput: q},
			"requestState":  c.bridge(h).SealQuestion(bind, out.ID, expires)})
		p.rec.calls[c.index].inputRequired = true
		return []byte(`{"jsonrpc":"2.0","id":` + string(c.id) + `,"result":` + string(res) + `}`)
	}
	ch.progress = x.progress(p, p.jsonOnly)
	x.start(ctx, x.call.options(h), ch)
	return h.respond(w, r, p, x, answer{counts: true})
}
