package kafka_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/kafka/kafkatest"
)

// offsetsFixture is a kfake broker with a topic of two partitions holding
// nothing, and lakewap's client of it.
func offsetsFixture(t *testing.T) (*kafkatest.Cluster, *kafka.Client, string) {
	t.Helper()
	c := kafkatest.StartFake(t)
	topic := c.Topic("results")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.CreateTopics(ctx, kafkatest.Topic{Name: "results", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	kc, err := kafka.NewClient(c.Brokers, kafka.Security{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	return c, kc, topic
}

// A broker short of CPU answers a fresh topic's offsets with an error that
// passes (Apache Kafka 4.4.0 under load: UNKNOWN_SERVER_ERROR); the
// operator's commands (lakewap tail, revert, retry, cancel) read the
// results topic's offsets first and failed at once on it. They ask again.
func TestOffsetsAskAgainAfterABrokersPassingError(t *testing.T) {
	for _, code := range []int16{kerr.UnknownServerError.Code, kerr.NotLeaderForPartition.Code, kerr.LeaderNotAvailable.Code, kerr.RequestTimedOut.Code} {
		t.Run(kerr.ErrorForCode(code).Error(), func(t *testing.T) {
			c, kc, topic := offsetsFixture(t)
			answered := kafkatest.AnswerListOffsets(c.Fake, code, false)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			first, next, err := kc.Offsets(ctx, topic)
			if err != nil {
				t.Fatalf("offsets after one answer of %s: %v, want them read again", kerr.ErrorForCode(code), err)
			}
			if n := answered.Load(); n != 1 {
				t.Errorf("the failing answer was given %d times, want 1", n)
			}
			if len(first) != 2 || len(next) != 2 || first[0] != 0 || next[1] != 0 {
				t.Errorf("offsets first %v next %v, want both partitions at 0", first, next)
			}
		})
	}
}

// An error that does not pass (the principal may not describe the topic)
// is answered at once, named, not asked again until the patience ends.
func TestOffsetsDoNotAskAgainAfterAPermanentError(t *testing.T) {
	c, kc, topic := offsetsFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// kafka-go splits one read into several requests (a partition's first
	// and last offsets go apart): how many one read makes.
	var requests atomic.Int32
	c.Fake.ControlKey(int16(kmsg.ListOffsets), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.Fake.KeepControl()
		requests.Add(1)
		return nil, nil, false
	})
	if _, _, err := kc.Offsets(ctx, topic); err != nil {
		t.Fatal(err)
	}
	once := requests.Load()
	answered := kafkatest.AnswerListOffsets(c.Fake, kerr.TopicAuthorizationFailed.Code, true)
	_, _, err := kc.Offsets(ctx, topic)
	if err == nil || !strings.Contains(err.Error(), "Topic Authorization Failed") {
		t.Fatalf("offsets refused by the broker: %v, want the broker's error named", err)
	}
	if n := answered.Load(); n != once {
		t.Errorf("asked %d times for offsets the broker refuses, want %d (one read)", n, once)
	}
}
