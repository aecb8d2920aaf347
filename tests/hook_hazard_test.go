package tests

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/treeverse/lakefs/pkg/api/apigen"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/schemas"
)

// TestPreMergeHookJudgesATableTheMergeDropsAFileFrom: lakeFS's merge drops a
// path the target added when the merged branch holds no path from it on and
// the merge-base's next path, which the branch deleted, has the same
// claimed checksum and size (audit/mergehazard.go). The pre-merge hook
// skipped a dataset's suite when the merge's three-dot diff (the branch's
// changes since the merge-base) named nothing under its tables, which is
// what the branch changes, not what the merge does to main. A person's
// branch from a main holding zzzz/x (the last path) deletes zzzz/x; billing
// then publishes a file of the same bytes; merging the branch dropped
// billing's published file from main while the hook skipped billing's
// suite ("untouched"). Now the hook asks what the merge commit changes
// under each table, and billing's suite judges it (has_rows: the merge
// adds no rows), so the merge is refused and main keeps the file.
func TestPreMergeHookJudgesATableTheMergeDropsAFileFrom(t *testing.T) {
	t.Setenv("LAKEFSACTION_LAKEWAP_TOKEN", "hook-secret-h")
	e := startE2E(t, func(c *config.Config) { c.HTTP.Listen = "127.0.0.1:0"; c.HTTP.WebhookToken = "hook-secret-h" })
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	installAction(t, e.Env, "http://"+e.d.HTTPAddr()+daemon.PreMergePath)
	rows := billingRows(900000, 0, 20, "BIGINT")
	x := "zzzz/x.parquet"
	must(t, e.WriteParquet(ctx, "main", x, rows))
	_, err := e.Lake.Commit(ctx, "lake", "main", "a file at the repository's last path", nil)
	must(t, err)
	onMain, err := e.Lake.List(ctx, "lake", "main", "")
	must(t, err)
	for _, o := range onMain {
		if o.Path > "gold/" && o.Path != x {
			t.Fatalf("main holds %s after the billing table besides %s: the scenario needs none", o.Path, x)
		}
	}

	// A person's branch deletes zzzz/x.
	_, err = e.Lake.EnsureBranch(ctx, "lake", "cleanup", "main")
	must(t, err)
	del, err := e.lakeFSAPI(t).DeleteObjectWithResponse(ctx, "lake", "cleanup", &apigen.DeleteObjectParams{Path: x})
	must(t, err)
	if del.StatusCode() != http.StatusNoContent {
		t.Fatalf("delete %s: %d %s", x, del.StatusCode(), del.Body)
	}
	_, err = e.Lake.Commit(ctx, "lake", "cleanup", "remove zzzz/x", nil)
	must(t, err)

	// Billing publishes a file of zzzz/x's bytes.
	batch := fmt.Sprintf("p-%d", time.Now().UnixNano())
	if ev := e.runBatch(t, batch, rows); ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("billing batch: %+v", ev)
	}
	published := "gold/billing_fact/batch=" + batch + "/part-0.parquet"
	ps, err := e.Lake.List(ctx, "lake", "main", published)
	must(t, err)
	xs, err := e.Lake.List(ctx, "lake", "main", x)
	must(t, err)
	if len(ps) != 1 || len(xs) != 1 || ps[0].Checksum != xs[0].Checksum || ps[0].Size != xs[0].Size {
		t.Fatalf("the published file %+v is not zzzz/x's bytes %+v", ps, xs)
	}

	_, err = e.Lake.Merge(ctx, "lake", "cleanup", "main", "merge the cleanup by hand", nil)
	t.Logf("merge of the cleanup branch: %v", err)
	if n, cerr := e.CountRows(ctx, "main", "gold/billing_fact/", ""); cerr != nil || n != 20 {
		t.Errorf("main holds %d billing rows after the cleanup merge (err %v, merge %v); want the published batch's 20", n, cerr, err)
	}
	if err == nil {
		t.Errorf("the hook allowed a merge that drops billing's published %s", published)
	} else if !status412(err) {
		t.Errorf("merge of the cleanup branch: %v; want lakeFS's 412 from the hook", err)
	}
}
