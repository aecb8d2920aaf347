package audit

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// TestReview55NestedInt96OutsidePandasRangeIsRefused: an INT96 time inside
// a struct or a list (Spark writes every timestamp as INT96 by default, its
// structs' and arrays' too) is read by DuckDB 1.5.6 as written and by
// pyarrow 26.0.1 and pandas 3.1.1 in 64 bits of nanoseconds, wrapped: the
// struct field st.t of 2500-01-01 read 1915-06-14 00:25:26.290448384 to
// pandas, the list element 1500-06-01 2084-12-18 23:34:33.709551616.
// int96Range and int96Days looked at top-level INT96 columns only, so a
// custom SQL check finding no time before 2000 in st.t (or after 2050 in
// l) passed where pandas finds a row failing. Such a file is now refused,
// naming the file and the leaf, under any check, as a top-level column is;
// nested INT96 times within pandas' range pass.
// review55_int96_*.parquet were written by pyarrow 26.0.1
// (use_deprecated_int96_timestamps, snappy).
func TestReview55NestedInt96OutsidePandasRangeIsRefused(t *testing.T) {
	if python, err := testPython(); err == nil && !testing.Short() {
		const read = `import sys, pandas as pd
for f in sys.argv[1:]:
    df = pd.read_parquet(f)
    col = "st" if "st" in df.columns else "l"
    vals = [str(pd.Timestamp(v["t"])) for v in df[col]] if col == "st" else [str(pd.Timestamp(x)) for v in df[col] for x in v]
    print(" | ".join(vals))`
		var args []string
		for _, f := range []string{"review55_int96_struct_wraps.parquet", "review55_int96_list_wraps.parquet"} {
			args = append(args, filepath.Join("testdata", f))
		}
		out, err := exec.Command(python, append([]string{"-c", read}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("pandas: %v: %s", err, out)
		}
		want := "1915-06-14 00:25:26.290448384 | 2024-01-01 00:00:00\n2024-01-01 00:00:00 | 2084-12-18 23:34:33.709551616 | 2024-01-02 00:00:00"
		if got := strings.TrimSpace(string(out)); got != want {
			t.Fatalf("pandas reads\n%s\nwant\n%s\nthe case shows nothing", got, want)
		}
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, c := range []struct {
		file, duck, query string
		refused           bool
		leaf              string
	}{
		{"review55_int96_struct_wraps.parquet", "SELECT CAST(max(st.t) AS VARCHAR) FROM read_parquet(?)",
			"SELECT id FROM t WHERE st.t < TIMESTAMP '2000-01-01'", true, `"st.t"`},
		{"review55_int96_list_wraps.parquet", "SELECT CAST(min(list_min(l)) AS VARCHAR) FROM read_parquet(?)",
			"SELECT id FROM t WHERE list_max(l) > TIMESTAMP '2050-01-01'", true, `"l.list.element"`},
		{"review55_int96_nested_in_range.parquet", "SELECT CAST(min(st.t) AS VARCHAR) FROM read_parquet(?)",
			"SELECT id FROM t WHERE st.t < TIMESTAMP '1900-01-01' OR list_max(l) > TIMESTAMP '2050-01-01' OR m['k'] > TIMESTAMP '2050-01-01'", false, ""},
	} {
		src, dst := review36File(t, c.file)
		var duck string
		if err := db.QueryRow(c.duck, dst).Scan(&duck); err != nil {
			t.Fatal(err)
		}
		if c.refused && duck != "2500-01-01 00:00:00" && duck != "1500-06-01 00:00:00" {
			t.Fatalf("%s: DuckDB reads %s: the case shows nothing", c.file, duck)
		}
		for _, check := range []Check{{Kind: KindSQL, SQL: c.query}, {Kind: KindNotNull, Column: "id"}} {
			check.Name, check.Table = "c", "t"
			rep, err := newEngine(t, src, "").Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
				Suite: Suite{Tables: []Table{{Name: "t", Path: "t/", Format: FormatParquet}}, Checks: []Check{check}}})
			if err != nil {
				t.Fatal(err)
			}
			res := rep.Checks[0]
			if !c.refused {
				if !rep.Passed {
					t.Errorf("%s, %s: %s %q; nested INT96 times within pandas' range read alike: want it passed", c.file, check.Kind, res.Status, res.Message)
				}
				continue
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "a.parquet") || !strings.Contains(res.Message, c.leaf) || !strings.Contains(res.Message, "Julian day") {
				t.Errorf("%s, %s: %s %q; pandas reads the time otherwise: want it refused naming the file, the leaf %s and the day", c.file, check.Kind, res.Status, res.Message, c.leaf)
				continue
			}
			t.Logf("refused: %s", res.Message)
		}
	}
}

// TestReview55NestedInt96ThatCannotBeReadIsRefused: a nested INT96 leaf
// whose pages the Go reader cannot read (here a codec it does not decode,
// LZO, forged into the footer of review55_int96_struct_wraps.parquet) is
// looked into by nothing else: no scan reads nested leaves. Its file is
// refused, naming the leaf, where a not_null of id, which DuckDB reads
// without st, passed.
func TestReview55NestedInt96ThatCannotBeReadIsRefused(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "review55_int96_struct_wraps.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	// st.t's ColumnMetaData: path_in_schema ["st", "t"], then codec
	// SNAPPY (1, zigzag 2), made LZO (3, zigzag 6).
	pat := []byte("\x28\x02st\x01t\x15\x02")
	if bytes.Count(b, pat) != 1 {
		t.Fatal("st.t's codec not found in the footer")
	}
	b = bytes.Replace(b, pat, append(pat[:len(pat)-1:len(pat)-1], 0x06), 1)
	src, dst := review36File(t, "review55_int96_struct_wraps.parquet")
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := newEngine(t, src, "").Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
		Suite: Suite{Tables: []Table{{Name: "t", Path: "t/", Format: FormatParquet}}, Checks: []Check{{Name: "c", Table: "t", Kind: KindNotNull, Column: "id"}}}})
	if err != nil {
		t.Fatal(err)
	}
	res := rep.Checks[0]
	if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "a.parquet") || !strings.Contains(res.Message, `"st.t"`) {
		t.Fatalf("%s %q: want the file refused naming the leaf", res.Status, res.Message)
	}
	t.Logf("refused: %s", res.Message)
}

// TestReview55SparkSchemaOfAParquetFileIsReadAsSparkReadsIt: Spark reads a
// Parquet file by the Spark schema of its key-value metadata
// (org.apache.spark.sql.parquet.row.metadata), which its writer controls.
// review55_spark_schema_*.parquet were written by pyarrow 26.0.1 with such
// a schema: PySpark 4.3.0 (spark.read.parquet, parquet-mr's reader) read
// the plain INT32 b of 300 and 44 said to be a byte as 44 and 44, s of
// 70000 said to be a short as 4464, d of 19723 said to be a date as
// 2024-01-01, the UINT_32 u of 4294967295 said to be an integer as -1,
// where DuckDB, pyarrow and pandas read the numbers: a unique of b and of
// s, and a range of u of at least 0, passed where Spark finds them failing.
// Now refused, naming the file, the column and both types; a schema
// stating the types Spark reads the Parquet types as passes.
func TestReview55SparkSchemaOfAParquetFileIsReadAsSparkReadsIt(t *testing.T) {
	zero := 0.0
	for _, c := range []struct {
		file, col string
		check     Check
		refused   bool
	}{
		{"review55_spark_schema_byte.parquet", "b", Check{Kind: KindUnique, Column: "b"}, true},
		{"review55_spark_schema_short.parquet", "s", Check{Kind: KindUnique, Column: "s"}, true},
		{"review55_spark_schema_date.parquet", "d", Check{Kind: KindNotNull, Column: "d"}, true},
		{"review55_spark_schema_unsigned.parquet", "u", Check{Kind: KindRange, Column: "u", Min: &zero}, true},
		{"review55_spark_schema_honest.parquet", "", Check{Kind: KindUnique, Column: "b"}, false},
		{"review55_spark_schema_honest.parquet", "", Check{Kind: KindRange, Column: "u", Min: &zero}, false},
		// PySpark 4.3.0's own file (every primitive, a struct, a list, a
		// map; timestamps as TIMESTAMP_MICROS).
		{"review55_spark_written_micros.parquet", "", Check{Kind: KindUnique, Column: "sh"}, false},
	} {
		src, _ := review36File(t, c.file)
		check := c.check
		check.Name, check.Table = "c", "t"
		rep, err := newEngine(t, src, "").Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
			Suite: Suite{Tables: []Table{{Name: "t", Path: "t/", Format: FormatParquet}}, Checks: []Check{check}}})
		if err != nil {
			t.Fatal(err)
		}
		res := rep.Checks[0]
		if !c.refused {
			if !rep.Passed {
				t.Errorf("%s, %s: %s %q; its Spark schema states the types Spark reads its Parquet types as: want it passed", c.file, check.Kind, res.Status, res.Message)
			}
			continue
		}
		if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "a.parquet") || !strings.Contains(res.Message, `column "`+c.col+`"`) || !strings.Contains(res.Message, "Spark") {
			t.Errorf("%s, %s: %s %q; Spark reads the column otherwise: want it refused naming the file and the column", c.file, check.Kind, res.Status, res.Message)
			continue
		}
		t.Logf("refused: %s", res.Message)
	}
}

// TestReview55SparkReadings: PySpark 4.3.0's readings the review 55 tests
// cite, with both Parquet readers: the Spark schema's types over the
// Parquet ones, and nested INT96 times as written.
func TestReview55SparkReadings(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Apache Spark; skipped with -short")
	}
	python, err := sparkPython()
	if err != nil {
		t.Skipf("skipped: %v; set LAKEWAP_SPARK_PYTHON (scripts/sparkenv.sh installs PySpark)", err)
	}
	want := map[string]string{
		"review55_spark_schema_byte.parquet":     "44 | 44",
		"review55_spark_schema_short.parquet":    "4464 | 4464",
		"review55_spark_schema_date.parquet":     "2024-01-01 | 1970-01-06",
		"review55_spark_schema_unsigned.parquet": "-1 | 1",
		"review55_spark_schema_honest.parquet":   "4294967295 | 1",
		"review55_int96_struct_wraps.parquet":    "2500-01-01 00:00:00 | 2024-01-01 00:00:00",
		"review55_int96_list_wraps.parquet":      "[2024-01-01 00:00:00] | [1500-06-01 00:00:00, 2024-01-02 00:00:00]",
		// Review 58: the INT32 column "i̇d" of 200 and 300, read by the
		// Spark schema's byte field "İD" (TestReview58SparkSchemaNamesItsColumnsAsTheParquetSchemaDoes).
		"review58_spark_schema_names.parquet": "-56 | 44",
		// Review 58: nested fields by the Spark schema's types
		// (TestReview58SparkSchemaOfNestedFieldsIsReadAsSparkReadsIt).
		"review58_spark_structfield.parquet": "-56 | 44",
		"review58_spark_listelement.parquet": "[4464] | [1]",
		"review58_spark_mapvalue.parquet":    "-56 | 44",
		// Review 58: a table of two files, x an INT(8) in the first and a
		// plain INT32 300 in the second
		// (TestReview58FilesOfOneColumnInOtherIntegerTypesAreRefused).
		"review58_int_widths_dir": "1 | 44",
	}
	cols := map[string]string{"byte": "b", "short": "s", "date": "d", "unsigned": "u", "honest": "u", "struct": "st.t", "list": "l", "names": "`\u0130D`", "structfield": "st.x", "listelement": "l", "mapvalue": "m['k']", "widths": "x"}
	var args []string
	for name := range want {
		p, err := filepath.Abs(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		for k, col := range cols {
			if strings.Contains(name, "_"+k+"_") || strings.HasSuffix(name, "_"+k+".parquet") {
				args = append(args, col+"="+p)
			}
		}
	}
	const read = `import sys, os
from pyspark.sql import SparkSession
s = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC").getOrCreate()
s.sparkContext.setLogLevel("ERROR")
for vec in ["true", "false"]:
    s.conf.set("spark.sql.parquet.enableVectorizedReader", vec)
    for a in sys.argv[1:]:
        col, f = a.split("=", 1)
        try:
            df = s.read.parquet(f)
            print(vec + "\t" + os.path.basename(f) + "\t" + " | ".join(r[0] for r in df.orderBy(df.columns[0]).selectExpr("coalesce(CAST(%s AS STRING), 'NULL')" % col).collect()))
        except Exception as e:
            print(vec + "\t" + os.path.basename(f) + "\tfails: " + str(e).split("]")[0] + "]")
s.stop()
`
	out, _ := runPySpark(t, python, read, args)
	sparkReadingsAre(t, out, want, "vectorized", 2)
}
