package tests

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/treeverse/lakefs/pkg/api/apigen"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/schemas"
)

// TestRelinkedObjectMergedIntoABatchIsRefused performs the relink attack
// through the daemon on the real lakeFS server. Batch good-1 publishes P.
// A writer's branch x, made before P existed, links P to the same number
// of bytes with a NULL billing_id, claiming main's checksum and size; the
// writer of batch relink-2 merges x into the batch's branch. lakeFS
// compares entries by the claimed identity, so no diff names P, and
// merging the batch would publish the NULL id: it must be aborted
// (audit_failed) by relinked_objects naming P, with only scope: batch
// checks as with the default suite, and main must keep P's rows. Batch
// honest-3 merges in a branch linking P to main's very bytes at a new
// address: published. (Before the fix, the batch-scope suite published
// relink-2.)
func TestRelinkedObjectMergedIntoABatchIsRefused(t *testing.T) {
	one := 1.0
	for name, checks := range map[string][]audit.Check{
		"batch": {
			{Name: "billing_id_not_null", Kind: "not_null", Table: "billing_fact", Columns: []string{"billing_id"}, Scope: "batch"},
			{Name: "has_rows", Kind: "row_count", Table: "billing_fact", Min: &one, Scope: "batch"},
		},
		"default": nil, // the demo suite, mostly of the whole table
	} {
		t.Run(name, func(t *testing.T) { relinkAttack(t, checks) })
	}
}

func relinkAttack(t *testing.T, checks []audit.Check) {
	var stack *devstack.Stack
	e := startE2EOn(t, devstack.Options{}, func(s *devstack.Stack, cfg *config.Config) {
		stack = s
		ds := cfg.Datasets["billing"]
		ds.Suite.Tables = []audit.Table{{Name: "billing_fact", Path: "gold/billing_fact/", Format: "csv"}}
		if checks != nil {
			ds.Suite.Checks = checks
		}
		cfg.Datasets["billing"] = ds
	}, daemon.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	api, err := apigen.NewClientWithResponses(stack.LakeFSEndpoint+"/api/v1", apigen.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.SetBasicAuth(stack.AccessKeyID, stack.SecretAccessKey)
		return nil
	}))
	must(t, err)
	// The writer's branches, made before P exists.
	for _, b := range []string{"x", "y"} {
		_, err := e.Lake.EnsureBranch(ctx, "lake", b, "main")
		must(t, err)
	}

	batch := func(id, own string, mergeIn string) schemas.Event {
		t.Helper()
		must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: id, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
			Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
		ev, err := e.Watcher.Await(ctx, id, schemas.TypeBranchReady)
		must(t, err)
		branch := ev.(schemas.BranchReady).Branch
		path := "gold/billing_fact/batch=" + id + "/part-0.csv"
		must(t, e.Lake.Upload(ctx, "lake", branch, path, strings.NewReader(own)))
		if mergeIn != "" {
			_, err := e.Lake.Commit(ctx, "lake", branch, "the batch's own rows", nil)
			must(t, err)
			_, err = e.Lake.Merge(ctx, "lake", mergeIn, branch, "take "+mergeIn, nil)
			must(t, err)
		}
		must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: id, Dataset: "billing", Write: "billing_fact",
			Paths: []string{path}, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
		final, err := e.Watcher.Await(ctx, id, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
		must(t, err)
		return final
	}

	good := claimedCSV(4096, 1)
	if final := batch("good-1", good, ""); final.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("good-1 ended %s %+v", final.EventType(), final)
	}
	p := "gold/billing_fact/batch=good-1/part-0.csv"
	onMain, err := e.Lake.List(ctx, "lake", "main", p)
	must(t, err)
	if len(onMain) != 1 {
		t.Fatalf("main's %s: %+v", p, onMain)
	}
	bad := strings.Replace(good, "\n1,11,100,EUR,", "\n,11,100,EUR,x", 1) // a NULL billing_id, same size
	if bad == good || len(bad) != len(good) {
		t.Fatal("the bad rows are not the good rows' size with a NULL id")
	}
	relink := func(branch, content string) {
		no := false
		loc, err := api.GetPhysicalAddressWithResponse(ctx, "lake", branch, &apigen.GetPhysicalAddressParams{Path: p, Presign: &no})
		must(t, err)
		if loc.JSON200 == nil || loc.JSON200.PhysicalAddress == nil {
			t.Fatalf("get physical address: %d %s", loc.StatusCode(), loc.Body)
		}
		full := *loc.JSON200.PhysicalAddress
		i := strings.Index(full, "/lake/data/")
		if i < 0 {
			t.Fatalf("the address lakeFS gave: %s", full)
		}
		file := strings.TrimPrefix(full, "local://")
		must(t, os.MkdirAll(filepath.Dir(file), 0o755))
		must(t, os.WriteFile(file, []byte(content), 0o644))
		addr := "local://lake/" + full[i+len("/lake/"):]
		link, err := api.LinkPhysicalAddressWithResponse(ctx, "lake", branch, &apigen.LinkPhysicalAddressParams{Path: p},
			apigen.LinkPhysicalAddressJSONRequestBody{Staging: apigen.StagingLocation{PhysicalAddress: &addr}, Checksum: onMain[0].Checksum, SizeBytes: onMain[0].Size})
		must(t, err)
		if link.StatusCode() != http.StatusOK {
			t.Fatalf("link physical address: %d %s", link.StatusCode(), link.Body)
		}
		_, err = e.Lake.Commit(ctx, "lake", branch, "relink "+p, nil)
		must(t, err)
	}
	relink("x", bad)
	relink("y", good)

	final := batch("relink-2", claimedCSV(4096, 100_000), "x")
	ab, ok := final.(schemas.BatchAborted)
	if !ok || ab.Report == nil || ab.Reason != schemas.ReasonAuditFailed {
		t.Fatalf("the batch that merged in %s at a NULL id ended %s %+v, want aborted audit_failed", p, final.EventType(), final)
	}
	var named bool
	for _, c := range ab.Report.Failed() {
		named = named || (c.Kind == "relinked_objects" && strings.Contains(c.Observed, p))
	}
	if !named {
		t.Errorf("no failed relinked_objects naming %s: %+v", p, ab.Report.Failed())
	}
	var sb strings.Builder
	must(t, e.Lake.Download(ctx, "lake", "main", p, &sb))
	if sb.String() != good {
		t.Errorf("main serves other bytes at %s after relink-2", p)
	}

	if final := batch("honest-3", claimedCSV(4096, 200_000), "y"); final.EventType() != schemas.TypeBatchPublished {
		t.Errorf("honest-3 (%s linked again to main's bytes) ended %s %+v", p, final.EventType(), final)
	}
}
