package tests

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/schemas"
)

// A batch audited before a restart and published after it, onto a target
// that did not move, was merged on the verdict of the suites of the old
// config: a check added at the restart (to the batch's own dataset, or to
// another dataset of the same target sharing a table the batch changes)
// never judged it, and main held data failing the check in force. The
// run records the digest of the suites its verdict was reached under; the
// publish rechecks the batch against the target's head under the suites
// in force when that digest differs.

// TestOwnSuiteChangedAcrossARestartIsRechecked: the daemon audits a batch of
// 1,000 rows and is killed before its merge; it is restarted with a new
// check of the dataset allowing at most 999 rows. The batch is aborted
// audit_failed naming that check; none of its rows reach main.
func TestOwnSuiteChangedAcrossARestartIsRechecked(t *testing.T) {
	suiteChangeAcrossRestart(t, "suite-own-1",
		"      - {name: at_most_999_rows, kind: row_count, table: billing_fact, max: 999}\n", "at_most_999_rows")
}

// TestNeighborSuiteChangedAcrossARestartIsRechecked: as above, the check
// added at the restart being another dataset's (billing_guard), which
// declares the same table: the batch is aborted naming it with its dataset.
func TestNeighborSuiteChangedAcrossARestartIsRechecked(t *testing.T) {
	suiteChangeAcrossRestart(t, "suite-neighbor-1", `  billing_guard:
    repository: lake
    tables: [{name: billing_fact, path: gold/billing_fact/}]
    checks:
      - {name: at_most_999_rows, kind: row_count, table: billing_fact, max: 999}
`, "at_most_999_rows (dataset billing_guard)")
}

func suiteChangeAcrossRestart(t *testing.T, batch, addYAML, wantCheck string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env, _, final := publishAcrossARestart(t, ctx, batch, addYAML)
	ab, ok := final.(schemas.BatchAborted)
	if !ok || ab.Reason != schemas.ReasonAuditFailed || !strings.Contains(ab.Detail, wantCheck) ||
		!strings.Contains(ab.Detail, "the suites changed since its audit") {
		t.Fatalf("batch audited under the old config, published under the new one: %s %+v; want aborted audit_failed naming %s and the suite change",
			final.EventType(), final, wantCheck)
	}
	if n := publishCommits(t, env, batch); n != 0 {
		t.Errorf("%d publish commits of %s on main, want none", n, batch)
	}
	if n, err := env.CountRows(ctx, "main", "gold/billing_fact/batch="+batch+"/", ""); err != nil || n != 0 {
		t.Errorf("main has %d rows of the batch (err %v), want none", n, err)
	}
}

// TestSuiteChangedAcrossARestartAttestsTheSuiteUsed: the check added at the
// restart passes (at most 5,000 rows): the batch is published, its report
// holds the new check, and the merge commit's attestation names the suite
// in force with every check passed. Before, the report was the old
// suite's, and the attestation named the new suite with its new check not
// passed (taken from no result).
func TestSuiteChangedAcrossARestartAttestsTheSuiteUsed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env, cfgPath, final := publishAcrossARestart(t, ctx, "suite-pass-1",
		"      - {name: at_most_5000_rows, kind: row_count, table: billing_fact, max: 5000}\n")
	pub, ok := final.(schemas.BatchPublished)
	if !ok {
		t.Fatalf("batch ended with %s %+v; want published", final.EventType(), final)
	}
	if !slices.ContainsFunc(pub.Report.Checks, func(c schemas.CheckResult) bool {
		return c.Name == "at_most_5000_rows" && c.Status == schemas.StatusPass
	}) {
		t.Errorf("published report %+v does not hold the check added at the restart, passed", pub.Report.Checks)
	}
	b, err := os.ReadFile(cfgPath)
	must(t, err)
	cfg, err := config.ParseIn(b, func(k string) (string, bool) { return "x", k == "TEST_LAKEFS_SECRET" }, "")
	must(t, err)
	c, err := env.Lake.GetCommit(ctx, "lake", pub.CommitID)
	must(t, err)
	att, err := audit.ParseAttestation(c.Metadata[audit.MetaAttestation], nil)
	must(t, err)
	if want := audit.SuiteDigest(cfg.Datasets["billing"].Suite); att.Suite != want || len(att.NotPassed) != 0 || att.AllNotPassed {
		t.Errorf("attestation %+v; want suite %s (the one in force) with every check passed", att, want)
	}
}

// publishAcrossARestart lands batch on a daemon killed before its merge,
// appends addYAML to the config (the datasets section is last) and
// restarts the daemon: the batch's result event.
func publishAcrossARestart(t *testing.T, ctx context.Context, batch, addYAML string) (*harness.Env, string, schemas.Event) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the daemon as a process; skipped with -short")
	}
	stack, env, cfgPath := procStack(t, "5m")
	first := startProc(t, stack, cfgPath, "before_merge")
	must(t, env.Produce(ctx, schemas.BatchLanded{BatchID: batch, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ev, died, err := awaitOrExit(ctx, env, first, batch, schemas.TypeBranchReady)
	must(t, err)
	if died {
		t.Fatalf("daemon died before BranchReady: %v", first.err)
	}
	path := "gold/billing_fact/batch=" + batch + "/part-0.parquet"
	must(t, env.WriteParquet(ctx, ev.(schemas.BranchReady).Branch, path, harness.GoodBillingRows))
	must(t, env.Produce(ctx, schemas.WriteComplete{BatchID: batch, Dataset: "billing", Write: "billing_fact", Paths: []string{path},
		OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	if _, died, err = awaitOrExit(ctx, env, first, batch, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed); err != nil || !died || !first.killedBySIGKILL() {
		t.Fatalf("first daemon did not stop at before_merge: died=%v err=%v exit=%v", died, err, first.err)
	}

	// The operator changes the config while the daemon is down.
	f, err := os.OpenFile(cfgPath, os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteString(addYAML)
	must(t, err)
	must(t, f.Close())

	startProc(t, stack, cfgPath, "")
	final, err := env.Watcher.Await(ctx, batch, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	return env, cfgPath, final
}
