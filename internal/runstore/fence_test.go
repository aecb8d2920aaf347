package runstore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

var errStale = errors.New("the generation is stale: the group rebalanced")

// A Load whose fence fails writes nothing: no epoch mark, no record written
// again over a replay, no tombstone for a replayed key or an older mark;
// and says which partition it did not take. The same partition loaded
// without a fence writes all of these (the scenario is not empty).
func TestFencedOutLoadWritesNothing(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	ctx := context.Background()
	inner := logStore{}
	s, err := New(Config{Inner: inner, Key: key, Datasets: specs})
	must(t, err)
	_, err = s.Load(ctx, 3)
	must(t, err)
	k1, awaiting := record(t, func(r *pipeline.Run) { r.State = pipeline.StateAwaitingWrites })
	must(t, s.Put(ctx, 3, k1, awaiting))
	old := inner.latest(3)[k1]
	_, auditing := record(t, func(r *pipeline.Run) { r.State = pipeline.StateAuditing })
	must(t, s.Put(ctx, 3, k1, auditing))
	k2, v2 := record(t, func(r *pipeline.Run) { r.BatchID, r.Branch = "b2", schemas.BranchName("billing", "b2") })
	must(t, s.Put(ctx, 3, k2, v2))
	gone := inner.latest(3)[k2]
	must(t, s.Delete(ctx, 3, k2))
	must(t, inner.Put(ctx, 3, k1, old))  // a replay: b1 written again
	must(t, inner.Put(ctx, 3, k2, gone)) // a replay: b2 after its deletion

	before := slices.Clone(inner[3])
	var asked []int
	fenced, err := New(Config{Inner: inner, Key: key, Datasets: specs, Fence: func(_ context.Context, p int) error {
		asked = append(asked, p)
		return errStale
	}})
	must(t, err)
	got, err := fenced.Load(ctx, 3)
	switch {
	case err == nil:
		t.Fatalf("a fenced-out Load returned %v and no error", keys(got))
	case !errors.Is(err, errStale) || !errors.Is(err, ErrFenced) || !strings.Contains(err.Error(), "partition 3"):
		t.Errorf("error %q does not name partition 3 and wrap ErrFenced and the fence's error", err)
	}
	if !slices.Equal(asked, []int{3}) {
		t.Errorf("fence asked for partitions %v, want [3]", asked)
	}
	if len(inner[3]) != len(before) {
		t.Errorf("a fenced-out Load wrote %d records, want none: %v", len(inner[3])-len(before), inner[3][len(before):])
	}
	if err := fenced.Put(ctx, 3, k1, auditing); !errors.Is(err, ErrNotLoaded) {
		t.Errorf("Put after a fenced-out Load: %v, want ErrNotLoaded", err)
	}

	passing, err := New(Config{Inner: inner, Key: key, Datasets: specs, Fence: func(context.Context, int) error { return nil }})
	must(t, err)
	got, err = passing.Load(ctx, 3)
	must(t, err)
	if st := stateOf(t, got[k1]); st != pipeline.StateAuditing || len(got) != 1 {
		t.Errorf("the owner's Load restored %v with b1 %s, want b1 auditing alone", keys(got), st)
	}
	var wrote []string
	for _, e := range inner[3][len(before):] {
		wrote = append(wrote, e.key)
	}
	if !slices.ContainsFunc(wrote, func(k string) bool { return strings.HasPrefix(k, EpochMarkPrefix) }) || !slices.Contains(wrote, k1) || !slices.Contains(wrote, k2) {
		t.Errorf("the owner's Load wrote %v, want an epoch mark, b1 again and b2's tombstone", wrote)
	}
}

// The reviewer's case (an old owner A paused inside its assignment, its
// Load starting after the new owner B's): A's fence fails, since the group
// rebalanced, so A takes no epoch; B's new run b2 is restored by the next
// load and stays in the changelog.
func TestOldOwnersLateLoadIsFencedAndTheNewOwnersRunSurvives(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	ctx := context.Background()
	inner := logStore{}
	owner := "A"
	fence := func(me string) func(context.Context, int) error {
		return func(context.Context, int) error {
			if me != owner {
				return errStale
			}
			return nil
		}
	}
	seed, err := New(Config{Inner: inner, Key: key, Datasets: specs, Fence: fence("A")})
	must(t, err)
	_, err = seed.Load(ctx, 0)
	must(t, err)
	k0, v0 := record(t, func(r *pipeline.Run) { r.State = pipeline.StateAwaitingWrites })
	must(t, seed.Put(ctx, 0, k0, v0))

	owner = "B" // the group rebalanced: partition 0 is B's
	b, err := New(Config{Inner: inner, Key: key, Datasets: specs, Fence: fence("B")})
	must(t, err)
	_, err = b.Load(ctx, 0)
	must(t, err)
	a, err := New(Config{Inner: inner, Key: key, Datasets: specs, Fence: fence("A")}) // the old owner, its load late
	must(t, err)
	if _, err := a.Load(ctx, 0); !errors.Is(err, ErrFenced) {
		t.Fatalf("the old owner's late Load: %v, want ErrFenced", err)
	}

	k2, v2 := record(t, func(r *pipeline.Run) {
		r.BatchID, r.Branch, r.State = "b2", schemas.BranchName("billing", "b2"), pipeline.StateAwaitingWrites
	})
	must(t, b.Put(ctx, 0, k2, v2))

	c, err := New(Config{Inner: inner, Key: key, Datasets: specs, Fence: fence("B")})
	must(t, err)
	got, err := c.Load(ctx, 0)
	must(t, err)
	if _, ok := got[k2]; !ok {
		t.Errorf("the new owner's run b2 is not restored (set aside replayed: %v)", setAside(t, c, ReasonReplayed))
	}
	if _, ok := inner.latest(0)[k2]; !ok {
		t.Errorf("b2's record was deleted from the changelog by the Load")
	}
	if n := setAside(t, c, ReasonReplayed); n != 0 {
		t.Errorf("%v records set aside as replayed, want none", n)
	}
}
