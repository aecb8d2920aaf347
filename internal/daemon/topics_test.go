package daemon

import (
	"context"
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
	kp, err := connectKafka(ctx, cfg.Kafka)
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
	kp, err = connectKafka(ctx, cfg.Kafka)
	if err != nil {
		t.Fatalf("connectKafka with every topic: %v", err)
	}
	kp.client.Close()
}
