package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	. "github.com/lakewap/lakewap/pipeline"

	"github.com/lakewap/lakewap/schemas"
)

// inputCounter reads lakewap_inputs_total of runner r.
type inputCounter struct{ r *Runner }

// total sums the counts of outcome over every event type.
func (c *inputCounter) total(outcome string) int {
	ch := make(chan prometheus.Metric, 64)
	go func() { c.r.metrics.inputs.Collect(ch); close(ch) }()
	n := 0
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			panic(err)
		}
		for _, l := range d.GetLabel() {
			if l.GetName() == "outcome" && l.GetValue() == outcome {
				n += int(d.GetCounter().GetValue())
			}
		}
	}
	return n
}

// get is the count of "type/outcome".
func (c *inputCounter) get(k string) int {
	typ, outcome, _ := strings.Cut(k, "/")
	return int(testutil.ToFloat64(c.r.metrics.inputs.WithLabelValues(typ, outcome)))
}

func (f *runnerFixture) handle(t *testing.T, ev schemas.Event) error {
	t.Helper()
	return f.r.Handle(context.Background(), 0, ev, schemas.TraceContext{})
}

func (f *runnerFixture) run(dataset, batch string) (Run, bool) {
	for _, r := range f.r.Runs() {
		if r.Dataset == dataset && r.BatchID == batch {
			return r, true
		}
	}
	return Run{}, false
}

// A WriteComplete naming a write its batch does not expect is refused: dead
// letter (a Refusal naming the reason), counted, and never stored, so
// thousands of names cannot grow the run. Before the batch lands, at most
// MaxExpectedWrites early writes are kept, and those the batch does not
// expect are dropped (and counted) when it lands.
func TestUnexpectedWritesAreRefused(t *testing.T) {
	f := newRunnerFixtureWith(t, nil)
	count := inputCounter{f.r}
	now := time.Now().UTC().Truncate(time.Millisecond)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.handle(t, schemas.BatchLanded{BatchID: "u1", Dataset: "billing", ExpectedWrites: []string{"fact"}, OccurredAt: now}))
	f.await(t, "u1", schemas.TypeBranchReady)
	for i := range 50 {
		err := f.handle(t, schemas.WriteComplete{BatchID: "u1", Dataset: "billing", Write: fmt.Sprintf("junk_%d", i), OccurredAt: now})
		var ref *Refusal
		if !errors.As(err, &ref) || ref.Reason != RefusedUnexpectedWrite {
			t.Fatalf("unexpected write: %v, want a Refusal %s", err, RefusedUnexpectedWrite)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf(`write "junk_%d" is not one of the 1 expected writes`, i)) {
			t.Errorf("refusal says %q", err)
		}
	}
	stored, _ := f.store.Load(context.Background(), 0)
	if strings.Contains(string(stored["billing/u1"]), "junk_") {
		t.Errorf("refused writes were stored: %s", stored["billing/u1"])
	}
	if r, _ := f.run("billing", "u1"); len(r.Writes) != 0 {
		t.Errorf("run writes %v, want none", r.Writes)
	}
	if got := count.get("WriteComplete/applied") + count.get("WriteComplete/duplicate"); got != 0 {
		t.Errorf("%d refused writes counted as applied or duplicates", got)
	}
	must(f.handle(t, schemas.WriteComplete{BatchID: "u1", Dataset: "billing", Write: "fact", OccurredAt: now}))
	f.await(t, "u1", schemas.TypeBatchPublished)
	// Again, after the run is over: still refused, not a silent no-op.
	if err := f.handle(t, schemas.WriteComplete{BatchID: "u1", Dataset: "billing", Write: "junk", OccurredAt: now}); !errors.As(err, new(*Refusal)) {
		t.Errorf("unexpected write after publish: %v, want a dead letter", err)
	}
	// The expected one again: a duplicate.
	must(f.handle(t, schemas.WriteComplete{BatchID: "u1", Dataset: "billing", Write: "fact", OccurredAt: now}))
	if got := count.get("WriteComplete/duplicate"); got != 1 {
		t.Errorf("%d duplicates counted, want 1", got)
	}

	// Early writes: at most MaxExpectedWrites are kept for a batch that has
	// not landed.
	for i := range schemas.MaxExpectedWrites {
		must(f.handle(t, schemas.WriteComplete{BatchID: "early", Dataset: "billing", Write: fmt.Sprintf("w%d", i), OccurredAt: now}))
	}
	err := f.handle(t, schemas.WriteComplete{BatchID: "early", Dataset: "billing", Write: "one_more", OccurredAt: now})
	var ref *Refusal
	if !errors.As(err, &ref) || ref.Reason != RefusedUnexpectedWrite {
		t.Fatalf("write %d before landing: %v, want refused", schemas.MaxExpectedWrites+1, err)
	}
	must(f.handle(t, schemas.BatchLanded{BatchID: "early", Dataset: "billing", ExpectedWrites: []string{"w0", "fact"}, OccurredAt: now}))
	f.await(t, "early", schemas.TypeBranchReady)
	if r, _ := f.run("billing", "early"); len(r.Writes) != 1 || r.Writes["w0"].IsZero() {
		t.Errorf("early run writes %v, want only w0", r.Writes)
	}
	if got := count.get("WriteComplete/dropped_unexpected"); got != schemas.MaxExpectedWrites-1 {
		t.Errorf("%d early writes dropped, want %d", got, schemas.MaxExpectedWrites-1)
	}
}

// failingReport is a failed audit whose sample rows are far over any budget.
func failingReport(checks, rowBytes int) schemas.AuditReport {
	rep := schemas.AuditReport{Dataset: "billing"}
	for i := range checks {
		c := schemas.CheckResult{Name: fmt.Sprintf("check_%d", i), Kind: "not_null", Severity: "error", Status: schemas.StatusFail}
		for j := range 5 {
			c.SampleRows = append(c.SampleRows, fmt.Sprintf(`{"row":%d,"blob":"%s"}`, j, strings.Repeat("x", rowBytes)))
		}
		rep.Checks = append(rep.Checks, c)
	}
	return rep
}

// A report too big for the run record loses its sample rows and the batch
// still ends as it should (audit_failed), with the record within budget.
// A run that is over budget even then is ended with BatchFailed.
func TestRunRecordStaysWithinBudget(t *testing.T) {
	t.Run("report trimmed", func(t *testing.T) {
		f := newRunnerFixtureWith(t, func(c *Config) {
			c.Auditor = auditFunc(func(context.Context, AuditRequest) (schemas.AuditReport, error) {
				return failingReport(20, 20<<10), nil // 2 MB of samples, stored three times
			})
		})
		f.land(t, "big")
		f.await(t, "big", schemas.TypeBatchAborted)
		f.notes.mu.Lock()
		last := f.notes.events[len(f.notes.events)-1].(schemas.BatchAborted)
		f.notes.mu.Unlock()
		if last.Reason != schemas.ReasonAuditFailed || last.Report == nil || len(last.Report.Checks) != 20 {
			t.Fatalf("BatchAborted %+v, want audit_failed with the 20 checks", last)
		}
		for _, c := range last.Report.Checks {
			if len(c.SampleRows) != 0 {
				t.Fatalf("check %s kept %d sample rows", c.Name, len(c.SampleRows))
			}
		}
		f.store.mu.Lock()
		defer f.store.mu.Unlock()
		if f.store.largest > DefaultPolicy.MaxRunBytes {
			t.Errorf("largest stored run %d bytes, budget %d", f.store.largest, DefaultPolicy.MaxRunBytes)
		}
	})
	t.Run("run ended", func(t *testing.T) {
		const budget = 3000
		f := newRunnerFixtureWith(t, func(c *Config) { c.Policy.MaxRunBytes = budget })
		now := time.Now().UTC().Truncate(time.Millisecond)
		writes := make([]string, 40)
		for i := range writes {
			writes[i] = fmt.Sprintf("%s_%d", strings.Repeat("w", 100), i)
		}
		err := f.handle(t, schemas.BatchLanded{BatchID: "huge", Dataset: "billing", ExpectedWrites: writes, OccurredAt: now})
		var ref *Refusal
		if !errors.As(err, &ref) || ref.Reason != RefusedOverBudget {
			t.Fatalf("over-budget BatchLanded: %v, want a Refusal %s", err, RefusedOverBudget)
		}
		f.await(t, "huge", schemas.TypeBatchFailed)
		f.notes.mu.Lock()
		last := f.notes.events[len(f.notes.events)-1].(schemas.BatchFailed)
		f.notes.mu.Unlock()
		if !strings.Contains(last.Error, "exceeds the budget of 3000 bytes") {
			t.Errorf("BatchFailed error %q", last.Error)
		}
		if r, ok := f.run("billing", "huge"); !ok || r.State != StateFailed {
			t.Errorf("run %+v, want failed", r)
		}
		// The partition moves on: a good batch after it publishes.
		f.land(t, "after")
		f.await(t, "after", schemas.TypeBatchPublished)
		f.store.mu.Lock()
		defer f.store.mu.Unlock()
		if f.store.largest > budget {
			t.Errorf("largest stored run %d bytes, budget %d", f.store.largest, budget)
		}
	})
}

// Batch ids are unique per dataset only: the same id in two datasets makes
// two runs, and each event acts on its own dataset's run.
func TestSameBatchIDInTwoDatasets(t *testing.T) {
	f := newRunnerFixtureWith(t, func(c *Config) {
		c.Datasets = func(n string) (DatasetSpec, bool) {
			return DatasetSpec{Repository: "repo-" + n, Target: "main", WriteTimeout: time.Hour}, n == "billing" || n == "orders"
		}
	})
	now := time.Now().UTC().Truncate(time.Millisecond)
	for _, ds := range []string{"billing", "orders"} {
		if err := f.handle(t, schemas.BatchLanded{BatchID: "x1", Dataset: ds, ExpectedWrites: []string{"fact"}, OccurredAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.handle(t, schemas.WriteComplete{BatchID: "x1", Dataset: "billing", Write: "fact", OccurredAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := f.handle(t, schemas.BatchCancelled{BatchID: "x1", Dataset: "orders", Reason: "rerun", OccurredAt: now}); err != nil {
		t.Fatal(err)
	}
	outcomes := map[string]schemas.Event{}
	ids := map[string]bool{}
	events := 0
	timeout := time.After(30 * time.Second)
	for len(outcomes) < 2 {
		select {
		case ev := <-f.notes.ch:
			events++
			var ds string
			switch e := ev.(type) {
			case schemas.BatchPublished:
				ds = e.Dataset
				ids[e.EventID] = true
			case schemas.BatchAborted:
				ds = e.Dataset
				ids[e.EventID] = true
			case schemas.BranchReady:
				ids[e.EventID] = true
				continue
			default:
				continue
			}
			outcomes[ds] = ev
		case <-timeout:
			t.Fatalf("outcomes %v", outcomes)
		}
	}
	if outcomes["billing"].EventType() != schemas.TypeBatchPublished || outcomes["orders"].EventType() != schemas.TypeBatchAborted {
		t.Errorf("billing ended %s, orders %s; want published and aborted", outcomes["billing"].EventType(), outcomes["orders"].EventType())
	}
	if len(ids) != events {
		t.Errorf("%d distinct event ids in %d events", len(ids), events)
	}
	got, _ := f.store.Load(context.Background(), 0)
	if got["billing/x1"] == nil || got["orders/x1"] == nil {
		t.Errorf("store keys %v, want billing/x1 and orders/x1", keys(got))
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Runs stored under the batch id alone (before runs were keyed by dataset)
// are moved to their (dataset, batch id) key when the partition is restored.
func TestRestoreReKeysOldRuns(t *testing.T) {
	store := &memStore{data: map[int]map[string][]byte{}}
	old := Run{BatchID: "legacy", Dataset: "billing", State: StateAborted, Reason: "cancelled", StateSince: time.Now()}
	b, _ := json.Marshal(old)
	_ = store.Put(context.Background(), 0, "legacy", b)
	f := newRunnerFixtureWith(t, func(c *Config) { c.Store = store })
	f.store = store
	got, _ := store.Load(context.Background(), 0)
	if got["legacy"] != nil || got["billing/legacy"] == nil {
		t.Errorf("store keys after restore %v, want billing/legacy only", keys(got))
	}
	if _, ok := f.run("billing", "legacy"); !ok {
		t.Error("legacy run not restored")
	}
}

// An audit that could not run for reasons of the machine (the adapter wraps
// ErrTransient) is retried within the retry budget and then fails the batch;
// it never aborts it as audit_failed.
func TestAuditInfrastructureErrorsAreRetried(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	oom := fmt.Errorf("%w: check unique: Out of Memory Error", ErrTransient)
	f := newRunnerFixtureWith(t, func(c *Config) {
		c.Auditor = auditFunc(func(_ context.Context, req AuditRequest) (schemas.AuditReport, error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if strings.HasSuffix(req.Ref, "flaky") && calls > 2 {
				return report(true), nil
			}
			return schemas.AuditReport{}, oom
		})
		c.Policy.RetryBudget = 200 * time.Millisecond
	})
	f.land(t, "flaky")
	f.await(t, "flaky", schemas.TypeBatchPublished)
	f.land(t, "oom")
	f.await(t, "oom", schemas.TypeBatchFailed)
	r, _ := f.run("billing", "oom")
	if r.State != StateFailed || r.FailedStep != StepAudit || r.Attempts < 2 {
		t.Errorf("run %s failed step %s after %d attempts; want failed in audit after retries", r.State, r.FailedStep, r.Attempts)
	}
}

// Through the runner: while the consumer says the partition may still hold
// input from before the run's deadline, a run past its deadline waits; the
// late-handled write that happened before the deadline publishes the batch.
func TestRunnerWaitsForLaggingPartition(t *testing.T) {
	var behind sync.Map
	behind.Store(0, true)
	var asked sync.Map // deadlines the runner asked about
	f := newRunnerFixtureWith(t, func(c *Config) { c.Policy.LagRecheck = 20 * time.Millisecond })
	ctx := context.Background()
	// The consumer hands the probe over when it assigns the partition.
	if err := f.r.Assigned(ctx, 0, func(at time.Time) bool {
		asked.Store(at.UnixMilli(), true)
		v, _ := behind.Load(0)
		return v == true
	}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	deadline := now.Add(300 * time.Millisecond)
	if err := f.r.Handle(ctx, 0, schemas.BatchLanded{BatchID: "lagged", Dataset: "billing", ExpectedWrites: []string{"fact"},
		WriteDeadline: &deadline, OccurredAt: now}, schemas.TraceContext{}); err != nil {
		t.Fatal(err)
	}
	f.await(t, "lagged", schemas.TypeBranchReady)
	// Well past the deadline, with several rechecks: still waiting.
	for time.Now().Before(deadline.Add(200 * time.Millisecond)) {
		time.Sleep(20 * time.Millisecond)
	}
	if r, _ := f.run("billing", "lagged"); r.State != StateAwaitingWrites {
		t.Fatalf("run %s (%s) while the partition lags, want awaiting writes", r.State, r.Detail)
	}
	if _, ok := asked.Load(deadline.UnixMilli()); !ok {
		t.Error("the runner did not ask whether input from before the run's deadline may be unread")
	}
	if err := f.r.Handle(ctx, 0, schemas.WriteComplete{BatchID: "lagged", Dataset: "billing", Write: "fact",
		OccurredAt: deadline.Add(-100 * time.Millisecond)}, schemas.TraceContext{}); err != nil {
		t.Fatal(err)
	}
	f.await(t, "lagged", schemas.TypeBatchPublished)

	// Caught up: a run past its deadline is aborted.
	behind.Store(0, false)
	d2 := time.Now().UTC().Truncate(time.Millisecond).Add(100 * time.Millisecond)
	if err := f.r.Handle(ctx, 0, schemas.BatchLanded{BatchID: "on-time", Dataset: "billing", ExpectedWrites: []string{"fact"},
		WriteDeadline: &d2, OccurredAt: now}, schemas.TraceContext{}); err != nil {
		t.Fatal(err)
	}
	f.await(t, "on-time", schemas.TypeBatchAborted)
}

// At runner.max_open_runs runs in progress, a landing batch is aborted at
// once (too_many_runs) without a branch; once a run ends, batches start again.
func TestOpenRunLimit(t *testing.T) {
	f := newRunnerFixtureWith(t, func(c *Config) { c.Policy.MaxOpenRuns = 2 })
	now := time.Now().UTC().Truncate(time.Millisecond)
	land := func(b string) {
		t.Helper()
		if err := f.handle(t, schemas.BatchLanded{BatchID: b, Dataset: "billing", ExpectedWrites: []string{"fact"}, OccurredAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	land("open-1")
	land("open-2")
	land("open-3")
	f.await(t, "open-3", schemas.TypeBatchAborted)
	r, _ := f.run("billing", "open-3")
	if r.Reason != schemas.ReasonTooManyRuns || !strings.Contains(r.Detail, "the limit (runner.max_open_runs) is 2") {
		t.Errorf("open-3: %s %s %q, want aborted too_many_runs", r.State, r.Reason, r.Detail)
	}
	f.lake.mu.Lock()
	made := f.lake.branches["wap-billing-open-3"]
	f.lake.mu.Unlock()
	if made {
		t.Error("a branch was made for the batch over the limit")
	}
	if err := f.handle(t, schemas.WriteComplete{BatchID: "open-1", Dataset: "billing", Write: "fact", OccurredAt: now}); err != nil {
		t.Fatal(err)
	}
	f.await(t, "open-1", schemas.TypeBatchPublished)
	land("open-4")
	f.await(t, "open-4", schemas.TypeBranchReady)
}

// A step that panics (an audit meeting data a bug chokes on) fails its run
// and leaves the process and the other runs alone.
func TestPanickingStepFailsTheRunNotTheProcess(t *testing.T) {
	f := newRunnerFixtureWith(t, func(c *Config) {
		c.Auditor = auditFunc(func(_ context.Context, req AuditRequest) (schemas.AuditReport, error) {
			if strings.HasSuffix(req.Ref, "boom") {
				var m map[string]int
				m["x"]++ // nil map: panics
			}
			return report(true), nil
		})
	})
	f.land(t, "boom")
	f.await(t, "boom", schemas.TypeBatchFailed)
	if r, _ := f.run("billing", "boom"); r.State != StateFailed || !strings.Contains(r.Detail, "panic: assignment to entry in nil map") {
		t.Errorf("run %s %q, want failed naming the panic", r.State, r.Detail)
	}
	f.land(t, "fine")
	f.await(t, "fine", schemas.TypeBatchPublished)
}

// max_open_runs applies per dataset: a producer that fills it with one
// dataset's batches (far deadlines, no writes) does not make another
// dataset's batches abort too_many_runs.
func TestOpenRunLimitIsPerDataset(t *testing.T) {
	f := newRunnerFixtureWith(t, func(c *Config) {
		c.Policy.MaxOpenRuns = 2
		c.Datasets = func(n string) (DatasetSpec, bool) {
			return DatasetSpec{Repository: "lake", Target: "main", WriteTimeout: time.Hour}, n == "billing" || n == "orders"
		}
	})
	now := time.Now().UTC().Truncate(time.Millisecond)
	land := func(dataset, b string) {
		t.Helper()
		if err := f.handle(t, schemas.BatchLanded{BatchID: b, Dataset: dataset, ExpectedWrites: []string{"fact"}, OccurredAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range []string{"flood-1", "flood-2", "flood-3"} {
		land("billing", b)
	}
	f.await(t, "flood-3", schemas.TypeBatchAborted)
	land("orders", "orders-1")
	f.await(t, "orders-1", schemas.TypeBranchReady)
	if r, _ := f.run("orders", "orders-1"); r.State != StateAwaitingWrites {
		t.Errorf("orders-1 is %s (%s %q), want awaiting writes", r.State, r.Reason, r.Detail)
	}
}

// An audit that takes its process down (out of memory, a crash inside
// DuckDB) is not audited again at every restore: each "process" here is a
// runner on the changelog as the dead one left it, and after
// MaxAuditAttempts attempts the next one aborts the run audit_crashed
// without auditing it. A revocation that stops an audit does not count.
func TestAuditThatTakesItsProcessDownEndsTheRun(t *testing.T) {
	type death struct{ changelog map[string][]byte }
	deaths := make(chan death, 1)
	var store *memStore
	audits := 0
	crashing := auditFunc(func(ctx context.Context, _ AuditRequest) (schemas.AuditReport, error) {
		audits++ // one audit at a time: the process dies in it
		snap, _ := store.Load(ctx, 0)
		deaths <- death{snap} // the changelog as the process dies here
		<-ctx.Done()
		return schemas.AuditReport{}, ctx.Err()
	})
	process := func(changelog map[string][]byte) *runnerFixture {
		store = &memStore{data: map[int]map[string][]byte{0: changelog}}
		return newRunnerFixtureWith(t, func(c *Config) {
			c.Auditor, c.Store = crashing, store
			c.Grace = time.Millisecond
		})
	}
	f := process(map[string][]byte{})
	f.land(t, "oom")
	for attempt := 1; attempt <= DefaultPolicy.MaxAuditAttempts; attempt++ {
		d := <-deaths
		f = process(d.changelog) // the dead runner is left as it is
	}
	f.await(t, "oom", schemas.TypeBatchAborted)
	r, _ := f.run("billing", "oom")
	if r.Reason != schemas.ReasonAuditCrashed || r.AuditLost != 3 || !r.KeepBranch || r.CleanupPending || audits != 3 {
		t.Errorf("run %s (%s: %s), lost %d, keep %v, cleanup %v after %d audits; want aborted audit_crashed after 3, the branch kept",
			r.State, r.Reason, r.Detail, r.AuditLost, r.KeepBranch, r.CleanupPending, audits)
	}

	// A revocation stops an audit: the attempt did not end the process.
	f = process(map[string][]byte{})
	f.land(t, "moved")
	<-deaths
	f.r.Revoked(0)
	var stopped Run
	if err := json.Unmarshal(store.data[0][RunKey("billing", "moved")], &stopped); err != nil {
		t.Fatal(err)
	}
	if stopped.State != StateAuditing || stopped.AuditOpen || stopped.AuditLost != 0 {
		t.Errorf("after a revocation: %s, audit open %v, lost %d; want auditing, nothing open or lost", stopped.State, stopped.AuditOpen, stopped.AuditLost)
	}
}
