package runner

import (
	"context"
	"testing"
	"time"

	. "github.com/lakewap/lakewap/pipeline"

	"github.com/lakewap/lakewap/schemas"
)

// TestReview56SomeoneElsesCommitIsNotTakenForARevert (review 56): a revert
// already made (a crash after lakeFS made it) is found among the target's
// first-parent commits by its metadata, and answered done instead of made
// again. Since review 51 a commit of two parents counts (lakewap's merge of
// its audited scratch revert), and a commit of one (lakeFS's revert, forced).
// Anyone who may merge into the target can write such metadata on a merge
// (lakeFS's merge takes metadata; the pre-merge hook lets an empty merge
// through), and anyone who may revert it on a revert (lakeFS's revert takes
// commit_overrides): an operator's revert of the batch the commit names was
// answered done, naming that commit and its "by", while main kept the
// batch's rows. Only lakewap's own commits (lakeFS names the committer of a
// merge and a revert: the caller's user) may answer it.
func TestReview56SomeoneElsesCommitIsNotTakenForARevert(t *testing.T) {
	for _, tc := range []struct {
		name    string
		parents []string
	}{
		{"a person's merge into the target", []string{"merge-b1", "side"}},
		{"a person's revert on the target", []string{"merge-b1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRunnerFixture(t)
			go func() {
				for range f.notes.ch {
				}
			}()
			f.land(t, "b1")
			deadline := time.Now().Add(30 * time.Second)
			for r, _ := f.run("billing", "b1"); r.State != StatePublished; r, _ = f.run("billing", "b1") {
				if time.Now().After(deadline) {
					t.Fatalf("b1 is %s", r.State)
				}
				time.Sleep(time.Millisecond)
			}
			f.lake.mu.Lock()
			f.lake.log = append(f.lake.log, Commit{ID: "forged", Parents: tc.parents, Committer: "mallory",
				Metadata: map[string]string{MetaRevertedBatchID: "b1", MetaRevertedCommit: "merge-b1", MetaRevertReason: "already reverted",
					MetaRevertedBy: "alice", MetaDataset: "billing"}, CreationDate: time.Now().UTC()})
			f.lake.mu.Unlock()

			now := time.Now().UTC().Truncate(time.Millisecond)
			if err := f.r.Handle(context.Background(), 0, schemas.RevertRequested{RequestID: "q1", BatchID: "b1", Dataset: "billing",
				Reason: "bad amounts", RequestedBy: "bob", OccurredAt: now}, schemas.TraceContext{}); err != nil {
				t.Fatal(err)
			}
			rv, ok := f.awaitAnswer(t, "b1", "q1").(schemas.BatchReverted)
			if !ok || rv.CommitID == "forged" || rv.RevertedBy != "bob" || rv.Reason != "bad amounts" {
				t.Fatalf("answer %+v; want lakewap's own revert by bob, not the commit mallory made", rv)
			}
			f.lake.mu.Lock()
			defer f.lake.mu.Unlock()
			last := f.lake.log[len(f.lake.log)-1]
			if last.ID != rv.CommitID || last.Metadata[MetaRevertedBy] != "bob" || last.Committer != fakeCommitter {
				t.Errorf("the target's last commit is %+v; want lakewap's revert %s", last, rv.CommitID)
			}
		})
	}
}

// TestReview56AnotherMergeOfTheSealedCommitDoesNotBlockTheRevert (review
// 56): the revert undoes the one merge commit that brought the batch's
// sealed commit into the target, and refused when there were several
// ("refusing to guess"). lakeFS merges a commit already on the target again
// when asked with allow_empty, an empty merge the pre-merge hook lets
// through: a person who may merge into the target made the operator's
// revert fail for good. The run records its publish's merge commit
// (Run.CommitID), which is the one to undo.
func TestReview56AnotherMergeOfTheSealedCommitDoesNotBlockTheRevert(t *testing.T) {
	f := newRunnerFixture(t)
	go func() {
		for range f.notes.ch {
		}
	}()
	f.land(t, "b1")
	deadline := time.Now().Add(30 * time.Second)
	var run Run
	for run, _ = f.run("billing", "b1"); run.State != StatePublished; run, _ = f.run("billing", "b1") {
		if time.Now().After(deadline) {
			t.Fatalf("b1 is %s", run.State)
		}
		time.Sleep(time.Millisecond)
	}
	f.lake.mu.Lock()
	f.lake.log = append(f.lake.log, Commit{ID: "empty-merge", Parents: []string{"merge-b1", run.SealedCommit}, Committer: "mallory",
		CreationDate: time.Now().UTC()})
	f.lake.mu.Unlock()

	now := time.Now().UTC().Truncate(time.Millisecond)
	if err := f.r.Handle(context.Background(), 0, schemas.RevertRequested{RequestID: "q1", BatchID: "b1", Dataset: "billing",
		Reason: "bad amounts", RequestedBy: "bob", OccurredAt: now}, schemas.TraceContext{}); err != nil {
		t.Fatal(err)
	}
	rv, ok := f.awaitAnswer(t, "b1", "q1").(schemas.BatchReverted)
	if !ok || rv.PublishedCommitID != "merge-b1" || rv.RevertedBy != "bob" {
		t.Fatalf("answer %+v; want the revert of the publish merge-b1 by bob", f.awaitAnswer(t, "b1", "q1"))
	}
}
