package lineage

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/lakewap/lakewap/pipeline"
)

// Close gives up on what is still queued once its CloseWithin is over: a
// lineage endpoint that never answers cannot hold a shutdown for queue
// length × timeout (QueueSize events at 5 s each: over 80 minutes). What
// is left is counted dropped, reason shutdown.
func TestCloseDoesNotWaitOutADeadEndpoint(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var mu sync.Mutex
	dropped := map[string]int{}
	e, err := New(Options{Send: func(ctx context.Context, key string, body []byte) error {
		select { // an endpoint that hangs until the request's own timeout
		case <-ctx.Done():
			return ctx.Err()
		case <-release:
			return nil
		}
	}, Timeout: time.Hour, CloseWithin: 50 * time.Millisecond, Dropped: func(r string) { mu.Lock(); dropped[r]++; mu.Unlock() }})
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
	mu.Lock()
	defer mu.Unlock()
	if dropped["shutdown"] == 0 || dropped["shutdown"]+dropped["undelivered"] != n {
		t.Errorf("dropped %v, want all %d events counted, the queued ones as shutdown", dropped, n)
	}
}
