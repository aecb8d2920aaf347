package tests

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/treeverse/lakefs/pkg/api/apigen"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// TestMerge64BatchFromTheTargetGrowingItsSnapshotPublishesWhenItsMergeDoesNot:
// a batch branched from main when main held 100 rows adds 5; main takes
// 1,000 rows from another job meanwhile. Audited against its snapshot,
// the batch grows the table by 5% and a volume_change of max_growth_pct 3
// aborted it audit_failed, though the merge leaves 1,105 rows against
// main's 1,100 (0.45%), which the publish's recheck would have judged had
// the snapshot audit passed. A failing snapshot audit with a moved head
// is judged again as the merge leaves the head before the batch is
// aborted.
func TestMerge64BatchFromTheTargetGrowingItsSnapshotPublishesWhenItsMergeDoesNot(t *testing.T) {
	growth := 3.0
	e := startE2E(t, func(c *config.Config) {
		ds := c.Datasets["billing"]
		ds.Suite.Checks = append(ds.Suite.Checks, audit.Check{Name: "billing_volume", Kind: audit.KindVolumeChange, Table: "billing_fact", MaxGrowthPct: &growth})
		c.Datasets["billing"] = ds
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	api := e.lakeFSAPI(t)
	must(t, e.WriteParquet(ctx, "main", "gold/billing_fact/batch=seed/part-0.parquet", billingRows(900000, 0, 100, "BIGINT")))
	commitOn(t, ctx, api, "main", "seed")

	id := fmt.Sprintf("g-%d", time.Now().UnixNano())
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: id, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	_, err := e.Watcher.Await(ctx, id, schemas.TypeBranchReady)
	must(t, err)
	// Main takes 1,000 rows after the batch's branch was made.
	must(t, e.WriteParquet(ctx, "main", "gold/billing_fact/batch=u/part-0.parquet", billingRows(100000, 0, 1000, "BIGINT")))
	commitOn(t, ctx, api, "main", "1,000 rows")
	must(t, e.WriteParquet(ctx, schemas.BranchName("billing", id), "gold/billing_fact/batch="+id+"/part-0.parquet", billingRows(800000, 0, 5, "BIGINT")))
	ev := completeBatch(t, ctx, e.Env, id)
	if ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("batch of 5 rows onto a snapshot of 100 while main took 1,000: %s %+v; want published (the merge grows main by 0.45%%)", ev.EventType(), ev)
	}
	n, err := e.CountRows(ctx, "main", "gold/billing_fact/", "")
	must(t, err)
	if n != 1105 {
		t.Errorf("main holds %d rows of billing_fact after the merge, want 1,105", n)
	}
}

// TestMerge64BatchFromTheTargetDuplicatingAFileMainDeletedPublishes: main
// holds a file of ids 500000-500004 when the batch's branch is made; main
// then deletes that file (another job's commit), and the batch adds rows
// of those ids. The snapshot holds both and unique failed: the batch was
// aborted audit_failed, though the merge leaves each id once.
func TestMerge64BatchFromTheTargetDuplicatingAFileMainDeletedPublishes(t *testing.T) {
	e := startE2E(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	api := e.lakeFSAPI(t)
	must(t, e.WriteParquet(ctx, "main", "gold/billing_fact/batch=seed/part-0.parquet", billingRows(900000, 0, 100, "BIGINT")))
	must(t, e.WriteParquet(ctx, "main", "gold/billing_fact/batch=old/part-0.parquet", billingRows(500000, 0, 5, "BIGINT")))
	commitOn(t, ctx, api, "main", "seed")

	id := fmt.Sprintf("d-%d", time.Now().UnixNano())
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: id, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	_, err := e.Watcher.Await(ctx, id, schemas.TypeBranchReady)
	must(t, err)
	del, err := api.DeleteObjectWithResponse(ctx, "lake", "main", &apigen.DeleteObjectParams{Path: "gold/billing_fact/batch=old/part-0.parquet"})
	must(t, err)
	if del.StatusCode() != http.StatusNoContent {
		t.Fatalf("delete on main: HTTP %d %s", del.StatusCode(), del.Body)
	}
	commitOn(t, ctx, api, "main", "drop the old rows")
	must(t, e.WriteParquet(ctx, schemas.BranchName("billing", id), "gold/billing_fact/batch="+id+"/part-0.parquet", billingRows(500000, 0, 5, "BIGINT")))
	ev := completeBatch(t, ctx, e.Env, id)
	if ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("batch re-adding ids main deleted since its snapshot: %s %+v; want published (the merge leaves each id once)", ev.EventType(), ev)
	}
	n, err := e.CountRows(ctx, "main", "gold/billing_fact/", "CAST(regexp_extract(billing_id, '[0-9]+') AS BIGINT) BETWEEN 500000 AND 500004")
	must(t, err)
	if n != 5 {
		t.Errorf("main holds %d rows of ids 500000-500004, want 5", n)
	}
}

// TestMerge64HardResetAfterAnOntoAuditIsRechecked: a batch of another
// source (staging, forked from main at F of 100 rows) is audited as its
// merge leaves main's head H (1,100 rows; 5 rows more is 0.45%, under a
// max_growth_pct of 3) and passes. Before its publish looks, main is
// hard-reset to F. The seal's merge-base with main is then main's head,
// so the publish did not recheck: the merge left 105 rows on main, a
// growth of 5% that no audit judged. The publish rechecks whenever the
// audit was onto another head than the one it merges into.
func TestMerge64HardResetAfterAnOntoAuditIsRechecked(t *testing.T) {
	growth := 3.0
	var mu sync.Mutex
	var reset func()
	e := startE2EWith(t, func(c *config.Config) {
		ds := c.Datasets["billing"]
		ds.Suite.Checks = append(ds.Suite.Checks, audit.Check{Name: "billing_volume", Kind: audit.KindVolumeChange, Table: "billing_fact", MaxGrowthPct: &growth})
		ds.SourceRefs = []string{"main", "staging"}
		c.Datasets["billing"] = ds
	}, daemon.Options{Observe: func(before, after pipeline.Run) {
		if before.State != pipeline.StateAuditing || after.State != pipeline.StatePublishing {
			return
		}
		mu.Lock()
		f := reset
		reset = nil
		mu.Unlock()
		if f != nil {
			f() // before the publish step starts
		}
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	api := e.lakeFSAPI(t)
	must(t, e.WriteParquet(ctx, "main", "gold/billing_fact/batch=seed/part-0.parquet", billingRows(900000, 0, 100, "BIGINT")))
	commitOn(t, ctx, api, "main", "seed")
	fork, err := e.Lake.Head(ctx, "lake", "main")
	must(t, err)
	if resp, err := api.CreateBranchWithResponse(ctx, "lake", apigen.CreateBranchJSONRequestBody{Name: "staging", Source: "main"}); err != nil || resp.StatusCode() != http.StatusCreated {
		t.Fatalf("create staging: %v %v", err, resp)
	}
	must(t, e.WriteParquet(ctx, "main", "gold/billing_fact/batch=u/part-0.parquet", billingRows(100000, 0, 1000, "BIGINT")))
	commitOn(t, ctx, api, "main", "1,000 rows")

	var resetErr error
	reset = func() {
		hr, err := api.HardResetBranchWithResponse(ctx, "lake", "main", &apigen.HardResetBranchParams{Ref: fork})
		if err == nil && hr.StatusCode() != http.StatusNoContent {
			err = fmt.Errorf("hard reset: HTTP %d %s", hr.StatusCode(), hr.Body)
		}
		resetErr = err
	}
	id := fmt.Sprintf("r-%d", time.Now().UnixNano())
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: id, Dataset: "billing", ExpectedWrites: []string{"billing_fact"}, SourceRef: "staging",
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	_, err = e.Watcher.Await(ctx, id, schemas.TypeBranchReady)
	must(t, err)
	must(t, e.WriteParquet(ctx, schemas.BranchName("billing", id), "gold/billing_fact/batch="+id+"/part-0.parquet", billingRows(800000, 0, 5, "BIGINT")))
	ev := completeBatch(t, ctx, e.Env, id)
	mu.Lock()
	happened := reset == nil
	mu.Unlock()
	if !happened {
		t.Fatal("the batch never went from auditing to publishing: the attack did not happen")
	}
	must(t, resetErr)
	n, err := e.CountRows(ctx, "main", "gold/billing_fact/", "")
	must(t, err)
	ab, ok := ev.(schemas.BatchAborted)
	if !ok || ab.Reason != schemas.ReasonAuditFailed {
		t.Fatalf("batch audited onto 1,100 rows, published after main was reset to 100: %s %+v (main holds %d rows); want aborted audit_failed by the recheck onto the reset head", ev.EventType(), ev, n)
	}
	if n != 100 {
		t.Errorf("main holds %d rows of billing_fact, want the reset head's 100", n)
	}
}
