package tests

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/treeverse/lakefs/pkg/api/apigen"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/internal/harness"
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

// TestMerge64TwoInstancesFromASourceWithoutTheTargetsAction: lakeFS runs the
// pre-merge actions of a merge's source, not of its target (v1.84.0,
// catalog.ActionsSource lists the hook record's SourceRef). staging forked
// from main before lakewap's action was committed to main, so the seal of
// a batch from staging holds no action and lakewap's own merge of it runs
// no hook: the one thing that serializes two instances' merges into one
// target. Two instances, each publishing a batch from staging with the same
// ids, both looked at the same head, both rechecked onto it alone, both
// merged (held at before_merge until both got there), and main held every
// id twice. A publish onto a head whose pre-merge actions (_lakefs_actions/)
// the seal does not hold alike is refused (merge_conflict, naming them).
func TestMerge64TwoInstancesFromASourceWithoutTheTargetsAction(t *testing.T) {
	t.Setenv("LAKEFSACTION_LAKEWAP_TOKEN", "two-instances-64")
	tmp := t.TempDir()
	stack := devstack.StartForTest(t, devstack.Options{WorkDir: tmp, Repository: "lake", Topics: harness.StackTopics()})
	cfg := harness.DemoConfig(stack, tmp)
	cfg.HTTP.Listen, cfg.HTTP.WebhookToken = "127.0.0.1:0", "two-instances-64"
	ds := cfg.Datasets["billing"]
	ds.SourceRefs = []string{"main", "staging"}
	cfg.Datasets["billing"] = ds
	must(t, cfg.Validate())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	barriers := meetBeforeMerge(2)
	owners := []*ownership{{owned: map[int]bool{}}, {owned: map[int]bool{}}}
	var daemons []*daemon.Daemon
	for i := range 2 {
		daemons = append(daemons, runDaemon(t, ctx, cancel, cfg, daemon.Options{Logger: slog.New(owners[i]), Console: io.Discard, Failpoint: barriers[i]}, i))
	}
	env, err := harness.New(ctx, stack, cfg, tmp)
	must(t, err)
	t.Cleanup(env.Close)
	// staging forks from main before the action is installed on main.
	must(t, env.WriteParquet(ctx, "main", "gold/billing_fact/batch=seed/part-0.parquet", billingRows(900000, 0, 100, "BIGINT")))
	_, err = env.Lake.Commit(ctx, "lake", "main", "seed", nil)
	must(t, err)
	_, err = env.Lake.EnsureBranch(ctx, "lake", "staging", "main")
	must(t, err)
	installAction(t, env, "http://"+daemons[0].HTTPAddr()+daemon.PreMergePath)
	waitFor(t, func() bool {
		a, b := owners[0].partitions(), owners[1].partitions()
		return len(a) > 0 && len(b) > 0 && len(a)+len(b) == cfg.Kafka.Partitions
	})
	pick := func(owned []int) string {
		for i := 0; ; i++ {
			id := fmt.Sprintf("two64-%d-%d", time.Now().UnixNano(), i)
			p := (&kafka.Murmur2Balancer{}).Balance(kafka.Message{Key: []byte(id)}, 0, 1, 2)
			if slices.Contains(owned, p) {
				return id
			}
		}
	}
	a, b := pick(owners[0].partitions()), pick(owners[1].partitions())
	lctx, lcancel := context.WithTimeout(ctx, 5*time.Minute)
	defer lcancel()
	for _, id := range []string{a, b} {
		must(t, env.Produce(lctx, schemas.BatchLanded{BatchID: id, Dataset: "billing", ExpectedWrites: []string{"billing_fact"}, SourceRef: "staging",
			Producer: "serial", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
		ev, err := env.Watcher.Await(lctx, id, schemas.TypeBranchReady)
		must(t, err)
		must(t, env.WriteParquet(lctx, ev.(schemas.BranchReady).Branch, "gold/billing_fact/batch="+id+"/part-0.parquet", billingRows(700000, 0, 30, "BIGINT")))
	}
	for _, id := range []string{a, b} { // completed together
		must(t, env.Produce(lctx, schemas.WriteComplete{BatchID: id, Dataset: "billing", Write: "billing_fact",
			Paths: []string{"gold/billing_fact/batch=" + id + "/part-0.parquet"}, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	}
	finals := map[string]schemas.Event{}
	for _, id := range []string{a, b} {
		ev, err := env.Watcher.Await(lctx, id, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
		must(t, err)
		finals[id] = ev
	}
	head, err := env.Lake.Head(ctx, "lake", "main")
	must(t, err)
	tableChecksHold(t, daemons[0].Engine(), cfg, head)
	for _, id := range []string{a, b} {
		ab, ok := finals[id].(schemas.BatchAborted)
		if !ok || ab.Reason != schemas.ReasonMergeConflict || !strings.Contains(ab.Detail, "_lakefs_actions/") {
			t.Errorf("batch %s from staging, which lacks main's pre-merge action: %s %+v; want aborted merge_conflict naming _lakefs_actions/", id, finals[id].EventType(), finals[id])
		}
	}
}
