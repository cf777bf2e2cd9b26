package httpapi

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// metrics are the bridge's Prometheus metrics, in a registry of their own
// (with the Go and process collectors), served at /metrics. What happens
// on the MCP endpoint (requests, outcomes, latency, bytes) is observed
// here, by a middleware; what happens in the bridge (sessions, children,
// drops) is read from bridge.Stats at scrape time, so the bridge package
// never imports Prometheus.
type metrics struct {
	path    string
	handler http.Handler // promhttp, for /metrics
	// own gathers the bridge's metrics alone, without the process's (Go
	// runtime, process): Mounts serves every server's at its /metrics,
	// each labelled with its server.
	own    prometheus.Gatherer
	scrape auth.Verifier // Options.MetricsAuth; nil: /metrics is open, unless closed
	// closed: clients must authenticate and the scraper has neither a
	// token nor Options.MetricsPublic.
	closed bool
	log    *slog.Logger
	now    func() time.Time

	// byMethod are the counters of each era (0: 2025, 1: 2026-07-28), by
	// method: known MCP methods, "response" and "other".
	byMethod [2]map[string]*methodMetrics
	http     *prometheus.CounterVec // {method, code}
	authFail *prometheus.CounterVec // {reason}
	received prometheus.Counter
	sent     prometheus.Counter

	// httpSeen caches the counters of http by httpKey: WithLabelValues
	// hashes its labels and takes a lock on every call, and every request
	// to the endpoint counts once. Filled on first use, so /metrics lists
	// only the combinations that happened.
	httpSeen sync.Map
}

// methodMetrics are one method's counters, resolved once so that
// observing a request costs a map lookup, not a label hash.
type methodMetrics struct {
	ok, error, refused, unanswered prometheus.Counter
	latency                        prometheus.Observer
}

// Outcomes of a client's JSON-RPC message (label "outcome").
const (
	outcomeOK         = "ok"         // a result; for notifications and responses: accepted (202)
	outcomeError      = "error"      // a JSON-RPC error response (from the server or the bridge)
	outcomeRefused    = "refused"    // the HTTP request was refused (4xx/5xx), nothing reached the server
	outcomeUnanswered = "unanswered" // the client left before the response (it stays with the session)
)

// methodLabels are the values of the "method" label, so its cardinality is
// bounded whatever clients send: the methods a client sends to an MCP
// server (2024-11-05 to 2025-11-25, and the 2026-07-28 probes the bridge
// refuses), "response" for a client's answer to a server's request
// (sampling, elicitation, roots), and "other" for anything else, including
// bodies that are not JSON-RPC.
var methodLabels = []string{
	"initialize", "ping",
	"tools/list", "tools/call",
	"resources/list", "resources/templates/list", "resources/read",
	"resources/subscribe", "resources/unsubscribe",
	"prompts/list", "prompts/get",
	"completion/complete", "logging/setLevel",
	"tasks/get", "tasks/list", "tasks/result", "tasks/cancel",
	"notifications/initialized", "notifications/cancelled", "notifications/progress",
	"notifications/roots/list_changed", "notifications/tasks/status",
	"server/discover", "subscriptions/listen",
	methodResponse, methodOther,
}

const (
	methodResponse = "response"
	methodOther    = "other"
)

// latencyBuckets span a ping through the bridge (well under a
// millisecond) to long tool calls (minutes).
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}

// processMetrics is the registry of the process's own metrics (the Go
// runtime's, the process's), one for every bridge of the process.
var processMetrics = sync.OnceValue(func() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
})

func newMetrics(opts Options) *metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(statsCollector{b: opts.Bridge})
	if opts.Approvals != nil && !opts.inMounts {
		reg.MustRegister(approvalsCollector{e: opts.Approvals})
	}
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_bridge_requests_total",
		Help: "JSON-RPC messages clients sent to the MCP endpoint, by protocol era (2025: sessions, 2026-07-28: stateless requests), method (known MCP methods, response, other) and outcome (ok, error, refused, unanswered).",
	}, []string{"era", "method", "outcome"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mcp_bridge_request_duration_seconds",
		Help:    "Time from a JSON-RPC request's arrival to its response being written, for requests that got one (ok or error), by protocol era and method.",
		Buckets: latencyBuckets,
	}, []string{"era", "method"})
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m := &metrics{
		path:   opts.Path,
		scrape: opts.MetricsAuth,
		closed: opts.MetricsAuth == nil && opts.Auth != nil && !opts.MetricsPublic,
		log:    opts.Logger,
		now:    opts.Now,
		http: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcp_bridge_http_requests_total",
			Help: "HTTP requests to the MCP endpoint, by HTTP method and status code, counted when they end (a GET stream when it closes).",
		}, []string{"method", "code"}),
		authFail: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcp_bridge_auth_failures_total",
			Help: "Requests refused by authentication or authorization, by reason: missing_token, invalid_token, invalid_request (e.g. a token in the query string), insufficient_scope.",
		}, []string{"reason"}),
		received: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcp_bridge_http_received_bytes_total",
			Help: "Bytes of HTTP request bodies read on the MCP endpoint.",
		}),
		sent: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcp_bridge_http_sent_bytes_total",
			Help: "Bytes of HTTP response bodies written on the MCP endpoint (JSON, SSE and errors).",
		}),
	}
	for i, era := range []string{era2025, eraModern} {
		m.byMethod[i] = make(map[string]*methodMetrics, len(methodLabels))
		for _, method := range methodLabels {
			m.byMethod[i][method] = &methodMetrics{
				ok:         requests.WithLabelValues(era, method, outcomeOK),
				error:      requests.WithLabelValues(era, method, outcomeError),
				refused:    requests.WithLabelValues(era, method, outcomeRefused),
				unanswered: requests.WithLabelValues(era, method, outcomeUnanswered),
				latency:    latency.WithLabelValues(era, method),
			}
		}
	}
	reg.MustRegister(requests, latency, m.http, m.authFail, m.received, m.sent)
	m.own = reg
	m.handler = promhttp.HandlerFor(prometheus.Gatherers{processMetrics(), reg}, promhttp.HandlerOpts{})
	return m
}

// middleware answers GET /metrics and observes every request to the MCP
// endpoint. It is a middleware, like chi's Heartbeat, so /metrics answers
// whatever routes and middleware come after it.
func (m *metrics) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/metrics" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
			if m.closed {
				refuseClosed(w)
				return
			}
			if m.scrape != nil {
				if _, err := m.scrape.Verify(r); err != nil {
					m.refuseScrape(w, r, err)
					return
				}
			}
			m.handler.ServeHTTP(w, r)
		case r.URL.Path == m.path:
			ex := &exchange{ResponseWriter: w, m: m}
			post := r.Method == http.MethodPost
			if post {
				// The POST's record, which the POST pipeline fills and
				// feeds, and which is complete at the latest when the
				// handler has returned.
				ex.rec = record{now: m.now, start: m.now(), metrics: m}
				r = r.WithContext(withRecord(r.Context(), &ex.rec))
				if r.Body != nil {
					r.Body = &countingBody{ReadCloser: r.Body, m: m}
				}
			}
			next.ServeHTTP(ex, r)
			// Not deferred: a handler that panicked has no status to count.
			ex.finish(r.Method)
			if post {
				ex.rec.status = ex.status
				ex.rec.finish()
			}
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// MetricsClosed says why /metrics answers 403, and how to open it: the
// scrape's answer and the start-up log say the same.
const MetricsClosed = "Forbidden: /metrics is closed because MCP clients must authenticate; give the scraper a token of its own with --metrics-token-env NAME, or open it with --metrics-public"

// refuseClosed answers a scrape of closed metrics: 403, saying how to
// open them.
func refuseClosed(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusForbidden)
	_, _ = io.WriteString(w, MetricsClosed+"\n")
}

// refuseScrape answers a scrape without the metrics token: 401 (400 for
// a malformed request, such as a token in the query string) with the
// Bearer challenge of RFC 6750 section 3. A scraper is no MCP client: the
// challenge names a realm, not the MCP endpoint's resource metadata, and
// the body is plain text. Neither, nor the log, shows a token.
func (m *metrics) refuseScrape(w http.ResponseWriter, r *http.Request, err error) {
	var ae *auth.Error
	if !errors.As(err, &ae) {
		ae = &auth.Error{Code: auth.CodeInvalidToken, Reason: "verifier failed"}
	}
	challenge := `Bearer realm="mcp-bridge metrics"`
	if ae.Code != auth.CodeNone {
		challenge += `, error="` + ae.Code + `"`
	}
	status := authStatus(ae)
	m.log.Debug("metrics scrape refused", "status", status, "reason", ae.Reason, "remote", r.RemoteAddr)
	w.Header().Set("WWW-Authenticate", challenge)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	msg := "Unauthorized: /metrics needs the metrics bearer token in the Authorization header"
	if status == http.StatusBadRequest {
		msg = "Bad Request: " + ae.Description
	}
	_, _ = io.WriteString(w, msg+"\n")
}

func (m *metrics) forMethod(era, method string) *methodMetrics {
	byMethod := m.byMethod[eraIndex(era)]
	if mm, ok := byMethod[method]; ok {
		return mm
	}
	return byMethod[methodOther]
}

// eraIndex is the index of an era in metrics.byMethod.
func eraIndex(era string) int {
	if era == eraModern {
		return 1
	}
	return 0
}

// countingBody counts a POST body as the handler reads it.
type countingBody struct {
	io.ReadCloser
	m *metrics
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.m.received.Add(float64(n))
	}
	return n, err
}

// exchange is one HTTP request to the MCP endpoint, seen from its
// response: it wraps the ResponseWriter to learn the status and count the
// bytes. For a POST it holds the record (observe.go), in the same
// allocation.
type exchange struct {
	http.ResponseWriter
	m      *metrics
	status int
	rec    record
}

func (e *exchange) Unwrap() http.ResponseWriter { return e.ResponseWriter }

// FlushError and Flush forward flushes; http.ResponseController (which the
// SSE writer uses) finds them, or the real writer through Unwrap.
func (e *exchange) FlushError() error {
	return http.NewResponseController(e.ResponseWriter).Flush()
}

func (e *exchange) Flush() { _ = e.FlushError() }

func (e *exchange) WriteHeader(code int) {
	if e.status == 0 {
		e.status = code
	}
	e.ResponseWriter.WriteHeader(code)
}

func (e *exchange) Write(p []byte) (int, error) {
	if e.status == 0 {
		e.status = http.StatusOK
	}
	n, err := e.ResponseWriter.Write(p)
	e.m.sent.Add(float64(n))
	return n, err
}

// finish counts the exchange once the handler has returned.
func (e *exchange) finish(method string) {
	if e.status == 0 {
		e.status = http.StatusOK // net/http sends 200 for a handler that wrote nothing
	}
	switch method {
	case http.MethodPost, http.MethodGet, http.MethodDelete:
	default:
		method = "other"
	}
	e.m.httpCounter(method, e.status).Inc()
	if reason := authFailure(e.status, e.Header().Get("WWW-Authenticate")); reason != "" {
		e.m.authFail.WithLabelValues(reason).Inc()
	}
}

// observe counts a POST's messages from its complete record: requests by
// the outcome their response gave (and its latency), or as unanswered;
// notifications and responses as accepted; all of them as refused when
// the POST was (nothing reached the server).
func (m *metrics) observe(rec *record) {
	if rec.status >= 400 {
		// A body never read (406, 415) or not JSON-RPC counts once, as
		// "other".
		if len(rec.calls) == 0 {
			m.byMethod[eraIndex(rec.era)][methodOther].refused.Inc()
		}
		for i := range rec.calls {
			m.forCall(rec.era, &rec.calls[i]).refused.Inc()
		}
		return
	}
	for i := range rec.calls {
		c := &rec.calls[i]
		mm := m.forCall(rec.era, c)
		switch {
		case c.kind != bridge.Request:
			mm.ok.Inc() // accepted: 202, or alongside requests in a batch
		case c.outcome == unanswered:
			mm.unanswered.Inc() // the client left; the answer stays with the session
		case c.outcome == answeredOK:
			mm.ok.Inc()
			mm.latency.Observe(c.at.Sub(rec.start).Seconds())
		default: // an error, the bridge's own answer to a denied call included
			mm.error.Inc()
			mm.latency.Observe(c.at.Sub(rec.start).Seconds())
		}
	}
}

func (m *metrics) forCall(era string, c *callRecord) *methodMetrics {
	if c.kind == bridge.Response {
		return m.byMethod[eraIndex(era)][methodResponse]
	}
	return m.forMethod(era, c.method)
}

// httpKey is one label combination of metrics.http.
type httpKey struct {
	method string
	code   int
}

func (m *metrics) httpCounter(method string, code int) prometheus.Counter {
	k := httpKey{method, code}
	if c, ok := m.httpSeen.Load(k); ok {
		return c.(prometheus.Counter)
	}
	c := m.http.WithLabelValues(method, strconv.Itoa(code))
	m.httpSeen.Store(k, c)
	return c
}

// statsCollector reads the bridge's counters at scrape time.
type statsCollector struct{ b *bridge.Bridge }

var (
	descSessions = prometheus.NewDesc("mcp_bridge_sessions",
		"Live MCP sessions.", nil, nil)
	descSessionsCreated = prometheus.NewDesc("mcp_bridge_sessions_created_total",
		"MCP sessions created (initialize succeeded in starting them).", nil, nil)
	descSessionsEnded = prometheus.NewDesc("mcp_bridge_sessions_ended_total",
		"MCP sessions ended, for any reason.", nil, nil)
	descChildrenSpawned = prometheus.NewDesc("mcp_bridge_children_spawned_total",
		"MCP server processes started.", nil, nil)
	descChildrenFailed = prometheus.NewDesc("mcp_bridge_children_start_failures_total",
		"MCP server processes that could not be started.", nil, nil)
	descChildrenExited = prometheus.NewDesc("mcp_bridge_children_exited_total",
		"MCP server processes that exited, by reason: deleted (the client ended the session), idle (the session expired), shutdown (the bridge stopped), crashed (exited on its own), unresponsive (stopped because it could no longer answer: stdout closed, or no answer to initialize).",
		[]string{"reason"}, nil)
	descQueueDrops = prometheus.NewDesc("mcp_bridge_queue_drops_total",
		"Server messages dropped because a session's queue was full while no stream was open.", nil, nil)
	descOversize = prometheus.NewDesc("mcp_bridge_oversize_lines_total",
		"Messages from MCP servers over the size limit (--max-message-bytes), skipped.", nil, nil)
	descChildrenRestarted = prometheus.NewDesc("mcp_bridge_children_restarted_total",
		"Shared MCP server processes restarted after a crash.", nil, nil)
	descChildren = prometheus.NewDesc("mcp_bridge_children",
		"MCP server processes alive or starting, waiting ones included: the --max-children slots taken.", nil, nil)
	descWaiting = prometheus.NewDesc("mcp_bridge_children_waiting",
		"MCP server processes started and waiting for a session (--prespawn).", nil, nil)
	descUnroutable = prometheus.NewDesc("mcp_bridge_unroutable_responses_total",
		"Responses from MCP servers to ids nobody asked, dropped.", nil, nil)
	descStreamsCut = prometheus.NewDesc("mcp_bridge_streams_cut_total",
		"SSE connections dropped because their client fell so far behind that events it had not read aged out of the event log.", nil, nil)
	descEventsEvicted = prometheus.NewDesc("mcp_bridge_events_evicted_total",
		"SSE events aged out of sessions' event logs (--event-log-events, --event-log-bytes).", nil, nil)
	descTimedOut = prometheus.NewDesc("mcp_bridge_requests_timed_out_total",
		"Requests the MCP server did not answer in time (--request-timeout, --init-timeout), answered with an error by the bridge.", nil, nil)
	descLateProgress = prometheus.NewDesc("mcp_bridge_late_progress_total",
		"Progress notifications that came after their request was over (answered, cancelled or timed out), dropped.", nil, nil)

	// The modern era (2026-07-28).
	descInputRequired = prometheus.NewDesc("mcp_bridge_input_required_total",
		"2026-07-28 calls parked for their client's input: input_required results the bridge gave for a 2025 server's sampling, elicitation or roots request (MRTR).", nil, nil)
	descInputExpired = prometheus.NewDesc("mcp_bridge_input_expired_total",
		"Parked calls whose client did not retry within --input-ttl, cancelled.", nil, nil)
	descInputPreempted = prometheus.NewDesc("mcp_bridge_input_preempted_total",
		"Parked calls ended to give their process to another principal's, which held at least two fewer (--max-children).", nil, nil)
	descInputRefused = prometheus.NewDesc("mcp_bridge_input_refused_total",
		"Retries refused: a requestState forged, altered, used already, expired, another principal's or another replica's.", nil, nil)
	descInputMissingCapability = prometheus.NewDesc("mcp_bridge_input_missing_capability_total",
		"Calls ended with -32021 because the server asked for a capability the client did not declare.", nil, nil)
	descParkedDrops = prometheus.NewDesc("mcp_bridge_parked_drops_total",
		"Notifications a server sent for a call while it was parked for its client's input, dropped.", nil, nil)
	descParked = prometheus.NewDesc("mcp_bridge_parked_calls",
		"2026-07-28 calls parked for their client's retry.", nil, nil)
	descLeased = prometheus.NewDesc("mcp_bridge_leased_children",
		"MCP server processes leased to one 2026-07-28 call each (its client may be asked for input), parked calls' included.", nil, nil)
	descListens = prometheus.NewDesc("mcp_bridge_listen_streams",
		"Open 2026-07-28 subscriptions/listen streams.", nil, nil)

	descCancelled = prometheus.NewDesc("mcp_bridge_requests_cancelled_total",
		"Requests cancelled on the MCP server (notifications/cancelled sent to it while they ran): a 2025 client cancelled one, a 2026-07-28 client closed a request's stream, or a call parked for a client's input was abandoned.", nil, nil)
)

func (c statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSessions, descSessionsCreated, descSessionsEnded,
		descChildrenSpawned, descChildrenFailed, descChildrenExited, descQueueDrops, descOversize, descUnroutable,
		descChildrenRestarted, descChildren, descWaiting, descStreamsCut, descEventsEvicted, descTimedOut, descLateProgress,
		descInputRequired, descInputExpired, descInputPreempted, descInputRefused, descInputMissingCapability, descParkedDrops, descParked, descLeased, descListens, descCancelled} {
		ch <- d
	}
}

func (c statsCollector) Collect(ch chan<- prometheus.Metric) {
	if c.b == nil {
		return // the aggregate endpoint, which has no bridge of its own
	}
	s := c.b.Stats()
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(c.b.Len()))
	counter(descSessionsCreated, s.SessionsCreated.Load())
	counter(descSessionsEnded, s.SessionsEnded.Load())
	counter(descChildrenSpawned, s.ChildrenSpawned.Load())
	counter(descChildrenFailed, s.ChildrenFailed.Load())
	counter(descChildrenExited, s.ChildrenDeleted.Load(), "deleted")
	counter(descChildrenExited, s.ChildrenIdle.Load(), "idle")
	counter(descChildrenExited, s.ChildrenShutdown.Load(), "shutdown")
	counter(descChildrenExited, s.ChildrenCrashed.Load(), "crashed")
	counter(descChildrenExited, s.ChildrenUnresponsive.Load(), "unresponsive")
	counter(descQueueDrops, s.QueueDrops.Load())
	counter(descOversize, s.OversizeLines.Load())
	counter(descUnroutable, s.UnroutableDrops.Load())
	counter(descChildrenRestarted, s.ChildrenRestarted.Load())
	counter(descStreamsCut, s.StreamsCut.Load())
	counter(descEventsEvicted, s.EventsEvicted.Load())
	counter(descTimedOut, s.RequestsTimedOut.Load())
	counter(descLateProgress, s.LateProgress.Load())
	counter(descInputRequired, s.InputRequired.Load())
	counter(descInputExpired, s.InputExpired.Load())
	counter(descInputPreempted, s.InputPreempted.Load())
	counter(descInputRefused, s.InputRefused.Load())
	counter(descInputMissingCapability, s.InputMissingCapability.Load())
	counter(descParkedDrops, s.ParkedDrops.Load())
	m := c.b.ModernSnapshot()
	ch <- prometheus.MustNewConstMetric(descParked, prometheus.GaugeValue, float64(m.Parked))
	ch <- prometheus.MustNewConstMetric(descLeased, prometheus.GaugeValue, float64(m.Leased))
	ch <- prometheus.MustNewConstMetric(descListens, prometheus.GaugeValue, float64(m.Listens))
	counter(descCancelled, s.RequestsCancelled.Load())
	ch <- prometheus.MustNewConstMetric(descChildren, prometheus.GaugeValue, float64(c.b.Children()))
	ch <- prometheus.MustNewConstMetric(descWaiting, prometheus.GaugeValue, float64(c.b.WaitingChildren()))
}

// authFailure names why a request was refused by auth, from its status
// and the Bearer challenge (RFC 6750 section 3); "" for any other answer.
func authFailure(status int, challenge string) string {
	if (status != http.StatusUnauthorized && status != http.StatusForbidden && status != http.StatusBadRequest) ||
		!strings.HasPrefix(challenge, "Bearer") {
		return ""
	}
	for _, reason := range []string{"invalid_token", "insufficient_scope", "invalid_request"} {
		if strings.Contains(challenge, `error="`+reason+`"`) {
			return reason
		}
	}
	if status == http.StatusUnauthorized {
		return "missing_token"
	}
	return ""
}
