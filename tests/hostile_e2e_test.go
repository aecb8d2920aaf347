package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/kafka"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/internal/runs"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// hugeRows fail billing_id_not_null with rows of about 600 KB each: their
// sample rows alone used to make the run too large to store.
const hugeRows = `SELECT NULL::VARCHAR AS billing_id, 'CUST-' || i::VARCHAR AS customer_id, 100::BIGINT AS amount_cents,
  'EUR' AS currency, TIMESTAMP '2026-11-29 02:00:00' AS billed_at, repeat('x', 600000) AS note FROM range(5) t(i)`

// TestEndToEndHostileInput sends, through the real consumer, each message
// the issue found could stall a partition, freeze a run or crash lakewap,
// then a good batch on the same partition as each. Every good batch is
// published within a bounded time, every bad message ends with a definite
// outcome event or a dead letter (with the reason it must have), the daemon
// does not panic, and nothing is dropped silently.
func TestEndToEndHostileInput(t *testing.T) {
	e := startE2E(t, func(c *config.Config) {
		ledger := c.Datasets["billing"] // a second dataset, to share a batch id with
		c.Datasets["ledger"] = ledger
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	now := time.Now().UTC().Truncate(time.Millisecond)
	landed := func(batch, dataset string) schemas.BatchLanded {
		return schemas.BatchLanded{BatchID: batch, Dataset: dataset, ExpectedWrites: []string{"billing_fact"}, Producer: "hostile", OccurredAt: now}
	}
	send := func(name string, ev schemas.Event) {
		t.Helper()
		m := kafka.Message{Key: []byte(ev.Batch()), Value: encodeEvent(t, e.Codec, ev),
			Headers: []kafka.Header{{Key: headerTestCase, Value: []byte(name)}}}
		must(t, e.Writer.Write(ctx, m))
	}
	type wantLetter struct {
		reason, errText string
		count           int
	}
	letters := map[string]wantLetter{} // by case

	// Far-future deadline: year 10000 cannot even be written as JSON.
	farFuture := landed("far-future", "billing")
	farFuture.WriteDeadline = ptrTime(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))
	send("far-future", farFuture)
	letters["far-future"] = wantLetter{schemas.ReasonInvalid, "maximum deadline horizon", 1}

	// 65,536 invalid expected writes (and Long.MAX_VALUE as the deadline):
	// a 5.8 MB validation error before.
	many := landed("many-writes", "billing")
	many.ExpectedWrites = make([]string, 65536)
	for i := range many.ExpectedWrites {
		many.ExpectedWrites[i] = fmt.Sprintf("w %d", i)
	}
	many.WriteDeadline = ptrTime(time.UnixMilli(1<<63 - 1))
	send("many-writes", many)
	letters["many-writes"] = wantLetter{schemas.ReasonInvalid, "expected_writes: has 65536 names, more than 256", 1}

	// Junk dataset name: long, invalid UTF-8, with a Slack mention.
	junk := landed("junk-dataset", strings.Repeat("<!channel> \xff", 500))
	send("junk-dataset", junk)
	letters["junk-dataset"] = wantLetter{schemas.ReasonInvalid, "dataset", 1}

	// Unexpected write names for a batch that lands: refused one by one, and
	// the batch itself still publishes.
	send("unexpected-writes", landed("uw-1", "billing"))
	for i := range 40 {
		send("unexpected-writes", schemas.WriteComplete{BatchID: "uw-1", Dataset: "billing", Write: fmt.Sprintf("junk_%d", i), OccurredAt: now})
	}
	letters["unexpected-writes"] = wantLetter{pipeline.RefusedUnexpectedWrite, "is not one of the 1 expected writes", 40}

	// Huge sample rows: the batch lands, its data fails with 600 KB rows.
	send("huge-rows", landed("huge-rows", "billing"))

	// The same batch id in two datasets: billing's batch waits for its
	// write while ledger's is landed and cancelled.
	send("twin", landed("twin-1", "billing"))
	if _, err := awaitEvent(ctx, e.Watcher, func(ev schemas.Event) bool {
		r, ok := ev.(schemas.BranchReady)
		return ok && r.BatchID == "twin-1" && r.Dataset == "billing"
	}); err != nil {
		t.Fatal(err)
	}
	send("twin", landed("twin-1", "ledger"))
	send("twin", schemas.BatchCancelled{BatchID: "twin-1", Dataset: "ledger", Reason: "rerun", OccurredAt: now})

	// Writers finish the batches that landed.
	write := func(batch, rows string) {
		t.Helper()
		ev, err := awaitEvent(ctx, e.Watcher, func(ev schemas.Event) bool {
			r, ok := ev.(schemas.BranchReady)
			return ok && r.BatchID == batch && r.Dataset == "billing"
		})
		must(t, err)
		path := "gold/billing_fact/batch=" + batch + "/part-0.parquet"
		must(t, e.WriteParquet(ctx, ev.(schemas.BranchReady).Branch, path, rows))
		send(batch, schemas.WriteComplete{BatchID: batch, Dataset: "billing", Write: "billing_fact", Paths: []string{path}, OccurredAt: now})
	}
	write("uw-1", strings.Replace(harness.GoodBillingRows, "lpad(i::VARCHAR", "lpad((800000 + i)::VARCHAR", 1))
	write("huge-rows", hugeRows)
	write("twin-1", strings.Replace(harness.GoodBillingRows, "lpad(i::VARCHAR", "lpad((900000 + i)::VARCHAR", 1))

	// A good batch on the partition of every bad key.
	goods := map[string]string{}
	for i, key := range []string{"far-future", "many-writes", "junk-dataset", "uw-1", "huge-rows", "twin-1"} {
		goods[key] = samePartitionBatch(key, e.cfg.Kafka.Partitions, fmt.Sprintf("good-after-%d", i))
	}
	started := time.Now()
	i := 0
	for key, good := range goods {
		i++
		rows := strings.Replace(harness.GoodBillingRows, "lpad(i::VARCHAR", fmt.Sprintf("lpad((%d + i)::VARCHAR", i*10000), 1)
		if ev := e.runBatch(t, good, rows); ev.EventType() != schemas.TypeBatchPublished {
			t.Errorf("good batch %s after %s ended with %+v", good, key, ev)
		}
	}
	t.Logf("good batches published %s after the hostile input", time.Since(started).Round(time.Millisecond))

	// Outcomes of the bad batches.
	outcome := func(batch, dataset string) schemas.Event {
		t.Helper()
		ev, err := awaitEvent(ctx, e.Watcher, func(ev schemas.Event) bool {
			switch ev := ev.(type) {
			case schemas.BatchPublished:
				return ev.BatchID == batch && ev.Dataset == dataset
			case schemas.BatchAborted:
				return ev.BatchID == batch && ev.Dataset == dataset
			case schemas.BatchFailed:
				return ev.BatchID == batch && ev.Dataset == dataset
			}
			return false
		})
		must(t, err)
		return ev
	}
	for _, b := range []string{"far-future", "many-writes"} {
		ab, ok := outcome(b, "billing").(schemas.BatchAborted)
		if !ok || ab.Reason != schemas.ReasonInvalid || len(ab.Detail) > 4096 {
			t.Errorf("%s: %+v, want aborted invalid with a short detail", b, ab)
		}
	}
	if ev := outcome("uw-1", "billing"); ev.EventType() != schemas.TypeBatchPublished {
		t.Errorf("uw-1 ended %+v, want published despite the unexpected writes", ev)
	}
	ab, ok := outcome("huge-rows", "billing").(schemas.BatchAborted)
	if !ok || ab.Reason != schemas.ReasonAuditFailed || ab.Report == nil {
		t.Errorf("huge-rows ended %+v, want aborted audit_failed", ab)
	} else {
		for _, c := range ab.Report.Failed() {
			for _, row := range c.SampleRows {
				if len(row) > 4096 {
					t.Errorf("sample row of %s has %d bytes", c.Name, len(row))
				}
			}
		}
	}
	if ev := outcome("twin-1", "billing"); ev.EventType() != schemas.TypeBatchPublished {
		t.Errorf("billing twin-1 ended %+v, want published", ev)
	}
	if ab, ok := outcome("twin-1", "ledger").(schemas.BatchAborted); !ok || ab.Reason != schemas.ReasonCancelled {
		t.Errorf("ledger twin-1 ended %+v, want aborted cancelled", ab)
	}
	if evs := e.Watcher.All("junk-dataset"); len(evs) != 0 {
		t.Errorf("result events for the junk dataset's batch: %+v", evs)
	}

	// Dead letters: exactly the refused messages, each with its reason.
	total := 0
	for _, w := range letters {
		total += w.count
	}
	got := map[string]int{}
	for _, m := range readTopicUntil(ctx, t, e.Stack.KafkaBrokers, e.cfg.Kafka.DeadLetterTopic, total) {
		name := headerOf(m, headerTestCase)
		w, ok := letters[name]
		reason := headerOf(m, consumer.HeaderDLQReason)
		errText := headerOf(m, consumer.HeaderDLQError)
		switch {
		case !ok:
			t.Errorf("unexpected dead letter: case %q reason %q error %.200q", name, reason, errText)
		case reason != w.reason || !strings.Contains(errText, w.errText):
			t.Errorf("%s: dead letter reason %q error %.300q, want %q saying %q", name, reason, errText, w.reason, w.errText)
		}
		if len(errText) > consumer.MaxDLQErrorBytes {
			t.Errorf("%s: wap.dlq.error has %d bytes", name, len(errText))
		}
		got[name]++
	}
	for name, w := range letters {
		if got[name] != w.count {
			t.Errorf("%s: %d dead letters, want %d", name, got[name], w.count)
		}
	}
	select {
	case err := <-e.done:
		t.Fatalf("the daemon stopped: %v", err)
	default:
	}
}

func ptrTime(t time.Time) *time.Time { return &t }

// samePartitionBatch returns a batch id starting with prefix that the
// producer's partitioner puts on the same partition as key.
func samePartitionBatch(key string, partitions int, prefix string) string {
	parts := make([]int, partitions)
	for i := range parts {
		parts[i] = i
	}
	b := &kafkago.Murmur2Balancer{}
	want := b.Balance(kafkago.Message{Key: []byte(key)}, parts...)
	for i := 0; ; i++ {
		id := fmt.Sprintf("%s-%d", prefix, i)
		if b.Balance(kafkago.Message{Key: []byte(id)}, parts...) == want {
			return id
		}
	}
}

// awaitEvent returns the first result event match accepts.
func awaitEvent(ctx context.Context, w *harness.Watcher, match func(schemas.Event) bool) (schemas.Event, error) {
	ev, err := w.AwaitFunc(ctx, match)
	if err != nil {
		return nil, fmt.Errorf("waiting for a result event: %w", err)
	}
	return ev, nil
}

// The janitor cancels a run that outlived the maximum run age through the
// daemon: a BatchCancelled on the run's own input partition, which the
// runner applies like any cancellation.
func TestEndToEndJanitorCancelsOverdueRun(t *testing.T) {
	e := startE2E(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: "stuck-1", Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	if _, err := e.Watcher.Await(ctx, "stuck-1", schemas.TypeBranchReady); err != nil {
		t.Fatal(err)
	}
	store, err := runs.Open(e.cfg.Kafka)
	must(t, err)
	defer store.Close()
	sr, err := store.Find(ctx, "stuck-1", "billing")
	must(t, err)
	if age := e.cfg.MaxRunAge(); age < 7*24*time.Hour {
		t.Errorf("MaxRunAge %s is shorter than the deadline horizon", age)
	}
	must(t, daemon.CancelRun(ctx, e.cfg, store, sr.Run, "lakewap janitor: run in progress for 200h"))
	ev, err := e.Watcher.Await(ctx, "stuck-1", schemas.TypeBatchAborted)
	must(t, err)
	if ab := ev.(schemas.BatchAborted); ab.Reason != schemas.ReasonCancelled || !strings.Contains(ab.Detail, "lakewap janitor") {
		t.Errorf("BatchAborted %+v, want cancelled by the janitor", ab)
	}
}

// The same batch id published in two datasets of one repository: each
// revert undoes its own dataset's publish, and reverting one does not make
// the other look reverted already.
func TestEndToEndRevertSameBatchIDInTwoDatasets(t *testing.T) {
	e := startE2E(t, func(c *config.Config) {
		ledger := c.Datasets["billing"]
		ledger.Suite.Tables = []audit.Table{{Name: "billing_fact", Path: "gold/ledger_fact/", Format: "parquet"}}
		c.Datasets["ledger"] = ledger
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	now := time.Now().UTC().Truncate(time.Millisecond)
	prefix := map[string]string{"billing": "gold/billing_fact/", "ledger": "gold/ledger_fact/"}
	for _, ds := range []string{"billing", "ledger"} {
		must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: "twin", Dataset: ds, ExpectedWrites: []string{"billing_fact"}, Producer: "e2e", OccurredAt: now}))
		ev, err := awaitEvent(ctx, e.Watcher, func(ev schemas.Event) bool {
			r, ok := ev.(schemas.BranchReady)
			return ok && r.BatchID == "twin" && r.Dataset == ds
		})
		must(t, err)
		path := prefix[ds] + "part-0.parquet"
		must(t, e.WriteParquet(ctx, ev.(schemas.BranchReady).Branch, path, harness.GoodBillingRows))
		must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: "twin", Dataset: ds, Write: "billing_fact", Paths: []string{path}, OccurredAt: now}))
		if _, err := awaitEvent(ctx, e.Watcher, func(ev schemas.Event) bool {
			p, ok := ev.(schemas.BatchPublished)
			return ok && p.BatchID == "twin" && p.Dataset == ds
		}); err != nil {
			t.Fatalf("%s: %v", ds, err)
		}
	}
	for _, ds := range []string{"ledger", "billing"} {
		code, out := e.ask(t, "revert", "-batch", "twin", "-dataset", ds, "-reason", "test", "-by", "e2e")
		if code != 0 || !strings.Contains(out, "reverted batch twin ("+ds+")") {
			t.Fatalf("revert %s exited %d:\n%s", ds, code, out)
		}
	}
	for ds, p := range prefix {
		n, err := e.CountRows(ctx, "main", p, "")
		must(t, err)
		if n != 0 {
			t.Errorf("%s: main still has %d rows under %s after its revert", ds, n, p)
		}
	}
}
