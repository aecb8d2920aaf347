package tests

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/schemas"
)

// TestBatchLandedBeyondTheDedupeHorizonIsDeadLettered: through Kafka, a
// BatchLanded lakewap holds no run of, older than the dedupe horizon
// (terminal_retention less 24h), is a dead letter beyond_horizon: no
// branch, no result event. A batch of now on the same dataset runs.
func TestBatchLandedBeyondTheDedupeHorizonIsDeadLettered(t *testing.T) {
	e := startE2E(t, func(*config.Config) {})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	old := fmt.Sprintf("old-%d", time.Now().UnixNano())
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: old, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "t", OccurredAt: time.Now().UTC().Add(-6*24*time.Hour - time.Hour).Truncate(time.Millisecond)}))
	fresh := fmt.Sprintf("fresh-%d", time.Now().UnixNano())
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: fresh, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "t", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	letters := readTopicUntil(ctx, t, e.Stack.KafkaBrokers, e.cfg.Kafka.DeadLetterTopic, 1)
	if string(letters[0].Key) != old || headerOf(letters[0], consumer.HeaderDLQReason) != "beyond_horizon" {
		t.Errorf("dead letter %q, reason %q; want %s, beyond_horizon", letters[0].Key, headerOf(letters[0], consumer.HeaderDLQReason), old)
	}
	_, err := e.Watcher.Await(ctx, fresh, schemas.TypeBranchReady)
	must(t, err)
	if evs := e.Watcher.All(old); len(evs) > 0 {
		t.Errorf("result events for the refused batch: %+v; want none", evs)
	}
	branches, err := e.Lake.ListBranches(ctx, "lake", schemas.BranchName("billing", old))
	must(t, err)
	if len(branches) > 0 {
		t.Errorf("a branch was made for the refused batch: %+v", branches)
	}
}
