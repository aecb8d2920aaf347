package runstore

import (
	"context"
	"testing"

	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// hooked runs before() once, before the first Write of its store.
type hooked struct {
	logStore
	before func()
}

func (h *hooked) Write(ctx context.Context, p int, rs ...consumer.ChangelogRecord) error {
	if f := h.before; f != nil {
		h.before = nil
		f()
	}
	return h.logStore.Write(ctx, p, rs...)
}

// A zombie owner (A) scans the partition; before it writes its epoch mark,
// the new owner (B) loads it: both take the epoch after the highest they
// saw, the same one. Each then writes (A moves b1 on, B takes a new batch
// b2): the next loads restore both, and no Load deletes B's record. (Each
// owner's records carry its own id under the seal; the places of two
// owners of one epoch are not ordered against each other.)
func TestTwoOwnersOfOneEpochKeepEachOthersRecords(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	ctx := context.Background()
	inner := logStore{}
	seed, err := New(Config{Inner: inner, Key: key, Datasets: specs})
	must(t, err)
	_, err = seed.Load(ctx, 0)
	must(t, err)
	k0, v0 := record(t, func(r *pipeline.Run) { r.State = pipeline.StateAwaitingWrites })
	must(t, seed.Put(ctx, 0, k0, v0))

	b, err := New(Config{Inner: inner, Key: key, Datasets: specs})
	must(t, err)
	h := &hooked{logStore: inner}
	a, err := New(Config{Inner: h, Key: key, Datasets: specs})
	must(t, err)
	h.before = func() { _, err := b.Load(ctx, 0); must(t, err) }
	_, err = a.Load(ctx, 0)
	must(t, err)
	// The zombie A moves b1 on (Restored counting an attempt, say).
	_, va := record(t, func(r *pipeline.Run) { r.State = pipeline.StateAuditing })
	must(t, a.Put(ctx, 0, k0, va))
	// The new owner B takes a new batch b2.
	k2, v2 := record(t, func(r *pipeline.Run) {
		r.BatchID, r.Branch, r.State = "b2", schemas.BranchName("billing", "b2"), pipeline.StateAwaitingWrites
	})
	must(t, b.Put(ctx, 0, k2, v2))

	// Each owner's own records keep their order: B moves b2 on, and its
	// older record written again is set aside.
	older := inner.latest(0)[k2]
	_, v2 = record(t, func(r *pipeline.Run) {
		r.BatchID, r.Branch, r.State = "b2", schemas.BranchName("billing", "b2"), pipeline.StateAuditing
	})
	must(t, b.Put(ctx, 0, k2, v2))
	must(t, inner.Put(ctx, 0, k2, older))

	for i := range 2 {
		c, err := New(Config{Inner: inner, Key: key, Datasets: specs})
		must(t, err)
		got, err := c.Load(ctx, 0)
		must(t, err)
		if v, ok := got[k2]; !ok || stateOf(t, v) != pipeline.StateAuditing {
			t.Errorf("load %d: the new owner's run b2 is not restored auditing (%q, set aside replayed: %v)", i, v, setAside(t, c, ReasonReplayed))
		}
		if _, ok := got[k0]; !ok {
			t.Errorf("load %d: b1 is not restored", i)
		}
		if n := setAside(t, c, ReasonReplayed); n != 1 {
			t.Errorf("load %d: %v set aside as replayed, want 1 (the copy of b2's older record)", i, n)
		}
	}
	if _, ok := inner.latest(0)[k2]; !ok {
		t.Errorf("b2's record was deleted from the changelog by a Load")
	}
}
