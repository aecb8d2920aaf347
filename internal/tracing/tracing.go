// Package tracing makes the daemon's OpenTelemetry spans, sent with the
// OpenTelemetry SDK to an OTLP endpoint (gRPC or HTTP). Off by default:
// without an endpoint there is no Tracer, and the runner's hook is nil.
//
// A batch is one trace: its spans are children of the producer's span when
// its BatchLanded carried a traceparent (the run keeps it), else of a new
// trace per step. The spans are a Kafka process span per input message
// that starts or joins a batch's trace (messaging semantic conventions,
// Process), wait (landed to sealed), one per step (branch, audit with a
// seal span and a child span per check, publish, look, revert, cleanup),
// and client spans on lakeFS calls (Transport).
//
// It imports kafka (lakewap's message type), pipeline and schemas.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// Options configure a Tracer.
type Options struct {
	// Endpoint is the OTLP receiver: host:port for gRPC, a URL
	// (http://host:4318/v1/traces) for HTTP.
	Endpoint string
	// Protocol is grpc (default) or http.
	Protocol string
	// Insecure sends without TLS.
	Insecure bool
	// Headers go with every export (an API key).
	Headers map[string]string
	// SampleRatio is the share of new traces kept (a trace the producer
	// started follows its sampled flag).
	SampleRatio float64
	// Version is the service.version of the spans.
	Version string
	// Group is the consumer group, for the Kafka process span.
	Group string
}

// Validate returns the first wrong option as field: message, field named
// after the config key under tracing.
func (o Options) Validate() (field, msg string) {
	switch {
	case o.Protocol != "" && o.Protocol != "grpc" && o.Protocol != "http":
		return "protocol", fmt.Sprintf("%q is not grpc or http", o.Protocol)
	case o.SampleRatio < 0 || o.SampleRatio > 1:
		return "sample_ratio", fmt.Sprintf("%v must be between 0 and 1", o.SampleRatio)
	case o.Protocol == "http" && !strings.HasPrefix(o.Endpoint, "http://") && !strings.HasPrefix(o.Endpoint, "https://"):
		return "otlp_endpoint", fmt.Sprintf("%q must be a URL (http://host:4318/v1/traces) with protocol http", o.Endpoint)
	case o.Protocol != "http" && (strings.Contains(o.Endpoint, "/") || !strings.Contains(o.Endpoint, ":")):
		return "otlp_endpoint", fmt.Sprintf("%q must be host:port with protocol grpc", o.Endpoint)
	}
	for k := range o.Headers {
		if k == "" || strings.ContainsAny(k, " :\r\n") {
			return "headers", fmt.Sprintf("%q is not a header name", k)
		}
	}
	return "", ""
}

// Tracer makes the spans. Its methods are the runner's hooks.
type Tracer struct {
	o      Options
	tp     *sdktrace.TracerProvider
	t      trace.Tracer
	waited func(after pipeline.Run) bool
}

// New starts a Tracer exporting to o.Endpoint; Shutdown flushes and stops
// it.
func New(ctx context.Context, o Options) (*Tracer, error) {
	if field, msg := o.Validate(); field != "" {
		return nil, fmt.Errorf("tracing.%s: %s", field, msg)
	}
	var exp *otlptrace.Exporter
	var err error
	if o.Protocol == "http" {
		opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(o.Endpoint), otlptracehttp.WithHeaders(o.Headers)}
		if o.Insecure {
			opts = append(opts, otlptracehttp.WithInsecure())
		}
		exp, err = otlptracehttp.New(ctx, opts...)
	} else {
		opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(o.Endpoint), otlptracegrpc.WithHeaders(o.Headers)}
		if o.Insecure {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		exp, err = otlptracegrpc.New(ctx, opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing.otlp_endpoint: %w", err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", "lakewap"), attribute.String("service.version", o.Version))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(o.SampleRatio))))
	return &Tracer{o: o, tp: tp, t: tp.Tracer("github.com/lakewap/lakewap")}, nil
}

// Shutdown sends the spans not yet sent and stops.
func (t *Tracer) Shutdown(ctx context.Context) error { return t.tp.Shutdown(ctx) }

// parent is ctx under the producer's span of run, when it has one.
func parent(ctx context.Context, run pipeline.Run) context.Context {
	if run.Trace.IsZero() {
		return ctx
	}
	c := propagation.MapCarrier{"traceparent": run.Trace.Parent}
	if run.Trace.State != "" {
		c["tracestate"] = run.Trace.State
	}
	return propagation.TraceContext{}.Extract(ctx, c)
}

func runAttrs(run pipeline.Run) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("lakewap.dataset", run.Dataset), attribute.String("lakewap.batch_id", run.BatchID),
		attribute.String("lakewap.branch", run.Branch)}
}

// spanName is the span of effect k: the step's name.
func spanName(k pipeline.EffectKind) string {
	if s := k.Step(); s != "" {
		return string(s)
	}
	return k.String()
}

// Step starts the span of step k of run under ctx; the function it returns
// ends it with the step's input: an error status for a failed step, and
// for an audit a child span per check (from the report's durations), with
// an error status when the check failed or could not run.
func (t *Tracer) Step(ctx context.Context, run pipeline.Run, k pipeline.EffectKind) (context.Context, func(pipeline.Input)) {
	ctx, span := t.t.Start(parent(ctx, run), spanName(k), trace.WithAttributes(runAttrs(run)...))
	start := time.Now()
	return ctx, func(in pipeline.Input) {
		switch in := in.(type) {
		case pipeline.StepFailed:
			span.SetStatus(codes.Error, schemas.Clip(in.Err, 1024))
			span.SetAttributes(attribute.String("error.type", in.Class.String()))
		case pipeline.Audited:
			span.SetAttributes(attribute.String("lakewap.sealed_commit", in.SealedCommit), attribute.Bool("lakewap.audit.passed", in.Report.Passed))
			t.checks(ctx, start, in.Report)
		case pipeline.Merged:
			span.SetAttributes(attribute.String("lakewap.commit_id", in.CommitID))
		}
		span.End()
	}
}

// checks makes a span per check under ctx, one after the other from start
// by their durations (the audit reports how long each took, not when).
func (t *Tracer) checks(ctx context.Context, start time.Time, rep schemas.AuditReport) {
	at := start
	for _, c := range rep.Checks {
		end := at.Add(time.Duration(c.DurationMs) * time.Millisecond)
		_, span := t.t.Start(ctx, "check "+c.Name, trace.WithTimestamp(at), trace.WithAttributes(
			attribute.String("lakewap.check.name", c.Name), attribute.String("lakewap.check.kind", c.Kind),
			attribute.String("lakewap.check.table", c.Table), attribute.String("lakewap.check.severity", c.Severity),
			attribute.String("lakewap.check.status", c.Status)))
		if c.Status == schemas.StatusFail || c.Status == schemas.StatusError {
			span.SetStatus(codes.Error, schemas.Clip(cmpOr(c.Message, c.Observed), 1024))
		}
		span.End(trace.WithTimestamp(end))
		at = end
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Process starts the Kafka process span of msg, an input event ev about to
// reach the runner with the W3C trace context tc, and returns the context
// to handle it in and the function that ends the span with the runner's
// answer (an error status when it was refused or failed). A BatchLanded
// always gets one: it starts the batch's trace, as a child of the
// producer's span when tc has one. Other events get one only when they
// carry a trace context (a writer that passed on BranchReady's), so
// untraced writes make no root spans.
func (t *Tracer) Process(ctx context.Context, msg kafka.Message, ev schemas.Event, tc schemas.TraceContext) (context.Context, func(error)) {
	if ev.EventType() != schemas.TypeBatchLanded && tc.IsZero() {
		return ctx, func(error) {}
	}
	ctx, span := t.t.Start(parent(ctx, pipeline.Run{Trace: tc}), "process "+msg.Topic, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			attribute.String("messaging.system", "kafka"),
			attribute.String("messaging.operation.name", "process"), attribute.String("messaging.operation.type", "process"),
			attribute.String("messaging.destination.name", msg.Topic), attribute.String("messaging.consumer.group.name", t.o.Group),
			attribute.String("messaging.destination.partition.id", strconv.Itoa(msg.Partition)),
			attribute.Int64("messaging.kafka.offset", msg.Offset),
			attribute.String("messaging.kafka.message.key", schemas.Clip(string(msg.Key), 256)),
			attribute.Int("messaging.message.body.size", len(msg.Value)),
			attribute.String("lakewap.event_type", ev.EventType()),
			attribute.String("lakewap.dataset", ev.DatasetName()), attribute.String("lakewap.batch_id", ev.Batch())))
	return ctx, func(err error) {
		if err != nil {
			span.SetStatus(codes.Error, schemas.Clip(err.Error(), 1024))
			span.SetAttributes(attribute.String("error.type", "refused"))
		}
		span.End()
	}
}

// Span starts a span named name under ctx (a step's context): a part of a
// step, such as the seal of the audit step. The function it returns ends
// it, with an error status for a non-nil error.
func (t *Tracer) Span(ctx context.Context, name string) (context.Context, func(error)) {
	ctx, span := t.t.Start(ctx, name)
	return ctx, func(err error) {
		if err != nil {
			span.SetStatus(codes.Error, schemas.Clip(err.Error(), 1024))
		}
		span.End()
	}
}

// Observe is the runner's Observe hook: the wait span when a batch stops
// waiting for writes (from when it started to).
func (t *Tracer) Observe(before, after pipeline.Run) {
	if before.State == pipeline.StateAwaitingWrites && after.State != pipeline.StateAwaitingWrites {
		_, span := t.t.Start(parent(context.Background(), after), "wait", trace.WithTimestamp(before.StateSince),
			trace.WithAttributes(append(runAttrs(after), attribute.Int("lakewap.writes", len(after.Writes)))...))
		span.End()
	}
}

// Transport wraps rt (nil: http.DefaultTransport) with a client span per
// request, a child of the request's context's span (the step's), and the
// W3C trace headers on the request.
func (t *Tracer) Transport(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return roundTripper{t: t, rt: rt}
}

type roundTripper struct {
	t  *Tracer
	rt http.RoundTripper
}

func (r roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, span := r.t.t.Start(req.Context(), req.Method, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("http.request.method", req.Method), attribute.String("server.address", req.URL.Hostname()),
		attribute.String("url.path", req.URL.Path)))
	defer span.End()
	req = req.Clone(ctx)
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := r.rt.RoundTrip(req)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		if errors.Is(err, context.DeadlineExceeded) {
			span.SetAttributes(attribute.String("error.type", "timeout"))
		}
		return resp, err
	}
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	if resp.StatusCode >= 500 {
		span.SetStatus(codes.Error, resp.Status)
	}
	return resp, nil
}
