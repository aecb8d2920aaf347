package tests

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/pipeline/lakefs"
	"github.com/lakewap/lakewap/schemas"
)

// TestReview57PersonsMergeWithAForgedAttestation (review 57, on lakeFS with
// its ACL server, no audit.attestation_key): an attestation in a merge
// commit's metadata is lakewap's word only if lakewap made the merge.
// lakeFS's merge takes any metadata: a person who may merge into main (user
// writer, group Writers, not lakewap) merged a branch re-sending the first
// batch's ids into main with an attestation copied from lakewap's publish
// and made to match their own merge (its parents). The next batch's audit
// took it for an attested foundation, read only the batch's rows and
// published onto a main whose billing_id is not unique, and lakewap verify
// listed the merge as attested (exit 0). Now the committer must be
// lakewap's own lakeFS user: the audit is full, says why, naming the
// person, and stops the batch; verify exits 1 naming the person.
func TestReview57PersonsMergeWithAForgedAttestation(t *testing.T) {
	var stack *devstack.Stack
	e := startE2EOn(t, devstack.Options{ACL: true}, func(s *devstack.Stack, _ *config.Config) { stack = s }, daemon.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if key, _ := e.cfg.AttestationKey(); len(key) > 0 {
		t.Fatal("the stack's config has an attestation key; this test is about none")
	}

	first, ok := e.runBatch(t, "r57-1", billingRows(570000, 0, 5, "BIGINT")).(schemas.BatchPublished)
	if !ok {
		t.Fatal("the first batch was not published")
	}
	pub, err := e.Lake.GetCommit(ctx, "lake", first.CommitID)
	must(t, err)
	att, err := audit.ParseAttestation(pub.Metadata[audit.MetaAttestation], nil)
	must(t, err)

	// The person re-sends the first batch's ids under another path and
	// merges it with an attestation matching their merge.
	person, err := lakefs.New(lakefs.Config{Endpoint: stack.LakeFSEndpoint, AccessKeyID: stack.Writer.AccessKeyID, SecretAccessKey: stack.Writer.SecretAccessKey})
	must(t, err)
	_, err = person.EnsureBranch(ctx, "lake", "plant-57", "main")
	must(t, err)
	must(t, e.WriteParquet(ctx, "plant-57", "gold/billing_fact/batch=plant-57/part-0.parquet", billingRows(570000, 0, 5, "BIGINT")))
	planted, err := person.Commit(ctx, "lake", "plant-57", "more rows", nil)
	must(t, err)
	att.Sealed, att.Against = planted, first.CommitID
	text, err := att.Encode(nil)
	must(t, err)
	forged, err := person.Merge(ctx, "lake", "plant-57", "main", "more rows", map[string]string{audit.MetaAttestation: text})
	must(t, err)
	fc, err := e.Lake.GetCommit(ctx, "lake", forged)
	must(t, err)
	if fc.Committer == devstack.LakewapUser || len(fc.Parents) != 2 || fc.Parents[0] != first.CommitID || fc.Parents[1] != planted {
		t.Fatalf("the person's merge %s by %q has parents %v", fc.ID, fc.Committer, fc.Parents)
	}

	code, out, errOut := runCLI(t, "verify", "-config", writeAuditConfig(t, e, e.cfg.LakeFS.Endpoint), "-dataset", "billing")
	if code != 1 || !strings.Contains(out, devstack.WriterUser) || !strings.Contains(out, "lakewap did not make it") {
		t.Errorf("verify exited %d; want 1 naming the person's merge as not made by lakewap:\n%s%s", code, out, errOut)
	}

	ev := e.runBatch(t, "r57-2", billingRows(571000, 0, 5, "BIGINT"))
	if pub, ok := ev.(schemas.BatchPublished); ok {
		t.Fatalf("the batch after the person's merge was published after a %s audit (%q) onto a main re-sending r57-1's ids", pub.Report.Mode, pub.Report.ModeReason)
	}
	ab, ok := ev.(schemas.BatchAborted)
	if !ok || ab.Report == nil {
		t.Fatalf("the batch after the person's merge: %s %+v; want aborted", ev.EventType(), ev)
	}
	if ab.Report.Mode != audit.ModeFull || !strings.Contains(ab.Report.ModeReason, devstack.WriterUser) {
		t.Errorf("audit mode %q (%q); want full, naming the person's merge", ab.Report.Mode, ab.Report.ModeReason)
	}
	if failed := ab.Report.Failed(); len(failed) != 1 || failed[0].Name != "billing_id_unique" {
		t.Errorf("failed checks %+v; want billing_id_unique", failed)
	}
}
