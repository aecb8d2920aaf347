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
	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/kafka/kafkatest"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// TestReplayAfterCompactionInAQuietPartitionIsSetAside is the replay of
// review finding 3, on kfake and the real lakeFS server: a batch, alone in
// its partition, is cancelled while its audit runs, and nothing else is
// written to that partition of the changelog. Someone who kept lakewap's
// sealed "auditing" record of it writes it back, and compaction leaves it
// as the only record of the run: lakewap's own newer ones are gone. After
// a restart the run is not restored (it would be audited again and
// published), the replay is counted (replayed), and nothing of the batch
// reaches main.
func TestReplayAfterCompactionInAQuietPartitionIsSetAside(t *testing.T) {
	if len(kafkatest.ExternalBrokers()) > 0 {
		t.Skip("compaction is driven on kfake only: Apache Kafka's log cleaner runs on its own schedule")
	}
	keyFile := filepath.Join(t.TempDir(), "state.key")
	must(t, os.WriteFile(keyFile, []byte(strings.Repeat("k", 40)), 0o600))
	auditing, release := make(chan struct{}), make(chan struct{})
	var gate sync.Once
	var stack *devstack.Stack
	e := startE2EOn(t, devstack.Options{}, func(s *devstack.Stack, c *config.Config) {
		stack = s
		c.HTTP.Listen, c.HTTP.WebhookToken = "127.0.0.1:0", "test-token"
		c.Runner.StateKeyFile = keyFile
	}, daemon.Options{Failpoint: func(name string) {
		if name == "during_audit" {
			gate.Do(func() {
				close(auditing)
				<-release
			})
		}
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	const batch = "quiet-1"
	now := time.Now().UTC().Truncate(time.Millisecond)
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: batch, Dataset: "billing", ExpectedWrites: []string{"billing_fact"}, Producer: "e2e", OccurredAt: now}))
	ev, err := e.Watcher.Await(ctx, batch, schemas.TypeBranchReady)
	must(t, err)
	path := "gold/billing_fact/batch=" + batch + "/part-0.parquet"
	must(t, e.WriteParquet(ctx, ev.(schemas.BranchReady).Branch, path, harness.GoodBillingRows))
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
	// The daemon stops first: nothing of lakewap's is written after the
	// replay.
	e.cancel()
	if err := <-e.done; err != nil {
		t.Fatalf("first daemon: %v", err)
	}
	e.done <- nil // stopped: the cleanup must not wait for it again

	cl, err := consumer.NewChangelog(consumer.ChangelogConfig{Brokers: e.cfg.Kafka.Brokers, Topic: e.cfg.Kafka.ChangelogTopic})
	must(t, err)
	defer cl.Close()
	p := kafka.PartitionOf([]byte(batch), e.cfg.Kafka.Partitions)
	key := pipeline.RunKey("billing", batch)
	var old []byte
	must(t, cl.Scan(ctx, p, func(k string, v []byte) {
		var r pipeline.Run
		if k == key && json.Unmarshal(v, &r) == nil && r.State == pipeline.StateAuditing {
			old = v
		}
	}))
	if old == nil {
		t.Fatalf("no auditing record of %s in partition %d", batch, p)
	}
	must(t, cl.Put(ctx, p, key, old))
	// A tombstone of no run after it: the broker never cleans the last
	// batch of a partition (Kafka: its active segment).
	must(t, cl.Delete(ctx, p, "filler"))
	if !stack.CompactKafka() {
		t.Skip("compaction is driven on kfake only")
	}
	var left [][]byte
	must(t, cl.Scan(ctx, p, func(k string, v []byte) {
		if k == key {
			left = append(left, v)
		}
	}))
	if len(left) != 1 || string(left[0]) != string(old) {
		t.Fatalf("after compaction %s has %d records, want the replay alone", key, len(left))
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
	for _, r := range d.Runs() {
		if r.BatchID == batch {
			t.Errorf("%s restored %s from lakewap's old record written back after compaction", batch, r.State)
		}
	}
	e.awaitMetric(t, ctx, "lakewap_state_records_set_aside_total", map[string]string{"reason": "replayed"}, 1)
	if ev := e.runBatch(t, "after-1", secondBillingRows); ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("after-1 after the restart ended with %+v", ev)
	}
	if n := publishCommits(t, e.Env, batch); n != 0 {
		t.Errorf("%d publish commits of the cancelled batch", n)
	}
}
