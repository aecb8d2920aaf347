package audit

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// TestReportCache: only passing reports of commit ids are kept, by
// repository, dataset, commit, base commit and batch time; the oldest entry
// goes first.
func TestReportCache(t *testing.T) {
	c := newReportCache(2)
	k := func(ref string) reportKey { return reportKey{"lake", "billing", ref, "base1", 1, ""} }
	c.put(k("a"), schemas.AuditReport{Ref: "a", Passed: true})
	c.put(k("b"), schemas.AuditReport{Ref: "b", Passed: true})
	c.put(k("c"), schemas.AuditReport{Ref: "c", Passed: true})
	if _, ok := c.get(k("a")); ok {
		t.Errorf("oldest entry kept past the bound")
	}
	if r, ok := c.get(k("c")); !ok || r.Ref != "c" {
		t.Errorf("newest entry: %+v %v", r, ok)
	}
	if _, ok := c.get(reportKey{"lake", "billing", "c", "base2", 1, ""}); ok {
		t.Errorf("a report against one base commit answered for another")
	}
	if _, ok := c.get(reportKey{"lake", "billing", "c", "base1", 2, ""}); ok {
		t.Errorf("a report for one batch time answered for another")
	}
	for ref, want := range map[string]bool{
		strings.Repeat("ab", 32): true, "main": false, "wap-billing-b1": false, strings.Repeat("AB", 32): false,
		strings.Repeat("0", 64): true, strings.Repeat("9", 65): false, strings.Repeat("f", 63): false,
		// lakeFS's ids are 64 hex digits (SHA-256); a shorter run of hex
		// digits is a branch or tag name, or a prefix, which lakeFS resolves
		// to whatever it names when read (review 54: 40 to 63 were taken).
		strings.Repeat("0", 40): false, strings.Repeat("f", 39): false,
		strings.Repeat("a", 39) + "g": false, strings.Repeat("a", 39) + "/": false, strings.Repeat("a", 39) + ":": false, "": false,
	} {
		if got := IsCommitID(ref); got != want {
			t.Errorf("IsCommitID(%q) = %v", ref, got)
		}
	}
}

// blockingRunner is an audit engine whose audits wait for release.
type blockingRunner struct {
	mu      sync.Mutex
	runs    int
	release chan struct{}
}

func (b *blockingRunner) Run(ctx context.Context, req Request) (schemas.AuditReport, error) {
	b.mu.Lock()
	b.runs++
	b.mu.Unlock()
	select {
	case <-b.release:
	case <-ctx.Done():
		return schemas.AuditReport{}, ctx.Err()
	}
	return schemas.AuditReport{Dataset: req.Dataset, Ref: req.Ref, Passed: true}, nil
}

// Hook audits are bounded in number, shared by calls for the same key,
// and go on after a call gave up: the next call gets their report.
func TestHookAuditsBoundedSharedAndDetached(t *testing.T) {
	b := &blockingRunner{release: make(chan struct{})}
	a, err := NewService(ServiceOptions{Engine: b, Concurrency: 1, Budget: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	sealed, other := strings.Repeat("a", 64), strings.Repeat("b", 64)
	req := func(ref string) Request {
		return Request{Dataset: "billing", Repository: "lake", Ref: ref, BaseRef: strings.Repeat("c", 64), BatchTime: time.Unix(1, 0)}
	}
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := a.Run(short, req(sealed)); err == nil || !strings.Contains(err.Error(), "still running") {
		t.Fatalf("call that outlived its timeout: %v", err)
	}
	if _, err := a.Run(context.Background(), req(other)); err == nil || !strings.Contains(err.Error(), "webhook_concurrency") {
		t.Errorf("second audit beyond the bound: %v", err)
	}
	got := make(chan error, 1)
	go func() { _, err := a.Run(context.Background(), req(sealed)); got <- err }() // joins the running audit
	close(b.release)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if rep, err := a.Run(context.Background(), req(sealed)); err != nil || !rep.Passed {
		t.Errorf("after the audit finished: %+v %v", rep, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.runs != 1 {
		t.Errorf("%d audits ran, want 1 (shared, then cached)", b.runs)
	}
}

// passingRunner passes every audit and counts them.
type passingRunner struct{ runs int }

func (p *passingRunner) Run(_ context.Context, req Request) (schemas.AuditReport, error) {
	p.runs++
	return schemas.AuditReport{Dataset: req.Dataset, Ref: req.Ref, Passed: true, Checks: []schemas.CheckResult{{Name: req.Suite.Checks[0].Name}}}, nil
}

// The runner's audit uses the configured suite, pins its base to a
// commit, and its passing report answers the hook for the same commit,
// base commit and batch time; a base that cannot be resolved is an
// infrastructure error (retried), and only configured datasets guard.
func TestServiceAuditFeedsTheHook(t *testing.T) {
	eng := &passingRunner{}
	base := strings.Repeat("b", 64)
	heads := map[string]string{"main": base}
	suite := Suite{Checks: []Check{{Name: "configured"}}}
	s, err := NewService(ServiceOptions{Engine: eng, Concurrency: 1, Budget: time.Minute,
		Datasets: map[string]Dataset{"billing": {Repository: "lake", Target: "main", Suite: suite},
			"audit": {Repository: "lake", Target: "main", Suite: suite}, "other": {Repository: "lake2", Target: "main"}},
		Head: func(_ context.Context, repo, ref string) (string, error) {
			if id, ok := heads[ref]; ok {
				return id, nil
			}
			return "", errors.New("no such ref")
		}})
	if err != nil {
		t.Fatal(err)
	}
	sealed, at := strings.Repeat("a", 64), time.Unix(100, 0)
	rep, err := s.Audit(context.Background(), Request{Dataset: "billing", Repository: "lake", Ref: sealed, BaseRef: "main", BatchTime: at,
		Suite: Suite{Checks: []Check{{Name: "from the caller"}}}})
	if err != nil || rep.Checks[0].Name != "configured" {
		t.Fatalf("runner audit: %+v %v (want the configured suite)", rep, err)
	}
	hook := Request{Dataset: "billing", Repository: "lake", Ref: sealed, BaseRef: base, BatchTime: at, Suite: suite}
	if _, err := s.Run(context.Background(), hook); err != nil || eng.runs != 1 {
		t.Errorf("hook after the runner's audit: %v, %d audits ran (want 1: answered from the cache)", err, eng.runs)
	}
	hook.BatchTime = at.Add(time.Second)
	if _, err := s.Run(context.Background(), hook); err != nil || eng.runs != 2 {
		t.Errorf("hook for another batch time: %v, %d audits ran (want 2)", err, eng.runs)
	}
	if _, err := s.Audit(context.Background(), Request{Dataset: "billing", Repository: "lake", Ref: sealed, BaseRef: "gone", BatchTime: at}); !errors.Is(err, ErrInfrastructure) {
		t.Errorf("unresolvable base: %v, want ErrInfrastructure", err)
	}
	if _, err := s.Audit(context.Background(), Request{Dataset: "nope", Ref: sealed}); err == nil || errors.Is(err, ErrInfrastructure) {
		t.Errorf("unknown dataset: %v, want a permanent error", err)
	}
	var names []string
	for _, g := range s.Guarding("lake", "main") {
		names = append(names, g.Dataset)
	}
	if strings.Join(names, ",") != "audit,billing" {
		t.Errorf("guards of lake/main: %v, want audit,billing in order", names)
	}
	if _, err := NewService(ServiceOptions{Engine: eng, Budget: time.Minute}); err == nil {
		t.Error("a service without webhook concurrency started")
	}
}

// verdictRunner passes or fails every audit, as told.
type verdictRunner struct {
	runs int
	pass bool
}

func (v *verdictRunner) Run(_ context.Context, req Request) (schemas.AuditReport, error) {
	v.runs++
	return schemas.AuditReport{Dataset: req.Dataset, Ref: req.Ref, Passed: v.pass}, nil
}

// A passing recheck of a sealed commit onto a head answers the pre-merge
// hook's audit of lakewap's own merge commit of that commit onto that head
// (the same table), for the same batch time; nothing else does: a merge
// not lakewap's own, another head or source, another batch time, or a
// recheck that failed makes the hook audit.
func TestRecheckAnswersTheHookForItsOwnMerge(t *testing.T) {
	sealed, head, other, merge := strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("c", 64), strings.Repeat("d", 64)
	at := time.Unix(100, 0)
	suite := Suite{Checks: []Check{{Name: "configured"}}}
	for _, tt := range []struct {
		name      string
		pass      bool
		own       bool
		mergeOf   [2]string
		batchTime time.Time
		hookRuns  int // audits the hook's call ran
	}{
		{"own merge of the rechecked commit onto its head", true, true, [2]string{head, sealed}, at, 0},
		{"not lakewap's merge", true, false, [2]string{head, sealed}, at, 1},
		{"another head", true, true, [2]string{other, sealed}, at, 1},
		{"another source", true, true, [2]string{head, other}, at, 1},
		{"another batch time", true, true, [2]string{head, sealed}, at.Add(time.Second), 1},
		{"the recheck failed", false, true, [2]string{head, sealed}, at, 1},
	} {
		eng := &verdictRunner{pass: tt.pass}
		s, err := NewService(ServiceOptions{Engine: eng, Concurrency: 1, Budget: time.Minute,
			Datasets: map[string]Dataset{"billing": {Repository: "lake", Target: "main", Suite: suite}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Recheck(context.Background(), Request{Dataset: "billing", Repository: "lake", Ref: sealed, BaseRef: head, BatchTime: at}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Run(context.Background(), Request{Dataset: "billing", Repository: "lake", Ref: merge, BaseRef: head, BatchTime: tt.batchTime,
			Suite: suite, Own: tt.own, MergeOf: tt.mergeOf}); err != nil {
			t.Fatal(err)
		}
		if got := eng.runs - 1; got != tt.hookRuns {
			t.Errorf("%s: the hook's call ran %d audits, want %d", tt.name, got, tt.hookRuns)
		}
	}
}
