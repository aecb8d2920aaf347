package audit

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRecheckLooksUpOnlyTheGainedFiles: batch S passes its audit against
// c001 (eight files); then P and Q publish, a file each, Q audited against
// P's publish. The recheck of S onto Q's publish looks up the statistics of
// S's own file and of Q's only: the rest were summed up by Q's audit (it
// looked up all ten before, and reduced every file's min and max again).
// It runs nothing in DuckDB (no key range meets S's), and its report is
// the one of an engine without summaries (memoRig.audit). With a
// volume_change check, the base's files (the target's head) are summed up
// the same way: Q's file is the one they gained (it looked up all nine).
func TestRecheckLooksUpOnlyTheGainedFiles(t *testing.T) {
	for _, volume := range []bool{false, true} {
		t.Run(fmt.Sprint("volume_change=", volume), func(t *testing.T) {
			eachCache(t, func(t *testing.T, cache bool) { testRecheckGained(t, cache, volume) })
		})
	}
}

func testRecheckGained(t *testing.T, cache, volume bool) {
	r, s := gainedRig(t, cache, volume)
	lookups, conns := r.memo.stats.lookups.Load(), r.memo.memo.conns.Load()
	rep := r.audit(Request{Ref: s, BaseRef: cid("c003"), Onto: true})
	if rep.Mode != ModeIncremental || !rep.Passed {
		t.Fatalf("recheck of S: mode %s (%s), passed %v: %+v", rep.Mode, rep.ModeReason, rep.Passed, rep.Checks)
	}
	want := int64(2)
	if volume {
		want = 3 // and Q's as a file of the base
	}
	if n := r.memo.stats.lookups.Load() - lookups; n != want {
		t.Errorf("the recheck looked up the statistics of %d files, want %d (S's and Q's)", n, want)
	}
	if n := r.memo.memo.conns.Load() - conns; n != 0 {
		t.Errorf("the recheck opened %d DuckDB connections", n)
	}
}

// gainedRig is TestRecheckLooksUpOnlyTheGainedFiles's lake: batch S
// (returned) passed its audit against c001 (eight files), then P and Q
// published (c002, c003).
func gainedRig(t *testing.T, cache, volume bool) (*memoRig, string) {
	old := map[string][]string{}
	for i := range 7 {
		old[fmt.Sprintf("data/t/d%d.parquet", i)] = []string{fmt.Sprint(1000 + 10*i), fmt.Sprint(1005 + 10*i)}
	}
	suite := memoSuite()
	if volume {
		suite.Checks = append(suite.Checks, Check{Kind: KindVolumeChange, Table: "t", MaxGrowthPct: f64(900)})
	}
	r := newMemoRigOf(t, cache, old, suite)
	s := r.batch("c001", "s1", "data/t/s1/part-0.parquet", "100", "101")
	if rep := r.audit(Request{Ref: s, BaseRef: cid("c001")}); rep.Mode != ModeIncremental || !rep.Passed {
		t.Fatalf("audit of S: mode %s (%s), passed %v: %+v", rep.Mode, rep.ModeReason, rep.Passed, rep.Checks)
	}
	p := r.batch("c001", "p1", "data/t/p1/part-0.parquet", "5000")
	r.publish("c001", "p1", "c001", "c002", r.audit(Request{Ref: p, BaseRef: cid("c001")}))
	q := r.batch("c002", "q1", "data/t/q1/part-0.parquet", "6000", "6005")
	r.publish("c002", "q1", "c002", "c003", r.audit(Request{Ref: q, BaseRef: cid("c002")}))
	return r, s
}

// TestMinMaxFoldIsReduceMinMax: folding files' figures in any order gives,
// where the fold says it is exact, what combinedMinMax takes from the files
// in path order (reduceMinMax, or the one file's figures), spellings
// included: equal values spelled differently (-0 and 0, 1.50 and 1.5) are
// not exact, since the first in path order wins.
func TestMinMaxFoldIsReduceMinMax(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 21))
	spell := map[string][]string{
		"BIGINT":       {"-2", "-1", "0", "1", "2", "3"},
		"DOUBLE":       {"-1.5", "-0.0", "0.0", "0", "1.5", "2.25", "NaN"},
		"DECIMAL(9,2)": {"-1.00", "0.00", "1.50", "1.5", "2.00"},
		"VARCHAR":      {"", "a", "ab", "b", "B"},
		"TIMESTAMP":    {"2026-01-01 00:00:00", "2026-01-02 00:00:00"},
	}
	types := []string{"BIGINT", "DOUBLE", "DECIMAL(9,2)", "VARCHAR", "TIMESTAMP"}
	var exact, inexact int
	for range 20_000 {
		typ := types[rng.IntN(len(types))]
		files := make([]colStats, rng.IntN(6))
		for i := range files {
			ty := typ
			if rng.IntN(40) == 0 {
				ty = types[rng.IntN(len(types))]
			}
			vals := spell[ty]
			a, b := vals[rng.IntN(len(vals))], vals[rng.IntN(len(vals))]
			files[i] = colStats{Type: ty, NonNull: int64(rng.IntN(3)), Min: a, Max: b}
		}
		var want []colStats
		for _, cs := range files {
			if cs.NonNull > 0 {
				want = append(want, cs)
			}
		}
		wantOK := true
		if lo, hi, ok := reduceMinMax(want); ok {
			want = []colStats{{Type: lo.Type, Min: lo.Min, Max: hi.Max}}
		} else if len(want) > 1 {
			wantOK = false // the audit compares them in the query
		}
		var f minMaxFold
		for _, i := range rng.Perm(len(files)) {
			f = f.add(files[i])
		}
		got, ok := f.olds()
		if !ok {
			inexact++
			continue
		}
		exact++
		if !wantOK || !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("files %+v: fold %+v, want %+v (reduced: %v)", files, got, want, wantOK)
		}
	}
	if exact < 1000 || inexact < 100 {
		t.Fatalf("%d exact folds, %d not: the test shows little", exact, inexact)
	}
}

// TestMergeSortedIsMergeByPath: the walk of three listings in path order
// gives mergedObjects' table as the maps gave it, on random listings where
// paths are added, removed, rewritten and relinked (a new address claiming
// the same checksum and size) on either side; out of order, it declines.
func TestMergeSortedIsMergeByPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	obj := func(p string, v int) Object {
		return Object{Path: p, Address: fmt.Sprintf("addr-%s-%d", p, v), Checksum: fmt.Sprintf("sum-%d", v/2), Size: int64(v / 2)}
	}
	for range 5000 {
		var f, s, tg []Object
		for i := range rng.IntN(12) {
			p := fmt.Sprintf("data/t/p%02d.parquet", i)
			v := rng.IntN(4)
			if rng.IntN(4) > 0 {
				f = append(f, obj(p, v))
			}
			if x := rng.IntN(6); x > 0 {
				s = append(s, obj(p, map[bool]int{true: v, false: rng.IntN(4)}[x > 2]))
			}
			if x := rng.IntN(6); x > 0 {
				tg = append(tg, obj(p, map[bool]int{true: v, false: rng.IntN(4)}[x > 2]))
			}
		}
		got, ok := mergeSorted(f, s, tg)
		if !ok {
			t.Fatalf("listings in order declined: %v %v %v", f, s, tg)
		}
		if want := mergeByPath(f, s, tg); !slices.Equal(got, want) && len(got)+len(want) > 0 {
			t.Fatalf("f %v\ns %v\ntg %v\nwalk %v\nmaps %v", f, s, tg, got, want)
		}
	}
	a, b := obj("data/t/a", 1), obj("data/t/b", 1)
	if _, ok := mergeSorted(nil, []Object{b, a}, nil); ok {
		t.Fatal("a listing out of order was walked")
	}
	if _, ok := mergeSorted([]Object{a, a}, nil, nil); ok {
		t.Fatal("a listing with a path twice was walked")
	}
}

// TestPathIndexFindsAsAMapDoes: a listing in path order is searched, any
// other through a map; both find what a map of the listing finds.
func TestPathIndexFindsAsAMapDoes(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for range 2000 {
		var objs []Object
		for i := range rng.IntN(10) {
			if rng.IntN(3) > 0 {
				objs = append(objs, Object{Path: fmt.Sprintf("p%02d", i), Address: fmt.Sprint(rng.IntN(100))})
			}
		}
		if rng.IntN(3) == 0 && len(objs) > 1 {
			objs = append(objs, objs[rng.IntN(len(objs))]) // out of order, or a path twice
			objs[len(objs)-1].Address = "again"
		}
		m := map[string]Object{}
		for _, o := range objs {
			m[o.Path] = o
		}
		x := indexPaths(objs)
		for i := range 11 {
			p := fmt.Sprintf("p%02d", i)
			got, ok := x.get(p)
			want, wantOK := m[p]
			if ok != wantOK || got != want {
				t.Fatalf("%v: %s gives %+v %v, want %+v %v", objs, p, got, ok, want, wantOK)
			}
		}
	}
}

// TestApplySortedIsApplyByPath: the walk derives the listing the maps
// derive, or declines where they decline, on random listings and
// differences (changed, added, removed, naming what is not there).
func TestApplySortedIsApplyByPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for range 5000 {
		var head, sealed []Object
		var diffs []Difference
		for i := range 10 {
			p := fmt.Sprintf("t/p%02d", i)
			if rng.IntN(2) == 0 {
				head = append(head, Object{Path: p, Address: "h" + p})
			}
			if rng.IntN(2) == 0 {
				sealed = append(sealed, Object{Path: p, Address: "s" + p})
			}
			if rng.IntN(3) == 0 {
				diffs = append(diffs, Difference{Path: p, Removed: rng.IntN(3) == 0})
			}
		}
		rng.Shuffle(len(diffs), func(i, j int) { diffs[i], diffs[j] = diffs[j], diffs[i] })
		got, ok, walked := applySorted(head, sealed, diffs)
		want, wantOK := applyByPath(head, sealed, diffs)
		if !walked || ok != wantOK || (ok && !slices.Equal(got, want)) {
			t.Fatalf("head %v\nsealed %v\ndiffs %v\nwalk %v %v %v\nmaps %v %v", head, sealed, diffs, got, ok, walked, want, wantOK)
		}
	}
	a, b := Object{Path: "t/a"}, Object{Path: "t/b"}
	if _, _, walked := applySorted([]Object{b, a}, nil, nil); walked {
		t.Fatal("a head's listing out of order was walked")
	}
	if _, _, walked := applySorted(nil, []Object{a}, []Difference{{Path: "t/a"}, {Path: "t/a", Removed: true}}); walked {
		t.Fatal("a path differing twice was walked")
	}
}

// TestSummaryCacheBounds: the kept summaries stay within their count and
// bytes, the least recently used going first; one over the whole budget
// is not kept; a summary is found only for a set holding its files whole,
// each at the same address and size.
func TestSummaryCacheBounds(t *testing.T) {
	sum := func(bytes int64, paths ...string) *fileSummary {
		s := &fileSummary{bytes: bytes}
		for _, p := range paths {
			s.files = append(s.files, summaryFile{path: p, address: "a-" + p, size: 1})
		}
		return s
	}
	files := func(paths ...string) []summaryFile { return sum(0, paths...).files }
	c := newSummaryCache(2, 1000)
	c.put("k", sum(100, "a"))
	c.put("k", sum(100, "a", "b"))
	if s, held := c.largestWithin("k", files("a", "b", "c")); s == nil || len(s.files) != 2 || !slices.Equal(held, []bool{true, true, false}) {
		t.Fatalf("largest kept within a, b, c: %+v %v", s, held)
	}
	if s, _ := c.largestWithin("other", files("a", "b")); s != nil {
		t.Fatal("a summary found under another key")
	}
	moved := files("a", "b")
	moved[1].address = "elsewhere"
	if s, _ := c.largestWithin("k", moved); s == nil || len(s.files) != 1 {
		t.Fatalf("b at another address: found %+v, want the summary of a alone", s)
	}
	c.put("k", sum(100, "c")) // a was used last: a, b goes
	if s, _ := c.largestWithin("k", files("a", "b")); s == nil || len(s.files) != 1 {
		t.Fatalf("three summaries kept, over the bound of two: found %+v for a, b", s)
	}
	c.put("k", sum(950, "d")) // over the bytes with any other: the rest go
	if c.lru.Len() != 1 || c.bytes > c.maxBytes {
		t.Fatalf("%d summaries of %d bytes kept, over %d bytes", c.lru.Len(), c.bytes, c.maxBytes)
	}
	c.put("k", sum(1001, "e"))
	if s, _ := c.largestWithin("k", files("e")); s != nil {
		t.Fatal("a summary over the whole budget was kept")
	}
}
