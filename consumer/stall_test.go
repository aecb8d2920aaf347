package consumer

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A producer that begins a transaction and never ends it holds every later
// message of the partition from this read-committed consumer, while the
// high watermark grows. The stall shows in lakewap_consumer_stalled_seconds
// (the deploy kit alerts on it); a partition that moves reads 0.
func TestOpenTransactionShowsAsAStall(t *testing.T) {
	k := startKafka(t, topic(inTopic, 2), topic(dlqTopic, 1))
	rec := newRecorder()
	cfg := testConfig(k, "stall")
	cfg.LagInterval = 20 * time.Millisecond
	var ahead atomic.Int64 // how far the test moved the clock
	cfg.Now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	c := startConsumer(t, cfg, rec)

	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...), kgo.TransactionalID("stuck-producer"),
		kgo.DefaultProduceTopic(k.Topic(inTopic)), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("never committed")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	produce(t, k, inTopic, 0, values("after the open transaction")...)
	produce(t, k, inTopic, 1, values("other partition")...)
	eventually(t, "the other partition handled", func() bool { return len(rec.handledOffsets(1)) == 1 })
	eventually(t, "both partitions' stable offsets read", func() bool { return series(c.m.stalled) == 2 })
	ahead.Store(int64(10 * time.Minute))
	eventually(t, "the stall counted", func() bool { return value(t, c.m.stalled.WithLabelValues("0")) >= 600 })
	if got := value(t, c.m.stalled.WithLabelValues("1")); got != 0 {
		t.Errorf("partition 1 moves, stalled %v s", got)
	}
	if got := rec.handledOffsets(0); len(got) != 0 {
		t.Errorf("handled %v of the held partition", got)
	}
	c.stop(t)
}
