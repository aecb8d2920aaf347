package ingest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/schemas"
)

// TestRequestSignedWhereBrokersNameNoClusterIsScopedByDeployment (review
// 51): brokers that report no cluster id left a signature scoped by the
// requests topic alone, so a revert alice signed for staging (brokers with
// no id, topic wap.requests) was carried out by production's daemon (also
// no id, the same topic name, alice's key listed). A deployment whose
// brokers name no cluster now needs kafka.deployment_id, on its daemons
// and in its operators' configs, which the signature names; without one a
// daemon refuses every signed request (and does not start). Where the
// brokers name a cluster, a deployment id is optional and, when set, named
// too.
func TestRequestSignedWhereBrokersNameNoClusterIsScopedByDeployment(t *testing.T) {
	codec, encode := testEncoder(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	key := []byte("alice-signing-key-0123")
	revert := encode(schemas.RevertRequested{RequestID: "q", BatchID: "b", Dataset: "billing", Reason: "bad rows", RequestedBy: "alice", OccurredAt: now})
	signedFor := func(scope schemas.RequestScope) []kafka.Header {
		return []kafka.Header{{Key: schemas.HeaderOperator, Value: []byte("alice")},
			{Key: schemas.HeaderSignature, Value: []byte(schemas.SignRequest(key, scope, "b", revert))}}
	}
	for _, c := range []struct {
		name           string
		daemon, signed schemas.RequestScope
		applied        bool
		detail         string
	}{
		{"no cluster id, no deployment id: another deployment's request", schemas.RequestScope{Topic: "wap.requests"},
			schemas.RequestScope{Topic: "wap.requests"}, false, "kafka.deployment_id"},
		{"no cluster id, deployment prod: its own request", schemas.RequestScope{Deployment: "prod", Topic: "wap.requests"},
			schemas.RequestScope{Deployment: "prod", Topic: "wap.requests"}, true, ""},
		{"no cluster id, deployment prod: staging's request", schemas.RequestScope{Deployment: "prod", Topic: "wap.requests"},
			schemas.RequestScope{Deployment: "staging", Topic: "wap.requests"}, false, "deployment"},
		{"no cluster id, deployment prod: a request naming none", schemas.RequestScope{Deployment: "prod", Topic: "wap.requests"},
			schemas.RequestScope{Topic: "wap.requests"}, false, "deployment"},
		{"cluster c1, deployment prod: its own request", schemas.RequestScope{Cluster: "c1", Deployment: "prod", Topic: "wap.requests"},
			schemas.RequestScope{Cluster: "c1", Deployment: "prod", Topic: "wap.requests"}, true, ""},
		{"cluster c1, deployment prod: a request naming the cluster only", schemas.RequestScope{Cluster: "c1", Deployment: "prod", Topic: "wap.requests"},
			schemas.RequestScope{Cluster: "c1", Topic: "wap.requests"}, false, ""},
		{"cluster c1: its own request, as before", schemas.RequestScope{Cluster: "c1", Topic: "wap.requests"},
			schemas.RequestScope{Cluster: "c1", Topic: "wap.requests"}, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &runner{}
			h := Wrap(Config{Codec: codec, RequestsTopic: "wap.requests", Cluster: c.daemon.Cluster, Deployment: c.daemon.Deployment,
				Operators: map[string][]byte{"alice": key}, Rules: schemas.Rules{}}, r)
			err := h.Handle(context.Background(), kafka.Message{Topic: "wap.requests", Key: []byte("b"), Value: revert, Headers: signedFor(c.signed)})
			var p *consumer.PoisonError
			switch {
			case c.applied && (err != nil || len(r.handled) != 1):
				t.Fatalf("error %v, %d applied; want it applied", err, len(r.handled))
			case !c.applied && (!errors.As(err, &p) || p.Reason != ReasonUnsigned || len(r.handled) > 0):
				t.Fatalf("error %v, %d applied; want dead letter %s: a daemon at %+v carried out a request signed for %+v", err, len(r.handled), ReasonUnsigned, c.daemon, c.signed)
			case !c.applied && !strings.Contains(err.Error(), c.detail):
				t.Errorf("refusal %q does not name %q", err, c.detail)
			}
		})
	}
}
