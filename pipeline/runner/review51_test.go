package runner

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/lakewap/lakewap/pipeline"

	"github.com/lakewap/lakewap/schemas"
)

// storedAtRevertAudit is revertAuditor, which reads what the store holds of
// the run when the revert's audit of its scratch commit starts: what a
// process that dies in that audit leaves for the next restore.
type storedAtRevertAudit struct {
	*revertAuditor
	store  *memStore
	stored []Run
}

func (a *storedAtRevertAudit) Audit(ctx context.Context, req AuditRequest) (schemas.AuditReport, error) {
	if req.Onto && strings.HasPrefix(req.Ref, "scratch-revert-") {
		a.store.mu.Lock()
		for _, v := range a.store.data[0] {
			var r Run
			if json.Unmarshal(v, &r) == nil && r.BatchID == "b1" {
				a.stored = append(a.stored, r)
			}
		}
		a.store.mu.Unlock()
	}
	return a.revertAuditor.Audit(ctx, req)
}

// TestRevertAuditIsStoredAsAnAttempt (review 51): the revert's audit is an
// audit attempt like a batch's or a recheck's: stored as begun before it
// reads (AuditBegun with Revert), so that a process it takes down is
// counted at the restore and the revert is given up at audit.max_attempts
// (TestRevertAuditThatTakesTheProcessDownIsCounted) rather than audited
// again at every restore; and stored as ended when it reports. Before, the
// store held no open attempt during the revert's audit.
func TestRevertAuditIsStoredAsAnAttempt(t *testing.T) {
	aud := &storedAtRevertAudit{revertAuditor: &revertAuditor{gateAuditor: &gateAuditor{gates: map[string]chan struct{}{}}}}
	f := newRunnerFixtureWith(t, func(c *Config) { c.Auditor = aud })
	aud.store = f.store
	go func() {
		for range f.notes.ch {
		}
	}()
	f.land(t, "b1")
	f.awaitRunPublished(t, "b1")
	if err := f.r.Handle(context.Background(), 0, schemas.RevertRequested{RequestID: "q1", BatchID: "b1", Dataset: "billing",
		Reason: "wrong", RequestedBy: "bob", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}, schemas.TraceContext{}); err != nil {
		t.Fatal(err)
	}
	if rv, ok := f.awaitAnswer(t, "b1", "q1").(schemas.BatchReverted); !ok || rv.CommitID == "" {
		t.Fatalf("revert answered %+v; want reverted", rv)
	}
	if len(aud.stored) != 1 || !aud.stored[0].AuditOpen || aud.stored[0].State != StatePublished {
		t.Fatalf("the store during the revert's audit held %+v; want the published run with its audit attempt open", aud.stored)
	}
	if r, _ := f.run("billing", "b1"); r.AuditOpen || r.Revert == nil || r.Revert.Commit == "" {
		t.Errorf("after the revert: audit open %v, revert %+v; want the attempt closed and the revert done", r.AuditOpen, r.Revert)
	}
}

// TestBatchRevertedSaysWhetherTheRevertWasAudited (review 51): a
// publish's result carries its audit; a revert's result said nothing of
// its audit, so a consumer of the results topic could not tell a revert
// lakewap judged from one an operator forced. BatchReverted says so
// (audited), also when the revert is found done after a crash.
func TestBatchRevertedSaysWhetherTheRevertWasAudited(t *testing.T) {
	for _, force := range []bool{false, true} {
		aud := &revertAuditor{gateAuditor: &gateAuditor{gates: map[string]chan struct{}{}}}
		f := newRunnerFixtureWith(t, func(c *Config) { c.Auditor = aud })
		go func() {
			for range f.notes.ch {
			}
		}()
		f.land(t, "b1")
		f.awaitRunPublished(t, "b1")
		if err := f.r.Handle(context.Background(), 0, schemas.RevertRequested{RequestID: "q1", BatchID: "b1", Dataset: "billing",
			Reason: "wrong", RequestedBy: "bob", OccurredAt: time.Now().UTC().Truncate(time.Millisecond), Force: force}, schemas.TraceContext{}); err != nil {
			t.Fatal(err)
		}
		rv, ok := f.awaitAnswer(t, "b1", "q1").(schemas.BatchReverted)
		if !ok || rv.Audited == force {
			t.Errorf("revert (force %v) answered %+v; want BatchReverted with audited %v", force, rv, !force)
		}
	}
}
