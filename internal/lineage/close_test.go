package lineage

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lakewap/lakewap/pipeline"
)

// Close gives up on what is still queued once its CloseWithin is over: a
// lineage endpoint that never answers cannot hold a shutdown for queue
// length × timeout (QueueSize events at 5 s each: over 80 minutes). What
// is left is counted dropped, reason shutdown.
func TestCloseDoesNotWaitOutADeadEndpoint(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	e, err := New(Options{Send: func(ctx context.Context, key string, body []byte) error {
		select { // an endpoint that hangs until the request's own timeout
		case <-ctx.Done():
			return ctx.Err()
		case <-release:
			return nil
		}
	}, Timeout: time.Hour, CloseWithin: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	for i := range n {
		e.Observe(pipeline.Run{}, pipeline.Run{BatchID: string(rune('a' + i)), Dataset: "billing", State: pipeline.StateLanded})
	}
	closed := make(chan struct{})
	go func() { e.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(time.Minute): // the old Close: n hours
		t.Fatal("Close still waits on the dead endpoint after a minute")
	}
	shutdown, undelivered := dropped(e, "shutdown"), dropped(e, "undelivered")
	if shutdown == 0 || shutdown+undelivered != n {
		t.Errorf("dropped %d shutdown and %d undelivered, want all %d events counted, the queued ones as shutdown", shutdown, undelivered, n)
	}
}

// dropped is lakewap_lineage_events_dropped_total{reason} of e.
func dropped(e *Emitter, reason string) int {
	return int(testutil.ToFloat64(e.metrics.dropped.WithLabelValues(reason)))
}
