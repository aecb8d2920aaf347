package runner

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/lakewap/lakewap/pipeline"
)

// maxStrayPaths bounds how many paths outside the tables an abort names.
const maxStrayPaths = 10

// beginAudit answers DoBeginAudit once the gate admits the attempt (alone
// for a suspect run): execute stores the answer before the audit starts, so
// an attempt that takes the process down is counted at the next restore
// (pipeline.Policy.MaxAuditAttempts), and whether it ran alone with it.
func (r *Runner) beginAudit(j job) pipeline.Input {
	alone := j.run.AuditSuspect
	if alone {
		r.stepLog(j.run).Info("auditing alone: an earlier attempt ended with its process beside other audits",
			"lost_attempts", j.run.AuditLost)
	}
	if err := r.gate.acquire(j.p.ctx, j.run.Key(), alone); err != nil {
		return nil // revoked
	}
	return pipeline.AuditBegun{Solo: alone}
}

// auditJob runs the audit step (DoAudit, stepped), which records its seal
// in the run (pipeline.Sealed) before it reads the branch's changes.
func (r *Runner) auditJob(j job) pipeline.Input {
	key := j.run.Key()
	record := func(ctx context.Context, commit string) error {
		_, err := r.apply(ctx, j.p, key, pipeline.Sealed{Commit: commit})
		return err
	}
	return stepped(func(r *Runner, ctx context.Context, log *slog.Logger, run pipeline.Run) pipeline.Input {
		return r.audit(ctx, log, run, record)
	})(r, j)
}

// audit seals the batch branch and audits the sealed commit (DoAudit), in
// one line: seal, the one diff of the sealed commit against the target,
// the tables-only rule on it, then the audit with the diff in its request.
// record stores the seal in the run (Run.Seals) before the step reads the
// branch's changes: an attempt run again after a restart seals on it, and
// takes it for lakewap's only if it is recorded there.
func (r *Runner) audit(ctx context.Context, log *slog.Logger, run pipeline.Run, record func(context.Context, string) error) pipeline.Input {
	// The diff is against a commit of the target (the audit's cache key
	// names it, and it does not contend with merges into the branch): the
	// one the branch was made from when the branch's source is the
	// target, else the seal's merge-base with the target's head (read
	// while sealing: it does not depend on the seal); a batch of another
	// source whose merge-base is not that head is audited onto the head.
	type head struct {
		id  string
		err error
	}
	heads := make(chan head, 1)
	fromBranchPoint := run.BranchFrom != "" && run.Source == run.Target
	if fromBranchPoint {
		// The commit the branch was made from, on the target: the audit
		// reads the table as of the batch's own snapshot (its seal's
		// merge-base with it is that commit, known from the seal's
		// parents, and the diff is the seal's own changes). What the
		// target gained since is judged by the publish's recheck, which
		// runs whenever the target's head is not that merge-base, as it
		// would after an audit against a newer head.
		heads <- head{id: run.BranchFrom}
	} else {
		go func() {
			defer func() {
				if v := recover(); v != nil {
					heads <- head{err: fmt.Errorf("panic: %v", v)}
				}
			}()
			id, err := r.cfg.Lake.Head(ctx, run.Repository, run.Target)
			heads <- head{id, err}
		}()
	}
	sctx, sealed := r.span(ctx, "seal")
	commit, err := r.cfg.Lake.Seal(sctx, run.Repository, run.Branch,
		fmt.Sprintf("lakewap: seal batch %s for audit", run.BatchID),
		map[string]string{pipeline.MetaSealedBatchID: run.BatchID, pipeline.MetaDataset: run.Dataset})
	sealed(err)
	h := <-heads
	if err != nil {
		return failed(log, pipeline.StepAudit, err)
	}
	if rec, ok := r.cfg.Auditor.(MergeRecorder); ok {
		rec.Sealed(run.Repository, commit)
	}
	if err := record(ctx, commit); err != nil {
		// Unrecorded, the seal is not taken for lakewap's by a later
		// attempt sealing on it: that one compares by address instead.
		log.Warn("could not record the seal in the run", "sealed_commit", commit, "err", err)
	}
	r.cfg.Failpoint("during_audit")
	base := h.id
	if h.err != nil {
		return failed(log, pipeline.StepAudit, h.err)
	}
	onto := ""    // the head an Onto audit reads the batch merged into
	current := "" // the target's head, when read
	if !fromBranchPoint {
		current = base
	}
	earlier, onBranchPoint, err := r.sealedOn(ctx, run.Repository, commit, run.BranchFrom, run.Seals)
	if err != nil {
		return failed(log, pipeline.StepAudit, err)
	}
	if !fromBranchPoint || !onBranchPoint {
		// The branch holds commits of its own before the seal (a writer's
		// merge of the target into it), or comes from another source than
		// the target: its merge-base with the target may be newer than the
		// branch point, or older than the target's head, and the diff
		// against that point would name what the target gained since as
		// the batch's changes
		// (TestReview10WriterMergingTheTargetIntoItsBranchPublishes). The
		// seal's merge-base with the target's head: the snapshot the seal
		// holds with the batch, as the branch point is otherwise. Against
		// the head itself, the checks comparing with the base (volume_change,
		// schema_drift, scope: batch) compared the snapshot and the batch
		// with what other publishes brought since: 1,000 rows published
		// meanwhile read as a drop, and a good batch was aborted
		// (TestMerge62CommittedBatchComparesVolumeWithItsSnapshot; with
		// another source, whose fork point lacks what the target took
		// since, TestMerge63BatchFromAnotherSourceComparesVolumeWithItsSnapshot:
		// lakeFS merges three-way from that merge-base, so the merge leaves
		// the head's rows and the batch's). What the target gained since
		// is judged by the publish's recheck, which runs whenever the head
		// is not that merge-base.
		if fromBranchPoint {
			if base, err = r.cfg.Lake.Head(ctx, run.Repository, run.Target); err != nil {
				return failed(log, pipeline.StepAudit, err)
			}
			current = base
		} // else the head read while sealing
		if mb, ok := r.cfg.Lake.(MergeBaser); ok {
			found, _, err := mb.MergeBase(ctx, run.Repository, commit, base)
			if err != nil {
				return failed(log, pipeline.StepAudit, err)
			}
			if found != "" && found != commit { // else the head, as before
				if !fromBranchPoint && found != base {
					// Another source that forked from the target before
					// the head: its fork point is no snapshot of the
					// target's, and the seal (the fork point, the source's
					// commits and the batch) is not what the merge leaves.
					// Audited against the fork point, the same 5 rows read
					// as a growth of 5% on 100 where the merge leaves 1,105
					// against 1,100, and a max_growth_pct of 3 aborted the
					// batch (TestMerge63BatchFromAnotherSourceIsAuditedAsItsMergeLeavesTheTarget):
					// the batch is audited as its merge leaves the head (an
					// Onto audit, as the publish's recheck, which then finds
					// it passed if the head did not move).
					onto = base
				}
				base = found
			}
		}
	}
	changes, err := r.cfg.Lake.Changes(ctx, run.Repository, base, commit)
	if err != nil {
		return failed(log, pipeline.StepAudit, err)
	}
	r.audited.put(run.Repository, commit, base, changes)
	if spec, ok := r.cfg.Datasets(run.Dataset); ok && len(spec.TablePaths) > 0 {
		// The merge takes everything the sealed commit changes; the
		// audit reads only the tables. Anything else must be allowed.
		paths := make([]string, len(changes))
		for i, c := range changes {
			paths[i] = c.Path
		}
		if onBranchPoint && len(earlier) > 0 {
			// The stopped steps' seals below this one: a path one of them
			// deleted or changed and a later one staged again under the
			// same claimed checksum and size is at other bytes than the
			// branch point's, and no diff of this seal names it
			// (TestReview30CollidingBytesStagedBetweenTwoSealsAreRefused).
			// Each is held to the tables-only rule too, as its own audit
			// would have held it.
			if paths, err = r.earlierSealsPaths(ctx, run, earlier, paths); err != nil {
				return failed(log, pipeline.StepAudit, err)
			}
		}
		if stray := spec.OutsideTables(paths); len(stray) > 0 {
			log.Warn("batch changes paths outside its tables", "paths", len(stray), "first", stray[0])
			return pipeline.Strayed{SealedCommit: commit, Paths: stray[:min(len(stray), maxStrayPaths)], Total: len(stray)}
		}
		if rl, ok := r.cfg.Lake.(Relinker); ok && !onBranchPoint {
			// Commits of the branch's own before the seal (a writer's merge,
			// cherry-pick or revert) can bring a path at other bytes under
			// the same claimed checksum and size (an MD5 collision needs no
			// linkPhysicalAddress), which no diff names: compared by address.
			relinked, err := rl.Relinked(ctx, run.Repository, commit, base)
			if err != nil {
				return failed(log, pipeline.StepAudit, err)
			}
			if stray := spec.OutsideTables(relinked); len(stray) > 0 {
				log.Warn("batch's own commits relink paths outside its tables", "paths", len(stray), "first", stray[0])
				return pipeline.Strayed{SealedCommit: commit, Paths: stray[:min(len(stray), maxStrayPaths)], Total: len(stray)}
			}
		}
	}
	req := pipeline.AuditRequest{Dataset: run.Dataset, Repository: run.Repository,
		Ref: commit, BaseRef: base, BaseName: run.Target, BatchTime: run.BatchTime, Changes: changes}
	if onto != "" {
		req.BaseRef, req.Onto = onto, true
	}
	rep, err := r.cfg.Auditor.Audit(ctx, req)
	if err != nil {
		return failed(log, pipeline.StepAudit, err)
	}
	if !rep.Passed && onto == "" {
		// Failing against its snapshot, the batch is judged again as its
		// merge leaves the target's head, when the head moved since: the
		// merge, not the snapshot, is what readers of the target will
		// read, and the publish's recheck judges a passing batch onto the
		// head the same way. A file holding the batch's ids that the
		// target deleted since, or a growth measured against the old base
		// where the merge grows the target by far less, aborted a batch
		// whose merge passes (TestMerge64BatchFromTheTargetDuplicatingAFileMainDeletedPublishes,
		// TestMerge64BatchFromTheTargetGrowingItsSnapshotPublishesWhenItsMergeDoesNot).
		again, head, err := r.ontoHead(ctx, run, commit, base, current)
		if err != nil {
			return failed(log, pipeline.StepAudit, err)
		}
		if again {
			log.Info("batch fails against its snapshot and the target moved since: auditing it as its merge leaves the target", "base", base, "head", head)
			req.BaseRef, req.Onto = head, true
			if rep, err = r.cfg.Auditor.Audit(ctx, req); err != nil {
				return failed(log, pipeline.StepAudit, err)
			}
			onto = head
		}
	}
	return pipeline.Audited{SealedCommit: commit, Report: rep, Suites: r.suites(run.Dataset), Onto: onto}
}

// ontoHead says whether a batch audited against base (its snapshot: the
// branch point, or the seal's merge-base with the target) is to be judged
// again onto the target's head, and which head: the head (current, or
// read now when empty) is not base, and the seal's merge-base with it is
// base, so that the seal's diff against base is what the merge brings.
// Without a MergeBaser the batch is not judged again.
func (r *Runner) ontoHead(ctx context.Context, run pipeline.Run, commit, base, current string) (bool, string, error) {
	mb, ok := r.cfg.Lake.(MergeBaser)
	if !ok {
		return false, "", nil
	}
	head := current
	if head == "" {
		var err error
		if head, err = r.cfg.Lake.Head(ctx, run.Repository, run.Target); err != nil {
			return false, "", err
		}
	}
	if head == base {
		return false, "", nil
	}
	found, _, err := mb.MergeBase(ctx, run.Repository, commit, head)
	if err != nil {
		return false, "", err
	}
	return found == base, head, nil
}

// SuitesDigester is an Auditor that names the suites its verdicts on a
// dataset's batches are reached under, by a digest (audit.Service's
// SuitesDigest): the runner records it with the audit's verdict
// (Run.Suites), and a publish under another digest (a restart, or another
// instance, with another config) rechecks the batch before its merge.
type SuitesDigester interface {
	SuitesDigest(dataset string) string
}

// suites is the Auditor's digest of dataset's suites; empty without a
// SuitesDigester.
func (r *Runner) suites(dataset string) string {
	if d, ok := r.cfg.Auditor.(SuitesDigester); ok {
		return d.SuitesDigest(dataset)
	}
	return ""
}

// Relinker is a Lake that names the paths a commit holds at another
// physical address than a base with the same claimed checksum and size
// (listing both whole): the audit step asks it only for a sealed commit
// whose branch holds commits of its own before the seal.
type Relinker interface {
	Relinked(ctx context.Context, repo, ref, base string) ([]string, error)
}

// SealParenter is a Lake that tells whether a seal it made sits on a
// commit through seals of lakewap's only (the lakeFS client's SealedOn:
// its one parent, asking nothing, or after a restart the seals the
// stopped attempts made, each of them recorded in the run, seals): the
// audit step takes the branch point as its base, and compares nothing by
// address, only then. earlier names the seals between, newest first: each
// is held to the tables-only rule with the seal.
type SealParenter interface {
	SealedOn(ctx context.Context, repo, commit, from string, seals []string) (earlier []string, on bool, err error)
}

// sealedOn: sealed sits on from through the run's recorded seals only, or
// the Lake cannot tell (a Lake without SealParenter: the branch point is
// taken, as before).
func (r *Runner) sealedOn(ctx context.Context, repo, sealed, from string, seals []string) ([]string, bool, error) {
	sp, ok := r.cfg.Lake.(SealParenter)
	if !ok {
		return nil, true, nil
	}
	return sp.SealedOn(ctx, repo, sealed, from, seals)
}

// earlierSealsPaths adds to paths, once each, the paths each of the
// earlier seals changes against the run's branch point.
func (r *Runner) earlierSealsPaths(ctx context.Context, run pipeline.Run, earlier, paths []string) ([]string, error) {
	seen := make(map[string]bool, len(paths))
	for _, p := range paths {
		seen[p] = true
	}
	for _, s := range earlier {
		changes, err := r.cfg.Lake.Changes(ctx, run.Repository, run.BranchFrom, s)
		if err != nil {
			return nil, err
		}
		for _, c := range changes {
			if !seen[c.Path] {
				seen[c.Path] = true
				paths = append(paths, c.Path)
			}
		}
	}
	return paths, nil
}
