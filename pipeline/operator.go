package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// Operator requests (lakewap retry, revert, cancel) are input events like
// any other: the daemon that owns the batch's partition applies them through
// Transition, so nothing changes a run behind its owner. What they do to the
// lake runs here, as steps of the run.

// Commit metadata of the revert commit on the target, and of a publish an
// operator's retry made.
const (
	MetaRevertedBatchID = "wap.reverted_batch_id"
	MetaRevertReason    = "wap.revert_reason"
	MetaRevertedBy      = "wap.reverted_by"
	// MetaRevertedCommit names, in a revert commit, the publish commit it undid.
	MetaRevertedCommit = "wap.reverted_commit"
	MetaRetriedBy      = "wap.retried_by"
	// revertSearchDepth bounds the look for an earlier revert on the target.
	revertSearchDepth = 1000
)

// revert undoes the run's publish on its target: lakeFS's revert of the one
// merge commit that brought the sealed commit in (relative to its first
// parent, the target's side), with who and why in the revert commit's
// metadata. A revert already on the target (a crash after it was made) is
// found and reported instead of made again. None or several merges of the
// sealed commit is refused: reverting the wrong one (an empty second merge)
// would undo nothing.
func (r *Runner) revert(ctx context.Context, log *slog.Logger, run Run) Input {
	lake, ok := r.cfg.Lake.(Reverter)
	rv := run.Revert
	switch {
	case !ok:
		return StepFailed{Step: StepRevert, Err: "this lake adapter cannot revert", Class: Permanent}
	case rv == nil || run.SealedCommit == "":
		return StepFailed{Step: StepRevert, Err: "the run has no sealed commit to revert", Class: Permanent}
	}
	repo, target := run.Repository, run.Target
	merges, err := lake.MergesOf(ctx, repo, target, run.SealedCommit, run.PublishSince)
	if err != nil {
		return failed(log, StepRevert, err)
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
		return StepFailed{Step: StepRevert, Err: msg, Class: Permanent}
	}
	merge := merges[0]
	done, err := findRevert(ctx, lake, repo, target, run.BatchID, merge.ID)
	if err != nil {
		return failed(log, StepRevert, err)
	}
	if done.ID == "" {
		msg := fmt.Sprintf("lakewap: revert %s batch %s: %s", run.Dataset, run.BatchID, rv.Reason)
		meta := map[string]string{MetaRevertedBatchID: run.BatchID, MetaRevertReason: rv.Reason, MetaRevertedBy: rv.By,
			MetaDataset: run.Dataset, MetaRevertedCommit: merge.ID}
		if err := lake.Revert(ctx, repo, target, merge.ID, 1, msg, meta); err != nil { // 1: the target's side
			if errors.Is(err, ErrMergeConflict) {
				return StepFailed{Step: StepRevert, Class: Permanent,
					Err: fmt.Sprintf("later commits on %s change the same objects; revert them first or fix by hand: %v", target, err)}
			}
			return failed(log, StepRevert, err)
		}
		if done, err = findRevert(ctx, lake, repo, target, run.BatchID, merge.ID); err != nil {
			return failed(log, StepRevert, err)
		}
		if done.ID == "" {
			return StepFailed{Step: StepRevert, Class: Permanent,
				Err: fmt.Sprintf("lakeFS accepted the revert but no commit with %s=%s is on %s", MetaRevertedBatchID, run.BatchID, target)}
		}
		log.Info("publish reverted", "publish_commit", merge.ID, "revert_commit", done.ID, "by", rv.By)
	}
	return Reverted{PublishCommit: merge.ID, CommitID: done.ID, At: done.CreationDate,
		Reason: done.Metadata[MetaRevertReason], By: done.Metadata[MetaRevertedBy]}
}

// findRevert returns the revert commit of batch on target made after its
// publish commit, or a zero Commit: the log is newest first, so reaching
// the publish commit ends the search.
func findRevert(ctx context.Context, lake Reverter, repo, target, batch, published string) (Commit, error) {
	log, err := lake.Log(ctx, repo, target, revertSearchDepth)
	if err != nil {
		return Commit{}, err
	}
	for _, c := range log {
		if c.ID == published {
			return Commit{}, nil
		}
		// The same batch id may be another dataset's: the revert names the
		// commit it undid.
		if c.Metadata[MetaRevertedBatchID] == batch && (c.Metadata[MetaRevertedCommit] == "" || c.Metadata[MetaRevertedCommit] == published) {
			return c, nil
		}
	}
	return Commit{}, nil
}
