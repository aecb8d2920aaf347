package runner

import (
	"context"
	"log/slog"

	"github.com/lakewap/lakewap/pipeline"
)

// cleanup deletes the branch of an aborted batch (DoCleanup).
func (r *Runner) cleanup(ctx context.Context, log *slog.Logger, run pipeline.Run) pipeline.Input {
	if err := r.cfg.Lake.DeleteBranch(ctx, run.Repository, run.Branch); err != nil {
		return failed(log, pipeline.StepCleanup, err)
	}
	return pipeline.CleanedUp{}
}
