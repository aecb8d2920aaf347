package tests

import (
	"context"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/harness"
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
