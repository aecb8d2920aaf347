package tests

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/devstack"
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

// TestTwoInstancesRevertBetweenTheLookAndTheMerge (real lakeFS, two
// instances in one group, lakewap's pre-merge action on main; review 48):
// instance B reverts a customers batch Y (the request goes to Y's owner)
// while instance A holds, past its look at main, the publish of an orders
// batch X whose orders reference Y's customers. Each instance's queue
// orders only its own commits, so B's revert lands between A's look and
// A's merge, and lakeFS merges X onto the revert. lakeFS runs the hook on
// that merge commit: it must refuse it, and A's retry looks again,
// rechecks X onto the revert and aborts it naming orders' check and the
// revert commit. Main then holds neither Y's customers nor X's orders.
//
// "only customers": Y's were main's only customers, and main had no order
// yet. orders' check could not run on the revert (no file of orders) nor on
// the merge (no file of customers), and the hook excused it as failing
// already: X was published onto the revert, every order an orphan (failed
// before). The hook now judges the dataset of lakewap's own publish as its
// recheck does, excusing none of its checks. "beside others": main holds
// another customer and an order of it; a guard.
func TestTwoInstancesRevertBetweenTheLookAndTheMerge(t *testing.T) {
	for _, seeded := range []bool{false, true} {
		name := "only customers"
		if seeded {
			name = "beside others"
		}
		t.Run(name, func(t *testing.T) { revertBetweenLookAndMerge(t, seeded) })
	}
}

func revertBetweenLookAndMerge(t *testing.T, seeded bool) {
	t.Setenv("LAKEFSACTION_LAKEWAP_TOKEN", "two-instances-revert")
	tmp := t.TempDir()
	stack := devstack.StartForTest(t, devstack.Options{WorkDir: tmp, Repository: "lake", Topics: harness.StackTopics()})
	cfg := harness.DemoConfig(stack, tmp)
	shopConfig(cfg)
	cfg.HTTP.Listen, cfg.HTTP.WebhookToken = "127.0.0.1:0", "two-instances-revert"
	must(t, cfg.Validate())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tctx, tcancel := context.WithTimeout(ctx, 5*time.Minute)
	defer tcancel()

	hooks := &turnHooks{} // instance A's
	owners := []*ownership{{owned: map[int]bool{}}, {owned: map[int]bool{}}}
	var daemons []*daemon.Daemon
	for i := range 2 {
		o := daemon.Options{Logger: slog.New(owners[i]), Console: io.Discard}
		if i == 0 {
			o.Failpoint = hooks.failpoint
		}
		daemons = append(daemons, runDaemon(t, ctx, cancel, cfg, o, i))
	}
	env, err := harness.New(ctx, stack, cfg, tmp)
	must(t, err)
	t.Cleanup(env.Close)
	e := &e2e{Env: env, cfg: cfg}
	installAction(t, env, "http://"+daemons[0].HTTPAddr()+daemon.PreMergePath)
	waitFor(t, func() bool {
		a, b := owners[0].partitions(), owners[1].partitions()
		return len(a) > 0 && len(b) > 0 && len(a)+len(b) == cfg.Kafka.Partitions
	})
	pick := func(prefix string, owned []int) string {
		for i := 0; ; i++ {
			id := fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano(), i)
			p := (&kafka.Murmur2Balancer{}).Balance(kafka.Message{Key: []byte(id)}, 0, 1, 2)
			if slices.Contains(owned, p) {
				return id
			}
		}
	}
	if seeded {
		publishedOK(t, "customer 100", e.runShop(t, tctx, customersBatch(pick("rev-c0", owners[1].partitions())), customerRows(100)))
		publishedOK(t, "an order of customer 100", e.runShop(t, tctx, ordersBatch(pick("rev-o0", owners[1].partitions())), orderRows(100, 100)))
	}
	y := customersBatch(pick("rev-y", owners[1].partitions()))
	x := ordersBatch(pick("rev-x", owners[0].partitions()))
	publishedOK(t, "customers batch Y", e.runShop(t, tctx, y, customerRows(1, 2, 3)))
	e.prepareShop(t, tctx, x, orderRows(1, 1, 2, 3)) // branched from main holding Y

	holding, release := make(chan struct{}), make(chan struct{})
	hooks.mu.Lock()
	hooks.beforeMerge = func() { // X's publish on A, past its look
		close(holding)
		select {
		case <-release:
		case <-tctx.Done():
		}
	}
	hooks.mu.Unlock()
	e.completeShop(t, tctx, x)
	select {
	case <-holding:
	case <-tctx.Done():
		t.Fatal("X's merge never started")
	}
	if code, out := e.ask(t, "revert", "-batch", y.id, "-dataset", "customers", "-reason", "review 48", "-by", "test"); code != 0 {
		close(release)
		t.Fatalf("revert of Y exited %d:\n%s", code, out)
	}
	ev, err := env.Watcher.Await(tctx, y.id, schemas.TypeBatchReverted)
	close(release)
	must(t, err)
	revert := ev.(schemas.BatchReverted).CommitID

	final := e.finalOf(t, tctx, x)
	ab, ok := final.(schemas.BatchAborted)
	if !ok || ab.Reason != schemas.ReasonAuditFailed || !strings.Contains(ab.Detail, "orders_have_customers") || !strings.Contains(ab.Detail, "collides with commit "+revert) {
		t.Errorf("X, whose customers B reverted between A's look and A's merge: %s %+v; want aborted audit_failed naming orders_have_customers and the revert %s",
			final.EventType(), final, revert)
	}
	head, err := env.Lake.GetCommit(tctx, "lake", "main")
	must(t, err)
	if head.ID != revert {
		t.Errorf("main at %s (%q); want the revert %s, nothing merged after it", head.ID, head.Message, revert)
	}
	if n, err := env.CountRows(tctx, "main", "gold/shop/orders/batch="+x.id+"/", ""); err != nil || n != 0 {
		t.Errorf("main holds %d of X's orders (err %v); want none", n, err)
	}
	if !seeded {
		return // orders has no file on main: its check cannot run there
	}
	for _, ds := range []string{"orders", "customers"} {
		rep, err := daemons[0].Engine().Run(tctx, audit.Request{Dataset: ds, Suite: cfg.Datasets[ds].Suite, Repository: "lake", Ref: head.ID, BaseRef: head.ID, BaseName: "main"})
		must(t, err)
		if !rep.Passed {
			t.Errorf("dataset %s fails on main at %s: %+v", ds, head.ID, rep.Failed())
		}
	}
}
