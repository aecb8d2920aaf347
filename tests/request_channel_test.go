package tests

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/internal/opclient"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// awaitMetric waits until the daemon's metric reaches want.
func (e *e2e) awaitMetric(t *testing.T, ctx context.Context, name string, labels map[string]string, want float64) {
	t.Helper()
	url := "http://" + e.d.HTTPAddr() + "/metrics"
	now := func() float64 { // 0 until the series exists
		sum := 0.0
		for _, m := range matching(scrape(t, url), name, labels) {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
		return sum
	}
	for now() < want {
		select {
		case <-ctx.Done():
			t.Fatalf("%s%v never reached %v (now %v)", name, labels, want, now())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestProducerRequestsOnTheInputTopicChangeNothing is the attack of an
// upstream producer, through the real ingest stage on Kafka and the real
// lakeFS server: a RevertRequested, a RetryRequested and an operator's
// BatchCancelled written to the input topic (which every producer may
// write) are dead-lettered and change nothing: the published batch stays
// on main, the open batch publishes. An unsigned request on the requests
// topic is dead-lettered too. The operator's lakewap revert, sent to the
// requests topic and signed with the operator's key, reverts the batch, and
// the revert commit names the key's operator, not what the event says.
func TestProducerRequestsOnTheInputTopicChangeNothing(t *testing.T) {
	e := startE2E(t, func(c *config.Config) {
		c.HTTP.Listen, c.HTTP.WebhookToken = "127.0.0.1:0", "test-token"
		c.Operators = []config.Operator{{Name: "alice", Key: "alice-signing-key-0123456789"}}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if ev := e.runBatch(t, "chan-1", harness.GoodBillingRows); ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("chan-1 ended with %+v", ev)
	}
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: "chan-open", Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ready, err := e.Watcher.Await(ctx, "chan-open", schemas.TypeBranchReady)
	must(t, err)
	head, err := e.Lake.GetCommit(ctx, "lake", "main")
	must(t, err)

	now := time.Now().UTC().Truncate(time.Millisecond)
	for _, ev := range []schemas.Event{
		schemas.RevertRequested{RequestID: "evil-1", BatchID: "chan-1", Dataset: "billing", Reason: "gone", RequestedBy: "alice", OccurredAt: now},
		schemas.RetryRequested{RequestID: "evil-2", BatchID: "chan-1", Dataset: "billing", RequestedBy: "alice", OccurredAt: now},
		schemas.BatchCancelled{RequestID: "evil-3", BatchID: "chan-open", Dataset: "billing", Reason: "stop", RequestedBy: "alice", OccurredAt: now},
	} {
		must(t, e.Produce(ctx, ev))
	}
	e.awaitMetric(t, ctx, "lakewap_consumer_dead_letters_total", map[string]string{"reason": "request_on_input_topic"}, 3)

	// An unsigned request on the requests topic.
	op, err := opclient.Of(e.cfg, "")
	must(t, err)
	defer op.Close()
	_, err = op.Send(ctx, e.cfg.Kafka.RequestsTopic, schemas.RevertRequested{RequestID: "evil-4", BatchID: "chan-1", Dataset: "billing",
		Reason: "unsigned", RequestedBy: "alice", OccurredAt: now}, -1)
	must(t, err)
	e.awaitMetric(t, ctx, "lakewap_consumer_dead_letters_total", map[string]string{"reason": "unsigned_request"}, 1)

	after, err := e.Lake.GetCommit(ctx, "lake", "main")
	must(t, err)
	if after.ID != head.ID {
		t.Fatalf("main moved from %s to %s (%q): a producer's request was carried out", head.ID, after.ID, after.Message)
	}
	for _, ev := range e.Watcher.All("chan-1") {
		if ev.EventType() == schemas.TypeBatchReverted || ev.EventType() == schemas.TypeRequestRefused {
			t.Errorf("a producer's request was answered: %+v", ev)
		}
	}
	// The open batch was not cancelled: its write completes it.
	branch := ready.(schemas.BranchReady).Branch
	path := "gold/billing_fact/batch=chan-open/part-0.parquet"
	must(t, e.WriteParquet(ctx, branch, path, secondBillingRows))
	must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: "chan-open", Dataset: "billing", Write: "billing_fact",
		Paths: []string{path}, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	if ev, err := e.Watcher.Await(ctx, "chan-open", schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed); err != nil ||
		ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("chan-open ended with %+v (%v), want published", ev, err)
	}

	// The operator's command, signed: carried out, and recorded as alice's.
	code, out := e.ask(t, "revert", "-batch", "chan-1", "-reason", "bad amounts", "-by", "alice")
	if code != 0 || !strings.Contains(out, "reverted batch chan-1") {
		t.Fatalf("lakewap revert exited %d:\n%s", code, out)
	}
	rev, err := e.Lake.GetCommit(ctx, "lake", "main")
	must(t, err)
	if rev.Metadata[pipeline.MetaRevertedBatchID] != "chan-1" || rev.Metadata[pipeline.MetaRevertedBy] != "alice" {
		t.Errorf("revert commit metadata %v", rev.Metadata)
	}
	if code, out := e.ask(t, "revert", "-batch", "chan-1", "-reason", "x", "-by", "mallory"); code != 2 || !strings.Contains(out, "must name one of them") {
		t.Errorf("revert as an operator the config does not list exited %d:\n%s", code, out)
	}
}

// TestEventOnTheWrongPartitionIsDeadLettered: a producer that does not use
// the default partitioner (murmur2) puts a batch's WriteComplete on another
// partition than its BatchLanded. That partition's owner would keep it as an
// early write of a second run of the batch on the same branch; it is
// dead-lettered instead (wrong_partition), and the write sent where the key
// says completes the batch.
func TestEventOnTheWrongPartitionIsDeadLettered(t *testing.T) {
	e := startE2E(t, func(c *config.Config) { c.HTTP.Listen, c.HTTP.WebhookToken = "127.0.0.1:0", "test-token" })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	op, err := opclient.Of(e.cfg, "")
	must(t, err)
	defer op.Close()
	batch := "split-1"
	landed, err := op.Send(ctx, e.cfg.Kafka.InputTopic, schemas.BatchLanded{BatchID: batch, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}, -1)
	must(t, err)
	ready, err := e.Watcher.Await(ctx, batch, schemas.TypeBranchReady)
	must(t, err)
	path := "gold/billing_fact/batch=" + batch + "/part-0.parquet"
	must(t, e.WriteParquet(ctx, ready.(schemas.BranchReady).Branch, path, harness.GoodBillingRows))
	write := schemas.WriteComplete{BatchID: batch, Dataset: "billing", Write: "billing_fact", Paths: []string{path},
		OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}
	wrong := (landed.Partition + 1) % e.cfg.Kafka.Partitions
	_, err = op.Send(ctx, e.cfg.Kafka.InputTopic, write, wrong)
	must(t, err)
	e.awaitMetric(t, ctx, "lakewap_consumer_dead_letters_total", map[string]string{"reason": "wrong_partition"}, 1)
	if runs := e.d.Runs(); len(runs) != 1 {
		t.Errorf("%d runs held, want the batch's one: %+v", len(runs), runs)
	}
	_, err = op.Send(ctx, e.cfg.Kafka.InputTopic, write, -1)
	must(t, err)
	if ev, err := e.Watcher.Await(ctx, batch, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed); err != nil ||
		ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("batch ended with %+v (%v)", ev, err)
	}
}
