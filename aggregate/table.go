package aggregate

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// A Table routes the messages of one client of the aggregate (a session,
// or one 2026-07-28 request) to the servers and back, rewriting what
// would otherwise collide or leak between servers:
//
//   - every request the aggregate sends a server carries an id of the
//     aggregate's own, a number given once per Table, and its progress
//     token is that number too; the client's id and token are kept and put
//     back on the answer and the progress. An answer or progress a server
//     sends for an id that was not sent to it is dropped and counted
//     (Stats.Misrouted): two servers can never answer each other's
//     requests, whatever ids their own sessions use;
//   - every request a server sends the client (sampling, elicitation,
//     roots, ping) gets an id of the Table's own, mapped back to that
//     server and its id when the client answers, so two servers' request 1
//     are two requests for the client;
//   - names and URIs are exposed and resolved by Names.
//
// The rewriting itself is pure (route, exposeResult and the functions
// they call, table-tested); a Table holds the ids in flight. Safe for
// concurrent use: the client's side and each server's side may call it
// from goroutines of their own.
type Table struct {
	names atomic.Pointer[Names] // replaced whole by SetNames (a reload)
	stats *Stats
	o     TableOptions

	mu       sync.Mutex
	lastCall int64
	calls    map[int64]*call  // by the id the server was sent
	byClient map[string]int64 // a client's request id (its bytes) -> the id sent, for cancellations
	left     map[string]sent  // a client's request id -> where it went, for calls the client left (Leave)
	leftFIFO []leftCall       // the calls left, oldest first, at most maxLeft
	lastAsk  int64
	asks     map[int64]*ask   // by the id the client was sent
	askBy    map[askKey]int64 // (server, its request id) -> the id sent, for the server's cancellations
}

// Defaults of TableOptions.
const (
	DefaultMaxCalls = 4096 // requests of a client in flight to servers, for one Table
	DefaultMaxAsks  = 256  // servers' requests waiting for the client's answer
)

// TableOptions bound a Table. The zero value works.
type TableOptions struct {
	// MaxCalls bounds the requests in flight to servers (the client's and
	// the aggregate's own); past it a client's request is refused.
	// Default DefaultMaxCalls.
	MaxCalls int
	// MaxAsks bounds the servers' requests waiting for the client; past
	// it a server's request is answered with an error at once.
	// Default DefaultMaxAsks.
	MaxAsks int
	// Stats counts misrouted and refused messages; nil gives the Table
	// its own.
	Stats *Stats
}

// call is a request in flight to a server.
type call struct {
	server   string
	method   string
	clientID []byte // the client's id, nil for the aggregate's own call
	token    []byte // the client's progress token, nil for none
}

// ask is a server's request waiting for the client's answer.
type ask struct {
	server string
	id     []byte // the server's id
	token  []byte // the server's progress token, nil for none
}

type askKey struct{ server, id string }

// sent is where a client's request went: its server and the id it was sent.
type sent struct {
	server string
	id     int64
}

// leftCall is a call the client left: its id and the id it was sent.
type leftCall struct {
	key string
	id  int64
}

// maxLeft bounds the calls a Table remembers the client left, so that a
// client leaving calls without ever cancelling them costs nothing more.
const maxLeft = 64

// NewTable is a Table for one client of the aggregate of names.
func NewTable(names *Names, o TableOptions) *Table {
	if o.MaxCalls <= 0 {
		o.MaxCalls = DefaultMaxCalls
	}
	if o.MaxAsks <= 0 {
		o.MaxAsks = DefaultMaxAsks
	}
	st := o.Stats
	if st == nil {
		st = &Stats{}
	}
	t := &Table{stats: st, o: o, calls: map[int64]*call{}, byClient: map[string]int64{}, left: map[string]sent{},
		asks: map[int64]*ask{}, askBy: map[askKey]int64{}}
	t.names.Store(names)
	return t
}

// SetNames makes the Table route by n from now on (a reload renamed,
// added or removed servers): requests in flight keep their ids, and their
// answers are exposed by n.
func (t *Table) SetNames(n *Names) { t.names.Store(n) }

// Target is where a client's message goes.
type Target int

const (
	// ToServer: the message goes to Route.Server, as Route.Message.
	ToServer Target = iota + 1
	// ToAll: the message goes to every server as it is (the client's
	// roots changed).
	ToAll
	// ToAggregate: the aggregate answers or takes it itself: initialize,
	// ping, the four lists (Catalog), logging/setLevel (which it passes to
	// each server), server/discover, subscriptions/listen,
	// notifications/initialized.
	ToAggregate
	// Nowhere: the message is dropped: a notification or an answer for
	// nothing in flight, or a notification the servers do not take.
	Nowhere
)

// Route is where a client's message goes, and as what.
type Route struct {
	Target  Target
	Server  string
	Message []byte
	// ID is the id a request sent to Server carries: answer the client
	// with Forget(ID) and an error if it cannot be sent.
	ID int64
}

// aggregateMethods are the client requests the aggregate serves itself.
var aggregateMethods = map[string]bool{
	"initialize": true, "ping": true, "logging/setLevel": true,
	"tools/list": true, "prompts/list": true, "resources/list": true, "resources/templates/list": true,
	"server/discover": true, "subscriptions/listen": true,
}

// envelope is the members of a JSON-RPC message the Table reads.
type envelope struct {
	id, method, params, result span
	hasID, hasMethod           bool
	hasParams, hasResult       bool
}

func readEnvelope(msg []byte) (envelope, error) {
	s, f, err := members(msg, "id", "method", "params", "result")
	if err != nil {
		return envelope{}, err
	}
	return envelope{id: s[0], method: s[1], params: s[2], result: s[3],
		hasID: f[0], hasMethod: f[1], hasParams: f[2], hasResult: f[3]}, nil
}

// FromClient routes a message of the client: one message, already
// checked by bridge.ParseBody. A request the aggregate cannot route (an
// unknown tool, prompt or resource, a method nothing serves) is an error
// for the client (-32602, -32601); so is one past MaxCalls.
func (t *Table) FromClient(msg []byte) (Route, error) {
	env, err := readEnvelope(msg)
	if err != nil {
		return Route{}, invalidRequest(err)
	}
	method, _ := stringValue(env.method.of(msg))
	switch {
	case env.hasMethod && env.hasID:
		return t.clientRequest(msg, env, method)
	case env.hasMethod:
		return t.clientNotification(msg, method)
	case env.hasID:
		return t.clientAnswer(msg, env)
	}
	return Route{Target: Nowhere}, nil
}

// clientRequest routes a client's request to its server, under an id of
// the aggregate's own.
func (t *Table) clientRequest(msg []byte, env envelope, method string) (Route, error) {
	if aggregateMethods[method] {
		return Route{Target: ToAggregate, Message: msg}, nil
	}
	clientID := env.id.of(msg)
	rq, err := readRequest(method, msg, env)
	if err != nil {
		return Route{}, withID(err, clientID)
	}
	server, target, err := resolveTarget(t.names.Load(), rq.kind, rq.target)
	if err != nil {
		return Route{}, withID(err, clientID)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.calls) >= t.o.MaxCalls {
		return Route{}, withID(&bridge.Error{Kind: bridge.KindUnavailable, Code: bridge.CodeInternalError,
			Message: "too many requests in flight to the servers of this aggregate"}, clientID)
	}
	id := t.newCallLocked(server, method, bytes.Clone(clientID))
	c := t.calls[id]
	t.byClient[string(c.clientID)] = id
	num := strconv.AppendInt(nil, id, 10)
	edits := []edit{{rq.at, target}, {env.id, num}}
	if rq.hasToken {
		c.token = bytes.Clone(rq.token.of(msg))
		edits = append(edits, edit{rq.token, num})
	}
	return Route{Target: ToServer, Server: server, Message: applyEdits(msg, edits...), ID: id}, nil
}

// newCallLocked registers a call and returns its id.
func (t *Table) newCallLocked(server, method string, clientID []byte) int64 {
	t.lastCall++
	t.calls[t.lastCall] = &call{server: server, method: method, clientID: clientID}
	return t.lastCall
}

var (
	progressToken = path{"params", "_meta", "progressToken"}
	requestID     = path{"params", "requestId"}
	paramsToken   = path{"params", "progressToken"}
)

// request is what the Table reads of a client's request that goes to a
// server, each span in the message: the name or URI it names (at, whose
// string is target), and its progress token.
type request struct {
	at       span
	target   string
	kind     Kind // KindTool, KindPrompt, or KindResource for a URI
	token    span
	hasToken bool
}

// readRequest finds, in one scan of params (and of the objects it reads
// there), the member that names what the request is for and the progress
// token. A method no server takes is -32601; a request without that
// member, or with a member that is not a string, -32602.
func readRequest(method string, msg []byte, env envelope) (request, error) {
	var rq request
	key := ""
	switch method {
	case "tools/call":
		key, rq.kind = "name", KindTool
	case "prompts/get":
		key, rq.kind = "name", KindPrompt
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		key, rq.kind = "uri", KindResource
	case "completion/complete":
		key = "ref"
	default:
		return request{}, &bridge.Error{Kind: bridge.KindInvalid, Code: bridge.CodeMethodNotFound, Message: "Method not found: " + method}
	}
	if !env.hasParams {
		return rq, invalidParams(method + ": params." + key + " is required")
	}
	in := func(outer span, inner span) span { return span{outer.start + inner.start, outer.start + inner.end} }
	params := env.params.of(msg)
	ps, pf, err := members(params, key, "_meta")
	if err != nil {
		return rq, invalidRequest(err)
	}
	if pf[1] {
		meta := in(env.params, ps[1])
		if i := skipSpace(meta.of(msg), 0); i < len(meta.of(msg)) && meta.of(msg)[i] == '{' {
			ts, tf, err := member(meta.of(msg), "progressToken")
			if err != nil {
				return rq, invalidRequest(err)
			}
			rq.token, rq.hasToken = in(meta, ts), tf
		}
	}
	if !pf[0] {
		return rq, invalidParams(method + ": params." + key + " is required")
	}
	rq.at = in(env.params, ps[0])
	if key == "ref" {
		ref := rq.at.of(msg)
		rs, rf, err := members(ref, "type", "name", "uri")
		if err != nil {
			return rq, invalidParams("completion/complete: params.ref must be an object")
		}
		switch t, _ := stringValue(rs[0].of(ref)); {
		case !rf[0]:
			return rq, invalidParams("completion/complete: params.ref.type is required")
		case t == "ref/prompt" && rf[1]:
			rq.at, rq.kind = in(rq.at, rs[1]), KindPrompt
		case t == "ref/resource" && rf[2]:
			rq.at, rq.kind = in(rq.at, rs[2]), KindResource
		default:
			return rq, invalidParams("completion/complete: params.ref must be a ref/prompt with a name or a ref/resource with a uri")
		}
	}
	var ok bool
	if rq.target, ok = stringValue(rq.at.of(msg)); !ok {
		return rq, invalidParams(fmt.Sprintf("%s: the %s it names must be a string", method, rq.kind))
	}
	return rq, nil
}

// resolveTarget is the server a request for target (a name of kind, or a
// URI for KindResource) goes to, and target as that server names it, a
// JSON string. Pure: a function of the names and the request.
func resolveTarget(n *Names, kind Kind, target string) (server string, own []byte, err error) {
	var name string
	if kind == KindResource {
		server, name, err = n.ResolveURI(target)
	} else {
		server, name, err = n.Resolve(kind, target)
	}
	if err != nil {
		return "", nil, err
	}
	return server, quote(name), nil
}

// route is the server a client's request goes to, and the request as that
// server takes it: the exposed name or URI it names resolved to the
// server's own, every other byte kept. Pure: a function of the names and
// the message.
func route(n *Names, method string, msg []byte) (server string, out []byte, err error) {
	env, err := readEnvelope(msg)
	if err != nil {
		return "", nil, invalidRequest(err)
	}
	rq, err := readRequest(method, msg, env)
	if err != nil {
		return "", nil, err
	}
	server, own, err := resolveTarget(n, rq.kind, rq.target)
	if err != nil {
		return "", nil, err
	}
	return server, applyEdits(msg, edit{rq.at, own}), nil
}

// clientNotification routes a client's notification.
func (t *Table) clientNotification(msg []byte, method string) (Route, error) {
	switch method {
	case "notifications/initialized":
		return Route{Target: ToAggregate, Message: msg}, nil
	case "notifications/roots/list_changed":
		return Route{Target: ToAll, Message: msg}, nil
	case "notifications/cancelled":
		raw, ok, err := requestID.find(msg)
		if err != nil || !ok {
			return Route{Target: Nowhere}, nil
		}
		t.mu.Lock()
		to, known := sent{}, false
		if id, ok := t.byClient[string(raw)]; ok && t.calls[id] != nil {
			to, known = sent{t.calls[id].server, id}, true
		} else if to, known = t.left[string(raw)]; known {
			delete(t.left, string(raw)) // its leftFIFO entry goes when it comes round
		}
		t.mu.Unlock()
		if !known {
			return Route{Target: Nowhere}, nil
		}
		out, err := requestID.replaceAt(msg, strconv.AppendInt(nil, to.id, 10))
		if err != nil {
			return Route{Target: Nowhere}, nil
		}
		return Route{Target: ToServer, Server: to.server, Message: out}, nil
	case "notifications/progress":
		// Progress of the client's work on a server's request.
		raw, ok, err := paramsToken.find(msg)
		if err != nil || !ok {
			return Route{Target: Nowhere}, nil
		}
		t.mu.Lock()
		a := t.asks[ourID(raw)]
		t.mu.Unlock()
		if a == nil || a.token == nil {
			return Route{Target: Nowhere}, nil
		}
		out, err := paramsToken.replaceAt(msg, a.token)
		if err != nil {
			return Route{Target: Nowhere}, nil
		}
		return Route{Target: ToServer, Server: a.server, Message: out}, nil
	}
	return Route{Target: Nowhere}, nil
}

// clientAnswer routes the client's answer to a server's request back to
// that server, under the server's id.
func (t *Table) clientAnswer(msg []byte, env envelope) (Route, error) {
	k := ourID(env.id.of(msg))
	t.mu.Lock()
	a := t.asks[k]
	if a != nil {
		delete(t.asks, k)
		delete(t.askBy, askKey{a.server, string(a.id)})
	}
	t.mu.Unlock()
	if a == nil {
		return Route{Target: Nowhere}, nil
	}
	out := splice(msg, env.id, a.id)
	return Route{Target: ToServer, Server: a.server, Message: out}, nil
}

// ourID is the number of an id the Table gave, 0 (no id it gives) for any
// other.
func ourID(raw []byte) int64 {
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// Call registers a request of the aggregate's own to server (a list, a
// subscription renewed) and returns the message to send it: its answer
// comes back from FromServer as a Delivery ToAggregate. params is the
// request's params, nil for none.
func (t *Table) Call(server, method string, params []byte) (id int64, msg []byte) {
	t.mu.Lock()
	id = t.newCallLocked(server, method, nil)
	t.mu.Unlock()
	msg = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":%s`, id, quote(method))
	if params != nil {
		msg = append(append(msg, `,"params":`...), params...)
	}
	return id, append(msg, '}')
}

// Forget drops the call id (one that could not be sent); a late answer
// to it is dropped.
func (t *Table) Forget(id int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.calls[id]; c != nil {
		delete(t.calls, id)
		if c.clientID != nil && t.byClient[string(c.clientID)] == id {
			delete(t.byClient, string(c.clientID))
		}
	}
}

// Leave drops the call id, as Forget, whose client stopped waiting for
// its answer (its POST's stream closed), but remembers where it went: a
// client that cancels a call stops reading its answer first (the Go SDK
// does), and its notifications/cancelled must still reach the server. The
// last maxLeft calls left are remembered.
func (t *Table) Leave(id int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.calls[id]
	if c == nil {
		return
	}
	delete(t.calls, id)
	if c.clientID == nil {
		return
	}
	key := string(c.clientID)
	if t.byClient[key] == id {
		delete(t.byClient, key)
	}
	if len(t.leftFIFO) == maxLeft {
		if old := t.leftFIFO[0]; t.left[old.key].id == old.id {
			delete(t.left, old.key) // unless a later call of that client id was left since
		}
		t.leftFIFO = t.leftFIFO[1:]
	}
	t.left[key] = sent{c.server, id}
	t.leftFIFO = append(t.leftFIFO, leftCall{key, id})
}

// Dest is where a server's message goes.
type Dest int

const (
	// ToClient: Delivery.Message goes to the client.
	ToClient Dest = iota + 1
	// ToCaller: the answer to a call of the aggregate's own (Call).
	ToCaller
	// BackToServer: Delivery.Message is the aggregate's answer to the
	// server's own request, refused (too many waiting for the client).
	BackToServer
	// Dropped: nothing goes anywhere; Delivery.Changed may say what lists
	// changed.
	Dropped
)

// Delivery is where a server's message goes, and as what.
type Delivery struct {
	Dest    Dest
	Message []byte
	// Changed are the lists the message says changed (a server's
	// list_changed, Dest Dropped): for the Coalescer, which announces
	// them to the client in its own time.
	Changed Changes
	// Method is the method of the request an answer answers.
	Method string
	// ID is the call an answer ToCaller answers.
	ID int64
}

// errMisrouted: a server answered, or sent progress for, a request that
// was not sent to it.
var errMisrouted = errors.New("a server's answer to a request that was not sent to it")

// FromServer routes a message of server to the client, rewritten as the
// client sees it. A message that answers what was not sent to server is
// Dropped with errMisrouted, for the log.
func (t *Table) FromServer(server string, msg []byte) (Delivery, error) {
	env, err := readEnvelope(msg)
	if err != nil {
		return Delivery{Dest: Dropped}, fmt.Errorf("server %q: %w", server, err)
	}
	method, _ := stringValue(env.method.of(msg))
	switch {
	case env.hasMethod && env.hasID:
		return t.serverRequest(server, msg, env)
	case env.hasMethod:
		return t.serverNotification(server, msg, method)
	case env.hasID:
		return t.serverAnswer(server, msg, env)
	}
	return Delivery{Dest: Dropped}, fmt.Errorf("server %q: not a JSON-RPC message", server)
}

// serverAnswer puts the client's id back on a server's answer.
func (t *Table) serverAnswer(server string, msg []byte, env envelope) (Delivery, error) {
	id := ourID(env.id.of(msg))
	t.mu.Lock()
	c := t.calls[id]
	if c != nil && c.server == server {
		delete(t.calls, id)
		if c.clientID != nil && t.byClient[string(c.clientID)] == id {
			delete(t.byClient, string(c.clientID))
		}
	}
	t.mu.Unlock()
	if c == nil || c.server != server {
		t.stats.Misrouted.Add(1)
		return Delivery{Dest: Dropped}, fmt.Errorf("server %q, id %s: %w", server, env.id.of(msg), errMisrouted)
	}
	if c.clientID == nil {
		return Delivery{Dest: ToCaller, Message: msg, Method: c.method, ID: id}, nil
	}
	edits := []edit{{env.id, c.clientID}}
	if env.hasResult {
		res, err := exposeResult(t.names.Load(), server, c.method, env.result.of(msg))
		if err != nil {
			return Delivery{Dest: Dropped}, fmt.Errorf("server %q: %s result: %w", server, c.method, err)
		}
		edits = append(edits, edit{env.result, res})
	}
	return Delivery{Dest: ToClient, Message: applyEdits(msg, edits...), Method: c.method}, nil
}

// serverRequest gives a server's request to the client under an id of
// the Table's own.
func (t *Table) serverRequest(server string, msg []byte, env envelope) (Delivery, error) {
	tokenAt, hasToken, err := progressToken.at(msg)
	if err != nil {
		return Delivery{Dest: Dropped}, fmt.Errorf("server %q: %w", server, err)
	}
	t.mu.Lock()
	if len(t.asks) >= t.o.MaxAsks {
		t.mu.Unlock()
		t.stats.Refused.Add(1)
		return Delivery{Dest: BackToServer, Message: errorAnswer(env.id.of(msg), bridge.CodeInternalError,
			"the client has too many requests of this aggregate's servers to answer; ask again later")}, nil
	}
	t.lastAsk++
	k := t.lastAsk
	a := &ask{server: server, id: bytes.Clone(env.id.of(msg))}
	if hasToken {
		a.token = bytes.Clone(tokenAt.of(msg))
	}
	t.asks[k] = a
	t.askBy[askKey{server, string(a.id)}] = k
	t.mu.Unlock()
	num := strconv.AppendInt(nil, k, 10)
	edits := []edit{{env.id, num}}
	if hasToken {
		edits = append(edits, edit{tokenAt, num})
	}
	return Delivery{Dest: ToClient, Message: applyEdits(msg, edits...)}, nil
}

// serverNotification rewrites a server's notification for the client.
func (t *Table) serverNotification(server string, msg []byte, method string) (Delivery, error) {
	switch method {
	case "notifications/progress":
		raw, ok, err := paramsToken.find(msg)
		if err != nil || !ok {
			return Delivery{Dest: Dropped}, err
		}
		id := ourID(raw)
		t.mu.Lock()
		c := t.calls[id]
		t.mu.Unlock()
		if c == nil || c.server != server || c.token == nil {
			if c != nil && c.server != server {
				t.stats.Misrouted.Add(1)
				return Delivery{Dest: Dropped}, fmt.Errorf("server %q, progress token %s: %w", server, raw, errMisrouted)
			}
			return Delivery{Dest: Dropped}, nil
		}
		out, err := paramsToken.replaceAt(msg, c.token)
		return Delivery{Dest: ToClient, Message: out}, err
	case "notifications/cancelled":
		// The server gives up a request it sent the client.
		raw, ok, err := requestID.find(msg)
		if err != nil || !ok {
			return Delivery{Dest: Dropped}, err
		}
		t.mu.Lock()
		k, known := t.askBy[askKey{server, string(raw)}]
		if known {
			delete(t.askBy, askKey{server, string(raw)})
			delete(t.asks, k)
		}
		t.mu.Unlock()
		if !known {
			return Delivery{Dest: Dropped}, nil
		}
		out, err := requestID.replaceAt(msg, strconv.AppendInt(nil, k, 10))
		return Delivery{Dest: ToClient, Message: out}, err
	}
	out, changed, err := exposeNotification(t.names.Load(), server, method, msg)
	if err != nil {
		return Delivery{Dest: Dropped}, fmt.Errorf("server %q: %s: %w", server, method, err)
	}
	if changed != 0 {
		return Delivery{Dest: Dropped, Changed: changed}, nil
	}
	return Delivery{Dest: ToClient, Message: out}, nil
}

// ServerGone ends every call in flight to server, which is down or was
// removed: each client's call gets its answer (Unavailable), each call of
// the aggregate's own an error ToCaller, and the server's requests to the
// client are forgotten (the client's late answers are dropped).
func (t *Table) ServerGone(server string) []Delivery {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Delivery
	for id, c := range t.calls {
		if c.server != server {
			continue
		}
		delete(t.calls, id)
		if c.clientID == nil {
			out = append(out, Delivery{Dest: ToCaller, Method: c.method, ID: id,
				Message: errorAnswer(strconv.AppendInt(nil, id, 10), bridge.CodeInternalError, "server "+strconv.Quote(server)+" is down")})
			continue
		}
		if t.byClient[string(c.clientID)] == id {
			delete(t.byClient, string(c.clientID))
		}
		out = append(out, Delivery{Dest: ToClient, Method: c.method, Message: Unavailable(c.clientID, c.method, server)})
	}
	for k, a := range t.asks {
		if a.server == server {
			delete(t.asks, k)
			delete(t.askBy, askKey{server, string(a.id)})
		}
	}
	return out
}

// Unavailable is the answer to a client's request id (of method) that
// server cannot take because it is down: a tool's result with isError
// (the model reads it, and may try another server), else a JSON-RPC
// error.
func Unavailable(id []byte, method, server string) []byte {
	why := fmt.Sprintf("server %q of this aggregate is down: its tools, prompts and resources are unavailable until it is back", server)
	if method == "tools/call" {
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%s}],"isError":true}}`, id, quote(why))
	}
	return errorAnswer(id, bridge.CodeInternalError, why)
}

// errorAnswer is a JSON-RPC error answering id.
func errorAnswer(id []byte, code int, msg string) []byte {
	if len(id) == 0 {
		id = []byte("null")
	}
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`, id, code, quote(msg))
}

// invalidRequest is the error of a message the Table cannot read.
func invalidRequest(err error) error {
	return &bridge.Error{Kind: bridge.KindInvalid, Code: bridge.CodeInvalidRequest, Message: "invalid request: " + err.Error()}
}

// withID is err answering the request id.
func withID(err error, id []byte) error {
	var be *bridge.Error
	if errors.As(err, &be) {
		c := *be
		c.ID = bytes.Clone(id)
		return &c
	}
	return err
}
