package lineage

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/kafka/kafkatest"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// TestKafkaTransport sends a run's START and COMPLETE through lakewap's
// Kafka writer (kfake, or Apache Kafka with LAKEWAP_TEST_KAFKA_BROKERS) and
// reads them back: OpenLineage's key run:<namespace>/<job>, JSON with the
// column of a one-column check, and an event over the byte budget sent
// with less of its assertions, saying so (review 7: it was dropped, and the
// batch's outcome never reached the lineage backend).
func TestKafkaTransport(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Topic{Name: "openlineage", Partitions: 3})
	topic := c.Topic("openlineage")
	kc, err := kafka.NewClient(c.Brokers, kafka.Security{})
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	w := kc.Writer(kafka.WriterConfig{Topic: topic, Attempts: 3})
	defer w.Close()
	tables := []Table{{Name: "billing_fact", Path: "gold/billing_fact/", Columns: map[string]string{"amount_positive": "amount"}}}
	em, err := New(Options{Send: ToKafka(w), Namespace: "wap-prod", Tables: func(string) []Table { return tables },
		MaxEventBytes: 4096, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rows := int64(7)
	landed := pipeline.Run{BatchID: "b1", Dataset: "billing", Repository: "lake", Branch: "wap-billing-b1", Target: "main",
		State: pipeline.StateLanded, UpdatedAt: time.Now()}
	published := landed
	published.State, published.SealedCommit, published.CommitID = pipeline.StatePublished, "s1", "m1"
	published.Report = &schemas.AuditReport{Passed: true, Checks: []schemas.CheckResult{
		{Name: "amount_positive", Table: "billing_fact", Severity: "error", Status: schemas.StatusPass, RowsChecked: &rows}}}
	// A report with checks enough to pass the budget many times over.
	huge := published
	huge.BatchID = "b2"
	huge.Report = &schemas.AuditReport{Checks: make([]schemas.CheckResult, 200)}
	for i := range huge.Report.Checks {
		huge.Report.Checks[i] = schemas.CheckResult{Name: strings.Repeat("x", 40), Table: "billing_fact", Status: schemas.StatusFail}
	}
	em.Observe(pipeline.Run{}, landed)
	em.Observe(landed, published)
	em.Observe(landed, huge)
	em.Close()
	if n := dropped(em, "too_large") + dropped(em, "queue_full") + dropped(em, "undelivered") + dropped(em, "shutdown"); n != 0 {
		t.Errorf("dropped %d events, want none", n)
	}

	first, _, err := kc.Offsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []kafka.Message
	if err := kc.ReadPartitions(ctx, topic, first, nil, func(m kafka.Message) bool {
		got = append(got, m)
		return len(got) == 3
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Partition != got[1].Partition {
		t.Fatalf("read %d messages (%+v), want 3 on one partition", len(got), got)
	}
	// The huge one: its outcome, without its assertions, saying so.
	var small RunEvent
	if err := json.Unmarshal(got[2].Value, &small); err != nil || len(got[2].Value) > 4096 {
		t.Fatalf("third message of %d bytes: %v", len(got[2].Value), err)
	}
	budget, _ := small.Run.Facets["lakewap_budget"].(map[string]any)
	if small.EventType != Complete || small.Inputs[0].Facets["dataQualityAssertions"] != nil ||
		budget["assertionsLeftOut"] != float64(200) || !strings.Contains(fmt.Sprint(budget["reason"]), "4096") {
		t.Errorf("event over its budget sent as %s, run facets %v, input facets %v", small.EventType, small.Run.Facets, small.Inputs[0].Facets)
	}
	for i, want := range []string{Start, Complete} {
		m := got[i]
		var ev map[string]any
		if err := json.Unmarshal(m.Value, &ev); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if string(m.Key) != "run:wap-prod/billing" || ev["eventType"] != want || len(m.Headers) != 1 || m.Headers[0].Key != "content-type" {
			t.Errorf("message %d: key %q type %v headers %v", i, m.Key, ev["eventType"], m.Headers)
		}
	}
	var ev RunEvent
	_ = json.Unmarshal(got[1].Value, &ev)
	as, _ := ev.Inputs[0].Facets["dataQualityAssertions"].(map[string]any)["assertions"].([]any)
	if len(as) != 1 || as[0].(map[string]any)["column"] != "amount" {
		t.Errorf("assertions %v", as)
	}
}

// An event over its byte budget even without assertions is not sent,
// and counted too_large.
func TestEventOverItsBudgetWithoutAssertionsIsDropped(t *testing.T) {
	var sent int
	em, err := New(Options{Send: func(context.Context, string, []byte) error { sent++; return nil }, MaxEventBytes: 300,
		Tables: func(string) []Table { return []Table{{Name: "t", Path: "gold/t/"}} }, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	em.Observe(pipeline.Run{}, pipeline.Run{BatchID: "b1", Dataset: "billing", Repository: "lake", Branch: "wap-billing-b1",
		State: pipeline.StateLanded, UpdatedAt: time.Now()})
	em.Close()
	if sent != 0 || dropped(em, "too_large") != 1 {
		t.Errorf("sent %d, dropped %d too_large; want none sent, one dropped", sent, dropped(em, "too_large"))
	}
}
