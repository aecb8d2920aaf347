package kafka

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
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
	var answered atomic.Int32
	f.ControlKey(int16(kmsg.ListOffsets), func(req kmsg.Request) (kmsg.Response, error, bool) {
		f.KeepControl()
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
	transport := &kafkago.Transport{}
	defer transport.CloseIdleConnections()
	client := &kafkago.Client{Addr: kafkago.TCP(f.ListenAddrs()...), Transport: transport, Timeout: 10 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = listOffsets(ctx, 500*time.Millisecond, client, &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{"results": {kafkago.LastOffsetOf(0)}}})
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
