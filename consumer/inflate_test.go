package consumer

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol/fetch"

	"github.com/lakewap/lakewap/kafka"
)

// heldHandler holds the first message of each partition until released,
// counting the partitions that reached it.
type heldHandler struct {
	release chan struct{}
	mu      sync.Mutex
	arrived map[int]bool
	handled int
}

func (h *heldHandler) Assigned(context.Context, int, func(time.Time) bool) error { return nil }
func (h *heldHandler) Revoked(int)                                               {}

func (h *heldHandler) Handle(ctx context.Context, m kafka.Message) error {
	h.mu.Lock()
	first := !h.arrived[m.Partition]
	h.arrived[m.Partition] = true
	h.mu.Unlock()
	if first {
		select {
		case <-h.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	h.mu.Lock()
	h.handled++
	h.mu.Unlock()
	return nil
}

// liveHeap is the bytes of the heap's live objects: after two collections,
// so that what sync.Pools (kafka-go's codecs, zstd's) let go of is gone too.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

func (h *heldHandler) counts() (arrived, handled int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.arrived), h.handled
}

// Each partition's fetch decompresses its batches for itself, each within
// kafka.MaxDecompressedBatchBytes, and the worker's messages point into
// the decompressed bytes while it handles them; the next batch is
// decompressed meanwhile. A producer that may write every partition wrote
// batches of 60 MiB of records (a few KiB of zstd) to each: the consumer
// held two per partition it was assigned, 720 MiB live for 6 (and 64 MiB
// a response more each, from a broker's answers), bounded per partition,
// never per process. The bytes of decompressed batches held at once, over
// every partition, are bounded by maxInflatedBytes: a partition whose
// next batch does not fit waits until another's worker is done with one.
func TestDecompressedBatchesAreBoundedOverPartitions(t *testing.T) {
	if !inOwnProcess(t) {
		return
	}
	const partitions, perBatch, size = 6, 30, kafka.MaxDecompressedRecordBytes - 64
	k := startKafka(t, topic(inTopic, partitions), topic(dlqTopic, 1))
	value := make([]byte, size)
	msgs := make([]kafkago.Message, perBatch)
	for i := range msgs {
		msgs[i] = kafkago.Message{Key: []byte("k"), Value: value}
	}
	for p := range partitions {
		for range 2 {
			produceCompressed(t, k.Brokers, k.Topic(inTopic), p, kafkago.Zstd, msgs...)
		}
	}
	value = nil
	msgs = nil
	before := liveHeap()
	h := &heldHandler{release: make(chan struct{}), arrived: map[int]bool{}}
	cfg := testConfig(k, "inflate")
	cfg.Registerer = prometheus.NewRegistry()
	r := startConsumer(t, cfg, h)
	// Every partition holds a batch in its worker, or (within the bound) waits
	// to decompress one.
	eventually(t, "every partition at its first record, or waiting to decompress", func() bool {
		arrived, _ := h.counts()
		return arrived+r.inflated.waiting() == partitions
	})
	grown := liveHeap() - before
	close(h.release)
	if limit := int64(maxInflatedBytes + 32<<20); grown > limit {
		t.Errorf("live heap grew by %d MiB with %d partitions of batches of %d MiB decompressed, over %d MiB", grown>>20, partitions, perBatch*size>>20, limit>>20)
	}
	t.Logf("live heap grew by %d MiB", grown>>20)
	eventually(t, "every record handled", func() bool {
		_, handled := h.counts()
		return handled == partitions*2*perBatch
	})
}

// A generation that ends while workers hold decompressed batches, and
// fetches hold or wait for the next (and their responses), gives their
// bytes back: leaked, each rebalance would shrink the bounds until nothing
// fit and every partition waited for good.
func TestDecompressedBatchesAreFreedWhenTheGenerationEnds(t *testing.T) {
	const partitions = 3
	k := startKafka(t, topic(inTopic, partitions), topic(dlqTopic, 1))
	for p := range partitions {
		for range 3 {
			produceCompressed(t, k.Brokers, k.Topic(inTopic), p, kafkago.Zstd, values("a", "b")...)
		}
	}
	h := &heldHandler{release: make(chan struct{}), arrived: map[int]bool{}}
	cfg := testConfig(k, "inflatefree")
	cfg.ShutdownGrace = 50 * time.Millisecond
	r := startConsumer(t, cfg, h)
	eventually(t, "every partition at its first record", func() bool {
		arrived, _ := h.counts()
		return arrived == partitions
	})
	r.stop(t)
	if !r.inflated.sem.TryAcquire(maxInflatedBytes) {
		t.Error("bytes of the decompressed batches' budget still held after the consumer stopped")
	}
	if !r.fetchedBytes.sem.TryAcquire(r.fetchedBytes.size) {
		t.Error("bytes of the fetch responses' budget still held after the consumer stopped")
	}
}

// A partition's fetch holds its response (up to MaxFetchBytes, 10 MiB by
// default) until its worker has every message of it, and the worker holds
// copies of the messages it was sent: bounded per partition, never per
// process. A backlog on every partition (a producer's, or the consumer's
// own after downtime) made a consumer hold about twice MaxFetchBytes per
// partition assigned. The responses held at once are bounded over every
// partition by maxFetchedBytes (a response waits for room after its size
// is read, before its body is), and the messages sent at once to a worker
// by maxBytesPerSend.
func TestFetchResponsesAreBoundedOverPartitions(t *testing.T) {
	if !inOwnProcess(t) {
		return
	}
	const partitions, perPartition, size = 40, 1000, 10 << 10
	k := startKafka(t, topic(inTopic, partitions), topic(dlqTopic, 1))
	if k.Fake != nil {
		t.Skip("needs a broker of its own process: kfake's answers waiting to be read are in the test's heap")
	}
	value := make([]byte, size)
	for p := range partitions {
		for range perPartition / 100 {
			msgs := make([]kafkago.Message, 100)
			for i := range msgs {
				msgs[i] = kafkago.Message{Value: value}
			}
			produce(t, k, inTopic, p, msgs...)
		}
	}
	before := liveHeap()
	h := &heldHandler{release: make(chan struct{}), arrived: map[int]bool{}}
	cfg := testConfig(k, "fetched")
	cfg.Registerer = prometheus.NewRegistry()
	r := startConsumer(t, cfg, h)
	eventually(t, "every partition at its first record, or its fetch waiting for room", func() bool {
		arrived, _ := h.counts()
		return arrived+r.fetchedBytes.waiting() == partitions
	})
	grown := liveHeap() - before
	close(h.release)
	if limit := int64(maxFetchedBytes + partitions*2*maxBytesPerSend + 32<<20); grown > limit {
		t.Errorf("live heap grew by %d MiB with %d partitions of %d MiB each to fetch, over %d MiB", grown>>20, partitions, perPartition*size>>20, limit>>20)
	}
	t.Logf("live heap grew by %d MiB", grown>>20)
	eventually(t, "every record handled", func() bool {
		_, handled := h.counts()
		return handled == partitions*perPartition
	})
}

// A fetch's caller that gave up on it (its context ended) before the
// exchange took room for the response gets nothing: kafka-go drops the
// response, so the exchange gives the room back itself, and a caller that
// claims after the exchange took room frees it.
func TestFetchResponseGivenUpOnFreesItsRoom(t *testing.T) {
	for _, claimFirst := range []bool{true, false} {
		b := newByteBudget(100)
		x := &fetchExchange{budget: b}
		if err := b.reserve(context.Background(), 40, nil); err != nil {
			t.Fatal(err)
		}
		if claimFirst {
			if held := x.claim(); held != 0 {
				t.Errorf("claimed %d bytes before the exchange held any", held)
			}
			if x.hold(40) {
				t.Error("the exchange held room for a caller that gave up")
			}
		} else {
			if !x.hold(40) {
				t.Error("the exchange did not hold room for its caller")
			}
			b.free(x.claim())
		}
		if !b.sem.TryAcquire(100) {
			t.Errorf("claim first %v: room still held", claimFirst)
		}
	}
}

// A response that waits for room longer than its fetch's deadline (other
// partitions' workers slow to take their messages) is read once there is
// room, not dropped: the fetch failed at its deadline, logged, backed off
// and asked the broker for the same bytes again, for as long as the room
// stayed taken.
func TestFetchWaitingForRoomIsNotAnError(t *testing.T) {
	k := startKafka(t, topic(inTopic, 1), topic(dlqTopic, 1))
	produce(t, k, inTopic, 0, values("a")...)
	rec := newRecorder()
	r := startConsumer(t, testConfig(k, "room"), rec)
	// The room taken, as by other partitions' responses.
	if err := r.fetchedBytes.reserve(context.Background(), r.fetchedBytes.size, nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the fetch waiting for room", func() bool { return r.fetchedBytes.waiting() == 1 })
	time.Sleep(fetchMaxWait + 11*time.Second) // past the fetch's deadline: there is no event to await
	r.fetchedBytes.free(r.fetchedBytes.size)
	eventually(t, "the record handled", func() bool { return len(handledValues(rec, 0)) == 1 })
	if n := testutil.ToFloat64(r.m.retries.WithLabelValues(opFetch)); n != 0 {
		t.Errorf("%v fetch retries while the response waited for room", n)
	}
}

// A fetch the broker never answers still fails at its deadline
// (fetchMaxWait and fetchIOTimeout), now that the deadline is the
// exchange's own on its connection rather than its context's.
func TestFetchWithoutAnswerTimesOut(t *testing.T) {
	client, broker := net.Pipe()
	defer client.Close()
	defer broker.Close()
	go io.Copy(io.Discard, broker) // takes the request, never answers
	x := &fetchExchange{version: maxFetchVersion, maxBytes: 1 << 20, Request: &fetch.Request{ReplicaID: -1}}
	start := time.Now()
	_, err := x.RawExchange(client)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("err %v, want the connection's deadline exceeded", err)
	}
	if took := time.Since(start); took < fetchMaxWait+fetchIOTimeout {
		t.Errorf("gave up after %v, before its deadline", took)
	}
}
