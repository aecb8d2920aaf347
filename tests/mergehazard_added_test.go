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

// TestMergeHazardAddedAllowedPathIsNotDropped: lakeFS's merge runs out of
// the target's entries when the target deleted the repository's last
// paths since the batch branched, and drops a path the batch added after
// the target's last one whose claimed checksum and size are those of the
// foundation's next path. merge_hazard compared only the batch's table
// paths so, not the paths it adds under its allowed paths. Ledger
// publishes a marker under zzzz/ledger/ (the repository's last prefix);
// billing's batch T branches; ledger's next batch deletes its marker; T
// adds a marker of the same bytes under its allowed path zzzz/billing/
// and publishes onto the moved target: the merge leaves main without T's
// marker, announced published.
func TestMergeHazardAddedAllowedPathIsNotDropped(t *testing.T) {
	e := startE2E(t, func(c *config.Config) {
		ds := c.Datasets["billing"]
		ds.AllowedPaths = []string{"zzzz/billing/"}
		c.Datasets["billing"] = ds
		ledger := ledgerDataset(ds, "gold/ledger/")
		ledger.AllowedPaths = []string{"zzzz/ledger/"}
		c.Datasets["ledger"] = ledger
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	run := time.Now().UnixNano()
	ledgerMarker := "zzzz/ledger/_marker.parquet"
	markerRows := billingRows(900000, 0, 20, "BIGINT")
	l1 := fmt.Sprintf("l1-%d", run)
	if ev := e.landBatch(t, "ledger", l1, []tableWrite{{"w", "gold/ledger/batch=" + l1 + "/part-0.parquet", billingRows(700000, 0, 3, "BIGINT")},
		{"marker", ledgerMarker, markerRows}}); ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("ledger batch L1: %+v", ev)
	}
	if after, err := e.Lake.List(ctx, "lake", "main", ledgerMarker+"~"); err != nil || len(after) > 0 {
		t.Fatalf("main holds paths after the ledger's marker: %+v (err %v)", after, err)
	}

	// Billing's batch T branches from main holding the ledger's marker.
	tr := serialBatch{id: fmt.Sprintf("t-%d", run), first: 800000, rows: 5}
	landWritten(t, ctx, e.Env, tr)

	// Ledger's batch L2 deletes its marker: main then holds nothing under zzzz/.
	l2 := fmt.Sprintf("l2-%d", run)
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: l2, Dataset: "ledger", ExpectedWrites: []string{"w"},
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ready, err := e.Watcher.Await(ctx, l2, schemas.TypeBranchReady)
	must(t, err)
	branchL2 := ready.(schemas.BranchReady).Branch
	api := e.lakeFSAPI(t)
	del, err := api.DeleteObjectWithResponse(ctx, "lake", branchL2, &apigen.DeleteObjectParams{Path: ledgerMarker})
	must(t, err)
	if del.StatusCode() != http.StatusNoContent {
		t.Fatalf("delete %s: %d %s", ledgerMarker, del.StatusCode(), del.Body)
	}
	fileL2 := "gold/ledger/batch=" + l2 + "/part-0.parquet"
	must(t, e.WriteParquet(ctx, branchL2, fileL2, billingRows(710000, 0, 3, "BIGINT")))
	must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: l2, Dataset: "ledger", Write: "w", Paths: []string{fileL2},
		OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	if ev, err := e.Watcher.Await(ctx, l2, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed); err != nil || ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("ledger batch L2: %+v (err %v)", ev, err)
	}
	if zs, err := e.Lake.List(ctx, "lake", "main", "zzzz/"); err != nil || len(zs) > 0 {
		t.Fatalf("main holds %+v under zzzz/ after L2 (err %v)", zs, err)
	}

	// T adds its marker, the bytes of the ledger's deleted one.
	marker := "zzzz/billing/_marker.parquet"
	branchT := schemas.BranchName("billing", tr.id)
	must(t, e.WriteParquet(ctx, branchT, marker, markerRows))
	ms, err := e.Lake.List(ctx, "lake", branchT, marker)
	must(t, err)
	ls, err := e.Lake.List(ctx, "lake", branchT, ledgerMarker)
	must(t, err)
	if len(ms) != 1 || len(ls) != 1 || ms[0].Checksum != ls[0].Checksum || ms[0].Size != ls[0].Size {
		t.Fatalf("T's marker %+v is not the ledger marker's bytes %+v", ms, ls)
	}
	ev := completeBatch(t, ctx, e.Env, tr.id)
	held, err := e.Lake.List(ctx, "lake", "main", marker)
	must(t, err)
	if ev.EventType() == schemas.TypeBatchPublished && len(held) != 1 {
		t.Fatalf("batch T published and main does not hold its marker %s", marker)
	}
	if ab, ok := ev.(schemas.BatchAborted); !ok || ab.Reason != schemas.ReasonAuditFailed || ab.Report == nil ||
		!slices.ContainsFunc(ab.Report.Failed(), func(c schemas.CheckResult) bool {
			return c.Kind == audit.KindMergeHazard && strings.Contains(c.Observed, marker)
		}) {
		t.Errorf("batch T ended %s %+v; want aborted audit_failed by merge_hazard naming %s", ev.EventType(), ev, marker)
	}
}

// TestMergeKeepsWhatTheTargetAddedAfterTheBatchesPaths guards the case
// merge_hazard does not look at: a path the target added after every path
// the batch changes (its table's and its allowed paths'), with the claimed
// checksum and size of the foundation's next path, where lakeFS's merge
// runs out of the target's entries just after it. lakeFS drops such a path
// only when the batch deleted that next path, and the batch deletes
// nothing after its own paths, so the merge keeps it. Ledger publishes
// zzzz/ledger/b; billing's batch T branches; ledger's next batch adds
// zzzz/ledger/a with b's bytes and deletes b; T adds its marker, also with
// b's bytes (a path merge_hazard suspects, which the target holds a path
// after), and publishes: main holds T's marker and ledger's a, not b.
func TestMergeKeepsWhatTheTargetAddedAfterTheBatchesPaths(t *testing.T) {
	e := startE2E(t, func(c *config.Config) {
		ds := c.Datasets["billing"]
		ds.AllowedPaths = []string{"zzzz/billing/"}
		c.Datasets["billing"] = ds
		ledger := ledgerDataset(ds, "gold/ledger/")
		ledger.AllowedPaths = []string{"zzzz/ledger/"}
		c.Datasets["ledger"] = ledger
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	run := time.Now().UnixNano()
	b, a := "zzzz/ledger/b.parquet", "zzzz/ledger/a.parquet"
	markerRows := billingRows(900000, 0, 20, "BIGINT")
	l1 := fmt.Sprintf("l1-%d", run)
	if ev := e.landBatch(t, "ledger", l1, []tableWrite{{"w", "gold/ledger/batch=" + l1 + "/part-0.parquet", billingRows(700000, 0, 3, "BIGINT")},
		{"marker", b, markerRows}}); ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("ledger batch L1: %+v", ev)
	}
	tr := serialBatch{id: fmt.Sprintf("t-%d", run), first: 800000, rows: 5}
	landWritten(t, ctx, e.Env, tr)

	l2 := fmt.Sprintf("l2-%d", run)
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: l2, Dataset: "ledger", ExpectedWrites: []string{"w", "marker"},
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ready, err := e.Watcher.Await(ctx, l2, schemas.TypeBranchReady)
	must(t, err)
	branchL2 := ready.(schemas.BranchReady).Branch
	del, err := e.lakeFSAPI(t).DeleteObjectWithResponse(ctx, "lake", branchL2, &apigen.DeleteObjectParams{Path: b})
	must(t, err)
	if del.StatusCode() != http.StatusNoContent {
		t.Fatalf("delete %s: %d %s", b, del.StatusCode(), del.Body)
	}
	fileL2 := "gold/ledger/batch=" + l2 + "/part-0.parquet"
	for _, w := range []tableWrite{{"w", fileL2, billingRows(710000, 0, 3, "BIGINT")}, {"marker", a, markerRows}} {
		must(t, e.WriteParquet(ctx, branchL2, w.path, w.query))
		must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: l2, Dataset: "ledger", Write: w.write, Paths: []string{w.path},
			OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	}
	if ev, err := e.Watcher.Await(ctx, l2, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed); err != nil || ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("ledger batch L2: %+v (err %v)", ev, err)
	}

	marker := "zzzz/billing/_marker.parquet"
	must(t, e.WriteParquet(ctx, schemas.BranchName("billing", tr.id), marker, markerRows))
	onF, err := e.Lake.List(ctx, "lake", schemas.BranchName("billing", tr.id), "zzzz/")
	must(t, err)
	if len(onF) != 2 || onF[0].Path != marker || onF[1].Path != b || onF[0].Checksum != onF[1].Checksum || onF[0].Size != onF[1].Size {
		t.Fatalf("T's branch holds %+v under zzzz/; want its marker and the ledger's %s, of the same bytes", onF, b)
	}
	if ev := completeBatch(t, ctx, e.Env, tr.id); ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("batch T ended %s %+v; want published", ev.EventType(), ev)
	}
	onMain, err := e.Lake.List(ctx, "lake", "main", "zzzz/")
	must(t, err)
	var got []string
	for _, o := range onMain {
		got = append(got, o.Path)
	}
	if want := []string{marker, a}; !slices.Equal(got, want) {
		t.Errorf("main holds %q under zzzz/ after T's publish; want %q", got, want)
	}
}
