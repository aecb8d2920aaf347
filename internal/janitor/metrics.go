package janitor

import "github.com/prometheus/client_golang/prometheus"

// metrics is the janitor's instrumentation, registered on
// Config.Registerer (nil: kept, not exported).
type metrics struct {
	deleted *prometheus.CounterVec // by repository, reason
}

// newMetrics registers the metrics on reg (may be nil); every repository of
// datasets has its series at 0 from the start, so that increase() sees the
// first deletion.
func newMetrics(reg prometheus.Registerer, datasets []Dataset) (*metrics, error) {
	m := &metrics{deleted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakewap_janitor_branches_deleted_total",
		Help: "Branches the janitor deleted, by repository and reason (aborted_expired, published, abandoned)."},
		[]string{"repository", "reason"})}
	if reg != nil {
		if err := reg.Register(m.deleted); err != nil {
			return nil, err
		}
	}
	for _, d := range datasets {
		for _, why := range []string{WhyAbortedExpired, WhyPublished, WhyAbandoned} {
			m.deleted.WithLabelValues(d.Repository, why)
		}
	}
	return m, nil
}
