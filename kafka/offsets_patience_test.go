package kafka_test

import (
	"context"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/kafka/kafkatest"
)

// A broker that keeps answering an error that passes is asked again only
// for the patience, and the error then names the broker's answer and how
// often it was asked.
func TestListOffsetsGivesUpAfterItsPatienceNamingTheError(t *testing.T) {
	f, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "results"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	answered := kafkatest.AnswerListOffsets(f, kerr.UnknownServerError.Code, true)
	transport := &kafkago.Transport{}
	defer transport.CloseIdleConnections()
	client := &kafkago.Client{Addr: kafkago.TCP(f.ListenAddrs()...), Transport: transport, Timeout: 10 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = kafka.ListOffsetsWithin(ctx, 500*time.Millisecond, client, &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{"results": {kafkago.LastOffsetOf(0)}}})
	if err == nil {
		t.Fatal("offsets read from a broker that answers nothing but UNKNOWN_SERVER_ERROR")
	}
	if msg := err.Error(); !strings.Contains(msg, "results/0") || !strings.Contains(msg, "Unknown") || !strings.Contains(msg, "asked") {
		t.Errorf("gave up with %q; want the partition, the broker's error and how often it was asked", msg)
	}
	if n := answered.Load(); n < 2 {
		t.Errorf("asked %d times, want it asked again", n)
	}
	if ctx.Err() != nil {
		t.Errorf("asked until the caller's context ended, want it to give up after its patience")
	}
}
