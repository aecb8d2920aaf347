package consumer

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/lakewap/lakewap/kafka/kafkatest"
)

// The partition's leader moves to another broker while the consumer reads
// it: the fetches to the old leader are answered NOT_LEADER_OR_FOLLOWER,
// and the consumer follows the new leader (its transport's metadata) and
// reads on, nothing lost or handled twice.
func TestPartitionLeaderMoves(t *testing.T) {
	k := kafkatest.StartFake(t, kfake.NumBrokers(3), kfake.SeedTopics(1, inTopic), kfake.SeedTopics(1, dlqTopic))
	rec := newRecorder()
	startConsumer(t, testConfig(k, "leader"), rec)
	produce(t, k, inTopic, 0, values("before")...)
	eventually(t, "the first message handled", func() bool { return len(handledValues(rec, 0)) == 1 })
	from := k.Fake.LeaderFor(inTopic, 0)
	to := (from + 1) % 3
	if err := k.Fake.MoveTopicPartition(inTopic, 0, to); err != nil {
		t.Fatal(err)
	}
	produce(t, k, inTopic, 0, values("after")...)
	eventually(t, "the message written after the move handled", func() bool { return len(handledValues(rec, 0)) >= 2 })
	if got, want := handledValues(rec, 0), []string{"before", "after"}; !slices.Equal(got, want) {
		t.Errorf("handled %q, want %q", got, want)
	}
}
