package consumer

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A producer that writes the input topic in transactions (Flink's or
// Spark's exactly-once sinks, a Java producer with a transactional.id)
// aborts some: their events must not be applied, and the transactions'
// commit and abort markers are no messages. The consumer reads with
// kafka-go's ReadCommitted, which only stops at the last stable offset:
// kafka-go drops the fetch's list of aborted transactions and does not
// look at a batch's control bit (its issue #1332), so the aborted record
// and both markers reach the handler (on kfake:
// handled ["committed" "\x00\x00\x00\x00\x00\x00" "aborted" "\x00\x00\x00\x00\x00\x00" "plain"]).
func TestAbortedTransactionIsNotHandled(t *testing.T) {
	t.Skip("known hole (review 31): kafka-go's reader hands out aborted transactional records and transaction markers; see docs/operations.md")
	k := startKafka(t, topic(inTopic, 1), topic(dlqTopic, 1))
	rec := newRecorder()
	startConsumer(t, testConfig(k, "txn"), rec)
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...), kgo.TransactionalID("exactly-once-sink"),
		kgo.DefaultProduceTopic(k.Topic(inTopic)), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tx := range []struct {
		value string
		end   kgo.TransactionEndTry
	}{{"committed", kgo.TryCommit}, {"aborted", kgo.TryAbort}} {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Key: []byte("k"), Value: []byte(tx.value)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, tx.end); err != nil {
			t.Fatal(err)
		}
	}
	produce(t, k, inTopic, 0, values("plain")...)
	eventually(t, "the plain message after both transactions handled", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return slices.Contains(rec.handled[0], "plain")
	})
	rec.mu.Lock()
	handled := slices.Clone(rec.handled[0])
	rec.mu.Unlock()
	if want := []string{"committed", "plain"}; !slices.Equal(handled, want) {
		t.Errorf("handled %q, want %q: an aborted record or a transaction marker reached the handler", handled, want)
	}
}
