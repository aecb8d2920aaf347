package tests

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/runs"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// TestForgedRecordsDoNotSteerTheJanitor is the attack of someone who can
// write the changelog topic (wap.runs) but has no state key, aimed at the
// janitor, on kfake and the real lakeFS server: an unsealed record (under a
// key of its own) naming a live run's branch as aborted long ago, and one
// (under the live run's key) giving another live run a landing time long
// past the maximum run age. The janitor, built as the daemon builds it,
// sweeps: both branches stay, no run is cancelled, both runs still wait for
// their writes. A record that does not decode is then skipped, not fatal
// to the sweep.
func TestForgedRecordsDoNotSteerTheJanitor(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "state.key")
	must(t, os.WriteFile(keyFile, []byte(strings.Repeat("k", 40)), 0o600))
	e := startE2E(t, func(c *config.Config) { c.Runner.StateKeyFile = keyFile })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, b := range []string{"live-1", "live-2"} {
		must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: b, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
			Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
		if _, err := e.Watcher.Await(ctx, b, schemas.TypeBranchReady); err != nil {
			t.Fatal(err)
		}
	}
	store, err := runs.Open(e.cfg.Kafka)
	must(t, err)
	defer store.Close()
	live2, err := store.Find(ctx, "live-2", "billing")
	must(t, err)

	long := time.Now().UTC().Add(-100 * 24 * time.Hour)
	put := func(partition int, key string, run pipeline.Run) {
		b, err := json.Marshal(run)
		must(t, err)
		cl, err := consumer.NewChangelog(consumer.ChangelogConfig{Brokers: e.cfg.Kafka.Brokers, Topic: e.cfg.Kafka.ChangelogTopic})
		must(t, err)
		defer cl.Close()
		must(t, cl.Put(ctx, partition, key, b))
	}
	// Sorted after live-1, so the branch's last run read is the forged one.
	put(0, "billing/zz-forged", pipeline.Run{BatchID: "zz-forged", Dataset: "billing", Repository: "lake",
		Branch: schemas.BranchName("billing", "live-1"), Source: "main", Target: "main",
		State: pipeline.StateAborted, StateSince: long, LandedAt: long})
	overdue := live2.Run
	overdue.LandedAt, overdue.StateSince = long, long
	put(live2.Partition, pipeline.RunKey("billing", "live-2"), overdue)

	log := slog.New(slog.NewTextHandler(testLogWriter{t}, nil))
	lake, err := daemon.Lake(e.cfg, log, nil, nil)
	must(t, err)
	j, err := daemon.NewJanitor(e.cfg, lake, log, nil)
	must(t, err)
	ds, err := j.Sweep(ctx, false)
	if err != nil {
		t.Errorf("sweep: %v", err)
	}
	for _, d := range ds {
		if d.Deleted || d.Cancelled {
			t.Errorf("the janitor acted on a forged record: %+v", d)
		}
	}
	branches, err := lake.ListBranches(ctx, "lake", schemas.BranchPrefix)
	must(t, err)
	left := map[string]bool{}
	for _, b := range branches {
		left[b.Name] = true
	}
	for _, b := range []string{"live-1", "live-2"} {
		if !left[schemas.BranchName("billing", b)] {
			t.Errorf("the branch of %s was deleted", b)
		}
	}

	// A record that does not decode: skipped, the sweep goes on.
	cl, err := consumer.NewChangelog(consumer.ChangelogConfig{Brokers: e.cfg.Kafka.Brokers, Topic: e.cfg.Kafka.ChangelogTopic})
	must(t, err)
	defer cl.Close()
	must(t, cl.Put(ctx, 0, "billing/garbage", []byte("not a run")))
	ds, err = j.Sweep(ctx, false)
	if err != nil {
		t.Errorf("sweep with an unreadable record: %v", err)
	}
	seen := 0
	for _, d := range ds {
		if d.State == pipeline.StateAwaitingWrites {
			seen++
		}
		if d.Deleted || d.Cancelled {
			t.Errorf("the janitor acted on a forged record: %+v", d)
		}
	}
	if seen != 2 {
		t.Errorf("the sweep saw %d runs awaiting writes, want the 2 live ones: %+v", seen, ds)
	}
	stored, err := runs.List(ctx, e.cfg.Kafka, "", "")
	if err != nil {
		t.Errorf("lakewap runs with an unreadable record: %v", err)
	}
	if len(stored) < 3 {
		t.Errorf("lakewap runs listed %d records: %+v", len(stored), stored)
	}
	for _, r := range e.d.Runs() {
		if r.State != pipeline.StateAwaitingWrites {
			t.Errorf("run %s is %s, want still awaiting its writes", r.BatchID, r.State)
		}
	}
}
