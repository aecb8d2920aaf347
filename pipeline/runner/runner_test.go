package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/lakewap/lakewap/pipeline"

	"github.com/lakewap/lakewap/kafka"

	"github.com/lakewap/lakewap/ingest"
	"github.com/lakewap/lakewap/schemas"
)

// Hand-written fakes of the runner's peers.

type fakeLake struct {
	mu       sync.Mutex
	down     bool // every call fails as if lakeFS were unreachable
	branches map[string]bool
	merged   map[string]string // sealed commit -> merge commit
	mergeErr []error           // returned by the next Merge calls, in order
	lostAck  bool              // the next Merge happens but answers with a timeout
	blind    int               // after a lost ack, this many Published calls time out too
	merges   int
	changed  []string // what every sealed commit changes (Changes)
	diffs    int      // Changes calls
	taken    bool     // EnsureBranch finds a branch that is not the run's
	log      []Commit // merge and revert commits on the target, oldest first
	lastMeta map[string]string
	// scratchReverts counts the reverts made on a revert audit's scratch
	// branch (not on the target).
	scratchReverts int
	scratch        map[string]Commit // a revert audit's scratch branch -> its head (no ID before the revert)
}

// fakeCommitter is lakewap's own lakeFS user as the fake lake names it in
// the commits lakewap makes (Committer).
const fakeCommitter = "lakewap"

func (l *fakeLake) Committer(context.Context) (string, error) { return fakeCommitter, nil }

func newFakeLake() *fakeLake {
	return &fakeLake{branches: map[string]bool{}, merged: map[string]string{}}
}

func (l *fakeLake) EnsureBranch(_ context.Context, _, branch, from string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if strings.HasSuffix(branch, revertScratchSuffix) {
		if l.scratch == nil {
			l.scratch = map[string]Commit{}
		}
		l.scratch[branch] = Commit{Parents: []string{from}}
		return false, nil
	}
	if l.down {
		return false, fmt.Errorf("dial tcp 127.0.0.1:8000: connection refused: %w", ErrTransient)
	}
	if l.taken {
		return false, fmt.Errorf("branch %s has commits of its own: %w", branch, ErrBranchTaken)
	}
	existed := l.branches[branch]
	l.branches[branch] = true
	return existed, nil
}

func (l *fakeLake) Seal(_ context.Context, _, branch, _ string, _ map[string]string) (string, error) {
	return "sealed-" + branch, nil
}

// mergedKey: the sealed commits of the default repository "lake" are keyed by id alone.
func mergedKey(repo, sealed string) string {
	if repo == "lake" {
		return sealed
	}
	return repo + "/" + sealed
}

func (l *fakeLake) Published(_ context.Context, repo, _, sealed string, _ time.Time) (Publication, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.blind > 0 && !l.lostAck {
		l.blind--
		return Publication{}, fmt.Errorf("get ref: context deadline exceeded: %w", ErrTransient)
	}
	id, ok := l.merged[mergedKey(repo, sealed)]
	return Publication{OnTarget: ok, Merge: id, Head: "head", Base: "head"}, nil
}

func (l *fakeLake) Merge(_ context.Context, repo, source, _, _ string, meta map[string]string) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.merges++
	if len(l.mergeErr) > 0 {
		err := l.mergeErr[0]
		l.mergeErr = l.mergeErr[1:]
		if err != nil {
			return "", err
		}
	}
	if _, ok := l.merged[mergedKey(repo, source)]; ok {
		return "", fmt.Errorf("no changes: %w", ErrNoChanges) // what lakeFS answers without allow_empty
	}
	id := "merge-" + meta[MetaBatchID]
	l.merged[mergedKey(repo, source)] = id
	l.log = append(l.log, Commit{ID: id, Parents: []string{"head", source}, Metadata: meta, Committer: fakeCommitter})
	l.lastMeta = meta
	if l.lostAck {
		l.lostAck = false
		return "", fmt.Errorf("merge: context deadline exceeded: %w", ErrTransient)
	}
	return id, nil
}

func (l *fakeLake) Head(_ context.Context, _, ref string) (string, error) {
	return "head-of-" + ref, nil
}

func (l *fakeLake) Changes(context.Context, string, string, string) ([]Change, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.diffs++
	out := make([]Change, len(l.changed))
	for i, p := range l.changed {
		out[i] = Change{Path: p, Size: int64(len(p))}
	}
	return out, nil
}

func (l *fakeLake) DeleteBranch(_ context.Context, _, branch string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.branches, branch)
	delete(l.scratch, branch)
	return nil
}

// gateAuditor blocks the audit of batches in gates until released.
type gateAuditor struct {
	mu    sync.Mutex
	gates map[string]chan struct{}
}

func (a *gateAuditor) Audit(ctx context.Context, req AuditRequest) (schemas.AuditReport, error) {
	a.mu.Lock()
	g := a.gates[req.Ref] // a sealed commit's ("sealed-wap-billing-" and the batch)
	a.mu.Unlock()
	if g != nil {
		select {
		case <-g:
		case <-ctx.Done():
			return schemas.AuditReport{}, ctx.Err()
		}
	}
	return report(true), nil
}

type recordingNotifier struct {
	mu       sync.Mutex
	events   []schemas.Event
	requests []string // the RequestID of each event
	ch       chan schemas.Event
}

func (n *recordingNotifier) Notify(_ context.Context, pn Notification) (map[string]string, error) {
	if pn.Event == nil {
		return pn.Receipts, nil
	}
	n.mu.Lock()
	n.events = append(n.events, pn.Event)
	n.requests = append(n.requests, pn.RequestID)
	n.mu.Unlock()
	n.ch <- pn.Event
	return pn.Receipts, nil
}

// memStore is a Store that records the order of writes.
type memStore struct {
	mu      sync.Mutex
	data    map[int]map[string][]byte
	puts    int
	largest int // bytes of the largest value ever put
	fail    error
	onPut   func()
}

func (s *memStore) Put(_ context.Context, p int, k string, v []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	if s.data[p] == nil {
		s.data[p] = map[string][]byte{}
	}
	s.data[p][k] = v
	s.puts++
	s.largest = max(s.largest, len(v))
	if s.onPut != nil {
		s.onPut()
	}
	return nil
}

func (s *memStore) Delete(_ context.Context, p int, k string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.data[p], k)
	return nil
}

func (s *memStore) Load(_ context.Context, p int) (map[string][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]byte{}
	for k, v := range s.data[p] {
		out[k] = v
	}
	return out, nil
}

type runnerFixture struct {
	r     *Runner
	cfg   Config
	lake  *fakeLake
	aud   *gateAuditor
	notes *recordingNotifier
	store *memStore
}

func newRunnerFixture(t *testing.T) *runnerFixture {
	t.Helper()
	return newRunnerFixtureWith(t, nil)
}

// newRunnerFixtureWith is newRunnerFixture with mod applied to the config.
func newRunnerFixtureWith(t *testing.T, mod func(*Config)) *runnerFixture {
	t.Helper()
	f := &runnerFixture{lake: newFakeLake(), aud: &gateAuditor{gates: map[string]chan struct{}{}},
		notes: &recordingNotifier{ch: make(chan schemas.Event, 100)}, store: &memStore{data: map[int]map[string][]byte{}}}
	cfg := Config{Lake: f.lake, Auditor: f.aud, Notifier: f.notes, Store: f.store,
		Datasets: func(n string) (DatasetSpec, bool) {
			return DatasetSpec{Repository: "lake", Target: "main", WriteTimeout: time.Hour}, n == "billing"
		},
		Policy: policy(func(p *Policy) {
			p.MinBackoff, p.MaxBackoff, p.RetryBudget = time.Millisecond, 5*time.Millisecond, time.Minute
		})}
	if mod != nil {
		mod(&cfg)
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.r, f.cfg = r, cfg
	t.Cleanup(r.Close)
	if err := r.Assigned(context.Background(), 0, nil); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *runnerFixture) land(t *testing.T, batch string) {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Millisecond)
	for _, ev := range []schemas.Event{
		schemas.BatchLanded{BatchID: batch, Dataset: "billing", ExpectedWrites: []string{"fact"}, Producer: "t", OccurredAt: now},
		schemas.WriteComplete{BatchID: batch, Dataset: "billing", Write: "fact", OccurredAt: now},
	} {
		if err := f.r.Handle(context.Background(), 0, ev, schemas.TraceContext{}); err != nil {
			t.Fatalf("handle %T: %v", ev, err)
		}
	}
}

func (f *runnerFixture) await(t *testing.T, batch, typ string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev := <-f.notes.ch:
			if ev.Batch() == batch && ev.EventType() == typ {
				return
			}
		case <-timeout:
			t.Fatalf("no %s for %s", typ, batch)
		}
	}
}

// A slow audit of one batch must not hold up another batch of the same
// partition.
func TestSlowAuditDoesNotStallPartition(t *testing.T) {
	f := newRunnerFixture(t)
	gate := make(chan struct{})
	f.aud.gates["sealed-wap-billing-slow"] = gate
	f.land(t, "slow")
	// Wait until the slow batch is in its (blocked) audit: otherwise a
	// loaded machine may publish the fast one before the slow one's branch.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		if r, _ := f.run("billing", "slow"); r.State == StateAuditing {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slow batch never reached its audit")
		}
	}
	f.land(t, "fast")
	f.await(t, "fast", schemas.TypeBatchPublished)
	for _, run := range f.r.Runs() {
		if run.BatchID == "slow" && run.State != StateAuditing {
			t.Errorf("slow batch is %s while its audit is blocked", run.State)
		}
	}
	close(gate)
	f.await(t, "slow", schemas.TypeBatchPublished)
}

// MaxInFlight bounds the steps running at once across batches.
func TestMaxInFlightBoundsConcurrentSteps(t *testing.T) {
	f := &runnerFixture{lake: newFakeLake(), aud: &gateAuditor{gates: map[string]chan struct{}{}},
		notes: &recordingNotifier{ch: make(chan schemas.Event, 100)}, store: &memStore{data: map[int]map[string][]byte{}}}
	var mu sync.Mutex
	running, peak := 0, 0
	gate, reached := make(chan struct{}), make(chan struct{})
	aud := auditFunc(func(ctx context.Context, req AuditRequest) (schemas.AuditReport, error) {
		mu.Lock()
		running++
		if running == 2 && peak < 2 {
			close(reached)
		}
		peak = max(peak, running)
		mu.Unlock()
		<-gate
		mu.Lock()
		running--
		mu.Unlock()
		return report(true), nil
	})
	r, err := New(Config{Lake: f.lake, Auditor: aud, Notifier: f.notes, Store: f.store, MaxInFlight: 2,
		Datasets: func(n string) (DatasetSpec, bool) { return DatasetSpec{Repository: "lake", Target: "main"}, true }})
	if err != nil {
		t.Fatal(err)
	}
	f.r = r
	t.Cleanup(r.Close)
	if err := r.Assigned(context.Background(), 0, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		f.land(t, fmt.Sprintf("bound-%d", i))
	}
	// Once two audits hold the slots, the other three must wait for them.
	select {
	case <-reached:
	case <-time.After(30 * time.Second):
		t.Fatal("two audits never ran at once")
	}
	close(gate)
	published := map[string]bool{}
	for len(published) < 5 {
		select {
		case ev := <-f.notes.ch:
			if ev.EventType() == schemas.TypeBatchPublished {
				published[ev.Batch()] = true
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("published only %v", published)
		}
	}
	if peak != 2 {
		t.Errorf("peak concurrent audits %d, want 2 (MaxInFlight)", peak)
	}
}

type auditFunc func(ctx context.Context, req AuditRequest) (schemas.AuditReport, error)

func (f auditFunc) Audit(ctx context.Context, req AuditRequest) (schemas.AuditReport, error) {
	return f(ctx, req)
}

// Handle returns only after the run is in the store: that is what lets the
// consumer commit the offset.
func TestHandlePersistsBeforeReturning(t *testing.T) {
	f := newRunnerFixture(t)
	now := time.Now().UTC()
	ev := schemas.BatchLanded{BatchID: "p1", Dataset: "billing", ExpectedWrites: []string{"fact"}, Producer: "t", OccurredAt: now}
	if err := f.r.Handle(context.Background(), 0, ev, schemas.TraceContext{}); err != nil {
		t.Fatal(err)
	}
	got, _ := f.store.Load(context.Background(), 0)
	var run Run
	if err := json.Unmarshal(got["billing/p1"], &run); err != nil || run.BatchID != "p1" {
		t.Fatalf("stored run %q, err %v (store keys: %v)", got["billing/p1"], err, slices.Collect(maps.Keys(got)))
	}
	// A store that fails makes Handle fail (so the offset is not committed)
	// and leaves the in-memory state as it was.
	f.store.mu.Lock()
	f.store.fail = errors.New("broker down")
	f.store.mu.Unlock()
	ev2 := schemas.BatchLanded{BatchID: "p2", Dataset: "billing", ExpectedWrites: []string{"fact"}, Producer: "t", OccurredAt: now}
	if err := f.r.Handle(context.Background(), 0, ev2, schemas.TraceContext{}); err == nil {
		t.Fatal("Handle succeeded while the store fails")
	}
	for _, r := range f.r.Runs() {
		if r.BatchID == "p2" {
			t.Errorf("run p2 is in memory although it was never persisted")
		}
	}
	f.store.mu.Lock()
	f.store.fail = nil // p1's steps retry persisting until the store is back
	f.store.mu.Unlock()
	f.await(t, "p1", schemas.TypeBranchReady)
}

// A duplicate event changes nothing and writes nothing: a stale in-memory
// copy must not overwrite what another writer stored since.
func TestDuplicateEventWritesNothing(t *testing.T) {
	f := newRunnerFixture(t)
	ev := schemas.BatchLanded{BatchID: "dup-1", Dataset: "billing", ExpectedWrites: []string{"fact"}, Producer: "t", OccurredAt: time.Now().UTC()}
	if err := f.r.Handle(context.Background(), 0, ev, schemas.TraceContext{}); err != nil {
		t.Fatal(err)
	}
	f.await(t, "dup-1", schemas.TypeBranchReady)
	// Wait until the run is quiet (BranchReady sent and recorded).
	deadline := time.Now().Add(10 * time.Second)
	for {
		runs := f.r.Runs()
		if len(runs) == 1 && runs[0].Sent == 1 && len(runs[0].Outbox) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.store.mu.Lock()
	puts := f.store.puts
	f.store.mu.Unlock()
	if err := f.r.Handle(context.Background(), 0, ev, schemas.TraceContext{}); err != nil {
		t.Fatal(err)
	}
	f.store.mu.Lock()
	defer f.store.mu.Unlock()
	if f.store.puts != puts {
		t.Errorf("a duplicate BatchLanded wrote the run again (%d puts, was %d)", f.store.puts, puts)
	}
}

// Events of a dataset that is not configured are refused and make no run
// (no result event, no metric label of its name), even as Invalid; an
// invalid event of a configured dataset aborts the batch it names.
// (Decoding and validation are the ingest stage's: ingest.TestStage.)
func TestInvalidAndUnknownDatasetEvents(t *testing.T) {
	f := newRunnerFixture(t)
	ev := schemas.BatchLanded{BatchID: "inv-1", Dataset: "no-such-dataset", ExpectedWrites: []string{"fact"}, Producer: "t", OccurredAt: time.Now().UTC()}
	if err := f.r.Handle(context.Background(), 0, ev, schemas.TraceContext{}); !errors.As(err, new(*Refusal)) {
		t.Fatalf("unknown dataset: %v, want a Refusal", err)
	}
	if err := f.r.Invalid(context.Background(), 0, ev, errors.New("bad")); !errors.As(err, new(*Refusal)) {
		t.Fatalf("unknown dataset, invalid: %v, want a Refusal", err)
	}
	if runs := f.r.Runs(); len(runs) != 0 {
		t.Errorf("runs after an event of an unknown dataset: %+v", runs)
	}
	bad := schemas.BatchLanded{BatchID: "inv-2", Dataset: "billing", ExpectedWrites: []string{"fact", "fact"}, Producer: "t", OccurredAt: time.Now().UTC()}
	if err := f.r.Invalid(context.Background(), 0, bad, schemas.Validate(bad, nil, time.Now())); err != nil {
		t.Fatalf("invalid event: %v", err)
	}
	f.await(t, "inv-2", schemas.TypeBatchAborted)
	f.notes.mu.Lock()
	defer f.notes.mu.Unlock()
	for _, ev := range f.notes.events {
		if ev.Batch() == "inv-1" {
			t.Errorf("result event for the unknown dataset's batch: %+v", ev)
		}
	}
	last := f.notes.events[len(f.notes.events)-1].(schemas.BatchAborted)
	if last.Reason != schemas.ReasonInvalid || last.BatchID != "inv-2" {
		t.Errorf("last event %+v, want inv-2 aborted invalid", last)
	}
}

// Merges into main retry on transient lakeFS answers (423, 429, 503,
// "branch is currently locked") and publish exactly once.
func TestMergeRetriesTransientThenPublishesOnce(t *testing.T) {
	f := newRunnerFixture(t)
	locked := fmt.Errorf("merge: branch is currently locked: %w", ErrTransient)
	f.lake.mergeErr = []error{locked, locked, fmt.Errorf("503: %w", ErrTransient)}
	f.land(t, "retry-1")
	f.await(t, "retry-1", schemas.TypeBatchPublished)
	f.lake.mu.Lock()
	defer f.lake.mu.Unlock()
	if f.lake.merges != 4 || f.lake.merged["sealed-wap-billing-retry-1"] == "" {
		t.Errorf("%d merge calls, merged=%v; want 3 failures then 1 success", f.lake.merges, f.lake.merged)
	}
}

// A merge whose answer is lost (timeout) but which happened is not merged
// again: the runner looks on the target before retrying.
func TestMergeTimeoutThatMergedIsNotRepeated(t *testing.T) {
	f := newRunnerFixture(t)
	f.lake.lostAck = true
	f.land(t, "lost-1")
	f.await(t, "lost-1", schemas.TypeBatchPublished)
	f.lake.mu.Lock()
	defer f.lake.mu.Unlock()
	if f.lake.merges != 1 {
		t.Errorf("%d merges, want 1", f.lake.merges)
	}
}

// The last publish attempt's merge happens but its answer is lost, and
// the look inside the attempt times out too (the step's deadline ran out):
// before the run fails, the runner looks once more, finds the sealed
// commit on the target and publishes the run with its merge. When that
// look fails as well, the run fails as before (an operator's retry settles
// it).
func TestLastPublishAttemptLooksBeforeFailing(t *testing.T) {
	for _, tt := range []struct {
		blind int
		want  string
	}{{1, schemas.TypeBatchPublished}, {2, schemas.TypeBatchFailed}} {
		t.Run(fmt.Sprint("blind=", tt.blind), func(t *testing.T) {
			f := newRunnerFixtureWith(t, func(c *Config) {
				c.Policy = policy(func(p *Policy) {
					p.MinBackoff, p.MaxBackoff, p.RetryBudget = time.Millisecond, time.Millisecond, time.Millisecond
				})
			})
			// The first merge fails without merging; the second merges,
			// its answer is lost and the looks after it time out.
			f.lake.mergeErr = []error{fmt.Errorf("503: %w", ErrTransient), nil}
			f.lake.lostAck, f.lake.blind = true, tt.blind
			f.land(t, "last-1")
			f.await(t, "last-1", tt.want)
			f.lake.mu.Lock()
			merges, merged := f.lake.merges, f.lake.merged["sealed-wap-billing-last-1"]
			f.lake.mu.Unlock()
			if merges != 2 || merged != "merge-last-1" {
				t.Fatalf("%d merge calls, merged %q; want 2 calls, the second merging", merges, merged)
			}
			f.notes.mu.Lock()
			defer f.notes.mu.Unlock()
			var kinds []string
			for _, ev := range f.notes.events {
				if ev.Batch() == "last-1" {
					kinds = append(kinds, ev.EventType())
				}
				if p, ok := ev.(schemas.BatchPublished); ok && p.CommitID != merged {
					t.Errorf("BatchPublished names %s, want the merge %s", p.CommitID, merged)
				}
			}
			if tt.want == schemas.TypeBatchPublished && slices.Contains(kinds, schemas.TypeBatchFailed) {
				t.Errorf("events %v: a BatchFailed for a batch on the target", kinds)
			}
		})
	}
}

func TestMergeConflictAbortsKeepingBranch(t *testing.T) {
	f := newRunnerFixture(t)
	f.lake.mergeErr = []error{fmt.Errorf("conflict found: %w", ErrMergeConflict)}
	f.land(t, "conflict-1")
	f.await(t, "conflict-1", schemas.TypeBatchAborted)
	f.notes.mu.Lock()
	last := f.notes.events[len(f.notes.events)-1].(schemas.BatchAborted)
	f.notes.mu.Unlock()
	if last.Reason != schemas.ReasonMergeConflict || !last.BranchKept {
		t.Errorf("aborted %+v, want merge_conflict with branch kept", last)
	}
	f.lake.mu.Lock()
	defer f.lake.mu.Unlock()
	if !f.lake.branches["wap-billing-conflict-1"] {
		t.Error("branch was deleted after a merge conflict")
	}
}

// Restoring a partition resumes runs where they stopped: a run persisted
// in publishing whose merge already happened is not merged again.
func TestRestoreResumesWithoutRepublishing(t *testing.T) {
	f := newRunnerFixture(t)
	rep := report(true)
	run := Run{BatchID: "r1", Dataset: "billing", Repository: "lake", Branch: "wap-billing-r1", Target: "main",
		State: StatePublishing, SealedCommit: "sealed-wap-billing-r1", Report: &rep, LandedAt: time.Now()}
	b, _ := json.Marshal(run)
	_ = f.store.Put(context.Background(), 1, "r1", b)
	f.lake.merged["sealed-wap-billing-r1"] = "merge-r1" // merged before the crash
	if err := f.r.Assigned(context.Background(), 1, nil); err != nil {
		t.Fatal(err)
	}
	f.await(t, "r1", schemas.TypeBatchPublished)
	if f.lake.merges != 0 {
		t.Errorf("restored run merged %d times, want 0 (already on main)", f.lake.merges)
	}
}

// lakeFS unreachable: the run retries with backoff and ends failed, with
// its branch kept and an alert sent, only once the retry budget is spent.
func TestLakeFSDownFailsAfterBudget(t *testing.T) {
	f := &runnerFixture{lake: newFakeLake(), aud: &gateAuditor{gates: map[string]chan struct{}{}},
		notes: &recordingNotifier{ch: make(chan schemas.Event, 100)}, store: &memStore{data: map[int]map[string][]byte{}}}
	f.lake.down = true
	r, err := New(Config{Lake: f.lake, Auditor: f.aud, Notifier: f.notes, Store: f.store,
		Datasets: func(n string) (DatasetSpec, bool) { return DatasetSpec{Repository: "lake", Target: "main"}, true },
		Policy: policy(func(p *Policy) {
			p.MinBackoff, p.MaxBackoff, p.RetryBudget = 5*time.Millisecond, 20*time.Millisecond, 200*time.Millisecond
		})})
	if err != nil {
		t.Fatal(err)
	}
	f.r = r
	t.Cleanup(r.Close)
	if err := r.Assigned(context.Background(), 0, nil); err != nil {
		t.Fatal(err)
	}
	f.land(t, "down-1")
	f.await(t, "down-1", schemas.TypeBatchFailed)
	f.notes.mu.Lock()
	defer f.notes.mu.Unlock()
	failed := f.notes.events[len(f.notes.events)-1].(schemas.BatchFailed)
	if failed.Attempts < 3 || failed.State != string(StateLanded) || !strings.Contains(failed.Error, "connection refused") || !failed.BranchKept {
		t.Errorf("BatchFailed = %+v; want several attempts from state landed, the cause, branch kept", failed)
	}
}

func BenchmarkRestore10kRuns(b *testing.B) {
	store := &memStore{data: map[int]map[string][]byte{0: {}}}
	for i := range 10000 {
		run := Run{BatchID: fmt.Sprintf("batch-%05d", i), Dataset: "billing", Repository: "lake", Branch: fmt.Sprintf("wap-billing-batch-%05d", i),
			Target: "main", State: StateAwaitingWrites, ExpectedWrites: []string{"fact", "dim"},
			Deadline: time.Now().Add(time.Hour), LandedAt: time.Now(), StateSince: time.Now()}
		v, _ := json.Marshal(run)
		store.data[0][run.Key()] = v // as the runner stores it
	}
	for b.Loop() {
		r, _ := New(Config{Lake: newFakeLake(), Auditor: &gateAuditor{}, Notifier: &recordingNotifier{ch: make(chan schemas.Event, 1)},
			Store: store, Datasets: func(string) (DatasetSpec, bool) { return DatasetSpec{}, false }})
		if err := r.Assigned(context.Background(), 0, nil); err != nil {
			b.Fatal(err)
		}
		if len(r.Runs()) != 10000 {
			b.Fatal("not all runs restored")
		}
		b.StopTimer()
		runtime.GC()
		b.ReportMetric(rssMiB(), "RSS-MiB")
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
		b.StartTimer()
		r.Close()
	}
}

// rssMiB is the process's resident set size, from /proc (Linux).
func rssMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

var testCodec = func() *schemas.Codec {
	c, err := schemas.NewCodec(schemas.Options{})
	if err != nil {
		panic(err)
	}
	return c
}()

// ingest hands value to the runner through the ingest stage, as the daemon
// does: decoded, checked against its key and validated against the
// fixture's datasets (MaxDeadlineHorizon horizon).
func (f *runnerFixture) ingest(t *testing.T, key string, value []byte, horizon time.Duration) error {
	t.Helper()
	h := ingest.Wrap(ingest.Config{Codec: testCodec, Counted: f.r.CountInput, Rules: schemas.Rules{
		Known:              func(n string) bool { _, ok := f.cfg.Datasets(n); return ok },
		SourceAllowed:      func(n, ref string) bool { s, _ := f.cfg.Datasets(n); return s.AllowsSource(ref) },
		MaxDeadlineHorizon: horizon,
	}}, f.r)
	return h.Handle(context.Background(), kafka.Message{Partition: 0, Key: []byte(key), Value: value})
}

// avro is ev as the input topic carries it.
func avro(t *testing.T, ev schemas.Event) []byte {
	t.Helper()
	v, err := testCodec.Encode(context.Background(), "wap.events", ev)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
