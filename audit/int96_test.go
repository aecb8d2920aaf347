package audit

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInt96OutsidePandasRangeIsRefused (review 5): pyarrow and pandas read
// a Parquet INT96 time in nanoseconds, so one before 1677-09-21 wraps
// around: testdata/int96_wraps.parquet (written by pyarrow 26.0.1 with
// use_deprecated_int96_timestamps, as Spark writes timestamps by default)
// holds 1500-01-01 and 2025-05-31, which pandas reads as 2084-07-20 and
// 2025-05-31. DuckDB reads 1500-01-01, so freshness passed (newest
// 2025-05-31) on a table pandas reads as dated 59 years ahead. The audit
// must refuse the file, naming it and the column; INT96 times pandas reads
// as written (int96_in_range.parquet) pass, with and without the memo.
func TestInt96OutsidePandasRangeIsRefused(t *testing.T) {
	for _, c := range []struct {
		file   string
		passes bool
	}{{"int96_wraps.parquet", false}, {"int96_in_range.parquet", true}} {
		b, err := os.ReadFile(filepath.Join("testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		src := oneFileBatch(t, b)
		for _, cache := range []string{"", filepath.Join(t.TempDir(), "cache")} {
			e := newEngine(t, src, cache)
			for range 2 { // the second run of an engine with a cache may take the memo
				rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
					Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{{Name: "fresh", Kind: KindFreshness, Table: "t", Column: "ts", MaxAge: "48h"}}}})
				if err != nil {
					t.Fatal(err)
				}
				got := rep.Checks[0]
				if rep.Passed != c.passes || (!c.passes && !strings.Contains(got.Message, "t/part-0.parquet")) {
					t.Errorf("%s, cache %v: passed %v (%s %s), want %v, naming the file", c.file, cache != "", rep.Passed, got.Observed, got.Message, c.passes)
				}
			}
		}
	}
}
