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
	// Every partition holds a batch in its worker, or (within the bound) each
	// partition's fetch waits to decompress its next.
	eventually(t, "every partition at its first record, or every fetch waiting to decompress", func() bool {
		arrived, _ := h.counts()
		return arrived == partitions || r.inflated.waiting() == partitions
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
// fetches hold or wait for the next, gives their bytes back: leaked, each
// rebalance would shrink the bound until no compressed batch fit and every
// partition waited for good.
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
}
