package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/schemas"
)

func retryReq(batch, id string) RetryRequest {
	return RetryRequest{Event: schemas.RetryRequested{RequestID: id, BatchID: batch, Dataset: "billing", RequestedBy: "ana", OccurredAt: t0}}
}

func revertReq(batch, id string) RevertRequest {
	return RevertRequest{Event: schemas.RevertRequested{RequestID: id, BatchID: batch, Dataset: "billing", Reason: "wrong currency", RequestedBy: "bob", OccurredAt: t0}}
}

func cancelReq(batch, id string) Cancel {
	return Cancel{Event: schemas.BatchCancelled{BatchID: batch, Dataset: "billing", Reason: "rerun", RequestID: id, RequestedBy: "cy", OccurredAt: t0}}
}

// reply returns the answer a transition sends without storing it.
func replyOf(effects []Effect) *Outgoing {
	for _, e := range effects {
		if e.Kind == DoReply {
			return &e.Send
		}
	}
	return nil
}

func refusedWith(t *testing.T, effects []Effect, request, reason string) {
	t.Helper()
	o := replyOf(effects)
	if o == nil || o.Refused == nil || o.Refused.Reason != reason || o.Refused.RequestID != request || o.RequestID != request ||
		o.Refused.Detail == "" || o.EventID != o.Refused.EventID {
		t.Fatalf("reply = %+v, want RequestRefused %s for request %s", o, reason, request)
	}
}

// toAborted runs batch through a failing audit (branch kept).
func toAborted(batch string) []step {
	l := landed(batch, "fact")
	l.Spec.KeepBranch = true
	return []step{
		{in: l, state: StateLanded},
		{in: BranchCreated{}, state: StateAwaitingWrites},
		{in: write(batch, "fact"), state: StateAuditing},
		{in: Audited{SealedCommit: "c1-" + batch, Report: report(false)}, state: StateAborted},
	}
}

func toPublished(batch string) []step {
	return []step{
		{in: landed(batch, "fact"), state: StateLanded},
		{in: BranchCreated{}, state: StateAwaitingWrites},
		{in: write(batch, "fact"), state: StateAuditing},
		{in: Audited{SealedCommit: "c-" + batch, Report: report(true)}, state: StatePublishing},
		{in: Merged{CommitID: "m-" + batch}, state: StatePublished},
	}
}

func TestOperatorRequests(t *testing.T) {
	m := NewMachine(policy(func(p *Policy) { p.RetryBudget, p.MinBackoff, p.MaxBackoff = time.Minute, time.Second, 8*time.Second }))
	tests := []struct {
		name  string
		steps []step
	}{
		{"retry of an aborted run audits a new seal and publishes with new event ids", append(toAborted("r1"),
			step{in: retryReq("r1", "q1"), state: StateAuditing, effects: []EffectKind{DoAudit, DoSend}, check: func(t *testing.T, r Run) {
				last := r.Outbox[len(r.Outbox)-1]
				if r.Retries != 1 || r.Request != "q1" || r.Reason != "" || last.RequestID != "q1" ||
					last.EventID != EventID("billing", "r1", "state:auditing retry 1") {
					t.Errorf("run after retry: retries %d request %q reason %q last outbox %+v", r.Retries, r.Request, r.Reason, last)
				}
			}},
			step{in: Audited{SealedCommit: "c2-r1", Report: report(true)}, state: StatePublishing},
			step{in: Merged{CommitID: "m-r1"}, state: StatePublished, check: func(t *testing.T, r Run) {
				last := r.Outbox[len(r.Outbox)-1]
				if last.Published == nil || last.RequestID != "q1" || last.EventID != EventID("billing", "r1", "published retry 1") {
					t.Errorf("outbox ends with %+v", last)
				}
				if meta := publishMeta(r); meta[MetaRetriedBy] != "ana" {
					t.Errorf("publish metadata %v", meta)
				}
			}},
			step{in: retryReq("r1", "q2"), state: StatePublished, check: nil},
		)},
		{"retry of a run failed while publishing merges the audited seal again", []step{
			{in: landed("r2", "fact"), state: StateLanded},
			{in: BranchCreated{}, state: StateAwaitingWrites},
			{in: write("r2", "fact"), state: StateAuditing},
			{in: Audited{SealedCommit: "c-r2", Report: report(true)}, state: StatePublishing},
			{in: StepFailed{Step: StepPublish, Err: "503", Class: Permanent}, state: StateFailed},
			{in: retryReq("r2", "q1"), state: StatePublishing, effects: []EffectKind{DoPublish, DoSend}, check: func(t *testing.T, r Run) {
				if r.SealedCommit != "c-r2" || r.FailedStep != "" || r.Attempts != 0 {
					t.Errorf("sealed %q failed step %q attempts %d", r.SealedCommit, r.FailedStep, r.Attempts)
				}
			}},
		}},
		{"retry of a run failed at its branch makes the branch", []step{
			{in: landed("r3", "fact"), state: StateLanded},
			{in: StepFailed{Step: StepBranch, Err: "403", Class: Permanent}, state: StateFailed},
			{in: retryReq("r3", "q1"), state: StateLanded, effects: []EffectKind{DoCreateBranch, DoSend}},
		}},
		{"retry of a run whose branch was deleted is refused", []step{
			{in: landed("r4", "fact"), state: StateLanded},
			{in: BranchCreated{}, state: StateAwaitingWrites},
			{in: write("r4", "fact"), state: StateAuditing},
			{in: Audited{SealedCommit: "c-r4", Report: report(false)}, state: StateAborted},
			{in: retryReq("r4", "q1"), state: StateAborted, check: func(t *testing.T, r Run) {
				if r.Retries != 0 {
					t.Errorf("retries %d", r.Retries)
				}
			}},
		}},
		{"revert of a published run, then again", append(toPublished("v1"),
			step{in: revertReq("v1", "q1"), state: StatePublished, effects: []EffectKind{DoRevert, DoSend}},
			step{in: revertReq("v1", "q2"), state: StatePublished},
			step{in: StepFailed{Step: StepRevert, Err: "503", Class: Transient}, state: StatePublished, effects: []EffectKind{DoWake, DoSend}},
			step{in: Reverted{PublishCommit: "m-v1", CommitID: "r-v1", At: t0, Reason: "wrong currency", By: "bob"}, state: StatePublished, check: func(t *testing.T, r Run) {
				last := r.Outbox[len(r.Outbox)-1]
				if last.Reverted == nil || last.Reverted.CommitID != "r-v1" || last.Reverted.PublishedCommitID != "m-v1" || last.RequestID != "q1" ||
					last.Reverted.RevertedBy != "bob" || last.EventID != EventID("billing", "v1", "reverted m-v1") || r.revertPending() {
					t.Errorf("outbox ends with %+v", last)
				}
			}},
		)},
		{"a revert lakeFS refuses is answered and the run stays published", append(toPublished("v2"),
			step{in: revertReq("v2", "q1"), state: StatePublished},
			step{in: StepFailed{Step: StepRevert, Err: "2 merge commits", Class: Permanent}, state: StatePublished, check: func(t *testing.T, r Run) {
				last := r.Outbox[len(r.Outbox)-1]
				if last.Refused == nil || last.Refused.Reason != schemas.RefusedRevertFailed || last.RequestID != "q1" || r.Revert != nil {
					t.Errorf("outbox ends with %+v, revert %+v", last, r.Revert)
				}
			}},
		)},
		{"operator cancel of a waiting batch", []step{
			{in: landed("k1", "fact"), state: StateLanded},
			{in: cancelReq("k1", "q1"), state: StateAborted, check: func(t *testing.T, r Run) {
				last := r.Outbox[len(r.Outbox)-1]
				if last.Aborted == nil || last.Aborted.Reason != schemas.ReasonCancelled || last.RequestID != "q1" {
					t.Errorf("outbox ends with %+v", last)
				}
			}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runSteps(t, m, tc.steps)
		})
	}
}

// TestOperatorRequestsRefused: a request that cannot be done changes
// nothing and is answered with RequestRefused naming why.
func TestOperatorRequestsRefused(t *testing.T) {
	m := NewMachine(DefaultPolicy)
	run := func(steps []step) Run {
		var r Run
		for _, s := range steps {
			r, _ = m.Transition(r, s.in, t0)
		}
		return r
	}
	published, aborted := run(toPublished("p")), run(toAborted("a"))
	waiting := run([]step{{in: landed("w", "fact")}, {in: BranchCreated{}}})
	publishing := run(toPublished("x")[:4])
	reverting, _ := m.Transition(published, revertReq("p", "first"), t0)
	cancelled := run([]step{{in: landed("c", "fact")}, {in: cancelReq("c", "q0")}})
	for _, tc := range []struct {
		name    string
		run     Run
		in      Input
		request string
		reason  string
		detail  string
	}{
		{"retry of an unknown batch", Run{}, retryReq("nope", "q1"), "q1", schemas.RefusedUnknownBatch, "has no run"},
		{"retry of a published batch", published, retryReq("p", "q2"), "q2", schemas.RefusedWrongState, "is published"},
		{"retry of a waiting batch", waiting, retryReq("w", "q3"), "q3", schemas.RefusedWrongState, "is awaiting_writes"},
		{"retry of a cancelled batch", cancelled, retryReq("c", "q4"), "q4", schemas.RefusedWrongState, "aborted (cancelled)"},
		{"revert of an unknown batch", Run{}, revertReq("nope", "q5"), "q5", schemas.RefusedUnknownBatch, "is not published"},
		{"revert of an aborted batch", aborted, revertReq("a", "q6"), "q6", schemas.RefusedWrongState, "not published"},
		{"revert while a revert runs", reverting, revertReq("p", "q7"), "q7", schemas.RefusedInProgress, "request first by bob"},
		{"cancel of a publishing batch", publishing, cancelReq("x", "q8"), "q8", schemas.RefusedWrongState, "merge cannot be stopped"},
		{"cancel of a published batch", published, cancelReq("p", "q9"), "q9", schemas.RefusedWrongState, "is published"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, effects := m.Transition(tc.run, tc.in, t0.Add(time.Minute))
			if a, b := marshal(t, next), marshal(t, tc.run); a != b {
				t.Errorf("the run changed:\n%s\n%s", b, a)
			}
			refusedWith(t, effects, tc.request, tc.reason)
			if d := replyOf(effects).Refused.Detail; !strings.Contains(d, tc.detail) {
				t.Errorf("detail %q, want it to say %q", d, tc.detail)
			}
		})
	}
	// A cancellation without a request id (the janitor's, an upstream
	// producer's) of a batch past its audit is ignored, as before.
	next, effects := m.Transition(published, Cancel{Event: schemas.BatchCancelled{BatchID: "p", Dataset: "billing", OccurredAt: t0}}, t0)
	if replyOf(effects) != nil || next.State != StatePublished {
		t.Errorf("plain cancel of a published batch: %s, reply %+v", next.State, replyOf(effects))
	}
	// Asking again for a done revert answers with the same event.
	done, _ := m.Transition(reverting, Reverted{PublishCommit: "m-p", CommitID: "r-p", At: t0}, t0)
	again, effects := m.Transition(done, revertReq("p", "q10"), t0)
	o := replyOf(effects)
	if o == nil || o.Reverted == nil || o.RequestID != "q10" || o.EventID != EventID("billing", "p", "reverted m-p") || marshal(t, again) != marshal(t, done) {
		t.Errorf("second revert replied %+v", o)
	}
}

func marshal(t *testing.T, r Run) string {
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The fake lake as a Reverter.

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

func (l *fakeLake) Log(_ context.Context, _, _ string, limit int) ([]Commit, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Commit
	for _, c := range slices.Backward(l.log) {
		if len(out) < limit {
			out = append(out, c)
		}
	}
	return out, nil
}

func (l *fakeLake) Revert(_ context.Context, _, _, commitID string, parent int, _ string, meta map[string]string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if parent != 1 {
		return fmt.Errorf("revert of merge %s relative to parent %d", commitID, parent)
	}
	l.log = append(l.log, Commit{ID: fmt.Sprintf("revert-%d", len(l.log)), Parents: []string{"head"}, Metadata: meta, CreationDate: time.Now().UTC()})
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
		if err := f.r.Handle(context.Background(), 0, ev); err != nil {
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
	deadline := time.Now().Add(30 * time.Second)
	for r, _ := f.run("billing", "b1"); r.State != StatePublished; r, _ = f.run("billing", "b1") {
		if time.Now().After(deadline) {
			t.Fatalf("b1 is %s", r.State)
		}
		time.Sleep(time.Millisecond)
	}
	// The crashed attempt's revert commit, then someone else's commit.
	f.lake.mu.Lock()
	f.lake.log = append(f.lake.log,
		Commit{ID: "revert-earlier", Metadata: map[string]string{MetaRevertedBatchID: "b1", MetaRevertedCommit: "merge-b1",
			MetaRevertReason: "first try", MetaRevertedBy: "ana"}, CreationDate: time.Now().UTC()},
		Commit{ID: "later", Parents: []string{"revert-earlier"}})
	f.lake.mu.Unlock()
	now := time.Now().UTC().Truncate(time.Millisecond)
	if err := f.r.Handle(context.Background(), 0, schemas.RevertRequested{RequestID: "q1", BatchID: "b1", Dataset: "billing",
		Reason: "second try", RequestedBy: "bob", OccurredAt: now}); err != nil {
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
