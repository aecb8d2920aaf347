// Package otlptest is an in-process OTLP/gRPC trace receiver for tests: it
// listens on a free 127.0.0.1 port and keeps the spans it is sent.
package otlptest

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"

	collector "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
)

// Receiver is a TraceService server keeping every span it gets.
type Receiver struct {
	collector.UnimplementedTraceServiceServer
	// Addr is host:port, the tracing.otlp_endpoint with protocol grpc.
	Addr  string
	mu    sync.Mutex
	spans []*tracepb.Span
	got   chan struct{}
}

// Start serves a Receiver until the test ends.
func Start(t testing.TB) *Receiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	r := &Receiver{Addr: ln.Addr().String(), got: make(chan struct{}, 1)}
	collector.RegisterTraceServiceServer(srv, r)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return r
}

// Export keeps the request's spans.
func (r *Receiver) Export(_ context.Context, req *collector.ExportTraceServiceRequest) (*collector.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
	r.mu.Unlock()
	select {
	case r.got <- struct{}{}:
	default:
	}
	return &collector.ExportTraceServiceResponse{}, nil
}

// Spans returns the spans received so far.
func (r *Receiver) Spans() []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracepb.Span(nil), r.spans...)
}

// Await returns the spans once until says they are enough, or what arrived
// when ctx ends.
func (r *Receiver) Await(ctx context.Context, until func([]*tracepb.Span) bool) []*tracepb.Span {
	for {
		if s := r.Spans(); until(s) {
			return s
		}
		select {
		case <-r.got:
		case <-ctx.Done():
			return r.Spans()
		}
	}
}

// Attr is the value of span attribute k as a string (an integer in
// decimal), "" without it.
func Attr(s *tracepb.Span, k string) string {
	for _, a := range s.Attributes {
		if a.Key == k {
			if v, ok := a.Value.GetValue().(*commonpb.AnyValue_IntValue); ok {
				return strconv.FormatInt(v.IntValue, 10)
			}
			return a.Value.GetStringValue()
		}
	}
	return ""
}
