package notify

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// dispatchMetrics is the Dispatcher's instrumentation, registered on
// DispatcherOptions.Registerer (nil: kept, not exported). Every sink's
// series exist from the start at 0, so that an alert on their increase
// sees the first failure.
type dispatchMetrics struct {
	attempts *prometheus.CounterVec // by sink, outcome (ok, retry, error)
	undeliv  *prometheus.CounterVec // by sink
}

func newDispatchMetrics(reg prometheus.Registerer, sinks []string) (*dispatchMetrics, error) {
	m := &dispatchMetrics{}
	var err error
	if m.attempts, err = registerCounter(reg, "lakewap_notify_attempts_total",
		"Send attempts per sink, by outcome (ok, retry, error).", "sink", "outcome"); err != nil {
		return nil, err
	}
	if m.undeliv, err = registerCounter(reg, "lakewap_notify_undelivered_total",
		"Notifications a sink had not delivered when its budget ran out.", "sink"); err != nil {
		return nil, err
	}
	for _, name := range sinks {
		for _, result := range []string{"ok", "retry", "error"} {
			m.attempts.WithLabelValues(name, result)
		}
		m.undeliv.WithLabelValues(name)
	}
	return m, nil
}

// limitMetrics is Limit's instrumentation, registered on
// LimitConfig.Registerer: the new messages held back, and at most one log
// line a minute about them.
type limitMetrics struct {
	suppressed *prometheus.CounterVec // no labels: With() of none
	log        *slog.Logger
	mu         sync.Mutex
	last       time.Time
}

func newLimitMetrics(reg prometheus.Registerer, log *slog.Logger) *limitMetrics {
	c, err := registerCounter(reg, "lakewap_slack_messages_suppressed_total",
		"New Slack messages not posted because one dataset, state and reason exceeded notify.slack.rate_burst per rate_per (the results topic still carries them).")
	if err != nil { // another collector of that name: count here, unexported
		log.Warn("Slack rate limit: metric not registered", "err", err)
		c = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakewap_slack_messages_suppressed_total"}, nil)
	}
	c.WithLabelValues() // exported at 0 from the start
	return &limitMetrics{suppressed: c, log: log}
}

func (m *limitMetrics) held(kind string, now time.Time) {
	m.suppressed.WithLabelValues().Inc()
	m.mu.Lock()
	defer m.mu.Unlock()
	if now.Sub(m.last) >= time.Minute {
		m.last = now
		m.log.Warn("Slack messages held back: one kind of outcome exceeds notify.slack.rate_burst", "kind", kind)
	}
}

// registerCounter registers a counter vector on reg (nil: none), or reuses
// an identical one already registered (two dispatchers in one process).
func registerCounter(reg prometheus.Registerer, name, help string, labels ...string) (*prometheus.CounterVec, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	if reg == nil {
		return c, nil
	}
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				return existing, nil
			}
		}
		return nil, fmt.Errorf("register %s: %w", name, err)
	}
	return c, nil
}
