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

// storedState is one put of a run to the changelog: its state and whether
// an audit attempt of it was open.
type storedState struct {
	State string `json:"state"`
	Open  bool   `json:"audit_open"`
}

// puts records the run of batch as each put to the store left it.
type puts struct {
	mu  sync.Mutex
	all []storedState
}

// begun counts the recheck attempts stored as begun: puts of the run
// publishing that open an attempt (the put before had none open).
func (p *puts) begun() (n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	open := false
	for _, s := range p.all {
		if s.State == string(StatePublishing) && s.Open && !open {
			n++
		}
		open = s.Open
	}
	return n
}

// movedFixture is a runner whose target moved since every batch's
// snapshot (each publish rechecks), with audit as its auditor and the
// puts of batch's run recorded.
func movedFixture(t *testing.T, batch string, audit auditFunc) (*runnerFixture, *puts) {
	rec := &puts{}
	f := newRunnerFixtureWith(t, func(cfg *Config) {
		cfg.Lake = movedLake{cfg.Lake.(*fakeLake)}
		cfg.Auditor = audit
		s := cfg.Store.(*memStore)
		s.onPut = func() { // called with s.mu held
			var st storedState
			if json.Unmarshal(s.data[0][RunKey("billing", batch)], &st) == nil && st.State != "" {
				rec.mu.Lock()
				rec.all = append(rec.all, st)
				rec.mu.Unlock()
			}
		}
	})
	return f, rec
}

// A recheck the auditor answers without reading a byte of the batch or
// the table (the engine's memo and statistics answer it) records no
// attempt: no AuditBegun and no AuditEnded go to the changelog for it, and
// the batch publishes (issue 21: two changelog round trips in the serial
// publish turn for nothing that could take the process down).
func TestRecheckAnsweredWithoutReadingRecordsNoAttempt(t *testing.T) {
	var mu sync.Mutex
	rechecks := 0
	f, rec := movedFixture(t, "b1", func(ctx context.Context, req AuditRequest) (schemas.AuditReport, error) {
		if req.Onto {
			mu.Lock()
			rechecks++
			mu.Unlock()
		}
		return report(true), nil
	})
	f.land(t, "b1")
	f.await(t, "b1", schemas.TypeBatchPublished)
	mu.Lock()
	defer mu.Unlock()
	if rechecks != 1 {
		t.Fatalf("%d rechecks, want 1: the target moved", rechecks)
	}
	if n := rec.begun(); n != 0 {
		t.Errorf("%d puts of the run publishing with an attempt open, want none: a recheck that reads nothing records no attempt", n)
	}
}

// A recheck that reads the batch's bytes (the auditor calls BeforeRead)
// has its attempt recorded as before issue 21's change, around the read:
// AuditBegun is stored and the audit gate held when BeforeRead returns,
// not before it; a second call (a bisection probe) records nothing more;
// AuditEnded is stored after the recheck, before the merge.
func TestRecheckThatReadsRecordsItsAttemptAroundTheRead(t *testing.T) {
	var (
		r      *Runner
		ready  = make(chan struct{})
		key    = RunKey("billing", "b1")
		mu     sync.Mutex
		faults []string
	)
	fault := func(s string) { mu.Lock(); faults = append(faults, s); mu.Unlock() }
	held := func() bool {
		r.gate.mu.Lock()
		defer r.gate.mu.Unlock()
		return r.gate.shared[key] || r.gate.solo == key
	}
	var rec *puts
	f, rec := movedFixture(t, "b1", func(ctx context.Context, req AuditRequest) (schemas.AuditReport, error) {
		if !req.Onto {
			return report(true), nil
		}
		<-ready
		if req.BeforeRead == nil {
			fault("the recheck has no BeforeRead")
			return report(true), nil
		}
		if n := rec.begun(); n != 0 || held() {
			fault("attempt begun before the read")
		}
		for range 2 { // the recheck, then a probe of the same publish
			if err := req.BeforeRead(ctx); err != nil {
				return schemas.AuditReport{}, err
			}
		}
		if n := rec.begun(); n != 1 || !held() {
			fault("after BeforeRead: the attempt is not stored as begun once with the gate held")
		}
		return report(true), nil
	})
	r = f.r
	close(ready)
	f.land(t, "b1")
	f.await(t, "b1", schemas.TypeBatchPublished)
	mu.Lock()
	defer mu.Unlock()
	for _, s := range faults {
		t.Error(s)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var seq []storedState
	for _, s := range rec.all {
		if s.State == string(StatePublishing) || s.State == string(StatePublished) {
			seq = append(seq, s)
		}
	}
	// ... publishing (begun) ..., publishing (ended), ... published.
	var opened, closed int
	for i := 1; i < len(seq); i++ {
		switch {
		case seq[i].Open && !seq[i-1].Open:
			opened++
		case !seq[i].Open && seq[i-1].Open && seq[i].State == string(StatePublishing):
			closed++
		}
	}
	if opened != 1 || closed != 1 || seq[len(seq)-1].State != string(StatePublished) || seq[len(seq)-1].Open {
		t.Fatalf("puts of the run %+v: want the attempt begun once, then ended, then the run published", seq)
	}
	if held() {
		t.Error("the gate is still held after the publish")
	}
}

// A suspect run (it lost a recheck attempt beside another audit) rechecks
// alone once it reads: its AuditBegun is stored Solo, so a death in it is
// its own. The first process dies in the recheck of "hostile" (after its
// read) while the audit of "other" is open.
func TestSuspectRecheckReadsAlone(t *testing.T) {
	rig := &crashRig{t: t, deaths: make(chan map[string][]byte, 1)}
	rig.mod = func(c *Config) { c.Lake = movedLake{c.Lake.(*fakeLake)} }
	var mu sync.Mutex
	var solo []bool // audit_solo of hostile's run after each read of its recheck
	audit := func(store *memStore) auditFunc {
		open := make(chan struct{}, 1)
		return func(ctx context.Context, req AuditRequest) (schemas.AuditReport, error) {
			batch := req.Ref[len("sealed-wap-billing-"):]
			switch {
			case batch == "other" && storedRun(store, batch)["audit_lost"] == nil:
				open <- struct{}{} // open beside hostile's recheck until the process dies
				<-ctx.Done()
				return schemas.AuditReport{}, ctx.Err()
			case batch != "hostile" || !req.Onto:
				return report(true), nil
			}
			first := storedRun(store, batch)["audit_lost"] == nil
			if first {
				select {
				case <-open:
				case <-ctx.Done():
					return schemas.AuditReport{}, ctx.Err()
				}
			}
			if err := req.BeforeRead(ctx); err != nil {
				return schemas.AuditReport{}, err
			}
			mu.Lock()
			solo = append(solo, storedRun(store, batch)["audit_solo"] == true)
			mu.Unlock()
			if first {
				return rig.die(ctx, store)
			}
			return report(true), nil
		}
	}
	f := rig.process(map[string][]byte{}, audit)
	f.land(t, "other")
	f.land(t, "hostile")
	select {
	case changelog := <-rig.deaths:
		f = rig.process(changelog, audit)
	case <-time.After(30 * time.Second):
		t.Fatal("the first process never died")
	}
	for _, b := range []string{"hostile", "other"} {
		if r, _ := f.run("billing", b); r.State != StatePublished {
			f.await(t, b, schemas.TypeBatchPublished)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(solo) != 2 || solo[0] || !solo[1] {
		t.Errorf("hostile's recheck attempts stored solo: %v, want [false true]: a suspect run's recheck reads alone", solo)
	}
}
