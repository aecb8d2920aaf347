package runstore

import "github.com/prometheus/client_golang/prometheus"

// newSetAside is the store's metric, registered on reg (nil: kept, not
// exported): the records not restored, by reason, each at 0 from the start.
func newSetAside(reg prometheus.Registerer) (*prometheus.CounterVec, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakewap_state_records_set_aside_total",
		Help: "Run records of the changelog not restored: unsealed, forged or altered (bad_seal), replayed (an authentic record older than one before it), unreadable, of a dataset not in the config, or not matching it. They stay in the changelog and are never acted on."},
		[]string{"reason"})
	for _, r := range []string{ReasonUnsealed, ReasonBadSeal, ReasonUnreadable, ReasonDataset, ReasonMismatch, ReasonPartition, ReasonReplayed} {
		c.WithLabelValues(r)
	}
	if reg != nil {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}
