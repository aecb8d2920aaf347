package pipeline

import (
	"context"
	"sync"
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

// diffMemoKey carries a DiffMemo through the calls of one step.
type diffMemoKey struct{}

// DiffMemo lets the calls of one step share the answers of identical
// lakeFS diffs: the audit step needs the sealed commit's three-dot diff
// against the target twice (the tables-only rule and the audit's batch
// scope), and diffing against a branch that is being merged into slows
// those merges down (docs/benchmarks.md, issue 13).
type DiffMemo struct {
	mu sync.Mutex
	m  map[string]any
}

// WithDiffMemo returns ctx with a fresh memo for the diffs made under it.
func WithDiffMemo(ctx context.Context) context.Context {
	return context.WithValue(ctx, diffMemoKey{}, &DiffMemo{m: map[string]any{}})
}

// Memoizing reports whether ctx carries a memo.
func Memoizing(ctx context.Context) bool {
	_, ok := ctx.Value(diffMemoKey{}).(*DiffMemo)
	return ok
}

// Memoized returns the remembered answer for key under ctx's memo, or
// calls fn and remembers a successful answer. Without a memo it calls fn.
func Memoized[T any](ctx context.Context, key string, fn func() (T, error)) (T, error) {
	m, ok := ctx.Value(diffMemoKey{}).(*DiffMemo)
	if !ok {
		return fn()
	}
	m.mu.Lock()
	defer m.mu.Unlock() // one at a time: the second caller waits for the first answer
	if v, ok := m.m[key]; ok {
		return v.(T), nil
	}
	v, err := fn()
	if err == nil {
		m.m[key] = v
	}
	return v, err
}
