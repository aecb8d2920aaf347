package consumer

import (
	"errors"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	handled     *prometheus.CounterVec // by partition
	deadLetters *prometheus.CounterVec // by reason
	retries     *prometheus.CounterVec // by operation
	lag         *prometheus.GaugeVec   // by partition: high watermark - committed
	assigned    prometheus.Gauge
	restored    prometheus.Gauge // assigned partitions whose Assigned succeeded
}

// Retry operations, the values of the "operation" label of retries_total.
const (
	opHandle     = "handle"
	opDeadLetter = "dead_letter"
	opAssign     = "assign"
	opFetch      = "fetch"
	opCommit     = "commit"
)

func newMetrics(reg prometheus.Registerer, group, topic string) *metrics {
	labels := prometheus.Labels{"group": group, "topic": topic}
	m := &metrics{
		handled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "lakewap", Subsystem: "consumer", Name: "messages_handled_total",
			Help: "Messages whose Handle succeeded (effects durable, offset may be committed).", ConstLabels: labels,
		}, []string{"partition"}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "lakewap", Subsystem: "consumer", Name: "dead_letters_total",
			Help: "Messages written to the dead-letter topic.", ConstLabels: labels,
		}, []string{"reason"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "lakewap", Subsystem: "consumer", Name: "retries_total",
			Help: "Failed attempts that will be retried, by operation.", ConstLabels: labels,
		}, []string{"operation"}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "lakewap", Subsystem: "consumer", Name: "lag",
			Help: "High watermark minus committed offset, per assigned partition.", ConstLabels: labels,
		}, []string{"partition"}),
		assigned: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "lakewap", Subsystem: "consumer", Name: "assigned_partitions",
			Help: "Partitions assigned to this member in the current generation.", ConstLabels: labels,
		}),
		restored: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "lakewap", Subsystem: "consumer", Name: "restored_partitions",
			Help: "Assigned partitions whose runs have been restored (the member is ready when it equals assigned_partitions).", ConstLabels: labels,
		}),
	}
	if reg == nil {
		return m
	}
	m.handled = register(reg, m.handled)
	m.deadLetters = register(reg, m.deadLetters)
	m.retries = register(reg, m.retries)
	m.lag = register(reg, m.lag)
	m.assigned = register(reg, m.assigned)
	m.restored = register(reg, m.restored)
	for _, op := range []string{opHandle, opDeadLetter, opAssign, opFetch, opCommit} {
		m.retries.WithLabelValues(op) // at 0 from the start, so that increase() sees the first retry
	}
	return m
}

// register reuses an identical collector that is already registered, so two
// consumers in one process (or a restarted one) share their series.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		// A clash with a different collector of the same name is a wiring bug;
		// keep counting locally rather than failing the consumer.
	}
	return c
}

func partitionLabel(p int) string { return strconv.Itoa(p) }
