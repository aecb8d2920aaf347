package tests

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack/slacktest"
	"github.com/treeverse/lakefs/pkg/api/apigen"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// e2e is one embedded stack with a lakewap daemon running in-process.
type e2e struct {
	*harness.Env
	cfg     *config.Config
	cfgFile string // cfg written for the commands, on first use
	d       *daemon.Daemon
	cancel  context.CancelFunc
	done    chan error
}

func startE2E(t *testing.T, mutate func(*config.Config)) *e2e {
	t.Helper()
	return startE2EObserved(t, mutate, nil)
}

// startE2EObserved is startE2E with a hook on every persisted run change.
func startE2EObserved(t *testing.T, mutate func(*config.Config), observe func(before, after pipeline.Run)) *e2e {
	t.Helper()
	return startE2EWith(t, mutate, daemon.Options{Observe: observe})
}

// startE2EWith is startE2E with daemon options (the logger and console are
// the test's).
func startE2EWith(t *testing.T, mutate func(*config.Config), o daemon.Options) *e2e {
	t.Helper()
	return startE2EOn(t, devstack.Options{}, func(_ *devstack.Stack, cfg *config.Config) {
		if mutate != nil {
			mutate(cfg)
		}
	}, o)
}

// startE2EOn is startE2EWith on a stack started with so (work dir,
// repository and topics are the e2e ones); mutate also sees the stack.
func startE2EOn(t *testing.T, so devstack.Options, mutate func(*devstack.Stack, *config.Config), o daemon.Options) *e2e {
	t.Helper()
	tmp := t.TempDir()
	so.WorkDir, so.Repository, so.Topics = tmp, "lake", harness.StackTopics()
	stack := devstack.StartForTest(t, so)
	cfg := harness.DemoConfig(stack, tmp)
	if mutate != nil {
		mutate(stack, cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	log := slog.New(slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	o.Logger, o.Console = log, io.Discard
	d, err := daemon.New(ctx, cfg, o)
	if err != nil {
		cancel()
		t.Fatalf("daemon: %v", err)
	}
	e := &e2e{cfg: cfg, d: d, cancel: cancel, done: make(chan error, 1)}
	go func() { e.done <- d.Run(ctx) }()
	env, err := harness.New(ctx, stack, cfg, tmp)
	if err != nil {
		t.Fatalf("env: %v", err)
	}
	e.Env = env
	t.Cleanup(func() {
		env.Close()
		cancel()
		select {
		case err := <-e.done:
			if err != nil {
				t.Errorf("daemon: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("daemon did not stop within 30s of cancellation")
		}
	})
	return e
}

type testLogWriter struct{ t *testing.T }

func (w testLogWriter) Write(p []byte) (int, error) {
	if testing.Verbose() || os.Getenv("LAKEWAP_TEST_LOGS") != "" {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// runBatch lands a batch, writes query's rows where BranchReady says, and
// returns the final result event.
func (e *e2e) runBatch(t *testing.T, batch, query string) schemas.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: batch, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ev, err := e.Watcher.Await(ctx, batch, schemas.TypeBranchReady)
	must(t, err)
	ready := ev.(schemas.BranchReady)
	if ready.Repository != "lake" || ready.Branch != schemas.BranchName("billing", batch) {
		t.Fatalf("BranchReady = %+v", ready)
	}
	path := "gold/billing_fact/batch=" + batch + "/part-0.parquet"
	must(t, e.WriteParquet(ctx, ready.Branch, path, query))
	must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: batch, Dataset: "billing", Write: "billing_fact",
		Paths: []string{path}, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	final, err := e.Watcher.Await(ctx, batch, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	return final
}

// lakeFSAPI is a client of the stack's lakeFS API as its admin, for what
// a writer does that lakewap's client does not (delete, merge, stage).
func (e *e2e) lakeFSAPI(t *testing.T) *apigen.ClientWithResponses {
	t.Helper()
	api, err := apigen.NewClientWithResponses(e.Stack.LakeFSEndpoint+"/api/v1", apigen.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.SetBasicAuth(e.Stack.AccessKeyID, e.Stack.SecretAccessKey)
		return nil
	}))
	must(t, err)
	return api
}

// commitOn commits what is staged on branch of the stack's repository
// "lake" with msg, as a writer or another job would.
func commitOn(t *testing.T, ctx context.Context, api *apigen.ClientWithResponses, branch, msg string) {
	t.Helper()
	resp, err := api.CommitWithResponse(ctx, "lake", branch, &apigen.CommitParams{}, apigen.CommitJSONRequestBody{Message: msg})
	must(t, err)
	if resp.StatusCode() != http.StatusCreated {
		t.Fatalf("commit on %s: HTTP %d %s", branch, resp.StatusCode(), resp.Body)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		// A child run with Output keeps its stderr in the error.
		if exit, ok := errors.AsType[*exec.ExitError](err); ok && len(exit.Stderr) > 0 {
			t.Fatalf("%v\n%s", err, exit.Stderr)
		}
		t.Fatal(err)
	}
}

func TestEndToEndPublishesGoodAndStopsBadBatch(t *testing.T) {
	e := startE2E(t, nil)
	ctx := context.Background()

	good := e.runBatch(t, "good-1", harness.GoodBillingRows)
	pub, ok := good.(schemas.BatchPublished)
	if !ok {
		t.Fatalf("good batch ended with %s: %+v", good.EventType(), good)
	}
	head, err := e.Lake.GetCommit(ctx, "lake", "main")
	must(t, err)
	if pub.CommitID != head.ID {
		t.Errorf("BatchPublished commit %s, main is at %s", pub.CommitID, head.ID)
	}
	if head.Metadata[pipeline.MetaBatchID] != "good-1" {
		t.Errorf("main head metadata %v lacks %s=good-1", head.Metadata, pipeline.MetaBatchID)
	}
	if !pub.Report.Passed || len(pub.Report.Checks) != 5 {
		t.Errorf("published report = %+v", pub.Report)
	}
	rows, err := e.CountRows(ctx, "main", "gold/billing_fact/", "")
	must(t, err)
	if rows != 1000 {
		t.Errorf("main has %d rows after the good batch, want 1000", rows)
	}

	bad := e.runBatch(t, "bad-1", harness.BadBillingRows)
	ab, ok := bad.(schemas.BatchAborted)
	if !ok {
		t.Fatalf("bad batch ended with %s: %+v", bad.EventType(), bad)
	}
	if ab.Reason != schemas.ReasonAuditFailed || ab.Report == nil {
		t.Fatalf("aborted = %+v", ab)
	}
	failed := ab.Report.Failed()
	if len(failed) != 1 || failed[0].Name != "billing_id_not_null" || !strings.Contains(failed[0].Observed, "40") || len(failed[0].SampleRows) == 0 {
		t.Errorf("failed checks = %+v, want billing_id_not_null with 40 null rows and samples", failed)
	}
	after, err := e.Lake.GetCommit(ctx, "lake", "main")
	must(t, err)
	if after.ID != head.ID {
		t.Errorf("main moved from %s to %s after an aborted batch", head.ID, after.ID)
	}
	rows, err = e.CountRows(ctx, "main", "gold/billing_fact/", "")
	must(t, err)
	nulls, err := e.CountRows(ctx, "main", "gold/billing_fact/", "billing_id IS NULL")
	must(t, err)
	if rows != 1000 || nulls != 0 {
		t.Errorf("main has %d rows (%d NULL ids) after the bad batch, want 1000 (0)", rows, nulls)
	}
	kept, err := e.CountRows(ctx, ab.Branch, "gold/billing_fact/", "billing_id IS NULL")
	must(t, err)
	if !ab.BranchKept || kept != 40 {
		t.Errorf("aborted branch kept=%v with %d NULL rows, want kept with 40", ab.BranchKept, kept)
	}
}

func TestEndToEndWriteTimeoutAndDuplicates(t *testing.T) {
	e := startE2E(t, func(c *config.Config) {
		ds := c.Datasets["billing"]
		ds.WriteTimeout = config.Duration(2 * time.Second)
		c.Datasets["billing"] = ds
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	landed := schemas.BatchLanded{BatchID: "late-1", Dataset: "billing", ExpectedWrites: []string{"billing_fact", "billing_dim"},
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}
	must(t, e.Produce(ctx, landed))
	must(t, e.Produce(ctx, landed)) // duplicate: a no-op
	must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: "late-1", Dataset: "billing", Write: "billing_fact", OccurredAt: landed.OccurredAt}))
	ev, err := e.Watcher.Await(ctx, "late-1", schemas.TypeBatchAborted, schemas.TypeBatchPublished)
	must(t, err)
	ab, ok := ev.(schemas.BatchAborted)
	if !ok || ab.Reason != schemas.ReasonWriteTimeout || !strings.Contains(ab.Detail, "billing_dim") {
		t.Fatalf("got %+v, want write_timeout naming billing_dim", ev)
	}
	readies := 0
	for _, ev := range e.Watcher.All("late-1") {
		if ev.EventType() == schemas.TypeBranchReady {
			readies++
		}
	}
	if readies != 1 {
		t.Errorf("%d BranchReady events for one batch landed twice, want 1", readies)
	}
}

// slackAPI is slacktest's server with chat.postMessage and chat.update
// answered and counted per channel/ts, or failing when down.
type slackAPI struct {
	*slacktest.Server
	mu      sync.Mutex
	down    bool
	posts   int
	updates map[string]int // ts -> updates
	texts   []string
}

func newSlackAPI(t *testing.T) *slackAPI {
	s := &slackAPI{updates: map[string]int{}}
	s.Server = slacktest.NewTestServer(func(c slacktest.Customize) {
		c.Handle("/chat.postMessage", s.handle(false))
		c.Handle("/chat.update", s.handle(true))
	})
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

func (s *slackAPI) handle(update bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.down {
			http.Error(w, "slack is down", http.StatusServiceUnavailable)
			return
		}
		ts := r.FormValue("ts")
		if update {
			s.updates[ts]++
		} else {
			s.posts++
			ts = fmt.Sprintf("1700000000.%06d", s.posts)
		}
		s.texts = append(s.texts, r.FormValue("text")+r.FormValue("blocks"))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":%q}`, r.FormValue("channel"), ts)
	}
}

func TestEndToEndSlackMessageUpdatedInPlace(t *testing.T) {
	slackSrv := newSlackAPI(t)
	e := startE2E(t, func(c *config.Config) {
		c.Notify.Slack = &config.Slack{Token: "xoxb-e2e-secret", Channel: "C0WAP", APIURL: slackSrv.GetAPIURL()}
	})
	if ev := e.runBatch(t, "slack-good", harness.GoodBillingRows); ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("batch ended %+v", ev)
	}
	// BatchPublished is emitted before Slack hears of it; wait for the update.
	waitFor(t, func() bool {
		slackSrv.mu.Lock()
		defer slackSrv.mu.Unlock()
		for _, txt := range slackSrv.texts {
			if strings.Contains(txt, "published") && strings.Contains(txt, "slack-good") {
				return slackSrv.posts == 1
			}
		}
		return false
	})
	slackSrv.mu.Lock()
	defer slackSrv.mu.Unlock()
	if slackSrv.posts != 1 || slackSrv.updates["1700000000.000001"] < 2 {
		t.Errorf("slack got %d posts and updates %v; want 1 post updated in place through the states", slackSrv.posts, slackSrv.updates)
	}
}

func TestEndToEndSlackDownDoesNotStopPublishing(t *testing.T) {
	slackSrv := newSlackAPI(t)
	slackSrv.down = true
	e := startE2E(t, func(c *config.Config) {
		c.Notify.Slack = &config.Slack{Token: "xoxb-e2e-secret", Channel: "C0WAP", APIURL: slackSrv.GetAPIURL()}
	})
	ev := e.runBatch(t, "slack-down", harness.GoodBillingRows)
	if ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("with Slack down the batch ended %+v, want published", ev)
	}
	if n := publishCommits(t, e.Env, "slack-down"); n != 1 {
		t.Errorf("%d publish commits on main, want 1", n)
	}
}

// waitFor polls cond until it holds (the thing awaited has no event to
// block on); it fails the test after a generous bound.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestEndToEndMissingSourceRefIsInvalid(t *testing.T) {
	e := startE2E(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: "nosrc-1", Dataset: "billing", SourceRef: "no-such-branch",
		ExpectedWrites: []string{"billing_fact"}, Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ev, err := e.Watcher.Await(ctx, "nosrc-1", schemas.TypeBatchAborted, schemas.TypeBatchFailed, schemas.TypeBranchReady)
	must(t, err)
	ab, ok := ev.(schemas.BatchAborted)
	if !ok || ab.Reason != schemas.ReasonInvalid || !strings.Contains(ab.Detail, "no-such-branch") {
		t.Fatalf("got %+v, want BatchAborted invalid naming the missing source ref", ev)
	}
}

// A WriteComplete that arrives before its BatchLanded is kept: once the
// batch lands, its branch is made and it goes straight to the audit (here
// the write brought no rows, so the batch-scope row count stops it) rather
// than waiting for a write that already came.
func TestEndToEndWriteBeforeLanding(t *testing.T) {
	e := startE2E(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := time.Now().UTC().Truncate(time.Millisecond)
	must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: "early-1", Dataset: "billing", Write: "billing_fact", OccurredAt: now}))
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: "early-1", Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "e2e", OccurredAt: now}))
	ev, err := e.Watcher.Await(ctx, "early-1", schemas.TypeBatchAborted, schemas.TypeBatchPublished, schemas.TypeBatchFailed)
	must(t, err)
	ab, ok := ev.(schemas.BatchAborted)
	if !ok || ab.Reason != schemas.ReasonAuditFailed || ab.Report == nil || len(ab.Report.Failed()) != 1 || ab.Report.Failed()[0].Name != "has_rows" {
		t.Fatalf("got %+v, want audit_failed on has_rows (the early write counted, no write timeout)", ev)
	}
}

// BatchCancelled while the batch waits for writes aborts it (reason
// cancelled) and leaves main alone; a later write is a no-op.
func TestEndToEndCancelWhileWaiting(t *testing.T) {
	e := startE2E(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := time.Now().UTC().Truncate(time.Millisecond)
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: "cancel-1", Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "e2e", OccurredAt: now}))
	ev, err := e.Watcher.Await(ctx, "cancel-1", schemas.TypeBranchReady)
	must(t, err)
	must(t, e.WriteParquet(ctx, ev.(schemas.BranchReady).Branch, "gold/billing_fact/batch=cancel-1/part-0.parquet", harness.GoodBillingRows))
	head, err := e.Lake.GetCommit(ctx, "lake", "main")
	must(t, err)
	must(t, e.Produce(ctx, schemas.BatchCancelled{BatchID: "cancel-1", Dataset: "billing", Reason: "upstream re-run", OccurredAt: now}))
	must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: "cancel-1", Dataset: "billing", Write: "billing_fact", OccurredAt: now}))
	ev, err = e.Watcher.Await(ctx, "cancel-1", schemas.TypeBatchAborted, schemas.TypeBatchPublished, schemas.TypeBatchFailed)
	must(t, err)
	if ab, ok := ev.(schemas.BatchAborted); !ok || ab.Reason != schemas.ReasonCancelled || ab.Detail != "upstream re-run" {
		t.Fatalf("got %+v, want BatchAborted cancelled with the reason given", ev)
	}
	after, err := e.Lake.GetCommit(ctx, "lake", "main")
	must(t, err)
	if after.ID != head.ID {
		t.Errorf("main moved after a cancelled batch")
	}
	if n := publishCommits(t, e.Env, "cancel-1"); n != 0 {
		t.Errorf("%d publish commits for a cancelled batch", n)
	}
}
