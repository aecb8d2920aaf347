package tests

import (
	"context"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/internal/tracing/otlptest"
	"github.com/lakewap/lakewap/schemas"
)

// TestSpansOfTracedBatches runs two batches with a producer's traceparent
// on the embedded stack, with tracing.otlp_endpoint at an in-process OTLP
// receiver: the good one is published, the bad one aborted by its audit.
// Each batch's spans carry its producer's trace id, the step spans and the
// Kafka process span are children of the producer's span, the lakeFS calls
// children of a step, the seal and the checks children of audit (the seal's
// commit call its child), the process span names the BatchLanded's
// partition and offset, and the failing check's span (bad batch only) has
// error status.
func TestSpansOfTracedBatches(t *testing.T) {
	rcv := otlptest.Start(t)
	var topic string
	e := startE2E(t, func(c *config.Config) {
		c.Tracing = config.Tracing{OTLPEndpoint: rcv.Addr, Insecure: true}
		topic = c.Kafka.InputTopic
	})
	process := "process " + topic
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	traced := func(batch, traceID, query string) schemas.Event {
		t.Helper()
		must(t, e.ProduceWithHeaders(ctx, schemas.BatchLanded{BatchID: batch, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
			Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)},
			map[string]string{"traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"}))
		ev, err := e.Watcher.Await(ctx, batch, schemas.TypeBranchReady)
		must(t, err)
		path := "gold/billing_fact/batch=" + batch + "/part-0.parquet"
		must(t, e.WriteParquet(ctx, ev.(schemas.BranchReady).Branch, path, query))
		must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: batch, Dataset: "billing", Write: "billing_fact",
			Paths: []string{path}, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
		final, err := e.Watcher.Await(ctx, batch, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
		must(t, err)
		return final
	}
	const good, bad = "4bf92f3577b34da6a3ce929d0e0e4736", "5bf92f3577b34da6a3ce929d0e0e4737"
	if ev := traced("otel-good", good, harness.GoodBillingRows); ev == nil {
		t.Fatal("no outcome")
	} else if _, ok := ev.(schemas.BatchPublished); !ok {
		t.Fatalf("good batch: %+v, want BatchPublished", ev)
	}
	if _, ok := traced("otel-bad", bad, harness.BadBillingRows).(schemas.BatchAborted); !ok {
		t.Fatal("bad batch not aborted")
	}

	// The batcher exports every few seconds: wait for both audits' checks.
	of := func(spans []*tracepb.Span, trace string) map[string][]*tracepb.Span {
		m := map[string][]*tracepb.Span{}
		for _, s := range spans {
			if hex.EncodeToString(s.TraceId) == trace {
				m[s.Name] = append(m[s.Name], s)
			}
		}
		return m
	}
	spans := rcv.Await(ctx, func(s []*tracepb.Span) bool {
		g, b := of(s, good), of(s, bad)
		return len(g["publish"]) > 0 && len(g["wait"]) > 0 && len(b["audit"]) > 0 && len(b["wait"]) > 0
	})
	for _, tc := range []struct {
		trace      string
		wantFailed bool
	}{{good, false}, {bad, true}} {
		m := of(spans, tc.trace)
		names := map[string]bool{}
		for n := range m {
			names[n] = true
		}
		for _, n := range []string{process, "branch", "wait", "audit"} {
			if len(m[n]) == 0 {
				t.Fatalf("trace %s: no span %q among %v", tc.trace, n, names)
			}
			if p := hex.EncodeToString(m[n][0].ParentSpanId); p != "00f067aa0ba902b7" {
				t.Errorf("trace %s: %s's parent %s, want the producer's span", tc.trace, n, p)
			}
		}
		if !tc.wantFailed && len(m["publish"]) == 0 {
			t.Errorf("trace %s: no publish span among %v", tc.trace, names)
		}
		p := m[process][0]
		if otlptest.Attr(p, "messaging.system") != "kafka" || otlptest.Attr(p, "messaging.destination.name") != topic || topic == "" ||
			otlptest.Attr(p, "messaging.consumer.group.name") == "" || p.Kind != tracepb.Span_SPAN_KIND_CONSUMER ||
			otlptest.Attr(p, "messaging.destination.partition.id") == "" || otlptest.Attr(p, "messaging.kafka.offset") == "" {
			t.Errorf("process span %v", p)
		}
		if len(m["seal"]) != 1 || hex.EncodeToString(m["seal"][0].ParentSpanId) != hex.EncodeToString(m["audit"][0].SpanId) {
			t.Errorf("trace %s: seal spans %v, want one under audit", tc.trace, m["seal"])
		}
		ids := map[string]string{}
		for n, ss := range m {
			for _, s := range ss {
				ids[hex.EncodeToString(s.SpanId)] = n
			}
		}
		audit := hex.EncodeToString(m["audit"][0].SpanId)
		checks, failed, calls := 0, 0, 0
		for _, ss := range m {
			for _, s := range ss {
				parent := ids[hex.EncodeToString(s.ParentSpanId)]
				switch {
				case len(s.Name) > 6 && s.Name[:6] == "check ":
					checks++
					if hex.EncodeToString(s.ParentSpanId) != audit {
						t.Errorf("%s not under audit", s.Name)
					}
					if s.Status != nil && s.Status.Code == tracepb.Status_STATUS_CODE_ERROR {
						failed++
					}
				case s.Kind == tracepb.Span_SPAN_KIND_CLIENT:
					calls++
					if parent == "" {
						t.Errorf("lakeFS call %s %s under no step", s.Name, otlptest.Attr(s, "url.path"))
					}
					if strings.HasSuffix(otlptest.Attr(s, "url.path"), "/commits") && s.Name == "POST" && parent == "audit" {
						t.Errorf("commit call %s under %s, want under seal", otlptest.Attr(s, "url.path"), parent)
					}
				}
			}
		}
		if checks == 0 || calls == 0 || (failed > 0) != tc.wantFailed {
			t.Errorf("trace %s: %d check spans (%d with error status), %d lakeFS call spans; want a failed check %v",
				tc.trace, checks, failed, calls, tc.wantFailed)
		}
	}
}
