package pipeline

import (
	"context"
	"sync/atomic"
)

// callCounterKey carries the counter of lakeFS API calls made on behalf of
// one run through the calls of a step, down to the lakeFS adapter (the
// audit's listings and downloads included).
type callCounterKey struct{}

// WithCallCounter returns ctx with n as the counter CountCall adds to.
func WithCallCounter(ctx context.Context, n *atomic.Int64) context.Context {
	return context.WithValue(ctx, callCounterKey{}, n)
}

// CountCall counts one lakeFS API call against the run of ctx, if any.
// Adapters call it once per HTTP request they send.
func CountCall(ctx context.Context) {
	if n, ok := ctx.Value(callCounterKey{}).(*atomic.Int64); ok {
		n.Add(1)
	}
}
