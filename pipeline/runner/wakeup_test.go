package runner

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// A publish that failed transiently is retried at its RetryAt by the run's
// timer, whose tick asks for DoPublish again. A tick that comes after the
// failure was applied but before the publish left flight (execute between
// internal and done: a goroutine descheduled, or waiting for the
// partition's lock behind a changelog write, for longer than the backoff)
// found the publish still in flight and started nothing, and the publish's
// own end resumed nothing: the run stayed in publishing with no timer and
// nothing in flight until the partition moved (two instances on a loaded
// machine: a batch unsettled after minutes).
func TestATickBetweenAPublishOutcomeAndItsEndIsNotLost(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	f := newRunnerFixtureWith(t, func(c *Config) {
		c.Now = func() time.Time { return time.Unix(0, clock.Load()) }
		// The run's own timer is an hour away: only the test's tick retries.
		c.Policy = policy(func(p *Policy) { p.MinBackoff, p.MaxBackoff, p.RetryBudget = time.Hour, time.Hour, 24*time.Hour })
	})
	f.lake.mergeErr = []error{fmt.Errorf("merge: HTTP 503: %w", ErrTransient)}
	var once sync.Once
	var seen Run
	f.r.outcomeApplied = func(p *partition, key string, k EffectKind) {
		if k != DoPublish {
			return
		}
		once.Do(func() {
			p.mu.Lock()
			seen = p.runs[key]
			p.mu.Unlock()
			clock.Add(int64(2 * time.Hour)) // past the retry's time
			f.r.internal(p, key, f.r.tick(p, key))
		})
	}
	f.land(t, "w1")
	f.await(t, "w1", schemas.TypeBatchPublished)
	if seen.State != StatePublishing || seen.Attempts != 1 || seen.RetryAt.IsZero() {
		t.Errorf("after the failed merge the run was %s, %d attempts, retry at %s; want publishing, 1, a retry time", seen.State, seen.Attempts, seen.RetryAt)
	}
	f.lake.mu.Lock()
	defer f.lake.mu.Unlock()
	if f.lake.merges != 2 {
		t.Errorf("%d merges, want 2 (the failed one and its retry)", f.lake.merges)
	}
}
