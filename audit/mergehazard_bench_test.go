package audit

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// hazardListings are a table's listings at a foundation of n files, a
// sealed commit adding one, and a head that gained gained files since.
func hazardListings(n, gained int) (f, s, h []Object) {
	obj := func(i int) Object {
		p := fmt.Sprintf("gold/billing_fact/batch=bench-1764900000%09d-%d/part-0.parquet", i, i)
		return Object{Path: p, Checksum: fmt.Sprintf("%032x", i), Size: int64(1000 + i), Address: "local://data/" + p}
	}
	for i := range n {
		f = append(f, obj(i))
	}
	s = append(slices.Clone(f), obj(n+gained))
	h = slices.Clone(f)
	for i := range gained {
		h = append(h, obj(n+i))
	}
	return f, s, h
}

// BenchmarkMergeHazardPaths is the recheck's merge hazard check of one
// table of 2,000 files, 64 gained by the head since the batch's foundation.
func BenchmarkMergeHazardPaths(b *testing.B) {
	f, s, h := hazardListings(2000, 64)
	beyond := func() (Object, bool, error) { return Object{}, false, nil }
	for b.Loop() {
		if paths, err := mergeHazardPaths(f, s, h, beyond); err != nil || len(paths) != 0 {
			b.Fatal(paths, err)
		}
	}
}

// The hazard check gives the same paths walking the listings as looking
// each path up: random tables where the sealed commit and the head add,
// change and delete paths, some claiming the checksum and size of the
// foundation's next path.
func TestMergeHazardPathsRandomized(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 21))
	for round := range 300 {
		n := 1 + rnd.IntN(40)
		var f []Object
		for i := range n {
			f = append(f, Object{Path: fmt.Sprintf("t/%03d", 2*i), Checksum: fmt.Sprintf("c%d", rnd.IntN(4)), Size: int64(rnd.IntN(2))})
		}
		mutate := func() []Object {
			out := slices.Clone(f)
			for range 1 + rnd.IntN(4) {
				switch op := rnd.IntN(3); {
				case op == 0 && len(out) > 1:
					i := rnd.IntN(len(out))
					out = slices.Delete(out, i, i+1)
				case op == 1 && len(out) > 0:
					i := rnd.IntN(len(out))
					out[i].Checksum = fmt.Sprintf("c%d", rnd.IntN(4))
				default:
					p := fmt.Sprintf("t/%03d", rnd.IntN(2*n+2))
					if _, found := slices.BinarySearchFunc(out, p, func(o Object, p string) int { return cmpString(o.Path, p) }); !found {
						out = append(out, Object{Path: p, Checksum: fmt.Sprintf("c%d", rnd.IntN(4)), Size: int64(rnd.IntN(2))})
						slices.SortFunc(out, func(a, b Object) int { return cmpString(a.Path, b.Path) })
					}
				}
			}
			return out
		}
		s, h := mutate(), mutate()
		next := Object{Path: "u/0", Checksum: fmt.Sprintf("c%d", rnd.IntN(4)), Size: int64(rnd.IntN(2))}
		beyond := func() (Object, bool, error) { return next, true, nil }
		want := mergeHazardPathsByLookup(f, s, h, next)
		if round%3 == 0 { // listings out of path order: the check orders them
			for _, l := range [][]Object{f, s, h} {
				rnd.Shuffle(len(l), func(i, j int) { l[i], l[j] = l[j], l[i] })
			}
		}
		got, err := mergeHazardPaths(f, s, h, beyond)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: %v, by lookup %v\nf %v\ns %v\nh %v", round, got, want, f, s, h)
		}
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// mergeHazardPathsByLookup is mergeHazardPaths as it was written first:
// each changed path looked up in maps.
func mergeHazardPathsByLookup(f, s, h []Object, next Object) []string {
	idx := func(objs []Object) map[string]Object {
		m := map[string]Object{}
		for _, o := range objs {
			m[o.Path] = o
		}
		return m
	}
	paths := func(objs []Object) []string {
		var out []string
		for _, o := range objs {
			out = append(out, o.Path)
		}
		slices.Sort(out)
		return out
	}
	fm, sm, hm := idx(f), idx(s), idx(h)
	fp, sp, hp := paths(f), paths(s), paths(h)
	var out []string
	side := func(xp []string, xm map[string]Object, yp []string, ym map[string]Object) {
		for _, p := range xp {
			if _, inF := fm[p]; inF {
				continue
			}
			o := xm[p]
			yo, inY := ym[p]
			i, _ := slices.BinarySearch(yp, p)
			if i != len(yp) && !(inY && (yo.Checksum != o.Checksum || yo.Size != o.Size)) {
				continue
			}
			q := next
			if j, _ := slices.BinarySearch(fp, p); j < len(fp) {
				q = fm[fp[j]]
			}
			if q.Checksum == o.Checksum && q.Size == o.Size {
				out = append(out, p)
			}
		}
	}
	side(sp, sm, hp, hm)
	side(hp, hm, sp, sm)
	slices.Sort(out)
	return slices.Compact(out)
}
