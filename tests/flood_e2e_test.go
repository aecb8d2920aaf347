package tests

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/schemas"
)

// TestEndToEndJunkFloodLeavesOtherDatasetsPublishing is the junk flood
// through the whole daemon on kfake and the real lakeFS server, at 10,000
// events (the 100,000 one runs at the runner,
// TestJunkFloodLeavesStateBoundedAndOtherDatasetsPublishing): undecodable
// bytes, WriteComplete events of batches that never land, and BatchLanded
// events of billing with deadlines six days away, every batch id new. Once
// the daemon has taken every one, the runs it holds and the changelog's live
// records are within what max_pending_runs, max_open_runs and
// max_finished_runs allow, and a batch of another dataset publishes.
func TestEndToEndJunkFloodLeavesOtherDatasetsPublishing(t *testing.T) {
	flood := 10_000
	if testing.Short() {
		flood = 2_000
	}
	const maxPending, maxOpen, maxFinished = 50, 20, 50
	e := startE2E(t, func(c *config.Config) {
		c.HTTP.Listen, c.HTTP.WebhookToken = "127.0.0.1:0", "test-token"
		c.Runner.MaxPendingRuns, c.Runner.MaxOpenRuns, c.Runner.MaxFinishedRuns = maxPending, maxOpen, maxFinished
		billing := c.Datasets["billing"]
		billing.MaxWriteTimeout = config.Duration(2 * time.Hour)
		c.Datasets["billing"] = billing
		ledger := c.Datasets["billing"]
		ledger.Suite.Tables = []audit.Table{{Name: "billing_fact", Path: "gold/ledger_fact/", Format: "parquet"}}
		c.Datasets["ledger"] = ledger
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	now := time.Now().UTC().Truncate(time.Millisecond)
	far := now.Add(6 * 24 * time.Hour)

	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var msgs []kafka.Message
	for i := range flood {
		id := fmt.Sprint("junk-", i)
		var value []byte
		switch i % 3 {
		case 0:
			value = append([]byte("\x00junk "), id...)
		case 1:
			value = encodeEvent(t, e.Codec, schemas.WriteComplete{BatchID: id, Dataset: "billing", Write: "billing_fact", OccurredAt: now})
		default:
			value = encodeEvent(t, e.Codec, schemas.BatchLanded{BatchID: id, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
				WriteDeadline: &far, Producer: "flood", OccurredAt: now})
		}
		msgs = append(msgs, kafka.Message{Key: []byte(id), Value: value})
		if len(msgs) == 1000 || i == flood-1 {
			must(t, e.Writer.Write(ctx, msgs...))
			msgs = msgs[:0]
		}
	}
	e.awaitMetric(t, ctx, "lakewap_inputs_total", nil, float64(flood))

	// Another dataset publishes after the flood.
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: "after-flood", Dataset: "ledger", ExpectedWrites: []string{"billing_fact"}, Producer: "e2e", OccurredAt: now}))
	ev, err := e.Watcher.Await(ctx, "after-flood", schemas.TypeBranchReady)
	must(t, err)
	path := "gold/ledger_fact/part-0.parquet"
	must(t, e.WriteParquet(ctx, ev.(schemas.BranchReady).Branch, path, harness.GoodBillingRows))
	must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: "after-flood", Dataset: "ledger", Write: "billing_fact", Paths: []string{path}, OccurredAt: now}))
	ev, err = e.Watcher.Await(ctx, "after-flood", schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	if ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("ledger's batch after the flood ended with %+v", ev)
	}

	parts := e.cfg.Kafka.Partitions
	// max_open_runs holds exactly: a dataset's landings are taken one at a
	// time across partitions (it was passed by up to parts-1 runs).
	allowed := parts*maxPending + maxOpen + parts*maxFinished + 1 // + ledger's
	for deadline := time.Now().Add(time.Minute); len(e.d.Runs()) > allowed; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			states := map[string]int{}
			for _, r := range e.d.Runs() {
				states[r.Dataset+" "+string(r.State)]++
			}
			t.Fatalf("the daemon holds %d runs after the flood, the bounds allow %d: %v", len(e.d.Runs()), allowed, states)
		}
	}
	cl, err := consumer.NewChangelog(consumer.ChangelogConfig{Brokers: e.cfg.Kafka.Brokers, Topic: e.cfg.Kafka.ChangelogTopic})
	must(t, err)
	defer cl.Close()
	live, size, written := 0, 0, 0
	for p := range parts {
		state, err := cl.Load(ctx, p)
		must(t, err)
		for k, v := range state {
			live++
			size += len(k) + len(v)
		}
		must(t, cl.Scan(ctx, p, func(string, []byte) { written++ }))
	}
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	// Not asserted here: the process also holds kfake's topics (every
	// message of the flood, its dead letters and results) and the results
	// watcher's events; the runner-level flood asserts the heap.
	t.Logf("%d junk events: the daemon holds %d runs of at most %d; the changelog %d live records (%d bytes) of %d written; heap %d -> %d bytes (kfake's topics included)",
		flood, len(e.d.Runs()), allowed, live, size, written, before.HeapAlloc, m.HeapAlloc)
	// Runs finished after the count above may still be in the changelog
	// until their deletion is written: the same allowance.
	if live > allowed {
		t.Errorf("the changelog holds %d live records after the flood, the bounds allow %d", live, allowed)
	}
	if size > allowed*(4<<10) {
		t.Errorf("the changelog's live records hold %d bytes, more than 4 KiB per allowed run", size)
	}
}
