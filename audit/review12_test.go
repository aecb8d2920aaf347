package audit

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// TestReview12MostlyUniqueOverPandasFloatIsRefused: a unique check with
// mostly passes with some duplicates, so pandasFloat must not wait for
// none. 100 ids 2^60+i beside a NULL and one duplicate of 1: DuckDB counts
// 1 duplicate of 102 values (99% unique, mostly 0.9 passes); pandas reads
// the column as float64, where the 100 ids are 256 apart at most one value
// apart, and counts 100 duplicates of 102. Before the fix the judge looked
// at pandas' reading only when DuckDB counted no duplicate, and passed it.
func TestReview12MostlyUniqueOverPandasFloatIsRefused(t *testing.T) {
	src := newDirSource(t)
	src.write(t, "b1", "t/a.parquet", "SELECT * FROM (SELECT (1152921504606846976 + i)::BIGINT AS id FROM range(100) r(i) UNION ALL SELECT * FROM (VALUES (NULL::BIGINT), (1), (1)))")
	if python, err := testPython(); err != nil {
		t.Logf("pandas not run (%v)", err)
	} else if !testing.Short() {
		a := runPandas(t, python, []string{"parquet:id:" + filepath.Join(src.root, "b1", "t")})[0]
		if a.Dtype != "float64" || a.Duplicates < 50 {
			t.Fatalf("pandas reads %s with %d duplicates: the case shows nothing", a.Dtype, a.Duplicates)
		}
	}
	mostly := 0.9
	bitmap, hashed, grouped := newEngine(t, src, ""), newEngine(t, src, ""), newEngine(t, src, "")
	hashed.bitmapUniqueBytes = 1 << 62
	grouped.bitmapUniqueBytes, grouped.groupedUniqueBytes = 1<<62, 0
	for name, e := range map[string]*Engine{"bitmap": bitmap, "hashed": hashed, "grouped": grouped} {
		rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
			Suite: Suite{Tables: []Table{{Name: "t", Path: "t/", Format: FormatParquet}},
				Checks: []Check{{Kind: KindUnique, Table: "t", Column: "id", Mostly: &mostly}}}})
		if err != nil {
			t.Fatal(err)
		}
		res := rep.Checks[0]
		if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "pandas reads") {
			t.Errorf("%s: unique(id, mostly 0.9) %s %q; pandas counts 100 duplicates of 102: want it refused", name, res.Status, res.Message)
		}
	}
}
