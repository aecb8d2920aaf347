package runner

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/lakewap/lakewap/schemas"
)

// TestRevertsQueueWaitIsRecorded: a revert takes its turn in the target's
// publish queue (revertInTurn), so its wait is in
// lakewap_publish_queue_wait_seconds too, under kind="revert", apart from
// the publishes' (kind="publish"). Before, only publishes were timed and a
// revert's wait was nowhere.
func TestRevertsQueueWaitIsRecorded(t *testing.T) {
	f := newRunnerFixture(t)
	go func() {
		for range f.notes.ch {
		}
	}()
	f.land(t, "b1")
	f.awaitRunPublished(t, "b1")
	now := time.Now().UTC().Truncate(time.Millisecond)
	if err := f.r.Handle(context.Background(), 0, schemas.RevertRequested{RequestID: "q1", BatchID: "b1", Dataset: "billing",
		Reason: "wrong rows", RequestedBy: "bob", OccurredAt: now}, schemas.TraceContext{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.awaitAnswer(t, "b1", "q1").(schemas.BatchReverted); !ok {
		t.Fatal("the revert of b1 was not answered BatchReverted")
	}
	waits := map[string]uint64{} // kind -> samples
	ch := make(chan prometheus.Metric, 16)
	go func() { f.r.metrics.waited.Collect(ch); close(ch) }()
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		labels := map[string]string{}
		for _, l := range d.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["repository"] != "lake" || labels["target"] != "main" {
			t.Errorf("a queue wait of %v, want lake/main only", labels)
		}
		waits[labels["kind"]] += d.GetHistogram().GetSampleCount()
	}
	if waits["publish"] != 1 || waits["revert"] != 1 || len(waits) != 2 {
		t.Errorf("queue waits by kind %v, want one publish and one revert", waits)
	}
}
