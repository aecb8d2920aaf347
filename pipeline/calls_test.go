package pipeline

import (
	"context"
	"errors"
	"testing"
)

// Under a memo, an identical call is answered once; a failed one is asked
// again; without a memo every call is made.
func TestMemoized(t *testing.T) {
	calls := 0
	fn := func() (int, error) { calls++; return calls, nil }
	ctx := WithDiffMemo(context.Background())
	a, _ := Memoized(ctx, "k", fn)
	b, _ := Memoized(ctx, "k", fn)
	c, _ := Memoized(ctx, "other", fn)
	if a != 1 || b != 1 || c != 2 || calls != 2 {
		t.Errorf("got %d %d %d after %d calls; want 1 1 2 after 2", a, b, c, calls)
	}
	fails := 0
	bad := func() (int, error) { fails++; return 0, errors.New("down") }
	_, _ = Memoized(ctx, "bad", bad)
	_, _ = Memoized(ctx, "bad", bad)
	if fails != 2 {
		t.Errorf("a failed answer was remembered (%d calls, want 2)", fails)
	}
	calls = 0
	_, _ = Memoized(context.Background(), "k", fn)
	_, _ = Memoized(context.Background(), "k", fn)
	if calls != 2 || Memoizing(context.Background()) || !Memoizing(ctx) {
		t.Errorf("without a memo: %d calls, want 2", calls)
	}
}
