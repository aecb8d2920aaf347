package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/lakewap/lakewap/pipeline"

	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/schemas"
)

func (l *fakeLake) MergesOf(_ context.Context, _, _, sealed string, _ time.Time) ([]Commit, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Commit
	for _, c := range slices.Backward(l.log) {
		if len(c.Parents) > 1 && c.Parents[1] == sealed {
			out = append(out, c)
		}
	}
	return out, nil
}

func (l *fakeLake) FirstParents(_ context.Context, _, ref string, _ time.Time, limit int) ([]Commit, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok := l.scratch[ref]; ok && c.ID != "" {
		return []Commit{c}, nil
	}
	var out []Commit
	for _, c := range slices.Backward(l.log) {
		if len(out) < limit {
			out = append(out, c)
		}
	}
	return out, nil
}

func (l *fakeLake) Revert(_ context.Context, _, branch, commitID string, parent int, _ string, meta map[string]string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if strings.HasSuffix(branch, revertScratchSuffix) { // the revert's audit: not on the target
		l.scratchReverts++
		c, ok := l.scratch[branch]
		if !ok {
			return fmt.Errorf("no branch %s", branch)
		}
		c.ID, c.Metadata = fmt.Sprintf("scratch-revert-%d", l.scratchReverts), meta
		l.scratch[branch] = c
		return nil
	}
	if parent != 1 {
		return fmt.Errorf("revert of merge %s relative to parent %d", commitID, parent)
	}
	l.log = append(l.log, Commit{ID: fmt.Sprintf("revert-%d", len(l.log)), Parents: []string{"head"}, Metadata: meta, Committer: fakeCommitter, CreationDate: time.Now().UTC()})
	return nil
}

func (l *fakeLake) reverts() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.log {
		if c.Metadata[MetaRevertedBatchID] != "" {
			n++
		}
	}
	return n
}

// awaitAnswer waits for the result event of batch that answers request.
func (f *runnerFixture) awaitAnswer(t *testing.T, batch, request string) schemas.Event {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		f.notes.mu.Lock()
		for i, ev := range f.notes.events {
			if ev.Batch() == batch && f.notes.requests[i] == request {
				f.notes.mu.Unlock()
				return ev
			}
		}
		f.notes.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("no answer to request %s of batch %s", request, batch)
	return nil
}

// TestOperatorRequestsThroughRunner: the runner that owns the partition
// carries out retries and reverts as inputs, answers each request, and
// refuses what cannot be done without changing any run.
func TestOperatorRequestsThroughRunner(t *testing.T) {
	var audits atomic.Int32
	f := newRunnerFixtureWith(t, func(c *Config) {
		c.Datasets = func(n string) (DatasetSpec, bool) {
			return DatasetSpec{Repository: "lake", Target: "main", WriteTimeout: time.Hour, KeepBranch: true}, n == "billing"
		}
		c.Auditor = auditFunc(func(context.Context, AuditRequest) (schemas.AuditReport, error) {
			return report(audits.Add(1) > 1), nil // the first audit fails, later ones pass (the writer fixed the branch)
		})
	})
	go func() { // awaitAnswer reads the notifier's record, not its channel
		for range f.notes.ch {
		}
	}()
	handle := func(ev schemas.Event) {
		t.Helper()
		if err := f.r.Handle(context.Background(), 0, ev, schemas.TraceContext{}); err != nil {
			t.Fatalf("handle %T: %v", ev, err)
		}
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	f.land(t, "b1")
	waitState := func(state State) Run {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			r, _ := f.run("billing", "b1")
			if r.State == state && len(r.Outbox) == 0 {
				return r
			}
			if time.Now().After(deadline) {
				t.Fatalf("b1 is %s with %d unsent, want %s", r.State, len(r.Outbox), state)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitState(StateAborted)

	handle(schemas.RetryRequested{RequestID: "q1", BatchID: "b1", Dataset: "billing", RequestedBy: "ana", OccurredAt: now})
	if p, ok := f.awaitAnswer(t, "b1", "q1").(schemas.BatchPublished); !ok || p.CommitID != "merge-b1" {
		t.Fatalf("retry answered %+v", p)
	}
	if r := waitState(StatePublished); r.Retries != 1 || f.lake.lastMeta[MetaRetriedBy] != "ana" {
		t.Errorf("retried run %+v, publish metadata %v", r, f.lake.lastMeta)
	}

	handle(schemas.RevertRequested{RequestID: "q2", BatchID: "b1", Dataset: "billing", Reason: "wrong currency", RequestedBy: "bob", OccurredAt: now})
	rv, ok := f.awaitAnswer(t, "b1", "q2").(schemas.BatchReverted)
	if !ok || rv.PublishedCommitID != "merge-b1" || rv.CommitID == "" || rv.RevertedBy != "bob" || rv.Reason != "wrong currency" {
		t.Fatalf("revert answered %+v", rv)
	}
	// Again: the same event answers, no second revert commit.
	handle(schemas.RevertRequested{RequestID: "q3", BatchID: "b1", Dataset: "billing", Reason: "again", RequestedBy: "cy", OccurredAt: now})
	if again, ok := f.awaitAnswer(t, "b1", "q3").(schemas.BatchReverted); !ok || again.EventID != rv.EventID || again.RevertedBy != "bob" {
		t.Errorf("second revert answered %+v, first %+v", again, rv)
	}
	if n := f.lake.reverts(); n != 1 {
		t.Errorf("%d revert commits, want 1", n)
	}
	stored := waitState(StatePublished)

	handle(schemas.RetryRequested{RequestID: "q4", BatchID: "b1", Dataset: "billing", OccurredAt: now})
	if ref, ok := f.awaitAnswer(t, "b1", "q4").(schemas.RequestRefused); !ok || ref.Reason != schemas.RefusedWrongState || ref.State != "published" {
		t.Errorf("retry of a published batch answered %+v", ref)
	}
	handle(schemas.RetryRequested{RequestID: "q5", BatchID: "nope", Dataset: "billing", OccurredAt: now})
	if ref, ok := f.awaitAnswer(t, "nope", "q5").(schemas.RequestRefused); !ok || ref.Reason != schemas.RefusedUnknownBatch {
		t.Errorf("retry of an unknown batch answered %+v", ref)
	}
	if _, ok := f.run("billing", "nope"); ok {
		t.Errorf("a refused request stored a run")
	}
	if r, _ := f.run("billing", "b1"); marshal(t, r) != marshal(t, stored) {
		t.Errorf("a refused request changed the run:\n%s\n%s", marshal(t, stored), marshal(t, r))
	}
	// A malformed request is a dead letter, and changes nothing.
	err := f.ingest(t, "b1", avro(t, schemas.RevertRequested{RequestID: "q6", BatchID: "b1", Dataset: "billing", OccurredAt: now}), 0)
	if !errors.As(err, new(*consumer.PoisonError)) {
		t.Errorf("revert without a reason: %v, want a dead letter", err)
	}
}

// A revert made before a crash (the revert commit is on the target, its
// outcome was never stored) is found by the next attempt, not made again.
func TestRevertFoundAfterACrash(t *testing.T) {
	f := newRunnerFixture(t)
	go func() {
		for range f.notes.ch {
		}
	}()
	f.land(t, "b1")
	f.awaitRunPublished(t, "b1")
	// The crashed attempt's revert commit, then someone else's commit.
	f.lake.mu.Lock()
	f.lake.log = append(f.lake.log,
		Commit{ID: "revert-earlier", Parents: []string{"merge-b1"}, Metadata: map[string]string{MetaRevertedBatchID: "b1", MetaRevertedCommit: "merge-b1",
			MetaRevertReason: "first try", MetaRevertedBy: "ana"}, Committer: fakeCommitter, CreationDate: time.Now().UTC()},
		Commit{ID: "later", Parents: []string{"revert-earlier"}})
	f.lake.mu.Unlock()
	now := time.Now().UTC().Truncate(time.Millisecond)
	if err := f.r.Handle(context.Background(), 0, schemas.RevertRequested{RequestID: "q1", BatchID: "b1", Dataset: "billing",
		Reason: "second try", RequestedBy: "bob", OccurredAt: now}, schemas.TraceContext{}); err != nil {
		t.Fatal(err)
	}
	rv, ok := f.awaitAnswer(t, "b1", "q1").(schemas.BatchReverted)
	if !ok || rv.CommitID != "revert-earlier" || rv.RevertedBy != "ana" || rv.Reason != "first try" {
		t.Errorf("answer %+v, want the earlier revert", rv)
	}
	if n := f.lake.reverts(); n != 1 {
		t.Errorf("%d revert commits, want 1", n)
	}
}
