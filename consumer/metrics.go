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
	// orphanRequests: request partitions assigned without their input partition.
	orphanRequests prometheus.Gauge
	// futureStamps: messages stamped later than the clock allows, ignored by Behind.
	futureStamps prometheus.Counter
	// stalled: seconds the last stable offset has stayed below the high watermark, by partition.
	stalled *prometheus.GaugeVec
	// offsetResets: fetch positions out of the partition's range moved to its first offset, by where they were.
	offsetResets *prometheus.CounterVec
	// throttled: seconds fetches waited out brokers' throttle times (quotas).
	throttled prometheus.Counter
}

// Where a fetch position out of range was, the values of the "position"
// label of offset_resets_total.
const (
	resetBeforeFirst = "before_first" // removed by retention: records skipped
	resetPastEnd     = "past_end"     // the log truncated or the topic created again: records read again
)

// Retry operations, the values of the "operation" label of retries_total.
const (
	opHandle     = "handle"
	opDeadLetter = "dead_letter"
	opAssign     = "assign"
	opFetch      = "fetch"
	opCommit     = "commit"
)

func newMetrics(reg prometheus.Registerer, group, topic string) *metrics {
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: "lakewap", Subsystem: "consumer", Name: name, Help: help,
			ConstLabels: prometheus.Labels{"group": group, "topic": topic}}
	}
	counter := func(name, help, label string) *prometheus.CounterVec {
		return register(reg, prometheus.NewCounterVec(prometheus.CounterOpts(opts(name, help)), []string{label}))
	}
	gauge := func(name, help string) prometheus.Gauge {
		return register(reg, prometheus.NewGauge(prometheus.GaugeOpts(opts(name, help))))
	}
	m := &metrics{
		handled:     counter("messages_handled_total", "Messages whose Handle succeeded (effects durable, offset may be committed).", "partition"),
		deadLetters: counter("dead_letters_total", "Messages written to the dead-letter topic.", "reason"),
		retries:     counter("retries_total", "Failed attempts that will be retried, by operation.", "operation"),
		lag: register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts(opts("lag_messages",
			"Messages behind: high watermark minus committed offset, per assigned partition.")), []string{"partition"})),
		assigned: gauge("assigned_partitions", "Partitions assigned to this member in the current generation."),
		restored: gauge("restored_partitions",
			"Assigned partitions whose runs have been restored (the member is ready when it equals assigned_partitions)."),
		orphanRequests: gauge("orphan_request_partitions",
			"Partitions of the requests topic assigned to this member without the input partition of the same number: their requests wait (the two topics' partition counts differ, or a member reads only the input)."),
	}
	m.stalled = register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts(opts("stalled_seconds",
		"Seconds the partition's last stable offset has stayed below its high watermark without moving: a transaction left open holds every later message from this read-committed consumer. 0 when it moves.")),
		[]string{"partition"}))
	m.futureStamps = register(reg, prometheus.NewCounter(prometheus.CounterOpts(opts("future_timestamps_total",
		"Input messages stamped more than a minute past the clock: the lag guard does not take them as a sign that the partition caught up."))))
	m.offsetResets = counter("offset_resets_total",
		"Fetch positions out of the partition's range, moved to its first offset: before_first (records removed by retention before they were read), past_end (the log truncated by an unclean leader election, or the topic created again: records read again).", "position")
	m.throttled = register(reg, prometheus.NewCounter(prometheus.CounterOpts(opts("fetch_throttle_seconds_total",
		"Seconds the partitions' fetches waited out the throttle time of a broker over a quota (KIP-219), summed over partitions."))))
	for _, pos := range []string{resetBeforeFirst, resetPastEnd} {
		m.offsetResets.WithLabelValues(pos)
	}
	for _, op := range []string{opHandle, opDeadLetter, opAssign, opFetch, opCommit} {
		m.retries.WithLabelValues(op) // at 0 from the start, so that increase() sees the first retry
	}
	return m
}

// register reuses an identical collector that is already registered, so two
// consumers in one process (or a restarted one) share their series.
// A nil reg registers nothing.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if reg == nil {
		return c
	}
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
