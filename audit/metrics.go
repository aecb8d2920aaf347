package audit

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// serviceMetrics is Service's instrumentation, registered on
// ServiceOptions.Registerer (nil: kept, not exported).
type serviceMetrics struct {
	lookups  *prometheus.CounterVec   // by outcome (hit, miss)
	duration *prometheus.HistogramVec // by dataset, outcome
	// reopened counts the engine's DuckDB opened again after a crash
	// (Engine.Reopened); nil when the runner is not an *Engine.
	reopened prometheus.CounterFunc
}

func newServiceMetrics(reg prometheus.Registerer, r Runner) (*serviceMetrics, error) {
	m := &serviceMetrics{
		lookups: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakewap_audit_cache_lookups_total",
			Help: "Pre-merge webhook audits answered from the cache of passing reports by commit (hit) or run (miss), by outcome."}, []string{"outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lakewap_audit_duration_seconds",
			Help:    "Audits that ran (download, DuckDB checks, report), by dataset and outcome (passed, failed, error).",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 16)}, []string{"dataset", "outcome"}),
	}
	var held prometheus.Collector
	if e, ok := r.(*Engine); ok {
		held = targetEntriesCollector{e}
		m.reopened = prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "lakewap_audit_duckdb_reopened_total",
			Help: "Times the audit engine opened its DuckDB again after a crash (an INTERNAL Error) invalidated it; the audits in flight on it were retried."},
			func() float64 { return float64(e.Reopened()) })
	}
	if reg != nil {
		err := errors.Join(reg.Register(m.lookups), reg.Register(m.duration))
		if m.reopened != nil {
			err = errors.Join(err, reg.Register(m.reopened))
		}
		if held != nil {
			err = errors.Join(err, reg.Register(held))
		}
		if err != nil {
			return nil, err
		}
	}
	m.lookups.WithLabelValues("hit") // exported at 0 from the start, for rate() and alerts
	m.lookups.WithLabelValues("miss")
	return m, nil
}

// hookMetrics is PreMergeHandler's instrumentation, registered on
// PreMergeOptions.Registerer (nil: kept, not exported).
type hookMetrics struct {
	hooks *prometheus.CounterVec // by decision, via
}

func newHookMetrics(reg prometheus.Registerer) (*hookMetrics, error) {
	m := &hookMetrics{hooks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakewap_premerge_hooks_total",
		Help: "lakeFS pre-merge webhook calls by outcome, the decision (allow, block, error), and how it was reached (audit, unguarded, untouched)."},
		[]string{"outcome", "via"})}
	if reg != nil {
		if err := reg.Register(m.hooks); err != nil {
			return nil, err
		}
	}
	for _, dv := range [][2]string{{"allow", "audit"}, {"block", "audit"}, {"error", "audit"}, {"allow", "unguarded"}, {"allow", "untouched"}} {
		m.hooks.WithLabelValues(dv[0], dv[1]) // the decisions the handler makes, at 0 from the start
	}
	return m, nil
}

// decided counts a request decided decision (allow, block, error), via
// audit, unguarded or untouched.
func (m *hookMetrics) decided(decision, via string) { m.hooks.WithLabelValues(decision, via).Inc() }

// targetEntriesDesc is the gauge of entries past a per-entry limit on a
// dataset's target (targetentries.go): each fails every batch of the
// dataset whose audit lists it, until an operator removes it.
var targetEntriesDesc = prometheus.NewDesc("lakewap_audit_target_entries_over_limit",
	"Objects on a dataset's target past a listing's per-entry limit (path, address, checksum), found by its last audit: every batch whose audit lists one fails until it is removed from the target.",
	[]string{"dataset"}, nil)

// targetEntriesCollector exports an Engine's TargetEntriesOverLimit, one
// series per dataset it audited onto a target (configured datasets only).
type targetEntriesCollector struct{ e *Engine }

func (c targetEntriesCollector) Describe(ch chan<- *prometheus.Desc) { ch <- targetEntriesDesc }

func (c targetEntriesCollector) Collect(ch chan<- prometheus.Metric) {
	for d, n := range c.e.TargetEntriesOverLimit() {
		ch <- prometheus.MustNewConstMetric(targetEntriesDesc, prometheus.GaugeValue, float64(n), d)
	}
}
