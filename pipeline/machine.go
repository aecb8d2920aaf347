package pipeline

import (
	"cmp"
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/lakewap/lakewap/internal/backoff"
	"github.com/lakewap/lakewap/schemas"
)

// Input is anything that moves a Run: an input event from Kafka, the
// outcome of a step the runner executed, or the clock.
type Input interface{ input() }

// DatasetSpec is what the machine needs to know of a dataset's config.
type DatasetSpec struct {
	Repository   string
	Source       string        // ref branches start from; default Target
	Target       string        // default "main"
	WriteTimeout time.Duration // used when BatchLanded has no deadline
	KeepBranch   bool          // keep the branch of an aborted batch for inspection
	// TablePaths are the path prefixes of the dataset's tables, and
	// AllowedPaths the other prefixes a batch may change: a batch whose
	// sealed commit changes anything else is aborted (outside_tables).
	TablePaths, AllowedPaths []string
	// SourceRefs are the refs a BatchLanded may name as source_ref; empty
	// means the dataset's Source and Target.
	SourceRefs []string
	// MaxWriteTimeout caps a batch's write deadline at this long after it
	// landed, whatever its BatchLanded asks: a producer's far deadline
	// cannot keep a run open for longer (0: no cap beyond the validation's
	// horizon).
	MaxWriteTimeout time.Duration
}

// AllowsSource reports whether a batch may branch from ref.
func (s DatasetSpec) AllowsSource(ref string) bool {
	if len(s.SourceRefs) > 0 {
		return slices.Contains(s.SourceRefs, ref)
	}
	return ref == cmp.Or(s.Target, "main") || ref == s.Source
}

// OutsideTables returns the paths that are under none of the dataset's
// table paths or allowed paths.
func (s DatasetSpec) OutsideTables(paths []string) []string {
	prefixes := slices.Concat(s.TablePaths, s.AllowedPaths)
	return slices.DeleteFunc(slices.Clone(paths), func(p string) bool {
		return slices.ContainsFunc(prefixes, func(prefix string) bool { return prefix != "" && strings.HasPrefix(p, prefix) })
	})
}

// Inputs from Kafka.
type (
	// Landed is a validated BatchLanded with its dataset resolved. Open is
	// how many runs of its dataset in progress the instance holds
	// (Policy.MaxOpenRuns).
	Landed struct {
		Event  schemas.BatchLanded
		Spec   DatasetSpec
		Branch string
		Open   int
		// OpenBytes is what those runs hold of their producers' bytes
		// (LandedBytes of each; Policy.MaxOpenBytes).
		OpenBytes int
		// Trace is the W3C trace context of the BatchLanded message: the run
		// keeps it for its result events and merge commit.
		Trace schemas.TraceContext
		// Floor is the newest batch time of the dataset's published runs
		// the partition forgot over Policy.MaxFinishedRuns (zero: none): a
		// BatchLanded no run answers whose occurred_at is not after it may
		// be one of theirs, and is refused (RefusedBeyondHorizon).
		Floor time.Time
	}
	// WriteDone is a validated WriteComplete. Pending is how many runs of
	// batches that have not landed yet the partition holds
	// (Policy.MaxPendingRuns), EarlyWrites how many writes those runs hold
	// together (at most twice Policy.MaxPendingRuns).
	WriteDone struct {
		Event       schemas.WriteComplete
		Pending     int
		EarlyWrites int
	}
	// Cancel is a BatchCancelled.
	Cancel struct{ Event schemas.BatchCancelled }
	// Invalid is an event that decoded but failed validation; it aborts the
	// batch it names (reason invalid).
	Invalid struct{ BatchID, Dataset, Detail string }
	// RetryRequest is an operator's RetryRequested: a failed run, or one
	// aborted by its audit or a merge conflict, runs again from the step
	// that stopped it.
	RetryRequest struct{ Event schemas.RetryRequested }
	// RevertRequest is an operator's RevertRequested: the merge that
	// published the run is undone on its target.
	RevertRequest struct{ Event schemas.RevertRequested }
)

// Inputs from the runner.
type (
	// Tick is the clock: deadlines and retry times are checked against now.
	// Lagging says the partition has unread input older than the run's
	// write deadline: a WriteComplete that happened before the deadline
	// may still be in that backlog, so the deadline does not end the run
	// yet (see Policy.MaxLagWait).
	// Evict forgets a finished run whose events are all sent before its
	// retention is over (Policy.MaxFinishedRuns).
	Tick struct{ Lagging, Evict bool }
	// BranchSource reports the commit the run's source ref points at: the
	// branch is made from it, and an existing branch is resumed only when it
	// points there (a branch made beforehand from an older commit is not
	// the run's). Recorded before the branch is made, so that a crash in
	// between still recognises the run's own branch.
	BranchSource struct{ Commit string }
	// BranchCreated reports the batch branch exists.
	BranchCreated struct{}
	// AuditBegun answers DoBeginAudit, and begins the recheck of a
	// publish (the audit onto the target's newer head, with its bisection
	// probes): the attempt about to start is recorded, so that a process
	// that dies in it is known at the next restore. Solo says the runner
	// runs it as the only audit in its process (Run.AuditSuspect asks for
	// that), so that a death in it is the attempt's own. Recheck says it
	// begins a publish's recheck (in publishing), not an audit step.
	// Revert says it begins a revert's audit (in published, a revert
	// pending): a revert whose audit takes the process down is counted
	// as an audit is, and given up at the limit.
	AuditBegun struct{ Solo, Recheck, Revert bool }
	// AuditStopped reports that an audit begun was stopped before it
	// reported because its partition was revoked (a rebalance, a shutdown):
	// the attempt did not take the process down.
	AuditStopped struct{}
	// AuditEnded reports that a recheck begun (AuditBegun in publishing)
	// returned: it did not take the process down. Stored before the merge
	// it allows, so that a process ending after that merge is never taken
	// for a lost recheck.
	AuditEnded struct{}
	// Sealed records the commit an attempt of the audit step sealed the
	// branch with, before it reads the branch's changes (Run.Seals).
	Sealed struct{ Commit string }
	// Restored is the first input of a run restored from the store (at a
	// start, or when this instance takes the run's partition).
	Restored struct{}
	// Audited reports the suite ran against SealedCommit.
	Audited struct {
		SealedCommit string
		Report       schemas.AuditReport
		// Suites is the digest of the suites the report was reached
		// under (Run.Suites); empty when the auditor does not tell.
		Suites string
		// Onto is the target's head the report judged the batch merged
		// into (Run.AuditedOnto); empty when it judged the sealed commit.
		Onto string
	}
	// Strayed reports that the sealed commit changes paths outside the
	// dataset's tables (and allowed paths); Total counts them all, Paths
	// names the first few.
	Strayed struct {
		SealedCommit string
		Paths        []string
		Total        int
	}
	// Merged reports the batch is on the target as CommitID. Report, when
	// set, is the recheck's: the sealed commit audited again onto the
	// target's newer head. SealedCommit, when set, is a commit an earlier
	// attempt of an older version merged in place of the run's sealed one
	// (its recheck's descendant of it).
	Merged struct {
		CommitID     string
		SealedCommit string
		Report       *schemas.AuditReport
		// Suites is the digest of the suites Report was reached under
		// (Run.Suites), set with Report.
		Suites string
		// Changes announce what the merge landed on that lakewap did not
		// attest (commits, a suite change); the machine queues at most
		// MaxChanges of them after BatchPublished.
		Changes []schemas.UnattestedChange
	}
	// Collided reports that the batch's sealed commit (SealedCommit),
	// audited again onto the target's newer head Head before its merge,
	// fails Checks: it collides with Commit, the first target commit since
	// its snapshot it fails with.
	Collided struct {
		SealedCommit, Commit, Head string
		Checks                     []string
		Report                     schemas.AuditReport
		// SuitesChanged: the recheck ran because the suites in force are
		// not those of the batch's audit (Run.Suites). With no Commit the
		// target had not moved: the batch fails the checks as they are
		// now, and no commit is to blame.
		SuitesChanged bool
	}
	// StepFailed reports a step that returned an error.
	StepFailed struct {
		Step  Step
		Err   string
		Class FailClass
	}
	// Sent reports a result event was delivered.
	Sent struct {
		EventID  string
		Receipts map[string]string
	}
	// CleanedUp reports the aborted batch's branch was deleted.
	CleanedUp struct{}
	// Looked answers DoLook: whether the sealed commit of a publish that
	// failed is on the target after all (CommitID the target commit that
	// holds it). A look that could not be made reports OnTarget false.
	Looked struct {
		OnTarget bool
		CommitID string
		// SealedCommit, when set, is the commit that merge brought in place
		// of the run's sealed one (Merged.SealedCommit).
		SealedCommit string
		Changes      []schemas.UnattestedChange // as Merged.Changes
	}
	// Reverted reports the revert commit CommitID on the target undoes
	// PublishCommit; Reason and By are what that commit records (an earlier
	// revert found on the target is reported as it was made). Audited:
	// the revert is the merge of the commit lakewap audited (not forced).
	Reverted struct {
		PublishCommit, CommitID string
		At                      time.Time
		Reason, By              string
		Audited                 bool
	}
)

func (Landed) input()        {}
func (WriteDone) input()     {}
func (Cancel) input()        {}
func (Invalid) input()       {}
func (Tick) input()          {}
func (BranchSource) input()  {}
func (BranchCreated) input() {}
func (AuditBegun) input()    {}
func (AuditStopped) input()  {}
func (AuditEnded) input()    {}
func (Restored) input()      {}
func (Sealed) input()        {}
func (Collided) input()      {}
func (Audited) input()       {}
func (Merged) input()        {}
func (Strayed) input()       {}
func (StepFailed) input()    {}
func (Sent) input()          {}
func (CleanedUp) input()     {}
func (RetryRequest) input()  {}
func (RevertRequest) input() {}
func (Reverted) input()      {}
func (Looked) input()        {}

// FailClass says what a step failure means for the run.
type FailClass int

// Failure classes.
const (
	Transient FailClass = iota // retry with backoff within the budget
	Permanent                  // fail the run now
	Conflict                   // merge conflict: abort, keep the branch
	Rejected                   // the event asked for something that does not exist: abort as invalid
)

func (c FailClass) String() string {
	if names := [...]string{"transient", "permanent", "conflict", "rejected"}; c >= 0 && int(c) < len(names) {
		return names[c]
	}
	return fmt.Sprintf("FailClass(%d)", int(c))
}

// EffectKind names work the runner must do for a run.
type EffectKind int

// Effect kinds.
const (
	DoCreateBranch EffectKind = iota + 1
	DoAudit
	DoPublish
	DoSend
	DoCleanup
	DoWake   // call back with Tick at Effect.At
	DoForget // drop the run from the store
	DoRevert // revert the run's publish on its target
	// DoReply sends Effect.Send once, to the results topic only: the answer
	// to an operator request that changed nothing (it is not stored).
	DoReply
	// DoLook looks once more, before a failed publish ends its run, whether
	// the sealed commit is on the target after all (answered by Looked).
	DoLook
	// DoBeginAudit records that an audit attempt starts (answered by
	// AuditBegun) before DoAudit runs it: the runner's own work, no I/O but
	// the run's record.
	DoBeginAudit
)

func (k EffectKind) String() string {
	return [...]string{"none", "create_branch", "audit", "publish", "send", "cleanup", "wake", "forget", "revert", "reply", "look", "begin_audit"}[k]
}

// The one table of the run's steps: the effect a state asks for, and the
// step each effect carries out (a failure names it in StepFailed).
var (
	stateEffect = map[State]EffectKind{StateLanded: DoCreateBranch, StateAuditing: DoAudit, StatePublishing: DoPublish}
	effectStep  = map[EffectKind]Step{DoCreateBranch: StepBranch, DoAudit: StepAudit, DoPublish: StepPublish,
		DoLook: StepPublish, DoCleanup: StepCleanup, DoRevert: StepRevert}
)

// Step is the step k carries out; "" for the runner's own work (send,
// wake, forget, reply).
func (k EffectKind) Step() Step { return effectStep[k] }

// stateStep is the step a run in state s carries out ("" for none).
func stateStep(s State) Step { return stateEffect[s].Step() }

// Effect is one piece of work asked of the runner.
type Effect struct {
	Kind EffectKind
	At   time.Time // DoWake
	Send Outgoing  // DoSend, DoReply
}

// Policy holds the machine's tunables.
type Policy struct {
	PendingTTL  time.Duration // how long writes that arrived before their batch are kept
	RetryBudget time.Duration // how long a step may keep failing transiently before the run fails
	MinBackoff  time.Duration
	MaxBackoff  time.Duration
	// NotifyRetry is how long to wait before notifying a best-effort sink
	// (Slack) again that did not deliver; NotifyRetries caps the attempts.
	NotifyRetry   time.Duration
	NotifyRetries int
	// TerminalRetention is how long a finished run stays in the store (so
	// duplicates of its events stay no-ops) before it is forgotten.
	TerminalRetention time.Duration
	// MaxRunBytes is the budget of one stored run record (its JSON); a run
	// over it is trimmed, then ended (see Trim and OverBudget).
	MaxRunBytes int
	// Deadlines are judged on event time: a write whose occurred_at is at
	// or before the deadline counts even when it is handled later. While
	// the partition lags behind the deadline (Tick.Lagging), a run past its
	// deadline waits, checking again every LagRecheck, for at most
	// MaxLagWait after the deadline; then it is aborted anyway.
	MaxLagWait time.Duration
	LagRecheck time.Duration
	// MaxOpenRuns bounds the runs in progress (landed to publishing) of one
	// dataset that one instance holds, so that a flood of one dataset's
	// batches cannot starve another's; a batch landing beyond it is aborted
	// at once with reason too_many_runs, before any branch is made. 0: no limit.
	MaxOpenRuns int
	// MaxOpenBytes bounds what those runs hold of their producers' bytes
	// together (LandedBytes: attributes and expected writes, 107 KB at
	// the schema's limits, so MaxOpenRuns alone let a producer make one
	// instance hold 1 GB of a dataset's): a batch landing beyond it is
	// aborted too_many_runs as well. 0: no limit.
	MaxOpenBytes int
	// MaxPendingRuns bounds the runs one partition holds for batches that
	// have not landed (writes that came first): a WriteComplete that would
	// start one more is refused (dead letter too_many_pending), so junk
	// writes for batches that never land cannot grow the store. 0: no limit.
	MaxPendingRuns int
	// RejectedRetention is how long a run aborted before it began (reasons
	// invalid and too_many_runs) is kept, in place of TerminalRetention: a
	// producer's junk is answered, then forgotten soon.
	RejectedRetention time.Duration
	// MaxFinishedRuns bounds the finished runs of one dataset one partition
	// keeps: beyond it a finished run whose events are all sent is
	// forgotten before its retention is over (the runner's order: runs
	// aborted invalid or too_many_runs first, then earliest first, a
	// published run by batch time, any other by when it finished).
	// 0: no limit.
	MaxFinishedRuns int
	// MaxFinishedBytes bounds what those finished runs of one dataset hold
	// of their producers' bytes together (HeldBytes: a run an operator may
	// retry keeps its attributes, expected and completed writes, 148 KB at
	// the schema's limits): past it they are forgotten in the same order.
	// 0: no limit.
	MaxFinishedBytes int
	// MaxAuditAttempts is how many attempts of a run's audit may end with
	// their process (begun, never reported) before the run is aborted with
	// reason audit_crashed, its branch kept (audit.max_attempts).
	MaxAuditAttempts int
}

// DefaultPolicy is the machine's documented policy. It is the one place
// these defaults live: the config starts from it, and so do tests that
// change a field or two.
var DefaultPolicy = Policy{PendingTTL: time.Hour, RetryBudget: 10 * time.Minute, MinBackoff: 500 * time.Millisecond,
	MaxBackoff: 30 * time.Second, NotifyRetry: time.Minute, NotifyRetries: 60, TerminalRetention: 7 * 24 * time.Hour,
	MaxRunBytes: defaultMaxRunBytes, MaxLagWait: time.Hour, LagRecheck: 10 * time.Second, MaxOpenRuns: 10000,
	MaxOpenBytes: 64 << 20, MaxPendingRuns: 10000, RejectedRetention: 10 * time.Minute, MaxFinishedRuns: 10000, MaxFinishedBytes: 64 << 20, MaxAuditAttempts: 3}

// Validate names the first field of p that the machine cannot work with.
func (p Policy) Validate() error {
	for _, f := range []struct {
		name string
		ok   bool
	}{
		{"PendingTTL", p.PendingTTL > 0}, {"RetryBudget", p.RetryBudget > 0}, {"MinBackoff", p.MinBackoff > 0},
		{"MaxBackoff", p.MaxBackoff >= p.MinBackoff}, {"NotifyRetry", p.NotifyRetry > 0}, {"NotifyRetries", p.NotifyRetries >= 0},
		{"TerminalRetention", p.TerminalRetention > 0}, {"MaxRunBytes", p.MaxRunBytes > 0}, {"MaxLagWait", p.MaxLagWait >= 0},
		{"LagRecheck", p.LagRecheck > 0}, {"MaxOpenRuns", p.MaxOpenRuns >= 0}, {"MaxOpenBytes", p.MaxOpenBytes >= 0},
		{"MaxPendingRuns", p.MaxPendingRuns >= 0}, {"RejectedRetention", p.RejectedRetention > 0}, {"MaxFinishedRuns", p.MaxFinishedRuns >= 0}, {"MaxFinishedBytes", p.MaxFinishedBytes >= 0},
		{"MaxAuditAttempts", p.MaxAuditAttempts > 0},
	} {
		if !f.ok {
			return fmt.Errorf("pipeline: Policy.%s is out of range (start from DefaultPolicy)", f.name)
		}
	}
	return nil
}

// Machine is the pure WAP state machine.
type Machine struct{ p Policy }

// NewMachine returns a machine with p, taken as it is (see DefaultPolicy).
func NewMachine(p Policy) Machine { return Machine{p: p} }

// Outcome is what Apply made of an input.
type Outcome struct {
	// Run is the run after the input; an empty State means it is to be
	// forgotten. When Changed is false it is the run given.
	Run Run
	// Effects is the work the run asks for now (Pending), and the answer to
	// an operator request that changed nothing (DoReply).
	Effects []Effect
	// Changed says Run differs from the run given, so it must be stored
	// before its effects start; a no-op input (a duplicate, a tick before
	// any deadline) writes nothing.
	Changed bool
	// Refused is an input the machine will not apply: it goes to the
	// dead-letter topic and the run is left as it was. Fit also sets it
	// when it had to end a run over its budget.
	Refused *Refusal
}

// Apply is the one entry point of the machine: it applies in to r at now.
// r with an empty State is "no run yet". Apply never mutates r.
func (m Machine) Apply(r Run, in Input, now time.Time) Outcome {
	if ref := m.refuse(r, in, now); ref != nil {
		return Outcome{Run: r, Refused: ref}
	}
	n, changed, reply := m.transition(r.Clone(), in, now)
	o := Outcome{Run: n, Changed: changed}
	switch {
	case n.State == "" && r.State == "":
		o.Run, o.Changed = r, false // nothing to store, nor to forget
	case !changed:
		o.Run = r
		o.Effects = m.Pending(r, now)
	default:
		if n.State != "" {
			n.UpdatedAt = now
			o.Run = n
		}
		o.Effects = m.Pending(n, now)
	}
	if reply != nil {
		o.Effects = append(o.Effects, Effect{Kind: DoReply, Send: *reply})
	}
	return o
}

// transition applies in to n, a copy it may change, and reports whether
// it did, with the answer to an operator request that changes nothing.
func (m Machine) transition(n Run, in Input, now time.Time) (Run, bool, *Outgoing) {
	switch in := in.(type) {
	case Landed:
		return m.landed(n, in, now)
	case WriteDone:
		n, changed := m.writeDone(n, in.Event, now)
		return n, changed, nil
	case Cancel:
		if in.Event.RequestID != "" && ahead(in.Event.OccurredAt, now) {
			return n, false, refusedAhead(n, "cancel", in.Event.RequestID, schemas.TypeBatchCancelled, in.Event.BatchID, in.Event.Dataset, in.Event.OccurredAt, now)
		}
		return m.cancel(n, in.Event, now)
	case RetryRequest:
		if ahead(in.Event.OccurredAt, now) {
			return n, false, refusedAhead(n, "retry", in.Event.RequestID, schemas.TypeRetryRequested, in.Event.BatchID, in.Event.Dataset, in.Event.OccurredAt, now)
		}
		return m.retry(n, in.Event, now)
	case RevertRequest:
		if ahead(in.Event.OccurredAt, now) {
			return n, false, refusedAhead(n, "revert", in.Event.RequestID, schemas.TypeRevertRequested, in.Event.BatchID, in.Event.Dataset, in.Event.OccurredAt, now)
		}
		return m.revert(n, in.Event, now)
	case Reverted:
		if n.State != StatePublished || !n.revertPending() {
			return n, false, nil
		}
		n.resetRetry()
		n.AuditOpen, n.AuditSolo = false, false // the revert's audit attempt reported
		rv := n.Revert
		rv.PublishCommit, rv.Commit, rv.At = in.PublishCommit, in.CommitID, in.At
		rv.Audited = in.Audited
		if in.Reason != "" || in.By != "" {
			// Read back from the revert commit's metadata, which whoever
			// commits on the target can write: held to the request's bounds.
			rv.Reason, rv.By = schemas.Clip(in.Reason, schemas.MaxTextLen), schemas.Clip(in.By, schemas.MaxTextLen)
		}
		n.push(reverted(n))
	case Invalid:
		if !abortable(n.State) {
			return n, false, nil
		}
		n = abortEarly(n, in.BatchID, in.Dataset, schemas.ReasonInvalid, in.Detail, now)
	case Tick:
		n, changed := m.tick(n, in, now)
		return n, changed, nil
	case BranchSource:
		if n.State != StateLanded || n.BranchFrom != "" {
			return n, false, nil
		}
		n.resetRetry()
		n.BranchFrom = in.Commit
	case BranchCreated:
		if n.State != StateLanded {
			return n, false, nil
		}
		n.resetRetry()
		n.push(branchReady(n, now))
		n.setState(StateAwaitingWrites, now)
		if len(n.missingWrites()) == 0 {
			n.setState(StateAuditing, now)
		}
	case AuditBegun:
		auditing := n.State == StateAuditing && !n.RetryAt.After(now) && !in.Recheck && !in.Revert
		rechecking := n.State == StatePublishing && in.Recheck
		reverting := n.State == StatePublished && in.Revert && n.revertPending()
		if !auditing && !rechecking && !reverting || n.AuditOpen {
			return n, false, nil
		}
		n.AuditOpen, n.AuditSolo = true, in.Solo
	case Sealed:
		if n.State != StateAuditing || !n.AuditOpen || in.Commit == "" || len(in.Commit) > MaxCommitIDBytes || slices.Contains(n.Seals, in.Commit) {
			return n, false, nil
		}
		n.Seals = append(n.Seals, in.Commit)
		if len(n.Seals) > MaxSeals {
			n.Seals = slices.Delete(n.Seals, 0, len(n.Seals)-MaxSeals)
		}
	case AuditStopped, AuditEnded:
		if !n.AuditOpen {
			return n, false, nil
		}
		n.AuditOpen, n.AuditSolo = false, false
	case Restored:
		if n.State != StateAuditing && n.State != StatePublishing && n.State != StatePublished || !n.AuditOpen {
			return n, false, nil
		}
		n = m.auditLost(n, now)
	case Audited:
		if n.State != StateAuditing {
			return n, false, nil
		}
		n.resetRetry()
		n.AuditOpen, n.AuditSolo = false, false
		rep := in.Report
		n.Report = &rep
		n.SealedCommit = in.SealedCommit
		n.Suites = suitesDigest(in.Suites)
		n.AuditedOnto, n.OntoRecorded = "", true
		if len(in.Onto) <= MaxCommitIDBytes {
			n.AuditedOnto = in.Onto
		} else if rep.Passed {
			// Not recorded, the publish would take the report for the
			// seal's own: none is published on it.
			n = abort(n, schemas.ReasonAuditFailed, fmt.Sprintf("the head the batch was audited onto has an id over %d bytes", MaxCommitIDBytes), now)
			break
		}
		if rep.Passed {
			n.setState(StatePublishing, now)
			n.PublishSince = now
			break
		}
		n = abort(n, auditAbort(rep), auditDetail(rep), now)
	case Strayed:
		if n.State != StateAuditing && n.State != StatePublishing {
			return n, false, nil
		}
		n.SealedCommit = in.SealedCommit
		n.AuditOpen, n.AuditSolo = false, false
		detail := fmt.Sprintf("%d path(s) outside the dataset's tables: %s", in.Total, strings.Join(in.Paths, ", "))
		if in.Total > len(in.Paths) {
			detail += ", ..."
		}
		n = abort(n, schemas.ReasonOutsideTables, detail, now)
	case Merged:
		// A merge that lands after its step was given up on (a timeout whose
		// merge went through) still made the batch public: say so.
		if n.State != StatePublishing && (n.State != StateFailed || n.FailedStep != StepPublish) {
			return n, false, nil
		}
		n = rechecked(n, in.SealedCommit, in.Report)
		if in.Report != nil {
			n.Suites = suitesDigest(in.Suites)
		}
		n = published(n, in.CommitID, now)
		n = announced(n, in.Changes)
	case Collided:
		if n.State != StatePublishing {
			return n, false, nil
		}
		rep := in.Report
		n.Report = &rep
		n.SealedCommit = in.SealedCommit
		n.KeepBranch = true
		n = abort(n, schemas.ReasonAuditFailed, collidedDetail(n.Target, in), now)
	case Looked:
		if n.State != StatePublishing || n.Looking == nil {
			return n, false, nil
		}
		if in.OnTarget {
			n = rechecked(n, in.SealedCommit, nil)
			n = published(n, in.CommitID, now)
			n = announced(n, in.Changes)
			break
		}
		f := *n.Looking
		n.Looking = nil
		n = fail(n, StepPublish, f.Err, f.Attempts, now)
	case StepFailed:
		n, changed := m.stepFailed(n, in, now)
		return n, changed, nil
	case Sent:
		d, changed := n.delivery.sent(in, m.p, now)
		n.delivery = d
		return n, changed, nil
	case CleanedUp:
		if !n.CleanupPending {
			return n, false, nil
		}
		n.CleanupPending = false
	default:
		return n, false, nil
	}
	return n, true, nil
}

// auditAbort is the reason of an abort for the failing report rep:
// unaudited_objects when the batch changed objects the audit did not read
// (whatever else failed: the verdict did not cover what would be merged),
// audit_failed for checks failing on the data.
func auditAbort(rep schemas.AuditReport) string {
	if _, ok := unaudited(rep); ok {
		return schemas.ReasonUnauditedObjects
	}
	return schemas.ReasonAuditFailed
}

// unaudited is rep's first failed unaudited_objects result.
func unaudited(rep schemas.AuditReport) (schemas.CheckResult, bool) {
	for _, c := range rep.Checks {
		if c.Kind == schemas.KindUnauditedObjects && c.Status == schemas.StatusFail {
			return c, true
		}
	}
	return schemas.CheckResult{}, false
}

// auditDetail says what failed in rep: the objects not read, or the count
// and first name of the failed checks.
func auditDetail(rep schemas.AuditReport) string {
	failed := rep.Failed()
	if c, ok := unaudited(rep); ok {
		others := slices.DeleteFunc(failed, func(f schemas.CheckResult) bool { return f.Kind == schemas.KindUnauditedObjects })
		if len(others) == 0 {
			return c.Observed
		}
		return fmt.Sprintf("%s (and %d other check(s) failed: %s)", c.Observed, len(others), others[0].Name)
	}
	detail := fmt.Sprintf("%d check(s) failed", len(failed))
	if len(failed) > 0 {
		detail += ": " + failed[0].Name
	}
	return detail
}

// auditLost counts the begun attempt of n (its audit, or its publish's
// recheck), restored, that never reported: its process ended in it. An
// attempt that ran beside other audits cannot be told from them (any of
// those may have taken the process down): it makes the run suspect, audited
// alone from then on, and never ends the run. A lost attempt that ran alone
// was the process's end; one that brings the count to MaxAuditAttempts
// aborts the run (audit_crashed) with its branch kept for inspection, and
// its publish turn, if it had one, goes to the next batch. Otherwise the
// attempt is begun again.
func (m Machine) auditLost(n Run, now time.Time) Run {
	solo := n.AuditSolo
	n.AuditOpen, n.AuditSolo = false, false
	n.AuditLost++
	if !solo {
		n.AuditSuspect = true
		return n
	}
	if n.AuditLost < m.p.MaxAuditAttempts {
		return n
	}
	if n.State == StatePublished && n.revertPending() {
		// A revert's audit: the run stays published, the revert is given up.
		req := n.Revert
		n.Revert = nil
		n.resetRetry()
		n.push(*refused(n, req.RequestID, schemas.TypeRevertRequested, schemas.RefusedRevertFailed, fmt.Sprintf(
			"batch %s was not reverted: %d attempt(s) of the revert's audit never finished: the process ended during each (out of memory, a crash inside DuckDB, a kill), the last while it was the only audit in its process; the limit (audit.max_attempts) is %d",
			n.BatchID, n.AuditLost, m.p.MaxAuditAttempts), now))
		return n
	}
	n.KeepBranch = true
	return abort(n, schemas.ReasonAuditCrashed, fmt.Sprintf(
		"%d audit attempt(s) never finished: the process ended during each (out of memory, a crash inside DuckDB, a kill), the last while it was the only audit in its process; the limit (audit.max_attempts) is %d",
		n.AuditLost, m.p.MaxAuditAttempts), now)
}

// rechecked records the commit merged in place of the run's sealed one,
// and its audit, when there was one.
// MaxSeals bounds Run.Seals: the seals of a batch's audit attempts
// through which a seal may sit on its branch point (the lakeFS client
// walks at most as many).
const MaxSeals = 16

// MaxCommitIDBytes bounds a commit id recorded in Run.Seals (lakeFS's are
// 64 hex digits).
const MaxCommitIDBytes = 128

// MaxSuitesBytes bounds Run.Suites: a digest, not the suites. A longer
// one is not stored, and the run's publish rechecks the batch.
const MaxSuitesBytes = 64

func suitesDigest(s string) string {
	if len(s) > MaxSuitesBytes {
		return ""
	}
	return s
}

// collidedDetail is the abort detail of in, a recheck that failed onto
// target's head.
func collidedDetail(target string, in Collided) string {
	checks := strings.Join(in.Checks, ", ")
	switch {
	case in.SuitesChanged && in.Commit == "":
		return fmt.Sprintf("the batch applied to %s at %s fails %s under the checks in force now: the suites changed since its audit", target, in.Head, checks)
	case in.SuitesChanged:
		return fmt.Sprintf("the batch applied to %s at %s fails %s under the checks in force now (the suites changed since its audit): it collides with commit %s", target, in.Head, checks, in.Commit)
	case in.Commit == "":
		// Rechecked onto the seal's merge-base with the target: the
		// target was moved back (a hard reset) under the head the batch
		// was audited onto.
		return fmt.Sprintf("the batch applied to %s at %s fails %s: %s was moved back since the batch's audit onto a later head", target, in.Head, checks, target)
	}
	return fmt.Sprintf("the batch applied to %s at %s fails %s: it collides with commit %s", target, in.Head, checks, in.Commit)
}

func rechecked(n Run, sealed string, rep *schemas.AuditReport) Run {
	if sealed != "" {
		n.SealedCommit = sealed
	}
	if rep != nil {
		r := *rep
		n.Report = &r
	}
	return n
}

// Pending returns the work a run asks for at now. Apply returns it with
// every outcome, and the runner asks it for every run restored from the
// store, so a crash at any point resumes with the same work (which is why
// every step must be idempotent).
func (m Machine) Pending(r Run, now time.Time) []Effect {
	if r.State == "" {
		return []Effect{{Kind: DoForget}}
	}
	var out []Effect
	step := stateEffect[r.State]
	switch {
	case r.State == StatePending, r.State == StateAwaitingWrites && now.Before(r.Deadline):
		out = append(out, Effect{Kind: DoWake, At: r.Deadline})
	case r.State == StateAwaitingWrites: // past due and still waiting: the partition lags
		out = append(out, Effect{Kind: DoWake, At: now.Add(m.p.LagRecheck)})
	case r.State == StatePublishing && r.Looking != nil:
		step = DoLook
	case r.State == StatePublished && r.revertPending():
		step = DoRevert
	case r.State == StateAuditing && !r.AuditOpen:
		step = DoBeginAudit // recorded before the audit runs
	}
	if step == 0 && r.CleanupPending {
		step = DoCleanup
	}
	switch {
	case step != 0 && r.RetryAt.After(now):
		out = append(out, Effect{Kind: DoWake, At: r.RetryAt})
	case step != 0:
		out = append(out, Effect{Kind: step})
	}
	if e, ok := r.delivery.next(r.State, r.eventID("refresh"), now); ok {
		out = append(out, e)
	} else if r.State.Terminal() && step == 0 {
		out = append(out, Effect{Kind: DoWake, At: r.StateSince.Add(m.retention(r))})
	}
	return out
}

// retention is how long the finished run r is kept: RejectedRetention for
// a batch aborted before it began (a producer's junk or a flood over
// max_open_runs), TerminalRetention for the others.
func (m Machine) retention(r Run) time.Duration {
	if r.State == StateAborted && (r.Reason == schemas.ReasonInvalid || r.Reason == schemas.ReasonTooManyRuns) {
		return m.p.RejectedRetention
	}
	return m.p.TerminalRetention
}

// Evictable reports whether the finished run r may be forgotten before its
// retention is over (Policy.MaxFinishedRuns): everything it owes is done.
func Evictable(r Run) bool {
	return r.State.Terminal() && r.delivery.idle() && !r.CleanupPending && !r.revertPending()
}

func (m Machine) landed(n Run, in Landed, now time.Time) (Run, bool, *Outgoing) {
	if n.State != "" && n.State != StatePending {
		return n, false, nil // duplicate or late: the batch already has a run
	}
	ev := in.Event
	n.BatchID, n.Dataset = ev.BatchID, ev.Dataset
	n.LandedAt, n.BatchTime = now, ev.OccurredAt
	n.Trace = in.Trace
	if m.p.MaxOpenRuns > 0 && in.Open >= m.p.MaxOpenRuns {
		n.Writes = nil
		n.KeepBranch = true // there is no branch
		return abort(n, schemas.ReasonTooManyRuns,
			fmt.Sprintf("%d runs of dataset %s are in progress on this instance, the limit (runner.max_open_runs) is %d per dataset", in.Open, ev.Dataset, m.p.MaxOpenRuns), now), true, nil
	}
	if size := LandedBytes(ev); m.p.MaxOpenBytes > 0 && in.OpenBytes+size > m.p.MaxOpenBytes {
		n.Writes = nil
		n.KeepBranch = true // there is no branch
		return abort(n, schemas.ReasonTooManyRuns,
			fmt.Sprintf("the %d runs of dataset %s in progress on this instance hold %d bytes of their batches' attributes and expected writes, and this batch's %d would pass the limit of %d per dataset (runner.max_open_runs' bytes)",
				in.Open, ev.Dataset, in.OpenBytes, size, m.p.MaxOpenBytes), now), true, nil
	}
	spec := in.Spec
	n.Repository, n.Branch, n.Target = spec.Repository, in.Branch, cmp.Or(spec.Target, "main")
	n.Source = cmp.Or(ev.SourceRef, spec.Source, n.Target)
	n.ExpectedWrites = append([]string(nil), ev.ExpectedWrites...)
	n.Attributes = nil
	if len(ev.Attributes) > 0 {
		n.Attributes = maps.Clone(ev.Attributes)
	}
	// Writes that arrived before the batch, which does not expect them, go.
	maps.DeleteFunc(n.Writes, func(w string, _ time.Time) bool { return !slices.Contains(n.ExpectedWrites, w) })
	n.KeepBranch = spec.KeepBranch
	n.Deadline = now.Add(positiveOr(spec.WriteTimeout, time.Hour))
	if ev.WriteDeadline != nil {
		n.Deadline = *ev.WriteDeadline
	}
	if spec.MaxWriteTimeout > 0 && n.Deadline.After(now.Add(spec.MaxWriteTimeout)) {
		n.Deadline = now.Add(spec.MaxWriteTimeout) // the dataset's cap, whatever the producer asks
	}
	n.setState(StateLanded, now)
	return n, true, nil
}

func (m Machine) writeDone(n Run, ev schemas.WriteComplete, now time.Time) (Run, bool) {
	switch n.State {
	case "":
		n.BatchID, n.Dataset = ev.BatchID, ev.Dataset
		n.Deadline = now.Add(m.p.PendingTTL)
		n.setState(StatePending, now)
	case StatePending, StateLanded, StateAwaitingWrites:
		if _, dup := n.Writes[ev.Write]; dup {
			return n, false
		}
	default:
		return n, false // duplicate or late
	}
	if n.State != StatePending && !n.Deadline.IsZero() && ev.OccurredAt.After(n.Deadline) {
		// Judged on event time: this write happened after the deadline.
		return abort(n, schemas.ReasonWriteTimeout, fmt.Sprintf("write %q completed at %s, after the deadline %s; missing: %v",
			ev.Write, ev.OccurredAt.UTC().Format(time.RFC3339), n.Deadline.UTC().Format(time.RFC3339), n.missingWrites()), now), true
	}
	if n.Writes == nil {
		n.Writes = map[string]time.Time{}
	}
	n.Writes[ev.Write] = now
	if n.State == StateAwaitingWrites && len(n.missingWrites()) == 0 {
		n.setState(StateAuditing, now)
	}
	return n, true
}

func (m Machine) cancel(n Run, ev schemas.BatchCancelled, now time.Time) (Run, bool, *Outgoing) {
	if ev.RequestID != "" && !n.LandedAt.IsZero() && stale(ev.OccurredAt, n.LandedAt) {
		// Asked about an earlier run of the batch id: a signed cancel
		// copied back onto the requests topic would cancel every later run.
		return n, false, refused(n, ev.RequestID, schemas.TypeBatchCancelled, schemas.RefusedStale,
			fmt.Sprintf("cancel %s of batch %s, asked for at %s, is older than the run (landed %s, less %s for clock skew): it was asked about an earlier run of the batch id; ask again",
				ev.RequestID, n.BatchID, stamp(ev.OccurredAt), stamp(n.LandedAt), RequestSkew), now)
	}
	if ev.RequestID != "" && n.LandedAt.IsZero() && (n.State == "" || n.State == StatePending) && stale(ev.OccurredAt, now) {
		// Of a batch without a run, it would be remembered and abort the
		// batch when it lands, however long after: a copy of a cancel asked
		// about a run since forgotten, put back before the batch id's next
		// run lands (or while its writes wait for it), kept that run from
		// ever running. A cancel asked for a run to come is read at once.
		return n, false, refused(Run{BatchID: ev.BatchID, Dataset: ev.Dataset, State: n.State}, ev.RequestID, schemas.TypeBatchCancelled, schemas.RefusedStale,
			fmt.Sprintf("cancel %s of batch %s, asked for at %s, reached lakewap at %s, more than %s later, and the batch has no run: it was asked about an earlier run of the batch id, or waited too long to be read; ask again",
				ev.RequestID, ev.BatchID, stamp(ev.OccurredAt), stamp(now), RequestSkew), now)
	}
	if abortable(n.State) {
		// An operator's cancel is answered by the abort; a plain one (the
		// janitor's) answers whatever request the run was carrying out.
		n.Request = cmp.Or(ev.RequestID, n.Request)
		return abortEarly(n, ev.BatchID, ev.Dataset, schemas.ReasonCancelled, ev.Reason, now), true, nil
	}
	// Publishing cannot be stopped halfway; terminal runs stay. Only an
	// operator's request (with an id) is answered.
	if ev.RequestID == "" {
		return n, false, nil
	}
	return n, false, refused(n, ev.RequestID, schemas.TypeBatchCancelled, schemas.RefusedWrongState,
		fmt.Sprintf("batch %s of dataset %s is %s: only a batch that has not finished its audit can be cancelled (a merge cannot be stopped halfway)",
			n.BatchID, n.Dataset, n.State), now)
}

// retry runs a failed run, or one aborted by its audit or a merge
// conflict on a kept branch, again from the step that stopped it: its
// branch, its audit (a new seal of the branch, audited again), or the merge
// of the sealed commit that passed its audit (looking first whether it is
// already on the target).
func (m Machine) retry(n Run, ev schemas.RetryRequested, now time.Time) (Run, bool, *Outgoing) {
	refuse := func(reason, detail string) (Run, bool, *Outgoing) {
		return n, false, refused(n, ev.RequestID, schemas.TypeRetryRequested, reason, detail, now)
	}
	retryable := n.State == StateFailed || n.State == StateAborted && retryableAbort(n.Reason)
	switch {
	case n.State == "" || n.State == StatePending:
		return n, false, refused(Run{BatchID: ev.BatchID, Dataset: ev.Dataset}, ev.RequestID, schemas.TypeRetryRequested, schemas.RefusedUnknownBatch, fmt.Sprintf("batch %s of dataset %s has no run: it never landed, or it ended longer ago than runs are kept",
			ev.BatchID, ev.Dataset), now)
	case !retryable:
		return refuse(schemas.RefusedWrongState, fmt.Sprintf("batch %s is %s%s: only failed runs, and aborted runs whose audit failed, crashed or found objects it did not read, or whose merge conflicted, can be retried",
			n.BatchID, n.State, parens(n.Reason)))
	case n.State == StateAborted && !n.KeepBranch:
		return refuse(schemas.RefusedWrongState, fmt.Sprintf("batch %s is aborted (%s) and its branch %s was deleted (the dataset keeps no aborted branches): nothing to retry",
			n.BatchID, n.Reason, n.Branch))
	case n.Retries > 0 && !ev.OccurredAt.After(n.RetryAsked):
		return refuse(schemas.RefusedStale, fmt.Sprintf("retry %s of batch %s, asked for at %s, is not newer than retry %d, asked for at %s (older than the last retry carried out: a copy of an earlier request); ask again",
			ev.RequestID, n.BatchID, stamp(ev.OccurredAt), n.Retries, stamp(n.RetryAsked)))
	case stale(ev.OccurredAt, n.StateSince):
		return refuse(schemas.RefusedStale, staleDetail("retry", ev.RequestID, ev.OccurredAt, n))
	}
	step := n.FailedStep
	n.Retries++
	n.Request, n.RetriedBy, n.RetryAsked = ev.RequestID, ev.RequestedBy, ev.OccurredAt
	n.Reason, n.Detail, n.FailedStep = "", "", ""
	n.AuditLost = 0 // the operator gives the audit its attempts again
	n.resetRetry()
	switch {
	case n.State == StateFailed && step == StepBranch:
		n.setState(StateLanded, now)
	case n.State == StateFailed && step == StepPublish && n.SealedCommit != "" && n.Report != nil && n.Report.Passed:
		n.setState(StatePublishing, now) // not fresh: the runner looks for an earlier merge first
	default:
		n.setState(StateAuditing, now)
	}
	return n, true, nil
}

// revert asks for the revert of a published run's merge on its target.
// Asking again for a revert that is done answers with the same
// BatchReverted (same event id).
func (m Machine) revert(n Run, ev schemas.RevertRequested, now time.Time) (Run, bool, *Outgoing) {
	refuse := func(reason, detail string) (Run, bool, *Outgoing) {
		return n, false, refused(n, ev.RequestID, schemas.TypeRevertRequested, reason, detail, now)
	}
	switch {
	case n.State == "" || n.State == StatePending:
		return n, false, refused(Run{BatchID: ev.BatchID, Dataset: ev.Dataset}, ev.RequestID, schemas.TypeRevertRequested, schemas.RefusedUnknownBatch, fmt.Sprintf("batch %s of dataset %s is not published: it has no run (it never landed, or it ended longer ago than runs are kept)",
			ev.BatchID, ev.Dataset), now)
	case n.State != StatePublished:
		return refuse(schemas.RefusedWrongState, fmt.Sprintf("batch %s is %s%s, not published: only published batches can be reverted", n.BatchID, n.State, parens(n.Reason)))
	case n.revertPending():
		return refuse(schemas.RefusedInProgress, fmt.Sprintf("batch %s: a revert is in progress (request %s by %s)", n.BatchID, n.Revert.RequestID, n.Revert.By))
	case n.Revert != nil:
		o := reverted(n)
		o.RequestID = ev.RequestID
		return n, false, &o
	case stale(ev.OccurredAt, n.StateSince):
		return refuse(schemas.RefusedStale, staleDetail("revert", ev.RequestID, ev.OccurredAt, n))
	}
	n.Revert = &Revert{RequestID: ev.RequestID, By: ev.RequestedBy, Reason: ev.Reason, RequestedAt: now, Force: ev.Force}
	n.Request = ev.RequestID
	n.resetRetry()
	// The revert's audit attempts are counted afresh (auditLost).
	n.AuditLost, n.AuditSuspect = 0, false
	return n, true, nil
}

// RequestSkew is how much earlier than the outcome it acts on (the run's
// state since, on lakewap's clock; for a cancel, its landing, or, of a
// batch without a run, the cancel's reading) an
// operator's retry, revert or cancel may be stamped, for the operator's
// clock running behind. An older request was asked about something else
// (an earlier failure, or an earlier run of the batch id): a copy of it
// put back on the requests topic is refused. A request stamped more than
// RequestSkew ahead of lakewap's clock is refused too (ahead): otherwise it
// would stay fresh for as long as its clock runs ahead.
const RequestSkew = 5 * time.Minute

// stale reports whether a request asked for at asked predates, beyond
// RequestSkew, the state since which it applies.
func stale(asked, since time.Time) bool {
	return asked.Before(since.Add(-RequestSkew))
}

// ahead reports whether a request asked for at asked is stamped more than
// RequestSkew ahead of lakewap's clock. The schemas let a producer's clock
// run up to a day ahead (for BatchLanded), but a request stamped that far
// ahead would stay fresh, by stale, for as long: a copy of it put back on
// the requests topic hours later would act on a later run of the batch id.
func ahead(asked, now time.Time) bool {
	return asked.After(now.Add(RequestSkew))
}

// refusedAhead refuses, stale, a request stamped more than RequestSkew
// ahead of lakewap's clock; of a batch without a run, the refusal names the
// request's batch.
func refusedAhead(n Run, kind, id, requestType, batch, dataset string, asked, now time.Time) *Outgoing {
	if n.State == "" || n.State == StatePending {
		n = Run{BatchID: batch, Dataset: dataset, State: n.State}
	}
	return refused(n, id, requestType, schemas.RefusedStale,
		fmt.Sprintf("%s %s of batch %s is stamped %s, more than %s ahead of lakewap's clock (%s): the clock that stamped it runs ahead, and a copy of it would stay fresh that much longer; set that clock right and ask again",
			kind, id, batch, stamp(asked), RequestSkew, stamp(now)), now)
}

func staleDetail(kind, id string, asked time.Time, n Run) string {
	return fmt.Sprintf("%s %s of batch %s, asked for at %s, is older than the run's state %s (since %s, less %s for clock skew): it was asked about an earlier outcome or run of the batch id; ask again",
		kind, id, n.BatchID, stamp(asked), n.State, stamp(n.StateSince), RequestSkew)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// positiveOr is v, or d when v is not positive.
func positiveOr(v, d time.Duration) time.Duration {
	if v <= 0 {
		return d
	}
	return v
}

func parens(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// abortable reports whether a run in state s can still be aborted: it has
// not started publishing (or has no run yet).
func abortable(s State) bool {
	return s == "" || s == StatePending || s == StateLanded || s == StateAwaitingWrites || s == StateAuditing
}

// abortEarly aborts a run that is abortable. One that has not landed is
// remembered as aborted, so a late BatchLanded is a no-op; it has no branch.
func abortEarly(n Run, batchID, dataset, reason, detail string, now time.Time) Run {
	if n.State == "" || n.State == StatePending {
		n.BatchID, n.Dataset = batchID, dataset
		n.KeepBranch = true
	}
	return abort(n, reason, detail, now)
}

func (m Machine) tick(n Run, in Tick, now time.Time) (Run, bool) {
	waiting := n.State == StateAwaitingWrites
	switch {
	case Evictable(n) && (in.Evict || !now.Before(n.StateSince.Add(m.retention(n)))):
		return Run{}, true // retention over, or evicted (MaxFinishedRuns): forget the finished run
	case n.State == StatePending && !now.Before(n.Deadline):
		return Run{}, true // expired: its batch never landed
	case waiting && in.Lagging && now.Before(n.Deadline.Add(m.p.MaxLagWait)):
		return n, false // a write before the deadline may still be in the backlog
	case waiting && !now.Before(n.Deadline):
		return abort(n, schemas.ReasonWriteTimeout,
			fmt.Sprintf("writes missing at deadline %s: %v", n.Deadline.UTC().Format(time.RFC3339), n.missingWrites()), now), true
	}
	return n, false
}

func (m Machine) stepFailed(n Run, in StepFailed, now time.Time) (Run, bool) {
	in.Err = schemas.Clip(in.Err, maxErrorBytes)
	switch {
	case in.Step == StepRevert:
		return m.revertFailed(n, in, now)
	case in.Step == StepCleanup && !n.CleanupPending, in.Step != StepCleanup && stateStep(n.State) != in.Step:
		return n, false // stale outcome of a step the run has moved past
	case n.Looking != nil:
		return n, false // the last look decides
	}
	if in.Step == StepAudit || in.Step == StepPublish {
		// The attempt (an audit, a publish's recheck) reported: it did not
		// take the process down.
		n.AuditOpen, n.AuditSolo = false, false
	}
	n.LastError = in.Err
	switch {
	case in.Class == Conflict && in.Step == StepPublish:
		n.KeepBranch = true
		return abort(n, schemas.ReasonMergeConflict, in.Err, now), true
	case in.Class == Rejected && in.Step == StepBranch:
		n.KeepBranch = true // nothing was created
		return abort(n, schemas.ReasonInvalid, in.Err, now), true
	case in.Class == Permanent && in.Step == StepCleanup:
		n.CleanupPending = false
		return n, true
	case in.Class == Permanent:
		return m.failStep(n, in, n.Attempts+1, now), true
	}
	if m.retryLater(&n, now) {
		return n, true
	}
	if in.Step == StepCleanup {
		n.CleanupPending = false
		n.resetRetry()
		return n, true
	}
	return m.failStep(n, in, n.Attempts, now), true
}

// failStep fails the run for the failure of its step. A publish that
// fails is not failed yet: a merge whose answer was lost or late (the
// step's deadline ran out while lakeFS carried it out) may have made the
// batch public, so the run first asks for one more look (DoLook) and the
// failure waits for its answer (Looked).
func (m Machine) failStep(n Run, in StepFailed, attempts int, now time.Time) Run {
	if in.Step == StepPublish && n.SealedCommit != "" && n.Report != nil && n.Report.Passed {
		n.Looking = &Failure{Err: in.Err, Attempts: attempts}
		n.RetryAt = time.Time{}
		return n
	}
	return fail(n, in.Step, in.Err, attempts, now)
}

// retryLater counts a transient failure and, within the retry budget,
// sets when the step runs again; false when the budget is spent.
func (m Machine) retryLater(n *Run, now time.Time) bool {
	n.Attempts++
	if n.FirstFailure.IsZero() {
		n.FirstFailure = now
	}
	if now.Sub(n.FirstFailure) >= m.p.RetryBudget {
		return false
	}
	n.RetryAt = now.Add(backoff.Policy{Min: m.p.MinBackoff, Max: m.p.MaxBackoff}.Delay(n.Attempts))
	return true
}

// revertFailed retries a revert that failed transiently within the retry
// budget; otherwise the revert is given up and its request answered with
// RequestRefused (revert_failed). The run stays published.
func (m Machine) revertFailed(n Run, in StepFailed, now time.Time) (Run, bool) {
	if n.State != StatePublished || !n.revertPending() {
		return n, false
	}
	n.LastError = in.Err
	n.AuditOpen, n.AuditSolo = false, false // the revert's audit attempt reported
	if in.Class == Transient && m.retryLater(&n, now) {
		return n, true
	}
	req := n.Revert
	n.Revert = nil
	n.resetRetry()
	n.push(*refused(n, req.RequestID, schemas.TypeRevertRequested, schemas.RefusedRevertFailed,
		fmt.Sprintf("batch %s was not reverted: %s", n.BatchID, in.Err), now))
	return n, true
}

func (r *Run) setState(s State, now time.Time) {
	if r.State != s {
		r.State = s
		r.StateSince = now
		r.AuditOpen, r.AuditSolo = false, false // an attempt belongs to its stay in its state
		if s == StateAuditing || s == StatePublishing {
			// No result event for these; sinks that show progress (the
			// Slack message updated in place) still hear of them.
			r.push(Outgoing{EventID: r.eventID("state:" + string(s)), State: s})
		}
	}
	r.UpdatedAt = now
}

// push queues o as an answer to the run's current request.
func (r *Run) push(o Outgoing) {
	o.RequestID = r.Request
	r.add(o)
}

func (r *Run) resetRetry() {
	r.Attempts, r.FirstFailure, r.RetryAt, r.LastError = 0, time.Time{}, time.Time{}, ""
}

func abort(n Run, reason, detail string, now time.Time) Run {
	detail = schemas.Clip(detail, maxDetailBytes)
	n.resetRetry()
	n.Reason, n.Detail = reason, detail
	n.setState(StateAborted, now)
	kept := n.KeepBranch || n.Branch == ""
	n.CleanupPending = !kept
	ev := schemas.BatchAborted{
		EventID: n.eventID("aborted"), BatchID: n.BatchID, Dataset: n.Dataset,
		Repository: n.Repository, Branch: n.Branch, Reason: reason, Detail: detail,
		Report: n.Report, BranchKept: kept && n.Branch != "", OccurredAt: now, DurationMs: durMs(n, now),
		TargetRef: n.Target,
	}
	n.push(Outgoing{EventID: ev.EventID, State: StateAborted, Aborted: &ev})
	if !retryableAbort(reason) {
		n.shed()
	}
	return n
}

// LandedBytes is what a run of ev holds of its producer's bytes while it
// is in progress: its attributes (keys and values) and expected writes
// (Policy.MaxOpenBytes).
func LandedBytes(ev schemas.BatchLanded) int {
	return payloadBytes(ev.Attributes, ev.ExpectedWrites)
}

// OpenBytes is LandedBytes of the BatchLanded r was made of, while r is in
// progress (its attributes and expected writes do not change then).
func OpenBytes(r Run) int {
	if !r.State.Open() {
		return 0
	}
	return payloadBytes(r.Attributes, r.ExpectedWrites)
}

// HeldBytes is what r holds of its producer's bytes: its attributes,
// expected writes and completed writes (Policy.MaxFinishedBytes).
func HeldBytes(r Run) int {
	n := payloadBytes(r.Attributes, r.ExpectedWrites) + 4*len(r.ExpectedSums)
	for w := range r.Writes {
		n += len(w)
	}
	return n
}

func payloadBytes(attributes map[string]string, writes []string) int {
	n := 0
	for k, v := range attributes {
		n += len(k) + len(v)
	}
	for _, w := range writes {
		n += len(w)
	}
	return n
}

// retryableAbort says whether a run aborted for reason may be retried
// (Machine.retry): its audit failed, crashed or found objects it did not
// read, or its merge conflicted.
func retryableAbort(reason string) bool {
	return reason == schemas.ReasonAuditFailed || reason == schemas.ReasonMergeConflict ||
		reason == schemas.ReasonAuditCrashed || reason == schemas.ReasonUnauditedObjects
}

// shed drops from a run that can take no further step (published, or
// aborted for good) what only a later step reads and its producer chose:
// the attributes (its publish's metadata), the expected writes and the
// completed writes (its wait). A producer's largest BatchLanded and writes
// made a finished run of 148 KB, kept with runner.max_finished_runs others
// per dataset and partition (TestFinishedRunKeepsNoProducersPayload). The
// expected writes' sums stay (4 bytes a name): a late write of another
// name is still refused, one of theirs is a no-op, as a duplicate is.
func (r *Run) shed() {
	if len(r.ExpectedWrites) > 0 {
		r.ExpectedSums = make([]uint32, 0, len(r.ExpectedWrites))
		for _, w := range r.ExpectedWrites {
			r.ExpectedSums = append(r.ExpectedSums, writeSum(w))
		}
		slices.Sort(r.ExpectedSums)
		r.ExpectedSums = slices.Compact(r.ExpectedSums)
	}
	r.Attributes, r.ExpectedWrites, r.Writes = nil, nil, nil
}

// writeSum is the first 4 bytes of the SHA-256 of a write's name
// (Run.ExpectedSums).
func writeSum(w string) uint32 {
	h := sha256.Sum256([]byte(w))
	return uint32(h[0])<<24 | uint32(h[1])<<16 | uint32(h[2])<<8 | uint32(h[3])
}

// expects says whether r expects write w: one of its expected writes, or
// of their sums once it is shed. ok is false when it names none (a batch
// that has not landed, or expects none).
func (r Run) expects(w string) (expected, ok bool) {
	switch {
	case len(r.ExpectedWrites) > 0:
		return slices.Contains(r.ExpectedWrites, w), true
	case len(r.ExpectedSums) > 0:
		_, found := slices.BinarySearch(r.ExpectedSums, writeSum(w))
		return found, true
	}
	return false, false
}

func fail(n Run, step Step, err string, attempts int, now time.Time) Run {
	err = schemas.Clip(err, maxErrorBytes)
	prev := n.State
	n.Reason, n.Detail, n.FailedStep = "failed", fmt.Sprintf("%s: %s", step, err), step
	n.setState(StateFailed, now)
	n.RetryAt = time.Time{}
	ev := schemas.BatchFailed{
		EventID: n.eventID("failed"), BatchID: n.BatchID, Dataset: n.Dataset,
		Repository: n.Repository, Branch: n.Branch, State: string(prev), Error: err,
		Attempts: attempts, BranchKept: n.Branch != "", OccurredAt: now, TargetRef: n.Target,
	}
	n.push(Outgoing{EventID: ev.EventID, State: StateFailed, Failed: &ev})
	return n
}

func branchReady(n Run, now time.Time) Outgoing {
	ev := schemas.BranchReady{
		EventID: n.eventID("branch_ready"), BatchID: n.BatchID, Dataset: n.Dataset,
		Repository: n.Repository, Branch: n.Branch,
		LakeFSURI:      fmt.Sprintf("lakefs://%s/%s/", n.Repository, n.Branch),
		S3URI:          fmt.Sprintf("s3://%s/%s/", n.Repository, n.Branch),
		ExpectedWrites: append([]string(nil), n.ExpectedWrites...),
		OccurredAt:     now,
	}
	if !n.Deadline.IsZero() {
		d := n.Deadline
		ev.WriteDeadline = &d
	}
	return Outgoing{EventID: ev.EventID, State: StateAwaitingWrites, BranchReady: &ev}
}

// published moves n to published as commitID and queues BatchPublished.
func published(n Run, commitID string, now time.Time) Run {
	n.resetRetry()
	n.Looking = nil
	n.CommitID = commitID
	n.setState(StatePublished, now)
	n.shed() // a revert reads none of it
	ev := schemas.BatchPublished{
		EventID: n.eventID("published"), BatchID: n.BatchID, Dataset: n.Dataset,
		Repository: n.Repository, Branch: n.Branch, TargetRef: n.Target, CommitID: n.CommitID,
		LandedAt: n.LandedAt, PublishedAt: now, DurationMs: durMs(n, now),
	}
	if n.Report != nil {
		ev.Report = *n.Report
	}
	n.push(Outgoing{EventID: ev.EventID, State: StatePublished, Published: &ev})
	return n
}

// MaxChanges bounds the announcements one publish queues (each at most
// schemas.MaxUnattestedChangeBytes); the finder names the newest commits.
const MaxChanges = 8

// announced queues the announcements of what n's publish landed on, each
// once: an id already queued is not queued again.
func announced(n Run, changes []schemas.UnattestedChange) Run {
	for _, c := range changes[:min(len(changes), MaxChanges)] {
		if slices.ContainsFunc(n.Outbox, func(o Outgoing) bool { return o.EventID == c.EventID }) {
			continue
		}
		c = c.Clip()
		n.push(Outgoing{EventID: c.EventID, State: n.State, Change: &c})
	}
	return n
}

// reverted is the BatchReverted of a run whose revert is done. Its id
// names the publish commit undone, so asking again sends the same event.
func reverted(n Run) Outgoing {
	rv := n.Revert
	ev := schemas.BatchReverted{
		EventID: EventID(n.Dataset, n.BatchID, "reverted "+rv.PublishCommit), BatchID: n.BatchID, Dataset: n.Dataset,
		Repository: n.Repository, TargetRef: n.Target, PublishedCommitID: rv.PublishCommit, CommitID: rv.Commit,
		Reason: rv.Reason, RevertedBy: rv.By, OccurredAt: rv.At, Audited: rv.Audited,
	}
	return Outgoing{EventID: ev.EventID, State: n.State, Reverted: &ev, RequestID: rv.RequestID}
}

// refused answers an operator request that is not carried out.
func refused(n Run, requestID, requestType, reason, detail string, now time.Time) *Outgoing {
	ev := schemas.RequestRefused{
		EventID: EventID(n.Dataset, n.BatchID, "refused "+requestID), RequestID: requestID, RequestType: requestType,
		BatchID: n.BatchID, Dataset: n.Dataset, State: string(n.State), Reason: reason, Detail: schemas.Clip(detail, maxDetailBytes), OccurredAt: now,
	}
	return &Outgoing{EventID: ev.EventID, State: n.State, Refused: &ev, RequestID: requestID}
}

func durMs(n Run, now time.Time) int64 {
	if n.LandedAt.IsZero() {
		return 0
	}
	return now.Sub(n.LandedAt).Milliseconds()
}
