package harness

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/kafka/kafkatest"
	"github.com/lakewap/lakewap/schemas"
)

// The watcher reads on after a read of the results topic fails. kafka-go's
// reader hands the caller a broker's error code on a fetch (and its
// connection's failure after three tries to set up); the watcher's one
// ReadPartitions then returned, the error was dropped, and every Await
// after it waited for its context: a system test whose daemons published
// looked like batches that never settled (a two-instance interleavings run
// on a loaded machine stopped making progress, and its seed replayed
// passed in 9 s).
func TestWatcherReadsOnAfterAReadError(t *testing.T) {
	c := kafkatest.StartFake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	topic := c.Topic("results")
	if err := c.CreateTopics(ctx, kafkatest.Topic{Name: topic}); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Kafka: config.Kafka{Brokers: c.Brokers, ResultsTopic: topic}}
	codec, err := cfg.Kafka.Codec()
	if err != nil {
		t.Fatal(err)
	}
	w, err := WatchResults(ctx, cfg, codec)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	client, err := kafka.NewClient(c.Brokers, kafka.Security{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	writer := client.Writer(kafka.WriterConfig{Topic: topic, Attempts: 3})
	defer writer.Close()
	publish := func(batch string) {
		t.Helper()
		ev := schemas.BatchPublished{EventID: batch + "-published", BatchID: batch, Dataset: "billing", Repository: "lake",
			Branch: "wap-billing-" + batch, TargetRef: "main", CommitID: "c-" + batch, PublishedAt: time.Now().UTC().Truncate(time.Millisecond)}
		v, err := codec.Encode(ctx, topic, ev)
		if err != nil {
			t.Fatal(err)
		}
		if err := writer.Write(ctx, kafka.Message{Key: []byte(batch), Value: v}); err != nil {
			t.Fatal(err)
		}
	}
	publish("before")
	if _, err := w.Await(ctx, "before", schemas.TypeBatchPublished); err != nil {
		t.Fatal(err)
	}

	// The next fetch answers a storage error for every partition it asks.
	failed := make(chan struct{})
	c.Fake.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		r := req.(*kmsg.FetchRequest)
		resp := r.ResponseKind().(*kmsg.FetchResponse)
		for _, rt := range r.Topics {
			st := kmsg.NewFetchResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewFetchResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.KafkaStorageError.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		close(failed)
		return resp, nil, true
	})
	select {
	case <-failed:
	case <-ctx.Done():
		t.Fatal("the watcher fetched nothing")
	}
	publish("after")
	wait, stop := context.WithTimeout(ctx, 20*time.Second)
	defer stop()
	if _, err := w.Await(wait, "after", schemas.TypeBatchPublished); err != nil {
		t.Fatalf("a result published after a failed fetch: %v", err)
	}
}

// The watcher asks for the results topic's offsets again when a broker
// answers them with an error that passes. Apache Kafka 4.4.0 on a loaded
// machine answered a topic made moments ago with UNKNOWN_SERVER_ERROR for a
// partition's offsets, and the system test whose stack was starting failed
// at once (TestRelinkedObjectMergedIntoABatchIsRefused,
// TestReplayedChangelogRecordIsSetAside).
func TestWatcherAsksForOffsetsAgainAfterABrokerError(t *testing.T) {
	c := kafkatest.StartFake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	topic := c.Topic("results")
	if err := c.CreateTopics(ctx, kafkatest.Topic{Name: topic}); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Kafka: config.Kafka{Brokers: c.Brokers, ResultsTopic: topic}}
	codec, err := cfg.Kafka.Codec()
	if err != nil {
		t.Fatal(err)
	}
	// The first offsets request answers UNKNOWN_SERVER_ERROR for every
	// partition; kfake answers the ones after it.
	answered := kafkatest.AnswerListOffsets(c.Fake, kerr.UnknownServerError.Code, false)
	w, err := WatchResults(ctx, cfg, codec)
	if err != nil {
		t.Fatalf("a broker's passing error on the results topic's offsets: %v", err)
	}
	defer w.Close()
	if n := answered.Load(); n != 1 {
		t.Fatalf("the failing answer was given %d times, want 1", n)
	}
}
