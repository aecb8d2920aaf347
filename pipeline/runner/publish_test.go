package runner

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	. "github.com/lakewap/lakewap/pipeline"

	"github.com/lakewap/lakewap/schemas"
)

// queueLake is a Lake that records merges per target: their order, how
// many ran at once, and how often each batch was merged.
type queueLake struct {
	fakeLake
	mu2      sync.Mutex
	gate     chan struct{} // merges into main wait for it when not nil
	locked   int           // the next merges answer "branch is currently locked"
	running  map[string]int
	peak     map[string]int
	order    map[string][]string
	perBatch map[string]int
	finds    int
	started  chan string
}

func newQueueLake() *queueLake {
	return &queueLake{fakeLake: *newFakeLake(), running: map[string]int{}, peak: map[string]int{},
		order: map[string][]string{}, perBatch: map[string]int{}, started: make(chan string, 1000)}
}

// Each method counts as one lakeFS API call.
func (l *queueLake) EnsureBranch(ctx context.Context, repo, branch, source string) (bool, error) {
	CountCall(ctx)
	return l.fakeLake.EnsureBranch(ctx, repo, branch, source)
}

func (l *queueLake) Seal(ctx context.Context, repo, branch, msg string, meta map[string]string) (string, error) {
	CountCall(ctx)
	return l.fakeLake.Seal(ctx, repo, branch, msg, meta)
}

// basedQueueLake is a queueLake that finds merge-bases, so that a publish
// waiting for its turn takes its diff (prepareDiff).
type basedQueueLake struct{ *queueLake }

func (l basedQueueLake) MergeBase(ctx context.Context, repo, source, dest string) (string, string, error) {
	CountCall(ctx)
	p, err := l.fakeLake.Published(ctx, repo, dest, source, time.Time{})
	return p.Base, p.Head, err
}

func (l *queueLake) Published(ctx context.Context, repo, target, sealed string, since time.Time) (Publication, error) {
	CountCall(ctx)
	l.mu2.Lock()
	l.finds++
	l.mu2.Unlock()
	return l.fakeLake.Published(ctx, repo, target, sealed, since)
}

func (l *queueLake) Merge(ctx context.Context, repo, source, dest, _ string, meta map[string]string) (string, error) {
	CountCall(ctx)
	batch := meta[MetaBatchID]
	l.mu2.Lock()
	l.running[dest]++
	l.peak[dest] = max(l.peak[dest], l.running[dest])
	gate := l.gate
	locked := l.locked > 0
	if locked {
		l.locked--
	}
	l.mu2.Unlock()
	defer func() { l.mu2.Lock(); l.running[dest]--; l.mu2.Unlock() }()
	l.started <- batch
	if locked {
		return "", fmt.Errorf("merge %s: branch is currently locked: %w", dest, ErrBranchLocked)
	}
	if gate != nil && dest == "main" {
		select {
		case <-gate:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	l.mu2.Lock()
	l.order[dest] = append(l.order[dest], batch)
	l.perBatch[batch]++
	l.mu2.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.merges++
	id := "merge-" + batch
	l.merged[mergedKey(repo, source)] = id
	return id, nil
}

type queueFixture struct {
	runnerFixture
	lake    *queueLake
	release map[string]chan struct{} // audit gates by batch
	gmu     sync.Mutex
}

// newQueueFixture: dataset "billing" publishes to main, "other" to dev;
// every audit waits for its batch's gate when one is set.
func newQueueFixture(t *testing.T, grace time.Duration) *queueFixture {
	t.Helper()
	f := &queueFixture{lake: newQueueLake(), release: map[string]chan struct{}{}}
	f.notes = &recordingNotifier{ch: make(chan schemas.Event, 10000)}
	f.store = &memStore{data: map[int]map[string][]byte{}}
	aud := auditFunc(func(ctx context.Context, req AuditRequest) (schemas.AuditReport, error) {
		f.gmu.Lock()
		g := f.release[req.Ref]
		f.gmu.Unlock()
		if g != nil {
			select {
			case <-g:
			case <-ctx.Done():
				return schemas.AuditReport{}, ctx.Err()
			}
		}
		return report(true), nil
	})
	r, err := New(Config{Lake: f.lake, Auditor: aud, Notifier: f.notes, Store: f.store,
		MaxInFlight: 64, Grace: grace, LockBackoff: time.Millisecond,
		Datasets: func(n string) (DatasetSpec, bool) {
			target := map[string]string{"billing": "main", "other": "dev"}[n]
			return DatasetSpec{Repository: "lake", Target: target, WriteTimeout: time.Hour}, target != ""
		},
		Policy: policy(func(p *Policy) {
			p.MinBackoff, p.MaxBackoff, p.RetryBudget = time.Millisecond, 5*time.Millisecond, time.Minute
		})})
	if err != nil {
		t.Fatal(err)
	}
	f.r = r
	t.Cleanup(r.Close)
	return f
}

// histogram is the histogram of vec with labels.
func histogram(t *testing.T, vec *prometheus.HistogramVec, labels ...string) *dto.Histogram {
	t.Helper()
	var m dto.Metric
	if err := vec.WithLabelValues(labels...).(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram()
}

// gate makes the audit of batch (of dataset ds) wait until the returned
// function is called.
func (f *queueFixture) gate(ds, batch string) func() {
	g := make(chan struct{})
	f.gmu.Lock()
	f.release["sealed-"+schemas.BranchName(ds, batch)] = g
	f.gmu.Unlock()
	return func() { close(g) }
}

func (f *queueFixture) landIn(t *testing.T, part int, ds, batch string) {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Millisecond)
	for _, ev := range []schemas.Event{
		schemas.BatchLanded{BatchID: batch, Dataset: ds, ExpectedWrites: []string{"fact"}, Producer: "t", OccurredAt: now},
		schemas.WriteComplete{BatchID: batch, Dataset: ds, Write: "fact", OccurredAt: now},
	} {
		if err := f.r.Handle(context.Background(), part, ev, schemas.TraceContext{}); err != nil {
			t.Fatalf("handle %T: %v", ev, err)
		}
	}
}

func (f *queueFixture) awaitState(t *testing.T, batch string, want State) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, run := range f.r.Runs() {
			if run.BatchID == batch && run.State == want {
				return
			}
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%s never reached %s", batch, want)
}

// awaitPublished waits for BatchPublished of every batch in want, failing
// on any other outcome.
func (f *queueFixture) awaitPublished(t *testing.T, want ...string) {
	t.Helper()
	left := map[string]bool{}
	for _, b := range want {
		left[b] = true
	}
	timeout := time.After(60 * time.Second)
	for len(left) > 0 {
		select {
		case ev := <-f.notes.ch:
			switch ev.EventType() {
			case schemas.TypeBatchPublished:
				delete(left, ev.Batch())
			case schemas.TypeBatchAborted, schemas.TypeBatchFailed:
				t.Fatalf("%s: %+v", ev.Batch(), ev)
			}
		case <-timeout:
			t.Fatalf("not published: %v", left)
		}
	}
}

// Publishes into one target run one at a time, in the order the audits
// finished; another target's publishes do not wait for them; each looks at
// the target once (is it there already, did the target move since the
// batch's snapshot) before it merges.
func TestPublishQueueRunsInAuditOrderOneAtATime(t *testing.T) {
	f := newQueueFixture(t, time.Second)
	if err := f.r.Assigned(context.Background(), 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.r.Assigned(context.Background(), 1, nil); err != nil {
		t.Fatal(err)
	}
	f.lake.gate = make(chan struct{})
	batches := []string{"q0", "q1", "q2", "q3", "q4", "q5"}
	open := map[string]func(){}
	for i, b := range batches {
		open[b] = f.gate("billing", b)
		f.landIn(t, i%2, "billing", b) // two partitions share the target
	}
	// Audits finish in this order; the first holds the target (its merge
	// waits at the gate), the others queue behind it.
	finish := []string{"q3", "q0", "q5", "q1", "q4", "q2"}
	for _, b := range finish {
		open[b]()
		f.awaitState(t, b, StatePublishing)
	}
	if got := <-f.lake.started; got != "q3" {
		t.Fatalf("first merge %s, want q3", got)
	}
	// The other five wait in main's queue, and the gauge says so.
	depth := f.r.metrics.queued.WithLabelValues("lake", "main")
	for deadline := time.Now().Add(30 * time.Second); testutil.ToFloat64(depth) != 5; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("lakewap_publish_queue_depth{target=main} is %v, want the 5 publishes behind q3", testutil.ToFloat64(depth))
		}
	}
	// While main is held, dev publishes.
	f.landIn(t, 0, "other", "d0")
	f.awaitPublished(t, "d0")
	close(f.lake.gate)
	f.awaitPublished(t, batches...)

	f.lake.mu2.Lock()
	defer f.lake.mu2.Unlock()
	if fmt.Sprint(f.lake.order["main"]) != fmt.Sprint(finish) {
		t.Errorf("merge order %v, want the audit order %v", f.lake.order["main"], finish)
	}
	if f.lake.peak["main"] != 1 {
		t.Errorf("%d merges into main ran at once, want 1", f.lake.peak["main"])
	}
	if f.lake.finds != 7 {
		t.Errorf("%d looks at the target, want one per publish (7)", f.lake.finds)
	}
	if waits := histogram(t, f.r.metrics.waited, "lake", "main", "publish").GetSampleCount() + histogram(t, f.r.metrics.waited, "lake", "dev", "publish").GetSampleCount(); waits != 7 {
		t.Errorf("%d queue waits observed, want 7", waits)
	}
	// Per batch: create branch, seal, look, merge (the fake auditor calls
	// nothing): 7 samples, all in (2, 4], summing to 28, are all 4.
	calls := histogram(t, f.r.metrics.calls, "billing")
	other := histogram(t, f.r.metrics.calls, "other")
	n, sum := calls.GetSampleCount()+other.GetSampleCount(), calls.GetSampleSum()+other.GetSampleSum()
	le := func(h *dto.Histogram, bound float64) (c uint64) {
		for _, b := range h.GetBucket() {
			if b.GetUpperBound() == bound {
				c = b.GetCumulativeCount()
			}
		}
		return c
	}
	if n != 7 || sum != 28 || le(calls, 2)+le(other, 2) != 0 || le(calls, 4)+le(other, 4) != 7 {
		t.Errorf("lakewap_lakefs_calls_per_batch: %d samples summing to %v (want 7 of 4 each: branch, seal, look, merge)", n, sum)
	}
}

// A target locked by someone else (another instance, a manual merge) is
// retried by the queue with a short backoff, not by the run's slow retry:
// the run never records a failed attempt.
func TestPublishQueueRetriesForeignLock(t *testing.T) {
	f := newQueueFixture(t, time.Second)
	var attempts []int
	var mu sync.Mutex
	f.r.cfg.Observe = func(_, after Run) {
		mu.Lock()
		attempts = append(attempts, after.Attempts)
		mu.Unlock()
	}
	if err := f.r.Assigned(context.Background(), 0, nil); err != nil {
		t.Fatal(err)
	}
	f.lake.locked = 3
	f.landIn(t, 0, "billing", "lk")
	f.awaitPublished(t, "lk")
	f.lake.mu2.Lock()
	defer f.lake.mu2.Unlock()
	if f.lake.perBatch["lk"] != 1 || len(f.lake.started) != 4 {
		t.Errorf("merged %d times in %d attempts, want once after 3 locked answers", f.lake.perBatch["lk"], len(f.lake.started))
	}
	mu.Lock()
	defer mu.Unlock()
	for _, a := range attempts {
		if a != 0 {
			t.Fatalf("the run recorded a failed attempt (%v): a foreign lock went to the slow retry", attempts)
		}
	}
}

// Revoking a partition while its publishes wait in the queue drops them
// without merging; the next owner publishes each exactly once.
func TestPublishQueueRevokedWhileQueued(t *testing.T) {
	f := newQueueFixture(t, 50*time.Millisecond)
	f.r.cfg.Lake = basedQueueLake{f.lake} // the waiting publishes take their diffs, which must not outlive them
	if err := f.r.Assigned(context.Background(), 0, nil); err != nil {
		t.Fatal(err)
	}
	f.lake.gate = make(chan struct{})
	batches := []string{"rv0", "rv1", "rv2", "rv3"}
	for _, b := range batches {
		f.landIn(t, 0, "billing", b)
		f.awaitState(t, b, StatePublishing)
	}
	first := <-f.lake.started
	f.r.Revoked(0) // the running merge is cancelled after the grace
	f.lake.mu2.Lock()
	n := len(f.lake.started)
	merged := len(f.lake.order["main"])
	f.lake.mu2.Unlock()
	if n != 0 || merged != 0 {
		t.Fatalf("after revocation %d more merges started and %d finished, want none (first was %s)", n, merged, first)
	}
	close(f.lake.gate)
	if err := f.r.Assigned(context.Background(), 0, nil); err != nil {
		t.Fatal(err)
	}
	f.awaitPublished(t, batches...)
	f.r.dmu.Lock()
	if n := len(f.r.diffs); n != 0 {
		t.Errorf("%d diffs taken while waiting are still kept after every publish", n)
	}
	f.r.dmu.Unlock()
	f.lake.mu2.Lock()
	defer f.lake.mu2.Unlock()
	for _, b := range batches {
		if f.lake.perBatch[b] != 1 {
			t.Errorf("%s merged %d times, want 1", b, f.lake.perBatch[b])
		}
	}
	if f.lake.finds != len(batches)+1 {
		t.Errorf("%d looks at the target, want %d (the first before its cancelled merge, then each restored run)", f.lake.finds, len(batches)+1)
	}
}

// Many batches over several partitions and two targets, audits finishing
// in random order: every batch is published exactly once, never two
// merges into one target at once.
func TestPublishQueueNoLostOrDuplicatedPublish(t *testing.T) {
	f := newQueueFixture(t, time.Second)
	for p := range 4 {
		if err := f.r.Assigned(context.Background(), p, nil); err != nil {
			t.Fatal(err)
		}
	}
	var all []string
	var opens []func()
	for i := range 80 {
		ds := []string{"billing", "other"}[i%2]
		b := fmt.Sprintf("n%02d", i)
		all = append(all, b)
		opens = append(opens, f.gate(ds, b))
		f.landIn(t, i%4, ds, b)
	}
	rand.Shuffle(len(opens), func(i, j int) { opens[i], opens[j] = opens[j], opens[i] })
	for _, o := range opens {
		o()
	}
	f.awaitPublished(t, all...)
	f.lake.mu2.Lock()
	for _, b := range all {
		if f.lake.perBatch[b] != 1 {
			t.Errorf("%s merged %d times, want 1", b, f.lake.perBatch[b])
		}
	}
	if f.lake.peak["main"] != 1 || f.lake.peak["dev"] != 1 {
		t.Errorf("peak merges at once: main %d, dev %d; want 1", f.lake.peak["main"], f.lake.peak["dev"])
	}
	f.lake.mu2.Unlock()
	// The workers end once their queue is empty.
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.r.qmu.Lock()
		n := len(f.r.queues)
		f.r.qmu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d queues left after every publish finished", n)
		}
		time.Sleep(time.Millisecond)
	}
}

// What a publish's merge landed on (Config.Unattested: a read of the merge
// commit, new to lakeFS, and of the target's log) is looked for after the
// target's turn has passed on: in the turn, it held every later publish to
// the target back by those reads.
func TestPublishTurnPassesBeforeTheLookForUnattestedCommits(t *testing.T) {
	f := newQueueFixture(t, time.Second)
	held := make(chan struct{})
	asked := make(chan string, 10)
	f.r.cfg.Unattested = func(ctx context.Context, run Run, merge string) ([]schemas.UnattestedChange, error) {
		asked <- run.BatchID
		if run.BatchID == "u0" {
			select {
			case <-held:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return []schemas.UnattestedChange{{EventID: "c-" + run.BatchID, Kind: schemas.ChangeUnattestedCommit, CommitID: "d1"}}, nil
	}
	if err := f.r.Assigned(context.Background(), 0, nil); err != nil {
		t.Fatal(err)
	}
	open0, open1 := f.gate("billing", "u0"), f.gate("billing", "u1")
	f.landIn(t, 0, "billing", "u0")
	f.landIn(t, 0, "billing", "u1")
	open0()
	if got := <-asked; got != "u0" {
		t.Fatalf("asked about %s first, want u0", got)
	}
	// u0 is merged and its look for unattested commits held: u1 merges.
	open1()
	f.awaitPublished(t, "u1")
	close(held)
	f.awaitPublished(t, "u0")
	f.lake.mu2.Lock()
	defer f.lake.mu2.Unlock()
	if fmt.Sprint(f.lake.order["main"]) != "[u0 u1]" {
		t.Errorf("merge order %v, want [u0 u1]", f.lake.order["main"])
	}
}
