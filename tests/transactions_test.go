package tests

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/schemas"
)

// An upstream producer writes the input topic in Kafka transactions (a
// Flink or Spark exactly-once sink) and aborts one: its BatchLanded must
// not start a run, and the transactions' commit and abort markers are no
// events (none is dead-lettered). The BatchLanded of the committed
// transaction after it, on the same partition, opens its branch. Before
// lakewap read its input read committed itself, kafka-go handed out the
// aborted event, which opened a branch, and both markers, which were
// dead-lettered.
func TestAbortedTransactionOnTheInputTopicIsNotApplied(t *testing.T) {
	e := startE2E(t, func(c *config.Config) { c.HTTP.Listen, c.HTTP.WebhookToken = "127.0.0.1:0", "test-token" })
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	client, err := kafka.NewClient(e.cfg.Kafka.Brokers, kafka.Security{})
	must(t, err)
	defer client.Close()
	n, err := client.Partitions(ctx, e.cfg.Kafka.InputTopic)
	must(t, err)
	aborted := "txn-aborted"
	partition := kafka.PartitionOf([]byte(aborted), n)
	kept := ""
	for i := 0; kept == ""; i++ {
		if id := fmt.Sprintf("txn-committed-%d", i); kafka.PartitionOf([]byte(id), n) == partition {
			kept = id
		}
	}
	producer, err := kgo.NewClient(kgo.SeedBrokers(e.cfg.Kafka.Brokers...), kgo.TransactionalID("upstream-sink-"+e.cfg.Kafka.InputTopic),
		kgo.DefaultProduceTopic(e.cfg.Kafka.InputTopic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	must(t, err)
	defer producer.Close()
	for _, tx := range []struct {
		batch string
		end   kgo.TransactionEndTry
	}{{aborted, kgo.TryAbort}, {kept, kgo.TryCommit}} {
		ev := schemas.BatchLanded{BatchID: tx.batch, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
			Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}
		value, err := e.Codec.Encode(ctx, e.cfg.Kafka.InputTopic, ev)
		must(t, err)
		rec := &kgo.Record{Partition: int32(partition), Key: []byte(tx.batch), Value: value}
		for k, v := range schemas.Headers(ev) {
			rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
		}
		must(t, producer.BeginTransaction())
		must(t, producer.ProduceSync(ctx, rec).FirstErr())
		must(t, producer.EndTransaction(ctx, tx.end))
	}
	if _, err := e.Watcher.Await(ctx, kept, schemas.TypeBranchReady); err != nil {
		t.Fatalf("the committed transaction's batch: %v", err)
	}
	if evs := e.Watcher.All(aborted); len(evs) != 0 {
		t.Errorf("the aborted transaction's BatchLanded was applied: %+v", evs)
	}
	url := "http://" + e.d.HTTPAddr() + "/metrics"
	for _, m := range matching(scrape(t, url), "lakewap_consumer_dead_letters_total", nil) {
		if v := m.GetCounter().GetValue(); v != 0 {
			t.Errorf("dead letters %v: %v (a transaction marker taken for an event?)", m.GetLabel(), v)
		}
	}
}
