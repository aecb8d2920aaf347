package consumer

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	kafkago "github.com/segmentio/kafka-go"

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
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	close(h.release)
	if limit := uint64(maxInflatedBytes + 32<<20); ms.HeapAlloc > limit {
		t.Errorf("live heap %d MiB with %d partitions of batches of %d MiB decompressed, over %d MiB", ms.HeapAlloc>>20, partitions, perBatch*size>>20, limit>>20)
	}
	t.Logf("live heap %d MiB", ms.HeapAlloc>>20)
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
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before) // the broker's, when it is kfake
	h := &heldHandler{release: make(chan struct{}), arrived: map[int]bool{}}
	cfg := testConfig(k, "fetched")
	cfg.Registerer = prometheus.NewRegistry()
	r := startConsumer(t, cfg, h)
	eventually(t, "every partition at its first record, or its fetch waiting for room", func() bool {
		arrived, _ := h.counts()
		return arrived+r.fetchedBytes.waiting() == partitions
	})
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	close(h.release)
	grown := int64(ms.HeapAlloc) - int64(before.HeapAlloc)
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
		if err := b.reserve(context.Background(), 40); err != nil {
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
