package tests

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// TestForgedRecordDoesNotNameTheOperatorsDataset is the attack of someone
// who can write the changelog topic (wap.runs) but has no state key, aimed
// at the operator commands: lakewap cancel without -dataset looks the
// batch's dataset up in the state store. A record under a key of its own
// names the live batch's id in another dataset; read without the state
// key's checks, the command found the batch in two datasets and refused to
// act. Read as the runner restores (the config has the state key), it
// finds the one real run and the cancel is carried out.
func TestForgedRecordDoesNotNameTheOperatorsDataset(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "state.key")
	must(t, os.WriteFile(keyFile, []byte(strings.Repeat("k", 40)), 0o600))
	e := startE2E(t, func(c *config.Config) {
		c.Runner.StateKeyFile = keyFile
		c.Datasets["ledger"] = c.Datasets["billing"]
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: "op-1", Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	if _, err := e.Watcher.Await(ctx, "op-1", schemas.TypeBranchReady); err != nil {
		t.Fatal(err)
	}
	real, err := findStored(ctx, e.cfg, "op-1")
	must(t, err)
	forged := real.Run
	forged.Dataset, forged.Branch = "ledger", schemas.BranchName("ledger", "op-1")
	b, err := json.Marshal(forged)
	must(t, err)
	cl, err := consumer.NewChangelog(consumer.ChangelogConfig{Brokers: e.cfg.Kafka.Brokers, Topic: e.cfg.Kafka.ChangelogTopic})
	must(t, err)
	defer cl.Close()
	must(t, cl.Put(ctx, real.Partition, pipeline.RunKey("ledger", "op-1"), b))

	code, out := e.ask(t, "cancel", "-batch", "op-1", "-reason", "upstream rerun", "-by", "ana")
	if code != 0 || !strings.Contains(out, "batch op-1 (billing) is aborted (cancelled)") {
		t.Fatalf("cancel exited %d:\n%s", code, out)
	}
	if _, err := e.Watcher.Await(ctx, "op-1", schemas.TypeBatchAborted); err != nil {
		t.Fatal(err)
	}
}
