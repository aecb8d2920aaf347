package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/kafka/kafkatest"
)

func seq(from, to int64) []int64 {
	var out []int64
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func TestHandlesInOrderPerPartitionAndCommits(t *testing.T) {
	k := startKafka(t, topic(inTopic, 3), topic(dlqTopic, 1))
	const perPartition = 20
	for p := range 3 {
		var vs []string
		for i := range perPartition {
			vs = append(vs, fmt.Sprintf("p%d-%d", p, i))
		}
		produce(t, k, inTopic, p, values(vs...)...)
	}
	reg := prometheus.NewRegistry()
	cfg := testConfig(k, "order")
	cfg.Registerer = reg
	rec := newRecorder()
	c := startConsumer(t, cfg, rec)

	eventually(t, "all offsets committed", func() bool {
		got := committed(t, k, "order", inTopic, 3)
		return got[0] == perPartition && got[1] == perPartition && got[2] == perPartition
	})
	for p := range 3 {
		if got, want := rec.handledOffsets(p), seq(0, perPartition); !slices.Equal(got, want) {
			t.Errorf("partition %d handled offsets %v, want %v", p, got, want)
		}
		rec.mu.Lock()
		if got := rec.handled[p]; got[0] != fmt.Sprintf("p%d-0", p) || got[perPartition-1] != fmt.Sprintf("p%d-%d", p, perPartition-1) {
			t.Errorf("partition %d values %v", p, got)
		}
		rec.mu.Unlock()
	}
	if !c.Ready() {
		t.Errorf("Ready() = false with every partition restored")
	}
	if got := value(t, c.m.handled.WithLabelValues("1")); got != perPartition {
		t.Errorf("handled metric for partition 1 = %v, want %d", got, perPartition)
	}
	eventually(t, "lag reported as zero", func() bool {
		return value(t, c.m.lag.WithLabelValues("2")) == 0 && series(c.m.lag) == 3
	})

	// More messages after the first commit continue from there.
	produce(t, k, inTopic, 1, values("late")...)
	eventually(t, "late message committed", func() bool {
		return committed(t, k, "order", inTopic, 3)[1] == perPartition+1
	})
	c.stop(t)
	if got := rec.handledOffsets(1); len(got) != perPartition+1 {
		t.Errorf("partition 1 handled %d messages, want %d (no duplicates, no loss)", len(got), perPartition+1)
	}
	if c.Ready() {
		t.Errorf("Ready() = true after Run returned")
	}
}

func header(m kafkago.Message, key string) (string, bool) {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

func TestPoisonMessageGoesToDeadLetterTopic(t *testing.T) {
	k := startKafka(t, topic(inTopic, 2), topic(dlqTopic, 1))
	msgs := values("ok-1", "poison", "ok-2", "panic", "ok-3")
	msgs[1].Headers = []kafkago.Header{{Key: "trace", Value: []byte("abc")}}
	produce(t, k, inTopic, 1, msgs...)

	reg := prometheus.NewRegistry()
	cfg := testConfig(k, "poison")
	cfg.Registerer = reg
	rec := newRecorder()
	rec.onHandle = func(_ context.Context, m kafka.Message) error {
		switch string(m.Value) {
		case "poison":
			return Poison(errors.New("cannot decode"), "decode")
		case "panic":
			panic("boom")
		}
		return nil
	}
	c := startConsumer(t, cfg, rec)
	eventually(t, "offset past every message committed", func() bool {
		return committed(t, k, "poison", inTopic, 2)[1] == 5
	})
	if got, want := rec.handledOffsets(1), []int64{0, 2, 4}; !slices.Equal(got, want) {
		t.Errorf("handled offsets %v, want %v", got, want)
	}
	dead := readPartition(t, k, dlqTopic, 0)
	if len(dead) != 2 {
		t.Fatalf("dead-letter topic has %d records, want 2: %+v", len(dead), dead)
	}
	checks := []struct {
		value, reason, errText, offset string
	}{
		{"poison", "decode", "cannot decode", "1"},
		{"panic", ReasonPanic, "panic: boom", "3"},
	}
	for i, want := range checks {
		d := dead[i]
		if string(d.Value) != want.value || string(d.Key) != "k-"+want.value {
			t.Errorf("dead letter %d key/value = %q/%q", i, d.Key, d.Value)
		}
		for key, v := range map[string]string{
			HeaderDLQReason: want.reason, HeaderDLQError: want.errText, HeaderDLQTopic: k.Topic(inTopic),
			HeaderDLQPartition: "1", HeaderDLQOffset: want.offset,
		} {
			if got, _ := header(d, key); got != v {
				t.Errorf("dead letter %d header %s = %q, want %q", i, key, got, v)
			}
		}
		if _, ok := header(d, HeaderDLQTime); !ok {
			t.Errorf("dead letter %d has no %s header", i, HeaderDLQTime)
		}
	}
	if got, _ := header(dead[0], "trace"); got != "abc" {
		t.Errorf("original header lost: trace = %q", got)
	}
	if got := value(t, c.m.deadLetters.WithLabelValues("decode")); got != 1 {
		t.Errorf("dead_letters_total{reason=decode} = %v, want 1", got)
	}
	if got := value(t, c.m.deadLetters.WithLabelValues(ReasonPanic)); got != 1 {
		t.Errorf("dead_letters_total{reason=panic} = %v, want 1", got)
	}
}

func TestTransientErrorIsRetriedNotSkipped(t *testing.T) {
	k := startKafka(t, topic(inTopic, 1), topic(dlqTopic, 1))
	produce(t, k, inTopic, 0, values("a", "flaky", "b")...)
	failures := 3
	rec := newRecorder()
	rec.onHandle = func(_ context.Context, m kafka.Message) error {
		if string(m.Value) == "flaky" && failures > 0 {
			failures-- // only this partition's worker calls Handle, sequentially
			return errors.New("lake unavailable")
		}
		return nil
	}
	cfg := testConfig(k, "transient")
	cfg.Registerer = prometheus.NewRegistry()
	c := startConsumer(t, cfg, rec)
	eventually(t, "all committed", func() bool { return committed(t, k, "transient", inTopic, 1)[0] == 3 })
	if got, want := rec.handleCalls(0), []int64{0, 1, 1, 1, 1, 2}; !slices.Equal(got, want) {
		t.Errorf("Handle calls %v, want %v", got, want)
	}
	if got, want := rec.handledOffsets(0), []int64{0, 1, 2}; !slices.Equal(got, want) {
		t.Errorf("handled %v, want %v", got, want)
	}
	if got := value(t, c.m.retries.WithLabelValues(opHandle)); got != 3 {
		t.Errorf("retries_total{operation=handle} = %v, want 3", got)
	}
	if n := len(readPartition(t, k, dlqTopic, 0)); n != 0 {
		t.Errorf("a transient failure was dead-lettered (%d records)", n)
	}
}

// value sums the counters or gauges a collector yields.
func value(t testing.TB, c prometheus.Collector) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 64)
	c.Collect(ch)
	close(ch)
	var sum float64
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatalf("reading metric: %v", err)
		}
		switch {
		case d.Counter != nil:
			sum += d.Counter.GetValue()
		case d.Gauge != nil:
			sum += d.Gauge.GetValue()
		}
	}
	return sum
}

// series counts the label sets a collector yields.
func series(c prometheus.Collector) int {
	ch := make(chan prometheus.Metric, 64)
	c.Collect(ch)
	close(ch)
	n := 0
	for range ch {
		n++
	}
	return n
}

func TestDeadLetterWriteFailureBlocksOffset(t *testing.T) {
	for _, tc := range []struct {
		name   string
		start  func(t *testing.T) *kafkatest.Cluster
		break_ func(t *testing.T, k *kafkatest.Cluster) (waitBroken func() bool, repair func())
	}{
		{
			// Only kfake can make a broker refuse produces on one topic.
			name: "broker rejects produce",
			start: func(t *testing.T) *kafkatest.Cluster {
				return kafkatest.StartFake(t, kfake.SeedTopics(1, dlqTopic), kfake.SeedTopics(1, inTopic))
			},
			break_: func(t *testing.T, k *kafkatest.Cluster) (func() bool, func()) {
				f := k.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: dlqTopic, Err: kerr.NotEnoughReplicas, Count: -1})
				return func() bool { return f.Hits() >= 3 }, f.Remove
			},
		},
		{
			name:  "topic missing",
			start: func(t *testing.T) *kafkatest.Cluster { return startKafka(t, topic(inTopic, 1)) },
			break_: func(t *testing.T, k *kafkatest.Cluster) (func() bool, func()) {
				return nil, func() {
					if err := k.CreateTopics(context.Background(), topic(dlqTopic, 1)); err != nil {
						t.Fatalf("creating dead-letter topic: %v", err)
					}
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := tc.start(t)
			broken, repair := tc.break_(t, k)
			produce(t, k, inTopic, 0, values("ok-1", "poison", "ok-2")...)
			rec := newRecorder()
			rec.onHandle = func(_ context.Context, m kafka.Message) error {
				if string(m.Value) == "poison" {
					return Poison(errors.New("bad schema"), "invalid")
				}
				return nil
			}
			cfg := testConfig(k, "dlq-fail")
			cfg.Registerer = prometheus.NewRegistry()
			c := startConsumer(t, cfg, rec)

			eventually(t, "first message committed", func() bool {
				return committed(t, k, "dlq-fail", inTopic, 1)[0] == 1
			})
			eventually(t, "dead-letter write retried", func() bool {
				return value(t, c.m.retries.WithLabelValues(opDeadLetter)) >= 3 && (broken == nil || broken())
			})
			// Commits keep running every 20ms; none may pass the poison message
			// while its dead letter is unwritten, nor may the next one be handled.
			if got := committed(t, k, "dlq-fail", inTopic, 1)[0]; got != 1 {
				t.Fatalf("committed offset %d while dead letter unwritten, want 1", got)
			}
			if got := rec.handleCalls(0); !slices.Equal(got, []int64{0, 1}) {
				t.Fatalf("Handle calls %v while dead letter unwritten, want [0 1]", got)
			}

			repair()
			eventually(t, "offset moves on after the dead letter is written", func() bool {
				return committed(t, k, "dlq-fail", inTopic, 1)[0] == 3
			})
			if dead := readPartition(t, k, dlqTopic, 0); len(dead) != 1 || string(dead[0].Value) != "poison" {
				t.Errorf("dead-letter topic = %+v, want the poison message once", dead)
			}
			if got := rec.handledOffsets(0); !slices.Equal(got, []int64{0, 2}) {
				t.Errorf("handled %v, want [0 2]", got)
			}
		})
	}
}

func TestLagGrowsWhilePartitionIsStuck(t *testing.T) {
	k := startKafka(t, topic(inTopic, 1), topic(dlqTopic, 1))
	produce(t, k, inTopic, 0, values("stuck")...)
	started, release := make(chan struct{}), make(chan struct{})
	rec := newRecorder()
	rec.onHandle = func(ctx context.Context, m kafka.Message) error {
		if string(m.Value) == "stuck" {
			close(started)
			<-release
		}
		return nil
	}
	cfg := testConfig(k, "lag")
	cfg.LagInterval = 20 * time.Millisecond
	c := startConsumer(t, cfg, rec)
	<-started
	produce(t, k, inTopic, 0, values("b", "c", "d", "e")...)
	eventually(t, "lag counts the backlog behind the stuck message", func() bool {
		return value(t, c.m.lag.WithLabelValues("0")) == 5
	})
	close(release)
	eventually(t, "lag back to zero", func() bool {
		return value(t, c.m.lag.WithLabelValues("0")) == 0 && committed(t, k, "lag", inTopic, 1)[0] == 5
	})
	c.stop(t)
	if n := series(c.m.lag); n != 0 {
		t.Errorf("%d lag series left after the partition was revoked", n)
	}
}

// gatedRecorder records messages, says on started which one it begins, and
// holds a message whose value has a gate until the gate is closed.
func gatedRecorder(gates map[string]chan struct{}) (*recorder, chan string) {
	started := make(chan string, 5)
	rec := newRecorder()
	rec.onHandle = func(ctx context.Context, m kafka.Message) error {
		started <- string(m.Value)
		if g := gates[string(m.Value)]; g != nil {
			<-g
		}
		return nil
	}
	return rec, started
}

// Behind(p, t): the partition has unread input and has handled no message
// Kafka stamped at or after t. It judges deadlines on event time: a run
// waits for its writes only while they may still be in the backlog.
func TestBehindUntilAMessageAfterTheTimeIsDone(t *testing.T) {
	k := startKafka(t, topic(inTopic, 1), topic(dlqTopic, 1))
	t0 := time.Now().Add(-time.Hour).Truncate(time.Millisecond) // stamps in the past, as the producer's clock is right
	at := func(v string, d time.Duration) kafkago.Message {
		return kafkago.Message{Value: []byte(v), Time: t0.Add(d)}
	}
	produce(t, k, inTopic, 0, at("a", 0))
	gates := map[string]chan struct{}{"a": make(chan struct{}), "c": make(chan struct{})}
	rec, started := gatedRecorder(gates)
	cfg := testConfig(k, "behind")
	cfg.LagInterval = 20 * time.Millisecond
	c := startConsumer(t, cfg, rec)
	<-started // stuck on a
	produce(t, k, inTopic, 0, at("b", time.Minute), at("c", 2*time.Minute))
	eventually(t, "backlog behind a seen", func() bool { return c.Behind(0, t0) })
	if c.Behind(1, t0) {
		t.Error("a partition this member does not consume is behind")
	}
	close(gates["a"])
	for v := <-started; v != "c"; v = <-started {
	}
	// Stuck on c, b done: behind for any time after b's, not at or before it.
	eventually(t, "behind after b", func() bool { return c.Behind(0, t0.Add(time.Minute+time.Second)) })
	if c.Behind(0, t0.Add(time.Minute)) || c.Behind(0, t0) {
		t.Error("behind for a time at or before a handled message's")
	}
	close(gates["c"])
	eventually(t, "caught up", func() bool { return !c.Behind(0, t0.Add(time.Hour)) })
	c.stop(t)
}

// One message stamped in the future does not switch the lag guard off
// (year 2100 on kfake and brokers that take it; Apache Kafka 4 refuses
// stamps over an hour ahead by default, so the test's is 50 minutes): a stamp later than the clock says nothing about what the
// backlog holds, so the partition stays behind for a deadline after the
// last plausible stamp while its backlog is unread.
func TestFutureTimestampDoesNotEndBehind(t *testing.T) {
	k := startKafka(t, topic(inTopic, 1), topic(dlqTopic, 1))
	t0 := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	at := func(v string, ts time.Time) kafkago.Message { return kafkago.Message{Value: []byte(v), Time: ts} }
	produce(t, k, inTopic, 0, at("a", t0))
	gates := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{})}
	rec, started := gatedRecorder(gates)
	cfg := testConfig(k, "future")
	cfg.LagInterval = 20 * time.Millisecond
	c := startConsumer(t, cfg, rec)
	var once sync.Once
	releaseB := func() { once.Do(func() { close(gates["b"]) }) }
	t.Cleanup(releaseB) // a failed wait below must not leave the handler stuck
	<-started           // stuck on a
	produce(t, k, inTopic, 0, at("future", time.Now().Add(50*time.Minute)), at("b", t0.Add(time.Minute)), at("c", t0.Add(2*time.Minute)))
	close(gates["a"])
	for v := <-started; v != "b"; v = <-started {
	}
	// a and the future message done, stuck on b with c behind it.
	eventually(t, "behind while b and c wait", func() bool { return c.Behind(0, t0.Add(30*time.Second)) })
	if got := value(t, c.m.futureStamps); got != 1 {
		t.Errorf("future timestamps counted %v, want 1", got)
	}
	releaseB()
	eventually(t, "caught up", func() bool { return !c.Behind(0, t0.Add(time.Hour)) })
	c.stop(t)
}
