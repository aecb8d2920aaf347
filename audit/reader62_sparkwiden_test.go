package audit

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// Review 62: Spark reads a Parquet table by one file's schema (its
// default, mergeSchema off: PySpark 4.3.0 took the first file by name),
// and reads another file's INT32 leaf under that file's long or double by
// its raw signed integer, whatever its annotation: a DECIMAL(9,1) 4.0
// beside a BIGINT first is 40 (either reader), 4.5 beside a DOUBLE first
// 45.0, a UINT_32 4294967295 beside a DOUBLE first -1.0. DuckDB reads the
// files together in their union's type (4.0, 4.5, 4294967295), and
// pandas in the first file's (4, 4.5, 4294967295.0). The two files' leaves
// are of other physical types (INT32 beside INT64 or DOUBLE), which
// sparkIntsApart did not compare: a range of 0 to 10 and a custom query
// passed where Spark reads 40, 45.0 and -1.0.

// TestReader62SparkReadsAnInt32LeafByAWiderFilesType: part-0.parquet
// gives x (or a struct's field s.x) one type, part-1.parquet another.
// Refused, naming both files, the column and both Spark types, where
// Spark reads part-1's value otherwise; an INT32 integer (or a DECIMAL of
// scale 0) beside a BIGINT or a DOUBLE reads alike and passes.
func TestReader62SparkReadsAnInt32LeafByAWiderFilesType(t *testing.T) {
	cases := []struct {
		name, first, second string
		check               Check
		refused             bool
		spark               string // x (or s.x) by Spark, mergeSchema off, sorted
	}{
		{"bigint_then_decimal", "3::BIGINT", "4.0::DECIMAL(9,1)", Check{Kind: KindRange, Column: "x", Min: f64(0), Max: f64(10)}, true, "3 | 40"},
		{"double_then_decimal", "3.5::DOUBLE", "4.5::DECIMAL(9,1)", Check{Kind: KindRange, Column: "x", Min: f64(0), Max: f64(10)}, true, "3.5 | 45.0"},
		{"double_then_uinteger", "3.0::DOUBLE", "4294967295::UINTEGER", Check{Kind: KindRange, Column: "x", Min: f64(0)}, true, "-1.0 | 3.0"},
		{"struct_bigint_then_decimal", "{'x': 3::BIGINT}", "{'x': 4.0::DECIMAL(9,1)}", Check{Kind: KindSQL, SQL: `SELECT * FROM "t" WHERE "x".x > 10`}, true, "3 | 40"},
		{"bigint_then_integer", "3::BIGINT", "4::INTEGER", Check{Kind: KindRange, Column: "x", Min: f64(0), Max: f64(10)}, false, "3 | 4"},
		{"bigint_then_uinteger", "3::BIGINT", "4294967295::UINTEGER", Check{Kind: KindRange, Column: "x", Min: f64(0)}, false, "3 | 4294967295"},
		{"double_then_integer", "3.0::DOUBLE", "4::INTEGER", Check{Kind: KindRange, Column: "x", Min: f64(0), Max: f64(10)}, false, "3.0 | 4.0"},
		{"bigint_then_decimal_scale_0", "3::BIGINT", "4::DECIMAL(9,0)", Check{Kind: KindRange, Column: "x", Min: f64(0), Max: f64(10)}, false, "3 | 4"},
	}
	dirs := map[string]string{}
	for _, c := range cases {
		src := newBatchSource(t) // the parent's: Spark reads it after the subtests
		src.write(t, "b1", "t/part-0.parquet", "SELECT "+c.first+" AS x")
		src.write(t, "b1", "t/part-1.parquet", "SELECT "+c.second+" AS x")
		dirs[c.name] = filepath.Join(src.root, "b1", "t")
		t.Run(c.name, func(t *testing.T) {
			rep, res := review39Audit(t, src, c.check)
			if !c.refused {
				if !rep.Passed {
					t.Fatalf("%s %q; Spark reads part-1 as DuckDB does: want it passed", res.Status, res.Message)
				}
				return
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "t/part-0.parquet") ||
				!strings.Contains(res.Message, "t/part-1.parquet") || !strings.Contains(res.Message, `column "x"`) {
				t.Fatalf("passed=%v %s %q (%s); Spark reads part-1's value otherwise: want it refused naming both files and the column", rep.Passed, res.Status, res.Message, res.Observed)
			}
			t.Logf("refused: %s", res.Message)
		})
	}
	if testing.Short() {
		return
	}
	python, err := sparkPython()
	if err != nil {
		t.Logf("Spark's reading skipped: %v; set LAKEWAP_SPARK_PYTHON (scripts/sparkenv.sh installs PySpark)", err)
		return
	}
	want := map[string]string{}
	var args []string
	for _, c := range cases {
		want[c.name] = c.spark
		args = append(args, c.name+"="+dirs[c.name])
	}
	const read = `import sys
from pyspark.sql import SparkSession
s = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
s.sparkContext.setLogLevel("OFF")
for vec in ["true", "false"]:
    s.conf.set("spark.sql.parquet.enableVectorizedReader", vec)
    for a in sys.argv[1:]:
        name, path = a.split("=", 1)
        df = s.read.parquet(path)
        col = "x.x" if dict(df.dtypes)["x"].startswith("struct") else "x"
        vals = sorted(str(r[0]) for r in df.select(col).collect())
        print(vec + "\t" + name + "\t" + " | ".join(vals))
s.stop()
`
	out, _ := runPySpark(t, python, read, args)
	sparkReadingsAre(t, out, want, "vectorized", 2)
}

// TestReader62SparkWidenedLeavesAreAuditedWhole: the attack of
// TestReader62SparkReadsAnInt32LeafByAWiderFilesType by a batch onto main
// whose attestation lets it be audited incrementally: a batch writing x as
// DECIMAL(9,1) 4.0 beside main's BIGINT file (Spark, by main's file first,
// reads 40), and a batch writing a BIGINT file that sorts before main's
// DECIMAL(9,1) file. The batch's files alone read alike to every reader;
// the audit runs full (the files give x two types) and refuses the table,
// naming both files.
func TestReader62SparkWidenedLeavesAreAuditedWhole(t *testing.T) {
	for _, c := range []struct {
		name, mainValue, batchPath, batchValue string
	}{
		{"decimal_after_main_bigint", "3::BIGINT", "data/t/part-b.parquet", "4.0::DECIMAL(9,1)"},
		{"bigint_before_main_decimal", "4.0::DECIMAL(9,1)", "data/t/a.parquet", "3::BIGINT"},
	} {
		t.Run(c.name, func(t *testing.T) {
			suite := Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: []Check{{Name: "r", Kind: KindRange, Table: "t", Column: "x", Min: f64(0), Max: f64(10)}}}
			audit := attestedBatches(t, suite, "SELECT "+c.mainValue+" AS x")
			// A first batch of main's type: passed, and attested.
			if rep := audit("data/t/part-?.parquet", "SELECT "+c.mainValue+" AS x"); !rep.Passed {
				t.Fatalf("a batch of main's type: %s %q", rep.Checks[0].Status, rep.Checks[0].Message)
			}
			rep := audit(c.batchPath, "SELECT "+c.batchValue+" AS x")
			res := rep.Checks[0]
			if rep.Passed || rep.Mode != ModeFull || res.Status != schemas.StatusError || !strings.Contains(res.Message, "(an INT32) and long in file") {
				t.Fatalf("passed=%v %s (%q) %s %q: want the table refused by a full audit", rep.Passed, rep.Mode, rep.ModeReason, res.Status, res.Message)
			}
			t.Logf("%s (%s): %s", rep.Mode, rep.ModeReason, res.Message)
		})
	}
}
