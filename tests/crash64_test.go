package tests

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
	"github.com/treeverse/lakefs/pkg/api/apigen"
)

// TestCrash64KilledAfterAnOntoVerdictIsStoredIsRecheckedAfterAHardReset:
// a batch from staging (forked from main at 100 rows, main at 1,100 since)
// is audited onto main's head and passes (1,105 rows against 1,100 under a
// max_growth_pct of 3); the daemon is SIGKILLed at before_merge, its
// record storing the verdict with the head it judged (audited_onto). While
// it is down main is hard-reset onto the fork point, the seal's merge-base:
// the daemon after it must recheck the seal (never audited itself) onto
// the reset head and abort it, not merge it. Main keeps its 100 rows, no
// publish commit, and each result event has one id.
func TestCrash64KilledAfterAnOntoVerdictIsStoredIsRecheckedAfterAHardReset(t *testing.T) {
	if testing.Short() {
		t.Skip("crash tests run the daemon as a process; skipped with -short")
	}
	stack, env, cfgPath := procStack(t, "5m")
	src, err := os.ReadFile(cfgPath)
	must(t, err)
	y := strings.Replace(string(src), "    tables: [{name: billing_fact, path: gold/billing_fact/}]\n",
		"    tables: [{name: billing_fact, path: gold/billing_fact/}]\n    source_refs: [main, staging]\n", 1)
	y += "      - {name: billing_volume, kind: volume_change, table: billing_fact, max_growth_pct: 3}\n"
	if !strings.Contains(y, "source_refs") {
		t.Fatal("config not rewritten")
	}
	must(t, os.WriteFile(cfgPath, []byte(y), 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	api := (&e2e{Env: env}).lakeFSAPI(t)
	must(t, env.WriteParquet(ctx, "main", "gold/billing_fact/batch=seed/part-0.parquet", billingRows(900000, 0, 100, "BIGINT")))
	commitOn(t, ctx, api, "main", "seed")
	fork, err := env.Lake.Head(ctx, "lake", "main")
	must(t, err)
	if resp, err := api.CreateBranchWithResponse(ctx, "lake", apigen.CreateBranchJSONRequestBody{Name: "staging", Source: "main"}); err != nil || resp.StatusCode() != http.StatusCreated {
		t.Fatalf("create staging: %v %v", err, resp)
	}
	must(t, env.WriteParquet(ctx, "main", "gold/billing_fact/batch=u/part-0.parquet", billingRows(100000, 0, 1000, "BIGINT")))
	commitOn(t, ctx, api, "main", "1,000 rows")

	const batch = "onto-killed"
	first := startProc(t, stack, cfgPath, "before_merge")
	must(t, env.Produce(ctx, schemas.BatchLanded{BatchID: batch, Dataset: "billing", ExpectedWrites: []string{"billing_fact"}, SourceRef: "staging",
		Producer: "crash-test", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ev, err := env.Watcher.Await(ctx, batch, schemas.TypeBranchReady)
	must(t, err)
	path := "gold/billing_fact/batch=" + batch + "/part-0.parquet"
	must(t, env.WriteParquet(ctx, ev.(schemas.BranchReady).Branch, path, billingRows(800000, 0, 5, "BIGINT")))
	must(t, env.Produce(ctx, schemas.WriteComplete{BatchID: batch, Dataset: "billing", Write: "billing_fact",
		Paths: []string{path}, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	if final, died, err := awaitOrExit(ctx, env, first, batch, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed); err != nil || !died {
		t.Fatalf("the daemon did not die at before_merge: %+v, %v", final, err)
	}
	if !first.killedBySIGKILL() || !first.logHas("auditing") && !first.logHas("failpoint reached") {
		t.Fatalf("the daemon exited without reaching before_merge: %v", first.err)
	}
	hr, err := api.HardResetBranchWithResponse(ctx, "lake", "main", &apigen.HardResetBranchParams{Ref: fork})
	if err != nil || hr.StatusCode() != http.StatusNoContent {
		t.Fatalf("hard reset: %v %v", err, hr)
	}
	startProc(t, stack, cfgPath, "")
	final, err := env.Watcher.Await(ctx, batch, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	rows, err := env.CountRows(ctx, "main", "gold/billing_fact/", "")
	must(t, err)
	if ab, ok := final.(schemas.BatchAborted); !ok || ab.Reason != schemas.ReasonAuditFailed || !ab.BranchKept {
		t.Fatalf("after the restart the batch ended %s %+v (main holds %d rows); want aborted audit_failed, branch kept, by the recheck onto the reset head", final.EventType(), final, rows)
	}
	if n := publishCommits(t, env, batch); n != 0 || rows != 100 {
		t.Errorf("%d publish commits, %d rows on main; want none and the reset head's 100", n, rows)
	}
	ids := map[string]map[string]bool{}
	for _, ev := range env.Watcher.All(batch) {
		if ids[ev.EventType()] == nil {
			ids[ev.EventType()] = map[string]bool{}
		}
		ids[ev.EventType()][ev.ID()] = true
	}
	for typ, set := range ids {
		if len(set) != 1 {
			t.Errorf("%s emitted with %d different event ids, want 1", typ, len(set))
		}
	}
}
