// Package metrics is the daemon's Prometheus instrumentation of the parts
// that take plain hooks (the runner's runner.Metrics, the janitor's and the
// pre-merge webhook's observers, the lakeFS client's HTTP transport): every
// metric name lakewap exports outside consumer, notify and audit is defined
// here, once. deploy/ (alert rules, dashboard) is checked against them.
package metrics

import (
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/runner"
)

// Runner registers the runner's metrics on reg and returns the hooks that
// feed them.
func Runner(reg prometheus.Registerer) runner.Metrics {
	steps := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lakewap_step_duration_seconds",
		Help: "Duration of runner steps (create_branch, audit, publish, cleanup) by outcome.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 16)},
		[]string{"step", "outcome"})
	inState := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lakewap_state_duration_seconds",
		Help: "Time runs spent in a state before leaving it.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 20)},
		[]string{"dataset", "state"})
	runs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakewap_runs_total",
		Help: "Runs that reached a terminal state, by dataset, outcome and reason."}, []string{"dataset", "outcome", "reason"})
	held := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "lakewap_runs_held",
		Help: "Runs this instance holds, by dataset and state (non-terminal states are the runs in flight)."}, []string{"dataset", "state"})
	inputs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakewap_inputs_total",
		Help: "Input events by type and outcome: applied, duplicate, dead_letter, dropped_unexpected."}, []string{"type", "outcome"})
	queued := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "lakewap_publish_queue_depth",
		Help: "Publishes waiting for their target's turn in this instance's merge queue."}, []string{"repository", "target"})
	waited := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lakewap_publish_queue_wait_seconds",
		Help: "Time a publish waited in its target's merge queue before its merge started.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 18)},
		[]string{"repository", "target"})
	calls := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lakewap_lakefs_calls_per_batch",
		Help:    "lakeFS API calls this instance made for a batch it published (branch, seal, audit listings and downloads, merge).",
		Buckets: []float64{2, 4, 6, 8, 10, 12, 16, 24, 32, 64, 128}}, []string{"dataset"})
	reg.MustRegister(steps, inState, runs, held, inputs, queued, waited, calls)
	return runner.Metrics{
		PublishQueue: func(repo, target string, n int) { queued.WithLabelValues(repo, target).Set(float64(n)) },
		PublishWait:  func(repo, target string, d time.Duration) { waited.WithLabelValues(repo, target).Observe(d.Seconds()) },
		LakeCalls:    func(ds string, n int64) { calls.WithLabelValues(ds).Observe(float64(n)) },
		StepDuration: func(step, outcome string, d time.Duration) { steps.WithLabelValues(step, outcome).Observe(d.Seconds()) },
		StateChange: func(ds string, from, _ pipeline.State, in time.Duration) {
			if from != "" {
				inState.WithLabelValues(ds, string(from)).Observe(in.Seconds())
			}
		},
		Terminal: func(ds string, st pipeline.State, reason string) { runs.WithLabelValues(ds, string(st), reason).Inc() },
		Held: func(ds string, st pipeline.State, delta int) {
			held.WithLabelValues(ds, string(st)).Add(float64(delta))
		},
		Input: func(typ, outcome string) { inputs.WithLabelValues(typ, outcome).Inc() },
	}
}

var pastDeadlineDesc = prometheus.NewDesc("lakewap_runs_past_deadline",
	"Runs this instance holds that are still in flight after their deadline, by dataset (stuck: a passed deadline normally ends a run).",
	[]string{"dataset"}, nil)

// PastDeadline counts, at scrape time, the runs held that
// pipeline.Run.PastDeadline calls stuck. Every dataset named has a series,
// 0 when none is stuck, so that alerts see it from the start.
type PastDeadline struct {
	Runs     func() []pipeline.Run
	Datasets []string
	Now      func() time.Time
}

// Describe implements prometheus.Collector.
func (c PastDeadline) Describe(ch chan<- *prometheus.Desc) { ch <- pastDeadlineDesc }

// Collect implements prometheus.Collector.
func (c PastDeadline) Collect(ch chan<- prometheus.Metric) {
	n := make(map[string]int, len(c.Datasets))
	for _, ds := range c.Datasets {
		n[ds] = 0
	}
	now := c.Now()
	for _, r := range c.Runs() {
		if r.PastDeadline(now) {
			n[r.Dataset]++
		}
	}
	for ds, v := range n {
		ch <- prometheus.MustNewConstMetric(pastDeadlineDesc, prometheus.GaugeValue, float64(v), ds)
	}
}

// LakeFSClient is an HTTP client for the lakeFS adapter that times every
// call by method and status code.
func LakeFSClient(reg prometheus.Registerer) *http.Client {
	calls := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lakewap_lakefs_request_duration_seconds",
		Help: "lakeFS API calls by HTTP method and status code.", Buckets: prometheus.ExponentialBuckets(0.002, 2, 16)},
		[]string{"method", "code"})
	reg.MustRegister(calls)
	return &http.Client{Transport: promhttp.InstrumentRoundTripperDuration(calls, http.DefaultTransport)}
}

// PreMergeHooks counts the pre-merge webhook's decisions; the result is
// audit.PreMergeOptions.Observe.
func PreMergeHooks(reg prometheus.Registerer) func(decision, via string) {
	hooks := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakewap_premerge_hooks_total",
		Help: "lakeFS pre-merge webhook calls by outcome, the decision (allow, block, error), and how it was reached (audit, unguarded, untouched)."},
		[]string{"outcome", "via"})
	reg.MustRegister(hooks)
	for _, dv := range [][2]string{{"allow", "audit"}, {"block", "audit"}, {"error", "audit"}, {"allow", "unguarded"}, {"allow", "untouched"}} {
		hooks.WithLabelValues(dv[0], dv[1]) // the decisions the handler makes, at 0 from the start
	}
	return func(decision, via string) { hooks.WithLabelValues(decision, via).Inc() }
}

// JanitorDeleted counts the janitor's deletions by repository and why; every
// repository's series start at 0, so that increase() sees the first one.
// The result is janitor.Config.Deleted.
func JanitorDeleted(reg prometheus.Registerer, repos []string, whys ...string) (func(repo, why string), error) {
	deleted := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakewap_janitor_branches_deleted_total",
		Help: "Branches the janitor deleted, by repository and reason (aborted_expired, published, abandoned)."},
		[]string{"repository", "reason"})
	if err := reg.Register(deleted); err != nil {
		return nil, err
	}
	for _, r := range repos {
		for _, why := range whys {
			deleted.WithLabelValues(r, why)
		}
	}
	return func(repo, why string) { deleted.WithLabelValues(repo, why).Inc() }, nil
}

// BuildInfo registers lakewap_build_info, always 1, whose labels say which
// build runs (internal/buildinfo): join it to other series to see a
// version roll out, or alert on two versions at once.
func BuildInfo(reg prometheus.Registerer, version, revision, goVersion string) {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "lakewap_build_info",
		Help: "The running build: version (module version, short VCS revision or dev), revision and Go version; always 1."},
		[]string{"version", "revision", "goversion"})
	reg.MustRegister(g)
	g.WithLabelValues(version, revision, goVersion).Set(1)
}

// LineageDropped counts OpenLineage events not delivered, by reason
// (queue_full, undelivered), both at 0 from the start; the result is
// lineage.Options.Dropped.
func LineageDropped(reg prometheus.Registerer) func(reason string) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakewap_lineage_events_dropped_total",
		Help: "OpenLineage run events not delivered, by reason (queue_full, undelivered)."}, []string{"reason"})
	reg.MustRegister(c)
	c.WithLabelValues("queue_full")
	c.WithLabelValues("undelivered")
	return func(reason string) { c.WithLabelValues(reason).Inc() }
}

// SlackSuppressed counts new Slack messages the rate limit held back
// (notify.slack.rate_burst), and logs at most one line a minute about them;
// the result is notify.LimitConfig.Suppressed.
func SlackSuppressed(reg prometheus.Registerer, log *slog.Logger) func(kind string) {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "lakewap_slack_messages_suppressed_total",
		Help: "New Slack messages not posted because one dataset, state and reason exceeded notify.slack.rate_burst per rate_per (the results topic still carries them)."})
	reg.MustRegister(c)
	var (
		mu   sync.Mutex
		last time.Time
	)
	return func(kind string) {
		c.Inc()
		mu.Lock()
		defer mu.Unlock()
		if time.Since(last) >= time.Minute {
			last = time.Now()
			log.Warn("Slack messages held back: one kind of outcome exceeds notify.slack.rate_burst", "kind", kind)
		}
	}
}
