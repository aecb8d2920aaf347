package tests

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/treeverse/lakefs/pkg/api/apigen"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/schemas"
)

// TestStagedObjectClaimingAuditedChecksum performs the cache attack on the
// real lakeFS server: a writer stages bad rows at a table path while
// claiming the checksum and size of an object lakewap has already audited
// and cached. The audit must read the staged object's own bytes, so the bad
// rows never reach main.
func TestStagedObjectClaimingAuditedChecksum(t *testing.T) {
	e := startE2E(t, func(c *config.Config) {
		c.Runner.RetryBudget = config.Duration(2 * time.Second)
		// Without a uniqueness check, rows equal to main's pass: the cached
		// object of an earlier batch is then a passing stand-in.
		ds := c.Datasets["billing"]
		var checks []audit.Check
		for _, ch := range ds.Suite.Checks {
			if ch.Kind != "unique" {
				checks = append(checks, ch)
			}
		}
		ds.Suite.Checks = checks
		c.Datasets["billing"] = ds
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if ev := e.runBatch(t, "cached-1", harness.GoodBillingRows); ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("good batch ended with %+v", ev)
	}
	goodObjs, err := e.Lake.List(ctx, "lake", "main", "gold/billing_fact/batch=cached-1/")
	must(t, err)
	if len(goodObjs) != 1 {
		t.Fatalf("good batch objects on main: %+v", goodObjs)
	}
	good := goodObjs[0]

	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: "evil-1", Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ev, err := e.Watcher.Await(ctx, "evil-1", schemas.TypeBranchReady)
	must(t, err)
	branch := ev.(schemas.BranchReady).Branch
	path := "gold/billing_fact/batch=evil-1/part-0.parquet"
	must(t, e.WriteParquet(ctx, branch, path, harness.BadBillingRows))
	staged, err := e.Lake.List(ctx, "lake", branch, path)
	must(t, err)
	if len(staged) != 1 {
		t.Fatalf("staged objects: %+v", staged)
	}
	// Re-stage the same bytes, claiming the audited object's checksum and size.
	api := e.lakeFSAPI(t)
	resp, err := api.StageObjectWithResponse(ctx, "lake", branch, &apigen.StageObjectParams{Path: path},
		apigen.StageObjectJSONRequestBody{PhysicalAddress: staged[0].PhysicalAddress, Checksum: good.Checksum, SizeBytes: good.Size})
	must(t, err)
	if resp.StatusCode() != http.StatusCreated {
		t.Fatalf("stage object: %d %s", resp.StatusCode(), resp.Body)
	}
	claimed, err := e.Lake.List(ctx, "lake", branch, path)
	must(t, err)
	if len(claimed) != 1 || claimed[0].Checksum != good.Checksum || claimed[0].Size != good.Size {
		t.Fatalf("lakeFS lists the staged object as %+v; the attack needs the audited object's checksum %s and size %d", claimed, good.Checksum, good.Size)
	}
	must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: "evil-1", Dataset: "billing", Write: "billing_fact",
		Paths: []string{path}, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	final, err := e.Watcher.Await(ctx, "evil-1", schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	if final.EventType() == schemas.TypeBatchPublished {
		t.Errorf("the batch with bad rows was published: %+v", final)
	}
	if n, err := e.CountRows(ctx, "main", "gold/billing_fact/", "billing_id IS NULL"); err != nil || n != 0 {
		t.Errorf("main has %d NULL billing ids (err %v)", n, err)
	}
	objs, err := e.Lake.List(ctx, "lake", "main", "gold/billing_fact/batch=evil-1/")
	must(t, err)
	if len(objs) != 0 {
		t.Errorf("main has the staged object: %+v", objs)
	}
	t.Logf("final event: %s %+v", final.EventType(), final)
}
