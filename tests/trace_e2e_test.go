package tests

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// resultMessages reads every message of batch on the results topic.
func resultMessages(t *testing.T, e *e2e, batch string) []kafka.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []kafka.Message
	for p := range e.cfg.Kafka.Partitions {
		conn, err := kafka.DialLeader(ctx, "tcp", e.cfg.Kafka.Brokers[0], e.cfg.Kafka.ResultsTopic, p)
		must(t, err)
		last, err := conn.ReadLastOffset()
		conn.Close()
		must(t, err)
		if last == 0 {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: e.cfg.Kafka.Brokers, Topic: e.cfg.Kafka.ResultsTopic, Partition: p, MaxWait: 100 * time.Millisecond})
		for {
			m, err := r.ReadMessage(ctx)
			must(t, err)
			if string(m.Key) == batch {
				out = append(out, m)
			}
			if m.Offset >= last-1 {
				break
			}
		}
		r.Close()
	}
	return out
}

// A BatchLanded that carries a W3C traceparent hands its trace on: every
// result message of the batch (BranchReady to the writers, BatchPublished
// downstream) and the merge commit on main carry the same trace context.
func TestTraceContextCrossesTheBatch(t *testing.T) {
	e := startE2E(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const batch = "traced-1"
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	const ts = "rojo=00f067aa0ba902b7"
	must(t, e.ProduceWithHeaders(ctx, schemas.BatchLanded{BatchID: batch, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}, map[string]string{"traceparent": tp, "tracestate": ts}))
	ev, err := e.Watcher.Await(ctx, batch, schemas.TypeBranchReady)
	must(t, err)
	ready := ev.(schemas.BranchReady)
	path := "gold/billing_fact/batch=" + batch + "/part-0.parquet"
	must(t, e.WriteParquet(ctx, ready.Branch, path, harness.GoodBillingRows))
	// The write's own trace (another span of the producer) does not replace the batch's.
	must(t, e.ProduceWithHeaders(ctx, schemas.WriteComplete{BatchID: batch, Dataset: "billing", Write: "billing_fact",
		Paths: []string{path}, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)},
		map[string]string{"traceparent": "00-11111111111111111111111111111111-2222222222222222-01"}))
	final, err := e.Watcher.Await(ctx, batch, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	pub, ok := final.(schemas.BatchPublished)
	if !ok {
		t.Fatalf("final event %+v, want BatchPublished", final)
	}

	msgs := resultMessages(t, e, batch)
	types := map[string]bool{}
	for _, m := range msgs {
		typ := header(m, schemas.HeaderEventType)
		types[typ] = true
		if got, gs := header(m, "traceparent"), header(m, "tracestate"); got != tp || gs != ts {
			t.Errorf("%s: traceparent %q tracestate %q, want the BatchLanded's %q %q", typ, got, gs, tp, ts)
		}
	}
	if !types[schemas.TypeBranchReady] || !types[schemas.TypeBatchPublished] {
		t.Errorf("result messages of %s: %v, want BranchReady and BatchPublished", batch, types)
	}

	c, err := e.Lake.GetCommit(ctx, "lake", pub.CommitID)
	must(t, err)
	if c.Metadata[pipeline.MetaTraceParent] != tp || c.Metadata[pipeline.MetaTraceState] != ts {
		t.Errorf("merge commit %s metadata %v, want the trace context", pub.CommitID, c.Metadata)
	}
}

func header(m kafka.Message, key string) string {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}
