package tests

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/lakefs"
	"github.com/lakewap/lakewap/schemas"
)

// TestReview56PersonsMergeIsNotTakenForARevert (review 56, on lakeFS with
// its ACL server): a revert already made (a crash after it was made) is
// found among the target's first-parent commits by its metadata and
// answered done. Since review 51 a merge counts (lakewap's revert is a merge
// of its audited scratch revert), and lakeFS's merge takes any metadata: a
// person who may merge into main (user writer, group Writers, not lakewap)
// merged a note outside every table with the metadata of a revert of the
// victim batch, and the operator's revert of that batch was answered done,
// naming the person's merge, while main kept the batch's rows. Only a commit
// lakewap's own user made answers it now.
func TestReview56PersonsMergeIsNotTakenForARevert(t *testing.T) {
	var stack *devstack.Stack
	e := startE2EOn(t, devstack.Options{ACL: true}, func(s *devstack.Stack, _ *config.Config) { stack = s }, daemon.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	const victim = "victim-56"
	ev := e.runBatch(t, victim, billingRows(560000, 0, 5, "BIGINT"))
	pub, ok := ev.(schemas.BatchPublished)
	if !ok {
		t.Fatalf("the victim batch: %s %+v; want published", ev.EventType(), ev)
	}

	person, err := lakefs.New(lakefs.Config{Endpoint: stack.LakeFSEndpoint, AccessKeyID: stack.Writer.AccessKeyID, SecretAccessKey: stack.Writer.SecretAccessKey})
	must(t, err)
	_, err = person.EnsureBranch(ctx, "lake", "notes-56", "main")
	must(t, err)
	must(t, person.Upload(ctx, "lake", "notes-56", "notes/56.txt", strings.NewReader("a note\n")))
	_, err = person.Commit(ctx, "lake", "notes-56", "a note", nil)
	must(t, err)
	forged, err := person.Merge(ctx, "lake", "notes-56", "main", "lakewap: revert billing batch "+victim+": done", map[string]string{
		pipeline.MetaRevertedBatchID: victim, pipeline.MetaRevertedCommit: pub.CommitID,
		pipeline.MetaRevertReason: "already reverted", pipeline.MetaRevertedBy: "alice"})
	must(t, err)

	code, out := e.ask(t, "revert", "-batch", victim, "-reason", "bad amounts", "-by", "ana")
	if code != 0 {
		t.Fatalf("revert exited %d:\n%s", code, out)
	}
	got, err := e.Watcher.Await(ctx, victim, schemas.TypeBatchReverted)
	must(t, err)
	rv := got.(schemas.BatchReverted)
	if rv.CommitID == forged || rv.RevertedBy != "ana" || rv.Reason != "bad amounts" {
		t.Errorf("BatchReverted names commit %s by %q (%q); the person's merge is %s: want lakewap's revert by ana", rv.CommitID, rv.RevertedBy, rv.Reason, forged)
	}
	n, err := e.CountRows(ctx, "main", "gold/billing_fact/batch="+victim+"/", "")
	must(t, err)
	if n != 0 {
		t.Errorf("main still holds %d rows of the reverted batch %s", n, victim)
	}
	head, err := e.Lake.GetCommit(ctx, "lake", "main")
	must(t, err)
	if head.ID != rv.CommitID || head.Committer != devstack.LakewapUser {
		t.Errorf("main's head %s by %q is not lakewap's revert the event names (%s)", head.ID, head.Committer, rv.CommitID)
	}
}
