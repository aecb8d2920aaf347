package audit

import (
	"errors"
	"slices"
	"testing"
)

// The merge's hazard, from the listings alone: the foundation holds a and
// z; the target's head gained m, a copy of z (an earlier publish); the
// batch deletes z. lakeFS's merge drops m (the batch ran out of paths, and
// the base's next path after m, z, has m's identity), so the batch is
// refused. The same with m's bytes not z's, or with the batch still holding
// a path after m, is not.
func TestMergeHazardPaths(t *testing.T) {
	obj := func(p, sum string, size int64) Object {
		return Object{Path: p, Checksum: sum, Size: size, Address: "addr-" + p}
	}
	a, z := obj("t/a.csv", "ca", 8), obj("t/z.csv", "cz", 8)
	noBeyond := func() (Object, bool, error) { return Object{}, false, nil }
	for _, tt := range []struct {
		name    string
		f, s, h []Object
		beyond  func() (Object, bool, error)
		want    []string
	}{
		{"a later publish deletes the file the added copy matches", []Object{a, z}, []Object{a}, []Object{a, obj("t/m.csv", "cz", 8), z}, noBeyond, []string{"t/m.csv"}},
		{"the same, the batch adding the copy", []Object{a, z}, []Object{a, obj("t/m.csv", "cz", 8), z}, []Object{a}, noBeyond, []string{"t/m.csv"}},
		{"other bytes", []Object{a, z}, []Object{a}, []Object{a, obj("t/m.csv", "cm", 8), z}, noBeyond, nil},
		{"the other side holds a path after it", []Object{a, z}, []Object{a, obj("t/y.csv", "cy", 3)}, []Object{a, obj("t/m.csv", "cz", 8), z}, noBeyond, nil},
		{"both added it, differently", []Object{a, z}, []Object{a, obj("t/m.csv", "cz", 8), z}, []Object{a, obj("t/m.csv", "cq", 8), z}, noBeyond, []string{"t/m.csv"}},
		{"both added it alike", []Object{a, z}, []Object{a, obj("t/m.csv", "cz", 8), z}, []Object{a, obj("t/m.csv", "cz", 8), z}, noBeyond, nil},
		{"the next path is beyond the table", []Object{a}, []Object{a, obj("t/n.csv", "cx", 4)}, []Object{a},
			func() (Object, bool, error) { return obj("u/first.csv", "cx", 4), true, nil }, []string{"t/n.csv"}},
		{"nothing beyond the table", []Object{a}, []Object{a, obj("t/n.csv", "cx", 4)}, []Object{a}, noBeyond, nil},
	} {
		got, err := mergeHazardPaths(tt.f, tt.s, tt.h, tt.beyond)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
	if _, err := mergeHazardPaths([]Object{a}, []Object{a, obj("t/n.csv", "cx", 4)}, []Object{a},
		func() (Object, bool, error) { return Object{}, false, errors.New("lakeFS down") }); err == nil {
		t.Error("an unanswered look beyond the table is no error")
	}
}
