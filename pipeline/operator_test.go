package pipeline

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

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
			step{in: retryReq("r1", "q1"), state: StateAuditing, effects: []EffectKind{DoBeginAudit, DoSend}, check: func(t *testing.T, r Run) {
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
				if r.RetriedBy != "ana" { // the publish commit's metadata (TestOperatorRequestsThroughRunner)
					t.Errorf("retried by %q, want ana", r.RetriedBy)
				}
			}},
			step{in: retryReq("r1", "q2"), state: StatePublished, check: nil},
		)},
		{"retry of a run failed while publishing merges the audited seal again", []step{
			{in: landed("r2", "fact"), state: StateLanded},
			{in: BranchCreated{}, state: StateAwaitingWrites},
			{in: write("r2", "fact"), state: StateAuditing},
			{in: Audited{SealedCommit: "c-r2", Report: report(true)}, state: StatePublishing},
			{in: StepFailed{Step: StepPublish, Err: "503", Class: Permanent}, state: StatePublishing, effects: []EffectKind{DoLook, DoSend}},
			{in: Looked{}, state: StateFailed},
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
			r, _ = transition(t, m, r, s.in, t0)
		}
		return r
	}
	published, aborted := run(toPublished("p")), run(toAborted("a"))
	waiting := run([]step{{in: landed("w", "fact")}, {in: BranchCreated{}}})
	publishing := run(toPublished("x")[:4])
	reverting, _ := transition(t, m, published, revertReq("p", "first"), t0)
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
			next, effects := transition(t, m, tc.run, tc.in, t0.Add(time.Minute))
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
	next, effects := transition(t, m, published, Cancel{Event: schemas.BatchCancelled{BatchID: "p", Dataset: "billing", OccurredAt: t0}}, t0)
	if replyOf(effects) != nil || next.State != StatePublished {
		t.Errorf("plain cancel of a published batch: %s, reply %+v", next.State, replyOf(effects))
	}
	// Asking again for a done revert answers with the same event.
	done, _ := transition(t, m, reverting, Reverted{PublishCommit: "m-p", CommitID: "r-p", At: t0}, t0)
	again, effects := transition(t, m, done, revertReq("p", "q10"), t0)
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

// TestCopiedRequestsAreRefused: a signed request copied back onto the
// requests topic (by whoever can write it, without an operator's key) is
// not carried out again. A retry carried out is not carried out a second
// time when its retried audit fails again, however soon; a retry or revert
// stamped before the outcome it would act on (a request about an earlier
// run of the batch id, or an earlier failure) is refused as stale.
func TestCopiedRequestsAreRefused(t *testing.T) {
	m := NewMachine(DefaultPolicy)
	at := func(in Input, d time.Duration) Input {
		switch in := in.(type) {
		case RetryRequest:
			in.Event.OccurredAt = t0.Add(d)
			return in
		case RevertRequest:
			in.Event.OccurredAt = t0.Add(d)
			return in
		}
		return in
	}
	run := func(steps []step, d time.Duration) Run {
		var r Run
		for _, s := range steps {
			if l, ok := s.in.(Landed); ok {
				l.Event.OccurredAt = t0.Add(d) // landed then, not re-sent from before
				s.in = l
			}
			r, _ = transition(t, m, r, s.in, t0.Add(d))
		}
		return r
	}
	aborted := run(toAborted("a"), 0)
	retried, _ := transition(t, m, aborted, at(retryReq("a", "q1"), time.Minute), t0.Add(time.Minute))
	again, _ := transition(t, m, retried, Audited{SealedCommit: "c2-a", Report: report(false)}, t0.Add(2*time.Minute))
	if again.State != StateAborted || again.Retries != 1 {
		t.Fatalf("retried run is %s after %d retries, want aborted after 1", again.State, again.Retries)
	}
	// A later run of a batch id whose earlier run was reverted and forgotten.
	relanded := run(toPublished("p"), 8*24*time.Hour)

	for _, tc := range []struct {
		name string
		run  Run
		in   Input
		now  time.Duration
	}{
		{"the retry carried out, copied after the retried audit failed again", again, at(retryReq("a", "q1"), time.Minute), 3 * time.Minute},
		{"an older retry, never carried out", again, at(retryReq("a", "q0"), 30*time.Second), 3 * time.Minute},
		{"a retry from before the run failed", aborted, at(retryReq("a", "q0"), -time.Hour), time.Minute},
		{"a revert from before the batch id's run published", relanded, at(revertReq("p", "q0"), 0), 8*24*time.Hour + time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, effects := transition(t, m, tc.run, tc.in, t0.Add(tc.now))
			if a, b := marshal(t, next), marshal(t, tc.run); a != b {
				t.Errorf("the run changed:\n%s\n%s", b, a)
			}
			o := replyOf(effects)
			if o == nil || o.Refused == nil || o.Refused.Reason != schemas.RefusedStale || !strings.Contains(o.Refused.Detail, "older than") {
				t.Fatalf("reply = %+v, want RequestRefused %s", o, schemas.RefusedStale)
			}
		})
	}
	// The operator's next retry is carried out.
	next, _ := transition(t, m, again, at(retryReq("a", "q2"), 3*time.Minute), t0.Add(3*time.Minute))
	if next.State != StateAuditing || next.Retries != 2 || next.Request != "q2" {
		t.Errorf("a new retry left the run %s after %d retries (request %q)", next.State, next.Retries, next.Request)
	}
}

// The reason and who of a done revert come from the revert commit's
// metadata, which whoever can commit on the target can write: a commit
// naming the batch with a reason of 300 KB must not make the run record and
// the BatchReverted that large. They are held to the request's own bounds
// (schemas.MaxTextLen), saying so.
func TestRevertReadFromACommitIsBounded(t *testing.T) {
	m := NewMachine(DefaultPolicy)
	var published Run
	for _, s := range toPublished("p") {
		published, _ = transition(t, m, published, s.in, t0)
	}
	reverting, _ := transition(t, m, published, revertReq("p", "q1"), t0)
	huge := strings.Repeat("é", 150000)
	o := m.Apply(reverting, Reverted{PublishCommit: "m-p", CommitID: "r-p", At: t0, Reason: huge, By: huge}, t0)
	o, _, err := m.Fit(o, t0)
	if err != nil {
		t.Fatal(err)
	}
	if o.Refused != nil || o.Run.State != StatePublished {
		t.Fatalf("run %s, refused %+v; want it published and reverted", o.Run.State, o.Refused)
	}
	rv := o.Run.Revert
	if rv == nil || rv.Commit != "r-p" || len(rv.Reason) > schemas.MaxTextLen || len(rv.By) > schemas.MaxTextLen || !strings.Contains(rv.Reason, "clipped") {
		t.Fatalf("revert %.200v", rv)
	}
	var ev *schemas.BatchReverted
	for _, out := range o.Run.Outbox {
		if out.Reverted != nil {
			ev = out.Reverted
		}
	}
	if ev == nil || len(ev.Reason) > schemas.MaxTextLen || len(ev.RevertedBy) > schemas.MaxTextLen {
		t.Errorf("BatchReverted %.200v", ev)
	}
}

// TestCopiedCancelOfAnEarlierRunIsRefused: a retry or revert copied back
// onto the requests topic was refused stale when it was asked before the
// state it would act on, but a cancel was not checked at all: an
// operator's signed cancel of a batch id, copied by whoever may write the
// requests topic (a leaked Write right, which signing is there to make
// useless), cancelled every later run of that batch id (an upstream
// re-send after a fix, the next day's run of a reused id) while it had not
// finished its audit. A cancel asked more than RequestSkew before the run
// it would cancel landed was asked about another run: refused stale. One
// asked before the batch lands, of a batch without a run, is still
// remembered (the batch is aborted when it lands), and one asked within
// the skew is carried out.
func TestCopiedCancelOfAnEarlierRunIsRefused(t *testing.T) {
	m := NewMachine(DefaultPolicy)
	asked := func(d time.Duration) Cancel {
		c := cancelReq("c", "q-old")
		c.Event.OccurredAt = t0.Add(d)
		return c
	}
	landedAt := func(d time.Duration) Run {
		l := landed("c", "fact")
		l.Event.OccurredAt = t0.Add(d)
		r, _ := transition(t, m, Run{}, l, t0.Add(d))
		r, _ = transition(t, m, r, BranchCreated{}, t0.Add(d))
		return r
	}
	later := landedAt(8 * 24 * time.Hour) // a later run of the batch id, the earlier one forgotten
	next, effects := transition(t, m, later, asked(0), t0.Add(8*24*time.Hour+time.Minute))
	if a, b := marshal(t, next), marshal(t, later); a != b {
		t.Errorf("a cancel asked 8 days before the run landed changed it:\n%s\n%s", b, a)
	}
	o := replyOf(effects)
	if o == nil || o.Refused == nil || o.Refused.Reason != schemas.RefusedStale || !strings.Contains(o.Refused.Detail, "older than") {
		t.Fatalf("reply = %+v, want RequestRefused %s", o, schemas.RefusedStale)
	}

	for _, tc := range []struct {
		name string
		run  Run
		in   Cancel
	}{
		{"asked before the batch landed, of a batch without a run", Run{}, asked(3*time.Hour - time.Minute)}, // read at once (TestCopiedCancelBeforeTheNextRunLandsIsRefused)
		{"asked after the run landed", landedAt(time.Hour), asked(2 * time.Hour)},
		{"asked within the clock skew before it landed", landedAt(time.Hour), asked(time.Hour - RequestSkew + time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, _ := transition(t, m, tc.run, tc.in, t0.Add(3*time.Hour))
			if next.State != StateAborted || next.Reason != schemas.ReasonCancelled {
				t.Errorf("run %s (%s), want aborted cancelled", next.State, next.Reason)
			}
		})
	}
}

// TestCopiedCancelBeforeTheNextRunLandsIsRefused: a cancel is refused stale
// when asked more than RequestSkew before the run it would cancel landed,
// but one of a batch that has no run (or only writes waiting for their
// BatchLanded) was remembered, whenever it had been asked: the batch was
// aborted cancelled, and its BatchLanded, when it came, changed nothing.
// Whoever may write the requests topic with a copy of an operator's signed
// cancel of a batch id, asked about a run since forgotten, put it back just
// before the id's next run landed (an upstream's re-send, a reused id), or
// while that run's writes came first, and the run never ran; a copy put
// back every 7 days (the retention of the aborted record) kept the batch
// id from ever running. A cancel of a batch without a run, asked more than
// RequestSkew before lakewap reads it, is now refused stale and changes
// nothing; one asked within it is remembered as before.
func TestCopiedCancelBeforeTheNextRunLandsIsRefused(t *testing.T) {
	m := NewMachine(DefaultPolicy)
	copied := cancelReq("c", "q-old") // asked at t0, about a run of "c" since forgotten
	days := t0.Add(8 * 24 * time.Hour)
	pending, _ := transition(t, m, Run{}, write("c", "fact"), days)
	for name, r := range map[string]Run{"no run": {}, "writes before the landing": pending} {
		t.Run(name, func(t *testing.T) {
			next, effects := transition(t, m, r, copied, days.Add(time.Minute))
			if a, b := marshal(t, next), marshal(t, r); a != b {
				t.Errorf("a cancel asked 8 days before lakewap read it, of a batch without a run, changed it:\n%s\n%s", b, a)
			}
			o := replyOf(effects)
			if o == nil || o.Refused == nil || o.Refused.Reason != schemas.RefusedStale {
				t.Errorf("reply = %+v, want RequestRefused %s", o, schemas.RefusedStale)
			}
			next, _ = transition(t, m, next, landed("c", "fact"), days.Add(2*time.Minute))
			if next.State == StateAborted {
				t.Errorf("the run that landed after it is aborted (%s)", next.Reason)
			}
		})
	}
	// Asked within the skew before lakewap reads it: remembered, the batch
	// is aborted when it lands.
	fresh := cancelReq("c", "q-new")
	fresh.Event.OccurredAt = days.Add(-RequestSkew + time.Second)
	next, _ := transition(t, m, Run{}, fresh, days)
	next, _ = transition(t, m, next, landed("c", "fact"), days.Add(time.Hour))
	if next.State != StateAborted || next.Reason != schemas.ReasonCancelled {
		t.Errorf("a cancel read at once, then its batch landing: run %s (%s), want aborted cancelled", next.State, next.Reason)
	}
}

// TestFutureStampedRequestIsRefused: a request was judged stale by its
// occurred_at against the run's state, but the schemas let a producer's
// timestamp be up to 24 h ahead of lakewap's clock. An operator's signed
// cancel stamped 20 h ahead (the signer's clock running ahead) stayed
// fresh for 20 h and 5 min: a copy of it put back on the requests topic
// an hour later cancelled the next run of the same batch id. A request
// stamped more than RequestSkew ahead of lakewap's clock is now refused
// stale, naming both clocks, and changes nothing; one within the skew is
// carried out.
func TestFutureStampedRequestIsRefused(t *testing.T) {
	m := NewMachine(DefaultPolicy)
	run := func(steps []step) Run {
		var r Run
		for _, s := range steps {
			r, _ = transition(t, m, r, s.in, t0)
		}
		return r
	}
	ahead := func(in Input, d time.Duration) Input {
		switch r := in.(type) {
		case Cancel:
			r.Event.OccurredAt = t0.Add(d)
			return r
		case RetryRequest:
			r.Event.OccurredAt = t0.Add(d)
			return r
		case RevertRequest:
			r.Event.OccurredAt = t0.Add(d)
			return r
		}
		panic("not a request")
	}
	// The attack: signed at t0 on a clock 20 h ahead, carried out on the
	// first run; a copy put back an hour later, when a new run of "c" has
	// landed, cancels it.
	first := run([]step{{in: landed("c", "fact"), state: StateLanded}, {in: BranchCreated{}, state: StateAwaitingWrites}})
	signed := ahead(cancelReq("c", "q-ahead"), 20*time.Hour)
	next, effects := transition(t, m, first, signed, t0)
	if a, b := marshal(t, next), marshal(t, first); a != b {
		t.Errorf("a cancel stamped 20 h ahead of lakewap's clock changed the run:\n%s\n%s", b, a)
	}
	refusedWith(t, effects, "q-ahead", schemas.RefusedStale)
	if d := replyOf(effects).Refused.Detail; !strings.Contains(d, "ahead of lakewap's clock") || !strings.Contains(d, stamp(t0)) || !strings.Contains(d, stamp(t0.Add(20*time.Hour))) {
		t.Errorf("detail %q does not name both clocks", d)
	}
	l := landed("c", "fact")
	l.Event.OccurredAt = t0.Add(time.Hour)
	second, _ := transition(t, m, Run{}, l, t0.Add(time.Hour))
	second, _ = transition(t, m, second, BranchCreated{}, t0.Add(time.Hour))
	next, effects = transition(t, m, second, signed, t0.Add(time.Hour+time.Minute))
	if next.State == StateAborted {
		t.Fatalf("a copy of a cancel stamped 20 h ahead cancelled the next run of the batch id an hour later (%s)", next.Reason)
	}
	refusedWith(t, effects, "q-ahead", schemas.RefusedStale)

	// Of a batch without a run, a retry and a revert: refused too.
	next, effects = transition(t, m, Run{}, signed, t0)
	if next.State != "" {
		t.Errorf("a cancel stamped ahead, of a batch without a run, left a run %s", next.State)
	}
	refusedWith(t, effects, "q-ahead", schemas.RefusedStale)
	aborted := run(toAborted("r"))
	_, effects = transition(t, m, aborted, ahead(retryReq("r", "q-r"), 20*time.Hour), t0)
	refusedWith(t, effects, "q-r", schemas.RefusedStale)
	published := run(toPublished("v"))
	_, effects = transition(t, m, published, ahead(revertReq("v", "q-v"), 20*time.Hour), t0)
	refusedWith(t, effects, "q-v", schemas.RefusedStale)

	// Within the skew ahead: carried out.
	next, _ = transition(t, m, first, ahead(cancelReq("c", "q-ok"), RequestSkew), t0)
	if next.State != StateAborted || next.Reason != schemas.ReasonCancelled {
		t.Errorf("a cancel stamped %s ahead: run %s (%s), want aborted cancelled", RequestSkew, next.State, next.Reason)
	}
	next, _ = transition(t, m, aborted, ahead(retryReq("r", "q-r2"), RequestSkew), t0)
	if next.State != StateAuditing {
		t.Errorf("a retry stamped %s ahead: run %s, want auditing", RequestSkew, next.State)
	}
	next, _ = transition(t, m, published, ahead(revertReq("v", "q-v2"), RequestSkew), t0)
	if next.Revert == nil {
		t.Errorf("a revert stamped %s ahead was not recorded", RequestSkew)
	}
}
