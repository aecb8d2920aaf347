package consumer

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/kafka/kafkatest"
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

// transactional is a producer of k's input topic with transactional id
// id, writing to explicit partitions.
func transactional(t *testing.T, k *kafkatest.Cluster, id string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...), kgo.TransactionalID(k.Group(id)),
		kgo.DefaultProduceTopic(k.Topic(inTopic)), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// begin, write and end are the steps of a transactional producer.
func begin(t *testing.T, cl *kgo.Client) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, cl *kgo.Client, partition int32, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Partition: partition, Key: []byte("k-" + value), Value: []byte(value)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func end(t *testing.T, cl *kgo.Client, how kgo.TransactionEndTry) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.EndTransaction(ctx, how); err != nil {
		t.Fatal(err)
	}
}

// highWater is the offset the next record of partition 0 of the input
// topic will get.
func highWater(t *testing.T, k *kafkatest.Cluster) int64 {
	t.Helper()
	topic := k.Topic(inTopic)
	res, err := newClient(k.Brokers).ListOffsets(context.Background(), &kafkago.ListOffsetsRequest{
		Topics: map[string][]kafkago.OffsetRequest{topic: {kafkago.LastOffsetOf(0)}}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Topics[topic][0].LastOffset
}

// handledValues is what rec handled of partition p, in order.
func handledValues(rec *recorder, p int) []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.handled[p])
}

// A transaction left open holds the partition's later records, its own
// and others' (the last stable offset stays at its first record); once it
// commits, all are handled in offset order, and the committed offset moves
// past its commit marker, the partition's last offset.
func TestOpenTransactionHoldsLaterRecordsUntilItCommits(t *testing.T) {
	k := startKafka(t, topic(inTopic, 2), topic(dlqTopic, 1))
	rec := newRecorder()
	startConsumer(t, testConfig(k, "held"), rec)
	cl := transactional(t, k, "slow-sink")
	begin(t, cl)
	write(t, cl, 0, "t1")
	produce(t, k, inTopic, 0, values("plain")...)
	write(t, cl, 0, "t2")
	produce(t, k, inTopic, 1, values("other partition")...)
	eventually(t, "the other partition handled", func() bool { return len(rec.handledOffsets(1)) == 1 })
	if got := handledValues(rec, 0); len(got) != 0 {
		t.Fatalf("handled %q of a partition held by an open transaction", got)
	}
	end(t, cl, kgo.TryCommit)
	eventually(t, "the partition handled", func() bool { return len(handledValues(rec, 0)) >= 3 })
	if got, want := handledValues(rec, 0), []string{"t1", "plain", "t2"}; !slices.Equal(got, want) {
		t.Errorf("handled %q, want %q", got, want)
	}
	hw := highWater(t, k)
	eventually(t, "the offset past the commit marker committed", func() bool { return committed(t, k, "held", inTopic, 1)[0] == hw })
}

// Two transactional producers write one partition, their records
// interleaved with each other's and with plain ones; one aborts, the other
// commits, and their markers come in either order. Only the committed and
// the plain records are handled, in offset order, and the committed offset
// reaches the partition's end.
func TestInterleavedTransactionsOneAborted(t *testing.T) {
	k := startKafka(t, topic(inTopic, 1), topic(dlqTopic, 1))
	rec := newRecorder()
	startConsumer(t, testConfig(k, "interleaved"), rec)
	a := transactional(t, k, "aborts")
	b := transactional(t, k, "commits")
	begin(t, a)
	begin(t, b)
	write(t, a, 0, "a1")
	write(t, b, 0, "b1")
	produce(t, k, inTopic, 0, values("p1")...)
	write(t, a, 0, "a2")
	write(t, b, 0, "b2")
	end(t, a, kgo.TryAbort)
	write(t, b, 0, "b3")
	end(t, b, kgo.TryCommit)
	// The second round: the commit marker first, then the abort marker.
	begin(t, a)
	begin(t, b)
	write(t, b, 0, "b4")
	write(t, a, 0, "a3")
	end(t, b, kgo.TryCommit)
	write(t, a, 0, "a4")
	end(t, a, kgo.TryAbort)
	produce(t, k, inTopic, 0, values("p2")...)
	eventually(t, "the last plain record handled", func() bool { return slices.Contains(handledValues(rec, 0), "p2") })
	if got, want := handledValues(rec, 0), []string{"b1", "p1", "b2", "b3", "b4", "p2"}; !slices.Equal(got, want) {
		t.Errorf("handled %q, want %q", got, want)
	}
	hw := highWater(t, k)
	eventually(t, "the partition's end committed", func() bool { return committed(t, k, "interleaved", inTopic, 1)[0] == hw })
}

// With fetches of one record batch each (MaxFetchBytes 1: the broker
// still returns the first batch whole), an aborted transaction spans many
// fetches: each fetch's list of aborted transactions names it, and none of
// its records is handled.
func TestAbortedTransactionAcrossFetches(t *testing.T) {
	k := startKafka(t, topic(inTopic, 1), topic(dlqTopic, 1))
	cl := transactional(t, k, "spanning")
	produce(t, k, inTopic, 0, values("p1")...)
	begin(t, cl)
	for _, v := range []string{"a1", "a2", "a3"} {
		write(t, cl, 0, v)
	}
	produce(t, k, inTopic, 0, values("p2")...)
	write(t, cl, 0, "a4")
	end(t, cl, kgo.TryAbort)
	begin(t, cl)
	write(t, cl, 0, "c1")
	write(t, cl, 0, "c2")
	end(t, cl, kgo.TryCommit)
	produce(t, k, inTopic, 0, values("p3")...)

	rec := newRecorder()
	cfg := testConfig(k, "spanning")
	cfg.MaxFetchBytes = 1
	startConsumer(t, cfg, rec)
	eventually(t, "the last plain record handled", func() bool { return slices.Contains(handledValues(rec, 0), "p3") })
	if got, want := handledValues(rec, 0), []string{"p1", "p2", "c1", "c2", "p3"}; !slices.Equal(got, want) {
		t.Errorf("handled %q, want %q", got, want)
	}
	hw := highWater(t, k)
	eventually(t, "the partition's end committed", func() bool { return committed(t, k, "spanning", inTopic, 1)[0] == hw })
}

// A member commits an offset inside an aborted transaction (past its
// first record, before its abort marker) and stops; the member that takes
// the partition over reads from there, and the fetch from the middle of
// the transaction still names it as aborted: none of its records is
// handled, before or after the restart.
func TestRestartInsideAbortedTransaction(t *testing.T) {
	k := startKafka(t, topic(inTopic, 1), topic(dlqTopic, 1))
	cl := transactional(t, k, "restart")
	produce(t, k, inTopic, 0, values("p1")...) // offset 0
	begin(t, cl)
	write(t, cl, 0, "a1")                      // 1
	produce(t, k, inTopic, 0, values("p2")...) // 2
	write(t, cl, 0, "a2")                      // 3
	end(t, cl, kgo.TryAbort)                   // the marker at 4
	produce(t, k, inTopic, 0, values("p3")...) // 5

	first := newRecorder()
	first.onHandle = func(_ context.Context, m kafka.Message) error {
		if string(m.Value) == "p2" {
			return errors.New("not yet") // retried until the member stops
		}
		return nil
	}
	c := startConsumer(t, testConfig(k, "restart"), first)
	eventually(t, "the offset past the first aborted record committed", func() bool { return committed(t, k, "restart", inTopic, 1)[0] == 2 })
	c.stop(t)
	if got := handledValues(first, 0); !slices.Equal(got, []string{"p1"}) {
		t.Errorf("the first member handled %q, want [p1]", got)
	}

	second := newRecorder()
	startConsumer(t, testConfig(k, "restart"), second)
	hw := highWater(t, k)
	eventually(t, "the partition's end committed", func() bool { return committed(t, k, "restart", inTopic, 1)[0] == hw })
	if got, want := handledValues(second, 0), []string{"p2", "p3"}; !slices.Equal(got, want) {
		t.Errorf("the second member handled %q, want %q", got, want)
	}
}
