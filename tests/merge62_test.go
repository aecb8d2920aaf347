package tests

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/schemas"
)

// TestMerge62CommittedBatchComparesVolumeWithItsSnapshot: a writer that
// commits on its batch branch (as Spark and lakectl jobs do) made the
// audit step compare its sealed commit (the snapshot it branched from plus
// the batch) with the target's head instead of that snapshot: another
// batch of 1,000 rows published meanwhile read as a 90% drop, and a good
// batch of 5 rows onto 100 was aborted audit_failed by volume_change,
// though the merge leaves 1,105 rows against 1,100. The audit now compares
// with the snapshot (the seal's merge-base with the target), and the
// publish's recheck with the head.
func TestMerge62CommittedBatchComparesVolumeWithItsSnapshot(t *testing.T) {
	e := startE2E(t, func(c *config.Config) {
		ds := c.Datasets["billing"]
		drop := 50.0
		ds.Suite.Checks = append(ds.Suite.Checks, audit.Check{Name: "billing_volume", Kind: audit.KindVolumeChange, Table: "billing_fact", MaxDropPct: &drop})
		c.Datasets["billing"] = ds
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	api := e.lakeFSAPI(t)
	run := time.Now().UnixNano()
	// The table as it is: 100 rows.
	must(t, e.WriteParquet(ctx, "main", "gold/billing_fact/batch=seed/part-0.parquet", billingRows(900000, 0, 100, "BIGINT")))
	commitOn(t, ctx, api, "main", "seed")

	tr := serialBatch{id: fmt.Sprintf("t-%d", run), first: 800000, rows: 5}
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: tr.id, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	_, err := e.Watcher.Await(ctx, tr.id, schemas.TypeBranchReady)
	must(t, err)

	u := fmt.Sprintf("u-%d", run)
	if ev := e.landBatch(t, "billing", u, billingWrite(u, billingRows(100000, 0, 1000, "BIGINT"))); ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("batch U: %s %+v", ev.EventType(), ev)
	}

	branch := schemas.BranchName("billing", tr.id)
	must(t, e.WriteParquet(ctx, branch, "gold/billing_fact/batch="+tr.id+"/part-0.parquet", billingRows(tr.first, 0, tr.rows, "BIGINT")))
	commitOn(t, ctx, api, branch, "the writer's own commit")
	if ev := completeBatch(t, ctx, e.Env, tr.id); ev.EventType() != schemas.TypeBatchPublished {
		t.Errorf("batch T, 5 rows onto 100 while 1,000 were published: %s %+v; want published", ev.EventType(), ev)
	}
}
