package audit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
)

// treeSource holds each ref's objects in path order: List by prefix and
// After as lakeFS answers them, counting After calls by ref.
type treeSource struct {
	refs  map[string][]Object
	mu    sync.Mutex
	after map[string]int
}

func (s *treeSource) List(_ context.Context, _, ref, prefix string) ([]Object, error) {
	var out []Object
	for _, o := range s.refs[ref] {
		if strings.HasPrefix(o.Path, prefix) {
			out = append(out, o)
		}
	}
	return out, nil
}

func (s *treeSource) After(_ context.Context, _, ref, after string) (Object, bool, error) {
	s.mu.Lock()
	s.after[ref]++
	s.mu.Unlock()
	for _, o := range s.refs[ref] {
		if o.Path > after {
			return o, true, nil
		}
	}
	return Object{}, false, nil
}

func (s *treeSource) Changed(context.Context, string, string, string, string) ([]Object, error) {
	return nil, errors.New("not asked")
}

func (s *treeSource) Download(context.Context, string, string, string, io.Writer) error {
	return errors.New("not asked")
}

// hazardsAdded on the paths a batch adds outside its tables: refused
// exactly where lakeFS's merge could drop the batch's path (the head holds
// nothing from it on) or keep the head's (the head added it at another
// checksum or size), and only for paths claiming the checksum and size of
// the foundation's next path, which the foundation does not hold.
func TestHazardsAddedPaths(t *testing.T) {
	f, s := strings.Repeat("f", 64), strings.Repeat("5", 64)
	next := Object{Path: "zzzz/ledger/m", Checksum: "x", Size: 7}
	foundation := []Object{{Path: "gold/t/a.csv", Checksum: "a", Size: 1}, {Path: "zzzz/billing/a-old", Checksum: "o", Size: 7}, next}
	marker := Object{Path: "zzzz/billing/m", Checksum: "x", Size: 7}
	cases := []struct {
		name   string
		sealed Object // the batch's path outside the table
		head   []Object
		want   []string
	}{
		{"the head holds nothing from the marker on", marker, []Object{foundation[0], foundation[1]}, []string{marker.Path}},
		{"the head holds nothing from the marker's folder on", marker, []Object{foundation[0]}, []string{marker.Path}},
		{"the head added the marker first in its folder at other bytes", marker, []Object{foundation[0], {Path: marker.Path, Checksum: "y", Size: 7}}, []string{marker.Path}},
		{"the head holds a path after the marker", marker, foundation, nil},
		{"the head added the marker at other bytes", marker, []Object{foundation[0], foundation[1], {Path: marker.Path, Checksum: "y", Size: 7}}, []string{marker.Path}},
		{"the head added the marker alike", marker, []Object{foundation[0], foundation[1], marker}, nil},
		{"the marker does not claim the next path's checksum", Object{Path: marker.Path, Checksum: "z", Size: 7}, []Object{foundation[0]}, nil},
		{"the marker does not claim the next path's size", Object{Path: marker.Path, Checksum: "x", Size: 8}, []Object{foundation[0]}, nil},
		{"the batch changed a path the foundation holds", Object{Path: "zzzz/billing/a-old", Checksum: "x", Size: 7}, []Object{foundation[0]}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sealed := []Object{foundation[0], {Path: "gold/t/b.csv", Checksum: "b", Size: 1}, next}
			if c.sealed.Path == "zzzz/billing/a-old" {
				sealed = append(sealed, c.sealed)
			} else {
				sealed = append(sealed, foundation[1], c.sealed)
			}
			slices.SortFunc(sealed, func(a, b Object) int { return strings.Compare(a.Path, b.Path) })
			src := &treeSource{refs: map[string][]Object{f: foundation, s: sealed, "head": c.head}, after: map[string]int{}}
			e := newEngine(t, src, "")
			changes := &Changes{Objects: []Object{{Path: "gold/t/b.csv", Size: 1}, {Path: c.sealed.Path, Size: c.sealed.Size}}, Removals: true}
			r := &run{e: e, req: Request{Repository: "r", Ref: s, BaseRef: "head", Suite: Suite{Tables: []Table{{Name: "t", Path: "gold/t/"}}}, Onto: true}}
			got, unchecked, err := r.hazardsAdded(context.Background(), f, changes)
			if err != nil || unchecked != "" || !slices.Equal(got, c.want) {
				t.Errorf("hazardsAdded = %q, %q, %v; want %q", got, unchecked, err, c.want)
			}
		})
	}
}

// The foundation's next path is asked once for a run of added paths that
// share it (a batch adding many markers), and not at all in the recheck
// once PrepareRecheck read it ahead; the head is asked once for the
// suspects' folder, whose first path there settles them all.
func TestAddedSuspectsAskTheFoundationOncePerNextPath(t *testing.T) {
	f, s := strings.Repeat("f", 64), strings.Repeat("5", 64)
	next := Object{Path: "zzzz/ledger/m", Checksum: "x", Size: 7}
	foundation := []Object{{Path: "gold/t/a.csv", Checksum: "a", Size: 1}, next}
	sealed := slices.Clone(foundation)
	changes := &Changes{Removals: true}
	for i := range 50 {
		o := Object{Path: fmt.Sprintf("zzzz/billing/_SUCCESS-%02d", i), Checksum: "x", Size: 7}
		sealed = append(sealed, o)
		changes.Objects = append(changes.Objects, Object{Path: o.Path, Size: o.Size})
	}
	slices.SortFunc(sealed, func(a, b Object) int { return strings.Compare(a.Path, b.Path) })
	src := &treeSource{refs: map[string][]Object{f: foundation, s: sealed, "head": foundation}, after: map[string]int{}}
	e := newEngine(t, src, "")
	req := Request{Repository: "r", Ref: s, Suite: Suite{Tables: []Table{{Name: "t", Path: "gold/t/"}}}, Changes: changes}
	e.PrepareRecheck(context.Background(), req, f)
	// One call for the path beyond the table (baseBeyond), one for the
	// 50 added paths.
	if n := src.after[f]; n != 2 {
		t.Errorf("PrepareRecheck asked the foundation's next paths %d times; want twice: beyond the table, and once for 50 added paths sharing one", n)
	}
	req.BaseRef, req.Onto = "head", true
	r := &run{e: e, req: req}
	got, unchecked, err := r.hazardsAdded(context.Background(), f, changes)
	if err != nil || unchecked != "" || len(got) != 0 {
		t.Errorf("hazardsAdded = %q, %q, %v; want none (the head holds the next path)", got, unchecked, err)
	}
	if n := src.after[f]; n != 2 {
		t.Errorf("the recheck asked the foundation again: %d calls in all; want PrepareRecheck's two", n)
	}
	if n := src.after["head"]; n != 1 {
		t.Errorf("the recheck asked the head %d times; want once for the 50 suspects' folder", n)
	}
}

// diffTreeSource is a treeSource that diffs two refs as lakeFS's two-dot
// diff does, counting the diffs asked.
type diffTreeSource struct {
	*treeSource
	diffs int
}

func (s *diffTreeSource) Differences(_ context.Context, _, from, to, prefix string, limit int) ([]Difference, bool, error) {
	s.diffs++
	at := func(ref string) map[string]Object {
		m := map[string]Object{}
		for _, o := range s.refs[ref] {
			if strings.HasPrefix(o.Path, prefix) {
				m[o.Path] = o
			}
		}
		return m
	}
	f, t := at(from), at(to)
	var out []Difference
	for p, o := range t {
		if g, ok := f[p]; !ok || g.Checksum != o.Checksum || g.Size != o.Size {
			out = append(out, Difference{Path: p, Size: o.Size})
		}
	}
	for p := range f {
		if _, ok := t[p]; !ok {
			out = append(out, Difference{Path: p, Removed: true})
		}
	}
	slices.SortFunc(out, func(a, b Difference) int { return strings.Compare(a.Path, b.Path) })
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// hazardsBothAdded on a path outside the tables that the batch and the
// head both added: refused exactly when the head's copy claims the
// checksum and size of the foundation's next path and the batch's differs
// (lakeFS writes the batch's where a three-way merge conflicts); one diff
// of the head per folder of the batch's added paths.
func TestHazardsBothAddedPaths(t *testing.T) {
	f, s := strings.Repeat("f", 64), strings.Repeat("5", 64)
	next := Object{Path: "zz/q", Checksum: "x", Size: 7}
	foundation := []Object{{Path: "gold/t/a.csv", Checksum: "a", Size: 1}, next}
	batch := Object{Path: "zz/p", Checksum: "y", Size: 7}
	cases := []struct {
		name   string
		sealed Object
		head   *Object // the head's zz/p, nil: none
		want   []string
	}{
		{"the head added it with the next path's identity", batch, &Object{Path: "zz/p", Checksum: "x", Size: 7}, []string{"zz/p"}},
		{"the head added it alike", batch, &batch, nil},
		{"the head added it at bytes of no other path (lakeFS conflicts)", batch, &Object{Path: "zz/p", Checksum: "w", Size: 7}, nil},
		{"the head's copy claims the next path's checksum at another size", batch, &Object{Path: "zz/p", Checksum: "x", Size: 8}, nil},
		{"the head did not add it", batch, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sealed := []Object{foundation[0], {Path: "gold/t/b.csv", Checksum: "b", Size: 1}, c.sealed, next}
			head := slices.Clone(foundation)
			if c.head != nil {
				head = append(head, *c.head)
			}
			slices.SortFunc(head, func(a, b Object) int { return strings.Compare(a.Path, b.Path) })
			src := &diffTreeSource{treeSource: &treeSource{refs: map[string][]Object{f: foundation, s: sealed, "head": head}, after: map[string]int{}}}
			e := newEngine(t, src, "")
			changes := &Changes{Objects: []Object{{Path: "gold/t/b.csv", Size: 1}, {Path: c.sealed.Path, Size: c.sealed.Size}}, Removals: true}
			r := &run{e: e, req: Request{Repository: "r", Ref: s, BaseRef: "head", Suite: Suite{Tables: []Table{{Name: "t", Path: "gold/t/"}}}, Onto: true}}
			got, unchecked, err := r.hazardsBothAdded(context.Background(), f, changes)
			if err != nil || unchecked != "" || !slices.Equal(got, c.want) {
				t.Errorf("hazardsBothAdded = %q, %q, %v; want %q", got, unchecked, err, c.want)
			}
			if src.diffs != 1 {
				t.Errorf("asked %d diffs of the head; want one for the folder zz/", src.diffs)
			}
		})
	}
	// A batch adding nothing outside its tables asks nothing.
	src := &diffTreeSource{treeSource: &treeSource{refs: map[string][]Object{f: foundation, s: foundation, "head": foundation}, after: map[string]int{}}}
	r := &run{e: newEngine(t, src, ""), req: Request{Repository: "r", Ref: s, BaseRef: "head", Suite: Suite{Tables: []Table{{Name: "t", Path: "gold/t/"}}}, Onto: true}}
	if got, _, err := r.hazardsBothAdded(context.Background(), f, &Changes{Objects: []Object{{Path: "gold/t/b.csv", Size: 1}}, Removals: true}); err != nil || got != nil || src.diffs != 0 {
		t.Errorf("a batch within its tables: %q, %v, %d diffs; want nothing asked", got, err, src.diffs)
	}
}

func TestCommonPrefix(t *testing.T) {
	for _, c := range []struct {
		paths []string
		want  string
	}{
		{[]string{"a/b/c", "a/b/d"}, "a/b/"},
		{[]string{"a/bc/x", "a/bd/y"}, "a/"},
		{[]string{"a/x", "b/y"}, ""},
		{[]string{"a/b/"}, "a/b/"},
	} {
		if got := commonPrefix(c.paths); got != c.want {
			t.Errorf("commonPrefix(%q) = %q; want %q", c.paths, got, c.want)
		}
	}
}
