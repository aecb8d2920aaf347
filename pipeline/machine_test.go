package pipeline

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

var t0 = time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)

func landed(batch string, writes ...string) Landed {
	return Landed{
		Event:  schemas.BatchLanded{BatchID: batch, Dataset: "billing", ExpectedWrites: writes, OccurredAt: t0},
		Spec:   DatasetSpec{Repository: "lake", Target: "main", WriteTimeout: 10 * time.Minute},
		Branch: "wap-billing-" + batch,
	}
}

func write(batch, w string) WriteDone {
	return WriteDone{Event: schemas.WriteComplete{BatchID: batch, Dataset: "billing", Write: w, OccurredAt: t0}}
}

func report(passed bool) schemas.AuditReport {
	st := schemas.StatusPass
	if !passed {
		st = schemas.StatusFail
	}
	return schemas.AuditReport{Dataset: "billing", Passed: passed, Checks: []schemas.CheckResult{{Name: "billing_id_not_null", Kind: "not_null", Severity: "error", Status: st}}}
}

func kinds(effects []Effect) []EffectKind {
	var out []EffectKind
	for _, e := range effects {
		out = append(out, e.Kind)
	}
	return out
}

// step is one row of a scenario: an input at an offset from t0 and what the
// run must look like afterwards.
type step struct {
	in      Input
	at      time.Duration
	state   State
	effects []EffectKind
	check   func(t *testing.T, r Run)
}

// policy is DefaultPolicy with change applied.
func policy(change func(*Policy)) Policy {
	p := DefaultPolicy
	change(&p)
	return p
}

func TestTransitionScenarios(t *testing.T) {
	m := NewMachine(policy(func(p *Policy) { p.RetryBudget, p.MinBackoff, p.MaxBackoff = time.Minute, time.Second, 8*time.Second }))
	tests := []struct {
		name  string
		steps []step
	}{
		{"the branch's source commit is recorded before the branch is made", []step{
			{in: landed("b21", "fact"), state: StateLanded, effects: []EffectKind{DoCreateBranch}},
			{in: BranchSource{Commit: "c0"}, state: StateLanded, effects: []EffectKind{DoCreateBranch}, check: func(t *testing.T, r Run) {
				if r.BranchFrom != "c0" {
					t.Errorf("BranchFrom = %q, want c0", r.BranchFrom)
				}
			}},
			{in: BranchSource{Commit: "c1"}, state: StateLanded, check: func(t *testing.T, r Run) {
				if r.BranchFrom != "c0" {
					t.Errorf("a second answer moved BranchFrom to %q; the first stays", r.BranchFrom)
				}
			}},
			{in: BranchCreated{}, state: StateAwaitingWrites},
		}},
		{"a merge of an older version's recheck (a descendant of the seal) is recorded as the sealed commit", []step{
			{in: landed("b22", "fact"), state: StateLanded},
			{in: BranchCreated{}, state: StateAwaitingWrites},
			{in: write("b22", "fact"), state: StateAuditing},
			{in: Audited{SealedCommit: "s1", Report: report(true)}, state: StatePublishing},
			{in: Merged{CommitID: "m1", SealedCommit: "r1", Report: &schemas.AuditReport{Dataset: "billing", Ref: "r1", Passed: true}}, state: StatePublished, check: func(t *testing.T, r Run) {
				if r.SealedCommit != "r1" || r.Report.Ref != "r1" || r.CommitID != "m1" {
					t.Errorf("run = sealed %s, report of %s, commit %s; want r1, r1, m1", r.SealedCommit, r.Report.Ref, r.CommitID)
				}
			}},
		}},
		{"a batch that collides with the target's newer head aborts, branch kept", []step{
			{in: landed("b23", "fact"), state: StateLanded},
			{in: BranchCreated{}, state: StateAwaitingWrites},
			{in: write("b23", "fact"), state: StateAuditing},
			{in: Audited{SealedCommit: "s1", Report: report(true)}, state: StatePublishing},
			{in: Collided{SealedCommit: "r1", Commit: "m0", Head: "h9", Checks: []string{"billing_id_unique"}, Report: report(false)}, state: StateAborted, check: func(t *testing.T, r Run) {
				ab := r.Outbox[len(r.Outbox)-1].Aborted
				if ab == nil || ab.Reason != schemas.ReasonAuditFailed || !ab.BranchKept || ab.Detail != "the batch applied to main at h9 fails billing_id_unique: it collides with commit m0" {
					t.Errorf("abort = %+v", ab)
				}
				if r.SealedCommit != "r1" || r.CleanupPending {
					t.Errorf("sealed %s, cleanup %v; want r1 and the branch kept", r.SealedCommit, r.CleanupPending)
				}
			}},
		}},
		{"a publish announces what it landed on, each once, after BatchPublished, never sent again as the run's last event", []step{
			{in: landed("b24", "fact"), state: StateLanded},
			{in: BranchCreated{}, state: StateAwaitingWrites},
			{in: write("b24", "fact"), state: StateAuditing},
			{in: Audited{SealedCommit: "s1", Report: report(true)}, state: StatePublishing},
			{in: Merged{CommitID: "m1", Changes: []schemas.UnattestedChange{{EventID: "a1", Kind: schemas.ChangeUnattestedCommit, CommitID: "d1"},
				{EventID: "a1", Kind: schemas.ChangeUnattestedCommit, CommitID: "d1"}, {EventID: "a2", Kind: schemas.ChangeSuiteChanged, CommitID: "p0"}}},
				state: StatePublished, check: func(t *testing.T, r Run) {
					var ids []string
					for _, o := range r.Outbox[len(r.Outbox)-3:] {
						ids = append(ids, o.EventID)
					}
					if ids[0] != EventID("billing", "b24", "published") || ids[1] != "a1" || ids[2] != "a2" || r.Outbox[len(r.Outbox)-1].Change == nil {
						t.Errorf("outbox ends %v; want BatchPublished, then a1 and a2 once each", ids)
					}
					d, _ := r.delivery.sent(Sent{EventID: "a2"}, DefaultPolicy, time.Now())
					if d.LastSent != nil && d.LastSent.Change != nil {
						t.Errorf("an announcement became the run's last event, which a re-notification sends again")
					}
				}},
		}},
		{"happy path publishes", []step{
			{in: landed("b1", "fact", "dim"), state: StateLanded, effects: []EffectKind{DoCreateBranch}},
			{in: BranchCreated{}, state: StateAwaitingWrites, effects: []EffectKind{DoWake, DoSend}, check: func(t *testing.T, r Run) {
				if r.Outbox[0].BranchReady == nil || r.Outbox[0].BranchReady.Branch != "wap-billing-b1" {
					t.Errorf("outbox = %+v, want BranchReady for wap-billing-b1", r.Outbox)
				}
			}},
			{in: write("b1", "fact"), state: StateAwaitingWrites},
			{in: write("b1", "fact"), state: StateAwaitingWrites}, // duplicate
			{in: write("b1", "dim"), state: StateAuditing, effects: []EffectKind{DoBeginAudit, DoSend}},
			{in: AuditBegun{}, state: StateAuditing, effects: []EffectKind{DoAudit, DoSend}},
			{in: Audited{SealedCommit: "c1", Report: report(true)}, state: StatePublishing, effects: []EffectKind{DoPublish, DoSend}},
			{in: Merged{CommitID: "m1"}, state: StatePublished, check: func(t *testing.T, r Run) {
				last := r.Outbox[len(r.Outbox)-1]
				if last.Published == nil || last.Published.CommitID != "m1" || last.EventID != EventID("billing", "b1", "published") {
					t.Errorf("last outbox = %+v, want BatchPublished m1 with stable id", last)
				}
			}},
			{in: landed("b1", "fact", "dim"), state: StatePublished}, // duplicate landing after publish
		}},
		{"failed audit aborts and keeps main", []step{
			{in: landed("b2", "fact"), state: StateLanded},
			{in: BranchCreated{}, state: StateAwaitingWrites},
			{in: write("b2", "fact"), state: StateAuditing},
			{in: Audited{SealedCommit: "c2", Report: report(false)}, state: StateAborted, effects: []EffectKind{DoCleanup, DoSend}, check: func(t *testing.T, r Run) {
				a := r.Outbox[len(r.Outbox)-1].Aborted
				if a == nil || a.Reason != schemas.ReasonAuditFailed || a.Report == nil || len(a.Report.Failed()) != 1 || a.BranchKept || a.TargetRef != "main" {
					t.Errorf("aborted = %+v", a)
				}
			}},
			{in: CleanedUp{}, state: StateAborted, effects: []EffectKind{DoSend}},
			{in: Sent{EventID: EventID("billing", "b2", "state:auditing")}, state: StateAborted},
			{in: Sent{EventID: EventID("billing", "b2", "branch_ready")}, state: StateAborted},
			{in: Sent{EventID: EventID("billing", "b2", "aborted")}, state: StateAborted, effects: []EffectKind{DoWake}},
			{in: Tick{}, at: 6 * 24 * time.Hour, state: StateAborted},
			{in: Tick{}, at: 7 * 24 * time.Hour, state: "", effects: []EffectKind{DoForget}},
		}},
		{"writes before landing are kept", []step{
			{in: write("b3", "fact"), state: StatePending, effects: []EffectKind{DoWake}},
			{in: landed("b3", "fact"), state: StateLanded},
			{in: BranchCreated{}, state: StateAuditing, effects: []EffectKind{DoBeginAudit, DoSend}},
		}},
		{"an audit that takes its process down max_attempts times aborts audit_crashed, the branch kept", []step{
			{in: landed("b30", "fact"), state: StateLanded},
			{in: BranchCreated{}, state: StateAwaitingWrites},
			{in: write("b30", "fact"), state: StateAuditing, effects: []EffectKind{DoBeginAudit, DoSend}},
			{in: Restored{}, state: StateAuditing, effects: []EffectKind{DoBeginAudit, DoSend}, check: lost(0)}, // nothing begun
			{in: AuditBegun{}, state: StateAuditing, effects: []EffectKind{DoAudit, DoSend}},
			{in: AuditBegun{}, state: StateAuditing, check: lost(0)},                                                     // a duplicate begins nothing more
			{in: Restored{}, state: StateAuditing, effects: []EffectKind{DoBeginAudit, DoSend}, check: suspect(1, true)}, // lost beside others: nobody's yet
			{in: AuditBegun{Solo: true}, state: StateAuditing},
			{in: Restored{}, state: StateAuditing, check: suspect(2, true)},
			{in: AuditBegun{Solo: true}, state: StateAuditing, effects: []EffectKind{DoAudit, DoSend}},
			{in: Restored{}, state: StateAborted, effects: []EffectKind{DoSend}, check: func(t *testing.T, r Run) {
				ab := r.Outbox[len(r.Outbox)-1].Aborted
				want := "3 audit attempt(s) never finished: the process ended during each (out of memory, a crash inside DuckDB, a kill), the last while it was the only audit in its process; the limit (audit.max_attempts) is 3"
				if ab == nil || ab.Reason != schemas.ReasonAuditCrashed || !ab.BranchKept || ab.Detail != want || r.CleanupPending {
					t.Errorf("abort = %+v, cleanup %v; want audit_crashed, %q, the branch kept", ab, r.CleanupPending, want)
				}
			}},
			{in: retryReq("b30", "q1"), state: StateAuditing, effects: []EffectKind{DoBeginAudit, DoSend}, check: lost(0)},
		}},
		{"the audit step's seals are recorded while its attempt is open, at most MaxSeals", []step{
			{in: landed("b34", "fact"), state: StateLanded},
			{in: BranchCreated{}, state: StateAwaitingWrites},
			{in: write("b34", "fact"), state: StateAuditing},
			{in: Sealed{Commit: "s0"}, state: StateAuditing, check: seals()}, // no attempt open
			{in: AuditBegun{}, state: StateAuditing},
			{in: Sealed{Commit: "s1"}, state: StateAuditing, check: seals("s1")},
			{in: Sealed{Commit: "s1"}, state: StateAuditing, check: seals("s1")},
			{in: Sealed{Commit: strings.Repeat("x", MaxCommitIDBytes+1)}, state: StateAuditing, check: seals("s1")},
			{in: Restored{}, state: StateAuditing, check: seals("s1")},
			{in: AuditBegun{}, state: StateAuditing},
			{in: Sealed{Commit: "s2"}, state: StateAuditing, check: func(t *testing.T, r Run) {
				seals("s1", "s2")(t, r)
				for i := 3; i <= MaxSeals+2; i++ {
					r = NewMachine(DefaultPolicy).Apply(r, Sealed{Commit: fmt.Sprintf("s%d", i)}, time.Now()).Run
				}
				if len(r.Seals) != MaxSeals || r.Seals[0] != "s3" || r.Seals[MaxSeals-1] != fmt.Sprintf("s%d", MaxSeals+2) {
					t.Errorf("seals %v; want the newest %d", r.Seals, MaxSeals)
				}
			}},
			{in: Audited{SealedCommit: "s2", Report: report(true)}, state: StatePublishing},
			{in: Sealed{Commit: "s9"}, state: StatePublishing, check: seals("s1", "s2")},
		}},
		{"attempts lost beside other audits never end the run; only one lost alone does", []step{
			{in: landed("b33", "fact"), state: StateLanded},
			{in: BranchCreated{}, state: StateAwaitingWrites},
			{in: write("b33", "fact"), state: StateAuditing},
			{in: AuditBegun{}, state: StateAuditing},
			{in: Restored{}, state: StateAuditing, check: suspect(1, true)},
			{in: AuditBegun{}, state: StateAuditing},
			{in: Restored{}, state: StateAuditing, check: suspect(2, true)},
			{in: AuditBegun{}, state: StateAuditing},
			{in: Restored{}, state: StateAuditing, effects: []EffectKind{DoBeginAudit, DoSend}, check: suspect(3, true)},
			{in: AuditBegun{Solo: true}, state: StateAuditing},
			{in: Restored{}, state: StateAborted, effects: []EffectKind{DoSend}},
		}},
		{"a recheck is an attempt: begun and ended around it, lost with its process, and the limit ends the run in publishing", []step{
			{in: landed("b34", "fact"), state: StateLanded},
			{in: BranchCreated{}, state: StateAwaitingWrites},
			{in: write("b34", "fact"), state: StateAuditing},
			{in: AuditBegun{}, state: StateAuditing},
			{in: Audited{SealedCommit: "c34", Report: report(true)}, state: StatePublishing, effects: []EffectKind{DoPublish, DoSend}},
			{in: AuditBegun{}, state: StatePublishing, check: suspect(0, false)}, // an audit step's begin, late: not a recheck
			{in: AuditBegun{Recheck: true}, state: StatePublishing, effects: []EffectKind{DoPublish, DoSend}},
			{in: AuditEnded{}, state: StatePublishing, check: suspect(0, false)},
			{in: Restored{}, state: StatePublishing, check: suspect(0, false)}, // ended before the merge: not lost
			{in: AuditBegun{Recheck: true}, state: StatePublishing},
			{in: Restored{}, state: StatePublishing, effects: []EffectKind{DoPublish, DoSend}, check: suspect(1, true)},
			{in: AuditBegun{Solo: true, Recheck: true}, state: StatePublishing},
			{in: StepFailed{Step: StepPublish, Err: "503", Class: Transient}, state: StatePublishing, check: suspect(1, true)}, // reported
			{in: Restored{}, state: StatePublishing, check: suspect(1, true)},
			{in: AuditBegun{Solo: true, Recheck: true}, at: time.Minute, state: StatePublishing},
			{in: Restored{}, at: time.Minute, state: StatePublishing, check: suspect(2, true)},
			{in: AuditBegun{Solo: true, Recheck: true}, at: time.Minute, state: StatePublishing},
			{in: Restored{}, at: time.Minute, state: StateAborted, effects: []EffectKind{DoSend}, check: func(t *testing.T, r Run) {
				if r.Reason != schemas.ReasonAuditCrashed || !r.KeepBranch || r.CleanupPending {
					t.Errorf("run %s (%s), keep %v, cleanup %v; want aborted audit_crashed, the branch kept", r.State, r.Reason, r.KeepBranch, r.CleanupPending)
				}
			}},
		}},
		{"objects the audit did not read abort unaudited_objects, not audit_failed", []step{
			{in: landed("b32", "fact"), state: StateLanded},
			{in: BranchCreated{}, state: StateAwaitingWrites},
			{in: write("b32", "fact"), state: StateAuditing},
			{in: Audited{SealedCommit: "c32", Report: schemas.AuditReport{Dataset: "billing", Checks: []schemas.CheckResult{
				{Name: "billing_id_not_null", Kind: "not_null", Severity: "error", Status: schemas.StatusFail},
				{Name: "unaudited_objects(fact)", Kind: schemas.KindUnauditedObjects, Severity: "error", Status: schemas.StatusFail,
					Observed: "1 changed objects not read by the audit: gold/fact/_hidden.parquet"}}}},
				state: StateAborted, check: func(t *testing.T, r Run) {
					ab := r.Outbox[len(r.Outbox)-1].Aborted
					want := "1 changed objects not read by the audit: gold/fact/_hidden.parquet (and 1 other check(s) failed: billing_id_not_null)"
					if ab == nil || ab.Reason != schemas.ReasonUnauditedObjects || ab.Detail != want || ab.Report == nil {
						t.Errorf("abort = %+v; want unaudited_objects, %q, with the report", ab, want)
					}
				}},
		}},
		{"an audit attempt that reports, or that a revocation stopped, is not lost", []step{
			{in: landed("b31", "fact"), state: StateLanded},
			{in: BranchCreated{}, state: StateAwaitingWrites},
			{in: write("b31", "fact"), state: StateAuditing},
			{in: AuditBegun{}, state: StateAuditing},
			{in: StepFailed{Step: StepAudit, Err: "503", Class: Transient}, state: StateAuditing, effects: []EffectKind{DoWake, DoSend}},
			{in: AuditBegun{}, state: StateAuditing, effects: []EffectKind{DoWake, DoSend}}, // not before its retry time
			{in: Restored{}, at: 2 * time.Second, state: StateAuditing, effects: []EffectKind{DoBeginAudit, DoSend}, check: lost(0)},
			{in: AuditBegun{}, at: 2 * time.Second, state: StateAuditing, effects: []EffectKind{DoAudit, DoSend}},
			{in: AuditStopped{}, at: 3 * time.Second, state: StateAuditing, effects: []EffectKind{DoBeginAudit, DoSend}},
			{in: Restored{}, at: 3 * time.Second, state: StateAuditing, check: lost(0)},
			{in: AuditBegun{}, at: 4 * time.Second, state: StateAuditing},
			{in: Audited{SealedCommit: "c31", Report: report(true)}, at: 5 * time.Second, state: StatePublishing, effects: []EffectKind{DoPublish, DoSend}},
			{in: Restored{}, at: 6 * time.Second, state: StatePublishing, check: func(t *testing.T, r Run) {
				if r.AuditOpen || r.AuditLost != 0 {
					t.Errorf("audit open %v, lost %d after the audit reported; want neither", r.AuditOpen, r.AuditLost)
				}
			}},
		}},
		{"early writes expire", []step{
			{in: write("b4", "fact"), state: StatePending},
			{in: Tick{}, at: 30 * time.Minute, state: StatePending},
			{in: Tick{}, at: 61 * time.Minute, state: "", effects: []EffectKind{DoForget}},
		}},
		{"write deadline aborts", []step{
			{in: landed("b5", "fact", "dim"), state: StateLanded},
			{in: BranchCreated{}, state: StateAwaitingWrites},
			{in: write("b5", "fact"), state: StateAwaitingWrites},
			{in: Tick{}, at: 9 * time.Minute, state: StateAwaitingWrites},
			{in: Tick{}, at: 10 * time.Minute, state: StateAborted, check: func(t *testing.T, r Run) {
				if r.Reason != schemas.ReasonWriteTimeout || r.Detail == "" {
					t.Errorf("reason %q detail %q", r.Reason, r.Detail)
				}
			}},
			{in: write("b5", "dim"), at: 11 * time.Minute, state: StateAborted}, // late write
		}},
		{"cancel before landing wins over a late landing", []step{
			{in: Cancel{Event: schemas.BatchCancelled{BatchID: "b6", Dataset: "billing", Reason: "upstream rerun"}}, state: StateAborted},
			{in: landed("b6", "fact"), state: StateAborted},
		}},
		{"cancel cannot stop a publish halfway", []step{
			{in: landed("b7", "fact"), state: StateLanded},
			{in: BranchCreated{}, state: StateAwaitingWrites},
			{in: write("b7", "fact"), state: StateAuditing},
			{in: Audited{SealedCommit: "c7", Report: report(true)}, state: StatePublishing},
			{in: Cancel{Event: schemas.BatchCancelled{BatchID: "b7", Dataset: "billing"}}, state: StatePublishing},
		}},
		{"transient failures back off then fail after the budget", []step{
			{in: landed("b8", "fact"), state: StateLanded},
			{in: StepFailed{Step: StepBranch, Err: "503", Class: Transient}, state: StateLanded, effects: []EffectKind{DoWake}, check: func(t *testing.T, r Run) {
				if r.Attempts != 1 || !r.RetryAt.Equal(t0.Add(time.Second)) {
					t.Errorf("attempts %d retry at %v", r.Attempts, r.RetryAt)
				}
			}},
			{in: Tick{}, at: 2 * time.Second, state: StateLanded, effects: []EffectKind{DoCreateBranch}},
			{in: StepFailed{Step: StepBranch, Err: "503", Class: Transient}, at: 2 * time.Second, state: StateLanded, check: func(t *testing.T, r Run) {
				if !r.RetryAt.Equal(t0.Add(4 * time.Second)) {
					t.Errorf("second backoff: retry at %v", r.RetryAt.Sub(t0))
				}
			}},
			{in: StepFailed{Step: StepBranch, Err: "503", Class: Transient}, at: time.Minute, state: StateFailed, check: func(t *testing.T, r Run) {
				f := r.Outbox[len(r.Outbox)-1].Failed
				if f == nil || f.State != string(StateLanded) || f.Attempts != 3 || !f.BranchKept {
					t.Errorf("failed = %+v", f)
				}
			}},
		}},
		{"a merge that lands after its step was given up on still publishes", []step{
			{in: landed("b13", "fact"), state: StateLanded},
			{in: BranchCreated{}, state: StateAwaitingWrites},
			{in: write("b13", "fact"), state: StateAuditing},
			{in: Audited{SealedCommit: "c13", Report: report(true)}, state: StatePublishing},
			{in: StepFailed{Step: StepPublish, Err: "timeout", Class: Transient}, state: StatePublishing},
			{in: StepFailed{Step: StepPublish, Err: "timeout", Class: Transient}, at: time.Minute, state: StatePublishing, effects: []EffectKind{DoLook, DoSend}},
			{in: Looked{}, at: time.Minute, state: StateFailed},
			{in: Merged{CommitID: "m13"}, at: time.Minute, state: StatePublished, check: func(t *testing.T, r Run) {
				last := r.Outbox[len(r.Outbox)-1]
				if last.Published == nil || last.Published.CommitID != "m13" {
					t.Errorf("outbox ends with %+v, want BatchPublished m13", last)
				}
			}},
		}},
		{"a missing source ref aborts the batch as invalid", []step{
			{in: landed("b15", "fact"), state: StateLanded},
			{in: StepFailed{Step: StepBranch, Err: "cannot branch from \"nope\"", Class: Rejected}, state: StateAborted, check: func(t *testing.T, r Run) {
				if r.Reason != schemas.ReasonInvalid || r.CleanupPending {
					t.Errorf("reason %q cleanup %v", r.Reason, r.CleanupPending)
				}
			}},
		}},
		{"a late merge does not revive a run failed elsewhere", []step{
			{in: landed("b14", "fact"), state: StateLanded},
			{in: StepFailed{Step: StepBranch, Err: "403", Class: Permanent}, state: StateFailed},
			{in: Merged{CommitID: "m14"}, state: StateFailed},
		}},
		{"merge conflict aborts and keeps the branch", []step{
			{in: landed("b9", "fact"), state: StateLanded},
			{in: BranchCreated{}, state: StateAwaitingWrites},
			{in: write("b9", "fact"), state: StateAuditing},
			{in: Audited{SealedCommit: "c9", Report: report(true)}, state: StatePublishing},
			{in: StepFailed{Step: StepAudit, Err: "stale", Class: Permanent}, state: StatePublishing}, // stale outcome ignored
			{in: StepFailed{Step: StepPublish, Err: "conflict found", Class: Conflict}, state: StateAborted, effects: []EffectKind{DoSend}, check: func(t *testing.T, r Run) {
				if r.Reason != schemas.ReasonMergeConflict || r.CleanupPending {
					t.Errorf("reason %q cleanup %v", r.Reason, r.CleanupPending)
				}
			}},
		}},
		{"invalid event aborts a live batch", []step{
			{in: landed("b10", "fact"), state: StateLanded},
			{in: Invalid{BatchID: "b10", Dataset: "billing", Detail: "write name empty"}, state: StateAborted, check: func(t *testing.T, r Run) {
				if r.Reason != schemas.ReasonInvalid {
					t.Errorf("reason %q", r.Reason)
				}
			}},
		}},
		{"a sink that still owes a notification is notified again later", []step{
			{in: landed("b12", "fact"), state: StateLanded},
			{in: BranchCreated{}, state: StateAwaitingWrites},
			{in: Sent{EventID: EventID("billing", "b12", "branch_ready"), Receipts: map[string]string{"kafka": "x", "pending:slack": "awaiting_writes"}},
				at: time.Second, state: StateAwaitingWrites, effects: []EffectKind{DoWake, DoWake}, check: func(t *testing.T, r Run) {
					if !r.NotifyRetryAt.Equal(t0.Add(time.Second + time.Minute)) {
						t.Errorf("notify retry at %v", r.NotifyRetryAt.Sub(t0))
					}
				}},
			{in: Tick{}, at: 2 * time.Minute, state: StateAwaitingWrites, effects: []EffectKind{DoWake, DoSend}, check: func(t *testing.T, r Run) {
				e := m.Pending(r, t0.Add(2*time.Minute))[1]
				if e.Send.BranchReady == nil || e.Send.EventID != EventID("billing", "b12", "branch_ready") {
					t.Errorf("refresh sends %+v, want the last result event again", e.Send)
				}
			}},
			{in: Sent{EventID: EventID("billing", "b12", "branch_ready"), Receipts: map[string]string{"kafka": "x", "slack": "C1/1.1"}},
				at: 2 * time.Minute, state: StateAwaitingWrites, effects: []EffectKind{DoWake}, check: func(t *testing.T, r Run) {
					if !r.NotifyRetryAt.IsZero() || r.Receipts["slack"] != "C1/1.1" || len(r.Receipts) != 2 {
						t.Errorf("after delivery: retry at %v receipts %v", r.NotifyRetryAt, r.Receipts)
					}
				}},
		}},
		{"sent removes the outbox entry and keeps receipts", []step{
			{in: landed("b11", "fact"), state: StateLanded},
			{in: BranchCreated{}, state: StateAwaitingWrites},
			{in: Sent{EventID: EventID("billing", "b11", "branch_ready"), Receipts: map[string]string{"slack:C1": "C1/1.2"}}, state: StateAwaitingWrites, effects: []EffectKind{DoWake}, check: func(t *testing.T, r Run) {
				if len(r.Outbox) != 0 || r.Receipts["slack:C1"] != "C1/1.2" || r.Sent != 1 {
					t.Errorf("outbox %d receipts %v sent %d", len(r.Outbox), r.Receipts, r.Sent)
				}
			}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runSteps(t, m, tc.steps)
		})
	}
}

// world is a model of lakeFS for the randomized test: which batches were
// merged into main, and how often.
type world struct {
	merges map[string]int
	good   map[string]bool
	// Operator requests: a retry may come after the writer fixed the
	// batch (fixed); passed holds the sealed commits whose audit passed;
	// reverts counts the revert commits made per batch.
	fixed   map[string]bool
	passed  map[string]bool
	audits  int
	reverts map[string]int
}

type pendingEffect struct {
	batch string
	e     Effect
	run   Run
}

// TestRandomInterleavings feeds duplicated, reordered and late events, step
// outcomes that fail or get lost in crashes, and restores from the stored
// state, then checks the promises: at most one publish per batch, only
// audited batches reach main, every landed batch ends terminal.
func TestRandomInterleavings(t *testing.T) {
	for seed := uint64(1); seed <= 2000; seed++ {
		rng := rand.New(rand.NewPCG(seed, seed*7919))
		m := NewMachine(policy(func(p *Policy) {
			p.RetryBudget, p.MinBackoff, p.MaxBackoff = []time.Duration{2 * time.Minute, 30 * time.Second}[seed%2], time.Second, 10*time.Second
		}))
		w := world{merges: map[string]int{}, good: map[string]bool{}, fixed: map[string]bool{}, passed: map[string]bool{}, reverts: map[string]int{}}
		stored := map[string]Run{}
		var effects []pendingEffect
		now := t0
		var inputs []struct {
			batch string
			in    Input
		}
		nb := 1 + rng.IntN(4)
		var landedBatches []string
		for b := range nb {
			id := fmt.Sprintf("s%d-b%d", seed, b)
			w.good[id] = rng.IntN(3) > 0
			writes := []string{"fact", "dim"}[:1+rng.IntN(2)]
			l := landed(id, writes...)
			l.Spec.WriteTimeout = time.Duration(5+rng.IntN(10)) * time.Minute
			l.Spec.KeepBranch = rng.IntN(2) == 0 // a kept branch can be retried
			if rng.IntN(10) > 0 {                // sometimes a batch never lands
				inputs = append(inputs, struct {
					batch string
					in    Input
				}{id, l})
				landedBatches = append(landedBatches, id)
			}
			for _, wr := range writes {
				if rng.IntN(8) > 0 { // sometimes a write never completes
					inputs = append(inputs, struct {
						batch string
						in    Input
					}{id, write(id, wr)})
				}
			}
			if rng.IntN(10) == 0 {
				inputs = append(inputs, struct {
					batch string
					in    Input
				}{id, Cancel{Event: schemas.BatchCancelled{BatchID: id, Dataset: "billing"}}})
			}
			// Operator requests, at any time: retries, reverts, cancels.
			for i := range rng.IntN(4) {
				req := fmt.Sprintf("q%d", i)
				var in Input
				switch rng.IntN(3) {
				case 0:
					in = retryReq(id, req)
				case 1:
					in = revertReq(id, req)
				default:
					in = cancelReq(id, req)
				}
				inputs = append(inputs, struct {
					batch string
					in    Input
				}{id, in})
			}
		}
		// duplicates and disorder
		for i := len(inputs) - 1; i >= 0; i-- {
			if rng.IntN(4) == 0 {
				inputs = append(inputs, inputs[i])
			}
		}
		rng.Shuffle(len(inputs), func(i, j int) { inputs[i], inputs[j] = inputs[j], inputs[i] })

		terminalAt := map[string]time.Time{}
		apply := func(batch string, in Input) {
			if _, ok := in.(RetryRequest); ok && rng.IntN(2) == 0 {
				w.fixed[batch] = true // the writer fixed the branch, then asked for the retry
			}
			before := stored[batch]
			next, effs := transition(t, m, before, in, now)
			if reply := replyOf(effs); reply != nil && (reply.Refused == nil && reply.Reverted == nil || marshal(t, next) != marshal(t, before)) {
				t.Fatalf("seed %d: %T answered with %+v and changed the run", seed, in, reply)
			}
			if next.Revert != nil && next.Revert.Commit != "" && w.reverts[batch] != 1 {
				t.Fatalf("seed %d: batch %s recorded as reverted, %d revert commits made", seed, batch, w.reverts[batch])
			}
			if next.State == "" {
				delete(stored, batch)
			} else {
				stored[batch] = next // persisted before anything else happens
			}
			if next.State.Terminal() && terminalAt[batch].IsZero() {
				terminalAt[batch] = now
			} else if !next.State.Terminal() {
				delete(terminalAt, batch) // retried
			}
			for _, e := range effs {
				if e.Kind == DoWake || e.Kind == DoForget {
					continue
				}
				effects = append(effects, pendingEffect{batch, e, next})
			}
		}
		execute := func(pe pendingEffect) Input {
			transient := rng.IntN(6) == 0
			switch pe.e.Kind {
			case DoCreateBranch:
				if transient {
					return StepFailed{Step: StepBranch, Class: Transient, Err: "503"}
				}
				return BranchCreated{}
			case DoBeginAudit:
				return AuditBegun{}
			case DoAudit:
				if transient {
					return StepFailed{Step: StepAudit, Class: Transient, Err: "timeout"}
				}
				w.audits++
				sealed := fmt.Sprintf("c-%s-%d", pe.batch, w.audits)
				pass := w.good[pe.batch] || w.fixed[pe.batch]
				w.passed[sealed] = pass
				return Audited{SealedCommit: sealed, Report: report(pass)}
			case DoPublish:
				if w.merges[pe.batch] > 0 {
					return Merged{CommitID: "m-" + pe.batch}
				}
				if pe.run.Report == nil || !pe.run.Report.Passed || !w.passed[pe.run.SealedCommit] {
					t.Fatalf("seed %d: publish effect for %s without a passing audit of %s", seed, pe.batch, pe.run.SealedCommit)
				}
				if transient {
					sf := StepFailed{Step: StepPublish, Class: Transient, Err: "423 locked"}
					if rng.IntN(2) == 0 {
						// The merge lands after the step's deadline: its
						// answer and the look after it are lost.
						w.merges[pe.batch]++
						sf.Err = "context deadline exceeded"
					}
					return sf
				}
				w.merges[pe.batch]++
				return Merged{CommitID: "m-" + pe.batch}
			case DoLook:
				// The last look before a failed publish ends the run finds
				// a merge whose answer was lost.
				if w.merges[pe.batch] > 0 {
					return Looked{OnTarget: true, CommitID: "m-" + pe.batch}
				}
				return Looked{}
			case DoSend:
				return Sent{EventID: pe.e.Send.EventID}
			case DoCleanup:
				return CleanedUp{}
			case DoRevert:
				if w.merges[pe.batch] != 1 || pe.run.State != StatePublished {
					t.Fatalf("seed %d: revert of %s (%s), merged %d times", seed, pe.batch, pe.run.State, w.merges[pe.batch])
				}
				if transient {
					return StepFailed{Step: StepRevert, Class: Transient, Err: "423 locked"}
				}
				if w.reverts[pe.batch] == 0 { // a revert already made is found, not made again
					w.reverts[pe.batch]++
				}
				return Reverted{PublishCommit: "m-" + pe.batch, CommitID: "r-" + pe.batch, At: now}
			}
			return nil
		}
		for steps := 0; steps < 5000; steps++ {
			switch k := rng.IntN(10); {
			case k < 3 && len(inputs) > 0:
				in := inputs[0]
				apply(in.batch, in.in) // the state is persisted ...
				if rng.IntN(10) == 0 {
					// ... and the process dies before the offset is
					// committed: Kafka delivers the same input again.
					continue
				}
				inputs = inputs[1:] // ... then the offset is committed
			case k < 7 && len(effects) > 0:
				i := rng.IntN(len(effects))
				pe := effects[i]
				effects = append(effects[:i], effects[i+1:]...)
				out := execute(pe)
				if rng.IntN(8) == 0 {
					// crash after the side effect, before its outcome was
					// persisted: restore every run from the store.
					effects = nil
					for _, b := range slices.Sorted(maps.Keys(stored)) {
						apply(b, Restored{}) // queues the run's pending work
					}
					continue
				}
				if out != nil {
					apply(pe.batch, out)
				}
			default:
				if b := landedBatches; len(b) > 0 && rng.IntN(6) == 0 {
					// An operator's request, later on.
					id, req := b[rng.IntN(len(b))], fmt.Sprintf("late%d", steps)
					in := []Input{retryReq(id, req), revertReq(id, req), cancelReq(id, req)}[rng.IntN(3)]
					inputs = append(inputs, struct {
						batch string
						in    Input
					}{id, in})
				}
				now = now.Add(time.Duration(1+rng.IntN(30)) * time.Second)
				for _, b := range slices.Sorted(maps.Keys(stored)) { // sorted: a seed replays exactly
					apply(b, Tick{})
				}
			}
			if len(inputs) == 0 && len(effects) == 0 && now.Sub(t0) > 20*time.Minute {
				break
			}
		}
		// Drain: deliver what is left, then let time pass until quiet.
		for _, in := range inputs {
			apply(in.batch, in.in)
		}
		remedied := map[string]bool{}
		remedyDue := func() bool {
			for b, r := range stored {
				if r.State == StatePublished && r.Revert == nil && w.reverts[b] > 0 && !remedied[b] {
					return true
				}
			}
			return false
		}
		for round := 0; round < 500 && (len(effects) > 0 || anyLive(stored) || remedyDue()); round++ {
			for len(effects) > 0 {
				pe := effects[0]
				effects = effects[1:]
				if out := execute(pe); out != nil {
					apply(pe.batch, out)
				}
			}
			// A revert made whose outcome was lost in a crash, while its
			// later attempts failed until the retry budget ran out, leaves
			// the run published without its revert: the operator asks
			// again and the revert step finds the revert made. (A merge
			// in the same case no longer needs the operator: the runner
			// looks once more before a publish fails.)
			for _, b := range slices.Sorted(maps.Keys(stored)) {
				if r := stored[b]; r.State == StatePublished && r.Revert == nil && w.reverts[b] > 0 && !remedied[b] {
					remedied[b] = true
					apply(b, revertReq(b, "remedy"))
				}
			}
			now = now.Add(15 * time.Second)
			for _, b := range slices.Sorted(maps.Keys(stored)) {
				apply(b, Tick{})
			}
		}
		for _, b := range landedBatches {
			r := stored[b]
			if !r.State.Terminal() {
				t.Fatalf("seed %d: batch %s ended in %q", seed, b, r.State)
			}
			if w.merges[b] > 1 {
				t.Fatalf("seed %d: batch %s merged %d times", seed, b, w.merges[b])
			}
			if w.merges[b] == 1 && !w.good[b] && !w.fixed[b] {
				t.Fatalf("seed %d: batch %s failed its audit but reached main", seed, b)
			}
			if r.revertPending() || (r.Revert != nil) != (w.reverts[b] == 1) || w.reverts[b] > 1 {
				t.Fatalf("seed %d: batch %s revert %+v, %d revert commits", seed, b, r.Revert, w.reverts[b])
			}
			if (r.State == StatePublished) != (w.merges[b] == 1) {
				t.Fatalf("seed %d: batch %s state %s but merged %d times", seed, b, r.State, w.merges[b])
			}
			if len(r.Outbox) != 0 {
				t.Fatalf("seed %d: batch %s has unsent results %+v", seed, b, r.Outbox)
			}
			// A batch whose writes never all came ends at its deadline,
			// within one step of the simulated clock (30 s at most); one
			// an operator retried after its deadline ends at the retry.
			if r.Reason == schemas.ReasonWriteTimeout && r.Retries == 0 {
				if late := terminalAt[b].Sub(r.Deadline); late < 0 || late > 30*time.Second {
					t.Fatalf("seed %d: batch %s timed out %v after its deadline", seed, b, late)
				}
			}
		}
	}
}

// suspect checks the attempts a run counts as lost, and whether its
// attempts must run alone.
func suspect(lost int, alone bool) func(*testing.T, Run) {
	return func(t *testing.T, r Run) {
		t.Helper()
		if r.AuditLost != lost || r.AuditSuspect != alone || r.AuditOpen {
			t.Errorf("AuditLost = %d, AuditSuspect = %v, AuditOpen = %v; want %d, %v, nothing open", r.AuditLost, r.AuditSuspect, r.AuditOpen, lost, alone)
		}
	}
}

// lost checks the audit attempts a run counts as lost.
func seals(want ...string) func(*testing.T, Run) {
	return func(t *testing.T, r Run) {
		t.Helper()
		if !slices.Equal(r.Seals, want) {
			t.Errorf("Seals = %v, want %v", r.Seals, want)
		}
	}
}

func lost(want int) func(*testing.T, Run) {
	return func(t *testing.T, r Run) {
		t.Helper()
		if r.AuditLost != want {
			t.Errorf("AuditLost = %d, want %d", r.AuditLost, want)
		}
	}
}

func anyLive(stored map[string]Run) bool {
	for _, r := range stored {
		if !r.State.Terminal() || len(r.Outbox) > 0 || r.CleanupPending || r.revertPending() {
			return true
		}
	}
	return false
}

func BenchmarkTransition(b *testing.B) {
	m := NewMachine(DefaultPolicy)
	seq := []Input{landed("bench", "fact", "dim"), BranchCreated{}, write("bench", "fact"), write("bench", "dim"),
		Audited{SealedCommit: "c", Report: report(true)}, Merged{CommitID: "m"}}
	b.ReportAllocs()
	for b.Loop() {
		var r Run
		for _, in := range seq {
			r = m.Apply(r, in, t0).Run
		}
	}
	b.ReportMetric(float64(len(seq)*b.N)/b.Elapsed().Seconds(), "transitions/s")
}

// A publish that fails for good (a permanent failure, or a transient one
// past the retry budget) does not fail the run at once: the machine asks
// for a last look (DoLook) and decides on its answer. Found, the run is
// published; not found, it fails with the publish's own error and
// attempts. A first transient failure, a conflict or a stale outcome ask
// for no look.
func TestFailedPublishLooksFirst(t *testing.T) {
	m := NewMachine(policy(func(p *Policy) { p.RetryBudget = time.Minute }))
	var r Run
	for _, in := range []Input{landed("f1", "fact"), BranchCreated{}, write("f1", "fact"), Audited{SealedCommit: "c", Report: report(true)}} {
		r, _ = transition(t, m, r, in, t0)
	}
	transient := StepFailed{Step: StepPublish, Err: "timeout", Class: Transient}
	for _, tt := range []struct {
		in    StepFailed
		at    time.Duration
		look  bool
		state State
	}{
		{transient, 0, false, StatePublishing},
		{StepFailed{Step: StepPublish, Err: "403", Class: Permanent}, 0, true, StatePublishing},
		{StepFailed{Step: StepPublish, Err: "conflict", Class: Conflict}, 0, false, StateAborted},
		{StepFailed{Step: StepAudit, Err: "stale", Class: Permanent}, 0, false, StatePublishing},
	} {
		next, effects := transition(t, m, r, tt.in, t0.Add(tt.at))
		if looks := slices.Contains(kinds(effects), DoLook); looks != tt.look || next.State != tt.state || looks != (next.Looking != nil) {
			t.Errorf("%+v: state %s, effects %v, looking %+v; want state %s, look %v", tt.in, next.State, kinds(effects), next.Looking, tt.state, tt.look)
		}
	}
	r, _ = transition(t, m, r, transient, t0)
	if next, _ := transition(t, m, r, transient, t0.Add(30*time.Second)); next.Looking != nil || next.RetryAt.IsZero() {
		t.Errorf("a second transient failure inside the budget: %+v, want a retry and no look", next)
	}
	looking, effects := transition(t, m, r, transient, t0.Add(time.Minute))
	if !looksOnly(effects) || looking.Looking == nil || looking.Looking.Err != "timeout" || looking.Looking.Attempts != 2 {
		t.Fatalf("transient failure at the end of the budget: effects %v, looking %+v; want one look holding the failure", kinds(effects), looking.Looking)
	}
	// A publish outcome that arrives while the look is pending changes nothing.
	if _, effects := transition(t, m, looking, StepFailed{Step: StepPublish, Err: "late", Class: Permanent}, t0.Add(time.Minute)); !looksOnly(effects) {
		t.Errorf("a publish failure while looking: effects %v, want the look alone", kinds(effects))
	}
	found, _ := transition(t, m, looking, Looked{OnTarget: true, CommitID: "m1"}, t0.Add(time.Minute))
	if found.State != StatePublished || found.CommitID != "m1" || found.Looking != nil || len(found.Outbox) == 0 || found.Outbox[len(found.Outbox)-1].Published == nil {
		t.Errorf("look found the merge: %s %q looking %+v, want published as m1 with BatchPublished", found.State, found.CommitID, found.Looking)
	}
	lost, _ := transition(t, m, looking, Looked{}, t0.Add(time.Minute))
	if o := lost.Outbox[len(lost.Outbox)-1]; lost.State != StateFailed || lost.FailedStep != StepPublish || lost.Looking != nil ||
		o.Failed == nil || o.Failed.Error != "timeout" || o.Failed.Attempts != 2 {
		t.Errorf("look found nothing: %s (%s) looking %+v, last event %+v; want failed with the publish's error", lost.State, lost.FailedStep, lost.Looking, o.Failed)
	}
	// The pending look survives a restart: it is the stored run's work.
	var restored Run
	if err := json.Unmarshal([]byte(marshal(t, looking)), &restored); err != nil {
		t.Fatal(err)
	}
	if got := m.Pending(restored, t0.Add(2*time.Minute)); !looksOnly(got) {
		t.Errorf("restored run with a pending look asks for %v, want the look", kinds(got))
	}
}

// looksOnly: the step asked for is the last look (and no publish); the
// outbox may still be sending.
func looksOnly(effects []Effect) bool {
	k := kinds(effects)
	return slices.Contains(k, DoLook) && !slices.Contains(k, DoPublish) && !slices.Contains(k, DoWake)
}

// transition is Apply as the tests use it: the run after the input and
// its effects. It checks what the runner relies on: Apply leaves its input
// alone, Changed says whether the run differs (but for UpdatedAt, which a
// change sets to now), and a no-op hands back the run given.
func transition(tb testing.TB, m Machine, r Run, in Input, now time.Time) (Run, []Effect) {
	tb.Helper()
	before := r.Clone()
	o := m.Apply(r, in, now)
	if !reflect.DeepEqual(before, r.Clone()) {
		tb.Fatalf("Apply(%T) mutated its input", in)
	}
	if o.Refused != nil {
		return o.Run, o.Effects
	}
	same := o.Run.Clone()
	same.UpdatedAt = r.UpdatedAt
	if changed := !reflect.DeepEqual(before, same); changed != o.Changed {
		tb.Fatalf("Apply(%T) says Changed %v, the run says %v:\n%+v\n%+v", in, o.Changed, changed, before, same)
	}
	if o.Changed && o.Run.State != "" && !o.Run.UpdatedAt.Equal(now) {
		tb.Fatalf("Apply(%T) changed the run but left UpdatedAt %v", in, o.Run.UpdatedAt)
	}
	return o.Run, o.Effects
}

// runSteps applies steps in order from an empty run, checking after each
// that Transition left its input alone and gave the step's state, effects
// and check.
func runSteps(t *testing.T, m Machine, steps []step) {
	t.Helper()
	var r Run
	for i, s := range steps {
		next, effects := transition(t, m, r, s.in, t0.Add(s.at))
		if next.State != s.state {
			t.Fatalf("step %d (%T): state %q, want %q", i, s.in, next.State, s.state)
		}
		if s.effects != nil && !slices.Equal(kinds(effects), s.effects) {
			t.Errorf("step %d (%T): effects %v, want %v", i, s.in, kinds(effects), s.effects)
		}
		if s.check != nil {
			s.check(t, next)
		}
		r = next
	}
}
