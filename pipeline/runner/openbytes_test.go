package runner

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// fatBatch is the largest BatchLanded the schema lets a producer send.
func fatBatch(batch string, now time.Time) schemas.BatchLanded {
	ev := schemas.BatchLanded{BatchID: batch, Dataset: "billing", Producer: "flood", OccurredAt: now, Attributes: map[string]string{}}
	for i := range schemas.MaxAttributes {
		ev.Attributes[fmt.Sprintf("k%03d", i)+strings.Repeat("k", schemas.MaxWriteNameLen-4)] = strings.Repeat("v", schemas.MaxTextLen)
	}
	for i := range schemas.MaxExpectedWrites {
		ev.ExpectedWrites = append(ev.ExpectedWrites, fmt.Sprintf("w%03d", i)+strings.Repeat("w", schemas.MaxWriteNameLen-4))
	}
	return ev
}

// TestOpenRunsBytesAreCountedOverTheirLives: the runner counts what the
// dataset's runs in progress hold of their producers' bytes from landing
// to end, so a producer's largest batches land up to Policy.MaxOpenBytes
// and no further (before, max_open_runs' count alone held: 10,000 runs of
// 107 KB each, 1 GB), and a run that ends gives its bytes back.
func TestOpenRunsBytesAreCountedOverTheirLives(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	size := pipeline.LandedBytes(fatBatch("x", now))
	f := newRunnerFixtureWith(t, func(c *Config) { c.Policy.MaxOpenBytes = 3 * size })
	for i := range 3 {
		if err := f.handle(t, fatBatch(fmt.Sprint("fat-", i), now)); err != nil {
			t.Fatal(err)
		}
		f.await(t, fmt.Sprint("fat-", i), schemas.TypeBranchReady)
	}
	if err := f.handle(t, fatBatch("fat-3", now)); err != nil {
		t.Fatal(err)
	}
	if r, _ := f.run("billing", "fat-3"); r.State != pipeline.StateAborted || r.Reason != schemas.ReasonTooManyRuns {
		t.Fatalf("a fourth of the largest batches past 3 batches' bytes: %s (%s); want aborted %s", r.State, r.Reason, schemas.ReasonTooManyRuns)
	}
	if runs, bytes := f.r.openOf("billing"); runs != 3 || bytes != 3*size {
		t.Errorf("%d runs in progress holding %d bytes; want 3 holding %d", runs, bytes, 3*size)
	}
	if err := f.handle(t, schemas.BatchCancelled{BatchID: "fat-0", Dataset: "billing", Reason: "done", OccurredAt: now}); err != nil {
		t.Fatal(err)
	}
	f.await(t, "fat-0", schemas.TypeBatchAborted)
	if err := f.handle(t, fatBatch("fat-4", now)); err != nil {
		t.Fatal(err)
	}
	f.await(t, "fat-4", schemas.TypeBranchReady)
	if runs, bytes := f.r.openOf("billing"); runs != 3 || bytes != 3*size {
		t.Errorf("after one ended and another landed: %d runs in progress holding %d bytes; want 3 holding %d", runs, bytes, 3*size)
	}
}

// TestFinishedRunsHoldBoundedProducerBytes: a finished run an operator may
// retry (here aborted merge_conflict) keeps its producer's attributes and
// writes, 148 KB at the schema's limits, and a partition kept
// runner.max_finished_runs (10,000) of a dataset whatever they held: 1.5 GB
// of one producer's batches that a writer's bad rows or a conflicting
// merge ended. Past Policy.MaxFinishedBytes they are forgotten as past
// the count, earliest first.
func TestFinishedRunsHoldBoundedProducerBytes(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	fat := fatBatch("x", now)
	held := pipeline.LandedBytes(fat)
	for _, w := range fat.ExpectedWrites {
		held += len(w) // its completed writes too
	}
	f := newRunnerFixtureWith(t, func(c *Config) { c.Policy.MaxFinishedBytes = 2*held + held/2 })
	for i := range 3 {
		id := fmt.Sprint("fat-", i)
		f.lake.mu.Lock()
		f.lake.mergeErr = []error{fmt.Errorf("conflict found: %w", pipeline.ErrMergeConflict)}
		f.lake.mu.Unlock()
		if err := f.handle(t, fatBatch(id, now)); err != nil {
			t.Fatal(err)
		}
		f.await(t, id, schemas.TypeBranchReady)
		for _, w := range fat.ExpectedWrites {
			if err := f.handle(t, schemas.WriteComplete{BatchID: id, Dataset: "billing", Write: w, OccurredAt: now}); err != nil {
				t.Fatal(err)
			}
		}
		f.await(t, id, schemas.TypeBatchAborted)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		kept := 0
		for _, r := range f.r.Runs() {
			kept += pipeline.HeldBytes(r)
			if r.State == pipeline.StateAborted && r.Reason != schemas.ReasonMergeConflict {
				t.Fatalf("%s aborted %s; want merge_conflict", r.BatchID, r.Reason)
			}
		}
		if kept <= f.cfg.Policy.MaxFinishedBytes {
			if _, ok := f.run("billing", "fat-0"); ok {
				t.Errorf("the earliest finished run is kept; want it forgotten first")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the finished runs hold %d bytes of their producer's, over the %d allowed (%d runs)", kept, f.cfg.Policy.MaxFinishedBytes, len(f.r.Runs()))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
