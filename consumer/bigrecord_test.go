package consumer

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/kafka"
)

// A compressed record batch within kafka.MaxDecompressedBatchBytes may
// still hold one record of nearly 64 MiB, of a few KiB compressed, and
// kafka-go's reader queues 100 records ahead of the handler: a producer's
// batches each holding one such record made the consumer hold 60 MiB per
// queued record (12 batches: 721 MiB live while the handler held the
// message before them; 100 of them, 6 GiB). A record of a compressed
// batch over kafka.MaxDecompressedRecordBytes is read as a stand-in record
// at its offset and dead-lettered alone (record_too_large); the batch's
// other records are handled.
func TestOversizedRecordOfACompressedBatchIsDeadLettered(t *testing.T) {
	k := startKafka(t, topic(inTopic, 1), topic(dlqTopic, 1))
	produce(t, k, inTopic, 0, values("before")...)
	produceCompressed(t, k.Brokers, k.Topic(inTopic), 0, kafkago.Zstd,
		kafkago.Message{Key: []byte("k-small"), Value: []byte("small")},
		kafkago.Message{Key: []byte("k-big"), Value: make([]byte, 8<<20)},
		kafkago.Message{Key: []byte("k-small2"), Value: []byte("small2")})
	produce(t, k, inTopic, 0, values("after")...)

	cfg := testConfig(k, "bigrecord")
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
		return committed(t, k, "bigrecord", inTopic, 1)[0] == 5
	})
	mu.Lock()
	got := largest
	mu.Unlock()
	if got > kafka.MaxDecompressedRecordBytes {
		t.Errorf("a handler was given a value of %d bytes, over the %d-byte limit of a decompressed record", got, kafka.MaxDecompressedRecordBytes)
	}
	if offsets := rec.handledOffsets(0); len(offsets) != 4 || offsets[0] != 0 || offsets[1] != 1 || offsets[2] != 3 || offsets[3] != 4 {
		t.Errorf("handled offsets %v, want [0 1 3 4] (the record at offset 2 dead-lettered, its batch's others handled)", offsets)
	}
	dead := readPartition(t, k, dlqTopic, 0)
	if len(dead) != 1 {
		t.Fatalf("%d dead letters, want 1 for the record", len(dead))
	}
	d := dead[0]
	for key, want := range map[string]string{HeaderDLQReason: ReasonRecordTooLarge, HeaderDLQOffset: "2", HeaderDLQTopic: k.Topic(inTopic), HeaderDLQPartition: "0"} {
		if got, _ := header(d, key); got != want {
			t.Errorf("header %s = %q, want %q", key, got, want)
		}
	}
	if e, _ := header(d, HeaderDLQError); !strings.Contains(e, "offset 2 ") || !strings.Contains(e, "2097152") {
		t.Errorf("%s = %q, want it to name offset 2 and the limit", HeaderDLQError, e)
	}
	if len(d.Value) != 0 {
		t.Errorf("dead letter holds %d value bytes, want none", len(d.Value))
	}
}
