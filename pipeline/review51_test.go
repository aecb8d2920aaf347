package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// TestRevertAuditThatTakesTheProcessDownIsCounted (review 51): a revert's
// audit begun (stored as an open attempt) that never reports ended with
// its process. Like a batch's audit, it is counted at the restore, and
// the revert is not audited again at every restore: at
// MaxAuditAttempts lost alone it is given up, RequestRefused revert_failed
// saying why, and the run stays published. Before, a published run's
// open attempt was not looked at: the revert was made again at every
// restore, on every instance that took the partition.
func TestRevertAuditThatTakesTheProcessDownIsCounted(t *testing.T) {
	m := NewMachine(policy(func(p *Policy) { p.RetryBudget = time.Minute; p.MaxAuditAttempts = 2 }))
	var r Run
	for _, in := range []Input{landed("rv1", "fact"), BranchCreated{}, write("rv1", "fact"), Audited{SealedCommit: "c", Report: report(true)},
		Merged{CommitID: "m"}} {
		r, _ = transition(t, m, r, in, t0)
	}
	if r.State != StatePublished {
		t.Fatalf("run is %s; want published", r.State)
	}
	at := t0.Add(time.Minute)
	o := m.Apply(r, RevertRequest{Event: schemas.RevertRequested{RequestID: "q1", BatchID: "rv1", Dataset: r.Dataset, Reason: "bad",
		RequestedBy: "ana", OccurredAt: at}}, at)
	if !o.Changed || !o.Run.revertPending() {
		t.Fatalf("revert request not taken: %+v", o)
	}
	r = o.Run
	begin := func(solo bool) {
		t.Helper()
		o := m.Apply(r, AuditBegun{Solo: solo, Revert: true}, at)
		if !o.Changed || !o.Run.AuditOpen || o.Run.AuditSolo != solo {
			t.Fatalf("the revert's audit attempt was not recorded as begun: changed %v, open %v, solo %v", o.Changed, o.Run.AuditOpen, o.Run.AuditSolo)
		}
		r = o.Run
	}
	begin(false)
	if stopped := m.Apply(r, AuditStopped{}, at).Run; stopped.AuditOpen || stopped.AuditLost != 0 || !stopped.revertPending() {
		t.Fatalf("a revert's audit stopped by a revocation: open %v, lost %d, pending %v; want closed, not counted, pending", stopped.AuditOpen, stopped.AuditLost, stopped.revertPending())
	}
	r = m.Apply(r, Restored{}, at).Run // lost beside other audits: suspect, not counted against it
	if r.AuditOpen || !r.AuditSuspect || r.AuditLost != 1 || !r.revertPending() {
		t.Fatalf("after a loss beside others: open %v, suspect %v, lost %d, revert pending %v; want suspect, 1, pending", r.AuditOpen, r.AuditSuspect, r.AuditLost, r.revertPending())
	}
	begin(true)
	r = m.Apply(r, Restored{}, at).Run // lost alone: the second, the limit
	if r.State != StatePublished || r.Revert != nil || r.AuditOpen {
		t.Fatalf("after %d losses: %s, revert %+v, open %v; want published, no revert pending", r.AuditLost, r.State, r.Revert, r.AuditOpen)
	}
	var refused *schemas.RequestRefused
	for _, out := range r.Outbox {
		if out.Refused != nil && out.Refused.RequestID == "q1" {
			refused = out.Refused
		}
	}
	if refused == nil || refused.Reason != schemas.RefusedRevertFailed || !strings.Contains(refused.Detail, "audit.max_attempts") {
		t.Errorf("the revert given up was answered %+v; want RequestRefused revert_failed naming audit.max_attempts", refused)
	}
	for _, e := range m.Pending(r, at) {
		if e.Kind == DoRevert {
			t.Errorf("a revert given up is still pending: %v", m.Pending(r, at))
		}
	}
}
