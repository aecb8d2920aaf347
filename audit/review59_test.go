package audit

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// TestReview59SparkReadings: PySpark 4.3.0's readings the review 59 tests
// cite, with the vectorized reader and with parquet-mr's (Spark's row
// reader, spark.sql.parquet.enableVectorizedReader false; with it true, a
// file of 122 columns was still read by the vectorized reader).
func TestReview59SparkReadings(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Apache Spark; skipped with -short")
	}
	python, err := sparkPython()
	if err != nil {
		t.Skipf("skipped: %v; set LAKEWAP_SPARK_PYTHON (scripts/sparkenv.sh installs PySpark)", err)
	}
	const mismatch = "fails: FAILED_READ_FILE.PARQUET_COLUMN_DATA_TYPE_MISMATCH"
	want := map[string][2]string{ // by file: vectorized, parquet-mr
		// A table's files by the first's types: a nested INT32 300 read
		// by an INT(8)'s (TestReview59NestedLeavesOfOneColumnInOtherIntegerTypesAreRefused).
		"review59_nestedint_sx_dir": {"1 | 44", "1 | 44"},
		"review59_nestedint_lx_dir": {"[1] | [44]", "[1] | [44]"},
		"review59_nestedint_mx_dir": {"1 | 44", "1 | 44"},
		// An INT64 read as the first file's INT32: Spark fails.
		"review59_nestedint_widen_dir": {mismatch, "fails: FAILED_READ_FILE.NO_HINT"},
		// FIXED_LEN_BYTE_ARRAY DECIMAL(20,2) 123.45 and 1.00 by a Spark
		// schema's decimal(20,0) and decimal(4,2), and INT96 times by its
		// string (TestReview59SparkSchemaOfOtherLeavesIsReadAsSparkReadsIt).
		"review59_spark_decimalscale.parquet":     {mismatch, "123 | 1"},
		"review59_spark_decimalprecision.parquet": {mismatch, "NULL | 1.00"},
		"review59_spark_nesteddecimal.parquet":    {mismatch, "123 | 1"},
		"review59_spark_int96text.parquet":        {mismatch, "00000000000000008C3D2500 | 00000000000000008D3D2500"},
	}
	cols := map[string]string{"sx": "s.x", "lx": "l", "mx": "m['k']", "widen": "s.x", "decimalscale": "v", "decimalprecision": "v", "nesteddecimal": "st.v", "int96text": "hex(v)"}
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
	const read = `import sys, os, re
from pyspark.sql import SparkSession
s = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC").getOrCreate()
s.sparkContext.setLogLevel("OFF")
for vec in ["true", "false"]:
    s.conf.set("spark.sql.parquet.enableVectorizedReader", vec)
    for a in sys.argv[1:]:
        col, f = a.split("=", 1)
        try:
            df = s.read.parquet(f)
            print(vec + "\t" + os.path.basename(f) + "\t" + " | ".join(r[0] for r in df.orderBy(df.columns[0]).selectExpr("coalesce(CAST(%s AS STRING), 'NULL')" % col).collect()))
        except Exception as e:
            m = re.search(r"\[([A-Z_.]+)\]", str(e))
            print(vec + "\t" + os.path.basename(f) + "\tfails: " + (m.group(1) if m else str(e)[:200].replace("\n", " ")))
s.stop()
`
	out, _ := runPySpark(t, python, read, args)
	got := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) != 3 {
			continue
		}
		got[parts[1]]++
		w, ok := want[parts[1]]
		mode := 0
		if parts[0] == "false" {
			mode = 1
		}
		if !ok || parts[2] != w[mode] {
			t.Errorf("vectorized %s, %s: Spark reads %q, want %q", parts[0], parts[1], parts[2], w[mode])
		}
	}
	for name := range want {
		if got[name] != 2 {
			t.Errorf("%s: %d readings, want 2", name, got[name])
		}
	}
}

// review59Dir is a batch source whose table t holds the files of
// testdata/dir.
func review59Dir(t *testing.T, dir string) *dirSource {
	t.Helper()
	src := newBatchSource(t)
	dst := filepath.Join(src.root, "b1", "t")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"part-0.parquet", "part-1.parquet"} {
		b, err := os.ReadFile(filepath.Join("testdata", dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return src
}

// TestReview59NestedLeavesOfOneColumnInOtherIntegerTypesAreRefused: Spark
// reads a Parquet table's files by one file's types, nested leaves too.
// review59_nestedint_*_dir (pyarrow 26.0.1) hold part-0.parquet, whose
// struct field s.x, list element l[] or map value m.value is an INT32
// annotated INT(8) (1), and part-1.parquet, where it is a plain INT32
// (300): PySpark 4.3.0 reads 1 and 44 (TestReview59SparkReadings), DuckDB
// 1 and 300, and a custom check finding no value of 44 passed, as review
// 58's rule compared top-level columns only. Each is refused naming both
// files, the column and the leaf. A nested leaf of INT32 in one file and
// INT64 in the other (review59_nestedint_widen_dir) passes: Spark fails
// on it, reading no other value.
func TestReview59NestedLeavesOfOneColumnInOtherIntegerTypesAreRefused(t *testing.T) {
	for _, c := range []struct {
		dir, sql, leaf string
		refused        bool
	}{
		{"review59_nestedint_sx_dir", `SELECT * FROM "t" WHERE s.x = 44`, `"s.x" is byte to Spark in file t/part-0.parquet and integer in file t/part-1.parquet`, true},
		{"review59_nestedint_lx_dir", `SELECT * FROM "t" WHERE list_contains(l, 44)`, `"l[]" is byte to Spark in file t/part-0.parquet and integer in file t/part-1.parquet`, true},
		{"review59_nestedint_mx_dir", `SELECT * FROM "t" WHERE m['k'] = 44`, `"m.value" is byte to Spark in file t/part-0.parquet and integer in file t/part-1.parquet`, true},
		{"review59_nestedint_widen_dir", `SELECT * FROM "t" WHERE s.x = 44`, "", false},
	} {
		check := Check{Name: "c", Table: "t", Kind: KindSQL, SQL: c.sql}
		rep, res := review39Audit(t, review59Dir(t, c.dir), check)
		if !c.refused {
			if !rep.Passed {
				t.Errorf("%s: %s %q; Spark fails on the INT64 rather than read it otherwise: want it passed", c.dir, res.Status, res.Message)
			}
			continue
		}
		if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, c.leaf) {
			t.Errorf("%s: %s %q; Spark reads part-1's 300 as 44: want it refused naming both files, the column and the leaf (%s)", c.dir, res.Status, res.Message, c.leaf)
			continue
		}
		t.Logf("refused: %s", res.Message)
	}
}

// TestReview59SparkSchemaOfOtherLeavesIsReadAsSparkReadsIt: a Spark schema
// gives the types Spark reads leaves of other physical types than INT32 and
// INT64 as too. The files (pyarrow 26.0.1) hold a FIXED_LEN_BYTE_ARRAY
// DECIMAL(20,2) of 123.45 and 1.00 the schema says is a decimal(20,0) (at
// the top level, and as a struct's field) or a decimal(4,2), and INT96
// times it says are a string: parquet-mr's reader in PySpark 4.3.0 reads
// 123 and 1, NULL and 1.00, and the INT96's twelve bytes as text
// (TestReview59SparkReadings; the vectorized reader fails), where DuckDB
// reads 123.45, 1.00 and the times, and a check finding no value of 123, a
// not_null and a check finding no time before 1960 passed. Each is refused
// naming the file, the column, the leaf, the Spark schema's type and the
// Parquet type; Spark's own files of such leaves (FIXED_LEN_BYTE_ARRAY and
// BYTE_ARRAY decimals, INT96 times, nested too) pass.
func TestReview59SparkSchemaOfOtherLeavesIsReadAsSparkReadsIt(t *testing.T) {
	for _, c := range []struct {
		file, sql, col, why string
		refused             bool
	}{
		{"review59_spark_decimalscale.parquet", `SELECT * FROM "t" WHERE v = 123`, "v", "Spark reads as decimal(20,0) (its Spark schema's type) and would read as decimal(20,2) by its Parquet type (FIXED_LEN_BYTE_ARRAY)", true},
		{"review59_spark_decimalprecision.parquet", `SELECT * FROM "t" WHERE v IS NULL`, "v", "Spark reads as decimal(4,2) (its Spark schema's type) and would read as decimal(20,2) by its Parquet type (FIXED_LEN_BYTE_ARRAY)", true},
		{"review59_spark_nesteddecimal.parquet", `SELECT * FROM "t" WHERE st.v = 123`, "st", "st.v: Spark reads as decimal(20,0) (its Spark schema's type) and would read as decimal(20,2) by its Parquet type (FIXED_LEN_BYTE_ARRAY)", true},
		{"review59_spark_int96text.parquet", `SELECT * FROM "t" WHERE v < TIMESTAMP '1960-01-01'`, "v", "Spark reads as string (its Spark schema's type) and would read as timestamp by its Parquet type (INT96)", true},
		// PySpark's own files.
		{"review36_spark_decimals_legacy.parquet", `SELECT * FROM "t" WHERE false`, "", "", false},
		{"review36_spark_decimals_v1.parquet", `SELECT * FROM "t" WHERE false`, "", "", false},
		{"review36_spark_decimals_v2.parquet", `SELECT * FROM "t" WHERE false`, "", "", false},
		{"spark_int96_nested_one_time.parquet", `SELECT * FROM "t" WHERE false`, "", "", false},
		{"review55_spark_written_micros.parquet", `SELECT * FROM "t" WHERE false`, "", "", false},
		{"spark_bloom_bool.parquet", `SELECT * FROM "t" WHERE false`, "", "", false},
	} {
		src, _ := review36File(t, c.file)
		rep, res := review39Audit(t, src, Check{Kind: KindSQL, SQL: c.sql})
		if !c.refused {
			if !rep.Passed {
				t.Errorf("%s: %s %q; Spark's own file: want it passed", c.file, res.Status, res.Message)
			}
			continue
		}
		if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "a.parquet") || !strings.Contains(res.Message, `column "`+c.col+`"`) || !strings.Contains(res.Message, c.why) {
			t.Errorf("%s: %s %q; Spark reads it otherwise: want it refused naming the file, the column and why (%s)", c.file, res.Status, res.Message, c.why)
			continue
		}
		t.Logf("refused: %s", res.Message)
	}
}

// TestSparkIntLeavesAreBounded: markSparkInts notes a file's nested INT32
// and INT64 leaves with their paths, clipped: a struct whose name is a
// megabyte long, with two thousand fields, is not copied into each field's
// path (two gigabytes). Past maxSparkIntLeaves leaves, or 64 levels deep,
// it notes none but that the file has more (sparkIntsOver), and
// sparkIntsApart refuses a table of that file beside another, naming it;
// alone, the file passes (Spark reads it by its own types).
func TestSparkIntLeavesAreBounded(t *testing.T) {
	group := nodeTypes{physical: -1, repetition: 1, converted: -1}
	plain := nodeTypes{physical: ptInt32, repetition: 1, converted: -1}
	wide := func(name string, fields int) ([]schemaNode, []nodeTypes) {
		nodes := []schemaNode{{name: "schema", children: 1}, {name: name, children: int64(fields)}}
		types := []nodeTypes{group, group}
		for f := 0; f < fields; f++ {
			nodes = append(nodes, schemaNode{name: fmt.Sprintf("f%d", f)})
			types = append(types, plain)
		}
		return nodes, types
	}
	nodes, types := wide(strings.Repeat("n", 1<<20), 2000)
	cols := schemaColumns(nodes)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	markSparkInts(cols, nodes, types)
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Fatalf("noting 2000 leaves allocated %d MiB, want the paths clipped", alloc>>20)
	}
	if n := len(cols[0].sparkInts); n != 2000 || cols[0].sparkIntsOver || len(cols[0].sparkInts[1999].path) > 512 {
		t.Fatalf("%d leaves noted (over %v), want 2000 of clipped paths", n, cols[0].sparkIntsOver)
	}

	deep := func(depth int) ([]schemaNode, []nodeTypes) {
		nodes := []schemaNode{{name: "schema", children: 1}}
		types := []nodeTypes{group}
		for d := 0; d < depth; d++ {
			nodes = append(nodes, schemaNode{name: fmt.Sprintf("s%d", d), children: 1})
			types = append(types, group)
		}
		return append(nodes, schemaNode{name: "x"}), append(types, plain)
	}
	for _, c := range []struct {
		name  string
		nodes []schemaNode
		types []nodeTypes
		over  bool
	}{
		{"leaves at the bound", nil, nil, false},
		{"a leaf past the bound", nil, nil, true},
		{"64 deep", nil, nil, false},
		{"65 deep", nil, nil, true},
	} {
		switch c.name {
		case "leaves at the bound":
			c.nodes, c.types = wide("s", maxSparkIntLeaves)
		case "a leaf past the bound":
			c.nodes, c.types = wide("s", maxSparkIntLeaves+1)
		case "64 deep":
			c.nodes, c.types = deep(64)
		case "65 deep":
			c.nodes, c.types = deep(65)
		}
		cols := schemaColumns(c.nodes)
		markSparkInts(cols, c.nodes, c.types)
		if cols[0].sparkIntsOver != c.over {
			t.Errorf("%s: over %v, want %v", c.name, cols[0].sparkIntsOver, c.over)
		}
		names := map[string][]fileColumn{"a": cols, "b": schemaColumns(c.nodes)}
		markSparkInts(names["b"], c.nodes, c.types)
		objPath := map[string]string{"a": "t/a.parquet", "b": "t/b.parquet"}
		err := sparkIntsApart(names, []string{"a", "b"}, objPath)
		if (err != nil) != c.over || c.over && !strings.Contains(err.Error(), "file t/a.parquet has more than") {
			t.Errorf("%s, two files: %v, want refused %v naming the file", c.name, err, c.over)
		}
		if err := sparkIntsApart(names, []string{"a"}, objPath); err != nil {
			t.Errorf("%s, one file: %v, want it passed", c.name, err)
		}
	}
}
