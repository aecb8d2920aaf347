package audit

import (
	"path/filepath"
	"testing"
)

// TestNaNIsInNoRange (review 5): a NaN in a DOUBLE column is within no
// bounds. DuckDB orders NaN above every number, so range failed it only
// where a max was set, and stat judged a NaN min or max in Go, where every
// comparison with NaN is false: range with only a min, and stat max with
// a max, passed a column holding NaN, which pandas and pyarrow (NaN
// compares false, so x >= 0 does not hold) read as out of range. The
// controls (+inf above a min, NaN in a column a check does not bound)
// pass.
func TestNaNIsInNoRange(t *testing.T) {
	zero, ten := 0.0, 10.0
	withNaN := "SELECT * FROM (VALUES (1.0::DOUBLE), ('nan'::DOUBLE), (NULL)) v(x)"
	cases := []struct {
		name, q string
		check   Check
		passes  bool
	}{
		{"range_min", withNaN, Check{Kind: KindRange, Column: "x", Min: &zero}, false},
		{"range_strict_min", withNaN, Check{Kind: KindRange, Column: "x", Min: &zero, StrictMin: true}, false},
		{"range_max", withNaN, Check{Kind: KindRange, Column: "x", Max: &ten}, false},
		{"range_float", "SELECT * FROM (VALUES (1.0::FLOAT), ('nan'::FLOAT)) v(x)", Check{Kind: KindRange, Column: "x", Min: &zero}, false},
		{"stat_max", withNaN, Check{Kind: KindStat, Column: "x", Stat: StatMax, Max: &ten}, false},
		{"stat_max_above_min", withNaN, Check{Kind: KindStat, Column: "x", Stat: StatMax, Min: &zero}, false},
		{"stat_min_all_nan", "SELECT 'nan'::DOUBLE AS x", Check{Kind: KindStat, Column: "x", Stat: StatMin, Min: &zero}, false},
		{"range_inf_above_min", "SELECT * FROM (VALUES (1.0::DOUBLE), ('inf'::DOUBLE)) v(x)", Check{Kind: KindRange, Column: "x", Min: &zero}, true},
		{"range_bigint_min", "SELECT i AS x FROM range(1, 5) r(i)", Check{Kind: KindRange, Column: "x", Min: &zero}, true},
		{"range_decimal_min", "SELECT 1.5::DECIMAL(4,1) AS x", Check{Kind: KindRange, Column: "x", Min: &zero}, true},
		{"stat_min_beside_nan", withNaN, Check{Kind: KindStat, Column: "x", Stat: StatMin, Min: &zero, Max: &ten}, true},
	}
	src := newBatchSource(t)
	for _, c := range cases {
		src.write(t, "b1", c.name+"/a.parquet", c.q)
	}
	for _, cache := range []string{"", filepath.Join(t.TempDir(), "cache")} {
		e := newEngine(t, src, cache)
		for _, c := range cases {
			rep := auditTableAt(t, e, c.name+"/", FormatParquet, c.check)
			if got := rep.Checks[0]; rep.Passed != c.passes {
				t.Errorf("cache %v, %s: passed %v (%s %s), want %v", cache != "", c.name, rep.Passed, got.Observed, got.Message, c.passes)
			}
		}
	}
}
