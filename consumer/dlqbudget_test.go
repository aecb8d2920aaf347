package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

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

// lineSizes is a log writer that keeps the size of the largest line (one
// record of a JSON handler) and counts the lines.
type lineSizes struct {
	mu      sync.Mutex
	largest int
	lines   int
}

func (l *lineSizes) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.largest = max(l.largest, len(p))
	l.lines++
	return len(p), nil
}

func (l *lineSizes) max() (int, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.largest, l.lines
}

// A poison message whose error quotes its input (ingest quotes a message's
// key when it is not the batch id; a key may be as large as the message)
// is logged within the same budget as its wap.dlq.error header: a log line
// of half a megabyte breaks log shippers and floods the log.
func TestDeadLetterLogLineIsBounded(t *testing.T) {
	k := startKafka(t, topic(inTopic, 1), topic(dlqTopic, 1))
	key := strings.Repeat("k", 512<<10)
	produce(t, k, inTopic, 0,
		kafkago.Message{Key: []byte(key), Value: []byte("v")},
		kafkago.Message{Key: []byte("k-good"), Value: []byte("good")})
	cfg := testConfig(k, "dlq-log-budget")
	cfg.Registerer = prometheus.NewRegistry()
	rec := newRecorder()
	rec.onHandle = func(_ context.Context, m kafka.Message) error {
		if string(m.Key) == "k-good" {
			return nil
		}
		return Poison(fmt.Errorf("unusable event: message key %q is not the batch id %q", m.Key, "b1"), "key_mismatch")
	}
	sizes := &lineSizes{}
	startConsumerLogging(t, cfg, rec, slog.New(slog.NewJSONHandler(sizes, nil)))
	eventually(t, "offset past both messages committed", func() bool {
		return committed(t, k, "dlq-log-budget", inTopic, 1)[0] == 2
	})
	largest, lines := sizes.max()
	if lines == 0 {
		t.Fatal("nothing logged")
	}
	if largest > MaxDLQErrorBytes+1024 {
		t.Errorf("largest log line has %d bytes, more than the dead letter's error (%d) and 1 KiB", largest, MaxDLQErrorBytes)
	}
}

// A dead letter written without its original says what it left out, the
// key included: the key is cut to its first KiB (Kafka keys may be as
// large as the message), and the note says so and how long it was.
func TestDeadLetterWithoutOriginalSaysTheKeyWasCut(t *testing.T) {
	original := kafka.Message{Topic: "in", Key: []byte(strings.Repeat("k", 5000)), Value: []byte("v"),
		Headers: []kafka.Header{{Key: "h", Value: []byte("x")}}}
	dl := withoutOriginal(deadLetter(original, &PoisonError{Reason: "key_mismatch", Err: errors.New("bad key")}, time.Unix(0, 0)), original)
	if len(dl.Key) != 1024 || string(dl.Key) != strings.Repeat("k", 1024) {
		t.Errorf("key of %d bytes kept", len(dl.Key))
	}
	note, _ := header(kafkago.Message{Headers: each(dl.Headers)}, HeaderDLQDropped)
	if !strings.Contains(note, "key of 5000 bytes cut to its first 1024") || !strings.Contains(note, "value of 1 bytes and 1 headers") {
		t.Errorf("%s = %q", HeaderDLQDropped, note)
	}
}

func each(hs []kafka.Header) []kafkago.Header {
	out := make([]kafkago.Header, len(hs))
	for i, h := range hs {
		out[i] = kafkago.Header{Key: h.Key, Value: h.Value}
	}
	return out
}

// A poison message of no value whose key or headers alone fill the input
// topic's limit makes a dead letter over the dead-letter topic's: it is
// written without its original as one with a value is, and the partition
// moves on (the original, key and headers, is what is too large).
func TestDeadLetterOfNoValueStaysWithinTheTopicsLimits(t *testing.T) {
	k := startKafka(t, topic(inTopic, 1),
		kafkatest.Topic{Name: dlqTopic, Partitions: 1, Configs: map[string]string{"max.message.bytes": "8192"}})
	produce(t, k, inTopic, 0,
		kafkago.Message{Key: []byte(strings.Repeat("k", 8150))},
		kafkago.Message{Key: []byte("k-headers"), Headers: []kafkago.Header{{Key: "h", Value: []byte(strings.Repeat("h", 8150))}}},
		kafkago.Message{Key: []byte("k-good"), Value: []byte("good")})
	cfg := testConfig(k, "dlq-no-value")
	cfg.Registerer = prometheus.NewRegistry()
	rec := newRecorder()
	rec.onHandle = func(_ context.Context, m kafka.Message) error {
		if string(m.Key) == "k-good" {
			return nil
		}
		return Poison(errors.New("no value"), "decode")
	}
	startConsumer(t, cfg, rec)
	eventually(t, "offset past every message committed", func() bool {
		return committed(t, k, "dlq-no-value", inTopic, 1)[0] == 3
	})
	dead := readPartition(t, k, dlqTopic, 0)
	if len(dead) != 2 {
		t.Fatalf("%d dead letters, want 2", len(dead))
	}
	for i, d := range dead {
		if got, _ := header(d, HeaderDLQDropped); !strings.Contains(got, "too large for the dead-letter topic") {
			t.Errorf("dead letter %d: %s = %q", i, HeaderDLQDropped, got)
		}
	}
	if len(dead[0].Key) != 1024 {
		t.Errorf("first dead letter keeps %d bytes of its key, want its first 1024", len(dead[0].Key))
	}
	if got := rec.handledOffsets(0); len(got) != 1 || got[0] != 2 {
		t.Errorf("handled offsets %v, want [2]", got)
	}
}

// A dead-letter topic whose max.message.bytes an operator lowered after
// start-up under even a dead letter without its original: the partition
// waits (nothing lost), and the log line it repeats names the topic, the
// bytes refused and the setting to raise.
func TestDeadLetterTopicTooSmallAfterStartSaysWhatToRaise(t *testing.T) {
	k := startKafka(t, topic(inTopic, 1),
		kafkatest.Topic{Name: dlqTopic, Partitions: 1, Configs: map[string]string{"max.message.bytes": "100"}})
	produce(t, k, inTopic, 0, kafkago.Message{Key: []byte("k-bad"), Value: []byte("bad")})
	cfg := testConfig(k, "dlq-too-small")
	cfg.Registerer = prometheus.NewRegistry()
	rec := newRecorder()
	rec.onHandle = func(context.Context, kafka.Message) error { return Poison(errors.New("bad"), "decode") }
	logs := &jsonLines{}
	startConsumerLogging(t, cfg, rec, slog.New(slog.NewJSONHandler(logs, nil)))
	eventually(t, "a log line naming the dead-letter topic and the setting to raise", func() bool {
		for _, l := range logs.with("level", "ERROR") {
			msg, _ := l["msg"].(string)
			if l["dead_letter_topic"] == cfg.DeadLetterTopic && strings.Contains(msg, "max.message.bytes") && l["bytes"] != nil {
				return true
			}
		}
		return false
	})
	if got := committed(t, k, "dlq-too-small", inTopic, 1)[0]; got > 0 {
		t.Errorf("offset %d committed past a message whose dead letter was not written", got)
	}
}
