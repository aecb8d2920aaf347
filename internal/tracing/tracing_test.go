package tracing

import (
	"context"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/lakewap/lakewap/internal/tracing/otlptest"
	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// TestSpansOfABatchReachTheReceiver runs the hooks as ingest and the runner
// call them for a traced batch against an in-process OTLP receiver: every
// span has the producer's trace id, the process, wait and branch spans are
// children of the producer's span, a lakeFS call's client span is the
// branch span's child (with the trace headers on the request), the seal
// and check spans are the audit span's children, the failed check's span
// has error status, and the process span carries the message's topic,
// partition, offset and key. An untraced WriteComplete makes no span.
func TestSpansOfABatchReachTheReceiver(t *testing.T) {
	rcv := otlptest.Start(t)
	tr, err := New(context.Background(), Options{Endpoint: rcv.Addr, Insecure: true, SampleRatio: 1, Group: "lakewap"})
	if err != nil {
		t.Fatal(err)
	}
	const traceID, producerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	var gotHeader string
	lake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { gotHeader = r.Header.Get("traceparent") }))
	defer lake.Close()
	client := &http.Client{Transport: tr.Transport(nil)}

	now := time.Now()
	run := pipeline.Run{BatchID: "b1", Dataset: "billing", Branch: "wap-billing-b1", State: pipeline.StateLanded,
		Trace: schemas.TraceContext{Parent: "00-" + traceID + "-" + producerSpan + "-01"}, StateSince: now}
	landed := schemas.BatchLanded{BatchID: "b1", Dataset: "billing"}
	_, done := tr.Process(context.Background(), kafka.Message{Topic: "wap.batches", Partition: 2, Offset: 4711, Key: []byte("b1"), Value: []byte("avro")},
		landed, run.Trace)
	done(nil)
	_, done = tr.Process(context.Background(), kafka.Message{Topic: "wap.batches", Partition: 2, Offset: 4712, Key: []byte("b1")},
		schemas.WriteComplete{BatchID: "b1", Dataset: "billing"}, schemas.TraceContext{})
	done(nil)
	tr.Observe(pipeline.Run{}, run)
	ctx, end := tr.Step(context.Background(), run, pipeline.DoCreateBranch)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, lake.URL+"/api/v1/repositories/lake/branches", nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	end(pipeline.BranchCreated{})
	waiting := run
	waiting.State = pipeline.StateAwaitingWrites
	auditing := waiting
	auditing.State = pipeline.StateAuditing
	tr.Observe(waiting, auditing)
	ctx, end = tr.Step(context.Background(), auditing, pipeline.DoAudit)
	_, sealed := tr.Span(ctx, "seal")
	sealed(nil)
	end(pipeline.Audited{SealedCommit: "s1", Report: schemas.AuditReport{Checks: []schemas.CheckResult{
		{Name: "not_null", Status: schemas.StatusPass, DurationMs: 3},
		{Name: "amount_positive", Status: schemas.StatusFail, Observed: "2 rows", DurationMs: 5}}}})
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	byName := map[string]*tracepb.Span{}
	spans := rcv.Spans()
	for _, s := range spans {
		if byName[s.Name] != nil && s.Name != "POST" {
			t.Errorf("two spans named %s", s.Name)
		}
		byName[s.Name] = s
		if hex.EncodeToString(s.TraceId) != traceID {
			t.Errorf("span %s has trace %x, want the producer's %s", s.Name, s.TraceId, traceID)
		}
	}
	for _, n := range []string{"process wap.batches", "branch", "POST", "wait", "audit", "seal", "check not_null", "check amount_positive"} {
		if byName[n] == nil {
			t.Fatalf("no span %q among %d received", n, len(spans))
		}
	}
	id := func(n string) string { return hex.EncodeToString(byName[n].SpanId) }
	parentOf := func(n string) string { return hex.EncodeToString(byName[n].ParentSpanId) }
	for _, n := range []string{"process wap.batches", "branch", "wait", "audit"} {
		if parentOf(n) != producerSpan {
			t.Errorf("span %s's parent is %s, want the producer's %s", n, parentOf(n), producerSpan)
		}
	}
	if parentOf("POST") != id("branch") || gotHeader != "00-"+traceID+"-"+id("POST")+"-01" {
		t.Errorf("lakeFS call: parent %s (branch %s), traceparent sent %q", parentOf("POST"), id("branch"), gotHeader)
	}
	if parentOf("check amount_positive") != id("audit") || parentOf("check not_null") != id("audit") || parentOf("seal") != id("audit") {
		t.Errorf("seal and check spans not under audit")
	}
	if c := byName["check amount_positive"].Status; c == nil || c.Code != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("failed check's status %v, want error", c)
	}
	if c := byName["check not_null"].Status; c != nil && c.Code == tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("passed check's status %v", c)
	}
	p := byName["process wap.batches"]
	if otlptest.Attr(p, "messaging.system") != "kafka" || otlptest.Attr(p, "messaging.destination.name") != "wap.batches" ||
		otlptest.Attr(p, "messaging.consumer.group.name") != "lakewap" || otlptest.Attr(p, "messaging.operation.name") != "process" ||
		p.Kind != tracepb.Span_SPAN_KIND_CONSUMER {
		t.Errorf("process span %v", p)
	}
	// The message's key, partition and offset are the message's.
	if otlptest.Attr(p, "messaging.kafka.message.key") != "b1" || otlptest.Attr(p, "messaging.destination.partition.id") != "2" ||
		otlptest.Attr(p, "messaging.kafka.offset") != "4711" || otlptest.Attr(p, "lakewap.event_type") != "BatchLanded" {
		t.Errorf("process span %v", p)
	}
}

func TestBadOptionsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Endpoint: "collector:4317", Protocol: "udp"}, "protocol"},
		{Options{Endpoint: "collector:4317", SampleRatio: 2}, "sample_ratio"},
		{Options{Endpoint: "http://collector:4317"}, "otlp_endpoint"},
		{Options{Endpoint: "collector:4318", Protocol: "http"}, "otlp_endpoint"},
		{Options{Endpoint: "collector:4317", Headers: map[string]string{"bad name": "x"}}, "headers"},
	} {
		if f, _ := tc.o.Validate(); f != tc.want {
			t.Errorf("%+v: field %q, want %q", tc.o, f, tc.want)
		}
	}
	if f, m := (Options{Endpoint: "collector:4317", SampleRatio: 0.5}).Validate(); f != "" {
		t.Errorf("good options refused: %s: %s", f, m)
	}
}

// BenchmarkSpansOfABatch is the tracing work of one traced batch as the
// daemon does it: the process and wait spans, branch, audit with five
// checks and publish, and ten lakeFS calls through Transport (to a
// handler that answers at once), exported to an in-process receiver. Off,
// the runner holds a nil hook and none of this runs.
func BenchmarkSpansOfABatch(b *testing.B) {
	rcv := otlptest.Start(b)
	tr, err := New(context.Background(), Options{Endpoint: rcv.Addr, Insecure: true, SampleRatio: 1, Group: "lakewap"})
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Shutdown(context.Background())
	rt := tr.Transport(roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
	}))
	checks := make([]schemas.CheckResult, 5)
	for i := range checks {
		checks[i] = schemas.CheckResult{Name: "c" + string(rune('a'+i)), Status: schemas.StatusPass, DurationMs: 1}
	}
	run := pipeline.Run{BatchID: "b1", Dataset: "billing", Branch: "wap-billing-b1", State: pipeline.StateLanded,
		Trace: schemas.TraceContext{Parent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}
	waiting, auditing := run, run
	waiting.State, auditing.State = pipeline.StateAwaitingWrites, pipeline.StateAuditing
	msg := kafka.Message{Topic: "wap.batches", Partition: 1, Offset: 42, Key: []byte("b1")}
	landed := schemas.BatchLanded{BatchID: "b1", Dataset: "billing"}
	b.ReportAllocs()
	for b.Loop() {
		_, done := tr.Process(context.Background(), msg, landed, run.Trace)
		done(nil)
		for _, k := range []pipeline.EffectKind{pipeline.DoCreateBranch, pipeline.DoAudit, pipeline.DoPublish} {
			ctx, end := tr.Step(context.Background(), run, k)
			for range 3 {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://lakefs:8000/api/v1/x", nil)
				_, _ = rt.RoundTrip(req)
			}
			if k == pipeline.DoAudit {
				end(pipeline.Audited{Report: schemas.AuditReport{Checks: checks}})
			} else {
				end(nil)
			}
		}
		tr.Observe(waiting, auditing)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
