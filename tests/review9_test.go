package tests

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/treeverse/lakefs/pkg/api/apigen"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/schemas"
)

// Review 9: adversarial probes of "the merge, not the snapshot" on the real
// lakeFS server.

// holdAudit is a runner failpoint that, once armed, holds the next audit
// to reach "during_audit" (after its seal, before its diff) until released.
type holdAudit struct {
	mu      sync.Mutex
	arrived chan struct{} // nil: not armed
	release chan struct{}
}

// arm holds the next audit: arrived is closed when it is held, and closing
// release lets it go on.
func (h *holdAudit) arm() (arrived, release chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.arrived, h.release = make(chan struct{}), make(chan struct{})
	return h.arrived, h.release
}

func (h *holdAudit) failpoint(name string) {
	if name != "during_audit" {
		return
	}
	h.mu.Lock()
	arrived, release := h.arrived, h.release
	h.arrived = nil
	h.mu.Unlock()
	if arrived == nil {
		return
	}
	close(arrived)
	select {
	case <-release:
	case <-time.After(3 * time.Minute):
	}
}

// TestReview9SealSmuggledIntoAnotherBatchIsNotAnnouncedPublished: batch A
// is sealed and being audited. The writer of batch B (write access to its
// own branch: commit and merge there, as lakeFS's simplified ACL allows)
// merges A's sealed commit into B's branch, deletes A's file there, and
// completes B, which passes and publishes first. A's sealed commit is now
// in main's history, but none of A's rows is on main. A must not be
// announced published (BatchPublished tells downstream its rows are on
// main); and whatever A's run records as its publish must not be B's merge,
// which a later `lakewap revert` of A would take off main with B's rows.
// Before the fix A was announced published by B's merge with none of its
// rows on main; now it is aborted merge_conflict naming that merge. When
// B's branch keeps A's file as A sealed it, A's rows are on main by B's
// merge, and A is published by it.
func TestReview9SealSmuggledIntoAnotherBatchIsNotAnnouncedPublished(t *testing.T) {
	hold := &holdAudit{}
	e := startE2EWith(t, nil, daemon.Options{Failpoint: hold.failpoint})
	api := e.lakeFSAPI(t)
	for i, drop := range []bool{true, false} {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		run := time.Now().UnixNano()
		a := serialBatch{id: fmt.Sprintf("smug-%d-a", run), first: 840000 + 1000*i, rows: 20}
		b := serialBatch{id: fmt.Sprintf("smug-%d-b", run), first: 850000 + 1000*i, rows: 20}
		for _, x := range []serialBatch{a, b} {
			landWritten(t, ctx, e.Env, x)
		}
		branchA, branchB := schemas.BranchName("billing", a.id), schemas.BranchName("billing", b.id)
		fileA := "gold/billing_fact/batch=" + a.id + "/part-0.parquet"

		arrived, release := hold.arm()
		must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: a.id, Dataset: "billing", Write: "billing_fact",
			Paths: []string{fileA}, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
		select {
		case <-arrived:
		case <-ctx.Done():
			t.Fatal("A's audit never started")
		}
		sealA, err := e.Lake.Head(ctx, "lake", branchA)
		must(t, err)

		// B's writer: commit B's branch, merge A's seal into it, maybe delete A's file.
		_, err = e.Lake.Commit(ctx, "lake", branchB, "writer: B's rows", nil)
		must(t, err)
		_, err = e.Lake.Merge(ctx, "lake", sealA, branchB, "writer: take A's seal", nil)
		must(t, err)
		if drop {
			del, err := api.DeleteObjectWithResponse(ctx, "lake", branchB, &apigen.DeleteObjectParams{Path: fileA})
			must(t, err)
			if del.StatusCode() != http.StatusNoContent {
				t.Fatalf("delete A's file on B's branch: %d %s", del.StatusCode(), del.Body)
			}
		}
		pb, ok := completeBatch(t, ctx, e.Env, b.id).(schemas.BatchPublished)
		if !ok {
			t.Fatal("batch B did not publish")
		}
		close(release)
		ev, err := e.Watcher.Await(ctx, a.id, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
		must(t, err)
		n, err := e.CountRows(ctx, "main", "gold/billing_fact/batch="+a.id+"/", "")
		must(t, err)
		if drop {
			if n != 0 {
				t.Fatalf("main has %d of A's rows after B's publish; the attack needs none", n)
			}
			ab, ok := ev.(schemas.BatchAborted)
			if !ok || ab.Reason != schemas.ReasonMergeConflict || !ab.BranchKept || !strings.Contains(ab.Detail, pb.CommitID) {
				t.Errorf("A, whose file B's branch dropped, ended %s %+v; want aborted merge_conflict, branch kept, naming B's merge %s", ev.EventType(), ev, pb.CommitID)
			}
		} else if pa, ok := ev.(schemas.BatchPublished); !ok || pa.CommitID != pb.CommitID || n != int64(a.rows) {
			t.Errorf("A, which B's branch took in unchanged, ended %s %+v with %d of its rows on main; want published by B's merge %s with all %d", ev.EventType(), ev, n, pb.CommitID, a.rows)
		}
		if n, err := e.CountRows(ctx, "main", "gold/billing_fact/batch="+b.id+"/", ""); err != nil || n != int64(b.rows) {
			t.Errorf("main holds %d of B's %d rows (err %v)", n, b.rows, err)
		}
	}
}

// TestReview9BatchOnlyPublishIsNotDroppedByLakeFSMerge: a dataset whose
// checks all read only the batch published without a recheck, so nothing
// looked at lakeFS's merge (v1.84.0) dropping a path one side added whose
// claimed identity equals the merge-base's next path, which the other side
// deleted (audit/mergehazard.go). Batch Z published a file; batches D and A
// branch after it; D deletes Z's file (and adds one of its own) and
// publishes; A adds, just before Z's path, a file of the same bytes (an
// upstream re-send of Z's rows under a new batch id). lakeFS's merge of A
// then drops A's file: A must not be announced published without its rows
// on main. Before the fix it was (published, none of its rows on main);
// now every publish onto a moved target is rechecked, and merge_hazard
// aborts A naming its file.
func TestReview9BatchOnlyPublishIsNotDroppedByLakeFSMerge(t *testing.T) {
	e := startE2E(t, func(c *config.Config) {
		ds := c.Datasets["billing"]
		for i := range ds.Suite.Checks {
			ds.Suite.Checks[i].Scope = audit.ScopeBatch
		}
		c.Datasets["billing"] = ds
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	run := time.Now().UnixNano()
	z := serialBatch{id: fmt.Sprintf("zz-%d", run), first: 860000, rows: 20}
	d := serialBatch{id: fmt.Sprintf("r9d-%d", run), first: 870000, rows: 20}
	a := serialBatch{id: fmt.Sprintf("zy-%d", run), first: 860000, rows: 20} // Z's rows again
	landWritten(t, ctx, e.Env, z)
	if ev := completeBatch(t, ctx, e.Env, z.id); ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("batch Z: %+v", ev)
	}
	landWritten(t, ctx, e.Env, d)
	landWritten(t, ctx, e.Env, a)
	fileZ, fileA := "gold/billing_fact/batch="+z.id+"/part-0.parquet", "gold/billing_fact/batch="+a.id+"/part-0.parquet"
	onMain, err := e.Lake.List(ctx, "lake", "main", fileZ)
	must(t, err)
	onA, err := e.Lake.List(ctx, "lake", schemas.BranchName("billing", a.id), fileA)
	must(t, err)
	if len(onMain) != 1 || len(onA) != 1 || onMain[0].Checksum != onA[0].Checksum || onMain[0].Size != onA[0].Size {
		t.Fatalf("A's file %+v is not Z's bytes %+v: the writer is not deterministic", onA, onMain)
	}
	api := e.lakeFSAPI(t)
	del, err := api.DeleteObjectWithResponse(ctx, "lake", schemas.BranchName("billing", d.id), &apigen.DeleteObjectParams{Path: fileZ})
	must(t, err)
	if del.StatusCode() != http.StatusNoContent {
		t.Fatalf("delete Z's file on D's branch: %d %s", del.StatusCode(), del.Body)
	}
	if ev := completeBatch(t, ctx, e.Env, d.id); ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("batch D: %+v", ev)
	}
	ev := completeBatch(t, ctx, e.Env, a.id)
	n, err := e.CountRows(ctx, "main", "gold/billing_fact/batch="+a.id+"/", "")
	must(t, err)
	if pa, ok := ev.(schemas.BatchPublished); ok && n != int64(a.rows) {
		t.Errorf("A announced published at %s, but main holds %d of its %d rows", pa.CommitID, n, a.rows)
	}
	ab, ok := ev.(schemas.BatchAborted)
	if !ok || ab.Reason != schemas.ReasonAuditFailed || ab.Report == nil {
		t.Fatalf("A ended %s %+v; want aborted audit_failed by its recheck", ev.EventType(), ev)
	}
	var named bool
	for _, c := range ab.Report.Failed() {
		named = named || (c.Kind == audit.KindMergeHazard && strings.Contains(c.Observed, fileA))
	}
	if !named {
		t.Errorf("no failed merge_hazard naming %s: %+v", fileA, ab.Report.Failed())
	}
}

// TestReview9ForgedFoundationDoesNotReachMain (a probe that held, kept as a
// guard): without audit.attestation_key, a writer who may commit and merge
// on its batch branches forges lakewap's attestation on a merge commit F of
// its own (parents as the attestation names them, the suite's digest as
// main's publishes show it), in batch W's branch over a file duplicating
// W's keys, then deletes that file and publishes W: main's history holds F,
// main does not hold the file. It then makes batch V's branch again from F,
// so V's foundation is F and V's first audit is incremental over a table
// that fails unique. The publish's recheck onto main's head (lakewap's own
// attested publish) and lakeFS's three-way merge (the file, deleted on
// main since F, stays deleted) keep main clean.
func TestReview9ForgedFoundationDoesNotReachMain(t *testing.T) {
	e := startE2E(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	api := e.lakeFSAPI(t)
	run := time.Now().UnixNano()
	w := serialBatch{id: fmt.Sprintf("forge-%d-w", run), first: 880000, rows: 20}
	v := serialBatch{id: fmt.Sprintf("forge-%d-v", run), first: 890000, rows: 20}
	landWritten(t, ctx, e.Env, w)
	branchW := schemas.BranchName("billing", w.id)
	bad := "gold/billing_fact/batch=" + w.id + "/dup.parquet"
	must(t, e.WriteParquet(ctx, branchW, bad, billingRows(w.first, 0, w.rows, "BIGINT")))
	c1, err := e.Lake.Commit(ctx, "lake", branchW, "writer: rows and their duplicates", nil)
	must(t, err)
	_, err = e.Lake.EnsureBranch(ctx, "lake", "forge-side-"+fmt.Sprint(run), c1)
	must(t, err)
	must(t, e.WriteParquet(ctx, "forge-side-"+fmt.Sprint(run), "gold/billing_fact/batch="+w.id+"/part-1.parquet", billingRows(w.first+100, 0, 5, "BIGINT")))
	x, err := e.Lake.Commit(ctx, "lake", "forge-side-"+fmt.Sprint(run), "writer: side", nil)
	must(t, err)
	forged, err := audit.Attestation{Dataset: "billing", Suite: audit.SuiteDigest(e.cfg.Datasets["billing"].Suite), Sealed: x, Against: c1, Mode: audit.ModeFull}.Encode(nil)
	must(t, err)
	f, err := e.Lake.Merge(ctx, "lake", x, branchW, "writer: forged publish", map[string]string{audit.MetaAttestation: forged})
	must(t, err)
	fc, err := e.Lake.GetCommit(ctx, "lake", f)
	must(t, err)
	if _, err := audit.Attested(audit.CommitInfo{ID: fc.ID, Parents: fc.Parents, Metadata: fc.Metadata}, "billing", audit.SuiteDigest(e.cfg.Datasets["billing"].Suite), nil); err != nil {
		t.Fatalf("the forged attestation on %s is not taken: %v (the probe needs it to be)", f, err)
	}
	del, err := api.DeleteObjectWithResponse(ctx, "lake", branchW, &apigen.DeleteObjectParams{Path: bad})
	must(t, err)
	if del.StatusCode() != http.StatusNoContent {
		t.Fatalf("delete: %d %s", del.StatusCode(), del.Body)
	}
	if ev := completeBatch(t, ctx, e.Env, w.id); ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("batch W: %+v", ev)
	}

	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: v.id, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "serial", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	_, err = e.Watcher.Await(ctx, v.id, schemas.TypeBranchReady)
	must(t, err)
	branchV := schemas.BranchName("billing", v.id)
	must(t, e.Lake.DeleteBranch(ctx, "lake", branchV))
	_, err = e.Lake.EnsureBranch(ctx, "lake", branchV, f)
	must(t, err)
	must(t, e.WriteParquet(ctx, branchV, "gold/billing_fact/batch="+v.id+"/part-0.parquet", billingRows(v.first, 0, v.rows, "BIGINT")))
	ev := completeBatch(t, ctx, e.Env, v.id)
	t.Logf("V ended %s", ev.EventType())
	if n, err := e.CountRows(ctx, "main", bad, ""); err != nil || n != 0 {
		t.Errorf("main holds %d rows of the deleted duplicate file (err %v)", n, err)
	}
	head, err := e.Lake.Head(ctx, "lake", "main")
	must(t, err)
	tableChecksHold(t, e.d.Engine(), e.cfg, head)
}

// TestReview9TruncateDoesNotDropAnotherDatasetsFile: lakeFS's merge drops a
// path the target added when the merged commit holds no path from it on and
// the merge-base's next path, which the merged commit deleted, has the same
// claimed checksum and size (audit/mergehazard.go). merge_hazard looked only
// under the suite's tables, so the path of another dataset's table just
// before this one's was not looked at: dataset ledger (gold/billing_a/)
// publishes a file of the same bytes as billing's first file after a billing
// batch that deletes every billing file branched, and that batch's merge
// drops the ledger file, announced published, from main. Before the fix the
// truncating batch published and main held none of the ledger batch's rows;
// now merge_hazard looks at the target's paths before the table too.
func TestReview9TruncateDoesNotDropAnotherDatasetsFile(t *testing.T) {
	e := startE2E(t, func(c *config.Config) {
		ds := c.Datasets["billing"]
		ds.Suite.Checks = slices.DeleteFunc(slices.Clone(ds.Suite.Checks), func(c audit.Check) bool { return c.Kind == audit.KindRowCount })
		c.Datasets["billing"] = ds
		c.Datasets["ledger"] = ledgerDataset(ds, "gold/billing_a/")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	run := time.Now().UnixNano()
	z := serialBatch{id: fmt.Sprintf("a-%d-z", run), first: 900000, rows: 20}
	landWritten(t, ctx, e.Env, z)
	if ev := completeBatch(t, ctx, e.Env, z.id); ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("batch Z: %+v", ev)
	}
	fileZ := "gold/billing_fact/batch=" + z.id + "/part-0.parquet"
	tr := serialBatch{id: fmt.Sprintf("t-%d", run)}
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: tr.id, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "serial", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	_, err := e.Watcher.Await(ctx, tr.id, schemas.TypeBranchReady)
	must(t, err)

	// The ledger batch: the same bytes as Z's file, at the last path before billing's table.
	l := fmt.Sprintf("l-%d", run)
	fileL := "gold/billing_a/batch=" + l + "/part-0.parquet"
	if pl := e.landBatch(t, "ledger", l, []tableWrite{{"w", fileL, billingRows(z.first, 0, z.rows, "BIGINT")}}); pl.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("ledger batch: %+v", pl)
	}
	zs, err := e.Lake.List(ctx, "lake", "main", fileZ)
	must(t, err)
	ls, err := e.Lake.List(ctx, "lake", "main", fileL)
	must(t, err)
	if len(zs) != 1 || len(ls) != 1 || zs[0].Checksum != ls[0].Checksum || zs[0].Size != ls[0].Size {
		t.Fatalf("the ledger file %+v is not Z's bytes %+v", ls, zs)
	}

	// The billing batch deletes every billing file.
	api := e.lakeFSAPI(t)
	all, err := e.Lake.List(ctx, "lake", schemas.BranchName("billing", tr.id), "gold/billing_fact/")
	must(t, err)
	for _, o := range all {
		del, err := api.DeleteObjectWithResponse(ctx, "lake", schemas.BranchName("billing", tr.id), &apigen.DeleteObjectParams{Path: o.Path})
		must(t, err)
		if del.StatusCode() != http.StatusNoContent {
			t.Fatalf("delete %s: %d %s", o.Path, del.StatusCode(), del.Body)
		}
	}
	must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: tr.id, Dataset: "billing", Write: "billing_fact", Paths: []string{fileZ},
		OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ev, err := e.Watcher.Await(ctx, tr.id, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	if ab, ok := ev.(schemas.BatchAborted); !ok || ab.Reason != schemas.ReasonAuditFailed || ab.Report == nil ||
		!slices.ContainsFunc(ab.Report.Failed(), func(c schemas.CheckResult) bool {
			return c.Kind == audit.KindMergeHazard && strings.Contains(c.Observed, fileL)
		}) {
		t.Errorf("the truncating batch ended %s %+v; want aborted audit_failed by merge_hazard naming %s", ev.EventType(), ev, fileL)
	}
	if n, err := e.CountRows(ctx, "main", "gold/billing_a/", ""); err != nil || n != int64(z.rows) {
		t.Errorf("main holds %d of the published ledger batch's %d rows (err %v)", n, z.rows, err)
	}
}

// ledgerDataset is dataset ds's settings for dataset ledger, whose one
// table ledger_fact at path must gain rows in each batch.
func ledgerDataset(ds config.Dataset, path string) config.Dataset {
	one := 1.0
	ds.Suite = audit.Suite{Tables: []audit.Table{{Name: "ledger_fact", Path: path, Format: "parquet"}},
		Checks: []audit.Check{{Name: "ledger_rows", Kind: audit.KindRowCount, Table: "ledger_fact", Min: &one, Scope: audit.ScopeBatch}}}
	return ds
}
