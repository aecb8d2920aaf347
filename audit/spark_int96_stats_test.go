package audit

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
)

// sparkInt96Write has PySpark write, with
// spark.sql.parquet.outputTimestampType=INT96, the rows of
// sparkInt96Rows into one file of one row group under each directory
// argv[1:] names (same, then differ): a top-level timestamp ts, a
// struct's st.t and an array's l, all INT96. parquet-mr 1.17.0 claims an
// INT96 leaf's min and max (both pairs) only where they are equal (its
// order is undefined), so the file whose times are all one time claims
// them, and the other does not.
const sparkInt96Write = `import sys, datetime as dt
from pyspark.sql import SparkSession
from pyspark.sql.types import StructType, StructField, IntegerType, TimestampType, ArrayType
s = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC").config("spark.sql.parquet.outputTimestampType", "INT96").getOrCreate()
s.sparkContext.setLogLevel("ERROR")
schema = StructType([StructField("id", IntegerType()), StructField("ts", TimestampType()),
    StructField("st", StructType([StructField("t", TimestampType())])), StructField("l", ArrayType(TimestampType()))])
t1 = dt.datetime(2024, 1, 1, 12, 0, 0)
t2 = dt.datetime(2024, 6, 1, 0, 0, 0, 123456)
same = [(1, t1, (t1,), [t1]), (2, t1, (None,), [t1, None]), (3, None, None, None)]
differ = [(1, t1, (t1,), [t1]), (2, t2, (t2,), [t1, t2]), (3, None, None, None)]
for d, rows in zip(sys.argv[1:], [same, differ]):
    s.createDataFrame(rows, schema).coalesce(1).write.mode("overwrite").parquet(d)
s.stop()
`

// TestSparkNestedInt96TimesPass: PySpark 4.3.0 writing timestamps as
// INT96 (spark.sql.parquet.outputTimestampType=INT96), a top-level one,
// a struct's and an array's, within pandas' range. A row group whose
// INT96 times are all one time claims it as min and max (parquet-mr
// does so where min and max are equal), and claimsHold refused every
// min or max claimed for an INT96 leaf ("a type lakewap does not
// order"): an honest Spark table of one time per row group (a batch of
// one row) was refused. Both files pass, and DuckDB 1.5.6, filtering on
// each column (row groups skipped by the claims), reads the rows
// written.
func TestSparkNestedInt96TimesPass(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Apache Spark; skipped with -short")
	}
	python, err := sparkPython()
	if err != nil {
		t.Skipf("skipped: %v; set LAKEWAP_SPARK_PYTHON (scripts/sparkenv.sh installs PySpark)", err)
	}
	out := t.TempDir()
	dirs := []string{filepath.Join(out, "same"), filepath.Join(out, "differ")}
	runPySpark(t, python, sparkInt96Write, dirs)
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i, d := range dirs {
		parts, err := filepath.Glob(filepath.Join(d, "part-*.parquet"))
		if err != nil || len(parts) != 1 {
			t.Fatalf("%s: %v %v: want one part", d, parts, err)
		}
		b, err := os.ReadFile(parts[0])
		if err != nil {
			t.Fatal(err)
		}
		claimed := sparkInt96Claimed(t, b)
		if want := i == 0; claimed != want {
			t.Fatalf("%s: INT96 min and max claimed %v, want %v: the case shows nothing", filepath.Base(d), claimed, want)
		}
		sparkInt96Audit(t, db, filepath.Base(d), b, false)
	}
}

// sparkInt96Claimed says whether the footer of the Parquet file b claims
// a min or max of an INT96 leaf.
func sparkInt96Claimed(t *testing.T, b []byte) bool {
	t.Helper()
	f := filepath.Join(t.TempDir(), "f.parquet")
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	buf, err := footerBytes(f)
	if err != nil {
		t.Fatal(err)
	}
	leaves, groups, err := decodeFooterClaims(buf)
	if err != nil {
		t.Fatal(err)
	}
	for k, l := range leaves {
		for _, g := range groups {
			c := g.chunks[k]
			if l.physical == ptInt96 && (c.min != nil || c.max != nil || c.minValue != nil || c.maxValue != nil) {
				return true
			}
		}
	}
	return false
}

// sparkInt96Filters are filters on each INT96 column of sparkInt96Write's
// rows and the ids they match as written, in its file same and in differ.
var sparkInt96Filters = []struct{ where, same, differ string }{
	{"ts = TIMESTAMP '2024-01-01 12:00:00'", "1,2", "1"},
	{"ts < TIMESTAMP '2025-01-01'", "1,2", "1,2"},
	{"st.t = TIMESTAMP '2024-01-01 12:00:00'", "1", "1"},
	{"st.t < TIMESTAMP '2025-01-01'", "1", "1,2"},
	{"list_contains(l, TIMESTAMP '2024-01-01 12:00:00')", "1,2", "1,2"},
}

// sparkInt96Audit audits b (sparkInt96Write's file named name) as table
// t's one file under a custom SQL check of its INT96 columns and a
// not_null: refused wants the audit refused, else passed with DuckDB's
// filters reading the rows written.
func sparkInt96Audit(t *testing.T, db *sql.DB, name string, b []byte, refused bool) {
	t.Helper()
	src := oneFileBatch(t, b)
	dst := filepath.Join(src.root, "b1", "t", "part-0.parquet")
	if !refused {
		for _, f := range sparkInt96Filters {
			var ids sql.NullString
			if err := db.QueryRow("SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM read_parquet(" + quoteLiteral(dst) + ") WHERE " + f.where).Scan(&ids); err != nil {
				t.Fatal(err)
			}
			want := f.same
			if name == "differ" {
				want = f.differ
			}
			if ids.String != want {
				t.Errorf("%s: DuckDB reads ids %q WHERE %s, want %s", name, ids.String, f.where, want)
			}
		}
	}
	for _, check := range []Check{
		{Kind: KindSQL, SQL: "SELECT id FROM t WHERE ts < TIMESTAMP '2000-01-01' OR st.t < TIMESTAMP '2000-01-01' OR list_min(l) < TIMESTAMP '2000-01-01'"},
		{Kind: KindNotNull, Column: "id"},
	} {
		check.Name, check.Table = "c", "t"
		rep, err := newEngine(t, src, "").Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
			Suite: Suite{Tables: []Table{{Name: "t", Path: "t/", Format: FormatParquet}}, Checks: []Check{check}}})
		if err != nil {
			t.Fatal(err)
		}
		res := rep.Checks[0]
		if rep.Passed == refused {
			t.Errorf("%s, %s: %s %q; want refused %v", name, check.Kind, res.Status, res.Message, refused)
		} else if refused {
			t.Logf("refused: %s", res.Message)
		}
	}
}
