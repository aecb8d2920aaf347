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
// audit now compares with the seal's merge-base with the target (its
// snapshot), and the publish's recheck audits the merge's result onto the
// head.
func TestMerge63BatchFromAnotherSourceComparesVolumeWithItsSnapshot(t *testing.T) {
	e := startE2E(t, func(c *config.Config) {
		ds := c.Datasets["billing"]
		drop := 50.0
		ds.Suite.Checks = append(ds.Suite.Checks, audit.Check{Name: "billing_volume", Kind: audit.KindVolumeChange, Table: "billing_fact", MaxDropPct: &drop})
		ds.SourceRefs = []string{"main", "staging"}
		c.Datasets["billing"] = ds
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	api := e.lakeFSAPI(t)
	commit := func(branch, msg string) {
		t.Helper()
		resp, err := api.CommitWithResponse(ctx, "lake", branch, &apigen.CommitParams{}, apigen.CommitJSONRequestBody{Message: msg})
		must(t, err)
		if resp.StatusCode() != http.StatusCreated {
			t.Fatalf("commit on %s: HTTP %d %s", branch, resp.StatusCode(), resp.Body)
		}
	}
	run := time.Now().UnixNano()
	// The table as it is: 100 rows, and staging forked from it.
	must(t, e.WriteParquet(ctx, "main", "gold/billing_fact/batch=seed/part-0.parquet", billingRows(900000, 0, 100, "BIGINT")))
	commit("main", "seed")
	if resp, err := api.CreateBranchWithResponse(ctx, "lake", apigen.CreateBranchJSONRequestBody{Name: "staging", Source: "main"}); err != nil || resp.StatusCode() != http.StatusCreated {
		t.Fatalf("create staging: %v %v", err, resp)
	}
	// Main takes 1,000 rows that staging does not hold.
	u := fmt.Sprintf("u-%d", run)
	if ev := e.landBatch(t, "billing", u, billingWrite(u, billingRows(100000, 0, 1000, "BIGINT"))); ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("batch U: %s %+v", ev.EventType(), ev)
	}

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
