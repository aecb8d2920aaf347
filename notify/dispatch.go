package notify

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakewap/lakewap/internal/backoff"
	"github.com/lakewap/lakewap/schemas"
)

// Sink delivers notifications to one place.
type Sink interface {
	// Name is the sink's key in routes and receipts.
	Name() string
	// Send delivers n. receipt is what a later Send needs to update or skip
	// (it is stored under Name() in the receipts); a non-empty receipt is kept
	// even when err is set, so partial progress is not repeated. retry says
	// whether err is worth another attempt.
	Send(ctx context.Context, n Notification) (receipt string, retry bool, err error)
}

// requiredSink is implemented by sinks whose failure fails Notify (the
// results topic is a contract; Slack is a courtesy).
type requiredSink interface{ Required() bool }

func isRequired(s Sink) bool {
	r, ok := s.(requiredSink)
	return ok && r.Required()
}

// RetryAfterError asks the Dispatcher to wait at least Wait before the next
// attempt, as a rate-limited peer told it to.
type RetryAfterError struct {
	Wait time.Duration
	Err  error
}

func (e *RetryAfterError) Error() string { return e.Err.Error() }
func (e *RetryAfterError) Unwrap() error { return e.Err }

// attemptTimeout bounds one Send.
const attemptTimeout = 10 * time.Second

// ErrUndelivered is wrapped by Notify's error when a required sink could
// not deliver within its budget.
var ErrUndelivered = errors.New("notification not delivered")

// PendingKey is the receipt key under which Notify records that sink has
// not delivered the run's latest notification; its value is that
// notification's state. A later successful delivery removes it.
func PendingKey(sink string) string { return schemas.PendingReceiptPrefix + sink }

// Options tune a Dispatcher. Zero values take the defaults.
type Options struct {
	Logger *slog.Logger
	// Registerer receives the dispatcher's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Budget bounds the time one Notify spends on one best-effort sink,
	// retries included. Default 20s.
	Budget time.Duration
	// RequiredBudget is Budget for required sinks. Default 1m.
	RequiredBudget time.Duration
	// BestEffortWait is how long Notify waits for best-effort sinks once
	// the required ones have delivered; a best-effort sink still at work
	// then goes on in the background, in order behind the run's earlier
	// notifications to it, and is left pending. Default 1s.
	BestEffortWait time.Duration
	// MinBackoff and MaxBackoff bound the exponential backoff between
	// attempts (a Retry-After from the peer overrides it). Defaults 250ms, 10s.
	MinBackoff, MaxBackoff time.Duration
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.Budget, 20*time.Second)
	def(&o.RequiredBudget, time.Minute)
	def(&o.BestEffortWait, time.Second)
	def(&o.MinBackoff, 250*time.Millisecond)
	def(&o.MaxBackoff, 10*time.Second)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Dispatcher fans notifications out to sinks along routes.
type Dispatcher struct {
	routes []Route
	sinks  map[string]Sink
	names  []string // sorted, for a stable fan-out order
	opts   Options
	log    *slog.Logger
	*dispatchMetrics

	// sleep waits d or until ctx ends; tests replace it to observe waits
	// instead of spending them.
	sleep func(ctx context.Context, d time.Duration) error
	now   func() time.Time

	mu   sync.Mutex
	down map[string]bool // best-effort sinks whose last Notify ran out of budget
	// lanes holds each run's latest delivery to each best-effort sink, so
	// that the run's next one to that sink starts only after it ended and
	// from its receipt (see lane).
	lanes map[laneKey]*lane
}

// maxLanes bounds the lanes kept: beyond it, those that ended are dropped.
const maxLanes = 4096

type laneKey struct{ sink, dataset, batch string }

// lane is one delivery to a best-effort sink, run in the background so that
// a slow sink does not hold up the required ones' next notification of the
// run. A run's deliveries to one sink follow each other: each waits for
// the one before (prev) and starts from its receipt.
type lane struct {
	done chan struct{}
	res  delivery // set before done is closed
	// left is set (under Dispatcher.mu) when Notify returned without the
	// result: a failure is then counted and logged when the lane ends.
	left bool
	// given is the receipt the caller gave for the sink: the next delivery
	// starts from this one's only while the caller still gives that one
	// (else the run's record moved on without it: another instance, after
	// the partition moved, delivered and stored a newer receipt).
	given string
}

// NewDispatcher checks routes against sinks and returns a Dispatcher.
// Required sinks (the Kafka results sink) get every notification and take no
// route; every other sink gets what its routes match.
func NewDispatcher(routes []Route, sinks []Sink, opts Options) (*Dispatcher, error) {
	d := &Dispatcher{
		routes: slices.Clone(routes),
		sinks:  map[string]Sink{},
		opts:   opts.withDefaults(),
		sleep:  sleepCtx,
		now:    time.Now,
		down:   map[string]bool{},
		lanes:  map[laneKey]*lane{},
	}
	d.log = d.opts.Logger
	for i, s := range sinks {
		name := s.Name()
		if name == "" || strings.HasPrefix(name, schemas.PendingReceiptPrefix) {
			return nil, fmt.Errorf("sinks[%d]: invalid name %q", i, name)
		}
		if _, dup := d.sinks[name]; dup {
			return nil, fmt.Errorf("sinks[%d]: duplicate name %q", i, name)
		}
		d.sinks[name] = s
	}
	d.names = slices.Sorted(maps.Keys(d.sinks))
	for i, r := range routes {
		if err := r.validate(i, d.sinks); err != nil {
			return nil, err
		}
	}
	var err error
	if d.dispatchMetrics, err = newDispatchMetrics(d.opts.Registerer, d.names); err != nil {
		return nil, err
	}
	return d, nil
}

type target struct {
	sink     Sink
	mention  string
	channel  string
	required bool
}

// targets returns the sinks n goes to, each once, in name order.
func (d *Dispatcher) targets(n Notification) []target {
	var out []target
	for _, name := range d.names {
		s := d.sinks[name]
		if isRequired(s) {
			out = append(out, target{sink: s, required: true})
			continue
		}
		if n.ResultOnly {
			continue
		}
		matched, mention, channel := false, "", ""
		for _, r := range d.routes {
			if r.Sink == name && r.matches(n) {
				matched = true
				mention = cmp.Or(mention, r.Mention)
				channel = cmp.Or(channel, r.Channel)
			}
		}
		if matched {
			out = append(out, target{sink: s, mention: mention, channel: channel})
		}
	}
	return out
}

type delivery struct {
	receipt string
	err     error
}

// Notify sends n to every sink its routes pick, in parallel, each with its
// own retries and budget. It waits for the required sinks, and for the
// best-effort ones at most Options.BestEffortWait longer: one still at work
// then is left pending and goes on in the background, so a slow Slack does
// not hold up the run's next result event; the run's next notification to
// it starts after it ends, from its receipt. It returns n.Receipts
// updated with what each sink left, plus a PendingKey entry for each
// best-effort sink that did not deliver. The error is non-nil only when a
// required sink did not deliver (it wraps ErrUndelivered); the caller keeps
// the receipts either way and notifies again later.
func (d *Dispatcher) Notify(ctx context.Context, n Notification) (map[string]string, error) {
	ts := d.targets(n)
	results := make([]delivery, len(ts))
	lanes := make([]*lane, len(ts))
	var wg sync.WaitGroup
	for i, t := range ts {
		if t.required {
			wg.Go(func() { results[i] = d.deliver(ctx, t, n) })
		} else {
			lanes[i] = d.startLane(ctx, t, n)
		}
	}
	wg.Wait()
	grace := time.NewTimer(d.opts.BestEffortWait)
	defer grace.Stop()
	for i, l := range lanes {
		if l == nil {
			continue
		}
		select {
		case <-l.done:
			results[i] = l.res
			d.endLane(ts[i], n, l)
		case <-grace.C:
			grace.Reset(0) // the others get no more time either
			d.mu.Lock()
			select {
			case <-l.done: // it ended just now
				results[i] = l.res
			default:
				l.left = true
				results[i] = delivery{receipt: n.Receipts[ts[i].sink.Name()], err: errStillSending}
			}
			d.mu.Unlock()
		}
	}

	receipts := map[string]string{}
	maps.Copy(receipts, n.Receipts)
	_, announces := announcement(n)
	var errs []error
	for i, t := range ts {
		name, r := t.sink.Name(), results[i]
		if announces {
			// The run's receipts stay as they are: an announcement is not
			// the run's message, and a sink that missed it is not asked again.
			if r.err != nil && !errors.Is(r.err, errStillSending) {
				d.undeliv.WithLabelValues(name).Inc()
				if t.required {
					errs = append(errs, fmt.Errorf("%w to %s: %w", ErrUndelivered, name, r.err))
				} else {
					d.log.Warn("announcement not delivered", "sink", name, "batch_id", n.BatchID, "dataset", n.Dataset, "error", r.err.Error())
				}
			}
			continue
		}
		if r.receipt != "" {
			receipts[name] = r.receipt
		}
		if r.err == nil {
			delete(receipts, PendingKey(name))
			continue
		}
		receipts[PendingKey(name)] = n.State
		if errors.Is(r.err, errStillSending) {
			d.log.Info("notification still sending in the background; it stays pending",
				"sink", name, "batch_id", n.BatchID, "dataset", n.Dataset, "state", n.State)
			continue
		}
		d.undeliv.WithLabelValues(name).Inc()
		if t.required {
			delete(receipts, PendingKey(name))
			errs = append(errs, fmt.Errorf("%w to %s: %w", ErrUndelivered, name, r.err))
			continue
		}
		d.log.Warn("notification not delivered; it stays pending",
			"sink", name, "batch_id", n.BatchID, "dataset", n.Dataset, "state", n.State, "error", r.err.Error())
	}
	return receipts, errors.Join(errs...)
}

// errStillSending is the error of a best-effort sink still at work when
// Notify returns: it stays pending, and the run's next notification to it
// (a re-notification at the latest) starts from what it leaves.
var errStillSending = errors.New("still sending in the background")

// startLane starts n's delivery to best-effort t behind the run's previous
// one to t.
func (d *Dispatcher) startLane(ctx context.Context, t target, n Notification) *lane {
	key := laneKey{t.sink.Name(), n.Dataset, n.BatchID}
	l := &lane{done: make(chan struct{}), given: n.Receipts[t.sink.Name()]}
	d.mu.Lock()
	prev := d.lanes[key]
	if len(d.lanes) >= maxLanes {
		for k, o := range d.lanes {
			select {
			case <-o.done:
				delete(d.lanes, k)
			default:
			}
		}
	}
	d.lanes[key] = l
	d.mu.Unlock()
	// The caller's deadline ends its wait, not the delivery: deliver's
	// budget bounds that.
	ctx = context.WithoutCancel(ctx)
	go func() {
		var res delivery
		defer func() {
			d.mu.Lock()
			l.res = res
			left := l.left
			close(l.done)
			d.mu.Unlock()
			if left && res.err != nil {
				d.undeliv.WithLabelValues(key.sink).Inc()
				d.log.Warn("notification not delivered in the background; it stays pending",
					"sink", key.sink, "batch_id", n.BatchID, "dataset", n.Dataset, "state", n.State, "error", res.err.Error())
			}
		}()
		if prev != nil {
			<-prev.done
			if r := prev.res.receipt; r != "" && prev.given == l.given {
				n.Receipts = maps.Clone(n.Receipts)
				if n.Receipts == nil {
					n.Receipts = map[string]string{}
				}
				n.Receipts[key.sink] = r
			}
		}
		res = d.deliver(ctx, t, n)
	}()
	return l
}

// Close waits for the deliveries still going on in the background (a slow
// Slack's), until they end or ctx does, so that a graceful stop does not cut
// a message Slack is taking. Each ends within its sink's budget. A delivery
// cut by ctx stays pending in its run's record, and the run's next owner
// sends it again (finding the message Slack may have taken, see Slack).
// The error says how many were still sending.
func (d *Dispatcher) Close(ctx context.Context) error {
	d.mu.Lock()
	var running []*lane
	for _, l := range d.lanes {
		select {
		case <-l.done:
		default:
			running = append(running, l)
		}
	}
	d.mu.Unlock()
	for i, l := range running {
		select {
		case <-l.done:
		case <-ctx.Done():
			return fmt.Errorf("notify: %d of %d background deliveries still sending at shutdown; their runs stay pending: %w",
				len(running)-i, len(running), context.Cause(ctx))
		}
	}
	return nil
}

// Settled awaits, until ctx ends, the deliveries of the run (dataset,
// batch) that Notify left in the background for the sinks receipts holds
// pending, and returns receipts with what those that delivered left (ok
// false: nothing new). A lane started from another receipt than the one
// receipts holds is not the run's as stored (the record moved on) and is
// not taken. The runner stores the result when it hands the run's
// partition back, so that the receipt of a message Slack took is not lost
// with the process.
func (d *Dispatcher) Settled(ctx context.Context, dataset, batch string, receipts map[string]string) (map[string]string, bool) {
	var out map[string]string
	for _, name := range d.names {
		if receipts[PendingKey(name)] == "" {
			continue
		}
		d.mu.Lock()
		l := d.lanes[laneKey{name, dataset, batch}]
		d.mu.Unlock()
		if l == nil || l.given != receipts[name] {
			continue
		}
		select {
		case <-l.done:
		default: // not done yet: awaited while ctx lasts
			select {
			case <-l.done:
			case <-ctx.Done():
				return out, out != nil
			}
		}
		if l.res.err != nil || l.res.receipt == "" {
			continue
		}
		if out == nil {
			out = maps.Clone(receipts)
		}
		out[name] = l.res.receipt
		delete(out, PendingKey(name))
	}
	return out, out != nil
}

// endLane forgets l once its result is with the caller, unless a later
// delivery of the run follows it.
func (d *Dispatcher) endLane(t target, n Notification, l *lane) {
	key := laneKey{t.sink.Name(), n.Dataset, n.BatchID}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lanes[key] == l {
		delete(d.lanes, key)
	}
}

// deliver runs one sink's attempts. A best-effort sink that exhausted its
// budget last time is tried once only until it delivers again, so a Slack
// outage costs each later Notify one attempt, not a whole budget.
func (d *Dispatcher) deliver(ctx context.Context, t target, n Notification) delivery {
	name := t.sink.Name()
	budget := d.opts.Budget
	if t.required {
		budget = d.opts.RequiredBudget
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	deadline := d.now().Add(budget)

	d.mu.Lock()
	once := !t.required && d.down[name]
	d.mu.Unlock()

	sn := n
	sn.Mention = t.mention
	sn.Channel = t.channel
	sn.Receipts = map[string]string{}
	maps.Copy(sn.Receipts, n.Receipts)
	receipt := n.Receipts[name]
	log := d.log.With("sink", name, "batch_id", n.BatchID, "dataset", n.Dataset, "state", n.State)
	var lastErr error
	for attempt := 1; ; attempt++ {
		actx, acancel := context.WithTimeout(ctx, attemptTimeout)
		r, retry, err := t.sink.Send(actx, sn)
		acancel()
		if r != "" {
			receipt = r
			sn.Receipts[name] = r
		}
		if err == nil {
			d.attempts.WithLabelValues(name, "ok").Inc()
			d.setDown(name, false)
			return delivery{receipt: receipt}
		}
		lastErr = err
		if !retry {
			d.attempts.WithLabelValues(name, "error").Inc()
			log.Warn("notification failed permanently", "attempt", attempt, "error", err.Error())
			break
		}
		d.attempts.WithLabelValues(name, "retry").Inc()
		wait := d.backoff(attempt)
		var ra *RetryAfterError
		if errors.As(err, &ra) && ra.Wait > 0 {
			wait = ra.Wait
		}
		log.Info("notification attempt failed", "attempt", attempt, "retry_in", wait, "error", err.Error())
		if once || ctx.Err() != nil || d.now().Add(wait).After(deadline) {
			break
		}
		if err := d.sleep(ctx, wait); err != nil {
			break
		}
	}
	if !t.required {
		d.setDown(name, true)
	}
	return delivery{receipt: receipt, err: lastErr}
}

func (d *Dispatcher) setDown(name string, down bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down[name] = down
}

// backoff is exponential with jitter in [d/2, d] so that sinks retrying
// after a shared outage do not return in step.
func (d *Dispatcher) backoff(attempt int) time.Duration {
	return backoff.Policy{Min: d.opts.MinBackoff, Max: d.opts.MaxBackoff, Jitter: backoff.Equal}.Delay(attempt)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if !backoff.Sleep(ctx, d) {
		return context.Cause(ctx)
	}
	return nil
}
