package ingest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lakewap/lakewap/kafka"

	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/schemas"
)

// TestRequestSignedForAnotherDeploymentIsRefused: an operator's key signs
// requests for every daemon that lists it (staging and production, two
// teams' daemons on one cluster), and a signature covered only the message
// key and value. A revert alice signed for staging's batch b, read off
// staging's requests topic by someone with a leaked Write right on
// production's, was carried out by production on its own batch b (the
// dataset and batch ids of a staging fed like production are the same,
// and production's run of b is younger than the request, so not stale);
// so was one copied from another team's requests topic on the same
// cluster. A signature now names the Kafka cluster (its id) and the
// requests topic it was made for.
func TestRequestSignedForAnotherDeploymentIsRefused(t *testing.T) {
	codec, encode := testEncoder(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	key := []byte("alice-signing-key-0123") // alice's one key, listed by every deployment
	revert := encode(schemas.RevertRequested{RequestID: "q", BatchID: "b", Dataset: "billing", Reason: "bad rows", RequestedBy: "alice", OccurredAt: now})
	// What alice's lakewap revert wrote for the deployment at cluster and topic.
	signedFor := func(cluster, topic string) []kafka.Header {
		return []kafka.Header{{Key: schemas.HeaderOperator, Value: []byte("alice")},
			{Key: schemas.HeaderSignature, Value: []byte(schemas.SignRequest(key, schemas.RequestScope{Cluster: cluster, Topic: topic}, "b", revert))}}
	}
	for _, c := range []struct {
		name, cluster, topic string
		wantReason           string
	}{
		{"signed for production", "prod-cluster", "wap.requests", ""},
		{"signed for staging (another cluster)", "staging-cluster", "wap.requests", ReasonUnsigned},
		{"signed for another team's topic on this cluster", "prod-cluster", "team-b.requests", ReasonUnsigned},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &runner{}
			// Production's daemon: cluster prod-cluster, requests topic wap.requests.
			h := Wrap(Config{Codec: codec, RequestsTopic: "wap.requests", Cluster: "prod-cluster", Operators: map[string][]byte{"alice": key}, Rules: schemas.Rules{}}, r)
			err := h.Handle(context.Background(), kafka.Message{Topic: "wap.requests", Key: []byte("b"), Value: revert, Headers: signedFor(c.cluster, c.topic)})
			var p *consumer.PoisonError
			switch {
			case c.wantReason == "" && (err != nil || len(r.handled) != 1):
				t.Fatalf("error %v, %d applied; want it applied", err, len(r.handled))
			case c.wantReason != "" && (!errors.As(err, &p) || p.Reason != c.wantReason || len(r.handled) > 0):
				t.Fatalf("error %v, %d applied; want dead letter %s: production reverted its batch b on a request signed for %s %s",
					err, len(r.handled), c.wantReason, c.cluster, c.topic)
			}
		})
	}
}
