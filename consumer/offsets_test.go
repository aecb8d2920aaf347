package consumer

import (
	"context"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/lakewap/lakewap/kafka/kafkatest"
)

// The changelog's load reads the partition's high-water mark first. A
// broker short of CPU answers it with an error that passes (Apache Kafka
// 4.4.0 under load: UNKNOWN_SERVER_ERROR for a fresh topic's offsets), and
// `lakewap runs`, which loads every partition, failed at once on it. The
// load asks again.
func TestChangelogLoadAsksAgainAfterABrokersPassingError(t *testing.T) {
	k := kafkatest.StartFake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := k.CreateTopics(ctx, kafkatest.Topic{Name: DefaultChangelogTopic, Partitions: 1, Configs: map[string]string{"cleanup.policy": "compact"}}); err != nil {
		t.Fatal(err)
	}
	cl, err := NewChangelog(ChangelogConfig{Brokers: k.Brokers, Topic: k.Topic(DefaultChangelogTopic), Transport: &kafkago.Transport{}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Put(ctx, 0, "run-1", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	answered := kafkatest.AnswerListOffsets(k.Fake, kerr.UnknownServerError.Code, false)
	state, err := cl.Load(ctx, 0)
	if err != nil {
		t.Fatalf("load after one UNKNOWN_SERVER_ERROR for the high-water mark: %v, want it asked again", err)
	}
	if n := answered.Load(); n != 1 {
		t.Errorf("the failing answer was given %d times, want 1", n)
	}
	if string(state["run-1"]) != "v1" {
		t.Errorf("loaded %q, want run-1 = v1", state)
	}
}
