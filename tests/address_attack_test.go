package tests

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/treeverse/lakefs/pkg/api/apigen"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/schemas"
)

// TestStagedObjectOutsideTheStorageNamespaceIsRefused performs the staging
// attack on the real lakeFS server: a writer stages, at the batch's table
// path, an object whose physical address is a file of another repository
// (its storage namespace local://other). Its rows are good, so every check
// passes, but publishing it would put bytes lakewap does not own on main:
// another repository's data, or, on an object store, bytes the writer can
// change after the publish. The batch must be aborted naming the object,
// and main must not get it.
func TestStagedObjectOutsideTheStorageNamespaceIsRefused(t *testing.T) {
	e := startE2E(t, func(*config.Config) {})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	must(t, e.Stack.CreateRepository(ctx, "other"))
	obj, err := smallParquet(t.TempDir())
	must(t, err)
	must(t, e.Lake.Upload(ctx, "other", "main", "private/part-0.parquet", bytes.NewReader(obj)))
	theirs, err := e.Lake.List(ctx, "other", "main", "private/")
	must(t, err)
	if len(theirs) != 1 || !strings.Contains(theirs[0].PhysicalAddress, "/other/data/") {
		t.Fatalf("the other repository's object: %+v", theirs)
	}

	api := e.lakeFSAPI(t)
	// main protected, as users keep it: lakewap learns its data prefix anyway.
	bp, err := api.SetBranchProtectionRulesWithResponse(ctx, "lake", &apigen.SetBranchProtectionRulesParams{},
		apigen.SetBranchProtectionRulesJSONRequestBody{{Pattern: "main"}})
	must(t, err)
	if bp.StatusCode() != http.StatusNoContent {
		t.Fatalf("protect main: %d %s", bp.StatusCode(), bp.Body)
	}
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: "foreign-1", Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ev, err := e.Watcher.Await(ctx, "foreign-1", schemas.TypeBranchReady)
	must(t, err)
	branch := ev.(schemas.BranchReady).Branch
	path := "gold/billing_fact/batch=foreign-1/part-0.parquet"
	resp, err := api.StageObjectWithResponse(ctx, "lake", branch, &apigen.StageObjectParams{Path: path},
		apigen.StageObjectJSONRequestBody{PhysicalAddress: theirs[0].PhysicalAddress, Checksum: theirs[0].Checksum, SizeBytes: theirs[0].Size})
	must(t, err)
	if resp.StatusCode() != http.StatusCreated {
		t.Fatalf("stage object: %d %s", resp.StatusCode(), resp.Body)
	}
	must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: "foreign-1", Dataset: "billing", Write: "billing_fact",
		Paths: []string{path}, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	final, err := e.Watcher.Await(ctx, "foreign-1", schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	ab, ok := final.(schemas.BatchAborted)
	if !ok || ab.Report == nil {
		t.Fatalf("the batch of another repository's object ended %s %+v, want aborted by its audit", final.EventType(), final)
	}
	var named bool
	for _, c := range ab.Report.Failed() {
		named = named || (c.Kind == "foreign_addresses" && strings.Contains(c.Observed, path))
	}
	if !named {
		t.Errorf("no failed foreign_addresses check naming %s: %+v", path, ab.Report.Failed())
	}
	objs, err := e.Lake.List(ctx, "lake", "main", "gold/billing_fact/batch=foreign-1/")
	must(t, err)
	if len(objs) != 0 {
		t.Errorf("main has the staged object: %+v", objs)
	}
}
