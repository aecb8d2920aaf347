package tests

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/internal/runs"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// TestReplayedChangelogRecordIsSetAside is the attack of someone who can
// write the changelog topic (wap.runs) and kept copies of what lakewap wrote
// there, on kfake and the real lakeFS server: a batch is cancelled while
// its audit runs (its branch kept, holding good rows), and lakewap's own
// sealed "auditing" record of it, with a valid seal, is written onto the
// topic again; so is the "awaiting_writes" record of a published batch.
// After a restart both runs keep the state lakewap left them in: the
// cancelled batch is not audited again nor merged, its branch is not
// deleted, the published one is not reopened, and the replays are counted
// (replayed). A batch that lands after the restart publishes.
func TestReplayedChangelogRecordIsSetAside(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "state.key")
	must(t, os.WriteFile(keyFile, []byte(strings.Repeat("k", 40)), 0o600))
	auditing, release := make(chan struct{}), make(chan struct{})
	var gate sync.Once
	e := startE2EWith(t, func(c *config.Config) {
		c.HTTP.Listen, c.HTTP.WebhookToken = "127.0.0.1:0", "test-token"
		c.Runner.StateKeyFile = keyFile
	}, daemon.Options{Failpoint: func(name string) {
		if name == "during_audit" {
			gate.Do(func() { // the first audit only: the cancelled batch's
				close(auditing)
				<-release
			})
		}
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	const batch = "cancelled-1"
	now := time.Now().UTC().Truncate(time.Millisecond)
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: batch, Dataset: "billing", ExpectedWrites: []string{"billing_fact"}, Producer: "e2e", OccurredAt: now}))
	ev, err := e.Watcher.Await(ctx, batch, schemas.TypeBranchReady)
	must(t, err)
	branch := ev.(schemas.BranchReady).Branch
	path := "gold/billing_fact/batch=" + batch + "/part-0.parquet"
	must(t, e.WriteParquet(ctx, branch, path, harness.GoodBillingRows))
	must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: batch, Dataset: "billing", Write: "billing_fact", Paths: []string{path}, OccurredAt: now}))
	select {
	case <-auditing:
	case <-ctx.Done():
		t.Fatal("the audit never started")
	}
	must(t, e.Produce(ctx, schemas.BatchCancelled{BatchID: batch, Dataset: "billing", Reason: "upstream re-run", OccurredAt: now}))
	ev, err = e.Watcher.Await(ctx, batch, schemas.TypeBatchAborted, schemas.TypeBatchPublished, schemas.TypeBatchFailed)
	close(release)
	must(t, err)
	if ab, ok := ev.(schemas.BatchAborted); !ok || ab.Reason != schemas.ReasonCancelled {
		t.Fatalf("got %+v, want BatchAborted cancelled", ev)
	}
	if ev := e.runBatch(t, "real-1", harness.GoodBillingRows); ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("real-1 ended with %+v", ev)
	}

	// The attacker's copies of lakewap's own records, written again.
	cl, err := consumer.NewChangelog(consumer.ChangelogConfig{Brokers: e.cfg.Kafka.Brokers, Topic: e.cfg.Kafka.ChangelogTopic})
	must(t, err)
	defer cl.Close()
	replay := map[string]pipeline.State{pipeline.RunKey("billing", batch): pipeline.StateAuditing, pipeline.RunKey("billing", "real-1"): pipeline.StateAwaitingWrites}
	replayed := 0
	for p := range e.cfg.Kafka.Partitions {
		old := map[string][]byte{}
		must(t, cl.Scan(ctx, p, func(key string, v []byte) {
			var r pipeline.Run
			if want, ok := replay[key]; ok && json.Unmarshal(v, &r) == nil && r.State == want {
				old[key] = v // the latest record of that state
			}
		}))
		for key, v := range old {
			if !strings.Contains(string(v), `"wap_seal"`) {
				t.Fatalf("lakewap's record of %s is not sealed: %s", key, v)
			}
			must(t, cl.Put(ctx, p, key, v))
			replayed++
		}
	}
	if replayed != len(replay) {
		t.Fatalf("found %d of the %d records to replay in the changelog", replayed, len(replay))
	}

	// Restart: the new daemon restores every partition from the changelog.
	e.cancel()
	if err := <-e.done; err != nil {
		t.Fatalf("first daemon: %v", err)
	}
	reg := prometheus.NewRegistry()
	dctx, stop := context.WithCancel(context.Background())
	d, err := daemon.New(dctx, e.cfg, daemon.Options{Registry: reg})
	if err != nil {
		stop()
		t.Fatal(err)
	}
	e.d, e.done = d, make(chan error, 1)
	go func() { e.done <- d.Run(dctx) }()
	t.Cleanup(stop)
	e.awaitMetric(t, ctx, "lakewap_consumer_restored_partitions", nil, float64(e.cfg.Kafka.Partitions))

	states := map[string]pipeline.Run{}
	for _, r := range d.Runs() {
		states[r.BatchID] = r
	}
	if r := states[batch]; r.State != pipeline.StateAborted || r.Reason != schemas.ReasonCancelled {
		t.Errorf("%s restored %s (%s), want aborted cancelled as lakewap left it", batch, r.State, r.Reason)
	}
	if r := states["real-1"]; r.State != pipeline.StatePublished {
		t.Errorf("real-1 restored %s, want published", r.State)
	}
	if ev := e.runBatch(t, "real-2", secondBillingRows); ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("real-2 after the restart ended with %+v", ev)
	}
	if n := publishCommits(t, e.Env, batch); n != 0 {
		t.Errorf("%d publish commits of the cancelled batch", n)
	}
	if n := publishCommits(t, e.Env, "real-1"); n != 1 {
		t.Errorf("%d publish commits of real-1, want 1", n)
	}
	if n, err := e.CountRows(ctx, "main", "gold/billing_fact/batch="+batch+"/", ""); err != nil || n != 0 {
		t.Errorf("main has %d rows of the cancelled batch (err %v)", n, err)
	}
	branches, err := e.Lake.ListBranches(ctx, "lake", branch)
	must(t, err)
	if len(branches) != 1 {
		t.Errorf("the cancelled batch's kept branch %s: %d branches, want it still there", branch, len(branches))
	}
	e.awaitMetric(t, ctx, "lakewap_state_records_set_aside_total", map[string]string{"reason": "replayed"}, float64(len(replay)))
	// Operators read the same changelog, its partitions' marks beside the
	// runs: lakewap runs lists runs only.
	store, err := runs.Open(e.cfg.Kafka)
	must(t, err)
	defer store.Close()
	stored, err := store.Load(ctx)
	must(t, err)
	listed := map[string]bool{}
	for _, r := range stored {
		listed[r.BatchID] = true
	}
	if len(stored) != 3 || !listed[batch] || !listed["real-1"] || !listed["real-2"] {
		t.Errorf("lakewap runs lists %d runs (%v), want %s, real-1 and real-2", len(stored), listed, batch)
	}
}
