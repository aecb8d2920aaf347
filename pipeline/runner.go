package pipeline

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lakewap/lakewap/internal/backoff"
	"github.com/lakewap/lakewap/schemas"
)

// Auditor runs a dataset's suite against a ref.
type Auditor interface {
	Audit(ctx context.Context, req AuditRequest) (schemas.AuditReport, error)
}

// AuditRequest names what to audit.
type AuditRequest struct {
	Dataset    string
	Repository string
	Ref        string // the sealed commit of the batch branch
	BaseRef    string // the target's commit, for comparisons and batch scope
	BaseName   string // how reports name the base: the target branch
	BatchTime  time.Time
}

// Notifier delivers a result event (Kafka, Slack, console). It returns
// receipts to remember (e.g. the Slack message to update in place) and an
// error only when a required sink failed.
type Notifier interface {
	Notify(ctx context.Context, n Notification) (receipts map[string]string, err error)
}

// Notification is one result event of a run.
type Notification struct {
	Event    schemas.Event
	State    State
	Run      Run
	Receipts map[string]string
	// RequestID is the operator request the event answers, if any.
	RequestID string
	// ResultOnly: the event goes to the results topic only (answers to
	// operator requests are not part of a run's Slack message).
	ResultOnly bool
}

// Store keeps runs durably, keyed by batch id within an input partition.
type Store interface {
	Put(ctx context.Context, partition int, key string, value []byte) error
	Delete(ctx context.Context, partition int, key string) error
	Load(ctx context.Context, partition int) (map[string][]byte, error)
}

// Defaults of the runner's own settings (Config).
const (
	DefaultMaxInFlight = 16
	DefaultStepTimeout = 5 * time.Minute
	DefaultGrace       = 10 * time.Second
)

// Config wires a Runner.
type Config struct {
	Lake     Lake
	Auditor  Auditor
	Notifier Notifier
	Store    Store
	// Datasets resolves a dataset name from an event to its spec.
	Datasets func(name string) (DatasetSpec, bool)
	// Policy is the machine's; the zero Policy means DefaultPolicy, any
	// other must be whole (start from DefaultPolicy).
	Policy Policy
	// Behind reports whether a partition may still hold unread input from
	// before t (the consumer's lag and the time of the newest message it
	// handled); nil means never. See Tick.Lagging.
	Behind      func(partition int, t time.Time) bool
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
	Observe func(before, after Run)
	// Failpoint, if set, is called at named points between a side effect
	// and the persistence of its outcome; crash tests make it kill the
	// process there. Names: after_write, after_branch, during_audit,
	// before_merge, after_merge, before_send.
	Failpoint func(name string)
}

// Runner executes the machine's effects for the runs of the partitions
// assigned to this instance.
type Runner struct {
	cfg     Config
	m       Machine
	log     *slog.Logger
	sem     chan struct{}
	mu      sync.Mutex
	parts   map[int]*partition
	open    atomic.Int64 // runs in an Open state across the assigned partitions
	Metrics Metrics

	qmu    sync.Mutex
	queues map[targetKey]*publishQueue // publish queue per target, while not empty
}

// Metrics receives measurements from the runner; nil fields are skipped.
type Metrics struct {
	StepDuration func(step string, outcome string, d time.Duration)
	StateChange  func(dataset string, from, to State, inPrev time.Duration)
	Terminal     func(dataset string, state State, reason string)
	// Held counts the runs this instance holds by dataset and state
	// (delta +1 when a run enters a state here, -1 when it leaves).
	Held func(dataset string, state State, delta int)
	// Input counts input events by type and outcome: applied, duplicate,
	// dropped_unexpected (an early write its batch did not expect, dropped
	// when the batch landed). The ingest stage counts the dead letters.
	Input func(eventType, outcome string)
	// PublishQueue is the number of publishes waiting for their target's
	// turn; PublishWait how long one waited before its turn came.
	PublishQueue func(repository, target string, depth int)
	PublishWait  func(repository, target string, d time.Duration)
	// LakeCalls is the number of lakeFS API calls this instance made for a
	// batch it published (branch, seal, audit listings and downloads,
	// publish); a run restored mid-way counts only what was made since.
	LakeCalls func(dataset string, calls int64)
}

// hold counts a run entering (+1) or leaving (-1) state on this instance.
func (r *Runner) hold(dataset string, state State, delta int) {
	if state.Open() {
		r.open.Add(int64(delta))
	}
	if r.Metrics.Held != nil && state != "" {
		r.Metrics.Held(r.label(dataset), state, delta)
	}
}

// effectOf names an effect of the run under a key.
type effectOf struct {
	key  string
	kind EffectKind
}

type partition struct {
	id       int
	ctx      context.Context
	cancel   context.CancelFunc
	mu       sync.Mutex
	runs     map[string]Run
	inflight map[effectOf]bool
	timers   map[string]*time.Timer
	wg       sync.WaitGroup
	closing  bool
	stop     chan struct{} // closed when the partition is revoked
	// fresh: runs this instance moved from auditing to publishing and has
	// not tried to merge yet (their publish needs no look at the target).
	fresh map[string]bool
	// calls counts the lakeFS API calls made for each run.
	calls map[string]*atomic.Int64
}

// NewRunner checks cfg and returns a runner.
func NewRunner(cfg Config) (*Runner, error) {
	for _, c := range []struct {
		name string
		ok   bool
	}{{"Lake", cfg.Lake != nil}, {"Auditor", cfg.Auditor != nil}, {"Notifier", cfg.Notifier != nil},
		{"Store", cfg.Store != nil}, {"Datasets", cfg.Datasets != nil}} {
		if !c.ok {
			return nil, fmt.Errorf("pipeline: Config.%s is required", c.name)
		}
	}
	if cfg.Policy == (Policy{}) {
		cfg.Policy = DefaultPolicy
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
	return &Runner{
		cfg: cfg, m: NewMachine(cfg.Policy), log: cfg.Logger,
		sem: make(chan struct{}, cfg.MaxInFlight), parts: map[int]*partition{},
		queues: map[targetKey]*publishQueue{},
	}, nil
}

// positiveOr is v, or d when v is not positive.
func positiveOr[T int | time.Duration](v, d T) T {
	if v <= 0 {
		return d
	}
	return v
}

// Assigned restores a partition's runs from the store and resumes their
// pending work. Messages of the partition are handled only after it returns.
func (r *Runner) Assigned(ctx context.Context, id int) error {
	raw, err := r.cfg.Store.Load(ctx, id)
	if err != nil {
		return fmt.Errorf("restore partition %d: %w", id, err)
	}
	pctx, cancel := context.WithCancel(context.Background())
	p := &partition{id: id, ctx: pctx, cancel: cancel, runs: make(map[string]Run, len(raw)),
		inflight: map[effectOf]bool{}, timers: map[string]*time.Timer{},
		stop: make(chan struct{}), fresh: map[string]bool{}, calls: map[string]*atomic.Int64{}}
	for key, v := range raw {
		var run Run
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
		r.hold(run.Dataset, run.State, +1)
	}
	r.Revoked(id) // an earlier assignment of the partition, if any
	r.mu.Lock()
	r.parts[id] = p
	r.mu.Unlock()
	now := r.cfg.Now()
	p.mu.Lock()
	for _, k := range slices.Sorted(maps.Keys(p.runs)) {
		r.start(p, k, r.m.Pending(p.runs[k], now))
	}
	n := len(p.runs)
	p.mu.Unlock()
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
	grace := time.AfterFunc(r.cfg.Grace, p.cancel)
	p.wg.Wait()
	grace.Stop()
	p.cancel()
	p.mu.Lock()
	for _, run := range p.runs {
		r.hold(run.Dataset, run.State, -1)
	}
	p.mu.Unlock()
	r.log.Info("partition revoked", "partition", id)
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
func (r *Runner) Runs() []Run {
	r.mu.Lock()
	parts := slices.Collect(maps.Values(r.parts))
	r.mu.Unlock()
	var out []Run
	for _, p := range parts {
		p.mu.Lock()
		for _, run := range p.runs {
			out = append(out, run.clone())
		}
		p.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b Run) int { return cmp.Compare(a.BatchID, b.BatchID) })
	return out
}

// tick is the clock input for the run under key: lagging when the
// partition may still hold unread writes from before the run's deadline.
func (r *Runner) tick(p *partition, key string) Tick {
	p.mu.Lock()
	run := p.runs[key]
	p.mu.Unlock()
	if r.cfg.Behind == nil || run.State != StateAwaitingWrites || run.Deadline.IsZero() {
		return Tick{}
	}
	return Tick{Lagging: r.cfg.Behind(p.id, run.Deadline)}
}

// Handle applies one valid input event of a partition (the ingest stage
// decoded and validated it). When it returns nil the event's effect on
// state is durable, so its offset may be committed. A *Refusal means the
// event was not applied and belongs in the dead-letter topic; any other
// error means retry.
func (r *Runner) Handle(ctx context.Context, id int, ev schemas.Event) error {
	p := r.partition(id)
	if p == nil {
		return fmt.Errorf("partition %d is not assigned to this instance", id)
	}
	in, ref := r.input(ev)
	if ref != nil {
		return ref
	}
	outcome, err := r.apply(ctx, p, RunKey(ev.DatasetName(), ev.Batch()), in)
	if err != nil {
		return err
	}
	if _, ok := in.(WriteDone); ok {
		r.cfg.Failpoint("after_write") // persisted, offset not yet committed
	}
	switch {
	case outcome.refused != nil:
		r.log.Warn("input refused", "batch_id", ev.Batch(), "dataset", r.label(ev.DatasetName()),
			"reason", outcome.refused.Reason, "detail", outcome.refused.Detail)
		return outcome.refused
	case outcome.changed:
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
		return &Refusal{Reason: schemas.ReasonInvalid, Detail: problem.Error()}
	}
	outcome, err := r.apply(ctx, p, RunKey(ev.DatasetName(), ev.Batch()),
		Invalid{BatchID: ev.Batch(), Dataset: ev.DatasetName(), Detail: problem.Error()})
	if err == nil && outcome.refused != nil {
		return outcome.refused
	}
	return err
}

// counted reports one input event and what became of it: applied,
// duplicate (no change to any run) or dropped_unexpected.
func (r *Runner) counted(eventType, outcome string) {
	if f := r.Metrics.Input; f != nil {
		f(eventType, outcome)
	}
}

// label is a dataset name fit for a metric label: only configured datasets
// are named, so junk in events cannot grow the label set.
func (r *Runner) label(dataset string) string {
	if _, ok := r.cfg.Datasets(dataset); ok {
		return dataset
	}
	return UnknownDataset
}

// maxStrayPaths bounds how many paths outside the tables an abort names.
const maxStrayPaths = 10

// UnknownDataset is how a dataset that is not in the config is reported.
const UnknownDataset = "unknown"

// input maps a valid input event to a machine input. An event that is not
// an input, or of a dataset that is not configured, is refused: the
// ingest stage lets neither through.
func (r *Runner) input(ev schemas.Event) (Input, *Refusal) {
	spec, ok := r.cfg.Datasets(ev.DatasetName())
	if !ok {
		return nil, &Refusal{Reason: schemas.ReasonInvalid, Detail: fmt.Sprintf("dataset %q is not configured", ev.DatasetName())}
	}
	switch e := ev.(type) {
	case schemas.BatchLanded:
		return Landed{Event: e, Spec: spec, Branch: schemas.BranchName(e.Dataset, e.BatchID), Open: int(r.open.Load())}, nil
	case schemas.WriteComplete:
		return WriteDone{Event: e}, nil
	case schemas.BatchCancelled:
		return Cancel{Event: e}, nil
	case schemas.RetryRequested:
		return RetryRequest{Event: e}, nil
	case schemas.RevertRequested:
		return RevertRequest{Event: e}, nil
	}
	return nil, &Refusal{Reason: schemas.ReasonInvalid, Detail: fmt.Sprintf("%s is not an input event", ev.EventType())}
}

func (r *Runner) partition(id int) *partition {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.parts[id]
}

// applied says what apply did with an input.
type applied struct {
	changed bool     // a run changed (and was persisted)
	refused *Refusal // the input was not applied (or ended its run): dead-letter it
}

// apply runs one transition for the run under key, persists the result,
// then starts the work it asks for. State is changed in memory only after it
// is persisted.
func (r *Runner) apply(ctx context.Context, p *partition, key string, in Input) (applied, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	before := p.runs[key]
	if ref := r.m.Refuse(before, in); ref != nil {
		return applied{refused: ref}, nil
	}
	now := r.cfg.Now()
	after, effects := r.m.Transition(before, in, now)
	replies := slices.DeleteFunc(slices.Clone(effects), func(e Effect) bool { return e.Kind != DoReply })
	if after.State == "" && before.State == "" {
		r.start(p, key, replies)
		return applied{}, nil
	}
	if after.State != "" && reflect.DeepEqual(after, before.clone()) {
		// Nothing changed (a duplicate, a tick before any deadline): no
		// write, so a stale copy never overwrites what another writer
		// (lakewap retry) stored since.
		r.start(p, key, effects)
		return applied{}, nil
	}
	after, over, err := r.persist(ctx, p.id, key, after, now)
	if err != nil {
		return applied{}, err
	}
	out := applied{changed: true}
	effects = append(r.m.Pending(after, now), replies...) // of the run as stored (maybe trimmed)
	if over != "" {
		out.refused = &Refusal{Reason: RefusedOverBudget, Detail: over}
		r.log.Error("run record over budget: run ended", "batch_id", after.BatchID, "dataset", r.label(after.Dataset), "detail", over)
	}
	if l, ok := in.(Landed); ok && before.State == StatePending && len(before.Writes) > len(after.Writes) {
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
	if before.State == StateAuditing && after.State == StatePublishing {
		p.fresh[key] = true
	}
	if before.State != after.State && after.State.Terminal() || after.State == "" {
		delete(p.fresh, key)
		if n, f := p.calls[key], r.Metrics.LakeCalls; n != nil && f != nil && after.State == StatePublished {
			f(after.Dataset, n.Load())
		}
		delete(p.calls, key)
	}
	if before.State != after.State {
		r.hold(before.Dataset, before.State, -1)
		r.hold(after.Dataset, after.State, +1)
		r.log.Info("run state", "batch_id", after.BatchID, "dataset", after.Dataset, "branch", after.Branch,
			"from", string(before.State), "state", string(after.State), "reason", after.Reason)
		if f := r.Metrics.StateChange; f != nil && after.State != "" {
			f(r.label(after.Dataset), before.State, after.State, now.Sub(before.StateSince))
		}
		if f := r.Metrics.Terminal; f != nil && after.State.Terminal() {
			f(r.label(after.Dataset), after.State, after.Reason)
		}
	}
	if r.cfg.Observe != nil {
		r.cfg.Observe(before, after)
	}
	r.start(p, key, effects)
	return out, nil
}

// persist stores run under key within the run budget: a record over it is
// trimmed (sample rows, long texts) and, if still over, the run is ended by
// OverBudget; over then says why. It returns the run as stored.
func (r *Runner) persist(ctx context.Context, id int, key string, run Run, now time.Time) (stored Run, over string, err error) {
	if run.State == "" {
		if err := r.cfg.Store.Delete(ctx, id, key); err != nil {
			return run, "", fmt.Errorf("persist run %s: %w", key, err)
		}
		return run, "", nil
	}
	budget := r.m.p.MaxRunBytes
	b, err := json.Marshal(run)
	if err == nil && len(b) > budget {
		run = r.m.Trim(run)
		b, err = json.Marshal(run)
	}
	if err == nil && len(b) > budget {
		size := len(b)
		run = r.m.OverBudget(run, size, budget, now)
		over = fmt.Sprintf("run record of %d bytes exceeds the budget of %d bytes", size, budget)
		b, err = json.Marshal(run)
	}
	if err != nil {
		return run, "", fmt.Errorf("encode run %s: %w", key, err)
	}
	if err := r.cfg.Store.Put(ctx, id, key, b); err != nil {
		return run, "", fmt.Errorf("persist run %s: %w", key, err)
	}
	return run, over, nil
}

// start launches effects not already in flight. Called with p.mu held.
func (r *Runner) start(p *partition, batch string, effects []Effect) {
	if p.closing {
		return
	}
	var wake time.Time
	for _, e := range effects {
		switch e.Kind {
		case DoForget:
			if t := p.timers[batch]; t != nil {
				t.Stop()
				delete(p.timers, batch)
			}
			continue
		case DoWake:
			if wake.IsZero() || e.At.Before(wake) {
				wake = e.At // the earliest; its Tick re-arms the next
			}
			continue
		case DoReply:
			// The answer to an operator request that changed no run is not
			// stored: a daemon that stops before it is sent leaves the
			// operator's command to time out.
			p.wg.Go(func() { r.send(p, Run{}, e.Send) })
			continue
		}
		if p.inflight[effectOf{batch, e.Kind}] {
			continue
		}
		p.inflight[effectOf{batch, e.Kind}] = true
		run := p.runs[batch].clone()
		var t *publishTicket
		if e.Kind == DoPublish {
			t = r.enqueue(run, p.fresh[batch])
			delete(p.fresh, batch) // a second attempt looks first
		}
		p.wg.Go(func() { r.execute(p, run, e, t) })
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
// succeeds or the partition is revoked.
func (r *Runner) internal(p *partition, batch string, in Input) {
	b := backoff.Policy{Min: 100 * time.Millisecond, Max: 5 * time.Second, Jitter: backoff.Equal}.New()
	for {
		_, err := r.apply(p.ctx, p, batch, in)
		if err == nil || p.ctx.Err() != nil {
			return
		}
		r.log.Warn("persisting run failed, retrying", "run", batch, "err", err)
		if !b.Wait(p.ctx) {
			return
		}
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

func (r *Runner) execute(p *partition, run Run, e Effect, t *publishTicket) {
	var in Input
	switch {
	case e.Kind == DoSend:
		in = r.send(p, run, e.Send)
	case t != nil:
		in = r.awaitPublish(p, t)
	default:
		select {
		case r.sem <- struct{}{}:
		case <-p.ctx.Done():
			r.done(p, run.Key(), e.Kind, false)
			return
		}
		start := time.Now()
		in = r.step(p, run, e.Kind, func(ctx context.Context) Input { return r.doStep(ctx, run, e.Kind) })
		<-r.sem
		if f := r.Metrics.StepDuration; f != nil {
			f(e.Kind.String(), outcome(in), time.Since(start))
		}
	}
	// An effect stays in flight until its outcome is applied: a transition
	// in between (another input of the run) would otherwise start the same
	// effect a second time (the same event sent twice, a second seal).
	// What the outcome's transition could not start while this one was in
	// flight (the next outbox entry, say) starts once it is done.
	if in != nil && p.ctx.Err() == nil {
		r.internal(p, run.Key(), in)
	}
	r.done(p, run.Key(), e.Kind, in != nil && p.ctx.Err() == nil && t == nil)
}

// done takes effect k of the run under key out of flight and, if resume,
// starts the run's pending effects that are not in flight.
func (r *Runner) done(p *partition, key string, k EffectKind, resume bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.inflight, effectOf{key, k})
	if run, ok := p.runs[key]; ok && resume {
		r.start(p, key, r.m.Pending(run, r.cfg.Now()))
	}
}

// step runs do, the step k of run, under the step timeout, counting its
// lakeFS calls. A panic in it (a bug meeting odd data, in lakewap or a
// library) fails the run instead of the process: the goroutine is not the
// consumer's, whose recovery would not see it.
func (r *Runner) step(p *partition, run Run, k EffectKind, do func(context.Context) Input) (in Input) {
	ctx, cancel := context.WithTimeout(p.ctx, r.cfg.StepTimeout)
	defer cancel()
	if k != DoCleanup { // a finished run's counter is gone
		ctx = WithCallCounter(ctx, r.calls(p, run.Key()))
	}
	defer func() {
		if v := recover(); v != nil {
			s := map[EffectKind]Step{DoCreateBranch: StepBranch, DoAudit: StepAudit, DoPublish: StepPublish, DoCleanup: StepCleanup, DoRevert: StepRevert}[k]
			r.log.Error("step panicked; failing the run", "batch_id", run.BatchID, "dataset", r.label(run.Dataset),
				"step", string(s), "panic", v, "stack", string(debug.Stack()))
			in = StepFailed{Step: s, Err: fmt.Sprintf("panic: %v", v), Class: Permanent}
		}
	}()
	return do(ctx)
}

func (r *Runner) doStep(ctx context.Context, run Run, k EffectKind) Input {
	log := r.log.With("batch_id", run.BatchID, "dataset", run.Dataset, "branch", run.Branch, "state", string(run.State))
	switch k {
	case DoCreateBranch:
		_, err := r.cfg.Lake.EnsureBranch(ctx, run.Repository, run.Branch, run.Source)
		switch {
		case errors.Is(err, ErrNotFound):
			// The batch names a source ref (or the dataset a repository)
			// that does not exist: the event is wrong, not lakeFS.
			log.Warn("branch source not found", "source", run.Source, "err", err)
			return StepFailed{Step: StepBranch, Err: fmt.Sprintf("cannot branch from %q in repository %q: %v", run.Source, run.Repository, err), Class: Rejected}
		case errors.Is(err, ErrBranchTaken):
			// Someone else's branch (or one with content of its own) under
			// the run's name would publish what they put there: left alone.
			log.Warn("branch with the run's name is not this run's", "err", err)
			return StepFailed{Step: StepBranch, Err: err.Error(), Class: Rejected}
		case err != nil:
			return failed(log, StepBranch, err)
		}
		r.cfg.Failpoint("after_branch")
		return BranchCreated{}
	case DoAudit:
		// The tables-only rule and the audit's batch scope need the same diff:
		// ask once, against the target's commit (the audit's cache key names
		// it, and it does not contend with merges into the branch). That
		// commit does not depend on the seal, so it is asked for meanwhile.
		ctx := WithDiffMemo(ctx)
		type head struct {
			id  string
			err error
		}
		heads := make(chan head, 1)
		go func() {
			defer func() {
				if v := recover(); v != nil {
					heads <- head{err: fmt.Errorf("panic: %v", v)}
				}
			}()
			id, err := r.cfg.Lake.Head(ctx, run.Repository, run.Target)
			heads <- head{id, err}
		}()
		commit, err := r.cfg.Lake.Seal(ctx, run.Repository, run.Branch,
			fmt.Sprintf("lakewap: seal batch %s for audit", run.BatchID),
			map[string]string{MetaSealedBatchID: run.BatchID, MetaDataset: run.Dataset})
		h := <-heads
		if err != nil {
			return failed(log, StepAudit, err)
		}
		r.cfg.Failpoint("during_audit")
		base := h.id
		if h.err != nil {
			return failed(log, StepAudit, h.err)
		}
		if spec, ok := r.cfg.Datasets(run.Dataset); ok && len(spec.TablePaths) > 0 {
			// The merge takes everything the sealed commit changes; the
			// audit reads only the tables. Anything else must be allowed.
			changed, err := r.cfg.Lake.ChangedPaths(ctx, run.Repository, base, commit)
			if err != nil {
				return failed(log, StepAudit, err)
			}
			if stray := spec.OutsideTables(changed); len(stray) > 0 {
				log.Warn("batch changes paths outside its tables", "paths", len(stray), "first", stray[0])
				return Strayed{SealedCommit: commit, Paths: stray[:min(len(stray), maxStrayPaths)], Total: len(stray)}
			}
		}
		rep, err := r.cfg.Auditor.Audit(ctx, AuditRequest{Dataset: run.Dataset, Repository: run.Repository,
			Ref: commit, BaseRef: base, BaseName: run.Target, BatchTime: run.BatchTime})
		if err != nil {
			return failed(log, StepAudit, err)
		}
		return Audited{SealedCommit: commit, Report: rep}
	case DoCleanup:
		if err := r.cfg.Lake.DeleteBranch(ctx, run.Repository, run.Branch); err != nil {
			return failed(log, StepCleanup, err)
		}
		return CleanedUp{}
	case DoRevert:
		return r.revert(ctx, log, run)
	}
	return nil
}

// send delivers one outbox entry of run (or, without a run, the answer to
// an operator request), retrying until it is delivered or the partition is
// revoked (an outbox entry stays in the stored outbox either way).
func (r *Runner) send(p *partition, run Run, o Outgoing) Input {
	b := backoff.Policy{Min: 200 * time.Millisecond, Max: 10 * time.Second, Jitter: backoff.Equal}.New()
	if o.Published != nil {
		r.cfg.Failpoint("before_send")
	}
	batch := run.BatchID
	if batch == "" {
		batch = o.Event().Batch()
	}
	receipts := run.Receipts
	for {
		ctx, cancel := context.WithTimeout(p.ctx, r.cfg.StepTimeout)
		got, err := r.cfg.Notifier.Notify(ctx, Notification{Event: o.Event(), State: o.State, Run: run, Receipts: receipts,
			RequestID: o.RequestID, ResultOnly: o.ResultOnly()})
		cancel()
		if got != nil {
			receipts = got // what did go out is not sent again on retry
		}
		if err == nil {
			return Sent{EventID: o.EventID, Receipts: receipts}
		}
		r.log.Warn("sending result event failed, retrying", "batch_id", batch, "event_id", o.EventID, "err", err)
		if !b.Wait(p.ctx) {
			return nil
		}
	}
}

func failed(log *slog.Logger, s Step, err error) StepFailed {
	class := Permanent
	switch {
	case errors.Is(err, ErrMergeConflict):
		class = Conflict
	case errors.Is(err, ErrTransient), errors.Is(err, context.DeadlineExceeded):
		class = Transient
	}
	log.Warn("step failed", "step", string(s), "class", class.String(), "err", err)
	return StepFailed{Step: s, Err: err.Error(), Class: class}
}

// publishMeta is the publish commit's metadata: the batch's attributes
// except the reserved "wap." keys (any case), which only lakewap writes.
func publishMeta(run Run) map[string]string {
	m := make(map[string]string, len(run.Attributes)+4)
	maps.Copy(m, run.Attributes)
	maps.DeleteFunc(m, func(k, _ string) bool { return strings.HasPrefix(strings.ToLower(k), ReservedMetaPrefix) })
	m[MetaBatchID], m[MetaDataset], m["wap.sealed_commit"] = run.BatchID, run.Dataset, run.SealedCommit
	if run.Report != nil {
		pass, fail, warn := run.Report.Counts()
		m[MetaAudit] = fmt.Sprintf("passed=%d failed=%d warned=%d", pass, fail, warn)
	}
	if run.Retries > 0 {
		m[MetaRetriedBy] = run.RetriedBy
	}
	return m
}

// ReservedMetaPrefix marks commit metadata keys that only lakewap writes.
const ReservedMetaPrefix = "wap."
