package consumer

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/kafka/kafkatest"
)

// A poison message whose error text grows with its input, and one whose
// dead letter is over the dead-letter topic's max.message.bytes: both are
// dead-lettered (the error clipped; the second without its original value,
// saying so) and the partition moves on to the good message after them.
func TestDeadLetterStaysWithinTheTopicsLimits(t *testing.T) {
	k := startKafka(t, topic(inTopic, 1),
		kafkatest.Topic{Name: dlqTopic, Partitions: 1, Configs: map[string]string{"max.message.bytes": "8192"}})
	big := strings.Repeat("v", 7500) // fits the input topic, not with headers into the dead-letter topic
	produce(t, k, inTopic, 0,
		kafkago.Message{Key: []byte("k-long-error"), Value: []byte("long-error")},
		kafkago.Message{Key: []byte("k-big"), Value: []byte(big), Headers: []kafkago.Header{{Key: "h", Value: []byte(strings.Repeat("h", 1500))}}},
		kafkago.Message{Key: []byte("k-good"), Value: []byte("good")})
	cfg := testConfig(k, "dlq-budget")
	cfg.Registerer = prometheus.NewRegistry()
	rec := newRecorder()
	rec.onHandle = func(_ context.Context, m kafka.Message) error {
		switch string(m.Key) {
		case "k-long-error":
			return Poison(errors.New(strings.Repeat("bad field; ", 100000)), "invalid")
		case "k-big":
			return Poison(errors.New("too big to matter"), "invalid")
		}
		return nil
	}
	startConsumer(t, cfg, rec)
	eventually(t, "offset past every message committed", func() bool {
		return committed(t, k, "dlq-budget", inTopic, 1)[0] == 3
	})
	dead := readPartition(t, k, dlqTopic, 0)
	if len(dead) != 2 {
		t.Fatalf("%d dead letters, want 2", len(dead))
	}
	if e, _ := header(dead[0], HeaderDLQError); len(e) > MaxDLQErrorBytes || !strings.HasPrefix(e, "bad field; ") || !strings.Contains(e, "bytes clipped") {
		t.Errorf("wap.dlq.error has %d bytes: %.100q…", len(e), e)
	}
	if string(dead[0].Value) != "long-error" {
		t.Errorf("first dead letter value %q", dead[0].Value)
	}
	d := dead[1]
	if string(d.Key) != "k-big" || len(d.Value) != 0 {
		t.Errorf("second dead letter key %q, %d value bytes; want k-big without its value", d.Key, len(d.Value))
	}
	if got, _ := header(d, HeaderDLQDropped); !strings.Contains(got, "value of 7500 bytes and 1 headers") {
		t.Errorf("%s = %q", HeaderDLQDropped, got)
	}
	for key, want := range map[string]string{HeaderDLQReason: "invalid", HeaderDLQOffset: "1", HeaderDLQError: "too big to matter"} {
		if got, _ := header(d, key); got != want {
			t.Errorf("header %s = %q, want %q", key, got, want)
		}
	}
	if got := rec.handledOffsets(0); len(got) != 1 || got[0] != 2 {
		t.Errorf("handled offsets %v, want [2]", got)
	}
}
