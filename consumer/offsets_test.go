package consumer

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

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
	var answered atomic.Int32
	k.Fake.ControlKey(int16(kmsg.ListOffsets), func(req kmsg.Request) (kmsg.Response, error, bool) {
		answered.Add(1)
		r := req.(*kmsg.ListOffsetsRequest)
		resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, rt := range r.Topics {
			st := kmsg.NewListOffsetsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.UnknownServerError.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
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
