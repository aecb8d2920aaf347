package audit

import (
	"path/filepath"
	"testing"
)

// TestNotNullFailsNaN: a NaN in a Parquet float column is a value to
// DuckDB, pyarrow, Spark and delta-rs, and missing to pandas (isna, and so
// to Great Expectations' pandas not_null and a pandas user's
// notna().all()). The two readings of the column differ, so not_null
// takes the stricter one: a NaN fails it, as NULL does. Text spelling
// NaN, infinities, nested floats and columns of other types are values to
// every reader and pass.
func TestNotNullFailsNaN(t *testing.T) {
	cases := []struct {
		name, q string
		check   Check
		passes  bool
	}{
		{"double_nan", "SELECT * FROM (VALUES (1.0::DOUBLE), ('nan'::DOUBLE)) v(x)", Check{Kind: KindNotNull, Column: "x"}, false},
		{"float_nan", "SELECT * FROM (VALUES (1.0::FLOAT), ('nan'::FLOAT)) v(x)", Check{Kind: KindNotNull, Column: "x"}, false},
		{"negative_nan", "SELECT -('nan'::DOUBLE) AS x", Check{Kind: KindNotNull, Column: "x"}, false},
		{"second_column_nan", "SELECT 1 AS a, 'nan'::DOUBLE AS x", Check{Kind: KindNotNull, Columns: []string{"a", "x"}}, false},
		{"nan_under_where", "SELECT * FROM (VALUES (1, 1.0::DOUBLE), (2, 'nan'::DOUBLE)) v(k, x)", Check{Kind: KindNotNull, Column: "x", Where: "k = 2"}, false},
		{"nan_beyond_mostly", "SELECT CASE WHEN i = 0 THEN 'nan'::DOUBLE ELSE i END AS x FROM range(4) r(i)", Check{Kind: KindNotNull, Column: "x", Mostly: f64(0.9)}, false},
		{"nan_within_mostly", "SELECT CASE WHEN i = 0 THEN 'nan'::DOUBLE ELSE i END AS x FROM range(20) r(i)", Check{Kind: KindNotNull, Column: "x", Mostly: f64(0.9)}, true},
		{"nan_where_excludes", "SELECT * FROM (VALUES (1, 1.0::DOUBLE), (2, 'nan'::DOUBLE)) v(k, x)", Check{Kind: KindNotNull, Column: "x", Where: "k = 1"}, true},
		{"infinity", "SELECT * FROM (VALUES ('inf'::DOUBLE), ('-inf'::DOUBLE)) v(x)", Check{Kind: KindNotNull, Column: "x"}, true},
		{"text_nan", "SELECT 'NaN' AS x", Check{Kind: KindNotNull, Column: "x"}, true},
		{"list_of_nan", "SELECT ['nan'::DOUBLE] AS x", Check{Kind: KindNotNull, Column: "x"}, true},
		{"struct_of_nan", "SELECT {'v': 'nan'::DOUBLE} AS x", Check{Kind: KindNotNull, Column: "x"}, true},
		{"bigint", "SELECT i AS x FROM range(3) r(i)", Check{Kind: KindNotNull, Column: "x"}, true},
		{"decimal", "SELECT 1.5::DECIMAL(4,1) AS x", Check{Kind: KindNotNull, Column: "x"}, true},
	}
	src := newBatchSource(t)
	for _, c := range cases {
		src.write(t, "b1", c.name+"/a.parquet", c.q)
	}
	for _, cache := range []string{"", filepath.Join(t.TempDir(), "cache")} {
		e := newEngine(t, src, cache)
		for _, c := range cases {
			rep := auditTableAt(t, e, c.name+"/", FormatParquet, c.check)
			got := rep.Checks[0]
			if rep.Passed != c.passes {
				t.Errorf("cache %v, %s: passed %v (%s %s), want %v", cache != "", c.name, rep.Passed, got.Observed, got.Message, c.passes)
			}
			if !c.passes && len(got.SampleRows) == 0 && c.check.Mostly == nil {
				t.Errorf("cache %v, %s: failed without sample rows (%s)", cache != "", c.name, got.Observed)
			}
		}
	}
}
