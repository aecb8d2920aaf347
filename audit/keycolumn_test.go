package audit

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestKeyColumnFoldedEqualsFresh: a summary's key column folded from a
// kept summary's (the kept files held in order, the gained ones read from
// their statistics) equals the one read from every file's statistics,
// over random files of integer, text and unparsable figures.
func TestKeyColumnFoldedEqualsFresh(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	types := []string{"BIGINT", "INTEGER", "VARCHAR", "HUGEINT", "DOUBLE"}
	stat := func() fileStats {
		typ := types[rng.IntN(len(types))]
		lo, hi := rng.Int64N(1000)-500, rng.Int64N(1000)
		cs := colStats{Type: typ, NonNull: rng.Int64N(3), Min: fmt.Sprint(lo), Max: fmt.Sprint(lo + hi)}
		switch rng.IntN(6) {
		case 0:
			cs.Min = "" // too long to store
		case 1:
			cs.Max = "170141183460469231731687303715884105727" // beyond int64
		}
		return fileStats{Rows: 2 + rng.Int64N(5), Cols: map[string]colStats{"id": cs}}
	}
	for round := range 200 {
		n := rng.IntN(12)
		stats := make([]fileStats, n)
		held := make([]bool, n)
		var kept []fileStats
		for i := range stats {
			stats[i] = stat()
			if rng.IntN(3) > 0 {
				held[i] = true
				kept = append(kept, stats[i])
			}
		}
		prev := keyColumnOf("id", kept, nil, nil)
		folded := keyColumnOf("id", stats, prev, held)
		fresh := keyColumnOf("id", stats, nil, nil)
		if !reflect.DeepEqual(folded.files, fresh.files) || folded.nonNull != fresh.nonNull || folded.wide != fresh.wide || !reflect.DeepEqual(folded.types, fresh.types) ||
			fmt.Sprint(folded.ints.lo, folded.ints.hi) != fmt.Sprint(fresh.ints.lo, fresh.ints.hi) {
			t.Fatalf("round %d: folded %+v, fresh %+v", round, folded, fresh)
		}
		// What uniqueIncremental took from the statistics file by file.
		var nonNull int64
		var in intRange
		wide := ""
		for i, st := range stats {
			cs := st.Cols["id"]
			nonNull += cs.NonNull
			if integerType(cs.Type) {
				in.add(cs.Min, cs.Max)
				wide = cs.Type
			}
			for range 8 {
				typ := types[rng.IntN(len(types))]
				lo, hi := fmt.Sprint(rng.Int64N(1000)-500), fmt.Sprint(rng.Int64N(1000))
				switch rng.IntN(6) {
				case 0:
					lo = ""
				case 1:
					hi = "x"
				}
				if got, want := fresh.files[i].meets(newBatchRange(typ, lo, hi)), rangesMeet(typ, lo, hi, cs); got != want {
					t.Fatalf("round %d file %d (%+v): meets %s [%s, %s] %v, rangesMeet %v", round, i, cs, typ, lo, hi, got, want)
				}
			}
		}
		if nonNull != fresh.nonNull || wide != fresh.wide || fmt.Sprint(in.lo, in.hi) != fmt.Sprint(fresh.ints.lo, fresh.ints.hi) {
			t.Fatalf("round %d: from the statistics %d %s %v..%v, key column %d %s %v..%v", round, nonNull, wide, in.lo, in.hi,
				fresh.nonNull, fresh.wide, fresh.ints.lo, fresh.ints.hi)
		}
	}
}

// TestSamePartitionKeysIsPartitionKeys: samePartitionKeys(dir, k) is
// partitionKeys(dir) == k over random folders and keys.
func TestSamePartitionKeysIsPartitionKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	segs := []string{"a=1", "b=2", "ab=3", "x", "=5", "a=", "", "b", "a=b=c", "c=1"}
	dir := func() string {
		var d string
		for range rng.IntN(5) {
			d += segs[rng.IntN(len(segs))] + "/"
		}
		return d
	}
	for range 5000 {
		d, e := dir(), dir()
		k := partitionKeys(e)
		if rng.IntN(4) == 0 {
			k = partitionKeys(d)
		}
		if got, want := samePartitionKeys(d, k), partitionKeys(d) == k; got != want {
			t.Fatalf("samePartitionKeys(%q, %q) = %v, partitionKeys gives %q", d, k, got, partitionKeys(d))
		}
	}
}

// TestTableFilesSkipsHiddenParts: a file under a part starting with "_"
// or "." (Spark's and Hive's hidden files) is no table data, wherever the
// part is; a name that only holds one is.
func TestTableFilesSkipsHiddenParts(t *testing.T) {
	objs := []Object{{Path: "t/a.parquet", Size: 1}, {Path: "t/_SUCCESS", Size: 1}, {Path: "t/x=1/_tmp/a.parquet", Size: 1},
		{Path: "t/x=1/.a.parquet.crc", Size: 1}, {Path: "t/x_1/a.parquet", Size: 1}, {Path: "t/x.1/b_.parquet", Size: 1},
		{Path: "t/_delta_log/0.json", Size: 1}, {Path: "t/b.parquet._COPYING_", Size: 1}, {Path: "t/e.parquet"}}
	var got []string
	for _, o := range tableFiles("t/", objs) {
		got = append(got, o.Path)
	}
	if want := []string{"t/a.parquet", "t/x_1/a.parquet", "t/x.1/b_.parquet"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("table files %v, want %v", got, want)
	}
}

// TestStatsStoreInternsSchemas: records of one schema held in memory share
// it (schemaDisagreement tells them alike at once), equal by value to
// what was put; another schema stays its own.
func TestStatsStoreInternsSchemas(t *testing.T) {
	s, err := NewStatsStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	schema := func(typ string) [][2]string { return [][2]string{{"id", "BIGINT"}, {"v", typ}} }
	for i, typ := range []string{"DOUBLE", "DOUBLE", "VARCHAR"} {
		if err := s.put(fmt.Sprint("k", i), fileStats{Rows: 1, Schema: schema(typ)}); err != nil {
			t.Fatal(err)
		}
	}
	a, _ := s.get("k0")
	b, _ := s.get("k1")
	c, _ := s.get("k2")
	if !reflect.DeepEqual(a.Schema, schema("DOUBLE")) || !reflect.DeepEqual(c.Schema, schema("VARCHAR")) {
		t.Fatalf("schemas %v, %v", a.Schema, c.Schema)
	}
	if &a.Schema[0] != &b.Schema[0] {
		t.Fatal("two records of one schema hold two copies of it")
	}
	if sameSchema(a.Schema, c.Schema) || !sameSchema(a.Schema, schema("DOUBLE")) {
		t.Fatal("sameSchema tells schemas apart otherwise than their values")
	}
}

// TestListingCacheTableFilesCounted: a kept listing's table files are
// tableFiles of it, the listing itself when it keeps every object, else a
// slice of their own counted against the cache's bound until evicted.
func TestListingCacheTableFilesCounted(t *testing.T) {
	c := newListingCache(100)
	plain := []Object{{Path: "t/a.parquet", Size: 1}, {Path: "t/b.parquet", Size: 1}}
	hidden := []Object{{Path: "t/_SUCCESS", Size: 1}, {Path: "t/a.parquet", Size: 1}}
	c.put("r", "c1", "t/", plain)
	c.put("r", "c2", "t/", hidden)
	if c.objects != 4 {
		t.Fatalf("%d objects kept, want 4", c.objects)
	}
	got1, ok1 := c.tableFiles("r", "c1", "t/")
	got2, ok2 := c.tableFiles("r", "c2", "t/")
	if !ok1 || !ok2 || !reflect.DeepEqual(got1, tableFiles("t/", plain)) || !reflect.DeepEqual(got2, tableFiles("t/", hidden)) {
		t.Fatalf("table files %v %v", got1, got2)
	}
	if c.objects != 5 {
		t.Fatalf("%d objects kept after the table files, want 5 (c2's one table file its own)", c.objects)
	}
	if _, ok := c.tableFiles("r", "c3", "t/"); ok {
		t.Fatal("table files of a listing not kept")
	}
	c.put("r", "c2", "t/", plain) // replaced
	c.put("r", "c1", "t/", plain)
	if c.objects != 4 {
		t.Fatalf("%d objects kept after replacing the listings, want 4", c.objects)
	}
}
