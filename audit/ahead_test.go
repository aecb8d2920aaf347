package audit

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
)

// gatedHistory holds each Commit call until release is closed (or the
// call's context ends) and then answers with parents; it counts the calls.
type gatedHistory struct {
	release chan struct{}
	entered chan struct{} // receives once per call
	parents []string
	calls   atomic.Int64
}

func (h *gatedHistory) MergeBase(context.Context, string, string, string) (string, error) {
	return "", fmt.Errorf("not asked")
}

func (h *gatedHistory) Commit(ctx context.Context, _, ref string) (CommitInfo, error) {
	h.calls.Add(1)
	select {
	case h.entered <- struct{}{}:
	default:
	}
	select {
	case <-h.release:
	case <-ctx.Done():
		return CommitInfo{}, ctx.Err()
	}
	return CommitInfo{ID: ref, Parents: h.parents}, nil
}

// differSource is mapSource with a two-dot diff that is never asked for
// when the parents do not hold, and counts its listings.
type differSource struct {
	mapSource
	lists atomic.Int64
}

func (s *differSource) List(ctx context.Context, repo, ref, prefix string) ([]Object, error) {
	s.lists.Add(1)
	return s.mapSource.List(ctx, repo, ref, prefix)
}

func (s *differSource) Differences(context.Context, string, string, string, string, int) ([]Difference, bool, error) {
	return nil, false, fmt.Errorf("not asked")
}

// A listing of an own merge asked for while its derivation ahead is in
// flight waits for it (or, scheduled after it, finds none); when the derivation ends without a listing (the
// merge commit's parents are not [head, sealed]: derive's condition), the
// waiting run makes the listing itself (here lakeFS's, the derivation
// declined again), and nothing hangs. Close while a derivation ahead waits
// for lakeFS ends it, and so the wait of a listing for it. A guard of a0c6e0e and
// 5d1ba4d.
func TestListingWaitingForADerivationAheadThatDeclines(t *testing.T) {
	id := func(i int) string { return fmt.Sprintf("%064x", i) }
	head, sealed, merge, other := id(1), id(2), id(3), id(4)
	objs := []Object{{Path: "gold/t/a", Address: "a", Checksum: "a", Size: 1}}
	for _, closing := range []bool{false, true} {
		src := &differSource{mapSource: mapSource{merge: objs}}
		h := &gatedHistory{release: make(chan struct{}), entered: make(chan struct{}, 1), parents: []string{other, sealed}}
		e, err := New(Options{Source: src, History: h, WorkDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		e.derived.clear("lake", sealed, head, []string{"gold/t/"})
		e.RecordMerge("lake", merge, sealed)
		<-h.entered // the derivation ahead reads the merge commit, its flight taken
		type answer struct {
			objs []Object
			err  error
		}
		got := make(chan answer, 1)
		go func() {
			o, err := e.Listing(context.Background(), "lake", merge, "gold/t/")
			got <- answer{o, err}
		}()
		if closing {
			// Close cancels the derivation ahead held in lakeFS and waits
			// for it; then lakeFS answers the listing's own calls.
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			close(h.release)
		} else {
			close(h.release)
			e.WaitDerivingAhead()
		}
		a := <-got
		if closing {
			// The listing ends: lakeFS's (the derivation it tried declined).
			if a.err != nil || len(a.objs) != 1 {
				t.Errorf("closing: listing %+v %v, want lakeFS's", a.objs, a.err)
			}
			continue
		}
		if a.err != nil || len(a.objs) != 1 || a.objs[0].Path != "gold/t/a" {
			t.Errorf("listing after the derivation ahead declined: %+v %v, want lakeFS's", a.objs, a.err)
		}
		if src.lists.Load() != 1 {
			t.Errorf("%d listings asked of lakeFS, want 1", src.lists.Load())
		}
		if derived, declined := e.DerivedListings(); derived != 0 || declined == 0 {
			t.Errorf("derived %d, declined %d: want the merge's listing declined, none derived", derived, declined)
		}
		e.Close()
	}
}
