package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// The revert's audit attempt (AuditBegun{Revert}) as the runner leaves it
// in the store, at the two ends a revert step can meet besides its report:
// a revocation (stored stopped by execute, which records AuditStopped for
// a DoRevert without an outcome: the revert executor has none only when
// its partition is revoked) and the process's death (left open, counted
// by the next owner). The machine's rules are in pipeline's
// TestRevertAuditThatTakesTheProcessDownIsCounted; these hold the runner
// to them.

// revertRequest asks f's runner to revert b1 (request q1).
func revertRequest(t *testing.T, f *runnerFixture) {
	t.Helper()
	if err := f.r.Handle(context.Background(), 0, schemas.RevertRequested{RequestID: "q1", BatchID: "b1", Dataset: "billing",
		Reason: "wrong", RequestedBy: "bob", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}, schemas.TraceContext{}); err != nil {
		t.Fatal(err)
	}
}

// sharedLake makes every process of a crashRig use the lake of the first
// (the batch's publish is there for the next owner to revert).
func sharedLake() func(*Config) {
	var lake Lake
	return func(c *Config) {
		if lake == nil {
			lake = c.Lake
		}
		c.Lake = lake
	}
}

// isRevertAudit says req is the audit of a revert's scratch commit.
func isRevertAudit(req AuditRequest) bool {
	return req.Onto && strings.HasPrefix(req.Ref, "scratch-revert-")
}

// A revocation in the middle of the revert's audit (which does not return
// at once when cancelled: DuckDB inside a query) is no lost attempt: the
// next owner reverts without counting one, nor auditing alone.
func TestRevertAuditStoppedByARevocationIsNotCountedAsLost(t *testing.T) {
	rig := &crashRig{t: t, mod: sharedLake()}
	inAudit := make(chan struct{})
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	f := rig.process(map[string][]byte{}, func(*memStore) auditFunc {
		return func(ctx context.Context, req AuditRequest) (schemas.AuditReport, error) {
			if !isRevertAudit(req) {
				return report(true), nil
			}
			close(inAudit)
			<-release // cancelled, it still reads on for a while
			return schemas.AuditReport{}, ctx.Err()
		}
	})
	go func() {
		for range f.notes.ch {
		}
	}()
	store := f.cfg.Store.(*memStore)
	f.land(t, "b1")
	f.awaitRunPublished(t, "b1")
	revertRequest(t, f)
	select {
	case <-inAudit:
	case <-time.After(30 * time.Second):
		t.Fatal("the revert was never audited")
	}
	if open := storedRun(store, "b1")["audit_open"]; open != true {
		t.Fatalf("during the revert's audit the store holds audit_open %v; want the attempt begun", open)
	}
	f.r.Revoked(0)
	left, _ := store.Load(context.Background(), 0)
	if open := storedRun(store, "b1")["audit_open"]; open == true {
		t.Errorf("after the revocation the store holds the revert's attempt open: the next owner counts it as lost")
	}
	next := rig.process(left, func(*memStore) auditFunc {
		return func(context.Context, AuditRequest) (schemas.AuditReport, error) { return report(true), nil }
	})
	go func() {
		for range next.notes.ch {
		}
	}()
	if rv, ok := next.awaitAnswer(t, "b1", "q1").(schemas.BatchReverted); !ok || rv.CommitID == "" {
		t.Fatalf("the next owner answered %+v; want the revert made", rv)
	}
	if r, _ := next.run("billing", "b1"); r.AuditLost != 0 || r.AuditSuspect {
		t.Errorf("the next owner counted %d lost attempt(s) (suspect %v); want none: the revert's audit was stopped by a rebalance",
			r.AuditLost, r.AuditSuspect)
	}
}

// A revert's audit that takes its process down is counted by the next
// owner (the store holds it open), and the revert is audited alone there.
func TestRevertAuditThatTakesTheProcessDownIsCountedByTheNextOwner(t *testing.T) {
	rig := &crashRig{t: t, deaths: make(chan map[string][]byte, 1), mod: sharedLake()}
	f := rig.process(map[string][]byte{}, func(store *memStore) auditFunc {
		return func(ctx context.Context, req AuditRequest) (schemas.AuditReport, error) {
			if !isRevertAudit(req) {
				return report(true), nil
			}
			return rig.die(ctx, store)
		}
	})
	go func() {
		for range f.notes.ch {
		}
	}()
	f.land(t, "b1")
	f.awaitRunPublished(t, "b1")
	revertRequest(t, f)
	var left map[string][]byte
	select {
	case left = <-rig.deaths:
	case <-time.After(30 * time.Second):
		t.Fatal("the revert was never audited")
	}
	var solo []bool
	next := rig.process(left, func(store *memStore) auditFunc {
		return func(context.Context, AuditRequest) (schemas.AuditReport, error) {
			solo = append(solo, storedRun(store, "b1")["audit_solo"] == true)
			return report(true), nil
		}
	})
	go func() {
		for range next.notes.ch {
		}
	}()
	if rv, ok := next.awaitAnswer(t, "b1", "q1").(schemas.BatchReverted); !ok || rv.CommitID == "" {
		t.Fatalf("the next owner answered %+v; want the revert made", rv)
	}
	if r, _ := next.run("billing", "b1"); r.AuditLost != 1 || !r.AuditSuspect {
		t.Errorf("the next owner counted %d lost attempt(s) (suspect %v); want 1, and the run suspect", r.AuditLost, r.AuditSuspect)
	}
	if len(solo) != 1 || !solo[0] {
		t.Errorf("the next owner's revert audits ran alone: %v; want one, alone", solo)
	}
}
