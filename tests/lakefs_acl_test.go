package tests

import (
	"testing"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/schemas"
)

// TestEndToEndAsNonAdminLakeFSUser runs the daemon with the key of the
// ACL stack's lakewap user (group Writers, not the admin): a good batch
// publishes and a bad one aborts, so Write is enough for all lakewap does.
func TestEndToEndAsNonAdminLakeFSUser(t *testing.T) {
	e := startE2EOn(t, devstack.Options{ACL: true}, func(s *devstack.Stack, cfg *config.Config) {
		if cfg.LakeFS.AccessKeyID != s.Lakewap.AccessKeyID || s.Lakewap.AccessKeyID == s.AccessKeyID {
			t.Fatalf("DemoConfig signs in as %s, not the lakewap user", cfg.LakeFS.AccessKeyID)
		}
	}, daemon.Options{})

	good := e.runBatch(t, "good-1", harness.GoodBillingRows)
	pub, ok := good.(schemas.BatchPublished)
	if !ok {
		t.Fatalf("good batch ended with %s: %+v", good.EventType(), good)
	}
	head, err := e.Lake.GetCommit(t.Context(), "lake", "main")
	must(t, err)
	if pub.CommitID != head.ID || head.Committer != devstack.LakewapUser {
		t.Errorf("main head %s by %q, want the publish %s by %q", head.ID, head.Committer, pub.CommitID, devstack.LakewapUser)
	}
	bad := e.runBatch(t, "bad-1", harness.BadBillingRows)
	ab, ok := bad.(schemas.BatchAborted)
	if !ok || ab.Reason != schemas.ReasonAuditFailed {
		t.Fatalf("bad batch ended with %s: %+v", bad.EventType(), bad)
	}
	after, err := e.Lake.GetCommit(t.Context(), "lake", "main")
	must(t, err)
	if after.ID != head.ID {
		t.Errorf("main moved from %s to %s after an aborted batch", head.ID, after.ID)
	}
}
