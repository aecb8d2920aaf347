package consumer

import (
	"context"
	"slices"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/kafka/kafkatest"
)

func TestSASLMechanismsAgainstBroker(t *testing.T) {
	// SASL users exist on kfake only: this test does not change backend.
	k := kafkatest.StartFake(t,
		kfake.EnableSASL(),
		kfake.Superuser(kafka.SASLPlain, "plain-user", "pw-plain"),
		kfake.Superuser(kafka.SASLScramSHA256, "scram256-user", "pw-256"),
		kfake.Superuser(kafka.SASLScramSHA512, "scram512-user", "pw-512"),
	)
	brokers := k.Brokers
	ctx := context.Background()
	users := map[string][2]string{
		kafka.SASLPlain:       {"plain-user", "pw-plain"},
		kafka.SASLScramSHA256: {"scram256-user", "pw-256"},
		kafka.SASLScramSHA512: {"scram512-user", "pw-512"},
	}
	for mech, up := range users {
		t.Run(mech, func(t *testing.T) {
			sec := kafka.Security{SASL: &kafka.SASLConfig{Mechanism: mech, Username: up[0], Password: up[1]}}
			if err := ensureTopics(t, ctx, brokers, sec, kafka.TopicSpec{Name: inTopic, Partitions: 1}, kafka.TopicSpec{Name: dlqTopic, Partitions: 1}, ChangelogTopic("", inTopic)); err != nil {
				t.Fatalf("EnsureTopics over %s: %v", mech, err)
			}
			cl, err := NewChangelog(ChangelogConfig{Brokers: brokers, Security: sec})
			if err != nil {
				t.Fatal(err)
			}
			if err := cl.Put(ctx, 0, "user-"+mech, []byte(mech)); err != nil {
				t.Fatalf("Put over %s: %v", mech, err)
			}
			state, err := cl.Load(ctx, 0)
			if err != nil || string(state["user-"+mech]) != mech {
				t.Fatalf("Load over %s = %v, %v", mech, state, err)
			}

			bad := kafka.Security{SASL: &kafka.SASLConfig{Mechanism: mech, Username: up[0], Password: "wrong"}}
			badCl, err := NewChangelog(ChangelogConfig{Brokers: brokers, Security: bad, Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if err := badCl.Put(ctx, 0, "k", []byte("v")); err == nil {
				t.Errorf("Put with a wrong %s password succeeded", mech)
			}
		})
	}

	// The consumer's own paths (group membership, fetch, commit) over SCRAM.
	sec := kafka.Security{SASL: &kafka.SASLConfig{Mechanism: kafka.SASLScramSHA512, Username: "scram512-user", Password: "pw-512"}}
	transport, err := sec.Transport()
	if err != nil {
		t.Fatal(err)
	}
	client := &kafkago.Client{Addr: kafkago.TCP(brokers...), Timeout: 10 * time.Second, Transport: transport}
	res, err := client.Produce(ctx, &kafkago.ProduceRequest{
		Topic: inTopic, Partition: 0, RequiredAcks: kafkago.RequireAll,
		Records: kafkago.NewRecordReader(kafkago.Record{Value: kafkago.NewBytes([]byte("secured"))}),
	})
	if err != nil || res.Error != nil {
		t.Fatalf("producing over SCRAM: %v %v", err, res)
	}
	cfg := testConfig(k, "sasl")
	cfg.Security = sec
	rec := newRecorder()
	startConsumer(t, cfg, rec)
	eventually(t, "message handled and committed over SCRAM", func() bool {
		of, err := client.OffsetFetch(ctx, &kafkago.OffsetFetchRequest{GroupID: "sasl", Topics: map[string][]int{inTopic: {0}}})
		return err == nil && len(of.Topics[inTopic]) == 1 && of.Topics[inTopic][0].CommittedOffset == 1
	})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !slices.Equal(rec.handled[0], []string{"secured"}) {
		t.Errorf("handled %v", rec.handled[0])
	}
}
