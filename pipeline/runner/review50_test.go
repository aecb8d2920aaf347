package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/lakewap/lakewap/pipeline"

	"github.com/lakewap/lakewap/schemas"
)

// revertAuditor is gateAuditor, whose audits of a revert's scratch commit
// onto the target (after) and of the target as it is (before) report the
// checks in them failing.
type revertAuditor struct {
	*gateAuditor
	after, before []string
	onto          []AuditRequest // the audits of a scratch commit
}

func (a *revertAuditor) Audit(ctx context.Context, req AuditRequest) (schemas.AuditReport, error) {
	failing := func(names []string) schemas.AuditReport {
		rep := schemas.AuditReport{Dataset: req.Dataset, Passed: len(names) == 0}
		for _, n := range names {
			rep.Checks = append(rep.Checks, schemas.CheckResult{Name: n, Kind: "sql", Severity: "error", Status: schemas.StatusFail})
		}
		return rep
	}
	switch {
	case req.Onto && strings.HasPrefix(req.Ref, "scratch-revert-"):
		a.mu.Lock()
		a.onto = append(a.onto, req)
		a.mu.Unlock()
		return failing(a.after), nil
	case !req.Onto && req.Ref == req.BaseRef && strings.HasPrefix(req.Ref, "head-of-main"):
		return failing(a.before), nil
	}
	return a.gateAuditor.Audit(ctx, req)
}

// TestRevertRefusedWhenItBreaksAPassingCheck: the runner audits the target
// as a revert leaves it (its scratch commit onto the target's head) and
// refuses the revert when a check passing on the head fails after it,
// naming it; a check failing on the head already does not hold it back;
// the operator's Force makes it unaudited. Before review 50 every revert
// was made unaudited.
func TestRevertRefusedWhenItBreaksAPassingCheck(t *testing.T) {
	aud := &revertAuditor{gateAuditor: &gateAuditor{gates: map[string]chan struct{}{}},
		after: []string{"orders_have_customers (dataset orders)", "was_failing"}, before: []string{"was_failing"}}
	f := newRunnerFixtureWith(t, func(c *Config) { c.Auditor = aud })
	go func() {
		for range f.notes.ch {
		}
	}()
	f.land(t, "b1")
	f.awaitRunPublished(t, "b1")
	now := time.Now().UTC().Truncate(time.Millisecond)
	ask := func(id string, force bool) schemas.Event {
		t.Helper()
		if err := f.r.Handle(context.Background(), 0, schemas.RevertRequested{RequestID: id, BatchID: "b1", Dataset: "billing",
			Reason: "wrong", RequestedBy: "bob", OccurredAt: now, Force: force}, schemas.TraceContext{}); err != nil {
			t.Fatal(err)
		}
		return f.awaitAnswer(t, "b1", id)
	}
	ref, ok := ask("q1", false).(schemas.RequestRefused)
	if !ok || ref.Reason != schemas.RefusedRevertFailed || !strings.Contains(ref.Detail, "orders_have_customers (dataset orders)") ||
		strings.Contains(ref.Detail, "was_failing") || !strings.Contains(ref.Detail, "-force") {
		t.Fatalf("revert breaking orders' check answered %+v; want refused revert_failed naming it alone and -force", ref)
	}
	if n := f.lake.reverts(); n != 0 {
		t.Errorf("%d revert commits on the target after a refused revert, want 0", n)
	}
	if len(aud.onto) != 1 || aud.onto[0].BaseRef != "head-of-main" || aud.onto[0].Dataset != "billing" {
		t.Errorf("audits of the scratch commit: %+v; want one, of dataset billing onto main's head", aud.onto)
	}

	// Only a check failing already: made.
	aud.mu.Lock()
	aud.after = []string{"was_failing"}
	aud.mu.Unlock()
	if rv, ok := ask("q2", false).(schemas.BatchReverted); !ok || rv.CommitID == "" {
		t.Fatalf("revert failing only a check failing already answered %+v; want reverted", rv)
	}
	if n := f.lake.reverts(); n != 1 {
		t.Errorf("%d revert commits, want 1", n)
	}
}

// TestForcedRevertIsNotAudited: Force, the operator's -force, makes the
// revert though the audit would refuse it, and audits nothing.
func TestForcedRevertIsNotAudited(t *testing.T) {
	aud := &revertAuditor{gateAuditor: &gateAuditor{gates: map[string]chan struct{}{}}, after: []string{"orders_have_customers (dataset orders)"}}
	f := newRunnerFixtureWith(t, func(c *Config) { c.Auditor = aud })
	go func() {
		for range f.notes.ch {
		}
	}()
	f.land(t, "b1")
	f.awaitRunPublished(t, "b1")
	if err := f.r.Handle(context.Background(), 0, schemas.RevertRequested{RequestID: "q1", BatchID: "b1", Dataset: "billing",
		Reason: "wrong", RequestedBy: "bob", OccurredAt: time.Now().UTC().Truncate(time.Millisecond), Force: true}, schemas.TraceContext{}); err != nil {
		t.Fatal(err)
	}
	if rv, ok := f.awaitAnswer(t, "b1", "q1").(schemas.BatchReverted); !ok || rv.CommitID == "" {
		t.Fatalf("forced revert answered %+v; want reverted", rv)
	}
	if len(aud.onto) != 0 || f.lake.scratchReverts != 0 {
		t.Errorf("a forced revert audited %d times, %d scratch reverts; want none", len(aud.onto), f.lake.scratchReverts)
	}
}
