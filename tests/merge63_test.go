package tests

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/treeverse/lakefs/pkg/api/apigen"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/schemas"
)

// TestMerge63BatchFromAnotherSourceComparesVolumeWithItsSnapshot: a batch
// whose branch comes from another source than the target (source_ref
// "staging", which forked from main before main took 1,000 rows) was
// audited against main's head: volume_change compared the sealed commit
// (staging's 100 rows plus the batch's 5) with main's 1,100 rows, read a
// 90% drop and aborted the batch audit_failed, though lakeFS's three-way
// merge from the fork point leaves 1,105 rows on main against 1,100. The
// audit now reads the table as the merge leaves it at the head.
func TestMerge63BatchFromAnotherSourceComparesVolumeWithItsSnapshot(t *testing.T) {
	drop := 50.0
	fromAnotherSource(t, audit.Check{Name: "billing_volume", Kind: audit.KindVolumeChange, Table: "billing_fact", MaxDropPct: &drop})
}

// TestMerge63BatchFromAnotherSourceIsAuditedAsItsMergeLeavesTheTarget:
// audited against its snapshot (the fork point of staging and main), the
// same batch of 5 rows read as a growth of 5% (105 rows against 100), and
// a volume_change of max_growth_pct 3 aborted it audit_failed, though the
// merge leaves 1,105 rows against main's 1,100 (0.45%). lakeFS merges
// three-way from the fork point, which a source other than the target may
// have left long ago: the batch is audited as its merge leaves the target
// (onto the head), as the publish's recheck audits it.
func TestMerge63BatchFromAnotherSourceIsAuditedAsItsMergeLeavesTheTarget(t *testing.T) {
	growth := 3.0
	fromAnotherSource(t, audit.Check{Name: "billing_volume", Kind: audit.KindVolumeChange, Table: "billing_fact", MaxGrowthPct: &growth})
}

// fromAnotherSource: main holds 100 rows; staging forks from it; main then
// takes 1,000 rows; a batch of 5 rows from staging, under check
// besides the dataset's suite, must publish, and main hold 1,105 rows.
func fromAnotherSource(t *testing.T, check audit.Check) {
	e := startE2E(t, func(c *config.Config) {
		ds := c.Datasets["billing"]
		ds.Suite.Checks = append(ds.Suite.Checks, check)
		ds.SourceRefs = []string{"main", "staging"}
		c.Datasets["billing"] = ds
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	api := e.lakeFSAPI(t)
	run := time.Now().UnixNano()
	// The table as it is: 100 rows, and staging forked from it.
	must(t, e.WriteParquet(ctx, "main", "gold/billing_fact/batch=seed/part-0.parquet", billingRows(900000, 0, 100, "BIGINT")))
	commitOn(t, ctx, api, "main", "seed")
	if resp, err := api.CreateBranchWithResponse(ctx, "lake", apigen.CreateBranchJSONRequestBody{Name: "staging", Source: "main"}); err != nil || resp.StatusCode() != http.StatusCreated {
		t.Fatalf("create staging: %v %v", err, resp)
	}
	// Main takes 1,000 rows that staging does not hold (another job's
	// commit: a batch of them would itself grow the table tenfold).
	must(t, e.WriteParquet(ctx, "main", "gold/billing_fact/batch=u/part-0.parquet", billingRows(100000, 0, 1000, "BIGINT")))
	commitOn(t, ctx, api, "main", "1,000 rows")

	// Batch T branches from staging and adds 5 rows.
	id := fmt.Sprintf("t-%d", run)
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: id, Dataset: "billing", ExpectedWrites: []string{"billing_fact"}, SourceRef: "staging",
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	_, err := e.Watcher.Await(ctx, id, schemas.TypeBranchReady)
	must(t, err)
	must(t, e.WriteParquet(ctx, schemas.BranchName("billing", id), "gold/billing_fact/batch="+id+"/part-0.parquet", billingRows(800000, 0, 5, "BIGINT")))
	ev := completeBatch(t, ctx, e.Env, id)
	if ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("batch T from staging, 5 rows onto 100 while main took 1,000: %s %+v; want published (the merge leaves 1,105 rows against 1,100)", ev.EventType(), ev)
	}
	// What the merge left: main's 1,100 rows and the batch's 5.
	n, err := e.CountRows(ctx, "main", "gold/billing_fact/", "")
	must(t, err)
	if n != 1105 {
		t.Errorf("main holds %d rows of billing_fact after T's merge, want 1,105", n)
	}
}
