package tests

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// runLog keeps what a daemon persisted of one batch's run.
type runLog struct {
	batch string
	mu    sync.Mutex
	last  pipeline.Run
	// renotified counts the persisted changes of a published run that
	// record another notification attempt (the Slack re-notify).
	renotified int
}

func (l *runLog) observe(before, after pipeline.Run) {
	if after.BatchID != l.batch {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last = after
	if before.State == pipeline.StatePublished && after.State == pipeline.StatePublished && after.NotifyRetries > before.NotifyRetries {
		l.renotified++
	}
}

func (l *runLog) get() (pipeline.Run, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last, l.renotified
}

func pendingSlack(r pipeline.Run) bool {
	_, ok := r.Receipts[schemas.PendingReceiptPrefix+"slack"]
	return ok
}

// TestRetryWhileDaemonOwnsThePartition: with Slack down, an aborted run
// holds a "pending:slack" receipt and is re-notified every little while by
// the daemon that owns it. lakewap retry asks that daemon to retry it; the
// run ends published, and stays published after the next re-notify, after
// a second daemon joins the group and after the first one stops (the run is
// restored from the changelog by the other). Before retries went through
// the daemon, the CLI stored "published" behind it and the daemon's next
// re-notify stored its stale "aborted" copy back.
func TestRetryWhileDaemonOwnsThePartition(t *testing.T) {
	slackSrv := newSlackAPI(t)
	slackSrv.down = true
	withSlack := func(c *config.Config) {
		c.Notify.Slack = &config.Slack{Token: "xoxb-e2e-secret", Channel: "C0WAP", APIURL: slackSrv.GetAPIURL()}
	}
	first := &runLog{batch: "fix-1"}
	const renotify = 300 * time.Millisecond
	e := startE2EWith(t, withSlack, daemon.Options{Observe: first.observe, NotifyRetry: renotify})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	ab, ok := e.runBatch(t, "fix-1", harness.BadBillingRows).(schemas.BatchAborted)
	if !ok || !ab.BranchKept {
		t.Fatalf("bad batch: %+v", ab)
	}
	waitFor(t, func() bool {
		r, _ := first.get()
		return r.State == pipeline.StateAborted && pendingSlack(r) && len(r.Outbox) == 0 && !r.NotifyRetryAt.IsZero()
	})

	must(t, e.WriteParquet(ctx, ab.Branch, "gold/billing_fact/batch=fix-1/part-0.parquet", secondBillingRows))
	if code, out := e.ask(t, "retry", "-batch", "fix-1", "-by", "ana"); code != 0 {
		t.Fatalf("retry exited %d:\n%s", code, out)
	}
	stored := func() pipeline.Run {
		t.Helper()
		sr, err := findStored(ctx, e.cfg, "fix-1")
		must(t, err)
		return sr.Run
	}
	// The next re-notify of the published run, by the daemon that owns it.
	_, before := first.get()
	waitFor(t, func() bool { _, n := first.get(); return n > before })
	if r, _ := first.get(); r.State != pipeline.StatePublished || !pendingSlack(r) {
		t.Fatalf("after a re-notify the daemon holds %s (receipts %v)", r.State, r.Receipts)
	}
	if r := stored(); r.State != pipeline.StatePublished || r.Retries != 1 {
		t.Fatalf("stored run after a re-notify: %s, retries %d", r.State, r.Retries)
	}

	// A second daemon joins the group; then the first one stops and the
	// second restores the run from the changelog and re-notifies it.
	second := &runLog{batch: "fix-1"}
	ctx2, stop2 := context.WithCancel(context.Background())
	d2, err := daemon.New(ctx2, e.cfg, daemon.Options{Logger: slog.New(slog.NewTextHandler(testLogWriter{t}, nil)), Console: io.Discard,
		Observe: second.observe, NotifyRetry: renotify})
	if err != nil {
		stop2()
		t.Fatal(err)
	}
	done2 := make(chan error, 1)
	go func() { done2 <- d2.Run(ctx2) }()
	t.Cleanup(func() {
		stop2()
		if err := <-done2; err != nil {
			t.Errorf("second daemon: %v", err)
		}
	})
	// Once the second daemon is in the group with its partitions
	// restored, whichever holds the run's partition re-notifies it.
	waitFor(t, d2.Assigned)
	_, n1 := first.get()
	waitFor(t, func() bool { _, a := first.get(); _, b := second.get(); return a > n1 || b > 0 })
	if r := stored(); r.State != pipeline.StatePublished {
		t.Errorf("stored run with two daemons in the group: %s", r.State)
	}
	e.cancel()
	if err := <-e.done; err != nil {
		t.Errorf("first daemon: %v", err)
	}
	e.done <- nil // for the test's cleanup
	_, n2 := second.get()
	waitFor(t, func() bool { _, b := second.get(); return b > n2 })
	if r, _ := second.get(); r.State != pipeline.StatePublished || r.Retries != 1 {
		t.Errorf("after the rebalance the second daemon holds %s (retries %d)", r.State, r.Retries)
	}
	if r := stored(); r.State != pipeline.StatePublished {
		t.Errorf("stored run after the rebalance: %s", r.State)
	}
	// The results topic tells the same story: aborted, then published.
	var outcomes []string
	for _, ev := range e.Watcher.All("fix-1") {
		if ev.EventType() == schemas.TypeBatchPublished || ev.EventType() == schemas.TypeBatchAborted {
			outcomes = append(outcomes, ev.EventType())
		}
	}
	if strings.Join(outcomes, " ") != "BatchAborted BatchPublished" {
		t.Errorf("outcomes of fix-1 on the results topic: %v", outcomes)
	}
}

// TestCancelThroughTheDaemon: lakewap cancel aborts a batch waiting for
// its writes through the daemon; a second cancel is refused (the batch is
// aborted), and with no daemon running the command says so and exits 3.
func TestCancelThroughTheDaemon(t *testing.T) {
	e := startE2E(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: "stop-1", Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ready, err := e.Watcher.Await(ctx, "stop-1", schemas.TypeBranchReady)
	must(t, err)

	code, out := e.ask(t, "cancel", "-batch", "stop-1", "-reason", "upstream rerun", "-by", "ana")
	if code != 0 || !strings.Contains(out, "is aborted (cancelled): upstream rerun") {
		t.Fatalf("cancel exited %d:\n%s", code, out)
	}
	ab, err := e.Watcher.Await(ctx, "stop-1", schemas.TypeBatchAborted)
	must(t, err)
	if a := ab.(schemas.BatchAborted); a.Reason != schemas.ReasonCancelled || a.Branch != ready.(schemas.BranchReady).Branch {
		t.Errorf("BatchAborted = %+v", a)
	}
	if code, out := e.ask(t, "cancel", "-batch", "stop-1"); code != 1 || !strings.Contains(out, "refused (wrong_state): batch stop-1 of dataset billing is aborted") {
		t.Errorf("second cancel exited %d:\n%s", code, out)
	}

	e.cancel()
	if err := <-e.done; err != nil {
		t.Errorf("daemon: %v", err)
	}
	e.done <- nil
	start := time.Now()
	code, out = e.ask(t, "retry", "-batch", "stop-1", "-timeout", "2s")
	if code != 3 || !strings.Contains(out, "no lakewap daemon answered request req-") || !strings.Contains(out, "carries it out when it runs") {
		t.Errorf("retry with no daemon exited %d after %s:\n%s", code, time.Since(start), out)
	}
}

// TestSignedCancelThroughTheDaemon: with operators in the config, lakewap
// cancel signs its request for the daemon's Kafka cluster and requests
// topic (the command and the daemon each ask the brokers for the cluster
// id), and the daemon carries it out, naming the operator as who asked.
func TestSignedCancelThroughTheDaemon(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "alice.key")
	must(t, os.WriteFile(keyFile, []byte("alice-signing-key-0123456789"), 0o600))
	e := startE2E(t, func(c *config.Config) {
		c.Operators = []config.Operator{{Name: "alice", KeyFile: keyFile}}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: "signed-1", Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	if _, err := e.Watcher.Await(ctx, "signed-1", schemas.TypeBranchReady); err != nil {
		t.Fatal(err)
	}
	code, out := e.ask(t, "cancel", "-batch", "signed-1", "-reason", "upstream rerun", "-by", "alice")
	if code != 0 || !strings.Contains(out, "is aborted (cancelled): upstream rerun") {
		t.Fatalf("signed cancel exited %d:\n%s", code, out)
	}
	ab, err := e.Watcher.Await(ctx, "signed-1", schemas.TypeBatchAborted)
	must(t, err)
	if a := ab.(schemas.BatchAborted); a.Reason != schemas.ReasonCancelled {
		t.Errorf("BatchAborted = %+v", a)
	}
}
