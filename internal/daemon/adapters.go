package daemon

import (
	"context"
	"errors"
	"fmt"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/notify"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/lakefs"
	"github.com/lakewap/lakewap/pipeline/lakefs/auditsource"
	"github.com/lakewap/lakewap/pipeline/runner"
	"github.com/lakewap/lakewap/schemas"
)

// auditor is the runner's view of the audit service.
type auditor struct{ s *audit.Service }

func (a auditor) Audit(ctx context.Context, req pipeline.AuditRequest) (schemas.AuditReport, error) {
	r := audit.Request{Dataset: req.Dataset, Repository: req.Repository,
		Ref: req.Ref, BaseRef: req.BaseRef, BaseName: req.BaseName, BatchTime: req.BatchTime}
	if req.Changes != nil {
		r.Changes = auditsource.Changes(req.Changes) // the audit step's one diff
	}
	run := a.s.Audit
	if req.Onto {
		run = a.s.Recheck // the sealed commit as its merge into the moved target leaves the table
		r.BeforeRead = req.BeforeRead
	}
	rep, err := run(ctx, r)
	if errors.Is(err, audit.ErrInfrastructure) {
		// Out of memory, a base that cannot be resolved and the like:
		// retried within runner.retry_budget, then the batch fails (not
		// aborted: its data was never judged).
		err = fmt.Errorf("%w: %w", pipeline.ErrTransient, err)
	}
	return rep, err
}

// PrepareRecheck reads ahead, for a publish waiting for its turn, what its
// recheck asks about its foundation (runner.RecheckPreparer).
func (a auditor) PrepareRecheck(ctx context.Context, req pipeline.AuditRequest, foundation string) {
	r := audit.Request{Dataset: req.Dataset, Repository: req.Repository, Ref: req.Ref}
	if req.Changes != nil {
		r.Changes = auditsource.Changes(req.Changes) // the batch's diff: the paths it adds outside its tables
	}
	a.s.PrepareRecheck(ctx, r, foundation)
}

// SuitesDigest names the suites the runner's audits of dataset are reached
// under (runner.SuitesDigester).
func (a auditor) SuitesDigest(dataset string) string { return a.s.SuitesDigest(dataset) }

// Merged tells the audit engine of a merge the runner made
// (runner.MergeRecorder).
func (a auditor) Merged(repo, commit, sealed string) { a.s.Merged(repo, commit, sealed) }

// Sealed tells the audit engine of a seal the runner made
// (runner.MergeRecorder).
func (a auditor) Sealed(repo, commit string) { a.s.Sealed(repo, commit) }

// notifier maps a pipeline notification onto the dispatcher's.
type notifier struct{ d *notify.Dispatcher }

func (n notifier) Notify(ctx context.Context, pn pipeline.Notification) (map[string]string, error) {
	return n.d.Notify(ctx, notify.Notification{
		Event: pn.Event, State: string(pn.State), Dataset: pn.Run.Dataset, BatchID: pn.Run.BatchID,
		Repository: pn.Run.Repository, Branch: pn.Run.Branch, LandedAt: pn.Run.LandedAt, Receipts: pn.Receipts,
		RequestID: pn.RequestID, ResultOnly: pn.ResultOnly, Trace: pn.Run.Trace,
	})
}

// Settled is the Dispatcher's Settled of the run (runner.Settler).
func (n notifier) Settled(ctx context.Context, run pipeline.Run) (map[string]string, bool) {
	return n.d.Settled(ctx, run.Dataset, run.BatchID, run.Receipts)
}

var (
	_ runner.Settler         = notifier{}
	_ runner.MergeRecorder   = auditor{}
	_ runner.RecheckPreparer = auditor{}
	_ runner.SuitesDigester  = auditor{}
)

// The runner takes a waiting publish's diff ahead of its turn only with a
// Lake that finds merge-bases.
var _ runner.MergeBaser = (*lakefs.Client)(nil)
