package audit

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// passingByRef passes every audit and counts them by ref.
type passingByRef struct {
	mu   sync.Mutex
	runs map[string]int
}

func (c *passingByRef) Run(_ context.Context, req Request) (schemas.AuditReport, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.runs[req.Ref]++
	return schemas.AuditReport{Dataset: req.Dataset, Ref: req.Ref, Passed: true}, nil
}

func (c *passingByRef) count(ref string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[ref]
}

// TestHookCallersDoNotPushLakewapsReportsOut (review 60): the audit
// service's cache of passing reports answers the pre-merge hook's call for
// lakewap's own merge of a sealed commit it has just audited (or rechecked
// onto the head), so that the merge, inside the target's publish turn,
// waits for no audit. The hook cached the passing reports of other callers'
// merges there too, keyed by the batch time the call's event_time gives,
// so a caller who may have merges in progress into the target (a
// simplified-ACL Writer writes the commit record) pushed lakewap's reports
// out with 4,097 calls (or 512 of reports at audit.max_report_bytes), each
// another event_time, and every publish's hook call audited the batch
// again in the turn (and answered 500 when the reserved slots were taken).
// Other callers' reports now have a cache of their own.
func TestHookCallersDoNotPushLakewapsReportsOut(t *testing.T) {
	engine := &passingByRef{runs: map[string]int{}}
	s, err := NewService(ServiceOptions{Engine: engine, Concurrency: 2, Budget: time.Minute,
		Datasets: map[string]Dataset{"billing": {Repository: "lake", Target: "main"}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sealed, onto, head, callers := strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("c", 64), strings.Repeat("d", 64)
	batchTime := time.Unix(1_700_000_000, 0)
	// The runner audits one batch on the head it branched from, and
	// rechecks another onto the head.
	if rep, err := s.Audit(ctx, Request{Dataset: "billing", Repository: "lake", Ref: sealed, BaseRef: head, BatchTime: batchTime}); err != nil || !rep.Passed {
		t.Fatalf("audit: %v, %v", rep.Passed, err)
	}
	if rep, err := s.Recheck(ctx, Request{Dataset: "billing", Repository: "lake", Ref: onto, BaseRef: head, BatchTime: batchTime}); err != nil || !rep.Passed {
		t.Fatalf("recheck: %v, %v", rep.Passed, err)
	}
	for i := range reportCacheSize + 1 {
		at := batchTime.Add(time.Duration(i+1) * time.Second)
		if _, err := s.Run(ctx, Request{Dataset: "billing", Repository: "lake", Ref: callers, BaseRef: head, BatchTime: at}); err != nil {
			t.Fatal(err)
		}
	}
	audited, rechecked := engine.count(sealed), engine.count(onto)
	// lakewap's own merges: of the audited batch onto the unmoved head,
	// and of the rechecked one (its merge commit, known by its parents).
	if _, err := s.Run(ctx, Request{Dataset: "billing", Repository: "lake", Ref: sealed, BaseRef: head, BatchTime: batchTime, Own: true}); err != nil {
		t.Fatal(err)
	}
	merge := strings.Repeat("e", 64)
	if _, err := s.Run(ctx, Request{Dataset: "billing", Repository: "lake", Ref: merge, BaseRef: head, BatchTime: batchTime, Own: true,
		MergeOf: [2]string{head, onto}}); err != nil {
		t.Fatal(err)
	}
	if n := engine.count(sealed) - audited; n != 0 {
		t.Errorf("after %d other callers' audits, the hook audited lakewap's own merge of an audited batch %d more times; want its report from the cache",
			reportCacheSize+1, n)
	}
	if n := engine.count(merge) + engine.count(onto) - rechecked; n != 0 {
		t.Errorf("after %d other callers' audits, the hook audited lakewap's own merge of a rechecked batch %d more times; want its report from the cache",
			reportCacheSize+1, n)
	}
	// Other callers' reports still answer their own calls again.
	before := engine.count(callers)
	last := batchTime.Add(time.Duration(reportCacheSize+1) * time.Second)
	if _, err := s.Run(ctx, Request{Dataset: "billing", Repository: "lake", Ref: callers, BaseRef: head, BatchTime: last}); err != nil {
		t.Fatal(err)
	}
	if n := engine.count(callers) - before; n != 0 {
		t.Errorf("a caller's call asked again was audited %d more times; want its report from the cache", n)
	}
}
