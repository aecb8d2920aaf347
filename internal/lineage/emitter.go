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

	"github.com/lakewap/lakewap/pipeline"
)

// QueueSize bounds the events waiting to be sent.
const QueueSize = 1000

// Options configure an Emitter.
type Options struct {
	// URL is the OpenLineage HTTP endpoint events are POSTed to (Marquez:
	// http://marquez:5000/api/v1/lineage).
	URL string
	// Namespace is the jobs' namespace (default lakewap).
	Namespace string
	// Tables returns a dataset's tables.
	Tables func(dataset string) []Table
	// Timeout bounds one POST (default 5s).
	Timeout time.Duration
	Client  *http.Client
	Logger  *slog.Logger
	// Dropped, if set, counts events not delivered (queue full, server
	// error), by reason.
	Dropped func(reason string)
}

// Emitter sends the run events of observed run changes to Options.URL in
// the background.
type Emitter struct {
	o      Options
	queue  chan RunEvent
	done   chan struct{}
	mu     sync.RWMutex // closed and the queue's closing
	closed bool
	sent   atomic.Int64
}

// New starts an Emitter; Close stops it.
func New(o Options) (*Emitter, error) {
	if o.URL == "" {
		return nil, fmt.Errorf("lineage: no URL")
	}
	if o.Namespace == "" {
		o.Namespace = "lakewap"
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
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
	e := &Emitter{o: o, queue: make(chan RunEvent, QueueSize), done: make(chan struct{})}
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

func (e *Emitter) drop(reason string) {
	if e.o.Dropped != nil {
		e.o.Dropped(reason)
	}
}

func (e *Emitter) loop() {
	defer close(e.done)
	for ev := range e.queue {
		if err := e.post(ev); err != nil {
			e.o.Logger.Warn("lineage event not delivered", "job", ev.Job.Name, "run_id", ev.Run.RunID, "event_type", ev.EventType, "err", err)
			e.drop("undelivered")
			continue
		}
		e.sent.Add(1)
	}
}

func (e *Emitter) post(ev RunEvent) error {
	body, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.o.Timeout)
	defer cancel()
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

// Close sends what is queued (each within its timeout) and stops.
func (e *Emitter) Close() {
	e.mu.Lock()
	if !e.closed {
		e.closed = true
		close(e.queue)
	}
	e.mu.Unlock()
	<-e.done
}
