package tests

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// rowsFrom is GoodBillingRows with ids from start.
func rowsFrom(start string) string {
	return strings.Replace(harness.GoodBillingRows, "lpad(i::VARCHAR", "lpad(("+start+" + i)::VARCHAR", 1)
}

// TestEndToEndIncrementalAfterAttestedPublish (real lakeFS): each publish's
// merge commit carries an attestation lakewap takes; the next batch's audit
// is incremental and still stops a batch whose ids are already on main,
// naming unique; a direct commit to main makes the next audit full, says
// why, and makes lakewap verify exit 1.
func TestEndToEndIncrementalAfterAttestedPublish(t *testing.T) {
	e := startE2E(t, nil)
	ctx := context.Background()
	digest := audit.SuiteDigest(e.cfg.Datasets["billing"].Suite)

	first, ok := e.runBatch(t, "inc-1", harness.GoodBillingRows).(schemas.BatchPublished)
	if !ok {
		t.Fatal("first batch not published")
	}
	if first.Report.Mode != audit.ModeFull || first.Report.ModeReason == "" {
		t.Errorf("first audit: mode %q (%q), want full with a reason (main's first commit is not attested)", first.Report.Mode, first.Report.ModeReason)
	}
	head, err := e.Lake.GetCommit(ctx, "lake", "main")
	must(t, err)
	if _, err := audit.Attested(audit.CommitInfo{ID: head.ID, Parents: head.Parents, Metadata: head.Metadata}, "billing", digest, nil); err != nil {
		t.Fatalf("the publish's merge commit is not attested: %v (%v)", err, head.Metadata)
	}

	second, ok := e.runBatch(t, "inc-2", rowsFrom("5000")).(schemas.BatchPublished)
	if !ok {
		t.Fatal("second batch not published")
	}
	if second.Report.Mode != audit.ModeIncremental {
		t.Fatalf("second audit: mode %q (%q), want incremental", second.Report.Mode, second.Report.ModeReason)
	}
	dup, ok := e.runBatch(t, "inc-3", harness.GoodBillingRows).(schemas.BatchAborted)
	if !ok || dup.Report == nil || dup.Report.Mode != audit.ModeIncremental {
		t.Fatalf("a batch re-sending inc-1's ids: %+v", dup)
	}
	failed := dup.Report.Failed()
	if len(failed) != 1 || failed[0].Name != "billing_id_unique" || !strings.HasPrefix(failed[0].Observed, "1000 duplicate rows of 3000") {
		t.Fatalf("failed checks %+v, want billing_id_unique with 1000 duplicates of 3000 rows", failed)
	}

	// A direct commit to main: the next audit is full and says so.
	must(t, e.Lake.Upload(ctx, "lake", "main", "notes/readme.txt", strings.NewReader("by hand")))
	_, err = e.Lake.Commit(ctx, "lake", "main", "a change by hand", nil)
	must(t, err)
	cfgPath := writeAuditConfig(t, e, e.cfg.LakeFS.Endpoint)
	if code, out, errOut := runCLI(t, "verify", "-config", cfgPath, "-dataset", "billing"); code != 1 || !strings.Contains(out, "a change by hand") {
		t.Errorf("verify exit %d, want 1 naming the direct commit:\n%s%s", code, out, errOut)
	}
	after, ok := e.runBatch(t, "inc-4", rowsFrom("9000")).(schemas.BatchPublished)
	if !ok || after.Report.Mode != audit.ModeFull || !strings.Contains(after.Report.ModeReason, "not an attested publish") {
		t.Fatalf("after a direct commit: %+v", after.Report)
	}
}

// TestUnattestedCommitIsAnnouncedOnce (real lakeFS, slacktest): a direct
// commit on main makes the next audit full, and it is announced once, by
// the publish that lands on it: one UnattestedChange on the results topic
// naming it and one Slack message of its own. The batches after it, whose
// audits are incremental again, announce nothing.
func TestUnattestedCommitIsAnnouncedOnce(t *testing.T) {
	slackSrv := newSlackAPI(t)
	var mu sync.Mutex
	idle := map[string]bool{} // batch -> published with nothing left to send
	e := startE2EWith(t, func(c *config.Config) {
		c.Notify.Slack = &config.Slack{Token: "xoxb-e2e-secret", Channel: "C0WAP", APIURL: slackSrv.GetAPIURL()}
	}, daemon.Options{Observe: func(_, after pipeline.Run) {
		mu.Lock()
		defer mu.Unlock()
		idle[after.BatchID] = after.State == pipeline.StatePublished && len(after.Outbox) == 0
	}})
	ctx := context.Background()
	batches := []string{"ann-1", "ann-2", "ann-3"}
	if _, ok := e.runBatch(t, batches[0], harness.GoodBillingRows).(schemas.BatchPublished); !ok {
		t.Fatal("first batch not published")
	}
	must(t, e.Lake.Upload(ctx, "lake", "main", "notes/readme.txt", strings.NewReader("by hand")))
	direct, err := e.Lake.Commit(ctx, "lake", "main", "a change by hand", nil)
	must(t, err)
	second, ok := e.runBatch(t, batches[1], rowsFrom("5000")).(schemas.BatchPublished)
	if !ok || second.Report.Mode != audit.ModeFull || !strings.Contains(second.Report.ModeReason, "not an attested publish") {
		t.Fatalf("the batch after a direct commit: %+v; want published after a full audit saying why", second.Report)
	}
	third, ok := e.runBatch(t, batches[2], rowsFrom("9000")).(schemas.BatchPublished)
	if !ok || third.Report.Mode != audit.ModeIncremental {
		t.Fatalf("the batch after that: %+v; want published after an incremental audit", third.Report)
	}
	waitFor(t, func() bool { // every event of the three runs sent
		mu.Lock()
		defer mu.Unlock()
		return idle[batches[0]] && idle[batches[1]] && idle[batches[2]]
	})

	var changes []schemas.UnattestedChange
	for _, b := range batches {
		for _, ev := range e.Watcher.All(b) {
			if c, ok := ev.(schemas.UnattestedChange); ok {
				changes = append(changes, c)
			}
		}
	}
	if len(changes) != 1 {
		t.Fatalf("%d announcements on the results topic, want 1: %+v", len(changes), changes)
	}
	c := changes[0]
	if c.Kind != schemas.ChangeUnattestedCommit || c.CommitID != direct || c.BatchID != batches[1] || c.Message != "a change by hand" ||
		c.PublishedCommitID != second.CommitID || c.TargetRef != "main" {
		t.Errorf("announcement %+v; want the direct commit %s, found by %s's publish %s", c, direct, batches[1], second.CommitID)
	}
	slackSrv.mu.Lock()
	defer slackSrv.mu.Unlock()
	said := 0
	for _, txt := range slackSrv.texts {
		if strings.Contains(txt, "did not attest") {
			said++
		}
	}
	if said != 1 || slackSrv.posts != len(batches)+1 {
		t.Errorf("slack: %d messages about a commit lakewap did not attest, %d posts; want 1, and one message per batch besides", said, slackSrv.posts)
	}
}

// TestSuiteChangeIsAnnouncedOnce (real lakeFS): a daemon restarted with one
// more check in the dataset's suite audits the next batch full, and its
// publish announces the suite change once (UnattestedChange kind
// suite_changed naming the last publish under the old suite and both
// digests); the batch after it is incremental and announces nothing.
func TestSuiteChangeIsAnnouncedOnce(t *testing.T) {
	tmp := t.TempDir()
	stack := devstack.StartForTest(t, devstack.Options{WorkDir: tmp, Repository: "lake", Topics: harness.StackTopics()})
	cfg := harness.DemoConfig(stack, tmp)
	must(t, cfg.Validate())
	envCtx, envCancel := context.WithCancel(context.Background())
	defer envCancel()
	start := func(cfg *config.Config, observe func(_, after pipeline.Run)) (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		d, err := daemon.New(ctx, cfg, daemon.Options{Logger: slog.New(slog.DiscardHandler), Console: io.Discard, Observe: observe})
		must(t, err)
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()
		return func() {
			cancel()
			select {
			case err := <-done:
				must(t, err)
			case <-time.After(30 * time.Second):
				t.Fatal("daemon did not stop")
			}
		}
	}
	stop := start(cfg, nil)
	env, err := harness.New(envCtx, stack, cfg, tmp)
	must(t, err)
	t.Cleanup(env.Close)
	e := &e2e{Env: env, cfg: cfg}
	old, ok := e.runBatch(t, "suite-1", harness.GoodBillingRows).(schemas.BatchPublished)
	if !ok {
		t.Fatal("first batch not published")
	}
	stop()

	changed := *cfg
	changed.Datasets = maps.Clone(cfg.Datasets)
	ds := changed.Datasets["billing"]
	ds.Suite.Checks = append(slices.Clone(ds.Suite.Checks), audit.Check{Name: "fact_not_empty", Kind: "row_count", Table: "billing_fact", Min: ptrTo(1.0)})
	changed.Datasets["billing"] = ds
	must(t, changed.Validate())
	var mu sync.Mutex
	idle := map[string]bool{}
	stop = start(&changed, func(_, after pipeline.Run) {
		mu.Lock()
		defer mu.Unlock()
		idle[after.BatchID] = after.State == pipeline.StatePublished && len(after.Outbox) == 0
	})
	defer stop()
	second, ok := e.runBatch(t, "suite-2", rowsFrom("5000")).(schemas.BatchPublished)
	if !ok || second.Report.Mode != audit.ModeFull || !strings.Contains(second.Report.ModeReason, "another suite") {
		t.Fatalf("the batch after the suite changed: %+v; want published after a full audit saying why", second.Report)
	}
	third, ok := e.runBatch(t, "suite-3", rowsFrom("9000")).(schemas.BatchPublished)
	if !ok || third.Report.Mode != audit.ModeIncremental {
		t.Fatalf("the batch after that: %+v; want incremental", third.Report)
	}
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return idle["suite-2"] && idle["suite-3"]
	})
	var changes []schemas.UnattestedChange
	for _, b := range []string{"suite-1", "suite-2", "suite-3"} {
		for _, ev := range env.Watcher.All(b) {
			if c, ok := ev.(schemas.UnattestedChange); ok {
				changes = append(changes, c)
			}
		}
	}
	want := schemas.UnattestedChange{Kind: schemas.ChangeSuiteChanged, BatchID: "suite-2", CommitID: old.CommitID,
		Suite: audit.SuiteDigest(ds.Suite), PreviousSuite: audit.SuiteDigest(cfg.Datasets["billing"].Suite)}
	if len(changes) != 1 {
		t.Fatalf("%d announcements, want 1: %+v", len(changes), changes)
	}
	c := changes[0]
	if c.Kind != want.Kind || c.BatchID != want.BatchID || c.CommitID != want.CommitID || c.Suite != want.Suite || c.PreviousSuite != want.PreviousSuite {
		t.Errorf("announcement %+v; want %+v", c, want)
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestCommitAfterTheBranchIsJudgedByTheRecheck (real lakeFS): the audit
// step's base is the commit the batch's branch was made from, and the audit
// reads the table at the seal; a direct commit on main after the branch was
// made, adding a file with the batch's ids, is not in what that audit
// reads, and the publish's recheck against main's head refuses the batch
// naming billing_id_unique and that commit; nothing is merged. A guard (it
// passed with the audit step's base read from main's head too: the audit's
// foundation was the branch's commit then as well).
func TestCommitAfterTheBranchIsJudgedByTheRecheck(t *testing.T) {
	e := startE2E(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, ok := e.runBatch(t, "snap-1", rowsFrom("5000")).(schemas.BatchPublished); !ok {
		t.Fatal("first batch not published")
	}
	const batch = "snap-2"
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: batch, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ev, err := e.Watcher.Await(ctx, batch, schemas.TypeBranchReady)
	must(t, err)
	branch := ev.(schemas.BranchReady).Branch
	must(t, e.WriteParquet(ctx, "main", "gold/billing_fact/batch=by-hand/part-0.parquet", harness.GoodBillingRows))
	direct, err := e.Lake.Commit(ctx, "lake", "main", "the batch's ids, by hand", nil)
	must(t, err)
	path := "gold/billing_fact/batch=" + batch + "/part-0.parquet"
	must(t, e.WriteParquet(ctx, branch, path, harness.GoodBillingRows))
	must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: batch, Dataset: "billing", Write: "billing_fact",
		Paths: []string{path}, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	final, err := e.Watcher.Await(ctx, batch, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	ab, ok := final.(schemas.BatchAborted)
	if !ok || ab.Reason != schemas.ReasonAuditFailed || !strings.Contains(ab.Detail, "billing_id_unique") ||
		!strings.Contains(ab.Detail, "collides with commit "+direct) {
		t.Fatalf("batch after a direct commit with its ids: %s %+v; want aborted audit_failed naming billing_id_unique and commit %s", final.EventType(), final, direct)
	}
	head, err := e.Lake.GetCommit(ctx, "lake", "main")
	must(t, err)
	if head.ID != direct {
		t.Errorf("main at %s, want the direct commit %s: nothing merged", head.ID, direct)
	}
}
