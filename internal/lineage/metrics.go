package lineage

import "github.com/prometheus/client_golang/prometheus"

// metrics is the emitter's instrumentation, registered on
// Options.Registerer (nil: kept, not exported).
type metrics struct {
	dropped *prometheus.CounterVec // by reason
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakewap_lineage_events_dropped_total",
		Help: "OpenLineage run events not delivered, by reason (queue_full, undelivered, too_large, shutdown)."}, []string{"reason"})}
	if reg != nil {
		if err := reg.Register(m.dropped); err != nil {
			return nil, err
		}
	}
	m.dropped.WithLabelValues("queue_full") // at 0 from the start
	m.dropped.WithLabelValues("undelivered")
	return m, nil
}
