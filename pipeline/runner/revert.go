package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// Operator requests (lakewap retry, revert, cancel) are input events like
// any other: the daemon that owns the batch's partition applies them through
// Machine.Apply, so nothing changes a run behind its owner. What a revert
// does to the lake runs here, as a step of the run.

// revertSearchDepth bounds the look for an earlier revert on the target.
const revertSearchDepth = 1000

// revert undoes the run's publish on its target: lakeFS's revert of the one
// merge commit that brought the sealed commit in (relative to its first
// parent, the target's side), with who and why in the revert commit's
// metadata. A revert already on the target (a crash after it was made) is
// found and reported instead of made again. The merge undone is the one
// the run's publish recorded (Run.CommitID); without it (or when it is not
// found), none or several merges of the sealed commit is refused: reverting
// the wrong one (an empty second merge) would undo nothing. Unless the operator forced it, the target is first
// audited as the revert will leave it (auditRevert): a check passing on it
// now that fails after the revert refuses it.
//
// begin records the attempt of the revert's audit (revertAttempt) once the
// audit gate admits it, and returns what records its end.
func (r *Runner) revert(ctx context.Context, log *slog.Logger, run pipeline.Run, begin func(context.Context) (func() error, error)) pipeline.Input {
	lake, ok := r.cfg.Lake.(pipeline.Reverter)
	rv := run.Revert
	switch {
	case !ok:
		return pipeline.StepFailed{Step: pipeline.StepRevert, Err: "this lake adapter cannot revert", Class: pipeline.Permanent}
	case rv == nil || run.SealedCommit == "":
		return pipeline.StepFailed{Step: pipeline.StepRevert, Err: "the run has no sealed commit to revert", Class: pipeline.Permanent}
	}
	repo, target := run.Repository, run.Target
	merges, err := lake.MergesOf(ctx, repo, target, run.SealedCommit, run.PublishSince)
	if err != nil {
		return failed(log, pipeline.StepRevert, err)
	}
	// The run's publish recorded its merge commit: another merge of the
	// sealed commit (someone's empty merge of it again, allow_empty) is not
	// the one to undo, and must not make the revert refuse to guess.
	if i := slices.IndexFunc(merges, func(m pipeline.Commit) bool { return m.ID == run.CommitID }); run.CommitID != "" && i >= 0 {
		merges = merges[i : i+1]
	}
	if len(merges) != 1 {
		ids := make([]string, len(merges))
		for i, m := range merges {
			ids[i] = m.ID
		}
		msg := fmt.Sprintf("no merge commit on %s/%s brought the sealed commit %s in (a batch that changed nothing is not merged): nothing to revert",
			repo, target, run.SealedCommit)
		if len(merges) > 1 {
			msg = fmt.Sprintf("%d merge commits on %s/%s have the sealed commit %s as a parent (%s); refusing to guess which to revert",
				len(merges), repo, target, run.SealedCommit, strings.Join(ids, ", "))
		}
		return pipeline.StepFailed{Step: pipeline.StepRevert, Err: msg, Class: pipeline.Permanent}
	}
	merge := merges[0]
	own, err := lake.Committer(ctx)
	if err != nil {
		return failed(log, pipeline.StepRevert, fmt.Errorf("who lakewap is to lakeFS, to find a revert it made already: %w", err))
	}
	done, err := findRevert(ctx, log, lake, repo, target, run.BatchID, merge.ID, own)
	if err != nil {
		return failed(log, pipeline.StepRevert, err)
	}
	if done.ID == "" {
		if in := r.makeRevert(ctx, log, lake, run, merge, begin); in != nil {
			return in
		}
		if done, err = findRevert(ctx, log, lake, repo, target, run.BatchID, merge.ID, own); err != nil {
			return failed(log, pipeline.StepRevert, err)
		}
		if done.ID == "" {
			return pipeline.StepFailed{Step: pipeline.StepRevert, Class: pipeline.Permanent,
				Err: fmt.Sprintf("lakeFS accepted the revert but no commit with %s=%s is on %s", pipeline.MetaRevertedBatchID, run.BatchID, target)}
		}
		log.Info("publish reverted", "publish_commit", merge.ID, "revert_commit", done.ID, "by", rv.By)
	}
	// Two parents: lakewap's merge of its audited scratch revert (only an
	// audited revert is merged); one: lakeFS's revert, forced.
	return pipeline.Reverted{PublishCommit: merge.ID, CommitID: done.ID, At: done.CreationDate,
		Reason: done.Metadata[pipeline.MetaRevertReason], By: done.Metadata[pipeline.MetaRevertedBy], Audited: len(done.Parents) == 2}
}

// makeRevert makes the revert of merge on the run's target and returns
// nil, or the step's outcome when it did not. Forced, it is lakeFS's
// revert on the target, one commit. Otherwise the revert is audited on a
// scratch branch (auditRevert), and the commit judged there is merged
// onto the target, as a publish is: lakeFS's revert takes no precondition
// on the head, so a commit someone made after the audit's look was put
// under the revert unjudged (review 51). A merge is what lakeFS runs
// lakewap's pre-merge hook on: when the target's head is still the one
// audited, the merge leaves exactly the judged commit; when a commit came
// in between, the hook judges the merge commit, the revert with it, and a
// refusal is retried (ErrHookRefused), to be audited again on the new head.
// Without the hook, as for a publish, nothing refuses it: the revert is
// made, the log says onto what, and the commit is announced as unattested
// by the next publish.
func (r *Runner) makeRevert(ctx context.Context, log *slog.Logger, lake pipeline.Reverter, run pipeline.Run, merge pipeline.Commit, begin func(context.Context) (func() error, error)) pipeline.Input {
	repo, target, rv := run.Repository, run.Target, run.Revert
	conflict := func(err error) pipeline.Input {
		return pipeline.StepFailed{Step: pipeline.StepRevert, Class: pipeline.Permanent,
			Err: fmt.Sprintf("later commits on %s change the same objects; revert them first or fix by hand: %v", target, err)}
	}
	msg := fmt.Sprintf("lakewap: revert %s batch %s: %s", run.Dataset, run.BatchID, rv.Reason)
	meta := map[string]string{pipeline.MetaRevertedBatchID: run.BatchID, pipeline.MetaRevertReason: rv.Reason, pipeline.MetaRevertedBy: rv.By,
		pipeline.MetaDataset: run.Dataset, pipeline.MetaRevertedCommit: merge.ID}
	if rv.Force {
		log.Warn("revert forced by the operator: the target is not audited as it leaves it", "by", rv.By)
		r.cfg.Failpoint("before_revert")
		if err := lake.Revert(ctx, repo, target, merge.ID, 1, msg, meta); err != nil { // 1: the target's side
			if errors.Is(err, pipeline.ErrMergeConflict) {
				return conflict(err)
			}
			return failed(log, pipeline.StepRevert, err)
		}
		return nil
	}
	a, drop, err := r.auditRevert(ctx, log, lake, run, merge, begin)
	defer drop()
	if err != nil {
		var blocked *revertBlocked
		switch {
		case errors.As(err, &blocked):
			log.Warn("revert refused: the target would fail checks that pass on it now", "checks", blocked.checks)
			return pipeline.StepFailed{Step: pipeline.StepRevert, Class: pipeline.Permanent, Err: err.Error()}
		case errors.Is(err, pipeline.ErrMergeConflict):
			return conflict(err)
		}
		return failed(log, pipeline.StepRevert, fmt.Errorf("the revert was not audited, so not made: %w", err))
	}
	if now, err := r.cfg.Lake.Head(ctx, repo, target); err != nil || now != a.head {
		// Someone else committed to the target meanwhile (lakewap's own
		// commits wait for the turn): audit again on the new head.
		return failed(log, pipeline.StepRevert, cmp.Or(err, fmt.Errorf("%s moved from %s to %s while the revert was audited: %w", target, a.head, now, pipeline.ErrTransient)))
	}
	// The hook judges lakewap's merge with the batch time of the audit.
	meta[pipeline.MetaBatchTime] = a.at.Format(time.RFC3339Nano)
	r.cfg.Failpoint("before_revert")
	id, err := r.cfg.Lake.Merge(ctx, repo, a.commit, target, msg, meta)
	switch {
	case errors.Is(err, pipeline.ErrMergeConflict):
		return conflict(err)
	case errors.Is(err, pipeline.ErrHookRefused):
		return failed(log, pipeline.StepRevert, fmt.Errorf("the pre-merge hook refused the revert's merge onto %s (a commit came after its audit?): %w", target, err))
	case err != nil:
		return failed(log, pipeline.StepRevert, err)
	}
	if got, err := lake.FirstParents(ctx, repo, id, time.Time{}, 1); err == nil && len(got) == 1 && len(got[0].Parents) > 0 && got[0].Parents[0] != a.head {
		log.Warn("the revert landed on a commit its audit did not see (lakeFS's merge takes no precondition; lakewap's pre-merge action on the target would have judged them together)",
			"audited_head", a.head, "landed_on", got[0].Parents[0], "revert_commit", id)
	}
	return nil
}

// findRevert returns the revert commit of batch on target made after its
// publish commit, or a zero Commit: the log is newest first, so reaching
// the publish commit ends the search. Only the target's own first-parent
// commits are looked at (one parent: lakeFS's revert, forced; two:
// lakewap's merge of its audited scratch revert): metadata is anyone's to
// write, and a writer's commit on its batch branch, naming another batch,
// reaches the target's whole log when that branch is published
// (TestReview43WritersCommitIsNotTakenForARevert); lakewap's publish
// merges carry no writer's wap. keys. And only those lakewap made (own,
// their committer as lakeFS names it): a merge into the target and a revert
// on it carry whatever metadata their maker gives them, and someone's
// empty merge naming the batch answered an operator's revert done while
// main kept its rows (TestReview56SomeoneElsesCommitIsNotTakenForARevert).
func findRevert(ctx context.Context, logger *slog.Logger, lake pipeline.Reverter, repo, target, batch, published, own string) (pipeline.Commit, error) {
	log, err := lake.FirstParents(ctx, repo, target, time.Time{}, revertSearchDepth)
	if err != nil {
		return pipeline.Commit{}, err
	}
	for _, c := range log {
		if c.ID == published {
			return pipeline.Commit{}, nil
		}
		if len(c.Parents) > 2 {
			continue // lakeFS makes none
		}
		// The same batch id may be another dataset's: the revert names the
		// commit it undid.
		if c.Metadata[pipeline.MetaRevertedBatchID] != batch || (c.Metadata[pipeline.MetaRevertedCommit] != "" && c.Metadata[pipeline.MetaRevertedCommit] != published) {
			continue
		}
		if c.Committer != own {
			logger.Warn("a commit on the target names the batch as reverted but lakewap did not make it: not taken for its revert",
				"commit", c.ID, "committer", schemas.Clip(c.Committer, 128), "lakewap_committer", own)
			continue
		}
		return c, nil
	}
	return pipeline.Commit{}, nil
}
