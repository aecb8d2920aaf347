package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/lakewap/lakewap/pipeline"
)

// job is one effect of a run handed to its executor: the run as it was
// stored when the effect started, and for a publish or a revert its place
// in the target's queue.
type job struct {
	p      *partition
	run    pipeline.Run
	effect pipeline.Effect
	ticket *publishTicket
}

// executors is the one table from the effects the runner carries out to
// the function that does it, one file each. An executor reports what
// happened as the machine's input (nil: nothing to apply, the partition
// was revoked); it decides nothing about the run. The publish's recheck
// stores its attempt as begun through apply, which starts executors: the
// table is filled in init, as an initializer may not refer to itself.
var executors map[pipeline.EffectKind]func(*Runner, job) pipeline.Input

func init() {
	executors = map[pipeline.EffectKind]func(*Runner, job) pipeline.Input{
		pipeline.DoCreateBranch: stepped((*Runner).branch),  // branch.go
		pipeline.DoBeginAudit:   (*Runner).beginAudit,       // audit.go
		pipeline.DoAudit:        (*Runner).auditJob,         // audit.go
		pipeline.DoPublish:      (*Runner).publishInTurn,    // publish.go, with the queue
		pipeline.DoLook:         stepped((*Runner).look),    // publish.go
		pipeline.DoRevert:       (*Runner).revertInTurn,     // revert.go, in the publish queue
		pipeline.DoCleanup:      stepped((*Runner).cleanup), // cleanup.go
		pipeline.DoSend:         (*Runner).sendOutbox,       // send.go
	}
}

// stepped runs a step that talks to lakeFS: one of MaxInFlight at a time,
// under the step timeout, timed (Metrics.StepDuration).
func stepped(do func(*Runner, context.Context, *slog.Logger, pipeline.Run) pipeline.Input) func(*Runner, job) pipeline.Input {
	return func(r *Runner, j job) pipeline.Input {
		select {
		case r.sem <- struct{}{}:
		case <-j.p.ctx.Done():
			return nil
		}
		defer func() { <-r.sem }()
		start := time.Now()
		in := r.step(j.p, j.run, j.effect.Kind, func(ctx context.Context) pipeline.Input {
			return do(r, ctx, r.stepLog(j.run), j.run)
		})
		r.metrics.stepDuration(j.effect.Kind, in, time.Since(start))
		return in
	}
}

func (r *Runner) stepLog(run pipeline.Run) *slog.Logger {
	return r.log.With("batch_id", run.BatchID, "dataset", run.Dataset, "branch", run.Branch, "state", string(run.State))
}

// step runs do, the step k of run, under the step timeout, counting its
// lakeFS calls. A panic in it (a bug meeting odd data, in lakewap or a
// library) fails the run instead of the process: the goroutine is not the
// consumer's, whose recovery would not see it.
func (r *Runner) step(p *partition, run pipeline.Run, k pipeline.EffectKind, do func(context.Context) pipeline.Input) (in pipeline.Input) {
	ctx, cancel := context.WithTimeout(p.ctx, r.cfg.StepTimeout)
	defer cancel()
	if k != pipeline.DoCleanup { // a finished run's counter is gone
		ctx = pipeline.WithCallCounter(ctx, r.calls(p, run.Key()))
	}
	if t := r.cfg.Tracer; t != nil {
		var end func(pipeline.Input)
		ctx, end = t.Step(ctx, run, k)
		defer func() { end(in) }() // after the recovery below has set in
	}
	defer func() {
		if v := recover(); v != nil {
			s := k.Step()
			r.log.Error("step panicked; failing the run", "batch_id", run.BatchID, "dataset", r.label(run.Dataset),
				"step", string(s), "panic", v, "stack", string(debug.Stack()))
			in = pipeline.StepFailed{Step: s, Err: fmt.Sprintf("panic: %v", v), Class: pipeline.Permanent}
		}
	}()
	return do(ctx)
}

// span starts the span of a part of a step (name) under the step's ctx; a
// no-op without a Tracer.
func (r *Runner) span(ctx context.Context, name string) (context.Context, func(error)) {
	if r.cfg.Tracer == nil {
		return ctx, func(error) {}
	}
	return r.cfg.Tracer.Span(ctx, name)
}

// failed is the StepFailed of step s for err, classed by the error class
// the adapter wrapped (pipeline.ErrTransient and the like).
func failed(log *slog.Logger, s pipeline.Step, err error) pipeline.StepFailed {
	class := pipeline.Permanent
	switch {
	case errors.Is(err, pipeline.ErrMergeConflict):
		class = pipeline.Conflict
	case errors.Is(err, pipeline.ErrTransient), errors.Is(err, context.DeadlineExceeded):
		class = pipeline.Transient
	}
	log.Warn("step failed", "step", string(s), "class", class.String(), "err", err)
	return pipeline.StepFailed{Step: s, Err: err.Error(), Class: class}
}

func outcome(in pipeline.Input) string {
	if sf, ok := in.(pipeline.StepFailed); ok {
		return sf.Class.String()
	}
	return "ok"
}
