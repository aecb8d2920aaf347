package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/lakewap/lakewap/pipeline"
)

// branch makes the batch branch from the run's source (DoCreateBranch):
// first it reports the commit the source points at (BranchSource), which
// the run records, then it makes the branch from that commit. An existing
// branch is resumed only when it points there: one made beforehand from an
// older commit is not this run's.
func (r *Runner) branch(ctx context.Context, log *slog.Logger, run pipeline.Run) pipeline.Input {
	if run.BranchFrom == "" {
		from, err := r.cfg.Lake.Head(ctx, run.Repository, run.Source)
		if errors.Is(err, pipeline.ErrNotFound) {
			log.Warn("branch source not found", "source", run.Source, "err", err)
			return pipeline.StepFailed{Step: pipeline.StepBranch, Err: fmt.Sprintf("cannot branch from %q in repository %q: %v", run.Source, run.Repository, err), Class: pipeline.Rejected}
		}
		if err != nil {
			return failed(log, pipeline.StepBranch, err)
		}
		return pipeline.BranchSource{Commit: from}
	}
	_, err := r.cfg.Lake.EnsureBranch(ctx, run.Repository, run.Branch, run.BranchFrom)
	switch {
	case errors.Is(err, pipeline.ErrNotFound):
		// The batch names a source ref (or the dataset a repository)
		// that does not exist: the event is wrong, not lakeFS.
		log.Warn("branch source not found", "source", run.Source, "err", err)
		return pipeline.StepFailed{Step: pipeline.StepBranch, Err: fmt.Sprintf("cannot branch from %q in repository %q: %v", run.Source, run.Repository, err), Class: pipeline.Rejected}
	case errors.Is(err, pipeline.ErrBranchTaken):
		// Someone else's branch (or one with content of its own) under
		// the run's name would publish what they put there: left alone.
		log.Warn("branch with the run's name is not this run's", "err", err)
		return pipeline.StepFailed{Step: pipeline.StepBranch, Err: err.Error(), Class: pipeline.Rejected}
	case err != nil:
		return failed(log, pipeline.StepBranch, err)
	}
	r.cfg.Failpoint("after_branch")
	return pipeline.BranchCreated{}
}
