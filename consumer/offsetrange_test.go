package consumer

import (
	"context"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakewap/lakewap/kafka/kafkatest"
)

// commitOffset commits offset for partition 0 of the input topic in the
// name of group (base name), as a tool or an earlier incarnation of the
// topic left it: a commit outside any generation.
func commitOffset(t *testing.T, k *kafkatest.Cluster, group string, offset int64) {
	t.Helper()
	res, err := newClient(k.Brokers).OffsetCommit(context.Background(), &kafkago.OffsetCommitRequest{
		GroupID: k.Group(group), GenerationID: -1,
		Topics: map[string][]kafkago.OffsetCommit{k.Topic(inTopic): {{Partition: 0, Offset: offset}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Topics[k.Topic(inTopic)] {
		if p.Error != nil {
			t.Fatal(p.Error)
		}
	}
}

// A committed offset past the partition's end (the log truncated by an
// unclean leader election; the topic deleted and created again, its
// offsets committed before kept): the records below that offset are ones
// the group never read. The consumer moves to the partition's first
// offset, its reset policy (the group's FirstOffset; a Java consumer's
// auto.offset.reset=earliest), and reads them: handed out twice rather
// than skipped. Before, it waited for the log to reach the committed
// offset, as kafka-go's Reader did, and every record written below it was
// skipped without a word.
func TestCommittedOffsetPastThePartitionsEndIsReadFromTheFirstOffset(t *testing.T) {
	k := startKafka(t, topic(inTopic, 1), topic(dlqTopic, 1))
	produce(t, k, inTopic, 0, values("a", "b", "c")...)
	commitOffset(t, k, "truncated", 100)
	rec := newRecorder()
	startConsumer(t, testConfig(k, "truncated"), rec)
	eventually(t, "the records below the committed offset handled", func() bool { return len(handledValues(rec, 0)) >= 3 })
	if got, want := handledValues(rec, 0), []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("handled %q, want %q", got, want)
	}
	eventually(t, "the partition's end committed", func() bool { return committed(t, k, "truncated", inTopic, 1)[0] == 3 })
}

// After the fetch moved back to the partition's first offset (a position
// past its end), the commit position moves back with the records handled
// there, and the offset committed is the one the group holds: before, the
// tracker kept the larger offset it had committed, so each commit
// interval committed the smaller one again, and Fence committed the
// larger one, past the end, back.
func TestCommitPositionMovesBackAfterAReset(t *testing.T) {
	tr := newOffsetTracker()
	tr.fetched(5)
	tr.markDone(5)
	if off, ok := tr.toCommit(); !ok || off != 6 {
		t.Fatalf("toCommit = %d, %v; want 6, true", off, ok)
	}
	tr.setCommitted(6)
	tr.fetched(0) // the partition's first offset, after a reset
	tr.markDone(0)
	off, ok := tr.toCommit()
	if !ok || off != 1 {
		t.Fatalf("toCommit after the reset = %d, %v; want 1, true", off, ok)
	}
	tr.setCommitted(off)
	if off, ok := tr.toCommit(); ok {
		t.Errorf("toCommit = %d again after it was committed", off)
	}
	if got := tr.committedOffset(); got != 1 {
		t.Errorf("committedOffset = %d, want 1", got)
	}
}

// Apache Kafka answers a fetch with the bytes of the partition's log from
// the fetch's offset up to the partition's bound, so the last record batch
// of a response is usually cut off (kfake sends whole batches only): with
// bounds of one to three batches, a cut batch is left for the next fetch,
// from its offset, never read as a record nor dead-lettered, and an
// aborted transaction spanning the cuts is skipped whole.
func TestBatchesCutOffByTheFetchBoundAreFetchedAgain(t *testing.T) {
	for _, bound := range []int{100, 150, 250} {
		t.Run(strconv.Itoa(bound), func(t *testing.T) {
			k := startKafka(t, topic(inTopic, 1), topic(dlqTopic, 1))
			cl := transactional(t, k, "cut")
			var want []string
			for i := range 6 {
				v := "p" + strconv.Itoa(i)
				produce(t, k, inTopic, 0, values(v)...)
				want = append(want, v)
			}
			begin(t, cl)
			write(t, cl, 0, "a1")
			produce(t, k, inTopic, 0, values("q1")...)
			write(t, cl, 0, "a2")
			end(t, cl, kgo.TryAbort)
			begin(t, cl)
			write(t, cl, 0, "c1")
			end(t, cl, kgo.TryCommit)
			produce(t, k, inTopic, 0, values("last")...)
			want = append(want, "q1", "c1", "last")

			rec := newRecorder()
			cfg := testConfig(k, "cut")
			cfg.MaxFetchBytes = bound
			startConsumer(t, cfg, rec)
			eventually(t, "the last record handled", func() bool { return slices.Contains(handledValues(rec, 0), "last") })
			if got := handledValues(rec, 0); !slices.Equal(got, want) {
				t.Errorf("handled %q, want %q", got, want)
			}
			hw := highWater(t, k)
			eventually(t, "the partition's end committed", func() bool { return committed(t, k, "cut", inTopic, 1)[0] == hw })
			if dl := readPartition(t, k, dlqTopic, 0); len(dl) != 0 {
				t.Errorf("%d dead letters, want none", len(dl))
			}
		})
	}
}

// A read-committed fetch response holds records only below its last
// stable offset: the aborted transactions it lists are those up to there,
// so a record at or past it may belong to a transaction still open or
// aborted, and is not handed out, whatever the broker sent. Before, the
// consumer handed out every record of the response (kfake, answering in
// the place of a broker, sends batches at offsets 1 and 2 with the last
// stable offset at 1).
func TestRecordsAtOrPastTheLastStableOffsetAreNotHandedOut(t *testing.T) {
	k := startKafka(t, topic(inTopic, 1), topic(dlqTopic, 1))
	if k.Fake == nil {
		t.Skip("needs kfake to answer a fetch in a broker's place")
	}
	produce(t, k, inTopic, 0, values("a", "b", "c")...)
	var injected atomic.Bool
	k.Fake.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		r := req.(*kmsg.FetchRequest)
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 || r.Topics[0].Partitions[0].FetchOffset != 0 {
			k.Fake.KeepControl()
			return nil, nil, false
		}
		resp := r.ResponseKind().(*kmsg.FetchResponse)
		st := kmsg.NewFetchResponseTopic()
		st.Topic = r.Topics[0].Topic
		sp := kmsg.NewFetchResponseTopicPartition()
		sp.HighWatermark = 3
		sp.LastStableOffset = 1
		// Each record's value is its offset as text: "0", "1", "2".
		sp.RecordBatches = slices.Concat(encodeBatch(t, 0, -1, 0, 0, testRecord{}),
			encodeBatch(t, 1, -1, 0, 0, testRecord{}), encodeBatch(t, 2, -1, 0, 0, testRecord{}))
		st.Partitions = append(st.Partitions, sp)
		resp.Topics = append(resp.Topics, st)
		injected.Store(true)
		return resp, nil, true
	})
	rec := newRecorder()
	startConsumer(t, testConfig(k, "lso"), rec)
	eventually(t, "three records handled", func() bool { return len(handledValues(rec, 0)) >= 3 })
	if !injected.Load() {
		t.Fatal("the fetch from offset 0 was not answered by the test")
	}
	if got, want := handledValues(rec, 0), []string{"0", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("handled %q, want %q: records at or past the last stable offset were handed out", got, want)
	}
}

// The batches of a response from its last stable offset on wait for a
// later fetch; a response with nothing before it is an error, retried
// with backoff.
func TestBatchesPastTheLastStableOffsetWait(t *testing.T) {
	records := slices.Concat(encodeBatch(t, 0, -1, 0, 0, testRecord{}), encodeBatch(t, 1, -1, 0, 1, testRecord{}, testRecord{delta: 1}),
		encodeBatch(t, 3, -1, 0, 0, testRecord{}))
	for _, tt := range []struct {
		stable   int64
		want     []string
		wantNext int64
		wantErr  bool
	}{
		{stable: 4, want: []string{"m0", "m1", "m2", "m3"}, wantNext: 4},
		{stable: 3, want: []string{"m0", "m1", "m2"}, wantNext: 3},
		{stable: 2, want: []string{"m0"}, wantNext: 1}, // a batch across it (no broker's) waits whole
		{stable: 0, wantErr: true},
	} {
		got, _, next, err := passedOn(t, &fetchedPartition{lastStable: tt.stable, records: records}, 0)
		if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) || next != tt.wantNext {
			t.Errorf("last stable offset %d: got %v, next %d, err %v; want %v, next %d, an error %v", tt.stable, got, next, err, tt.want, tt.wantNext, tt.wantErr)
		}
	}
}

// A producer instance that takes over a transactional id fences the one
// before it: the coordinator aborts the fenced instance's open transaction,
// writing the abort marker with the producer's next epoch, and the new
// instance's transactions carry that epoch or later. The fenced
// transaction's records are not handled; the new instance's are.
func TestTransactionOfAFencedProducerIsNotHandled(t *testing.T) {
	k := startKafka(t, topic(inTopic, 1), topic(dlqTopic, 1))
	old := transactional(t, k, "fenced")
	produce(t, k, inTopic, 0, values("p1")...)
	begin(t, old)
	write(t, old, 0, "z1")
	produce(t, k, inTopic, 0, values("p2")...)
	write(t, old, 0, "z2")
	successor := transactional(t, k, "fenced")
	begin(t, successor)
	write(t, successor, 0, "n1")
	end(t, successor, kgo.TryCommit)
	produce(t, k, inTopic, 0, values("last")...)

	rec := newRecorder()
	cfg := testConfig(k, "fenced")
	cfg.MaxFetchBytes = 1 // one batch a fetch: the abort marker comes fetches after the records
	startConsumer(t, cfg, rec)
	eventually(t, "the last record handled", func() bool { return slices.Contains(handledValues(rec, 0), "last") })
	if got, want := handledValues(rec, 0), []string{"p1", "p2", "n1", "last"}; !slices.Equal(got, want) {
		t.Errorf("handled %q, want %q", got, want)
	}
}
