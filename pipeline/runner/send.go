package runner

import (
	"context"
	"time"

	"github.com/lakewap/lakewap/internal/backoff"
	"github.com/lakewap/lakewap/pipeline"
)

// sendOutbox delivers the outbox entry the effect names (DoSend).
func (r *Runner) sendOutbox(j job) pipeline.Input { return r.send(j.p, j.run, j.effect.Send) }

// send delivers one outbox entry of run (or, without a run, the answer to
// an operator request), retrying until it is delivered or the partition is
// revoked (an outbox entry stays in the stored outbox either way).
func (r *Runner) send(p *partition, run pipeline.Run, o pipeline.Outgoing) pipeline.Input {
	b := backoff.Policy{Min: 200 * time.Millisecond, Max: 10 * time.Second, Jitter: backoff.Equal}.New()
	if o.Published != nil {
		r.cfg.Failpoint("before_send")
	}
	batch := run.BatchID
	if batch == "" {
		batch = o.Event().Batch()
	}
	receipts := run.Receipts
	for {
		ctx, cancel := context.WithTimeout(p.ctx, r.cfg.StepTimeout)
		got, err := r.cfg.Notifier.Notify(ctx, pipeline.Notification{Event: o.Event(), State: o.State, Run: run, Receipts: receipts,
			RequestID: o.RequestID, ResultOnly: o.ResultOnly()})
		cancel()
		if got != nil {
			receipts = got // what did go out is not sent again on retry
		}
		if err == nil {
			return pipeline.Sent{EventID: o.EventID, Receipts: receipts}
		}
		r.log.Warn("sending result event failed, retrying", "batch_id", batch, "event_id", o.EventID, "err", err)
		if !b.Wait(p.ctx) {
			return nil
		}
	}
}
