package runner

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	. "github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// TestRevokedPartitionStoresNothingAfterRevoked (review 60): Revoked gives
// the partition's steps their grace, then cancels them and returns; a
// goroutine of a step that does not return when cancelled (a recheck inside
// DuckDB) went on, and when it returned it stored the run as the old owner
// last saw it, over what the next owner had stored since. Here the old
// owner's recheck is stuck when the partition is revoked, and its stop
// could not be stored (the changelog was unavailable for the moment); the
// next owner, on the same changelog, restores the run and publishes it;
// then the old recheck returns, and its end (AuditEnded) was stored: the
// changelog held the run "publishing" again, as the old owner had it, and
// without runner.state_key_file the owner after that would restore it in
// publishing and run its publish again. Now a revoked partition stores nothing
// once Revoked has returned.
func TestRevokedPartitionStoresNothingAfterRevoked(t *testing.T) {
	rig := &crashRig{t: t}
	rig.mod = func(c *Config) { c.Lake = movedLake{c.Lake.(*fakeLake)} }
	inRecheck := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	old := rig.process(map[string][]byte{}, func(*memStore) auditFunc {
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
	})
	store := old.cfg.Store.(*memStore)
	old.land(t, "b1")
	select {
	case <-inRecheck:
	case <-time.After(30 * time.Second):
		t.Fatal("b1's publish never rechecked")
	}
	store.mu.Lock()
	store.fail = errors.New("changelog unavailable")
	store.mu.Unlock()
	old.r.Revoked(0) // a rebalance; the recheck's stop is not stored
	store.mu.Lock()
	store.fail = nil
	store.mu.Unlock()

	next := newRunnerFixtureWith(t, func(c *Config) {
		c.Store, c.Grace = store, time.Millisecond // the same changelog
		c.Auditor = auditFunc(func(context.Context, AuditRequest) (schemas.AuditReport, error) { return report(true), nil })
	})
	next.awaitRunPublished(t, "b1")
	if got := storedRun(store, "b1")["state"]; got != string(StatePublished) {
		t.Fatalf("the next owner published b1; the changelog holds it %v", got)
	}

	// The old owner's recheck returns; its publish turn ends after it has
	// stored whatever it stores.
	once.Do(func() { close(release) })
	run, _ := next.run("billing", "b1")
	k := targetKey{run.Repository, run.Target}
	after := old.r.enqueue(run)
	select {
	case <-after.turn:
	case <-time.After(30 * time.Second):
		t.Fatal("the old owner's publish turn never ended")
	}
	old.r.pass(k, after)
	if got := storedRun(store, "b1")["state"]; got != string(StatePublished) {
		t.Fatalf("after the old owner's recheck returned, the changelog holds b1 %v, as the revoked owner last saw it, over the next owner's published run", got)
	}
}
