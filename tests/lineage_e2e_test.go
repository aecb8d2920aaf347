package tests

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/harness"
	lakewapkafka "github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/schemas"
)

// An OpenLineage server (an in-process HTTP receiver) gets START and
// COMPLETE of a published batch: one job (the dataset), one run (the
// batch), the input table at the sealed commit with the audit's
// assertions, the output table at the merge commit.
func TestLineageEventsReachTheServer(t *testing.T) {
	var mu sync.Mutex
	var got []map[string]any
	arrived := make(chan struct{}, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var ev map[string]any
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(b, &ev) != nil {
			http.Error(w, "bad event", 400)
			return
		}
		mu.Lock()
		got = append(got, ev)
		mu.Unlock()
		arrived <- struct{}{}
	}))
	defer srv.Close()
	e := startE2E(t, func(c *config.Config) {
		c.Lineage = config.Lineage{URL: srv.URL + "/api/v1/lineage", Namespace: "wap-test"}
	})
	pub, ok := e.runBatch(t, "lineage-1", harness.GoodBillingRows).(schemas.BatchPublished)
	if !ok {
		t.Fatal("batch not published")
	}
	deadline := time.After(30 * time.Second)
	for n := 0; n < 2; n++ {
		select {
		case <-arrived:
		case <-deadline:
			t.Fatalf("the lineage server got %d events, want START and COMPLETE", n)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0]["eventType"] != "START" || got[1]["eventType"] != "COMPLETE" {
		t.Fatalf("events %v", got)
	}
	for _, ev := range got {
		run, job := ev["run"].(map[string]any), ev["job"].(map[string]any)
		if run["runId"] != got[0]["run"].(map[string]any)["runId"] || job["namespace"] != "wap-test" || job["name"] != "billing" ||
			ev["producer"] == "" || ev["schemaURL"] == "" || ev["eventTime"] == "" {
			t.Errorf("%s: run %v job %v", ev["eventType"], run, job)
		}
	}
	done := got[1]
	in := done["inputs"].([]any)[0].(map[string]any)
	out := done["outputs"].([]any)[0].(map[string]any)
	if in["namespace"] != "lakefs://lake" || in["name"] != "wap-billing-lineage-1/gold/billing_fact/" ||
		out["name"] != "main/gold/billing_fact/" || out["facets"].(map[string]any)["version"].(map[string]any)["datasetVersion"] != pub.CommitID {
		t.Errorf("COMPLETE inputs %v outputs %v (merge commit %s)", in, out, pub.CommitID)
	}
	as := in["facets"].(map[string]any)["dataQualityAssertions"].(map[string]any)["assertions"].([]any)
	if len(as) != len(pub.Report.Checks) {
		t.Errorf("assertions %v, the report has %d checks", as, len(pub.Report.Checks))
	}
}

// TestLineageEventsOnAKafkaTopic is TestLineageEventsReachTheServer with
// lineage.kafka.topic: the daemon makes the topic (kafka.create_topics) and writes START and
// COMPLETE there, keyed run:<namespace>/<dataset>, and the COMPLETE's
// assertions name the column of each one-column check.
func TestLineageEventsOnAKafkaTopic(t *testing.T) {
	var topic string
	e := startE2E(t, func(c *config.Config) {
		topic = c.Kafka.InputTopic + ".lineage"
		c.Lineage = config.Lineage{Kafka: config.LineageKafka{Topic: topic}, Namespace: "wap-test"}
		yes := true
		c.Kafka.CreateTopics = &yes // the stack's config checks its topics; this one is new
	})
	if _, ok := e.runBatch(t, "lineage-k1", harness.GoodBillingRows).(schemas.BatchPublished); !ok {
		t.Fatal("batch not published")
	}
	kc, err := lakewapkafka.NewClient(e.cfg.Kafka.Brokers, lakewapkafka.Security{})
	must(t, err)
	defer kc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first, _, err := kc.Offsets(ctx, topic)
	must(t, err)
	var got []lakewapkafka.Message
	must(t, kc.ReadPartitions(ctx, topic, first, nil, func(m lakewapkafka.Message) bool {
		got = append(got, m)
		return len(got) == 2
	}))
	if len(got) != 2 {
		t.Fatalf("read %d lineage records, want START and COMPLETE", len(got))
	}
	var evs [2]map[string]any
	for i, m := range got {
		must(t, json.Unmarshal(m.Value, &evs[i]))
		if string(m.Key) != "run:wap-test/billing" {
			t.Errorf("record %d key %q", i, m.Key)
		}
	}
	if evs[0]["eventType"] != "START" || evs[1]["eventType"] != "COMPLETE" {
		t.Fatalf("event types %v, %v", evs[0]["eventType"], evs[1]["eventType"])
	}
	in := evs[1]["inputs"].([]any)[0].(map[string]any)
	cols := 0
	for _, a := range in["facets"].(map[string]any)["dataQualityAssertions"].(map[string]any)["assertions"].([]any) {
		if c, _ := a.(map[string]any)["column"].(string); c != "" {
			cols++
		}
	}
	if cols == 0 {
		t.Errorf("no assertion names a column: %v", in["facets"])
	}
}
