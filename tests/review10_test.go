package tests

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/treeverse/lakefs/pkg/api/apigen"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/schemas"
)

// TestReview10DeletedAllowedPathDoesNotDropAnotherDatasetsFile: lakeFS's
// merge runs out of the sealed commit's entries when the batch deletes the
// repository's last paths, and drops a path the target added before them
// whose claimed checksum and size are those of the foundation's next path.
// merge_hazard looked for that before a table the batch empties, not before
// an allowed path it deletes. Billing's batch Z publishes a marker under
// its allowed path zzzz/billing/ (the last prefix of the repository);
// batch T branches; dataset ledger publishes a file of the same bytes under
// its allowed path zzzz/a/ (just before); T deletes billing's marker and
// publishes: the merge leaves main without ledger's published file.
func TestReview10DeletedAllowedPathDoesNotDropAnotherDatasetsFile(t *testing.T) {
	e := startE2E(t, func(c *config.Config) {
		ds := c.Datasets["billing"]
		ds.AllowedPaths = []string{"zzzz/billing/"}
		c.Datasets["billing"] = ds
		ledger := ledgerDataset(ds, "gold/ledger/")
		ledger.AllowedPaths = []string{"zzzz/a/"}
		c.Datasets["ledger"] = ledger
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	run := time.Now().UnixNano()
	marker := "zzzz/billing/_marker.parquet"
	z := serialBatch{id: fmt.Sprintf("a-%d-z", run), first: 900000, rows: 20}
	landWritten(t, ctx, e.Env, z)
	must(t, e.WriteParquet(ctx, schemas.BranchName("billing", z.id), marker, billingRows(z.first, 0, z.rows, "BIGINT")))
	if ev := completeBatch(t, ctx, e.Env, z.id); ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("batch Z: %+v", ev)
	}
	tr := serialBatch{id: fmt.Sprintf("t-%d", run), first: 800000, rows: 5}
	landWritten(t, ctx, e.Env, tr)

	// The ledger batch: a file of its own, and the marker's bytes under its allowed path.
	l := fmt.Sprintf("l-%d", run)
	fileL := "gold/ledger/batch=" + l + "/part-0.parquet"
	lost := "zzzz/a/_marker.parquet"
	ledgerWrites := []tableWrite{{"w", fileL, billingRows(700000, 0, 3, "BIGINT")}, {"marker", lost, billingRows(z.first, 0, z.rows, "BIGINT")}}
	if pl := e.landBatch(t, "ledger", l, ledgerWrites); pl.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("ledger batch: %+v", pl)
	}
	ms, err := e.Lake.List(ctx, "lake", "main", marker)
	must(t, err)
	ls, err := e.Lake.List(ctx, "lake", "main", lost)
	must(t, err)
	if len(ms) != 1 || len(ls) != 1 || ms[0].Checksum != ls[0].Checksum || ms[0].Size != ls[0].Size {
		t.Fatalf("the ledger's file %+v is not the marker's bytes %+v", ls, ms)
	}
	if after, err := e.Lake.List(ctx, "lake", "main", "zzzz/billing/_marker.parquet~"); err == nil && len(after) > 0 {
		t.Fatalf("main holds paths after the marker: %+v", after)
	}

	// T deletes billing's marker.
	api := e.lakeFSAPI(t)
	del, err := api.DeleteObjectWithResponse(ctx, "lake", schemas.BranchName("billing", tr.id), &apigen.DeleteObjectParams{Path: marker})
	must(t, err)
	if del.StatusCode() != http.StatusNoContent {
		t.Fatalf("delete %s: %d %s", marker, del.StatusCode(), del.Body)
	}
	ev := completeBatch(t, ctx, e.Env, tr.id)
	ls, err = e.Lake.List(ctx, "lake", "main", lost)
	must(t, err)
	if ev.EventType() == schemas.TypeBatchPublished && len(ls) != 1 {
		t.Fatalf("batch T published and main lost the ledger's published %s", lost)
	}
	if ab, ok := ev.(schemas.BatchAborted); !ok || ab.Reason != schemas.ReasonAuditFailed || ab.Report == nil ||
		!slices.ContainsFunc(ab.Report.Failed(), func(c schemas.CheckResult) bool {
			return c.Kind == audit.KindMergeHazard && strings.Contains(c.Observed, lost)
		}) {
		t.Errorf("batch T ended %s %+v; want aborted audit_failed by merge_hazard naming %s", ev.EventType(), ev, lost)
	}
}

// TestReview10WriterMergingTheTargetIntoItsBranchPublishes: a writer
// merges main into its batch branch (after another dataset published) and
// then writes its batch. Its changes against its merge-base with main are
// its table's file alone; the audit must not take the other dataset's
// published file, which main already holds, for a change of the batch
// outside its tables.
func TestReview10WriterMergingTheTargetIntoItsBranchPublishes(t *testing.T) {
	e := startE2E(t, func(c *config.Config) {
		ds := c.Datasets["billing"]
		c.Datasets["ledger"] = ledgerDataset(ds, "gold/ledger/")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	run := time.Now().UnixNano()
	tr := serialBatch{id: fmt.Sprintf("t-%d", run), first: 800000, rows: 5}
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: tr.id, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "serial", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	_, err := e.Watcher.Await(ctx, tr.id, schemas.TypeBranchReady)
	must(t, err)

	l := fmt.Sprintf("l-%d", run)
	fileL := "gold/ledger/batch=" + l + "/part-0.parquet"
	if pl := e.landBatch(t, "ledger", l, []tableWrite{{"w", fileL, billingRows(700000, 0, 3, "BIGINT")}}); pl.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("ledger batch: %+v", pl)
	}

	api := e.lakeFSAPI(t)
	branch := schemas.BranchName("billing", tr.id)
	m, err := api.MergeIntoBranchWithResponse(ctx, "lake", "main", branch, apigen.MergeIntoBranchJSONRequestBody{})
	must(t, err)
	if m.StatusCode() != http.StatusOK {
		t.Fatalf("merge main into %s: %d %s", branch, m.StatusCode(), m.Body)
	}
	must(t, e.WriteParquet(ctx, branch, "gold/billing_fact/batch="+tr.id+"/part-0.parquet", billingRows(tr.first, 0, tr.rows, "BIGINT")))
	if ev := completeBatch(t, ctx, e.Env, tr.id); ev.EventType() != schemas.TypeBatchPublished {
		t.Errorf("batch T, whose writer merged main into its branch: %s %+v; want published", ev.EventType(), ev)
	}
}
