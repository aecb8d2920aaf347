package tests

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// failingRuns signals, once per batch, when a step of its run has failed
// (the run records its last error): the moment lakewap noticed the outage.
type failingRuns struct {
	mu   sync.Mutex
	seen map[string]chan struct{}
}

func newFailingRuns() *failingRuns { return &failingRuns{seen: map[string]chan struct{}{}} }

func (f *failingRuns) ch(batch string) chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seen[batch] == nil {
		f.seen[batch] = make(chan struct{})
	}
	return f.seen[batch]
}

func (f *failingRuns) observe(_, after pipeline.Run) {
	if after.Attempts == 0 {
		return
	}
	ch := f.ch(after.BatchID)
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// landAndWrite lands batch of billing and writes its good rows to the
// branch lakewap opened for it.
func landAndWrite(ctx context.Context, t *testing.T, e *e2e, batch string) {
	t.Helper()
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: batch, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ev, err := e.Watcher.Await(ctx, batch, schemas.TypeBranchReady)
	must(t, err)
	must(t, e.WriteParquet(ctx, ev.(schemas.BranchReady).Branch, "gold/billing_fact/batch="+batch+"/part-0.parquet", harness.GoodBillingRows))
}

// lakeFS goes away after the writes and comes back: the run retries and
// publishes once lakeFS answers again, exactly once.
func TestEndToEndRidesOutLakeFSOutage(t *testing.T) {
	fails := newFailingRuns()
	e := startE2EObserved(t, nil, fails.observe)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const batch = "outage-1"
	landAndWrite(ctx, t, e, batch)

	must(t, e.Stack.StopLakeFS())
	must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: batch, Dataset: "billing", Write: "billing_fact",
		OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	select {
	case <-fails.ch(batch):
	case <-ctx.Done():
		t.Fatal("the run never noticed lakeFS was down")
	}
	must(t, e.Stack.StartLakeFS(ctx))

	final, err := e.Watcher.Await(ctx, batch, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	if final.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("after the outage the batch ended %+v, want published", final)
	}
	if n := publishCommits(t, e.Env, batch); n != 1 {
		t.Errorf("%d publish commits, want 1", n)
	}
}

// An outage longer than runner.retry_budget fails the run, keeps its branch
// and says so on the results topic; main is untouched.
func TestEndToEndLakeFSOutageBeyondBudgetFails(t *testing.T) {
	e := startE2E(t, func(c *config.Config) { c.Runner.RetryBudget = config.Duration(3 * time.Second) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const batch = "outage-2"
	landAndWrite(ctx, t, e, batch)
	head, err := e.Lake.GetCommit(ctx, "lake", "main")
	must(t, err)

	must(t, e.Stack.StopLakeFS())
	must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: batch, Dataset: "billing", Write: "billing_fact",
		OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	final, err := e.Watcher.Await(ctx, batch, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	failed, ok := final.(schemas.BatchFailed)
	if !ok || failed.State != string(pipeline.StateAuditing) || failed.Attempts < 2 || !failed.BranchKept ||
		!strings.Contains(failed.Error, "connection refused") {
		t.Fatalf("got %+v, want BatchFailed from auditing after several attempts, naming the cause, branch kept", final)
	}
	must(t, e.Stack.StartLakeFS(ctx))
	after, err := e.Lake.GetCommit(ctx, "lake", "main")
	must(t, err)
	if after.ID != head.ID {
		t.Errorf("main moved from %s to %s", head.ID, after.ID)
	}
	if _, err := e.Lake.GetCommit(ctx, "lake", failed.Branch); err != nil {
		t.Errorf("failed batch's branch %s is gone: %v", failed.Branch, err)
	}
}
