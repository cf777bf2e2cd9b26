package httpapi

// Approvals: the operators' channel of the approval engine (package
// approval), at /approvals: the approvals alive, a decision on one, and a
// stream of events for a chat bot or a script; the audit line and the
// metrics of every step of an approval; and, until the transports hold
// calls for a decision, the refusal of a call that needs one.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcp-bridge/mcp-bridge/approval"
	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// ApprovalsPath is where the operators' channel is served: GET the list
// here, GET and POST /approvals/ID, GET /approvals/events for the stream.
const ApprovalsPath = "/approvals"

// ApprovalsEventsPath is the operators' stream.
const ApprovalsEventsPath = ApprovalsPath + "/events"

// maxDecisionBody is the largest decision read (413 over it): a verdict
// and a reason of at most approval.MaxReason bytes.
const maxDecisionBody = 16 << 10

// ApprovalsAPI configures the operators' channel.
type ApprovalsAPI struct {
	// Engine holds the approvals.
	Engine *approval.Engine
	// Auth authenticates every request: with Mounts the bridge-wide
	// verifier, never a server's own tokens. Nil: every request is
	// refused (403), as deciding needs to know who decides.
	Auth auth.Verifier
	// Readers may see the approvals but not decide (--admin); the
	// engine's approvers may see and decide.
	Readers auth.Subjects
	// KeepAlive is the interval of the stream's keep-alive comments,
	// WriteTimeout the bound of each of its writes. Defaults as Options'.
	KeepAlive    time.Duration
	WriteTimeout time.Duration
	// Logger logs refusals of decisions. Default slog.Default().
	Logger *slog.Logger
	// Context ends every stream when it ends: pass the context whose
	// end starts the bridge's shutdown. Default: the streams end with
	// their clients, or when the engine is closed.
	Context context.Context
}

// approvalsAPI serves the operators' channel.
type approvalsAPI struct {
	ApprovalsAPI
	authn *authn
}

func newApprovalsAPI(api ApprovalsAPI, resource resourceURL, scopes []string) *approvalsAPI {
	api.KeepAlive = positiveOr(api.KeepAlive, DefaultKeepAlive)
	api.WriteTimeout = positiveOr(api.WriteTimeout, DefaultWriteTimeout)
	if api.Logger == nil {
		api.Logger = slog.Default()
	}
	a := &approvalsAPI{ApprovalsAPI: api}
	if api.Auth != nil {
		a.authn = &authn{v: api.Auth, resource: resource, scopes: scopes, log: api.Logger}
	}
	return a
}

// ServeHTTP authenticates, then routes.
func (a *approvalsAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if a.authn == nil {
		writeApprovalsError(w, http.StatusForbidden, "Forbidden: the approvals API needs authentication (--token-env or a JWT key) and --approver")
		return
	}
	a.authn.middleware(http.HandlerFunc(a.serve)).ServeHTTP(w, r)
}

// mayRead: an approver or a reader.
func (a *approvalsAPI) mayRead(p auth.Principal) bool {
	return a.Engine.MayDecide(p) || a.Readers.Match(p)
}

func (a *approvalsAPI) serve(w http.ResponseWriter, r *http.Request) {
	rest, _ := strings.CutPrefix(r.URL.Path, ApprovalsPath)
	p := principal(r)
	id, _ := strings.CutPrefix(rest, "/")
	switch {
	case rest != "" && (id == "" || strings.Contains(id, "/")):
		writeApprovalsError(w, http.StatusNotFound, "Not Found: no such approval")
		return
	case !a.mayRead(p):
		// Said without naming who may: that is for the operator.
		writeApprovalsError(w, http.StatusForbidden, "Forbidden: the approvals are for approvers (--approver) and admins (--admin)")
		return
	}
	switch {
	case rest == "" && isRead(r.Method):
		a.list(w, r)
	case rest == "":
		allow(w, "GET")
	case rest == "/events" && isRead(r.Method):
		a.stream(w, r)
	case rest == "/events":
		allow(w, "GET")
	case isRead(r.Method):
		v, ok := a.Engine.Get(id)
		if !ok {
			writeApprovalsError(w, http.StatusNotFound, "Not Found: "+approval.ErrNotFound.Error())
			return
		}
		writeApprovalsJSON(w, http.StatusOK, a.view(v, p))
	case r.Method == http.MethodPost:
		a.decide(w, r, id)
	default:
		allow(w, "GET, POST")
	}
}

func isRead(method string) bool { return method == http.MethodGet || method == http.MethodHead }

func allow(w http.ResponseWriter, methods string) {
	w.Header().Set("Allow", methods)
	writeApprovalsError(w, http.StatusMethodNotAllowed, "Method Not Allowed: "+methods+" only")
}

// shownApproval is an approval as the API shows it to p: whether p may
// decide it.
type shownApproval struct {
	approval.View
	// CanDecide: p is an approver, and not the caller when the approver
	// must not be.
	CanDecide bool `json:"canDecide"`
}

func (a *approvalsAPI) view(v approval.View, p auth.Principal) shownApproval {
	return showApproval(a.Engine, v, p)
}

func showApproval(e *approval.Engine, v approval.View, p auth.Principal) shownApproval {
	return shownApproval{View: v, CanDecide: e.MayDecide(p) && !(e.SeparateApprover() && v.Caller(p))}
}

// liveSnapshot is what the web page's feed polls: the bridge's snapshot,
// and the approvals alive (so that the feed sees them change).
type liveSnapshot struct {
	bridge.Snapshot
	Approvals []approval.View `json:"approvals,omitempty"`
	Aggregate *aggregateView  `json:"aggregate,omitempty"`
}

// liveView is what one page is sent: its view of the snapshot, and the
// approval queue when its principal is an approver or an admin.
type liveView struct {
	bridge.Snapshot
	Approvals *pageApprovals `json:"approvals,omitempty"`
	Aggregate *aggregateView `json:"aggregate,omitempty"`
}

// pageApprovals is the page's approval queue.
type pageApprovals struct {
	Alive []shownApproval `json:"alive"`
	// Approver: the page's principal may decide (some) of them.
	Approver bool `json:"approver"`
}

// snapshotWith is s with the approvals alive in e (none for nil).
func snapshotWith(s bridge.Snapshot, e *approval.Engine) liveSnapshot {
	ls := liveSnapshot{Snapshot: s}
	if e != nil {
		ls.Approvals = e.List(approval.ListAll)
	}
	return ls
}

// list answers GET /approvals?state=pending|approved|all (default
// pending).
func (a *approvalsAPI) list(w http.ResponseWriter, r *http.Request) {
	state := r.URL.Query().Get("state")
	switch state {
	case "":
		state = approval.ListPending
	case approval.ListPending, approval.ListApproved, approval.ListAll:
	default:
		writeApprovalsError(w, http.StatusBadRequest, "Bad Request: state must be pending, approved or all")
		return
	}
	p := principal(r)
	views := a.Engine.List(state)
	out := make([]shownApproval, len(views))
	for i, v := range views {
		out[i] = a.view(v, p)
	}
	writeApprovalsJSON(w, http.StatusOK, struct {
		Approvals []shownApproval `json:"approvals"`
		// Approver: the reader may decide (some) of them.
		Approver bool `json:"approver"`
		// Timeout is how long a call waits, in seconds.
		Timeout float64 `json:"timeoutSeconds"`
	}{out, a.Engine.MayDecide(p), a.Engine.Timeout().Seconds()})
}

// decision is the body of POST /approvals/ID.
type decision struct {
	approve bool
	reason  string
}

// readDecision reads {"decision": "approve" | "deny", "reason": "..."}:
// JSON, exact member names, each once; the reason optional.
func readDecision(w http.ResponseWriter, r *http.Request) (decision, int, string) {
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || ct != "application/json" {
		return decision{}, http.StatusUnsupportedMediaType, "Unsupported Media Type: send application/json"
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxDecisionBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return decision{}, http.StatusRequestEntityTooLarge, fmt.Sprintf("Content Too Large: a body of at most %d bytes", maxDecisionBody)
	case err != nil:
		return decision{}, http.StatusBadRequest, "Bad Request: the body could not be read"
	}
	const want = `Bad Request: want {"decision": "approve" or "deny", "reason": "..."}`
	members, ok := strictObject(body)
	if !ok {
		return decision{}, http.StatusBadRequest, want
	}
	var d decision
	var verdict string
	for k, v := range members {
		switch k {
		case "decision":
			if json.Unmarshal(v, &verdict) != nil {
				return decision{}, http.StatusBadRequest, want
			}
		case "reason":
			if json.Unmarshal(v, &d.reason) != nil {
				return decision{}, http.StatusBadRequest, want
			}
		default:
			return decision{}, http.StatusBadRequest, want
		}
	}
	switch verdict {
	case "approve":
		d.approve = true
	case "deny":
	default:
		return decision{}, http.StatusBadRequest, want
	}
	return d, 0, ""
}

// strictObject reads one JSON object's members, refusing one given twice
// (which encoding/json would read as its last) and anything after it.
func strictObject(b []byte) (map[string]json.RawMessage, bool) {
	d := json.NewDecoder(bytes.NewReader(b))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	out := map[string]json.RawMessage{}
	for d.More() {
		tok, err := d.Token()
		k, isKey := tok.(string)
		var v json.RawMessage
		if err != nil || !isKey || d.Decode(&v) != nil {
			return nil, false
		}
		if _, dup := out[k]; dup {
			return nil, false
		}
		out[k] = v
	}
	if _, err := d.Token(); err != nil {
		return nil, false
	}
	_, err := d.Token()
	return out, err == io.EOF
}

// decide answers POST /approvals/ID.
func (a *approvalsAPI) decide(w http.ResponseWriter, r *http.Request, id string) {
	p := principal(r)
	d, status, msg := readDecision(w, r)
	if status != 0 {
		writeApprovalsError(w, status, msg)
		return
	}
	v, err := a.Engine.Resolve(id, approval.Verdict{Approve: d.approve, Reason: d.reason, By: p})
	if err != nil {
		status := approvalStatus(err)
		a.Logger.Info("approvals: decision refused", "approver", p.String(), "approval", id, "status", status, "reason", err.Error())
		writeApprovalsError(w, status, http.StatusText(status)+": "+err.Error())
		return
	}
	writeApprovalsJSON(w, http.StatusOK, a.view(v, p))
}

// approvalStatus is the HTTP status of an error of the engine: the one
// place where they become HTTP.
func approvalStatus(err error) int {
	switch {
	case errors.Is(err, approval.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, approval.ErrDecided):
		return http.StatusConflict
	case errors.Is(err, approval.ErrNotApprover), errors.Is(err, approval.ErrSelfApproval):
		return http.StatusForbidden
	case errors.Is(err, approval.ErrClosed), errors.Is(err, approval.ErrTooManyWatch):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// stream answers GET /approvals/events: an approval_requested event for
// every approval alive when it opens, then every event as it happens,
// each an SSE event named by its kind whose data is the event (JSON),
// with keep-alive comments. It ends when the client leaves, the bridge
// shuts down, or the client falls behind (its last comment says so: it
// reconnects, and misses nothing still pending).
func (a *approvalsAPI) stream(w http.ResponseWriter, r *http.Request) {
	watch, pending, err := a.Engine.Watch()
	if err != nil {
		status := approvalStatus(err)
		if status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		writeApprovalsError(w, status, http.StatusText(status)+": "+err.Error())
		return
	}
	defer watch.Close()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	if a.Context != nil {
		defer context.AfterFunc(a.Context, cancel)()
	}
	s, err := startSSE(ctx, w, a.WriteTimeout)
	if err != nil {
		return
	}
	stop := context.AfterFunc(ctx, s.cut)
	defer stop()
	p := principal(r)
	for _, v := range pending {
		s.named(approval.EventRequested, a.eventJSON(approval.Event{Kind: approval.EventRequested, Time: v.Requested, Approval: v}, p))
	}
	if s.flush() != nil {
		return
	}
	keepAlive := time.NewTicker(a.KeepAlive)
	defer keepAlive.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-keepAlive.C:
			s.comment("keep-alive")
		case ev, ok := <-watch.C:
			if !ok {
				if watch.Lost() {
					s.comment("this stream fell behind and ends: reconnect, and the approvals pending are sent again")
					_ = s.flush()
				}
				return
			}
			s.named(ev.Kind, a.eventJSON(ev, p))
		}
		if s.flush() != nil {
			return
		}
	}
}

// streamedEvent is an event as the stream sends it to a reader.
type streamedEvent struct {
	approval.Event
	Approval shownApproval `json:"approval"`
}

func (a *approvalsAPI) eventJSON(ev approval.Event, p auth.Principal) []byte {
	b, _ := json.Marshal(streamedEvent{Event: ev, Approval: a.view(ev.Approval, p)})
	return b
}

// named queues one event of the given name; data is one line of JSON.
func (s *sseWriter) named(name string, data []byte) {
	s.buf = append(s.buf, "event: "...)
	s.buf = append(s.buf, name...)
	s.buf = append(s.buf, "\ndata: "...)
	s.buf = append(s.buf, data...)
	s.buf = append(s.buf, '\n', '\n')
}

func writeApprovalsError(w http.ResponseWriter, status int, msg string) {
	writeApprovalsJSON(w, status, struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}{struct {
		Message string `json:"message"`
	}{msg}})
}

func writeApprovalsJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"message":"internal error"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	// Approvals change by the second: never cached.
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// ApprovalAudit returns the engine's Observe hook that writes one JSON
// line per step of an approval to w: its event (approval_requested,
// approved, denied, expired, executed), the approval, the caller, the
// server, the tool, the rule, the digest of the arguments (never the
// arguments), who decided through which channel, why, and the time
// waited. now is its clock (default time.Now).
func ApprovalAudit(w io.Writer, now func() time.Time) func(approval.Event) {
	if now == nil {
		now = time.Now
	}
	var mu sync.Mutex
	return func(ev approval.Event) {
		b, err := json.Marshal(approvalAuditLine{
			Time: now().UTC().Format(time.RFC3339Nano), Event: ev.Kind, Approval: ev.Approval.ID,
			Principal: ev.Approval.Principal, Server: ev.Approval.Server, Method: methodToolsCall, Tool: ev.Approval.Tool,
			Rule: ev.Approval.Rule, ArgumentsSHA256: ev.Approval.ArgumentsSHA256,
			Channel: string(ev.Channel), Approver: ev.Approver, Reason: ev.Reason,
			WaitMS: float64(ev.Waited.Microseconds()) / 1000,
		})
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		_, _ = w.Write(append(b, '\n'))
	}
}

// approvalAuditLine is one line of the audit log for a step of an
// approval; its first keys are those of a request's line.
type approvalAuditLine struct {
	Time            string  `json:"time"`
	Event           string  `json:"event"`
	Approval        string  `json:"approval"`
	Principal       string  `json:"principal"`
	Server          string  `json:"server,omitempty"`
	Method          string  `json:"method"`
	Tool            string  `json:"tool"`
	Rule            string  `json:"rule"`
	ArgumentsSHA256 string  `json:"arguments_sha256"`
	Channel         string  `json:"channel"`
	Approver        string  `json:"approver"`
	Reason          string  `json:"reason,omitempty"`
	WaitMS          float64 `json:"wait_ms"`
}

// approvalsCollector reads the engine's counts at scrape time, so the
// approval package never imports Prometheus.
type approvalsCollector struct{ e *approval.Engine }

var (
	approvalsTotalDesc = prometheus.NewDesc("mcp_bridge_approvals_total",
		"Steps of approvals, by event (approval_requested, approved, denied, expired, executed) and channel (caller, operator, fail-open, bridge; empty for approval_requested).",
		[]string{"event", "channel"}, nil)
	approvalsPendingDesc = prometheus.NewDesc("mcp_bridge_approvals_pending",
		"Approvals alive: calls waiting for a decision, and approved calls not run yet.", nil, nil)
	approvalStreamsDesc = prometheus.NewDesc("mcp_bridge_approval_streams",
		"Operators' event streams open (/approvals/events).", nil, nil)
)

func (c approvalsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- approvalsTotalDesc
	ch <- approvalsPendingDesc
	ch <- approvalStreamsDesc
}

func (c approvalsCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.e.Stats()
	for _, n := range st.Counts {
		ch <- prometheus.MustNewConstMetric(approvalsTotalDesc, prometheus.CounterValue, float64(n.N), n.Event, string(n.Channel))
	}
	ch <- prometheus.MustNewConstMetric(approvalsPendingDesc, prometheus.GaugeValue, float64(st.Pending))
	ch <- prometheus.MustNewConstMetric(approvalStreamsDesc, prometheus.GaugeValue, float64(st.Watchers))
}

// heldCall returns the index of the first tools/call of the POST that
// the approval policy holds for pr, and its rule; -1 for none. Decided
// after the tool policy: a denied call is never held.
func (rec *record) heldCall(p *approval.Policy, pr auth.Principal) (int, approval.Rule) {
	if p == nil {
		return -1, approval.Rule{}
	}
	for i := range rec.calls {
		c := &rec.calls[i]
		if c.kind != bridge.Request || c.method != methodToolsCall {
			continue
		}
		tool, _ := c.toolCall()
		if r, held := p.Needs(pr, tool); held {
			return i, r
		}
	}
	return -1, approval.Rule{}
}
