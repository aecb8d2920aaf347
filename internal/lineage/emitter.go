package lineage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/pipeline"
)

// QueueSize bounds the events waiting to be sent.
const QueueSize = 1000

// DefaultMaxEventBytes is the byte budget of one event when
// Options.MaxEventBytes is not set: below Kafka's default message size
// (1 MiB) with room for the record's key and headers.
const DefaultMaxEventBytes = 512 << 10

// Options configure an Emitter.
type Options struct {
	// URL is the OpenLineage HTTP endpoint events are POSTed to (Marquez:
	// http://marquez:5000/api/v1/lineage). Either URL or Send is set.
	URL string
	// Send, if set, delivers one event instead of the HTTP POST: key is the
	// event's Kafka message key (Key), body its JSON. The daemon sets it to
	// write to lineage.kafka.topic.
	Send func(ctx context.Context, key string, body []byte) error
	// MaxEventBytes is the byte budget of one event's JSON (default
	// DefaultMaxEventBytes); a larger event is sent with less of its
	// assertions (leaveOutAssertions), and dropped, counted too_large, only
	// if still larger.
	MaxEventBytes int
	// Namespace is the jobs' namespace (default lakewap).
	Namespace string
	// Tables returns a dataset's tables.
	Tables func(dataset string) []Table
	// Timeout bounds one POST (default 5s).
	Timeout time.Duration
	Client  *http.Client
	Logger  *slog.Logger
	// Registerer, if set, gets the emitter's metrics (metrics.go): events
	// not delivered (queue full, server error, too large, shutdown), by
	// reason.
	Registerer prometheus.Registerer
	// Closed, if set, is called once Close has sent what was queued (the
	// daemon closes the Kafka writer there).
	Closed func()
	// CloseWithin bounds how long Close keeps sending what is queued
	// (default 10s); what is left then is dropped, counted shutdown.
	CloseWithin time.Duration
}

// Emitter sends the run events of observed run changes to Options.URL in
// the background.
type Emitter struct {
	o       Options
	metrics *metrics
	queue   chan RunEvent
	done    chan struct{}
	mu      sync.RWMutex // closed and the queue's closing
	closed  bool
	sent    atomic.Int64
	// stop ends the sending when Close has waited CloseWithin.
	stop   context.Context
	cancel context.CancelFunc
}

// New starts an Emitter; Close stops it.
func New(o Options) (*Emitter, error) {
	if o.URL == "" && o.Send == nil {
		return nil, fmt.Errorf("lineage: no URL and no Send")
	}
	if o.MaxEventBytes <= 0 {
		o.MaxEventBytes = DefaultMaxEventBytes
	}
	if o.Namespace == "" {
		o.Namespace = "lakewap"
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.CloseWithin <= 0 {
		o.CloseWithin = 10 * time.Second
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Tables == nil {
		o.Tables = func(string) []Table { return nil }
	}
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, fmt.Errorf("lineage: metrics: %w", err)
	}
	e := &Emitter{o: o, queue: make(chan RunEvent, QueueSize), done: make(chan struct{}), metrics: m}
	e.stop, e.cancel = context.WithCancel(context.Background())
	go e.loop()
	return e, nil
}

// Observe is the runner's Observe hook: it queues the event the change
// makes, if any, without waiting.
func (e *Emitter) Observe(before, after pipeline.Run) {
	ev, ok := Of(before, after, e.o.Namespace, e.o.Tables(after.Dataset))
	if !ok {
		return
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return
	}
	select {
	case e.queue <- ev:
	default:
		e.drop("queue_full")
	}
}

func (e *Emitter) drop(reason string) { e.metrics.dropped.WithLabelValues(reason).Inc() }

func (e *Emitter) loop() {
	defer close(e.done)
	for ev := range e.queue {
		if e.stop.Err() != nil {
			e.drop("shutdown")
			continue
		}
		body, err := json.Marshal(ev)
		for step := 1; err == nil && len(body) > e.o.MaxEventBytes && step <= 2; step++ {
			// Less of its assertions rather than no event: the run's
			// outcome is what the lineage backend must see.
			ev = leaveOutAssertions(ev, step, e.o.MaxEventBytes)
			body, err = json.Marshal(ev)
		}
		if err == nil && len(body) > e.o.MaxEventBytes {
			e.o.Logger.Warn("lineage event over its byte budget, not sent", "job", ev.Job.Name, "run_id", ev.Run.RunID,
				"event_type", ev.EventType, "bytes", len(body), "max_bytes", e.o.MaxEventBytes)
			e.drop("too_large")
			continue
		}
		if err == nil {
			err = e.send(ev, body)
		}
		if err != nil && e.stop.Err() != nil {
			e.drop("shutdown")
			continue
		}
		if err != nil {
			e.o.Logger.Warn("lineage event not delivered", "job", ev.Job.Name, "run_id", ev.Run.RunID, "event_type", ev.EventType, "err", err)
			e.drop("undelivered")
			continue
		}
		e.sent.Add(1)
	}
}

// Key is the Kafka message key of a run event, as OpenLineage's own Kafka
// transport makes it for a run without a parent: run:<namespace>/<name> of
// its job, so a job's events stay in order on one partition.
func Key(ev RunEvent) string { return "run:" + ev.Job.Namespace + "/" + ev.Job.Name }

func (e *Emitter) send(ev RunEvent, body []byte) error {
	ctx, cancel := context.WithTimeout(e.stop, e.o.Timeout)
	defer cancel()
	if e.o.Send != nil {
		return e.o.Send(ctx, Key(ev), body)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.o.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.o.Client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s", e.o.URL, resp.Status)
	}
	return nil
}

// Close sends what is queued (each within its timeout, all within
// CloseWithin) and stops.
func (e *Emitter) Close() {
	e.mu.Lock()
	first := !e.closed
	if first {
		e.closed = true
		close(e.queue)
	}
	e.mu.Unlock()
	select {
	case <-e.done:
	case <-time.After(e.o.CloseWithin):
		if n := len(e.queue); n > 0 {
			e.o.Logger.Warn("lineage events not sent before shutdown", "events", n+1, "within", e.o.CloseWithin)
		}
		e.cancel()
		<-e.done
	}
	e.cancel()
	if first && e.o.Closed != nil {
		e.o.Closed()
	}
}

// ToKafka is an Options.Send that writes each event to w's topic as
// OpenLineage's Kafka transport does: the JSON as the value, Key as the
// key, with a content-type header.
func ToKafka(w *kafka.Writer) func(ctx context.Context, key string, body []byte) error {
	return func(ctx context.Context, key string, body []byte) error {
		return w.Write(ctx, kafka.Message{Key: []byte(key), Value: body,
			Headers: []kafka.Header{{Key: "content-type", Value: []byte("application/json")}}})
	}
}
