package tests

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// TestCommitBetweenTheLookAndTheMergeIsAnnouncedByThatPublish (real lakeFS,
// one instance, no pre-merge action; review 48): a person's direct commit
// to main lands after a publish's look and before its merge, so lakeFS
// merges the batch onto that commit, a combination no audit judged. lakeFS's
// merge takes no precondition on the target's head, so lakewap cannot
// refuse it without the hook: the publish that landed on the commit
// announces it (one UnattestedChange naming it, found by that publish's
// merge, saying what the merge landed on), the dataset's next audit is full
// and says why, and the next publish announces nothing again. Before, a
// publish whose audit was incremental looked for nothing, and the next
// (full) one announced the commit and lakewap's own merge onto it.
func TestCommitBetweenTheLookAndTheMergeIsAnnouncedByThatPublish(t *testing.T) {
	hooks := &turnHooks{}
	var mu sync.Mutex
	idle := map[string]bool{} // batch -> published with nothing left to send
	e := startE2EWith(t, nil, daemon.Options{Failpoint: hooks.failpoint, Observe: func(_, after pipeline.Run) {
		mu.Lock()
		defer mu.Unlock()
		idle[after.BatchID] = after.State == pipeline.StatePublished && len(after.Outbox) == 0
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	batches := []string{"race-1", "race-2", "race-3"}
	if _, ok := e.runBatch(t, batches[0], harness.GoodBillingRows).(schemas.BatchPublished); !ok {
		t.Fatal("first batch not published")
	}

	var direct string
	var directErr error
	hooks.mu.Lock()
	hooks.beforeMerge = func() { // the second batch's publish, after its look
		if directErr = e.WriteParquet(ctx, "main", "gold/billing_fact/batch=by-hand-race/part-0.parquet", rowsFrom("20000")); directErr == nil {
			direct, directErr = e.Lake.Commit(ctx, "lake", "main", "by hand, during a publish", nil)
		}
	}
	hooks.mu.Unlock()
	second, ok := e.runBatch(t, batches[1], rowsFrom("5000")).(schemas.BatchPublished)
	must(t, directErr)
	if !ok || second.Report.Mode != audit.ModeIncremental {
		t.Fatalf("second batch: %+v; want published after an incremental audit", second)
	}
	merge, err := e.Lake.GetCommit(ctx, "lake", second.CommitID)
	must(t, err)
	if len(merge.Parents) != 2 || merge.Parents[0] != direct {
		t.Fatalf("the second batch's merge %s has parents %v; want the commit by hand %s first (the race did not happen)", merge.ID, merge.Parents, direct)
	}
	third, ok := e.runBatch(t, batches[2], rowsFrom("9000")).(schemas.BatchPublished)
	if !ok || third.Report.Mode != audit.ModeFull || third.Report.ModeReason == "" {
		t.Fatalf("the batch after the race: %+v; want published after a full audit saying why", third)
	}
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, b := range batches {
			if !idle[b] {
				return false
			}
		}
		return true
	})
	var changes []schemas.UnattestedChange
	for _, b := range batches {
		for _, ev := range e.Watcher.All(b) {
			if c, ok := ev.(schemas.UnattestedChange); ok {
				changes = append(changes, c)
			}
		}
	}
	if len(changes) != 1 {
		t.Fatalf("%d announcements, want 1 (the commit by hand, by the second batch's publish): %+v", len(changes), changes)
	}
	c := changes[0]
	if c.Kind != schemas.ChangeUnattestedCommit || c.CommitID != direct || c.BatchID != batches[1] || c.PublishedCommitID != second.CommitID ||
		!strings.Contains(c.Detail, "landed on it") {
		t.Errorf("announcement %+v; want the commit by hand %s, found by %s's publish %s, saying the merge landed on it", c, direct, batches[1], second.CommitID)
	}
}
