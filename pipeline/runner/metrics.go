package runner

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakewap/lakewap/pipeline"
)

// metrics is the runner's Prometheus instrumentation, registered by New on
// Config.Registerer (nil: kept, not exported). Every metric the runner
// exports is named here.
type metrics struct {
	steps    *prometheus.HistogramVec // by step, outcome
	inState  *prometheus.HistogramVec // by dataset, state left
	runs     *prometheus.CounterVec   // terminal runs by dataset, outcome, reason
	held     *prometheus.GaugeVec     // by dataset, state
	inputs   *prometheus.CounterVec   // by type, outcome
	queued   *prometheus.GaugeVec     // publishes waiting, by repository, target
	waited   *prometheus.HistogramVec // by repository, target
	guesses  *prometheus.CounterVec   // guessed rechecks, by repository, target, outcome
	calls    *prometheus.HistogramVec // lakeFS calls per published batch, by dataset
	deadline *pastDeadline
}

func newMetrics(reg prometheus.Registerer, datasets []string, runs func() []pipeline.Run, now func() time.Time) (*metrics, error) {
	m := &metrics{
		steps: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lakewap_step_duration_seconds",
			Help: "Duration of runner steps (create_branch, audit, publish, cleanup) by outcome.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 16)},
			[]string{"step", "outcome"}),
		inState: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lakewap_state_duration_seconds",
			Help: "Time runs spent in a state before leaving it.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 20)},
			[]string{"dataset", "state"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakewap_runs_total",
			Help: "Runs that reached a terminal state, by dataset, outcome and reason."}, []string{"dataset", "outcome", "reason"}),
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "lakewap_runs_held",
			Help: "Runs this instance holds, by dataset and state (non-terminal states are the runs in flight)."}, []string{"dataset", "state"}),
		inputs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakewap_inputs_total",
			Help: "Input events by type and outcome: applied, duplicate, dead_letter, dropped_unexpected."}, []string{"type", "outcome"}),
		queued: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "lakewap_publish_queue_depth",
			Help: "Publishes and reverts waiting for their target's turn in this instance's merge queue."}, []string{"repository", "target"}),
		waited: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lakewap_publish_queue_wait_seconds",
			Help: "Time a publish (kind publish) or a revert (kind revert) waited in its target's merge queue before its merge or revert started.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 18)},
			[]string{"repository", "target", "kind"}),
		guesses: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakewap_publish_guessed_rechecks_total",
			Help: "Rechecks started beside the publish turn's look against its guess (the target at this instance's last merge): taken when the look found the guess, void when the target had moved otherwise (someone else committed or merged) and the batch was rechecked again."},
			[]string{"repository", "target", "outcome"}),
		calls: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lakewap_lakefs_calls_per_batch",
			Help:    "lakeFS API calls this instance made for a batch it published (branch, seal, audit listings and downloads, merge).",
			Buckets: []float64{2, 4, 6, 8, 10, 12, 16, 24, 32, 64, 128}}, []string{"dataset"}),
		deadline: &pastDeadline{runs: runs, datasets: datasets, now: now},
	}
	if reg == nil {
		return m, nil
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.steps, m.inState, m.runs, m.held, m.inputs, m.queued, m.waited, m.guesses, m.calls, m.deadline} {
		errs = append(errs, reg.Register(c))
	}
	return m, errors.Join(errs...)
}

func (m *metrics) stepDuration(k pipeline.EffectKind, in pipeline.Input, d time.Duration) {
	m.steps.WithLabelValues(k.String(), outcome(in)).Observe(d.Seconds())
}

// stateChange records a run of dataset leaving state from after in.
func (m *metrics) stateChange(dataset string, from pipeline.State, in time.Duration) {
	if from != "" {
		m.inState.WithLabelValues(dataset, string(from)).Observe(in.Seconds())
	}
}

func (m *metrics) terminal(dataset string, st pipeline.State, reason string) {
	m.runs.WithLabelValues(dataset, string(st), reason).Inc()
}

func (m *metrics) hold(dataset string, st pipeline.State, delta int) {
	m.held.WithLabelValues(dataset, string(st)).Add(float64(delta))
}

func (m *metrics) publishQueue(repo, target string, depth int) {
	m.queued.WithLabelValues(repo, target).Set(float64(depth))
}

// queueWait records how long a publish, or a revert, waited for its
// target's turn.
func (m *metrics) queueWait(repo, target string, publish bool, d time.Duration) {
	kind := "revert"
	if publish {
		kind = "publish"
	}
	m.waited.WithLabelValues(repo, target, kind).Observe(d.Seconds())
}

func (m *metrics) guessedRecheck(repo, target string, taken bool) {
	outcome := "void"
	if taken {
		outcome = "taken"
	}
	m.guesses.WithLabelValues(repo, target, outcome).Inc()
}

func (m *metrics) lakeCalls(dataset string, n int64) {
	m.calls.WithLabelValues(dataset).Observe(float64(n))
}

// Input counts an input event by type and what became of it: applied,
// duplicate, dropped_unexpected (the runner's), dead_letter (the ingest
// stage's, through Runner.CountInput).
func (m *metrics) input(eventType, outcome string) {
	m.inputs.WithLabelValues(eventType, outcome).Inc()
}

var pastDeadlineDesc = prometheus.NewDesc("lakewap_runs_past_deadline",
	"Runs this instance holds that are still in flight after their deadline, by dataset (stuck: a passed deadline normally ends a run).",
	[]string{"dataset"}, nil)

// pastDeadline counts, at scrape time, the runs held that
// pipeline.Run.PastDeadline calls stuck. Every dataset named has a series,
// 0 when none is stuck, so that alerts see it from the start.
type pastDeadline struct {
	runs     func() []pipeline.Run
	datasets []string
	now      func() time.Time
}

// Describe implements prometheus.Collector.
func (c *pastDeadline) Describe(ch chan<- *prometheus.Desc) { ch <- pastDeadlineDesc }

// Collect implements prometheus.Collector.
func (c *pastDeadline) Collect(ch chan<- prometheus.Metric) {
	n := make(map[string]int, len(c.datasets))
	for _, ds := range c.datasets {
		n[ds] = 0
	}
	now := c.now()
	for _, r := range c.runs() {
		if r.PastDeadline(now) {
			n[r.Dataset]++
		}
	}
	for ds, v := range n {
		ch <- prometheus.MustNewConstMetric(pastDeadlineDesc, prometheus.GaugeValue, float64(v), ds)
	}
}
