package audit

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// crowdSource is a treeSource that also answers FirstUnder (as the lakeFS
// source does, one entry asked), counting the objects its listings return:
// what lakeFS would page through.
type crowdSource struct {
	*treeSource
	listed int
}

func (s *crowdSource) List(ctx context.Context, repo, ref, prefix string) ([]Object, error) {
	objs, err := s.treeSource.List(ctx, repo, ref, prefix)
	s.listed += len(objs)
	return objs, err
}

func (s *crowdSource) FirstUnder(_ context.Context, _, ref, prefix string) (Object, bool, error) {
	for _, o := range s.refs[ref] {
		if strings.HasPrefix(o.Path, prefix) {
			return o, true, nil
		}
	}
	return Object{}, false, nil
}

// TestLimits63MergeHazardsAskOneEntryOfAPath: merge_hazard looked at one
// path of a ref (did the head add the batch's marker?) by listing every
// object under the path as a prefix: a writer's 5,000 objects named after
// a marker on the head ("zzzz/billing/m-0001", ...) were all listed for
// that one path, per suspect (up to audit.max_list_objects entries held
// each, and 10,000 diffs looked at in hazardsBefore). One entry is asked
// (FirstUnder): the path itself sorts first of those it prefixes.
func TestLimits63MergeHazardsAskOneEntryOfAPath(t *testing.T) {
	f, s := strings.Repeat("f", 64), strings.Repeat("5", 64)
	next := Object{Path: "zzzz/ledger/m", Checksum: "x", Size: 7}
	table := Object{Path: "gold/t/a.csv", Checksum: "a", Size: 1}
	old := Object{Path: "zzzz/billing/a-old", Checksum: "o", Size: 7}
	marker := Object{Path: "zzzz/billing/m", Checksum: "x", Size: 7}
	foundation := []Object{table, old, next}
	sealed := []Object{table, {Path: "gold/t/b.csv", Checksum: "b", Size: 1}, old, marker, next}
	head := []Object{table, old}
	for i := range 5000 {
		head = append(head, Object{Path: fmt.Sprintf("%s-%04d", marker.Path, i), Checksum: "w", Size: 1})
	}
	head = append(head, next)
	for _, l := range [][]Object{sealed, head} {
		slices.SortFunc(l, func(a, b Object) int { return strings.Compare(a.Path, b.Path) })
	}
	src := &crowdSource{treeSource: &treeSource{refs: map[string][]Object{f: foundation, s: sealed, "head": head}, after: map[string]int{}}}
	e := newEngine(t, src, "")
	changes := &Changes{Objects: []Object{{Path: "gold/t/b.csv", Size: 1}, {Path: marker.Path, Size: marker.Size}}, Removals: true}
	r := &run{e: e, req: Request{Repository: "r", Ref: s, BaseRef: "head", Suite: Suite{Tables: []Table{{Name: "t", Path: "gold/t/"}}}, Onto: true}}
	got, unchecked, err := r.hazardsAdded(context.Background(), f, changes)
	if err != nil || unchecked != "" || len(got) != 0 {
		t.Errorf("hazardsAdded = %q, %q, %v; want none (the head holds paths under the marker's)", got, unchecked, err)
	}
	if src.listed > 100 {
		t.Errorf("merge_hazard listed %d objects to look at one path; want one entry asked", src.listed)
	}
}
