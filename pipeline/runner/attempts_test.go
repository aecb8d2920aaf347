package runner

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	. "github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// crashRig runs "processes": each one a runner on the changelog as the
// one before it died left it. A death is a snapshot of the changelog taken
// inside an audit; the dead runner is left as it is (its audits blocked
// until its steps are cancelled), as a killed process leaves nothing more.
type crashRig struct {
	t      *testing.T
	deaths chan map[string][]byte
	mod    func(*Config)
}

// process starts a runner on changelog; audit is its auditor, given the
// runner's own store (a dead process's fakes must not read the next one's).
func (c *crashRig) process(changelog map[string][]byte, audit func(store *memStore) auditFunc) *runnerFixture {
	store := &memStore{data: map[int]map[string][]byte{0: changelog}}
	return newRunnerFixtureWith(c.t, func(cfg *Config) {
		cfg.Auditor, cfg.Store = audit(store), store
		cfg.Grace = time.Millisecond
		if c.mod != nil {
			c.mod(cfg)
		}
	})
}

// die records the process's death inside an audit: the changelog as it is
// now goes to the next process, and the audit never returns.
func (c *crashRig) die(ctx context.Context, store *memStore) (schemas.AuditReport, error) {
	snap, _ := store.Load(ctx, 0)
	c.deaths <- snap
	<-ctx.Done()
	return schemas.AuditReport{}, ctx.Err()
}

// storedRun reads the run of batch as store holds it, as raw JSON fields:
// what the fakes read of it does not depend on the fields Run has.
func storedRun(store *memStore, batch string) map[string]any {
	snap, _ := store.Load(context.Background(), 0)
	var m map[string]any
	_ = json.Unmarshal(snap[RunKey("billing", batch)], &m)
	return m
}

// A hostile batch whose audit takes the process down while the audits of
// good batches are open does not get them aborted: a lost attempt shared
// with other audits makes each of those runs audited alone afterwards, and
// only a death alone counts toward the limit (review of issue 22, hole 2).
// The hostile audit dies once every other audit begun in its process is
// open (the worst moment for them); a good audit finishes only when it runs
// alone, else the hostile one takes it down with the process.
func TestHostileAuditDoesNotAbortTheBatchesAuditedBesideIt(t *testing.T) {
	goods := []string{"good-1", "good-2", "good-3"}
	rig := &crashRig{t: t, deaths: make(chan map[string][]byte, 1)}
	var mu sync.Mutex
	hostileAudits := 0
	audit := func(store *memStore) auditFunc {
		open := make(chan struct{}, len(goods)) // good audits open in this process
		return func(ctx context.Context, req AuditRequest) (schemas.AuditReport, error) {
			batch := req.Ref[len("sealed-wap-billing-"):]
			alone := storedRun(store, batch)["audit_solo"] == true
			if batch != "hostile" {
				if alone {
					return report(true), nil
				}
				open <- struct{}{}
				<-ctx.Done()
				return schemas.AuditReport{}, ctx.Err()
			}
			mu.Lock()
			hostileAudits++
			mu.Unlock()
			if !alone {
				for range goods {
					select {
					case <-open:
					case <-ctx.Done():
						return schemas.AuditReport{}, ctx.Err()
					}
				}
			}
			return rig.die(ctx, store)
		}
	}
	f := rig.process(map[string][]byte{}, audit)
	for _, b := range append([]string{"hostile"}, goods...) {
		f.land(t, b)
	}
	for death := 1; death <= DefaultPolicy.MaxAuditAttempts; death++ {
		select {
		case changelog := <-rig.deaths:
			f = rig.process(changelog, audit)
		case <-time.After(30 * time.Second):
			t.Fatalf("%d deaths, want %d", death-1, DefaultPolicy.MaxAuditAttempts)
		}
	}
	f.await(t, "hostile", schemas.TypeBatchAborted)
	for _, b := range goods {
		if r, _ := f.run("billing", b); r.State != StatePublished {
			if r.State.Terminal() {
				t.Fatalf("%s is %s (%s: %s), want published: the hostile batch's deaths were counted against it", b, r.State, r.Reason, r.Detail)
			}
			f.await(t, b, schemas.TypeBatchPublished)
		}
	}
	r, _ := f.run("billing", "hostile")
	if r.State != StateAborted || r.Reason != schemas.ReasonAuditCrashed || r.AuditLost != 3 || !r.KeepBranch {
		t.Errorf("hostile: %s (%s: %s), lost %d, keep %v; want aborted audit_crashed after 3 lost attempts, branch kept",
			r.State, r.Reason, r.Detail, r.AuditLost, r.KeepBranch)
	}
	mu.Lock()
	defer mu.Unlock()
	if hostileAudits != 3 {
		t.Errorf("the hostile batch was audited %d times, want 3", hostileAudits)
	}
	select {
	case <-rig.deaths:
		t.Errorf("the process died a 4th time")
	default:
	}
}

// movedLake is fakeLake whose target moved since every batch's snapshot:
// each publish rechecks (audits the sealed commit onto the head) first.
type movedLake struct{ *fakeLake }

func (l movedLake) Published(ctx context.Context, repo, target, sealed string, since time.Time) (Publication, error) {
	p, err := l.fakeLake.Published(ctx, repo, target, sealed, since)
	p.Base = "base"
	return p, err
}

// A recheck (the audit of a passing batch onto the target's newer head,
// inside its publish turn) that takes the process down is counted like an
// audit: after MaxAuditAttempts the run is aborted audit_crashed, branch
// kept, and the target's publish turn goes to the next batch (review of
// issue 22, hole 1: it was retried at every restart, holding the turn).
func TestRecheckThatTakesItsProcessDownEndsTheRun(t *testing.T) {
	rig := &crashRig{t: t, deaths: make(chan map[string][]byte, 1)}
	rig.mod = func(c *Config) { c.Lake = movedLake{c.Lake.(*fakeLake)} }
	var mu sync.Mutex
	rechecks := 0
	audit := func(store *memStore) auditFunc {
		return func(ctx context.Context, req AuditRequest) (schemas.AuditReport, error) {
			if !req.Onto || req.Ref != "sealed-wap-billing-hostile" {
				return report(true), nil
			}
			mu.Lock()
			rechecks++
			mu.Unlock()
			// It dies reading the batch: its attempt is recorded when it
			// first reads (a recheck that reads nothing records none).
			if err := req.BeforeRead(ctx); err != nil {
				return schemas.AuditReport{}, err
			}
			return rig.die(ctx, store)
		}
	}
	f := rig.process(map[string][]byte{}, audit)
	f.land(t, "hostile")
	for death := 1; death <= DefaultPolicy.MaxAuditAttempts; death++ {
		select {
		case changelog := <-rig.deaths:
			f = rig.process(changelog, audit)
		case <-time.After(30 * time.Second):
			t.Fatalf("%d deaths, want %d", death-1, DefaultPolicy.MaxAuditAttempts)
		}
	}
	f.land(t, "next")
	f.await(t, "next", schemas.TypeBatchPublished)
	r, _ := f.run("billing", "hostile")
	if r.State != StateAborted || r.Reason != schemas.ReasonAuditCrashed || r.AuditLost != 3 || !r.KeepBranch || r.CleanupPending {
		t.Errorf("hostile: %s (%s: %s), lost %d, keep %v, cleanup %v; want aborted audit_crashed after 3 lost rechecks, branch kept",
			r.State, r.Reason, r.Detail, r.AuditLost, r.KeepBranch, r.CleanupPending)
	}
	mu.Lock()
	defer mu.Unlock()
	if rechecks != 3 {
		t.Errorf("the hostile batch was rechecked %d times, want 3", rechecks)
	}
	select {
	case <-rig.deaths:
		t.Errorf("the process died a 4th time")
	default:
	}
}
