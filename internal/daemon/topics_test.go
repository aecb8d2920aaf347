package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/kafka/kafkatest"
)

// With kafka.create_topics false, a topic that does not exist stops
// start-up naming its field. Before, the consumer group subscribed to it and
// kafka-go rejoined every few milliseconds, forever, with partitions=[]
// (a config without requests_topic hung TestGracefulShutdownHandsBackWork
// on Apache Kafka, where wap.requests did not exist).
func TestMissingTopicStopsStartUpNamingTheField(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Topic{Name: "in", Partitions: 2}, kafkatest.Topic{Name: "out", Partitions: 2},
		kafkatest.Topic{Name: "dlq", Partitions: 2}, kafkatest.Topic{Name: "runs", Partitions: 2, Configs: map[string]string{"cleanup.policy": "compact"}})
	no := false
	k := config.Kafka{Brokers: c.Brokers, CreateTopics: &no, InputTopic: c.Topic("in"), ResultsTopic: c.Topic("out"),
		DeadLetterTopic: c.Topic("dlq"), ChangelogTopic: c.Topic("runs"), RequestsTopic: c.Topic("requests")}
	cfg := config.Config{Kafka: k}
	cfg.Defaults()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kp, err := connectKafka(ctx, &cfg, nil)
	if err == nil {
		kp.client.Close()
		t.Fatal("connectKafka with a missing requests topic and create_topics false: no error")
	}
	for _, want := range []string{"kafka.requests_topic", c.Topic("requests"), "does not exist", "kafka.create_topics"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}

	// Every topic there: start-up goes on.
	if err := c.CreateTopics(ctx, kafkatest.Topic{Name: "requests", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	kp, err = connectKafka(ctx, &cfg, nil)
	if err != nil {
		t.Fatalf("connectKafka with every topic: %v", err)
	}
	kp.client.Close()
}

// A topic that takes smaller messages than lakewap writes there stops
// start-up, naming the field, the topic's max.message.bytes and what must
// fit. Before, the daemon started on a changelog taking 64 KiB with
// runner.max_run_bytes at 256 KiB: the first run record over 64 KiB was
// refused on every attempt, and its partition waited for ever; a results
// topic below the largest BranchReady, or a dead-letter topic below a dead
// letter without its original, wedged the same way.
func TestTopicTakingSmallerMessagesStopsStartUp(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "state.key")
	if err := os.WriteFile(keyFile, []byte(strings.Repeat("k", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, topic, field string
		max                int
		keyed              bool // runner.state_key_file: a restore writes up to 512 KiB at once
		want               []string
	}{
		{"changelog", "runs", "kafka.changelog_topic", 65536, false, []string{"65536", "runner.max_run_bytes"}},
		{"changelog of a keyed store", "runs", "kafka.changelog_topic", 300000, true, []string{"300000", "524288", "runner.state_key_file"}},
		{"results", "out", "kafka.results_topic", 16384, false, []string{"16384", "65536"}},
		{"dead letters", "dlq", "kafka.dead_letter_topic", 2048, false, []string{"2048", "8192"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			configs := func(name string, cfg map[string]string) map[string]string {
				if name == tc.topic {
					cfg["max.message.bytes"] = strconv.Itoa(tc.max)
				}
				return cfg
			}
			c := kafkatest.Start(t, kafkatest.Topic{Name: "in", Partitions: 2}, kafkatest.Topic{Name: "requests", Partitions: 2},
				kafkatest.Topic{Name: "out", Partitions: 2, Configs: configs("out", map[string]string{})},
				kafkatest.Topic{Name: "dlq", Partitions: 2, Configs: configs("dlq", map[string]string{})},
				kafkatest.Topic{Name: "runs", Partitions: 2, Configs: configs("runs", map[string]string{"cleanup.policy": "compact"})})
			k := config.Kafka{Brokers: c.Brokers, InputTopic: c.Topic("in"), ResultsTopic: c.Topic("out"),
				DeadLetterTopic: c.Topic("dlq"), ChangelogTopic: c.Topic("runs"), RequestsTopic: c.Topic("requests")}
			cfg := config.Config{Kafka: k}
			cfg.Defaults()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if tc.keyed {
				// Without the key, a run record fits 300000 bytes.
				kp, err := connectKafka(ctx, &cfg, nil)
				if err != nil {
					t.Fatalf("connectKafka with a changelog of 300000 bytes, no state key: %v", err)
				}
				kp.client.Close()
				cfg.Runner.StateKeyFile = keyFile
			}
			kp, err := connectKafka(ctx, &cfg, nil)
			if err == nil {
				kp.client.Close()
				t.Fatalf("connectKafka with %s taking %d-byte messages: no error", tc.topic, tc.max)
			}
			for _, want := range append([]string{tc.field, c.Topic(tc.topic), "max.message.bytes"}, tc.want...) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
		})
	}
}

// A requests topic with another partition count than the input topic stops
// start-up, naming its field and both counts. Requests partition n is
// handled by the owner of input partition n, and before, the daemon started
// on a one-partition requests topic beside a four-partition input: every
// request went to the owner of input partition 0, which holds a quarter of
// the runs (a cancel of a batch it does not hold announced BatchAborted
// while the batch went on and could publish).
func TestRequestsTopicOfAnotherPartitionCountStopsStartUp(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Topic{Name: "in", Partitions: 4}, kafkatest.Topic{Name: "requests", Partitions: 1})
	k := config.Kafka{Brokers: c.Brokers, InputTopic: c.Topic("in"), ResultsTopic: c.Topic("out"),
		DeadLetterTopic: c.Topic("dlq"), ChangelogTopic: c.Topic("runs"), RequestsTopic: c.Topic("requests")}
	cfg := config.Config{Kafka: k}
	cfg.Defaults()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kp, err := connectKafka(ctx, &cfg, nil)
	if err == nil {
		kp.client.Close()
		t.Fatal("connectKafka with a 1-partition requests topic beside a 4-partition input topic: no error")
	}
	for _, want := range []string{c.Topic("requests"), "1 partition", c.Topic("in"), "4"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}
