package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// incarnationLake is the fake lake whose branch, made again after the
// janitor deleted it, seals to a new commit, as lakeFS's would: a run of a
// batch whose first run is forgotten merges a commit the target does not
// hold yet.
type incarnationLake struct {
	*fakeLake
	mu   sync.Mutex
	made map[string]int // branch -> times made
}

func (l *incarnationLake) EnsureBranch(ctx context.Context, repo, branch, from string) (bool, error) {
	existed, err := l.fakeLake.EnsureBranch(ctx, repo, branch, from)
	if err == nil && !existed {
		l.mu.Lock()
		l.made[branch]++
		l.mu.Unlock()
	}
	return existed, err
}

func (l *incarnationLake) Seal(_ context.Context, _, branch, _ string, _ map[string]string) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprintf("sealed-%s-%d", branch, l.made[branch]), nil
}

func (l *incarnationLake) mergeCount() int {
	l.fakeLake.mu.Lock()
	defer l.fakeLake.mu.Unlock()
	return l.merges
}

func newDedupeFixture(t *testing.T, mod func(*Config)) (*runnerFixture, *incarnationLake) {
	t.Helper()
	lake := &incarnationLake{fakeLake: newFakeLake(), made: map[string]int{}}
	f := newRunnerFixtureWith(t, func(c *Config) {
		c.Lake = lake
		if mod != nil {
			mod(c)
		}
	})
	f.lake = lake.fakeLake
	return f, lake
}

// resend hands the runner batch's BatchLanded of occurred and its write
// again, as an upstream re-send would, and returns the BatchLanded's
// answer.
func (f *runnerFixture) resend(t *testing.T, batch string, occurred time.Time) error {
	t.Helper()
	err := f.handle(t, schemas.BatchLanded{BatchID: batch, Dataset: "billing", ExpectedWrites: []string{"fact"}, Producer: "t", OccurredAt: occurred})
	if werr := f.handle(t, schemas.WriteComplete{BatchID: batch, Dataset: "billing", Write: "fact", OccurredAt: occurred}); werr != nil {
		t.Fatalf("the re-sent write: %v", werr)
	}
	return err
}

// A BatchLanded re-sent after its run was forgotten (runner.terminal_retention)
// and its branch deleted (the janitor) used to start a new run that merged
// the batch a second time. Now a BatchLanded that no run answers, whose own
// time is at or before the retention's horizon, is refused (dead letter
// beyond_horizon): any run it could have had may be forgotten.
func TestResentBatchLandedAfterRetentionIsNotPublishedTwice(t *testing.T) {
	f, lake := newDedupeFixture(t, func(c *Config) { c.Policy.TerminalRetention = 50 * time.Millisecond })
	occurred := time.Now().UTC().Truncate(time.Millisecond)
	if err := f.resend(t, "b1", occurred); err != nil {
		t.Fatal(err)
	}
	f.await(t, "b1", schemas.TypeBatchPublished)
	f.awaitStored(t, "none (b1 forgotten after 50ms)", func(n int) bool { return n == 0 })
	if err := lake.DeleteBranch(context.Background(), "lake", "wap-billing-b1"); err != nil { // the janitor
		t.Fatal(err)
	}
	err := f.resend(t, "b1", occurred)
	var ref *Refusal
	if !errors.As(err, &ref) || ref.Reason != RefusedBeyondHorizon {
		t.Errorf("the re-sent BatchLanded: %v; want a refusal %s", err, RefusedBeyondHorizon)
		f.await(t, "b1", schemas.TypeBatchPublished) // where the new run it started goes
	}
	if r, ok := f.run("billing", "b1"); ok && r.State != StatePending {
		t.Errorf("b1 has a run in state %s after the re-send; want none, or the re-sent write's pending run", r.State)
	}
	if n := lake.mergeCount(); n != 1 {
		t.Errorf("b1 was merged %d times; want once", n)
	}
	// A batch of now lands as before.
	f.land(t, "b2")
	f.await(t, "b2", schemas.TypeBatchPublished)
}

// The same after runner.max_finished_runs forgot the run before its
// retention was over, with the instance restarted in between: the
// partition's floor (the newest batch time of a run forgotten so, which
// every run it still holds of the dataset is at or after) refuses it.
func TestResentBatchLandedAfterEvictionIsNotPublishedTwice(t *testing.T) {
	f, lake := newDedupeFixture(t, func(c *Config) { c.Policy.MaxFinishedRuns = 2 })
	start := time.Now().UTC().Truncate(time.Millisecond).Add(-time.Hour)
	at := func(i int) time.Time { return start.Add(time.Duration(i) * time.Minute) }
	for i := range 4 {
		b := fmt.Sprintf("b%d", i)
		if err := f.resend(t, b, at(i)); err != nil {
			t.Fatal(err)
		}
		f.await(t, b, schemas.TypeBatchPublished)
	}
	f.awaitStored(t, "2 (b0 and b1 forgotten over max_finished_runs)", func(n int) bool { return n == 2 })
	if err := lake.DeleteBranch(context.Background(), "lake", "wap-billing-b0"); err != nil {
		t.Fatal(err)
	}
	var ref *Refusal
	if err := f.resend(t, "b0", at(0)); !errors.As(err, &ref) || ref.Reason != RefusedBeyondHorizon {
		t.Errorf("b0's re-sent BatchLanded: %v; want a refusal %s", err, RefusedBeyondHorizon)
	}
	// After a restart the floor is read from the runs the store holds.
	f.r.Revoked(0)
	if err := f.r.Assigned(context.Background(), 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := lake.DeleteBranch(context.Background(), "lake", "wap-billing-b1"); err != nil {
		t.Fatal(err)
	}
	if err := f.resend(t, "b1", at(1)); !errors.As(err, &ref) || ref.Reason != RefusedBeyondHorizon {
		t.Errorf("b1's re-sent BatchLanded after a restart: %v; want a refusal %s", err, RefusedBeyondHorizon)
	}
	if n := lake.mergeCount(); n != 4 {
		t.Errorf("%d merges for 4 batches; want 4", n)
	}
	// A new batch, after the floor, lands and publishes.
	if err := f.resend(t, "b4", at(4)); err != nil {
		t.Fatal(err)
	}
	f.await(t, "b4", schemas.TypeBatchPublished)
}

// One published batch whose occurred_at is ahead of lakewap's clock (a
// producer's clock hours fast, or local time sent as UTC: validation
// allows 24 h; the writers' clocks right) must not make the partition refuse the dataset's honest
// batches once it is forgotten over runner.max_finished_runs. Forgetting
// the finished runs in the order they finished raised the floor to that
// batch's time, hours ahead, and every BatchLanded of the dataset after it
// on the partition was dead-lettered beyond_horizon until the clock caught
// up. The runs forgotten over the count are those of the earliest batch
// times (runs that did not publish first): the floor then only passes a
// batch that max_finished_runs batches of later times have overtaken.
func TestAFastClockDoesNotRefuseTheDatasetsLaterBatches(t *testing.T) {
	f, lake := newDedupeFixture(t, func(c *Config) { c.Policy.MaxFinishedRuns = 2 })
	now := time.Now().UTC().Truncate(time.Millisecond)
	batches := []struct {
		id string
		at time.Time
	}{{"fast", now.Add(5 * time.Hour)}, {"b1", now.Add(-3 * time.Minute)}, {"b2", now.Add(-2 * time.Minute)}}
	for _, b := range batches {
		// The writer's clock is right: its WriteComplete is of now.
		if err := f.handle(t, schemas.BatchLanded{BatchID: b.id, Dataset: "billing", ExpectedWrites: []string{"fact"}, Producer: "t", OccurredAt: b.at}); err != nil {
			t.Fatal(err)
		}
		if err := f.handle(t, schemas.WriteComplete{BatchID: b.id, Dataset: "billing", Write: "fact", OccurredAt: now}); err != nil {
			t.Fatal(err)
		}
		f.await(t, b.id, schemas.TypeBatchPublished)
	}
	f.awaitStored(t, "2 (one run forgotten over max_finished_runs)", func(n int) bool { return n == 2 })
	// A batch of now, after every honest batch before it.
	if err := f.resend(t, "b3", now); err != nil {
		t.Fatalf("an honest batch of now after a fast clock's batch was forgotten: %v", err)
	}
	f.await(t, "b3", schemas.TypeBatchPublished)
	// The forgotten batch's BatchLanded sent again is still refused, and
	// after a restart too.
	f.awaitStored(t, "2 (two runs forgotten)", func(n int) bool { return n == 2 })
	var forgotten string
	for _, b := range batches {
		if _, ok := f.run("billing", b.id); !ok {
			forgotten = b.id
			if err := lake.DeleteBranch(context.Background(), "lake", schemas.BranchName("billing", b.id)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if forgotten == "" {
		t.Fatal("no batch forgotten")
	}
	f.r.Revoked(0)
	if err := f.r.Assigned(context.Background(), 0, nil); err != nil {
		t.Fatal(err)
	}
	for _, b := range batches {
		if _, ok := f.run("billing", b.id); ok {
			continue
		}
		var ref *Refusal
		if err := f.resend(t, b.id, b.at); !errors.As(err, &ref) || ref.Reason != RefusedBeyondHorizon {
			t.Errorf("forgotten %s's re-sent BatchLanded: %v; want a refusal %s", b.id, err, RefusedBeyondHorizon)
		}
	}
	if n := lake.mergeCount(); n != 4 {
		t.Errorf("%d merges for 4 batches; want 4", n)
	}
}

// With a runner.terminal_retention under 48 h the retention's horizon
// allows for half the retention of producer clock skew, not the 24 h
// validation allows: a published batch whose occurred_at was further
// ahead, forgotten by age, was past the horizon, and its BatchLanded sent
// again started a new run that merged it a second time. A published run
// whose batch time the horizon has not passed is kept past its retention,
// answering its duplicates, until the horizon passes it (a restart keeps
// it too); a floor at its time would refuse the dataset's batches of now.
func TestResentFastBatchAfterAShortRetentionIsNotPublishedTwice(t *testing.T) {
	f, lake := newDedupeFixture(t, func(c *Config) { c.Policy.TerminalRetention = 200 * time.Millisecond })
	now := time.Now().UTC().Truncate(time.Millisecond)
	fast := now.Add(time.Hour) // validation allows 24 h ahead
	send := func() error {
		err := f.handle(t, schemas.BatchLanded{BatchID: "fast", Dataset: "billing", ExpectedWrites: []string{"fact"}, Producer: "t", OccurredAt: fast})
		if werr := f.handle(t, schemas.WriteComplete{BatchID: "fast", Dataset: "billing", Write: "fact", OccurredAt: now}); werr != nil {
			t.Fatalf("the write: %v", werr)
		}
		return err
	}
	if err := send(); err != nil {
		t.Fatal(err)
	}
	f.await(t, "fast", schemas.TypeBatchPublished)
	// Its retention over (the restart's restore forgets it, if no tick did).
	r, _ := f.run("billing", "fast")
	for !time.Now().After(r.StateSince.Add(300 * time.Millisecond)) {
		time.Sleep(time.Millisecond)
	}
	if err := lake.DeleteBranch(context.Background(), "lake", "wap-billing-fast"); err != nil { // the janitor
		t.Fatal(err)
	}
	f.r.Revoked(0)
	if err := f.r.Assigned(context.Background(), 0, nil); err != nil {
		t.Fatal(err)
	}
	err := send()
	var ref *Refusal
	if r, ok := f.run("billing", "fast"); !(ok && r.State == StatePublished) && !(errors.As(err, &ref) && ref.Reason == RefusedBeyondHorizon) {
		t.Errorf("the re-sent BatchLanded after a restart: %v, run %s; want it answered by the published run or refused %s", err, r.State, RefusedBeyondHorizon)
		f.await(t, "fast", schemas.TypeBatchPublished)
	}
	if n := lake.mergeCount(); n != 1 {
		t.Errorf("the batch was merged %d times; want once", n)
	}
	// The dataset's batches of now still publish.
	if err := f.resend(t, "now", time.Now().UTC().Truncate(time.Millisecond).Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	f.await(t, "now", schemas.TypeBatchPublished)
}

// A run that did not publish is forgotten over runner.max_finished_runs in
// its turn by when it finished, not before every published run: an
// aborted batch stays for lakewap runs and RetryRequested while runs older
// than it go.
func TestAnAbortedRunIsNotForgottenBeforeOlderPublishedOnes(t *testing.T) {
	f, _ := newDedupeFixture(t, func(c *Config) { c.Policy.MaxFinishedRuns = 2 })
	start := time.Now().UTC().Truncate(time.Millisecond).Add(-time.Hour)
	if err := f.resend(t, "b0", start); err != nil {
		t.Fatal(err)
	}
	f.await(t, "b0", schemas.TypeBatchPublished)
	if err := f.handle(t, schemas.BatchCancelled{BatchID: "c1", Dataset: "billing", Reason: "not needed", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		if r, ok := f.run("billing", "c1"); ok && Evictable(r) {
			break // its event sent: it may be forgotten
		}
		if time.Now().After(deadline) {
			t.Fatal("c1 never became evictable")
		}
	}
	if err := f.resend(t, "b2", start.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	f.await(t, "b2", schemas.TypeBatchPublished)
	f.awaitStored(t, "2 (one run forgotten)", func(n int) bool { return n == 2 })
	if _, ok := f.run("billing", "c1"); !ok {
		t.Error("an aborted run was forgotten before the older published b0")
	}
	if _, ok := f.run("billing", "b0"); ok {
		t.Error("b0, the oldest, was kept")
	}
}

// The order max_finished_runs forgets runs in: runs aborted before they
// began (a flood's too_many_runs) first, so a flood of them cannot push
// the published runs out and raise the floor to their time; then
// published runs by batch time and the others by when they finished.
func TestEvictionOrder(t *testing.T) {
	now := time.Now().UTC()
	published := func(batch, finished time.Time) Run {
		return Run{State: StatePublished, BatchTime: batch, StateSince: finished}
	}
	aborted := func(reason string, finished time.Time) Run {
		return Run{State: StateAborted, Reason: reason, StateSince: finished}
	}
	for _, c := range []struct {
		name  string
		first Run
		then  Run
	}{
		{"a flood's abort before an older published run", aborted(schemas.ReasonTooManyRuns, now), published(now.Add(-time.Hour), now.Add(-time.Hour))},
		{"an invalid batch before an older published run", aborted(schemas.ReasonInvalid, now), published(now.Add(-time.Hour), now.Add(-time.Hour))},
		{"a published run of an earlier batch time, finished later", published(now.Add(-time.Hour), now), published(now.Add(5*time.Hour), now.Add(-time.Minute))},
		{"an older audit abort before a newer published run", aborted(schemas.ReasonAuditFailed, now.Add(-time.Hour)), published(now, now)},
		{"an older published run before a newer audit abort", published(now.Add(-time.Hour), now.Add(-time.Hour)), aborted(schemas.ReasonAuditFailed, now)},
	} {
		if !evictedBefore(c.first, c.then) || evictedBefore(c.then, c.first) {
			t.Errorf("%s: not forgotten first", c.name)
		}
	}
}

// A run whose merge went through with its answer lost, and whose last look
// timed out too, ends failed at the publish: its batch may well be on the
// target. Forgotten over runner.max_finished_runs, it raised no floor (only
// published runs did), and its BatchLanded sent again started a run that
// merged the batch a second time.
func TestResentBatchLandedOfARunFailedAtThePublishIsNotPublishedTwice(t *testing.T) {
	f, lake := newDedupeFixture(t, func(c *Config) {
		c.Policy = policy(func(p *Policy) {
			p.MinBackoff, p.MaxBackoff, p.RetryBudget = time.Millisecond, time.Millisecond, time.Millisecond
			p.MaxFinishedRuns = 2
		})
	})
	now := time.Now().UTC().Truncate(time.Millisecond)
	lake.mu.Lock()
	lake.fakeLake.mu.Lock()
	// As in TestLastPublishAttemptLooksBeforeFailing: the first merge fails
	// without merging, the second merges with its answer lost, and both
	// looks after it time out.
	lake.fakeLake.mergeErr = []error{fmt.Errorf("503: %w", ErrTransient), nil}
	lake.fakeLake.lostAck, lake.fakeLake.blind = true, 2
	lake.fakeLake.mu.Unlock()
	lake.mu.Unlock()
	if err := f.resend(t, "b0", now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	f.await(t, "b0", schemas.TypeBatchFailed)
	if n := lake.mergeCount(); n != 2 {
		t.Fatalf("b0: %d merge calls; want 2, the second merging with its answer lost", n)
	}
	// Batches of earlier times (b1 to b3), then of later ones (b4, b5), all
	// published: the runs forgotten over the count are b1 to b3 (earliest
	// batch times), then b0, so the floor stays at b3's time, before b0's.
	for i := 1; i <= 5; i++ {
		b := fmt.Sprintf("b%d", i)
		at := now.Add(-3*time.Hour + time.Duration(i)*10*time.Minute)
		if i > 3 {
			at = now.Add(time.Duration(i) * time.Minute)
		}
		if err := f.resend(t, b, at); err != nil {
			t.Fatal(err)
		}
		f.await(t, b, schemas.TypeBatchPublished)
	}
	f.awaitStored(t, "2 (b0 to b3 forgotten over max_finished_runs)", func(n int) bool { return n == 2 })
	if _, ok := f.run("billing", "b0"); ok {
		t.Fatal("b0's run is still kept; the test needs it forgotten")
	}
	if err := lake.DeleteBranch(context.Background(), "lake", "wap-billing-b0"); err != nil { // the janitor
		t.Fatal(err)
	}
	var ref *Refusal
	if err := f.resend(t, "b0", now.Add(-time.Hour)); !errors.As(err, &ref) || ref.Reason != RefusedBeyondHorizon {
		t.Errorf("b0's re-sent BatchLanded: %v; want a refusal %s", err, RefusedBeyondHorizon)
		f.await(t, "b0", schemas.TypeBatchPublished) // where the new run it started goes
	}
	if n := lake.mergeCount(); n != 7 {
		t.Errorf("%d merge calls for 6 batches; want 7 (b0's two, b0 merged once)", n)
	}
}
