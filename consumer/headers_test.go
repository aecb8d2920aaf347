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

// A record's header count is the producer's: each header takes two bytes
// on the wire (empty key and value) and 40 in a kafka-go Message, so a
// record of 2 MiB held a million headers, 40 MiB. A record with more than
// maxRecordHeaders headers is dead-lettered (too_many_headers, its key and
// value kept, its headers not) and its batch's other records are handled.
func TestRecordWithTooManyHeadersIsDeadLettered(t *testing.T) {
	k := startKafka(t, topic(inTopic, 1), topic(dlqTopic, 1))
	many := make([]kafkago.Header, 100_000)
	produceCompressed(t, k.Brokers, k.Topic(inTopic), 0, kafkago.Zstd,
		kafkago.Message{Key: []byte("k-small"), Value: []byte("small")},
		kafkago.Message{Key: []byte("k-many"), Value: []byte("many"), Headers: many},
		kafkago.Message{Key: []byte("k-small2"), Value: []byte("small2")})

	cfg := testConfig(k, "headers")
	cfg.Registerer = prometheus.NewRegistry()
	rec := newRecorder()
	var mu sync.Mutex
	most := 0
	rec.onHandle = func(_ context.Context, m kafka.Message) error {
		mu.Lock()
		defer mu.Unlock()
		most = max(most, len(m.Headers))
		return nil
	}
	startConsumer(t, cfg, rec)
	eventually(t, "offset past every message committed", func() bool {
		return committed(t, k, "headers", inTopic, 1)[0] == 3
	})
	mu.Lock()
	got := most
	mu.Unlock()
	if got > maxRecordHeaders {
		t.Errorf("a handler was given a message of %d headers, over %d", got, maxRecordHeaders)
	}
	if offsets := rec.handledOffsets(0); len(offsets) != 2 || offsets[0] != 0 || offsets[1] != 2 {
		t.Errorf("handled offsets %v, want [0 2]", offsets)
	}
	dead := readPartition(t, k, dlqTopic, 0)
	if len(dead) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dead))
	}
	d := dead[0]
	for key, want := range map[string]string{HeaderDLQReason: ReasonTooManyHeaders, HeaderDLQOffset: "1"} {
		if got, _ := header(d, key); got != want {
			t.Errorf("header %s = %q, want %q", key, got, want)
		}
	}
	if e, _ := header(d, HeaderDLQError); !strings.Contains(e, "100000 headers") {
		t.Errorf("%s = %q, want it to name the record's 100000 headers", HeaderDLQError, e)
	}
	if string(d.Key) != "k-many" || string(d.Value) != "many" {
		t.Errorf("dead letter key %q value %q, want the record's", d.Key, d.Value)
	}
}
