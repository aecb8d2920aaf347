package consumer

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/kafka"
)

// produceCompressed appends msgs to one partition of k's topic (base name)
// in one record batch compressed with codec.
func produceCompressed(t testing.TB, brokers []string, topic string, partition int, codec kafkago.Compression, msgs ...kafkago.Message) {
	t.Helper()
	records := make([]kafkago.Record, len(msgs))
	for i, m := range msgs {
		records[i] = kafkago.Record{Key: kafkago.NewBytes(m.Key), Value: kafkago.NewBytes(m.Value), Headers: m.Headers}
	}
	res, err := newClient(brokers).Produce(context.Background(), &kafkago.ProduceRequest{
		Topic: topic, Partition: partition, RequiredAcks: kafkago.RequireAll, Compression: codec,
		Records: kafkago.NewRecordReader(records...),
	})
	if err == nil {
		err = res.Error
	}
	if err != nil {
		t.Fatalf("producing to %s/%d: %v", topic, partition, err)
	}
}

// A producer may write the input topic, and a record batch it compresses
// is decompressed whole by the consumer before any of its records is
// handed out. A batch of a few KiB of zstd holding a value of 80 MiB of
// zeros (a "decompression bomb": the broker checks max.message.bytes
// against the compressed batch) made lakewap hold the whole value in
// memory; a bigger one, within the broker's 1 MiB, holds gigabytes, and
// the process that takes the partition dies, then the next one, at the
// same offset. The batch is dead-lettered (reason batch_too_large, without
// its original, naming its offsets and the limit) and the partition goes
// on; no handler is given a value over the limit, and a compressed batch
// within it is read as before.
func TestDecompressionBombIsDeadLettered(t *testing.T) {
	for _, codec := range []kafkago.Compression{kafkago.Zstd, kafkago.Gzip, kafkago.Lz4} {
		t.Run(codec.String(), func(t *testing.T) { decompressionBomb(t, codec) })
	}
}

func decompressionBomb(t *testing.T, codec kafkago.Compression) {
	k := startKafka(t, topic(inTopic, 1), topic(dlqTopic, 1))
	produce(t, k, inTopic, 0, values("before")...)
	bomb := make([]byte, 80<<20)
	produceCompressed(t, k.Brokers, k.Topic(inTopic), 0, codec,
		kafkago.Message{Key: []byte("k-small"), Value: []byte("small")},
		kafkago.Message{Key: []byte("k-bomb"), Value: bomb})
	bomb = nil
	// A compressed batch within the limit is read as before.
	produceCompressed(t, k.Brokers, k.Topic(inTopic), 0, codec, values("after")...)

	cfg := testConfig(k, "bomb")
	cfg.Registerer = prometheus.NewRegistry()
	rec := newRecorder()
	var mu sync.Mutex
	largest := 0
	rec.onHandle = func(_ context.Context, m kafka.Message) error {
		mu.Lock()
		defer mu.Unlock()
		largest = max(largest, len(m.Value))
		return nil
	}
	startConsumer(t, cfg, rec)
	eventually(t, "offset past every message committed", func() bool {
		return committed(t, k, "bomb", inTopic, 1)[0] == 4
	})
	mu.Lock()
	got := largest
	mu.Unlock()
	if got > kafka.MaxDecompressedBatchBytes {
		t.Errorf("a handler was given a value of %d bytes, over the %d-byte limit of a decompressed record batch", got, kafka.MaxDecompressedBatchBytes)
	}
	if offsets := rec.handledOffsets(0); len(offsets) != 2 || offsets[0] != 0 || offsets[1] != 3 {
		t.Errorf("handled offsets %v, want [0 3] (the batch at offsets 1 and 2 dead-lettered)", offsets)
	}
	dead := readPartition(t, k, dlqTopic, 0)
	if len(dead) != 1 {
		t.Fatalf("%d dead letters, want 1 for the batch", len(dead))
	}
	d := dead[0]
	for key, want := range map[string]string{HeaderDLQReason: ReasonBatchTooLarge, HeaderDLQOffset: "1", HeaderDLQTopic: k.Topic(inTopic), HeaderDLQPartition: "0"} {
		if got, _ := header(d, key); got != want {
			t.Errorf("header %s = %q, want %q", key, got, want)
		}
	}
	if e, _ := header(d, HeaderDLQError); !strings.Contains(e, "offsets 1 to 2") || !strings.Contains(e, "67108864") {
		t.Errorf("%s = %q, want it to name offsets 1 to 2 and the limit", HeaderDLQError, e)
	}
	if len(d.Value) != 0 {
		t.Errorf("dead letter holds %d value bytes, want none", len(d.Value))
	}
}

// heapHandler handles every message, measuring the live heap (after a
// collection) at each one whose offset is a multiple of every, and drops
// the message.
type heapHandler struct {
	every   int64
	mu      sync.Mutex
	offsets []int64
	peak    uint64
}

func (h *heapHandler) Assigned(context.Context, int, func(time.Time) bool) error { return nil }
func (h *heapHandler) Revoked(int)                                               {}

func (h *heapHandler) Handle(_ context.Context, m kafka.Message) error {
	var ms runtime.MemStats
	if m.Offset%h.every == 0 {
		runtime.GC()
		runtime.ReadMemStats(&ms)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.offsets = append(h.offsets, m.Offset)
	h.peak = max(h.peak, ms.HeapAlloc)
	return nil
}

// A fetch of compressed batches holds each batch as it came (a few KB for
// tens of MiB of zeros) and decompresses one only when its records are
// handed out. Decoded at once, as kafka-go's fetch decoder does, a
// response of many such batches, each within
// kafka.MaxDecompressedBatchBytes, multiplies it: 16 batches of one 32 MiB
// value each held 898 MiB live (on kfake) with the consumer reading
// through that decoder. Here each batch holds 32 records of 1 MiB (each
// within kafka.MaxDecompressedRecordBytes, so all are handed out). The
// live heap while they are handled (measured at each batch's first record,
// while its decompressed bytes are held) stays within ten batches' worth.
func TestCompressedBatchesAreDecompressedOneAtATime(t *testing.T) {
	const batches, perBatch, size = 16, 32, 1 << 20
	k := startKafka(t, topic(inTopic, 1), topic(dlqTopic, 1))
	zeros := make([]byte, size)
	msgs := make([]kafkago.Message, perBatch)
	for i := range msgs {
		msgs[i] = kafkago.Message{Key: []byte("k"), Value: zeros}
	}
	for range batches {
		produceCompressed(t, k.Brokers, k.Topic(inTopic), 0, kafkago.Zstd, msgs...)
	}
	zeros = nil
	msgs = nil
	h := &heapHandler{every: perBatch}
	cfg := testConfig(k, "lazy")
	cfg.Registerer = prometheus.NewRegistry()
	startConsumer(t, cfg, h)
	eventually(t, "every record handled", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.offsets) == batches*perBatch
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	if limit := uint64(10 * perBatch * size); h.peak > limit {
		t.Errorf("live heap reached %d MiB while handling %d batches of %d MiB each, over %d MiB", h.peak>>20, batches, perBatch*size>>20, limit>>20)
	}
	t.Logf("live heap peak %d MiB", h.peak>>20)
}
