package opclient

import (
	"context"
	"testing"
	"time"

	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/kafka/kafkatest"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/schemas"
)

// TestSignedRequestNamesItsClusterAndTopic: an operator's command signs a
// request for the cluster it writes to (the id its brokers give) and the
// requests topic; the daemon verifies with the id it asks the same brokers
// for (kafka.Client.ClusterID, as internal/daemon does) and the topic it
// reads the request from. Signed for another cluster or topic, it does not
// verify (ingest's TestRequestSignedForAnotherDeploymentIsRefused).
func TestSignedRequestNamesItsClusterAndTopic(t *testing.T) {
	kc := kafkatest.Start(t, kafkatest.Topic{Name: "wap.requests", Partitions: 1})
	topic := kc.Topic("wap.requests")
	cfg := &config.Config{}
	cfg.Defaults()
	cfg.Kafka.Brokers = kc.Brokers
	target, err := Of(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	key := []byte("alice-signing-key-0123")
	target.SignAs("alice", key)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := schemas.RevertRequested{RequestID: "q", BatchID: "b", Dataset: "billing", Reason: "bad rows", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}
	msg, err := target.Send(ctx, topic, req, -1)
	if err != nil {
		t.Fatal(err)
	}
	daemon, err := kafka.NewClient(kc.Brokers, kafka.Security{})
	if err != nil {
		t.Fatal(err)
	}
	defer daemon.Close()
	cluster, err := daemon.ClusterID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got kafka.Message
	if err := target.ReadPartitions(ctx, topic, map[int]int64{0: msg.Offset}, nil, func(m kafka.Message) bool { got = m; return true }); err != nil {
		t.Fatal(err)
	}
	sig, _ := kafka.HeaderValue(got.Headers, schemas.HeaderSignature)
	by, _ := kafka.HeaderValue(got.Headers, schemas.HeaderOperator)
	verify := func(scope schemas.RequestScope) bool {
		return schemas.VerifyRequest(key, scope, string(got.Key), got.Value, sig)
	}
	if by != "alice" || !verify(schemas.RequestScope{Cluster: cluster, Topic: topic}) {
		t.Fatalf("the request as written (operator %q) does not verify for cluster %q and topic %s", by, cluster, topic)
	}
	for _, other := range []schemas.RequestScope{{Cluster: cluster + "-staging", Topic: topic}, {Cluster: cluster, Topic: topic + "-team-b"}} {
		if verify(other) {
			t.Errorf("the request verifies for %+v, not where it was written", other)
		}
	}
	t.Logf("cluster id %q (%s)", cluster, kc.Backend())
}
