package audit

import (
	"context"
	"strings"
	"sync"
	"testing"
)

// successorSource is a dirSource that finds a ref's first path after
// another (Successor), counting the calls.
type successorSource struct {
	*dirSource
	mu    sync.Mutex
	calls int
}

func (s *successorSource) After(_ context.Context, _, _, after string) (Object, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	return Object{Path: "zz/next.csv", Checksum: "c", Size: 1}, true, nil
}

func (s *successorSource) asked() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// A publish waiting for its turn prepares its recheck: merge_hazard's
// first path after the table at the batch's foundation, which does not
// depend on the head the recheck will be onto, is asked for then, and the
// recheck in the turn (any head) asks lakeFS nothing for it. Before
// PrepareRecheck the turn asked for it (0.77 calls a batch at 64 in flight,
// docs/benchmarks.md).
func TestPreparedRecheckAsksNothingForThePathBeyondTheTable(t *testing.T) {
	src := &successorSource{dirSource: newDirSource(t)}
	foundation := strings.Repeat("f", 64)
	src.write(t, foundation, "gold/billing/part-0.csv", "SELECT 1 AS id")
	e := newEngine(t, src, "")
	req := Request{Dataset: "billing", Repository: "repo", Ref: strings.Repeat("5", 64), Suite: Suite{Tables: tables[:1]}, Onto: true}
	e.PrepareRecheck(context.Background(), req, foundation)
	if n := src.asked(); n != 1 {
		t.Fatalf("PrepareRecheck asked for the path beyond the table %d times; want once", n)
	}
	for _, head := range []string{strings.Repeat("a", 64), strings.Repeat("b", 64)} {
		r := &run{e: e, req: req, log: e.opts.Logger}
		r.req.BaseRef = head
		objs, err := r.listRead(context.Background(), foundation, "gold/billing/")
		if err != nil {
			t.Fatal(err)
		}
		o, ok, err := r.baseBeyond(context.Background(), foundation, "gold/billing/", objs)
		if err != nil || !ok || o.Path != "zz/next.csv" {
			t.Errorf("onto %s: the path beyond the table %+v, %v, %v; want zz/next.csv", head[:4], o, ok, err)
		}
	}
	if n := src.asked(); n != 1 {
		t.Errorf("the rechecks asked for the path beyond the table again: %d calls in all; want the one PrepareRecheck made", n)
	}
}
