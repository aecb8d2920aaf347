package consumer

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakewap/lakewap/kafka"
)

// Config configures a Consumer. Zero durations take the defaults named on
// each field.
type Config struct {
	Brokers []string // host:port of at least one broker
	GroupID string
	Topic   string // input topic, e.g. wap.events
	// RequestsTopic, if set, is consumed by the same group: operators'
	// requests (e.g. wap.requests). It must have the input topic's partition
	// count: the group's range assignment then gives partition n of both
	// topics to one member, and a request of partition n is handled only
	// once that member has restored input partition n (see Handler).
	RequestsTopic   string
	DeadLetterTopic string // e.g. wap.dlq; must differ from Topic

	Security kafka.Security // TLS and SASL of every connection to the brokers

	CommitInterval    time.Duration // how often handled offsets are committed; default 1s
	SessionTimeout    time.Duration // default 30s
	RebalanceTimeout  time.Duration // default 30s
	HeartbeatInterval time.Duration // default 3s; must be below SessionTimeout
	JoinGroupBackoff  time.Duration // wait after a failed join; default 2s
	ShutdownGrace     time.Duration // how long a running Handle may go on after its partition is taken away; default 15s
	MinBackoff        time.Duration // first wait after a failed Handle, dead-letter write, Assigned or fetch; default 100ms
	MaxBackoff        time.Duration // cap of the doubling wait; default 30s
	LagInterval       time.Duration // how often high watermarks are read for the lag gauge; default 10s

	// MaxFetchBytes bounds one fetch response; default 10 MiB, at most 1 GiB.
	MaxFetchBytes int

	Registerer prometheus.Registerer // nil: metrics are kept but not exported
	Now        func() time.Time      // clock for the wap.dlq.time header; default time.Now
	// Refusals, when set, records the dead letters the dead-letter topic
	// refused for good (readiness reports them).
	Refusals *kafka.Refusals
}

var errConfig = errors.New("consumer config")

// maxFetchBytes bounds Config.MaxFetchBytes: the fetch request's byte
// bounds are int32 (3 GiB went out as -1 GiB), and a response is read
// whole into memory.
const maxFetchBytes = 1 << 30

func configError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errConfig, fmt.Sprintf(format, args...))
}

// checkBrokers checks there is a broker and each is host:port; what names
// the field.
func checkBrokers(what string, brokers []string) error {
	if len(brokers) == 0 {
		return configError("%sBrokers is empty", what)
	}
	for i, b := range brokers {
		if _, _, err := net.SplitHostPort(b); err != nil {
			return configError("%sBrokers[%d] %q is not host:port", what, i, b)
		}
	}
	return nil
}

// withDefaults validates c and returns a copy with defaults filled in. Errors
// name the offending field.
func (c Config) withDefaults() (Config, error) {
	if err := checkBrokers("", c.Brokers); err != nil {
		return c, err
	}
	if c.GroupID == "" {
		return c, configError("GroupID is required")
	}
	if c.Topic == "" {
		return c, configError("Topic is required")
	}
	if c.DeadLetterTopic == "" {
		return c, configError("DeadLetterTopic is required")
	}
	if c.DeadLetterTopic == c.Topic {
		return c, configError("DeadLetterTopic must differ from Topic (%q)", c.Topic)
	}
	if c.RequestsTopic != "" && (c.RequestsTopic == c.Topic || c.RequestsTopic == c.DeadLetterTopic) {
		return c, configError("RequestsTopic %q must differ from Topic and DeadLetterTopic", c.RequestsTopic)
	}
	if err := c.Security.Validate(); err != nil {
		return c, configError("%v", err)
	}
	durations := []struct {
		name string
		d    *time.Duration
		def  time.Duration
	}{
		{"CommitInterval", &c.CommitInterval, time.Second},
		{"SessionTimeout", &c.SessionTimeout, 30 * time.Second},
		{"RebalanceTimeout", &c.RebalanceTimeout, 30 * time.Second},
		{"HeartbeatInterval", &c.HeartbeatInterval, 3 * time.Second},
		{"JoinGroupBackoff", &c.JoinGroupBackoff, 2 * time.Second},
		{"ShutdownGrace", &c.ShutdownGrace, 15 * time.Second},
		{"MinBackoff", &c.MinBackoff, 100 * time.Millisecond},
		{"MaxBackoff", &c.MaxBackoff, 30 * time.Second},
		{"LagInterval", &c.LagInterval, 10 * time.Second},
	}
	for _, f := range durations {
		if *f.d < 0 {
			return c, configError("%s must not be negative, got %s", f.name, *f.d)
		}
		*f.d = cmp.Or(*f.d, f.def)
	}
	if c.HeartbeatInterval >= c.SessionTimeout {
		return c, configError("HeartbeatInterval (%s) must be below SessionTimeout (%s)", c.HeartbeatInterval, c.SessionTimeout)
	}
	if c.MinBackoff > c.MaxBackoff {
		return c, configError("MinBackoff (%s) must not exceed MaxBackoff (%s)", c.MinBackoff, c.MaxBackoff)
	}
	if c.MaxFetchBytes < 0 {
		return c, configError("MaxFetchBytes must not be negative, got %d", c.MaxFetchBytes)
	}
	if c.MaxFetchBytes > maxFetchBytes {
		return c, configError("MaxFetchBytes must be at most %d, got %d", maxFetchBytes, c.MaxFetchBytes)
	}
	c.MaxFetchBytes = cmp.Or(c.MaxFetchBytes, 10<<20)
	if c.Now == nil {
		c.Now = time.Now
	}
	return c, nil
}
