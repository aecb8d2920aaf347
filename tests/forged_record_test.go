package tests

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// TestForgedChangelogRecordIsSetAside is the attack of someone who can
// write the changelog topic (wap.runs), on kfake and the real lakeFS
// server: a record of a run "publishing" a commit full of NULL billing ids
// nobody audited, and one pointing a run at another branch of the
// repository. After a restart the daemon restores its partitions: both are
// set aside (counted, logged, then deleted from the topic) and nothing is merged;
// main stays as it was, and a real batch still publishes.
func TestForgedChangelogRecordIsSetAside(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "state.key")
	must(t, os.WriteFile(keyFile, []byte(strings.Repeat("k", 40)), 0o600))
	e := startE2E(t, func(c *config.Config) {
		c.HTTP.Listen, c.HTTP.WebhookToken = "127.0.0.1:0", "test-token"
		c.Runner.StateKeyFile = keyFile
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if ev := e.runBatch(t, "real-1", harness.GoodBillingRows); ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("real-1 ended with %+v", ev)
	}
	bad := branchWith(t, e.Env, "unaudited", harness.BadBillingRows)
	head, err := e.Lake.GetCommit(ctx, "lake", "main")
	must(t, err)

	forged := func(batch, target string) []byte {
		run := pipeline.Run{BatchID: batch, Dataset: "billing", Repository: "lake", Branch: schemas.BranchName("billing", batch),
			Source: "main", Target: target, State: pipeline.StatePublishing, SealedCommit: bad, PublishSince: time.Now().UTC()}
		b, err := json.Marshal(run)
		must(t, err)
		return b
	}
	cl, err := consumer.NewChangelog(consumer.ChangelogConfig{Brokers: e.cfg.Kafka.Brokers, Topic: e.cfg.Kafka.ChangelogTopic})
	must(t, err)
	defer cl.Close()
	for p := range e.cfg.Kafka.Partitions {
		must(t, cl.Put(ctx, p, pipeline.RunKey("billing", "forged-main"), forged("forged-main", "main")))
		must(t, cl.Put(ctx, p, pipeline.RunKey("billing", "forged-other"), forged("forged-other", "release")))
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
	e.awaitMetric(t, ctx, "lakewap_state_records_set_aside_total", map[string]string{"reason": "unsealed"}, float64(2*e.cfg.Kafka.Partitions))

	for _, r := range d.Runs() {
		if strings.HasPrefix(r.BatchID, "forged") {
			t.Errorf("a forged run was restored: %+v", r)
		}
	}
	if ev := e.runBatch(t, "real-2", secondBillingRows); ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("real-2 after the restart ended with %+v", ev)
	}
	if n, err := e.CountRows(ctx, "main", "gold/billing_fact/", "billing_id IS NULL"); err != nil || n != 0 {
		t.Errorf("main has %d NULL billing ids (err %v): the forged publish was carried out", n, err)
	}
	log, err := e.Lake.Log(ctx, "lake", "main", 10)
	must(t, err)
	for _, c := range log {
		if c.ID == head.ID {
			break
		}
		for _, p := range c.Parents {
			if p == bad {
				t.Errorf("commit %s on main merged the unaudited commit", c.ID)
			}
		}
	}
}
