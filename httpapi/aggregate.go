package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcp-bridge/mcp-bridge/aggregate"
	"github.com/mcp-bridge/mcp-bridge/aggregate/endpoint"
	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/web"
)

// The aggregate endpoint (docs/aggregate.md): the servers of Mounts
// served as one MCP server at Options.Path (/mcp), with the same
// transports as each server's own (Streamable HTTP and legacy HTTP+SSE),
// over a bridge.Server made of the servers' bridges (aggregate/endpoint).
// Each tools/call meets the tool policy and the approval rules of the
// server it goes to, on the server's own name for the tool.

// AggregateOptions configure the aggregate endpoint of Mounts.
type AggregateOptions struct {
	// Names are the aggregate's names; nil stops serving it.
	Names *aggregate.Names
	// HTTP configures the endpoint as a server's Options do: Path (its
	// path, default /mcp), the legacy paths beside it, authentication,
	// limits, the audit log. Bridge, ToolPolicy and Approval are not
	// read: each call meets those of its server.
	HTTP Options
	// ListTimeout is how long a list waits for each server. Default 3 s.
	ListTimeout time.Duration
	// IdleTimeout ends a session of the aggregate with no request for
	// that long and no GET stream open, and its servers' sessions with
	// it. Default bridge.DefaultIdleTimeout.
	IdleTimeout time.Duration
}

// aggregateMount is the aggregate endpoint as Mounts serves it.
type aggregateMount struct {
	srv          *endpoint.Server
	h            http.Handler
	paths        map[string]bool // the paths it serves
	path         string          // its MCP endpoint
	sse, message string          // its legacy endpoints, "" for none
	auth         bool            // it requires a token
	stateless    bool            // it serves 2026-07-28 requests only
	metrics      *metrics        // its requests'
}

// ServeAggregate serves the aggregate endpoint with o, or, on a later
// call (a reload), gives it the new names: its sessions are told their
// lists may have changed. o.Names nil stops serving it.
func (m *Mounts) ServeAggregate(o AggregateOptions) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := m.agg.Load()
	if o.Names == nil {
		if cur != nil {
			m.agg.Store(nil)
			cur.srv.Close()
		}
		return nil
	}
	if cur != nil {
		cur.srv.SetNames(o.Names)
		return nil
	}
	am, err := m.newAggregate(o)
	if err != nil {
		return err
	}
	m.agg.Store(am)
	return nil
}

// AggregateServer is the aggregate endpoint's server, nil when none is
// served.
func (m *Mounts) AggregateServer() *endpoint.Server {
	if am := m.agg.Load(); am != nil {
		return am.srv
	}
	return nil
}

func (m *Mounts) newAggregate(o AggregateOptions) (*aggregateMount, error) {
	opts := o.HTTP
	opts.Path = cmpOr(opts.Path, DefaultPath)
	opts.ToolPolicy, opts.Approval = nil, nil // each server's, in admit
	opts.inMounts, opts.aggregate = true, true
	// Stateless (--stateless) serves 2026-07-28 requests only, each on
	// its server's Modern with nothing kept between them; a 2025 POST is
	// refused by endpoint.Server.Stateless saying so, since a session of
	// the aggregate holds a session per server, which stateless serving
	// does not keep. GET and DELETE answer 405, and there is no legacy
	// SSE, as on each server's own endpoint.
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if opts.Stateless {
		opts.Logger.Info("the aggregate endpoint is stateless (--stateless): it serves MCP 2026-07-28 requests only", "path", opts.Path)
	}
	bridgeOf := func(name string) *bridge.Bridge {
		if mt := (*m.set.Load())[name]; mt != nil {
			return mt.b
		}
		return nil
	}
	srv := endpoint.New(endpoint.Options{
		Names: o.Names, Bridge: bridgeOf, ListTimeout: o.ListTimeout, IdleTimeout: o.IdleTimeout, Logger: opts.Logger.With("endpoint", "aggregate"),
		Private: opts.Auth != nil,
		Listed: func(server, method string, res json.RawMessage) {
			if method != "tools/list" {
				return
			}
			if mt := (*m.set.Load())[server]; mt != nil {
				if c := mt.opts.Approval.Catalog(); c != nil {
					c.Learn(res)
				}
			}
		},
		Allowed: func(ctx context.Context) func(string) bool {
			pr, _ := auth.FromContext(ctx)
			return m.aggregateFilter(srvNames(m), pr)
		},
	})
	h := &mcpHandler{opts: opts, srv: srv, log: opts.Logger, limits: newLimits(opts), agg: &aggregateAdmission{m: m}}
	if opts.Audit != nil {
		h.audit = &auditLog{w: opts.Audit, args: opts.AuditArguments, now: opts.Now, serverOf: h.agg.serverOf}
	}
	origins, err := newOriginMatcher(opts.AllowedOrigins)
	if err != nil {
		srv.Close()
		return nil, err
	}
	resource, err := newResourceURL(opts.PublicURL, opts.Path)
	if err != nil {
		srv.Close()
		return nil, err
	}
	r := chi.NewRouter()
	r.Use(middleware.Recoverer)
	r.Use(guard{origins: origins, loopbackOnly: opts.LoopbackOnly, refused: newOriginLog(opts.Logger, opts.Now)}.middleware)
	r.Use(newCORS(origins))
	// Its requests, by method and outcome, at the set's /metrics with
	// server="/mcp" (its path, which no server's name can be).
	mx := newMetrics(opts)
	r.Use(mx.middleware)
	r.Group(func(r chi.Router) { h.mcpRoutes(r, resource) })
	r.MethodNotAllowed(h.methodNotAllowed)
	am := &aggregateMount{srv: srv, h: r, paths: map[string]bool{opts.Path: true}, path: opts.Path, auth: opts.Auth != nil, stateless: opts.Stateless, metrics: mx}
	if opts.legacyOn() {
		am.paths[opts.SSEPath], am.paths[opts.MessagePath] = true, true
		am.sse, am.message = opts.SSEPath, opts.MessagePath
	}
	return am, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// srvNames are the names the aggregate serves now.
func srvNames(m *Mounts) *aggregate.Names {
	if am := m.agg.Load(); am != nil {
		return am.srv.Names()
	}
	return nil
}

// aggregateFilter is pr's tool filter on the aggregate's exposed names:
// each tool as its server's tool policy sees it. Nil when no server has
// a policy.
func (m *Mounts) aggregateFilter(names *aggregate.Names, pr auth.Principal) func(string) bool {
	if names == nil {
		return nil
	}
	set := *m.set.Load()
	filters := map[string]*auth.ToolFilter{}
	for _, s := range names.Servers() {
		if mt := set[s]; mt != nil && mt.opts.ToolPolicy != nil {
			filters[s] = mt.opts.ToolPolicy.For(pr)
		}
	}
	if len(filters) == 0 {
		return nil
	}
	return func(exposed string) bool {
		server, own, err := names.Resolve(aggregate.KindTool, exposed)
		if err != nil {
			return false
		}
		return filters[server].Allowed(own)
	}
}

// aggregateAdmission is what admit does on the aggregate endpoint: each
// tools/call meets its server's tool policy and approval rules.
type aggregateAdmission struct{ m *Mounts }

// serverOf is the server a tool's exposed name goes to, "" for none: the
// audit log's server.
func (a *aggregateAdmission) serverOf(tool string) string {
	names := srvNames(a.m)
	if names == nil || tool == "" {
		return ""
	}
	server, _, err := names.Resolve(aggregate.KindTool, tool)
	if err != nil {
		return ""
	}
	return server
}

// refusedCall is mcpHandler.refusedCall on the aggregate endpoint: the
// first tools/call its server's tool policy denies pr.
func (a *aggregateAdmission) refusedCall(h *mcpHandler, p *post, pr auth.Principal) (int, string) {
	for _, c := range a.calls(p) {
		if !c.mt.opts.ToolPolicy.For(pr).Allowed(c.own) {
			tool, _ := p.rec.calls[c.index].toolCall()
			h.log.Info("tools/call refused by the tool policy", "tool", tool, "server", c.server, "era", p.rec.era)
			p.rec.deny(c.index)
			return c.index, "tool " + quote(tool) + " is not allowed for this principal (tool policy)"
		}
	}
	return -1, ""
}

// held is mcpHandler.held on the aggregate endpoint: the first tools/call
// its server's approval rules hold for pr, to be decided by the server's
// rules and approvers, as on the server's own endpoint, and sent on
// through the aggregate once approved.
func (a *aggregateAdmission) held(p *post, pr auth.Principal) *heldCall {
	for _, ac := range a.calls(p) {
		if rule, ok := ac.mt.opts.Approval.Needs(pr, ac.own); ok {
			c := &p.rec.calls[ac.index]
			tool, args := c.toolCall()
			return &heldCall{index: ac.index, id: c.id, tool: tool, args: args, rule: rule, pr: pr, opts: &ac.mt.opts, own: ac.own, b: ac.mt.b}
		}
	}
	return nil
}

// aggCall is a tools/call of the aggregate endpoint's POST that goes to
// a served server: its index in the POST's record, the server, the
// tool's name there, and the server's mount.
type aggCall struct {
	index       int
	server, own string
	mt          *mount
}

// calls are the POST's tools/calls that go to a served server, resolved
// on the first call and kept in p. A call of no server (an unknown tool,
// a server down) is the aggregate's to answer.
func (a *aggregateAdmission) calls(p *post) []aggCall {
	if !p.aggResolved {
		p.aggCalls, p.aggResolved = a.resolve(p), true
	}
	return p.aggCalls
}

func (a *aggregateAdmission) resolve(p *post) []aggCall {
	names := srvNames(a.m)
	if names == nil {
		return nil
	}
	set := *a.m.set.Load()
	var out []aggCall
	for i := range p.rec.calls {
		c := &p.rec.calls[i]
		if c.kind != bridge.Request || c.method != methodToolsCall {
			continue
		}
		tool, _ := c.toolCall()
		server, own, err := names.Resolve(aggregate.KindTool, tool)
		if mt := set[server]; err == nil && mt != nil {
			out = append(out, aggCall{index: i, server: server, own: own, mt: mt})
		}
	}
	return out
}

// aggregateChanged tells the aggregate's sessions that their lists may
// have changed: a server was added, removed or restarted.
func (m *Mounts) aggregateChanged(ch Changes) {
	if am := m.agg.Load(); am != nil && len(ch.Added)+len(ch.Removed)+len(ch.Restarted) > 0 {
		am.srv.Hub().Signal(aggregate.AllChanged)
	}
}

// The aggregate endpoint's metrics, at the set's /metrics (unlabelled:
// the aggregate is one).
var (
	aggSessionsDesc = prometheus.NewDesc("mcp_bridge_aggregate_sessions",
		"Live sessions of the aggregate endpoint (each holds a session per server it has used).", nil, nil)
	aggListsDesc = prometheus.NewDesc("mcp_bridge_aggregate_lists_total",
		"Merged lists the aggregate endpoint served (tools/list, prompts/list, resources/list, resources/templates/list).", nil, nil)
	aggDroppedDesc = prometheus.NewDesc("mcp_bridge_aggregate_dropped_total",
		"Entries dropped from the aggregate's lists (a name clients refuse, a collision), each counted when it first appears.", nil, nil)
	aggLeftOutDesc = prometheus.NewDesc("mcp_bridge_aggregate_left_out_total",
		"Servers left out of an aggregate list: down, past --aggregate-list-timeout, or failing.", nil, nil)
	aggTruncatedDesc = prometheus.NewDesc("mcp_bridge_aggregate_truncated_total",
		"Servers whose list the aggregate cut at its bound of pages, or at a repeated cursor.", nil, nil)
	aggMisroutedDesc = prometheus.NewDesc("mcp_bridge_aggregate_misrouted_total",
		"Messages of a server that answered what was not sent to it: dropped. Zero unless a server is broken.", nil, nil)
	aggRefusedDesc = prometheus.NewDesc("mcp_bridge_aggregate_refused_total",
		"Server requests refused because a client had too many waiting for its answer.", nil, nil)
	aggProblemsDesc = prometheus.NewDesc("mcp_bridge_aggregate_problems",
		"Entries the aggregate's lists drop now, as the last list of each kind found them (the web page names them).", nil, nil)
)

// aggregateCollector is the aggregate endpoint's metrics.
type aggregateCollector struct{ m *Mounts }

func (c aggregateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{aggSessionsDesc, aggListsDesc, aggDroppedDesc, aggLeftOutDesc, aggTruncatedDesc, aggMisroutedDesc, aggRefusedDesc, aggProblemsDesc} {
		ch <- d
	}
}

func (c aggregateCollector) Collect(ch chan<- prometheus.Metric) {
	srv := c.m.AggregateServer()
	if srv == nil {
		return
	}
	st := srv.Stats()
	ch <- prometheus.MustNewConstMetric(aggSessionsDesc, prometheus.GaugeValue, float64(srv.Len()))
	for _, x := range []struct {
		d *prometheus.Desc
		v int64
	}{{aggListsDesc, st.Lists.Load()}, {aggDroppedDesc, st.Dropped.Load()}, {aggLeftOutDesc, st.LeftOut.Load()},
		{aggTruncatedDesc, st.Truncated.Load()}, {aggMisroutedDesc, st.Misrouted.Load()}, {aggRefusedDesc, st.Refused.Load()}} {
		ch <- prometheus.MustNewConstMetric(x.d, prometheus.CounterValue, float64(x.v))
	}
	ch <- prometheus.MustNewConstMetric(aggProblemsDesc, prometheus.GaugeValue, float64(len(srv.Problems())))
}

// aggregateView is the aggregate endpoint on the web page: its path, its
// servers and their state, and the entries its lists drop (collisions,
// names clients refuse), each with the fix.
type aggregateView struct {
	Path     string                `json:"path"`
	Sessions int                   `json:"sessions"`
	Servers  []aggregateServerView `json:"servers"`
	Problems []aggregateProblem    `json:"problems"`
}

type aggregateServerView struct {
	Name   string `json:"name"`
	State  string `json:"state"` // ready, unavailable (with why), or not served
	Reason string `json:"reason,omitempty"`
}

type aggregateProblem struct {
	aggregate.Problem
	Message string `json:"message"`
}

// aggregateView is the aggregate as the page shows it, nil when none is
// served.
func (m *Mounts) aggregateView() *aggregateView {
	am := m.agg.Load()
	if am == nil {
		return nil
	}
	v := &aggregateView{Path: am.path, Sessions: am.srv.Len(), Servers: []aggregateServerView{}, Problems: []aggregateProblem{}}
	set := *m.set.Load()
	for _, name := range am.srv.Names().Servers() {
		sv := aggregateServerView{Name: name, State: "not served"}
		if mt := set[name]; mt != nil {
			sv.State = "ready"
			if err := mt.b.Ready(); err != nil {
				sv.State, sv.Reason = "unavailable", publicMessage(err)
			}
		}
		v.Servers = append(v.Servers, sv)
	}
	for _, p := range am.srv.Problems() {
		v.Problems = append(v.Problems, aggregateProblem{Problem: p, Message: p.Message()})
	}
	return v
}

// webServer is the aggregate endpoint as the page's console and client
// configurations offer it.
func (am *aggregateMount) webServer() web.Server {
	s := web.Server{Name: "aggregate", Path: am.path, Auth: am.auth, Stateless: am.stateless}
	if am.sse != "" {
		s.Endpoints = append(s.Endpoints, web.Endpoint{Name: legacySSEName, Path: am.sse}, web.Endpoint{Name: legacyMessageName, Path: am.message})
	}
	return s
}
