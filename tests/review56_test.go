package tests

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/treeverse/lakefs/pkg/api/apigen"

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

// TestReview56EmptyMergeOfThePublishDoesNotBlockTheRevert (review 56, on
// lakeFS with its ACL server): the revert undoes the one merge commit that
// brought the batch's sealed commit into main, and refused when there were
// several. lakeFS merges a commit that is on main already again when asked
// with allow_empty (an empty merge, whose parents are main's head and that
// commit): a person who may merge into main (user writer) made the
// operator's revert fail for good ("refusing to guess"). The run's publish
// recorded its merge commit, which is the one undone.
func TestReview56EmptyMergeOfThePublishDoesNotBlockTheRevert(t *testing.T) {
	var stack *devstack.Stack
	e := startE2EOn(t, devstack.Options{ACL: true}, func(s *devstack.Stack, _ *config.Config) { stack = s }, daemon.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	const victim = "victim-56e"
	ev := e.runBatch(t, victim, billingRows(561000, 0, 5, "BIGINT"))
	pub, ok := ev.(schemas.BatchPublished)
	if !ok {
		t.Fatalf("the victim batch: %s %+v; want published", ev.EventType(), ev)
	}
	merge, err := e.Lake.GetCommit(ctx, "lake", pub.CommitID)
	must(t, err)
	if len(merge.Parents) != 2 {
		t.Fatalf("the publish %s has parents %v", merge.ID, merge.Parents)
	}
	sealed := merge.Parents[1]

	person, err := apigen.NewClientWithResponses(stack.LakeFSEndpoint+"/api/v1",
		apigen.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.SetBasicAuth(stack.Writer.AccessKeyID, stack.Writer.SecretAccessKey)
			return nil
		}))
	must(t, err)
	msg := "merge it again"
	res, err := person.MergeIntoBranchWithResponse(ctx, "lake", sealed, "main", apigen.MergeIntoBranchJSONRequestBody{Message: &msg, AllowEmpty: ptrTo(true)})
	must(t, err)
	if res.StatusCode() != http.StatusOK || res.JSON200 == nil {
		t.Fatalf("the person's empty merge of %s into main: %d %s", sealed, res.StatusCode(), res.Body)
	}
	again, err := e.Lake.GetCommit(ctx, "lake", "main")
	must(t, err)
	if len(again.Parents) != 2 || again.Parents[1] != sealed || again.Committer == devstack.LakewapUser {
		t.Fatalf("main's head %s by %q has parents %v; want the person's merge of %s", again.ID, again.Committer, again.Parents, sealed)
	}

	code, out := e.ask(t, "revert", "-batch", victim, "-reason", "bad amounts", "-by", "ana")
	if code != 0 {
		t.Fatalf("revert exited %d:\n%s", code, out)
	}
	got, err := e.Watcher.Await(ctx, victim, schemas.TypeBatchReverted, schemas.TypeRequestRefused)
	must(t, err)
	rv, ok := got.(schemas.BatchReverted)
	if !ok || rv.PublishedCommitID != pub.CommitID || rv.RevertedBy != "ana" {
		t.Fatalf("the revert was answered %s %+v; want BatchReverted of %s by ana", got.EventType(), got, pub.CommitID)
	}
	n, err := e.CountRows(ctx, "main", "gold/billing_fact/batch="+victim+"/", "")
	must(t, err)
	if n != 0 {
		t.Errorf("main still holds %d rows of the reverted batch %s", n, victim)
	}
}
