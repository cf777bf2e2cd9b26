package httpapi

import (
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// serverLabel names the server of a metric at a set's /metrics.
const serverLabel = "server"

// metricsHandler serves GET /metrics of the set: the process's metrics
// once, then every server's, each series labelled server="NAME", so one
// scrape target covers every server (the Prometheus way: one target per
// process, its parts told apart by a label), whatever reloads have done
// to the set. MetricsAuth guards it as a server's own /metrics is; without
// it, it is closed while any server's clients must authenticate, unless
// MetricsPublic.
func (m *Mounts) metricsHandler() http.HandlerFunc {
	scrape := &metrics{scrape: m.opts.MetricsAuth, log: m.opts.Logger}
	// The approvals are the whole bridge's: counted once, unlabelled.
	var approvals prometheus.Gatherer
	if a := m.opts.Approvals; a != nil && a.Engine != nil {
		reg := prometheus.NewRegistry()
		reg.MustRegister(approvalsCollector{e: a.Engine})
		approvals = reg
	}
	aggregated := prometheus.NewRegistry()
	aggregated.MustRegister(aggregateCollector{m: m})
	return func(w http.ResponseWriter, r *http.Request) {
		set := *m.set.Load()
		if scrape.scrape == nil && !m.opts.MetricsPublic && slices.ContainsFunc(slices.Collect(maps.Values(set)), func(mt *mount) bool { return mt.auth }) {
			// A server's clients must authenticate: the set's metrics
			// are closed, as that server's own are.
			refuseClosed(w)
			return
		}
		if scrape.scrape != nil {
			if _, err := scrape.scrape.Verify(r); err != nil {
				scrape.refuseScrape(w, r, err)
				return
			}
		}
		gs := prometheus.Gatherers{processMetrics()}
		if approvals != nil {
			gs = append(gs, approvals)
		}
		if am := m.agg.Load(); am != nil {
			gs = append(gs, aggregated, labelled{g: am.metrics.own, name: am.path})
		}
		for name, mt := range set {
			gs = append(gs, labelled{g: mt.metrics.own, name: name})
		}
		promhttp.HandlerFor(gs, promhttp.HandlerOpts{}).ServeHTTP(w, r)
	}
}

// labelled is a server's metrics with its name as a label of every
// series; prometheus.Gatherers merges the families of the servers.
type labelled struct {
	g    prometheus.Gatherer
	name string
}

func (l labelled) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := l.g.Gather()
	label, value := serverLabel, l.name
	for _, mf := range mfs {
		for _, metric := range mf.Metric {
			metric.Label = append(metric.Label, &dto.LabelPair{Name: &label, Value: &value})
			slices.SortFunc(metric.Label, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
		}
	}
	return mfs, err
}
