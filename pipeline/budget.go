package pipeline

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// Byte budgets of what a run stores. The run record is written to the
// changelog on every change, so it must stay far below the topic's maximum
// message size; everything a producer, lakeFS or an audit puts into it is
// bounded here or at the edge (schemas.Rules).
const (
	// defaultMaxRunBytes is the default budget of one run record (JSON).
	defaultMaxRunBytes = 256 << 10
	// maxDetailBytes bounds Run.Detail and the Detail of BatchAborted.
	maxDetailBytes = 4 << 10
	// maxErrorBytes bounds Run.LastError and the Error of BatchFailed.
	maxErrorBytes = 2 << 10
)

// Refusal is an input the machine will not store: it goes to the dead-letter
// topic with Reason, and the run it names is left as it was.
type Refusal struct {
	Reason string // short fixed code, the dead letter's wap.dlq.reason
	Detail string
}

func (r *Refusal) Error() string { return r.Detail }

// RefusedReason is the dead letter's reason (ingest.Refused).
func (r *Refusal) RefusedReason() string { return r.Reason }

// Dead-letter reasons of refused inputs.
const (
	// RefusedUnexpectedWrite: a WriteComplete names a write the batch does
	// not expect (or, before the batch landed, one write too many).
	RefusedUnexpectedWrite = "unexpected_write"
	// RefusedOverBudget: applying the input made the run record exceed its
	// budget; the run was ended (BatchFailed) instead.
	RefusedOverBudget = "over_budget"
	// RefusedTooManyPending: a WriteComplete of a batch that has not landed
	// would start one more pending run than Policy.MaxPendingRuns, or give
	// the pending runs more than twice that many writes together.
	RefusedTooManyPending = "too_many_pending"
	// RefusedBeyondHorizon: a BatchLanded no run answers whose own time
	// (occurred_at) is at or before the dedupe horizon: a run it had may
	// have been forgotten (runner.terminal_retention, max_finished_runs),
	// and starting another could publish the batch a second time.
	RefusedBeyondHorizon = "beyond_horizon"
)

// refuse says whether in must not be applied to r. Only inputs that would
// grow a run with names it never asked for are refused: everything else is
// applied, or is a no-op duplicate.
func (m Machine) refuse(r Run, in Input, now time.Time) *Refusal {
	if l, ok := in.(Landed); ok {
		return m.beyondHorizon(r, l, now)
	}
	wd, ok := in.(WriteDone)
	if !ok {
		return nil
	}
	w := wd.Event.Write
	if _, dup := r.Writes[w]; dup {
		return nil
	}
	switch {
	case r.State == "" && m.p.MaxPendingRuns > 0 && wd.Pending >= m.p.MaxPendingRuns:
		return &Refusal{Reason: RefusedTooManyPending, Detail: fmt.Sprintf(
			"write %q of batch %q of dataset %q: the batch has not landed and the partition already holds %d runs of batches that have not landed, the limit (runner.max_pending_runs)",
			schemas.Clip(w, 200), schemas.Clip(wd.Event.BatchID, 200), wd.Event.Dataset, wd.Pending)}
	case (r.State == "" || r.State == StatePending) && m.p.MaxPendingRuns > 0 && wd.EarlyWrites >= 2*m.p.MaxPendingRuns:
		// Each pending run may keep up to MaxExpectedWrites names: bounded
		// per run only, the partition could hold that many times more.
		return &Refusal{Reason: RefusedTooManyPending, Detail: fmt.Sprintf(
			"write %q of batch %q of dataset %q: the batch has not landed and the partition's runs of batches that have not landed already hold %d writes, twice runner.max_pending_runs",
			schemas.Clip(w, 200), schemas.Clip(wd.Event.BatchID, 200), wd.Event.Dataset, wd.EarlyWrites)}
	case (r.State == "" || r.State == StatePending) && len(r.Writes) >= schemas.MaxExpectedWrites:
		// The batch has not landed: its expected writes are unknown. Keep
		// at most as many as a batch may expect.
		return &Refusal{Reason: RefusedUnexpectedWrite, Detail: fmt.Sprintf(
			"write %q: batch %q of dataset %q has not landed and already has %d early writes, the most a batch may expect",
			schemas.Clip(w, 200), r.BatchID, r.Dataset, len(r.Writes))}
	case !expectsWrite(r, w):
		return &Refusal{Reason: RefusedUnexpectedWrite, Detail: fmt.Sprintf(
			"write %q is not one of the %d expected writes of batch %q of dataset %q",
			schemas.Clip(w, 200), max(len(r.ExpectedWrites), len(r.ExpectedSums)), r.BatchID, r.Dataset)}
	}
	return nil
}

// expectsWrite is false when r names its expected writes and w is none of
// them.
func expectsWrite(r Run, w string) bool {
	expected, named := r.expects(w)
	return expected || !named
}

// Fit is the budget of the run record o stores: it encodes o.Run and
// returns the record to store (nil when the run is to be forgotten). A
// record over Policy.MaxRunBytes is trimmed (sample rows, long texts) and
// the run goes on; one still over it is ended with a BatchFailed saying so,
// and the input refused (RefusedOverBudget), so the batch has a definite
// outcome and the partition moves on. The outcome's effects are those of
// the run as stored.
func (m Machine) Fit(o Outcome, now time.Time) (Outcome, []byte, error) {
	if o.Run.State == "" {
		return o, nil, nil
	}
	budget := m.p.MaxRunBytes
	b, err := json.Marshal(o.Run)
	if err != nil || len(b) <= budget {
		return o, b, err
	}
	run := trim(o.Run)
	if b, err = json.Marshal(run); err != nil {
		return o, nil, err
	}
	if size := len(b); size > budget {
		run = overBudget(run, size, budget, now)
		o.Refused = &Refusal{Reason: RefusedOverBudget, Detail: fmt.Sprintf("run record of %d bytes exceeds the budget of %d bytes", size, budget)}
		if b, err = json.Marshal(run); err != nil {
			return o, nil, err
		}
	}
	replies := slices.DeleteFunc(slices.Clone(o.Effects), func(e Effect) bool { return e.Kind != DoReply })
	o.Run = run
	o.Effects = append(m.Pending(run, now), replies...)
	return o, b, nil
}

// trim drops what a run can live without when its record is over budget:
// sample rows of its audit reports, and long texts. The run goes on.
func trim(r Run) Run {
	n := r.Clone()
	n.Detail, n.LastError = schemas.Clip(n.Detail, maxDetailBytes), schemas.Clip(n.LastError, maxErrorBytes)
	n.Report = bareReport(n.Report, true)
	n.delivery = n.delivery.trim()
	return n
}

// overBudget ends a run whose record is still over budget after trim: it
// keeps the run's identity and where it got to, and fails it. A run already
// finished keeps its outcome. Both keep the partition's floor (Run.Floor),
// which a forgotten run's dedupe depends on.
func overBudget(r Run, size, budget int, now time.Time) Run {
	msg := fmt.Sprintf("run record of %d bytes exceeds the budget of %d bytes", size, budget)
	n := Run{BatchID: r.BatchID, Dataset: r.Dataset, Repository: r.Repository, Branch: r.Branch,
		Source: r.Source, Target: r.Target, State: r.State, Deadline: r.Deadline, KeepBranch: true,
		LandedAt: r.LandedAt, BatchTime: r.BatchTime, StateSince: r.StateSince, UpdatedAt: now, Floor: r.Floor,
		SealedCommit: r.SealedCommit, CommitID: r.CommitID, Reason: r.Reason, FailedStep: r.FailedStep,
		Detail: schemas.Clip(r.Detail, 512), delivery: delivery{Sent: r.Sent}, Request: r.Request, Retries: r.Retries, RetriedBy: r.RetriedBy, RetryAsked: r.RetryAsked}
	if r.Revert != nil && !r.revertPending() {
		rv := *r.Revert
		rv.Reason, rv.By = schemas.Clip(rv.Reason, 512), schemas.Clip(rv.By, 512)
		n.Revert = &rv
	}
	if r.State.Terminal() {
		for _, o := range r.Outbox {
			if o.Event() != nil && o.State == r.State {
				n.add(trimOutgoing(o, false))
			}
		}
		return n
	}
	return fail(n, cmp.Or(stateStep(r.State), "store"), msg, r.Attempts, now)
}

// bareReport copies rep without sample rows (samples) or without any check
// results (!samples: counts survive in the summary of the message only).
func bareReport(rep *schemas.AuditReport, samples bool) *schemas.AuditReport {
	if rep == nil {
		return nil
	}
	c := *rep
	if !samples {
		c.Checks = nil
		return &c
	}
	c.Checks = slices.Clone(rep.Checks)
	for i := range c.Checks {
		c.Checks[i].SampleRows = nil
		c.Checks[i].Message = schemas.Clip(c.Checks[i].Message, 512)
		c.Checks[i].Observed = schemas.Clip(c.Checks[i].Observed, 512)
	}
	return &c
}

func trimOutgoing(o Outgoing, samples bool) Outgoing {
	switch {
	case o.Published != nil:
		ev := *o.Published
		ev.Report = *bareReport(&ev.Report, samples)
		o.Published = &ev
	case o.Aborted != nil:
		ev := *o.Aborted
		ev.Report = bareReport(ev.Report, samples)
		ev.Detail = schemas.Clip(ev.Detail, maxDetailBytes)
		o.Aborted = &ev
	case o.Failed != nil:
		ev := *o.Failed
		ev.Error = schemas.Clip(ev.Error, maxErrorBytes)
		o.Failed = &ev
	}
	return o
}

// landedSkew is how far ahead of lakewap's clock a BatchLanded's
// occurred_at may be (schemas' validation refuses more than 24 hours).
const landedSkew = 24 * time.Hour

// DedupeHorizon is the time at or before which a BatchLanded that no run
// answers is refused at now: a run of it may have been forgotten. A run is
// forgotten TerminalRetention after it finished, which is after it landed,
// when its occurred_at was at most landedSkew ahead of lakewap's clock; so
// every batch forgotten by age has an occurred_at at or before
// now - TerminalRetention + landedSkew (the margin is half the retention
// when that is shorter than two days). floor, the newest batch time of a
// published run forgotten over MaxFinishedRuns, raises it.
func (p Policy) DedupeHorizon(now, floor time.Time) time.Time {
	h := now.Add(-p.TerminalRetention + min(landedSkew, p.TerminalRetention/2))
	if floor.After(h) {
		return floor
	}
	return h
}

// beyondHorizon refuses a BatchLanded that no run answers (or only the
// pending run of writes that came first) when its occurred_at is at or
// before the dedupe horizon: a run it had may have been forgotten, with
// its branch deleted by the janitor, and a new run would publish the batch
// a second time.
func (m Machine) beyondHorizon(r Run, l Landed, now time.Time) *Refusal {
	if r.State != "" && r.State != StatePending {
		return nil // a duplicate: the run answers it
	}
	h := m.p.DedupeHorizon(now, l.Floor)
	if l.Event.OccurredAt.After(h) {
		return nil
	}
	why := fmt.Sprintf("runs are kept runner.terminal_retention (%s) after they finish", m.p.TerminalRetention)
	if h.Equal(l.Floor) {
		why = "runner.max_finished_runs forgot a published run of this dataset on this partition with a batch time that late"
	}
	return &Refusal{Reason: RefusedBeyondHorizon, Detail: fmt.Sprintf(
		"BatchLanded of batch %q of dataset %q occurred at %s, not after %s: lakewap holds no run of it and may have forgotten one (%s), so it could publish the batch a second time; announce a new batch with a new batch id and time",
		schemas.Clip(l.Event.BatchID, 200), l.Event.Dataset, l.Event.OccurredAt.UTC().Format(time.RFC3339Nano), h.UTC().Format(time.RFC3339Nano), why)}
}
