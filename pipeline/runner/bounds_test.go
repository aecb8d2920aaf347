package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// stored is how many records the fixture's store holds, and how many of
// them have keys starting with prefix.
func (f *runnerFixture) stored(prefix string) (all, matching int) {
	f.store.mu.Lock()
	defer f.store.mu.Unlock()
	for _, part := range f.store.data {
		for k := range part {
			all++
			if strings.HasPrefix(k, prefix) {
				matching++
			}
		}
	}
	return all, matching
}

// awaitStored waits until ok holds of the store's record count.
func (f *runnerFixture) awaitStored(t *testing.T, what string, ok func(n int) bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		n, _ := f.stored("")
		if ok(n) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store holds %d records, want %s", n, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A producer's WriteComplete events for batches that never land start
// pending runs; at most Policy.MaxPendingRuns of them per partition are
// stored, the rest are refused (dead letter too_many_pending) and stored
// nowhere. Writes of a batch that already has a pending run still count.
func TestJunkWritesDoNotGrowPendingRunsWithoutBound(t *testing.T) {
	const bound = 50
	f := newRunnerFixtureWith(t, func(c *Config) { c.Policy.MaxPendingRuns = bound })
	now := time.Now().UTC()
	refused := 0
	for i := range 1000 {
		err := f.handle(t, schemas.WriteComplete{BatchID: fmt.Sprintf("junk-%d", i), Dataset: "billing", Write: "fact", OccurredAt: now})
		var ref *Refusal
		switch {
		case errors.As(err, &ref) && ref.Reason == RefusedTooManyPending:
			refused++
		case err != nil:
			t.Fatalf("junk-%d: %v", i, err)
		}
	}
	if n, _ := f.stored(""); n > bound {
		t.Fatalf("1000 junk writes stored %d runs, the bound is %d", n, bound)
	}
	if refused != 1000-bound {
		t.Errorf("%d writes refused too_many_pending, want %d", refused, 1000-bound)
	}
	// A second write of a pending batch is not a new run: it is taken.
	if err := f.handle(t, schemas.WriteComplete{BatchID: "junk-0", Dataset: "billing", Write: "dim", OccurredAt: now}); err != nil {
		t.Errorf("a second write of a pending batch: %v", err)
	}
	// A batch that lands still runs, and frees its pending slot.
	f.land(t, "junk-1")
	f.await(t, "junk-1", schemas.TypeBatchPublished)
	if err := f.handle(t, schemas.WriteComplete{BatchID: "late-writer", Dataset: "billing", Write: "fact", OccurredAt: now}); err != nil {
		t.Errorf("a write after a pending batch landed: %v", err)
	}
}

// An abort for too_many_runs (or invalid) is a producer's junk answered:
// it is kept Policy.RejectedRetention, not TerminalRetention (days).
func TestRejectedAbortsAreKeptBriefly(t *testing.T) {
	f := newRunnerFixtureWith(t, func(c *Config) {
		c.Policy.MaxOpenRuns = 1
		c.Policy.RejectedRetention = 50 * time.Millisecond
	})
	now := time.Now().UTC()
	for _, b := range []string{"open", "over"} {
		if err := f.handle(t, schemas.BatchLanded{BatchID: b, Dataset: "billing", ExpectedWrites: []string{"fact"}, OccurredAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	f.await(t, "over", schemas.TypeBatchAborted)
	if r, _ := f.run("billing", "over"); r.Reason != "" && r.Reason != schemas.ReasonTooManyRuns {
		t.Fatalf("over is %s (%s), want aborted too_many_runs", r.State, r.Reason)
	}
	f.awaitStored(t, "only the open run (the too_many_runs abort forgotten after 50ms)", func(n int) bool { return n == 1 })
	if _, ok := f.run("billing", "open"); !ok {
		t.Error("the open run was forgotten too")
	}
}

// The finished runs of one dataset a partition keeps are capped
// (Policy.MaxFinishedRuns): 300 batches over max_open_runs leave at most the
// open run and the cap's worth of finished ones, once their events are sent.
func TestFinishedRunsPerDatasetAreCapped(t *testing.T) {
	const finished = 20
	f := newRunnerFixtureWith(t, func(c *Config) {
		c.Policy.MaxOpenRuns = 1
		c.Policy.MaxFinishedRuns = finished
		c.Notifier = &countingNotifier{}
	})
	now := time.Now().UTC()
	for i := range 300 {
		if err := f.handle(t, schemas.BatchLanded{BatchID: fmt.Sprintf("flood-%d", i), Dataset: "billing", ExpectedWrites: []string{"fact"}, OccurredAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	n := f.cfg.Notifier.(*countingNotifier)
	deadline := time.Now().Add(20 * time.Second)
	for n.count(schemas.TypeBatchAborted) < 299 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 299 BatchAborted sent", n.count(schemas.TypeBatchAborted))
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.awaitStored(t, fmt.Sprintf("at most 1 open + %d finished", finished), func(n int) bool { return n <= 1+finished })
	if _, ok := f.run("billing", "flood-0"); !ok {
		t.Error("the open run flood-0 was forgotten")
	}
}

// A far write deadline from a producer is capped by the dataset's
// MaxWriteTimeout.
func TestFarDeadlineIsCappedPerDataset(t *testing.T) {
	f := newRunnerFixtureWith(t, func(c *Config) {
		c.Datasets = func(n string) (DatasetSpec, bool) {
			return DatasetSpec{Repository: "lake", Target: "main", WriteTimeout: time.Minute, MaxWriteTimeout: time.Hour}, n == "billing"
		}
	})
	now := time.Now().UTC()
	far := now.Add(6 * 24 * time.Hour)
	if err := f.handle(t, schemas.BatchLanded{BatchID: "far", Dataset: "billing", ExpectedWrites: []string{"fact"}, WriteDeadline: &far, OccurredAt: now}); err != nil {
		t.Fatal(err)
	}
	r, _ := f.run("billing", "far")
	if limit := now.Add(time.Hour + time.Minute); r.Deadline.After(limit) {
		t.Errorf("deadline %s, want at most %s (the dataset's max_write_timeout after landing)", r.Deadline, limit)
	}
	near := now.Add(10 * time.Minute)
	if err := f.handle(t, schemas.BatchLanded{BatchID: "near", Dataset: "billing", ExpectedWrites: []string{"fact"}, WriteDeadline: &near, OccurredAt: now}); err != nil {
		t.Fatal(err)
	}
	if r, _ := f.run("billing", "near"); !r.Deadline.Equal(near) {
		t.Errorf("a deadline within the cap became %s, want %s", r.Deadline, near)
	}
}

// countingNotifier counts the events it is given, by type.
type countingNotifier struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *countingNotifier) Notify(_ context.Context, pn Notification) (map[string]string, error) {
	if pn.Event != nil {
		c.mu.Lock()
		if c.n == nil {
			c.n = map[string]int{}
		}
		c.n[pn.Event.EventType()]++
		c.mu.Unlock()
	}
	return pn.Receipts, nil
}

func (c *countingNotifier) count(typ string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[typ]
}

// Early writes (WriteComplete of batches that have not landed) are bounded
// per partition, not only per pending run: with MaxPendingRuns pending runs
// of MaxExpectedWrites early writes each (names of 128 bytes), a producer
// kept about 41 KB per pending run, 400 MB per partition at the default
// bound, in memory and in the state store. A partition holds at most twice
// MaxPendingRuns early writes; the rest are refused (too_many_pending).
func TestJunkEarlyWritesAreBoundedPerPartition(t *testing.T) {
	const bound = 4
	f := newRunnerFixtureWith(t, func(c *Config) { c.Policy.MaxPendingRuns = bound })
	now := time.Now().UTC()
	refused := 0
	for b := range bound {
		for w := range schemas.MaxExpectedWrites {
			err := f.handle(t, schemas.WriteComplete{BatchID: fmt.Sprintf("junk-%d", b), Dataset: "billing",
				Write: fmt.Sprintf("%0128d", w), OccurredAt: now})
			var ref *Refusal
			switch {
			case errors.As(err, &ref) && ref.Reason == RefusedTooManyPending:
				refused++
			case err != nil:
				t.Fatalf("junk-%d write %d: %v", b, w, err)
			}
		}
	}
	held := 0
	for _, r := range f.r.Runs() {
		held += len(r.Writes)
	}
	if held > 2*bound || refused != bound*schemas.MaxExpectedWrites-held {
		t.Fatalf("%d early writes held, %d refused too_many_pending, of %d; want at most %d held, the rest refused",
			held, refused, bound*schemas.MaxExpectedWrites, 2*bound)
	}
	// A batch that lands still runs.
	f.land(t, "junk-0")
	f.await(t, "junk-0", schemas.TypeBatchPublished)
}
