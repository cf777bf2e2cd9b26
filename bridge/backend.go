package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
)

// A call's backend: what serves a 2026-07-28 request on the children of
// one era. Both meet the core only through its seam (party.go: submit,
// pause, resume, cancel, reply); the core never learns which era a
// request came from.
//
//   - passthrough, for a modern child: the request goes to the child as
//     it is (ids rewritten, its own requestState relayed sealed:
//     sealed.go), and its answer comes back decorated;
//   - translating, for a legacy child: the bridge answers discovery from
//     the child's InitializeResult, serves listens from its notifications
//     (listen.go), gives a call that may ask its client for input a child
//     of its own and turns the child's questions into input_required
//     results, parking the call for the retry (mrtr.go), and translates
//     answers and errors.
type backend interface {
	// start serves the call's request m: it puts it on a child, or has
	// the call answer it (ModernCall.answer).
	start(ctx context.Context, mc *ModernCall, m *Message) error
	// translate turns what the child sent for the call into what its
	// client gets, with what the bridge read of it. An *Error answers the
	// request with an HTTP status (httpKind), when it comes first.
	translate(mc *ModernCall, items []childMsg) ([]Event, error)
	// leveled reports whether the child's log level is the bridge's to
	// set (a modern request carries its own).
	leveled() bool
}

func backendFor(era childEra) backend {
	if era == eraModern {
		return passthrough{}
	}
	return translating{}
}

// passthrough serves calls on a child that speaks 2026-07-28.
type passthrough struct{}

func (passthrough) leveled() bool { return false }

func (passthrough) start(_ context.Context, mc *ModernCall, m *Message) error {
	if raw := m.Param("requestState"); raw != nil {
		var rs string
		state, why := "", whyStateNotOurs
		if raw[0] == '"' && unquote(raw, &rs) == nil {
			state, why = mc.unwrapState(rs)
		}
		if why != "" {
			mc.b.stats.InputRefused.Add(1)
			mc.answer(errorResponse(mc.id, CodeInvalidParams, "Invalid params: "+why, nil))
			return nil
		}
		q, _ := json.Marshal(state)
		m.setParam("requestState", q)
	}
	if err := mc.submit(mc.base, m, mc.Listen()); err != nil {
		return err
	}
	if mc.Listen() {
		mc.state = stateListening
		mc.b.addListen(mc)
	}
	return nil
}

func (passthrough) translate(mc *ModernCall, items []childMsg) ([]Event, error) {
	var out []Event
	for i := range items {
		m := &items[i]
		switch m.kind {
		case Response:
			ev, err := passthroughAnswer(mc, m, len(out) == 0)
			if err != nil {
				return nil, err
			}
			out = appendEvent(out, ev)
		case Request:
			// A 2026-07-28 server asks its client through input_required
			// results, which pass through; a request of its own has no
			// client to go to.
			refuseRequest(mc, m)
		default:
			if m.method == methodProgress || m.method == methodLogMessage || mc.Listen() {
				out = append(out, otherEvent(m.raw)) // a listen's, stamped by the child
			}
		}
	}
	return out, nil
}

// passthroughAnswer is what a modern child's answer m becomes: an error
// with an HTTP status of its own while the response has not begun
// (first), else the answer, decorated, a requestState in it wrapped.
func passthroughAnswer(mc *ModernCall, m *childMsg, first bool) (Event, error) {
	if mc.state.over() {
		return Event{}, nil
	}
	mc.state = stateDone
	if m.f.error.ok() {
		code := errorCode(m)
		if kind, ok := httpKind(code); ok && first {
			return Event{}, mc.httpError(m.raw, kind)
		}
		return mc.answerEvent(m.raw, true, code), nil
	}
	if mc.method == "tools/list" {
		mc.pool.learnTools(m.f.result.of(m.raw))
	}
	if mrtrMethods[mc.method] {
		m = mc.relayState(m)
	}
	return mc.answerEvent(decorateResult(m, mc.hints), false, 0), nil
}

// translating serves calls on a child that speaks the 2025 protocol.
type translating struct{}

func (translating) leveled() bool { return true }

func (translating) start(ctx context.Context, mc *ModernCall, m *Message) error {
	if m.Param("requestState") != nil {
		return mc.resume(m)
	}
	if m.Param("inputResponses") != nil {
		// Answers to no question the bridge asked: "servers SHOULD ignore
		// any information [they do] not recognize", and the request is a
		// new one. A legacy child is not shown them.
		m.deleteParam("inputResponses")
	}
	switch {
	case m.Method == "server/discover":
		mc.answer(discoverResult(mc.base, mc.id, mc.hints.scope))
		return nil
	case mc.Listen():
		return mc.startListen(ctx, m)
	case mrtrMethods[m.Method] && mc.env.caps.asksInput():
		return mc.startLeased(ctx, m)
	}
	return mc.submit(mc.base, m, false)
}

func (translating) translate(mc *ModernCall, items []childMsg) ([]Event, error) {
	var out []Event
	for i := range items {
		m := &items[i]
		switch m.kind {
		case Response:
			ev, err := translatedAnswer(mc, m, len(out) == 0)
			if err != nil {
				return nil, err
			}
			out = appendEvent(out, ev)
		case Request:
			mc.childRequest(m)
		default:
			switch {
			case m.method == methodProgress, m.method == methodLogMessage:
				out = append(out, otherEvent(m.raw))
			case mc.state == stateListening:
				// What the listen asked for (listenBox): stamped with its
				// id, as "all notifications delivered on the stream carry"
				// it.
				out = append(out, otherEvent(stampSubscription(m.raw, mc.id)))
			}
		}
	}
	return out, nil
}

// translatedAnswer is what a legacy child's answer m becomes for the
// modern client: -32021 if it failed after the child asked for what the
// client cannot give, an error mapped to 2026-07-28's codes (with an HTTP
// status of its own while the response has not begun: first), or the
// result decorated.
func translatedAnswer(mc *ModernCall, m *childMsg, first bool) (Event, error) {
	if mc.state.over() {
		return Event{}, nil
	}
	if id := m.f.id.of(m.raw); !bytes.Equal(id, mc.id) {
		// Given while the call was parked, to the request that parked it:
		// it answers the retry now.
		m = m.replaced(m.f.id, mc.id)
	}
	if mc.state == stateGathering {
		// The child answered while being asked: its questions are moot,
		// and the answer is final.
		mc.dropRound()
	}
	mc.state = stateDone
	if err := mc.missingFailure(m); err != nil {
		if first {
			return Event{}, err
		}
		return mc.answerEvent(ErrorBody(err), true, err.Code), nil
	}
	if m.f.error.ok() {
		msg, code := translateError(m)
		if kind, ok := httpKind(code); ok && first {
			// The errors 2026-07-28 gives an HTTP status of their own get
			// it while the response has not begun.
			return Event{}, mc.httpError(msg, kind)
		}
		return mc.answerEvent(msg, true, code), nil
	}
	if mc.method == "tools/list" {
		mc.pool.learnTools(m.f.result.of(m.raw))
	}
	return mc.answerEvent(decorateResult(m, mc.hints), false, 0), nil
}

// startLeased puts a call that may ask its client for input on a child
// leased to it alone: whatever the child asks while it runs is this
// call's, without guessing.
func (mc *ModernCall) startLeased(ctx context.Context, m *Message) error {
	lease, unlease, err := mc.pool.lease(ctx, mc.owner.Key, mc.base)
	if err != nil {
		return err
	}
	if err := mc.submit(lease, m, false); err != nil {
		unlease(false)
		return err
	}
	mc.run.lease, mc.run.unlease = lease, unlease
	return nil
}

// refuseRequest answers a request of the child's that a 2026-07-28 client
// cannot be sent (a ping is answered by the bridge).
func refuseRequest(mc *ModernCall, m *childMsg) {
	xid := bytes.Clone(m.f.id.of(m.raw))
	if m.method == "ping" {
		mc.run.reply(xid, []byte(`{}`))
		return
	}
	mc.run.replyError(xid, CodeMethodNotFound, "mcp-bridge: a 2026-07-28 client cannot be sent "+m.method)
}

func appendEvent(out []Event, ev Event) []Event {
	if ev.Data == nil {
		return out
	}
	return append(out, ev)
}

// answerEvent is the Event of msg, the call's answer: a result, or an
// error (errs) with code. What the transport reports of it is what the
// bridge made of it, not read from msg again.
func (mc *ModernCall) answerEvent(msg []byte, errs bool, code int) Event {
	return Event{Data: msg, read: readReply, rep: Reply{ID: mc.id, Error: errs, Code: code}}
}

// otherEvent is the Event of msg, which answers no request.
func otherEvent(msg []byte) Event { return Event{Data: msg, read: readOther} }

// errorCode is the code of m, an error response.
func errorCode(m *childMsg) int {
	e := m.f.error.of(m.raw)
	if e == nil || e[0] != '{' {
		return 0
	}
	code, _ := strconv.Atoi(string(member(e, "code").of(e)))
	return code
}
