package tests

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/schemas"
)

// turnHooks is a runner failpoint that runs a function, once, at
// "before_merge", "after_merge" and "before_revert" (inside the publish
// turn).
type turnHooks struct {
	mu                  sync.Mutex
	beforeMerge, merged func()
	beforeRevert        func()
}

func (h *turnHooks) failpoint(name string) {
	h.mu.Lock()
	var f func()
	switch name {
	case "before_merge":
		f, h.beforeMerge = h.beforeMerge, nil
	case "after_merge":
		f, h.merged = h.merged, nil
	case "before_revert":
		f, h.beforeRevert = h.beforeRevert, nil
	}
	h.mu.Unlock()
	if f != nil {
		f()
	}
}

// TestGuessedRecheckIsVoidAfterAForeignCommit: the publish turn starts a
// batch's recheck against its guess, the target at this instance's last
// merge into it, while it looks at the target. Someone committing to the
// target right after that merge makes the guess wrong. Here the commit
// brings batch B's ids to main by hand, just after A's merge, while B waits
// for its turn behind A: B's recheck against the guess (A's merge) passes,
// and must not count. B is aborted naming unique and that commit, none of
// its rows reach main, and the guess is counted void. A guard of the
// recheck started beside the look (TestGuessedRecheckCountsOnlyWhenTheLookFindsTheGuess
// is the unit test); the look decides, as before it.
func TestGuessedRecheckIsVoidAfterAForeignCommit(t *testing.T) {
	hooks := &turnHooks{}
	e := startE2EWith(t, func(c *config.Config) { c.HTTP.Listen = "127.0.0.1:0"; c.HTTP.WebhookToken = "test-token" }, daemon.Options{Failpoint: hooks.failpoint})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	run := time.Now().UnixNano()
	a := serialBatch{id: fmt.Sprintf("guess-%d-a", run), first: 700000, rows: 20}
	b := serialBatch{id: fmt.Sprintf("guess-%d-b", run), first: 710000, rows: 20}
	for _, x := range []serialBatch{a, b} {
		landWritten(t, ctx, e.Env, x)
	}

	holding, release := make(chan struct{}), make(chan struct{})
	var foreign string
	var foreignErr error
	hooks.mu.Lock()
	hooks.beforeMerge = func() { // A's, holding the turn
		close(holding)
		select {
		case <-release:
		case <-ctx.Done():
		}
	}
	hooks.merged = func() { // right after A's merge, before B's turn
		if foreignErr = e.WriteParquet(ctx, "main", "gold/billing_fact/batch=by-hand-guess/part-0.parquet", billingRows(b.first, 0, b.rows, "BIGINT")); foreignErr == nil {
			foreign, foreignErr = e.Lake.Commit(ctx, "lake", "main", "by hand: batch B's ids", nil)
		}
	}
	hooks.mu.Unlock()

	finals := make(chan schemas.Event, 1)
	go func() { finals <- completeBatch(t, ctx, e.Env, a.id) }()
	select {
	case <-holding:
	case <-ctx.Done():
		t.Fatal("A's merge never started")
	}
	must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: b.id, Dataset: "billing", Write: "billing_fact",
		Paths: []string{"gold/billing_fact/batch=" + b.id + "/part-0.parquet"}, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	url := "http://" + e.d.HTTPAddr() + "/metrics"
	for value(t, scrape(t, url), "lakewap_publish_queue_depth", map[string]string{"target": "main"}) < 1 {
		select {
		case <-ctx.Done():
			t.Fatal("B never queued behind A")
		case <-time.After(10 * time.Millisecond):
		}
	}
	close(release)

	if ev := <-finals; ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("A ended %s %+v; want published", ev.EventType(), ev)
	}
	evB, err := e.Watcher.Await(ctx, b.id, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	must(t, foreignErr)
	ab, ok := evB.(schemas.BatchAborted)
	if !ok || ab.Reason != schemas.ReasonAuditFailed || !strings.Contains(ab.Detail, "billing_id_unique") || !strings.Contains(ab.Detail, "collides with commit "+foreign) {
		t.Errorf("B, whose ids a commit by hand brought to main after A's merge: %s %+v; want aborted audit_failed naming billing_id_unique and commit %s",
			evB.EventType(), evB, foreign)
	}
	if n, err := e.CountRows(ctx, "main", "gold/billing_fact/batch="+b.id+"/", ""); err != nil || n != 0 {
		t.Errorf("main holds %d of B's rows (err %v); want none", n, err)
	}
	head, err := e.Lake.GetCommit(ctx, "lake", "main")
	must(t, err)
	if head.ID != foreign {
		t.Errorf("main at %s; want the commit by hand %s (nothing merged after it)", head.ID, foreign)
	}
	fams := scrape(t, url)
	if got := value(t, fams, "lakewap_publish_guessed_rechecks_total", map[string]string{"target": "main", "outcome": "void"}); got != 1 {
		t.Errorf("lakewap_publish_guessed_rechecks_total{outcome=void} = %v; want 1 (B's guess, A's merge, was wrong)", got)
	}
}
