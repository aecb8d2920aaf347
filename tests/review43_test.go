package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// TestReview43WritersCommitIsNotTakenForARevert: a revert already made (a
// crash after lakeFS made it) is found on the target by its metadata, and
// then announced done instead of made again. The search read the target's
// whole log, the commits its merges brought in included, so a commit a
// writer made on its own batch branch, naming another batch in
// wap.reverted_batch_id, reached it once that branch was published. An
// operator's revert of that other batch was then answered done (the
// writer's commit named as the revert, with its reason and who) and main
// kept the batch's rows. Only lakewap's revert commits, on the target's
// first-parent line, may answer it. (Since review 51 lakewap's revert is a
// merge of its audited scratch revert commit onto main: two parents.)
func TestReview43WritersCommitIsNotTakenForARevert(t *testing.T) {
	e := startE2E(t, func(*config.Config) {})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	const victim = "victim-43"
	if ev := e.runBatch(t, victim, billingRows(430000, 0, 5, "BIGINT")); ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("the victim batch: %s %+v; want published", ev.EventType(), ev)
	}

	// A writer's batch, landed after the victim's publish: its writer
	// commits its rows with a revert's metadata naming the victim.
	const forger = "forger-43"
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: forger, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "t", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	_, err := e.Watcher.Await(ctx, forger, schemas.TypeBranchReady)
	must(t, err)
	branch := schemas.BranchName("billing", forger)
	must(t, e.WriteParquet(ctx, branch, "gold/billing_fact/batch="+forger+"/part-0.parquet", billingRows(431000, 0, 5, "BIGINT")))
	forged, err := e.Lake.Commit(ctx, "lake", branch, "lakewap: revert billing batch "+victim+": done", map[string]string{
		pipeline.MetaRevertedBatchID: victim, pipeline.MetaRevertReason: "already reverted", pipeline.MetaRevertedBy: "alice"})
	must(t, err)
	if ev := completeBatch(t, ctx, e.Env, forger); ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("the writer's batch: %s %+v; want published", ev.EventType(), ev)
	}

	code, out := e.ask(t, "revert", "-batch", victim, "-reason", "bad amounts", "-by", "ana")
	if code != 0 {
		t.Fatalf("revert exited %d:\n%s", code, out)
	}
	got, err := e.Watcher.Await(ctx, victim, schemas.TypeBatchReverted)
	must(t, err)
	rv := got.(schemas.BatchReverted)
	if rv.CommitID == forged || rv.RevertedBy != "ana" || rv.Reason != "bad amounts" {
		t.Errorf("BatchReverted names commit %s by %q (%q); the writer's commit is %s: want lakewap's revert by ana", rv.CommitID, rv.RevertedBy, rv.Reason, forged)
	}
	n, err := e.CountRows(ctx, "main", "gold/billing_fact/batch="+victim+"/", "")
	must(t, err)
	if n != 0 {
		t.Errorf("main still holds %d rows of the reverted batch %s", n, victim)
	}
	head, err := e.Lake.GetCommit(ctx, "lake", "main")
	must(t, err)
	if head.ID != rv.CommitID || !strings.HasPrefix(head.Message, fmt.Sprintf("lakewap: revert billing batch %s", victim)) || len(head.Parents) != 2 {
		t.Errorf("main's head %s (%q, parents %v) is not lakewap's revert the event names (%s)", head.ID, head.Message, head.Parents, rv.CommitID)
	}
}
