package runner

import (
	"context"
	"testing"
	"time"

	. "github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// TestRecheckStoppedByARevocationIsNotCountedAsLost (review 54): a
// publish's recheck is an audit attempt stored as begun when it first
// reads; a rebalance that revokes the partition in the middle of it did
// not store it stopped (review 51 did so for the audit step and a
// revert's audit, not for the publish), so the next owner restored it
// open and counted it as an attempt whose process ended in it: the run
// was made suspect, and enough rebalances over rechecks that run alone
// would abort a healthy batch audit_crashed. The recheck here does not
// return at once when it is cancelled (DuckDB inside a query): the
// revocation ends before it does. Before the fix the store the next owner
// reads held the attempt open, and that owner counted it lost (1).
func TestRecheckStoppedByARevocationIsNotCountedAsLost(t *testing.T) {
	rig := &crashRig{t: t}
	rig.mod = func(c *Config) { c.Lake = movedLake{c.Lake.(*fakeLake)} }
	inRecheck := make(chan struct{})
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	first := func(*memStore) auditFunc {
		return func(ctx context.Context, req AuditRequest) (schemas.AuditReport, error) {
			if !req.Onto {
				return report(true), nil
			}
			if err := req.BeforeRead(ctx); err != nil { // stores the attempt begun
				return schemas.AuditReport{}, err
			}
			close(inRecheck)
			<-release // cancelled, it still reads on for a while
			return schemas.AuditReport{}, ctx.Err()
		}
	}
	f := rig.process(map[string][]byte{}, first)
	store := f.cfg.Store.(*memStore)
	f.land(t, "b1")
	select {
	case <-inRecheck:
	case <-time.After(30 * time.Second):
		t.Fatal("b1's publish never rechecked")
	}
	if open := storedRun(store, "b1")["audit_open"]; open != true {
		t.Fatalf("during the recheck the store holds audit_open %v; want the attempt begun", open)
	}
	f.r.Revoked(0) // a rebalance: the partition goes to another instance
	left, _ := store.Load(context.Background(), 0)
	if open := storedRun(store, "b1")["audit_open"]; open == true {
		t.Errorf("after the revocation the store holds the recheck's attempt open: the next owner counts it as lost")
	}
	next := rig.process(left, func(*memStore) auditFunc {
		return func(context.Context, AuditRequest) (schemas.AuditReport, error) { return report(true), nil }
	})
	next.awaitRunPublished(t, "b1")
	if r, _ := next.run("billing", "b1"); r.AuditLost != 0 || r.AuditSuspect {
		t.Errorf("the next owner counted %d lost attempt(s) (suspect %v); want none: the recheck was stopped by a rebalance, it did not take the process down",
			r.AuditLost, r.AuditSuspect)
	}
}
