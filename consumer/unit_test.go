package consumer

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/kafka"
)

func TestOffsetTrackerCommitsOnlyContiguousHandledPrefix(t *testing.T) {
	tr := newOffsetTracker()
	if _, ok := tr.toCommit(); ok {
		t.Fatalf("commit position before anything was handled")
	}
	// Gaps in offsets (transaction markers, compaction) are not holes in work.
	for _, off := range []int64{5, 7, 8, 12} {
		tr.fetched(off)
	}
	steps := []struct {
		done int64
		want int64 // -1: nothing to commit
	}{
		{7, -1}, // 5 still running
		{5, 8},  // 5 and 7 done
		{12, -1},
		{8, 13},
	}
	for _, s := range steps {
		tr.markDone(s.done)
		got, ok := tr.toCommit()
		if s.want < 0 {
			if ok {
				t.Errorf("after done(%d): commit %d, want none", s.done, got)
			}
			continue
		}
		if !ok || got != s.want {
			t.Errorf("after done(%d): commit %d,%v, want %d", s.done, got, ok, s.want)
		}
		tr.setCommitted(got)
		if _, again := tr.toCommit(); again {
			t.Errorf("after committing %d the same position is offered again", got)
		}
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	valid := func() Config {
		return Config{Brokers: []string{"127.0.0.1:9092"}, GroupID: "g", Topic: "in", DeadLetterTopic: "dlq"}
	}
	cases := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"no brokers", func(c *Config) { c.Brokers = nil }, "Brokers is empty"},
		{"bad broker", func(c *Config) { c.Brokers = []string{"kafka"} }, `Brokers[0] "kafka" is not host:port`},
		{"no group", func(c *Config) { c.GroupID = "" }, "GroupID is required"},
		{"no topic", func(c *Config) { c.Topic = "" }, "Topic is required"},
		{"no dlq", func(c *Config) { c.DeadLetterTopic = "" }, "DeadLetterTopic is required"},
		{"dlq is input", func(c *Config) { c.DeadLetterTopic = "in" }, "DeadLetterTopic must differ from Topic"},
		{"negative", func(c *Config) { c.CommitInterval = -time.Second }, "CommitInterval must not be negative"},
		{"heartbeat", func(c *Config) { c.HeartbeatInterval = time.Minute }, "HeartbeatInterval (1m0s) must be below SessionTimeout (30s)"},
		{"backoff", func(c *Config) { c.MinBackoff = time.Hour }, "MinBackoff (1h0m0s) must not exceed MaxBackoff (30s)"},
		{"sasl mechanism", func(c *Config) { c.Security.SASL = &kafka.SASLConfig{Mechanism: "GSSAPI", Username: "u"} }, `Security.SASL.Mechanism: "GSSAPI"`},
		{"sasl user", func(c *Config) { c.Security.SASL = &kafka.SASLConfig{Mechanism: "PLAIN"} }, "Security.SASL.Username is required"},
		{"tls pair", func(c *Config) { c.Security.TLS = &kafka.TLSConfig{CertFile: "c.pem"} }, "CertFile and KeyFile must be set together"},
		{"tls ca", func(c *Config) { c.Security.TLS = &kafka.TLSConfig{CAFile: "/nonexistent/ca.pem"} }, "Security.TLS.CAFile"},
		// The fetch request's bounds are int32: 3 GiB was sent as -1 GiB.
		{"fetch bytes", func(c *Config) { c.MaxFetchBytes = 3 << 30 }, "MaxFetchBytes must be at most 1073741824, got 3221225472"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := valid()
			tc.mutate(&cfg)
			_, err := New(cfg, newRecorder(), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, errConfig) {
				t.Fatalf("New error = %v, want one containing %q", err, tc.want)
			}
		})
	}
	c, err := New(valid(), newRecorder(), nil)
	if err != nil {
		t.Fatalf("valid config rejected: %v", err)
	}
	if c.cfg.CommitInterval != time.Second || c.cfg.ShutdownGrace != 15*time.Second || c.cfg.MaxFetchBytes != 10<<20 {
		t.Errorf("defaults not applied: %+v", c.cfg)
	}
	if _, err := New(valid(), nil, nil); err == nil {
		t.Errorf("nil handler accepted")
	}
}

func TestPoisonUnwrapsAndDefaults(t *testing.T) {
	cause := errors.New("bad avro")
	err := Poison(cause, "")
	var p *PoisonError
	if !errors.As(err, &p) || p.Reason != "unknown" || !errors.Is(err, cause) {
		t.Fatalf("Poison(cause, \"\") = %#v", err)
	}
	if !strings.Contains(err.Error(), "bad avro") {
		t.Errorf("error text %q hides the cause", err)
	}
}
