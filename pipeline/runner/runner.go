package runner

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakewap/lakewap/internal/backoff"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// Defaults of the runner's own settings (Config).
const (
	DefaultMaxInFlight = 16
	DefaultStepTimeout = 5 * time.Minute
	DefaultGrace       = 10 * time.Second
)

// Config wires a Runner.
type Config struct {
	Lake     pipeline.Lake
	Auditor  pipeline.Auditor
	Notifier pipeline.Notifier
	Store    pipeline.Store
	// Datasets resolves a dataset name from an event to its spec.
	Datasets func(name string) (pipeline.DatasetSpec, bool)
	// Policy is the machine's; the zero Policy means DefaultPolicy, any
	// other must be whole (start from DefaultPolicy).
	Policy      pipeline.Policy
	MaxInFlight int           // steps (branch, audit, publish) running at once; default DefaultMaxInFlight
	StepTimeout time.Duration // deadline of one step; default DefaultStepTimeout
	Grace       time.Duration // how long revocation waits for in-flight steps; default DefaultGrace
	// LockBackoff is the first backoff of a merge that found its target
	// locked by another writer (default 20ms; doubled up to 1s, jittered,
	// for at most lockWait).
	LockBackoff time.Duration
	Logger      *slog.Logger
	Now         func() time.Time
	// Observe, if set, is called after every persisted change of a run.
	Observe func(before, after pipeline.Run)
	// Registerer, if set, gets the runner's metrics (metrics.go);
	// DatasetNames are the datasets whose past-deadline series exist from
	// the start.
	Registerer   prometheus.Registerer
	DatasetNames []string
	// Tracer, if set, spans each step that talks to lakeFS: Step returns
	// the step's context and the function ending its span with the step's
	// input; Span does the same for a part of a step, such as the seal
	// (internal/tracing).
	Tracer interface {
		Step(ctx context.Context, run pipeline.Run, k pipeline.EffectKind) (context.Context, func(pipeline.Input))
		Span(ctx context.Context, name string) (context.Context, func(error))
	}
	// Failpoint, if set, is called at named points between a side effect
	// and the persistence of its outcome; crash tests make it kill the
	// process there. Names: after_write, after_branch, during_audit,
	// before_merge, after_merge, before_send.
	Failpoint func(name string)
	// Attest, if set, gives the metadata that attests a run's publish (the
	// audit's suite and verdict, see audit.Attestation), added to the merge
	// commit's: against is the target commit the run's report checked the
	// sealed commit onto (a recheck's head), empty for the audit's own
	// foundation. An error is logged and the batch is published without it:
	// the next audit of the dataset is then full, never wrong.
	Attest func(ctx context.Context, run pipeline.Run, against string) (map[string]string, error)
	// Unattested, if set, finds what the run's publish, the merge commit
	// merge on its target, landed on that lakewap did not attest: commits
	// since lakewap's last publish there, and a change of the dataset's
	// suite since its last publish. They are announced with the publish.
	// An error is logged and nothing is announced.
	Unattested func(ctx context.Context, run pipeline.Run, merge string) ([]schemas.UnattestedChange, error)
}

// Runner executes the machine's effects for the runs of the partitions
// assigned to this instance: it applies every input through
// pipeline.Machine.Apply, stores what changed, and hands each effect to its
// executor (executors, one file per step).
type Runner struct {
	cfg    Config
	m      pipeline.Machine
	log    *slog.Logger
	sem    chan struct{}
	mu     sync.Mutex
	parts  map[int]*partition
	open   atomic.Int64 // runs in an Open state across the assigned partitions
	openMu sync.Mutex
	openBy map[string]int // runs in an Open state by dataset: max_open_runs applies per dataset
	// openBytes is what those runs hold of their producers' bytes, by
	// dataset (pipeline.OpenBytes; Policy.MaxOpenBytes).
	openBytes map[string]int
	// landing serialises the landings of one dataset across partitions,
	// from reading its open count to storing the run, so that landings
	// taken at the same moment cannot each pass max_open_runs.
	landing map[string]*sync.Mutex
	metrics *metrics
	// gate runs the audit attempts of suspect runs alone (alone.go).
	gate *auditGate

	qmu    sync.Mutex
	queues map[targetKey]*publishQueue // publish queue per target, while not empty

	dmu   sync.Mutex
	diffs map[string]*diffFlight // sealed commits' diffs taken while their publish waits (publish.go)
	// diffChanges are the changes the diffs hold in all (at most
	// maxPreparedChanges); diffSlots the diffs being taken from lakeFS.
	diffChanges int
	// diffBytes is what they hold in bytes (changeBytes; at most
	// maxPreparedBytes).
	diffBytes int
	diffSlots chan struct{}
	// audited are the audit step's diffs of sealed commits, for their
	// publishes to take instead of asking lakeFS again (publish.go).
	audited auditedDiffs

	// outcomeApplied, if set, is called by execute after an effect's
	// outcome was applied and before the effect leaves flight: tests
	// put an input of the run there (a timer's tick).
	outcomeApplied func(p *partition, key string, k pipeline.EffectKind)
}

// landingLock is the lock of dataset's landings (a configured dataset:
// the map is bounded by the config).
func (r *Runner) landingLock(dataset string) *sync.Mutex {
	r.openMu.Lock()
	defer r.openMu.Unlock()
	if r.landing == nil {
		r.landing = map[string]*sync.Mutex{}
	}
	mu := r.landing[dataset]
	if mu == nil {
		mu = &sync.Mutex{}
		r.landing[dataset] = mu
	}
	return mu
}

// openOf is how many runs of dataset this instance holds in progress, and
// how many bytes of their producers' they hold.
func (r *Runner) openOf(dataset string) (runs, bytes int) {
	r.openMu.Lock()
	defer r.openMu.Unlock()
	return r.openBy[dataset], r.openBytes[dataset]
}

// hold counts run entering (+1) or leaving (-1) its state on this
// instance.
func (r *Runner) hold(run pipeline.Run, delta int) {
	dataset, state := run.Dataset, run.State
	if state.Open() {
		r.open.Add(int64(delta))
		r.openMu.Lock()
		if r.openBy == nil {
			r.openBy, r.openBytes = map[string]int{}, map[string]int{}
		}
		if r.openBy[dataset] += delta; r.openBy[dataset] <= 0 {
			delete(r.openBy, dataset)
		}
		if r.openBytes[dataset] += delta * pipeline.OpenBytes(run); r.openBytes[dataset] <= 0 {
			delete(r.openBytes, dataset)
		}
		r.openMu.Unlock()
	}
	if state != "" {
		r.metrics.hold(r.label(dataset), state, delta)
	}
}

// effectOf names an effect of the run under a key.
type effectOf struct {
	key  string
	kind pipeline.EffectKind
}

type partition struct {
	id       int
	behind   func(t time.Time) bool // the consumer's lag probe; nil: never behind
	ctx      context.Context
	cancel   context.CancelFunc
	mu       sync.Mutex
	runs     map[string]pipeline.Run
	inflight map[effectOf]bool
	timers   map[string]*time.Timer
	wg       sync.WaitGroup
	closing  bool
	// gone: Revoked has returned. The partition writes nothing more to the
	// store: its next owner may have restored it (review 60).
	gone bool
	stop chan struct{} // closed when the partition is revoked
	// calls counts the lakeFS API calls made for each run.
	calls map[string]*atomic.Int64
	// pending counts the runs of batches that have not landed
	// (Policy.MaxPendingRuns), finished the finished runs by dataset
	// (Policy.MaxFinishedRuns).
	pending  int
	finished map[string]int
	// finishedBytes is what the finished runs hold of their producers'
	// bytes, by dataset (pipeline.HeldBytes; Policy.MaxFinishedBytes).
	finishedBytes map[string]int
	// floor is, by dataset, the newest batch time of a published run
	// forgotten over Policy.MaxFinishedRuns (Landed.Floor): stamped on
	// every run record written (Run.Floor), restored as the newest stored.
	floor map[string]time.Time
	// early counts the writes the pending runs hold
	// (Policy.MaxPendingRuns bounds them to twice its value).
	early int
}

// earlyWrites is how many early writes r holds toward the partition's
// bound: its writes while its batch has not landed.
func earlyWrites(r pipeline.Run) int {
	if r.State != pipeline.StatePending {
		return 0
	}
	return len(r.Writes)
}

// count adds delta to the partition's counts of the runs in run's state.
// Called with p.mu held.
func (p *partition) count(run pipeline.Run, delta int) {
	dataset, s := run.Dataset, run.State
	switch {
	case s == pipeline.StatePending:
		p.pending += delta
	case s.Terminal():
		if p.finished[dataset] += delta; p.finished[dataset] <= 0 {
			delete(p.finished, dataset)
		}
		if p.finishedBytes == nil {
			p.finishedBytes = map[string]int{}
		}
		if p.finishedBytes[dataset] += delta * pipeline.HeldBytes(run); p.finishedBytes[dataset] <= 0 {
			delete(p.finishedBytes, dataset)
		}
	}
}

// New checks cfg and returns a runner.
func New(cfg Config) (*Runner, error) {
	for _, c := range []struct {
		name string
		ok   bool
	}{{"Lake", cfg.Lake != nil}, {"Auditor", cfg.Auditor != nil}, {"Notifier", cfg.Notifier != nil},
		{"Store", cfg.Store != nil}, {"Datasets", cfg.Datasets != nil}} {
		if !c.ok {
			return nil, fmt.Errorf("pipeline: Config.%s is required", c.name)
		}
	}
	if cfg.Policy == (pipeline.Policy{}) {
		cfg.Policy = pipeline.DefaultPolicy
	}
	if err := cfg.Policy.Validate(); err != nil {
		return nil, err
	}
	cfg.MaxInFlight = positiveOr(cfg.MaxInFlight, DefaultMaxInFlight)
	cfg.StepTimeout = positiveOr(cfg.StepTimeout, DefaultStepTimeout)
	cfg.Grace = positiveOr(cfg.Grace, DefaultGrace)
	cfg.LockBackoff = positiveOr(cfg.LockBackoff, 20*time.Millisecond)
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Failpoint == nil {
		cfg.Failpoint = func(string) {}
	}
	r := &Runner{
		cfg: cfg, m: pipeline.NewMachine(cfg.Policy), log: cfg.Logger,
		sem: make(chan struct{}, cfg.MaxInFlight), parts: map[int]*partition{},
		queues: map[targetKey]*publishQueue{}, gate: newAuditGate(),
	}
	var err error
	if r.metrics, err = newMetrics(cfg.Registerer, cfg.DatasetNames, r.Runs, cfg.Now); err != nil {
		return nil, fmt.Errorf("runner metrics: %w", err)
	}
	return r, nil
}

// CountInput counts an input event by type and outcome in
// lakewap_inputs_total: the ingest stage's dead letters
// (ingest.Config.Counted).
func (r *Runner) CountInput(eventType, outcome string) { r.metrics.input(eventType, outcome) }

// positiveOr is v, or d when v is not positive.
func positiveOr[T int | time.Duration](v, d T) T {
	if v <= 0 {
		return d
	}
	return v
}

// Assigned restores a partition's runs from the store and resumes their
// pending work. Messages of the partition are handled only after it returns.
// behind is the consumer's lag probe of the partition: whether it may still
// hold unread input from before t (its lag and the time of the newest
// message it handled); nil means never. See Tick.Lagging.
func (r *Runner) Assigned(ctx context.Context, id int, behind func(t time.Time) bool) error {
	raw, err := r.cfg.Store.Load(ctx, id)
	if err != nil {
		return fmt.Errorf("restore partition %d: %w", id, err)
	}
	pctx, cancel := context.WithCancel(context.Background())
	p := &partition{id: id, behind: behind, ctx: pctx, cancel: cancel, runs: make(map[string]pipeline.Run, len(raw)),
		inflight: map[effectOf]bool{}, timers: map[string]*time.Timer{},
		stop: make(chan struct{}), calls: map[string]*atomic.Int64{}, finished: map[string]int{}, floor: map[string]time.Time{}}
	for key, v := range raw {
		var run pipeline.Run
		if err := json.Unmarshal(v, &run); err != nil {
			r.log.Error("skipping unreadable run in state store", "partition", id, "key", key, "err", err)
			continue
		}
		if want := run.Key(); key != want {
			// Stored before runs were keyed by (dataset, batch id): move it.
			if err := r.cfg.Store.Put(ctx, id, want, v); err != nil {
				return fmt.Errorf("restore partition %d: re-key run %s: %w", id, key, err)
			}
			if err := r.cfg.Store.Delete(ctx, id, key); err != nil {
				return fmt.Errorf("restore partition %d: re-key run %s: %w", id, key, err)
			}
			key = want
		}
		p.runs[key] = run
		if run.Floor.After(p.floor[run.Dataset]) {
			p.floor[run.Dataset] = run.Floor
		}
		p.count(run, +1)
		p.early += earlyWrites(run)
		r.hold(run, +1)
	}
	r.Revoked(id) // an earlier assignment of the partition, if any
	r.mu.Lock()
	r.parts[id] = p
	r.mu.Unlock()
	p.mu.Lock()
	var failed error
	for _, k := range slices.Sorted(maps.Keys(p.runs)) {
		// Restored first: an audit begun and never reported ended with
		// its process, and is counted before the run's work resumes.
		if _, err := r.applyLocked(ctx, p, k, pipeline.Restored{}); err != nil {
			failed = fmt.Errorf("restore partition %d: %w", id, err)
			break
		}
	}
	n := len(p.runs)
	p.mu.Unlock()
	if failed != nil {
		r.Revoked(id) // the consumer asks again
		return failed
	}
	r.log.Info("partition restored", "partition", id, "runs", n)
	return nil
}

// Revoked stops a partition's work: steps in flight get Grace to finish and
// persist their outcome, then are cancelled; whatever did not finish is
// redone by the next owner from the stored state.
func (r *Runner) Revoked(id int) {
	r.mu.Lock()
	p := r.parts[id]
	delete(r.parts, id)
	r.mu.Unlock()
	if p == nil {
		return
	}
	p.mu.Lock()
	close(p.stop) // p left r.parts above: it is revoked once
	p.closing = true
	for _, t := range p.timers {
		t.Stop()
	}
	p.mu.Unlock()
	graceEnds := time.Now().Add(r.cfg.Grace)
	grace := time.AfterFunc(r.cfg.Grace, p.cancel)
	p.wg.Wait()
	grace.Stop()
	p.cancel()
	r.settle(p, graceEnds)
	p.mu.Lock()
	for key, run := range p.runs {
		r.hold(run, -1)
		r.gate.release(key) // an attempt whose stop could not be stored
	}
	// A goroutine the revocation did not wait for (a step's audit that
	// does not return when cancelled, a timer that fired as it stopped
	// them) applies nothing from now on: apply holds p.mu while it
	// stores, so none is storing now, and none stores after.
	p.gone = true
	p.mu.Unlock()
	r.log.Info("partition revoked", "partition", id)
}

// Settler is a Notifier whose deliveries may go on after Notify returned
// (a slow Slack's, the run's record saying pending): Settled awaits the
// run's, until ctx ends, and returns the run's receipts with what they left
// (ok false: nothing new). At a revocation the runner stores them, so that
// the next owner edits the message Slack took instead of posting another.
type Settler interface {
	Settled(ctx context.Context, run pipeline.Run) (receipts map[string]string, ok bool)
}

// settle stores, for each run of p still owing a notification, the
// receipts its deliveries left in the background (Settler): awaited until
// the revocation's grace ends (those done by then are taken), each stored
// within Grace. Called when p's steps are done and before it is marked gone.
func (r *Runner) settle(p *partition, graceEnds time.Time) {
	s, ok := r.cfg.Notifier.(Settler)
	if !ok {
		return
	}
	wait, stopWaiting := context.WithDeadline(context.Background(), graceEnds)
	defer stopWaiting()
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Grace)
	defer cancel()
	p.mu.Lock()
	var owing []pipeline.Run
	for _, run := range p.runs {
		if owes(run) {
			owing = append(owing, run.Clone())
		}
	}
	p.mu.Unlock()
	for _, run := range owing {
		receipts, ok := s.Settled(wait, run)
		if !ok {
			continue
		}
		key := run.Key()
		p.mu.Lock()
		if cur, held := p.runs[key]; held && maps.Equal(cur.Receipts, run.Receipts) {
			if _, err := r.applyLocked(ctx, p, key, pipeline.Sent{Receipts: receipts}); err != nil {
				r.log.Warn("storing the receipts of notifications finished in the background", "batch_id", run.BatchID, "dataset", run.Dataset, "err", err)
			}
		}
		p.mu.Unlock()
	}
}

// owes reports whether a sink has not confirmed the run's last notification.
func owes(run pipeline.Run) bool {
	for k := range run.Receipts {
		if strings.HasPrefix(k, schemas.PendingReceiptPrefix) {
			return true
		}
	}
	return false
}

// Close revokes every partition.
func (r *Runner) Close() {
	r.mu.Lock()
	ids := slices.Collect(maps.Keys(r.parts))
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() { r.Revoked(id) })
	}
	wg.Wait()
}

// Runs returns a snapshot of every run this instance holds.
func (r *Runner) Runs() []pipeline.Run {
	r.mu.Lock()
	parts := slices.Collect(maps.Values(r.parts))
	r.mu.Unlock()
	var out []pipeline.Run
	for _, p := range parts {
		p.mu.Lock()
		for _, run := range p.runs {
			out = append(out, run.Clone())
		}
		p.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b pipeline.Run) int { return cmp.Compare(a.BatchID, b.BatchID) })
	return out
}

// tick is the clock input for the run under key: lagging when the
// partition may still hold unread writes from before the run's deadline.
func (r *Runner) tick(p *partition, key string) pipeline.Tick {
	p.mu.Lock()
	run := p.runs[key]
	p.mu.Unlock()
	if p.behind == nil || run.State != pipeline.StateAwaitingWrites || run.Deadline.IsZero() {
		return pipeline.Tick{}
	}
	return pipeline.Tick{Lagging: p.behind(run.Deadline)}
}

// Handle applies one valid input event of a partition (the ingest stage
// decoded and validated it). When it returns nil the event's effect on
// state is durable, so its offset may be committed. A *Refusal means the
// event was not applied and belongs in the dead-letter topic; any other
// error means retry.
func (r *Runner) Handle(ctx context.Context, id int, ev schemas.Event, trace schemas.TraceContext) error {
	p := r.partition(id)
	if p == nil {
		return fmt.Errorf("partition %d is not assigned to this instance", id)
	}
	if _, ok := ev.(schemas.BatchLanded); ok {
		if _, known := r.cfg.Datasets(ev.DatasetName()); known {
			mu := r.landingLock(ev.DatasetName())
			mu.Lock()
			defer mu.Unlock()
		}
	}
	in, ref := r.input(ev, trace)
	if ref != nil {
		return ref
	}
	o, err := r.apply(ctx, p, pipeline.RunKey(ev.DatasetName(), ev.Batch()), in)
	if err != nil {
		return err
	}
	if _, ok := in.(pipeline.WriteDone); ok {
		r.cfg.Failpoint("after_write") // persisted, offset not yet committed
	}
	switch {
	case o.Refused != nil:
		// Debug: the consumer logs the dead letter it becomes (its key, the
		// batch id, and this detail), a bounded number a minute; whoever
		// writes the input topic chooses how many inputs are refused.
		r.log.Debug("input refused", "batch_id", ev.Batch(), "dataset", r.label(ev.DatasetName()),
			"reason", o.Refused.Reason, "detail", o.Refused.Detail)
		return o.Refused
	case o.Changed:
		r.counted(ev.EventType(), "applied")
	default:
		r.counted(ev.EventType(), "duplicate")
	}
	return nil
}

// Invalid ends the run of the batch an invalid event names (reason
// invalid, problem its detail) before the event is dead-lettered. The
// dataset must be configured: junk names never reach the state store.
func (r *Runner) Invalid(ctx context.Context, id int, ev schemas.Event, problem error) error {
	p := r.partition(id)
	if p == nil {
		return fmt.Errorf("partition %d is not assigned to this instance", id)
	}
	if _, ok := r.cfg.Datasets(ev.DatasetName()); !ok {
		return &pipeline.Refusal{Reason: schemas.ReasonInvalid, Detail: problem.Error()}
	}
	o, err := r.apply(ctx, p, pipeline.RunKey(ev.DatasetName(), ev.Batch()),
		pipeline.Invalid{BatchID: ev.Batch(), Dataset: ev.DatasetName(), Detail: problem.Error()})
	if err == nil && o.Refused != nil {
		return o.Refused
	}
	return err
}

// counted reports one input event and what became of it: applied,
// duplicate (no change to any run) or dropped_unexpected.
func (r *Runner) counted(eventType, outcome string) {
	r.metrics.input(eventType, outcome)
}

// label is a dataset name fit for a metric label: only configured datasets
// are named, so junk in events cannot grow the label set.
func (r *Runner) label(dataset string) string {
	if _, ok := r.cfg.Datasets(dataset); ok {
		return dataset
	}
	return UnknownDataset
}

// UnknownDataset is how a dataset that is not in the config is reported.
const UnknownDataset = "unknown"

// input maps a valid input event to a machine input. An event that is not
// an input, or of a dataset that is not configured, is refused: the
// ingest stage lets neither through.
func (r *Runner) input(ev schemas.Event, trace schemas.TraceContext) (pipeline.Input, *pipeline.Refusal) {
	spec, ok := r.cfg.Datasets(ev.DatasetName())
	if !ok {
		return nil, &pipeline.Refusal{Reason: schemas.ReasonInvalid, Detail: fmt.Sprintf("dataset %q is not configured", ev.DatasetName())}
	}
	switch e := ev.(type) {
	case schemas.BatchLanded:
		open, bytes := r.openOf(e.Dataset)
		return pipeline.Landed{Event: e, Spec: spec, Branch: schemas.BranchName(e.Dataset, e.BatchID), Open: open, OpenBytes: bytes, Trace: trace}, nil
	case schemas.WriteComplete:
		return pipeline.WriteDone{Event: e}, nil
	case schemas.BatchCancelled:
		return pipeline.Cancel{Event: e}, nil
	case schemas.RetryRequested:
		return pipeline.RetryRequest{Event: e}, nil
	case schemas.RevertRequested:
		return pipeline.RevertRequest{Event: e}, nil
	}
	return nil, &pipeline.Refusal{Reason: schemas.ReasonInvalid, Detail: fmt.Sprintf("%s is not an input event", ev.EventType())}
}

func (r *Runner) partition(id int) *partition {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.parts[id]
}

// apply runs one input through the machine for the run under key, stores
// the outcome, then starts the work it asks for. State is changed in
// memory only after it is stored.
func (r *Runner) apply(ctx context.Context, p *partition, key string, in pipeline.Input) (pipeline.Outcome, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	o, err := r.applyLocked(ctx, p, key, in)
	if err == nil && o.Changed {
		r.evict(ctx, p, o.Run.Dataset)
	}
	return o, err
}

// evict forgets finished runs of dataset whose events are all sent while
// the partition holds more than Policy.MaxFinishedRuns of them, or more
// than Policy.MaxFinishedBytes of their producers' bytes (a flood's aborts
// must not outgrow the store), earliest first in evictedBefore's order. Called with p.mu held; a
// run that cannot be forgotten now is tried again at the next change.
func (r *Runner) evict(ctx context.Context, p *partition, dataset string) {
	limit, bytes := r.cfg.Policy.MaxFinishedRuns, r.cfg.Policy.MaxFinishedBytes
	for limit > 0 && p.finished[dataset] > limit || bytes > 0 && p.finishedBytes[dataset] > bytes {
		var oldest string
		for k, run := range p.runs {
			if run.Dataset == dataset && pipeline.Evictable(run) &&
				(oldest == "" || evictedBefore(run, p.runs[oldest])) {
				oldest = k
			}
		}
		if oldest == "" {
			return
		}
		if o, err := r.applyLocked(ctx, p, oldest, pipeline.Tick{Evict: true}); err != nil || o.Run.State != "" {
			if err != nil {
				r.log.Warn("forgetting a finished run over runner.max_finished_runs failed", "dataset", r.label(dataset), "err", err)
			}
			return // or kept (holdFloor), which a run with others never is
		}
	}
}

// evictedBefore orders the finished runs of a dataset that
// Policy.MaxFinishedRuns forgets, earliest first: a published run (or one
// failed at the publish, mayBePublished) by its
// batch time (occurred_at), any other by when it finished (ties: by when
// they finished). The partition's floor is the latest batch time of a
// published run forgotten (holdFloor), and every BatchLanded no run
// answers at or before it is refused: forgotten in the order they
// finished, one batch whose occurred_at was hours ahead (a producer's fast
// clock) raised the floor there, and the dataset's later batches were
// refused until the clock caught up. In this order published runs go by
// batch time, so the floor only passes a batch that MaxFinishedRuns runs
// of later times overtook; runs that did not publish (they raise no
// floor) still go oldest first among them, kept for lakewap runs and
// RetryRequested as long as before; runs aborted before they began (a
// flood's too_many_runs) go before all others, so that a flood of them
// does not push out the published runs and raise the floor to its time.
func evictedBefore(a, b pipeline.Run) bool {
	if ra, rb := rejected(a), rejected(b); ra != rb {
		return ra // a flood's junk first: it would push the published runs out
	}
	ka, kb := evictKey(a), evictKey(b)
	if !ka.Equal(kb) {
		return ka.Before(kb)
	}
	return a.StateSince.Before(b.StateSince)
}

// rejected: run was aborted before it began (invalid, too_many_runs), a
// producer's junk kept only runner.rejected_retention anyway.
func rejected(run pipeline.Run) bool {
	return run.State == pipeline.StateAborted && (run.Reason == schemas.ReasonInvalid || run.Reason == schemas.ReasonTooManyRuns)
}

// evictKey is when evictedBefore takes run to have happened.
func evictKey(run pipeline.Run) time.Time {
	if mayBePublished(run) && !run.BatchTime.IsZero() {
		return run.BatchTime
	}
	return run.StateSince
}

// mayBePublished: run published, or failed at the publish, where its merge
// may have gone through with the answer lost (and the last look too): its
// batch may be on the target, and it holds the dedupe floor as a published
// run does. Before, such a run forgotten over Policy.MaxFinishedRuns raised
// no floor, and its BatchLanded sent again merged the batch a second time
// (TestResentBatchLandedOfARunFailedAtThePublishIsNotPublishedTwice).
func mayBePublished(run pipeline.Run) bool {
	return run.State == pipeline.StatePublished ||
		run.State == pipeline.StateFailed && run.FailedStep == pipeline.StepPublish
}

// holdFloor is called before the record of gone (under key) is deleted:
// it raises the partition's floor of gone's dataset to gone's batch time
// when it published and is forgotten over Policy.MaxFinishedRuns
// (byCount), and makes sure a record the partition keeps holds the floor
// (Run.Floor), so that a restart after gone's record is deleted still
// refuses the BatchLanded of a forgotten run sent again (Landed.Floor).
// Every record written carries the floor, but the one deleted may be the
// only one that does (the run that held it forgotten in turn, by count or
// by age): then the finished run forgotten last (evictedBefore) is stored
// again with it, one changelog write. A non-zero until keeps gone instead
// (stored with the floor when it is the dataset's last run on the
// partition; or a published run forgotten by age whose batch time the
// retention's horizon has not passed yet) until then: the next tick after
// it forgets the run. An expired pending run, the dataset's last, is
// forgotten, the floor logged and held in memory only. A floor at or
// before the retention's horizon needs no record (DedupeHorizon refuses
// what it would). Called with p.mu held.
func (r *Runner) holdFloor(ctx context.Context, p *partition, key string, gone pipeline.Run, byCount bool) (until time.Time, err error) {
	d := gone.Dataset
	now := r.cfg.Now()
	horizon := r.cfg.Policy.DedupeHorizon(now, time.Time{})
	if !byCount && mayBePublished(gone) && gone.BatchTime.After(horizon) {
		// Forgotten by age with an occurred_at further ahead of lakewap's
		// clock than the horizon allows for (half a retention under 48 h):
		// kept, answering its duplicates itself, until the horizon passes
		// its batch time. A floor there would refuse the dataset's every
		// batch of now.
		return passes(r.cfg.Policy, gone.BatchTime), nil
	}
	floor := p.floor[d]
	if byCount && mayBePublished(gone) && gone.BatchTime.After(floor) {
		floor = gone.BatchTime // a batch that did not publish may land again
	}
	if !floor.After(horizon) {
		return time.Time{}, nil
	}
	var keep string
	for k, run := range p.runs {
		if k == key || run.Dataset != d || run.State == "" {
			continue
		}
		if !run.Floor.Before(floor) {
			p.floor[d] = floor // held
			return time.Time{}, nil
		}
		if keep == "" || keepBefore(p.runs[keep], run) {
			keep = k
		}
	}
	if keep == "" && gone.State.Terminal() {
		// The dataset's last run on the partition, forgotten by age (one
		// forgotten by count has others): it stays, holding the floor,
		// until the retention's horizon passes the floor.
		keep, until = key, passes(r.cfg.Policy, floor)
	}
	if keep == "" {
		// An expired pending run, the dataset's last: the floor holds in
		// memory only, until a restart.
		r.log.Warn("no run left to hold the dataset's dedupe floor", "dataset", r.label(d), "floor", floor)
		p.floor[d] = floor
		return time.Time{}, nil
	}
	held := p.runs[keep]
	if held.Floor.Before(floor) {
		held.Floor = floor
		o, err := r.persist(ctx, p.id, keep, pipeline.Outcome{Run: held, Changed: true}, now)
		if err != nil {
			return time.Time{}, err
		}
		p.runs[keep] = o.Run
	}
	p.floor[d] = floor
	return until, nil
}

// passes is when the retention's horizon (Policy.DedupeHorizon without a
// floor) passes t.
func passes(p pipeline.Policy, t time.Time) time.Time {
	return t.Add(p.TerminalRetention - min(24*time.Hour, p.TerminalRetention/2) + time.Millisecond)
}

// keepBefore: b is a better holder of the floor than a, kept longer: a
// finished run over one in progress (which may expire), then the one
// Policy.MaxFinishedRuns forgets last.
func keepBefore(a, b pipeline.Run) bool {
	if at, bt := a.State.Terminal(), b.State.Terminal(); at != bt {
		return bt
	}
	return evictedBefore(a, b)
}

// applyLocked is apply with p.mu held.
func (r *Runner) applyLocked(ctx context.Context, p *partition, key string, in pipeline.Input) (pipeline.Outcome, error) {
	if p.gone {
		return pipeline.Outcome{Run: p.runs[key]}, fmt.Errorf("partition %d is revoked: %T of run %s not stored", p.id, in, key)
	}
	switch i := in.(type) {
	case pipeline.WriteDone:
		i.Pending, i.EarlyWrites = p.pending, p.early
		in = i
	case pipeline.Landed:
		i.Floor = p.floor[i.Event.Dataset]
		in = i
	}
	before := p.runs[key]
	now := r.cfg.Now()
	o := r.m.Apply(before, in, now)
	if o.Changed && o.Run.State != "" && p.floor[o.Run.Dataset].After(o.Run.Floor) {
		o.Run.Floor = p.floor[o.Run.Dataset] // outlives the forgotten runs
	}
	if o.Changed && o.Run.State == "" && before.State != "" {
		tick, _ := in.(pipeline.Tick)
		until, err := r.holdFloor(ctx, p, key, before, tick.Evict)
		if err != nil {
			return pipeline.Outcome{Run: before}, fmt.Errorf("keep the floor of dataset %s before forgetting run %s: %w", before.Dataset, key, err)
		}
		if !until.IsZero() {
			// Kept to hold the floor: forgotten at the next tick after until.
			r.start(p, key, []pipeline.Effect{{Kind: pipeline.DoWake, At: until}})
			return pipeline.Outcome{Run: p.runs[key]}, nil
		}
	}
	if !o.Changed {
		// Refused, or nothing changed (a duplicate, a tick before any
		// deadline): no write, so a stale copy never overwrites what
		// another writer (lakewap retry) stored since.
		r.start(p, key, o.Effects)
		return o, nil
	}
	o, err := r.persist(ctx, p.id, key, o, now)
	if err != nil {
		return o, err
	}
	after := o.Run
	if o.Refused != nil {
		r.log.Error("run record over budget: run ended", "batch_id", after.BatchID, "dataset", r.label(after.Dataset), "detail", o.Refused.Detail)
	}
	if l, ok := in.(pipeline.Landed); ok && before.State == pipeline.StatePending && len(before.Writes) > len(after.Writes) {
		n := len(before.Writes) - len(after.Writes)
		r.log.Warn("dropped early writes the batch does not expect", "batch_id", after.BatchID,
			"dataset", r.label(after.Dataset), "dropped", n, "expected", len(l.Event.ExpectedWrites))
		for range n {
			r.counted(schemas.TypeWriteComplete, "dropped_unexpected")
		}
	}
	if after.State == "" {
		delete(p.runs, key)
	} else {
		p.runs[key] = after
	}
	p.early += earlyWrites(after) - earlyWrites(before)
	if before.AuditOpen && !after.AuditOpen {
		r.gate.release(key) // the attempt reported, or was stopped
	}
	if before.State != after.State && after.State.Terminal() || after.State == "" {
		if n := p.calls[key]; n != nil && after.State == pipeline.StatePublished {
			r.metrics.lakeCalls(after.Dataset, n.Load())
		}
		delete(p.calls, key)
	}
	if before.State != after.State {
		p.count(before, -1)
		p.count(after, +1)
		r.hold(before, -1)
		r.hold(after, +1)
		r.log.Info("run state", "batch_id", after.BatchID, "dataset", after.Dataset, "branch", after.Branch,
			"from", string(before.State), "state", string(after.State), "reason", after.Reason)
		if after.State != "" {
			r.metrics.stateChange(r.label(after.Dataset), before.State, now.Sub(before.StateSince))
		}
		if after.State.Terminal() {
			r.metrics.terminal(r.label(after.Dataset), after.State, after.Reason)
		}
	}
	if r.cfg.Observe != nil {
		r.cfg.Observe(before, after)
	}
	r.start(p, key, o.Effects)
	return o, nil
}

// persist stores the outcome's run under key, fitted to its budget
// (pipeline.Machine.Fit), and returns the outcome as stored.
func (r *Runner) persist(ctx context.Context, id int, key string, o pipeline.Outcome, now time.Time) (pipeline.Outcome, error) {
	o, record, err := r.m.Fit(o, now)
	switch {
	case err != nil:
		return o, fmt.Errorf("encode run %s: %w", key, err)
	case record == nil:
		err = r.cfg.Store.Delete(ctx, id, key)
	default:
		err = r.cfg.Store.Put(ctx, id, key, record)
	}
	if err != nil {
		return o, fmt.Errorf("persist run %s: %w", key, err)
	}
	return o, nil
}

// start launches effects not already in flight. Called with p.mu held.
func (r *Runner) start(p *partition, batch string, effects []pipeline.Effect) {
	if p.closing {
		return
	}
	var wake time.Time
	for _, e := range effects {
		switch e.Kind {
		case pipeline.DoForget:
			if t := p.timers[batch]; t != nil {
				t.Stop()
				delete(p.timers, batch)
			}
			continue
		case pipeline.DoWake:
			if wake.IsZero() || e.At.Before(wake) {
				wake = e.At // the earliest; its Tick re-arms the next
			}
			continue
		case pipeline.DoReply:
			// The answer to an operator request that changed no run is not
			// stored: a daemon that stops before it is sent leaves the
			// operator's command to time out.
			p.wg.Go(func() { r.send(p, pipeline.Run{}, e.Send) })
			continue
		}
		if p.inflight[effectOf{batch, e.Kind}] {
			continue
		}
		p.inflight[effectOf{batch, e.Kind}] = true
		j := job{p: p, run: p.runs[batch].Clone(), effect: e}
		if e.Kind == pipeline.DoPublish || e.Kind == pipeline.DoRevert {
			// A revert is a commit on the target too: it takes its turn
			// there like a merge (revertInTurn).
			j.ticket = r.enqueue(j.run)
		}
		p.wg.Go(func() { r.execute(j) })
	}
	if !wake.IsZero() {
		if t := p.timers[batch]; t != nil {
			t.Stop()
		}
		d := max(wake.Sub(r.cfg.Now()), 0)
		p.timers[batch] = time.AfterFunc(d, func() {
			defer func() {
				if v := recover(); v != nil { // a timer's goroutine has no one above it to recover
					r.log.Error("timer panicked", "run", batch, "panic", v, "stack", string(debug.Stack()))
				}
			}()
			r.internal(p, batch, r.tick(p, batch))
		})
	}
}

// internal applies a runner-generated input, retrying persistence until it
// succeeds or the partition is revoked; it reports whether the input
// changed the run (stored).
func (r *Runner) internal(p *partition, batch string, in pipeline.Input) (changed bool) {
	b := backoff.Policy{Min: 100 * time.Millisecond, Max: 5 * time.Second, Jitter: backoff.Equal}.New()
	for {
		o, err := r.apply(p.ctx, p, batch, in)
		if err == nil {
			return o.Changed
		}
		if p.ctx.Err() != nil {
			return false
		}
		r.log.Warn("persisting run failed, retrying", "run", batch, "err", err)
		if !b.Wait(p.ctx) {
			return false
		}
	}
}

// execute carries out one effect through its executor and applies the
// outcome. An effect stays in flight until its outcome is applied: a
// transition in between (another input of the run) would otherwise start
// the same effect a second time (the same event sent twice, a second
// seal). What the outcome's transition could not start while this one was
// in flight (the next outbox entry, say) starts once it is done.
func (r *Runner) execute(j job) {
	in := executors[j.effect.Kind](r, j)
	p, key := j.p, j.run.Key()
	applied := in != nil && p.ctx.Err() == nil
	changed := false
	switch {
	case applied:
		changed = r.internal(p, key, in)
	case attempts[j.effect.Kind] && revoking(p):
		// The attempt the effect may have begun (the audit step's, a
		// revert's audit, a publish's recheck) was stopped by the
		// revocation. Only on one, which is what AuditStopped says: a
		// publish that ends without an outcome otherwise (its run moved
		// on) may hand its turn to the run's revert, whose attempt is
		// open. The audit step's and the revert's executors end without
		// one only on a revocation (TestRevertAuditStoppedByARevocationIsNotCountedAsLost).
		r.auditStopped(p, key)
	}
	if r.outcomeApplied != nil {
		r.outcomeApplied(p, key, j.effect.Kind)
	}
	if j.effect.Kind == pipeline.DoBeginAudit && !changed {
		// The attempt was not stored as begun (the partition was revoked,
		// or the run moved on meanwhile): the gate beginAudit took goes.
		r.gate.release(key)
	}
	// Whatever asked for this effect again while it was in flight
	// started nothing: a timer's tick at a publish's RetryAt that came
	// after the failure was applied and before this point. Unless the
	// partition is revoked, the run's pending work starts now, whether
	// the outcome changed the run or not; before, a publish's end
	// resumed nothing, and such a run stayed in publishing with no timer
	// and nothing in flight until its partition moved.
	r.done(p, key, j.effect.Kind, p.ctx.Err() == nil)
}

// attempts are the effects that may begin an audit attempt
// (pipeline.AuditBegun) and run it themselves.
var attempts = map[pipeline.EffectKind]bool{pipeline.DoAudit: true, pipeline.DoRevert: true, pipeline.DoPublish: true}

// auditStopped records that the audit of the run under key, begun, was
// stopped by its partition's revocation (the step was cancelled, or never
// started): not a lost attempt. The partition's context is done, so the
// record gets a short one of its own; if it cannot be stored, the next
// owner counts the attempt as lost.
func (r *Runner) auditStopped(p *partition, key string) {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Grace)
	defer cancel()
	if _, err := r.apply(ctx, p, key, pipeline.AuditStopped{}); err != nil {
		r.log.Warn("recording a stopped audit failed: the next owner counts it as an attempt that never finished", "run", key, "err", err)
	}
}

// revoking reports whether p's revocation has begun.
func revoking(p *partition) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closing
}

// done takes effect k of the run under key out of flight and, if resume,
// starts the run's pending effects that are not in flight.
func (r *Runner) done(p *partition, key string, k pipeline.EffectKind, resume bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.inflight, effectOf{key, k})
	if run, ok := p.runs[key]; ok && resume {
		r.start(p, key, r.m.Pending(run, r.cfg.Now()))
	}
}

// calls is the counter of lakeFS API calls of a run.
func (r *Runner) calls(p *partition, batch string) *atomic.Int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.calls[batch]
	if n == nil {
		n = new(atomic.Int64)
		p.calls[batch] = n
	}
	return n
}
