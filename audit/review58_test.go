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

// TestReview58SparkSchemaNamesItsColumnsAsTheParquetSchemaDoes: Spark
// matches the fields of a file's Spark schema to its Parquet columns by
// Java's toLowerCase(Locale.ROOT), which lakewap's folding of names (Go's
// simple case mapping) does not reproduce. review58_spark_schema_names.parquet
// (pyarrow 26.0.1) has an INT32 column "i̇d" (i, U+0307, d) of 200 and 300
// and a Spark schema naming a field "İD" (U+0130, D) a byte: Java lowers
// "İD" to "i̇d", so PySpark 4.3.0 reads the column as İD, -56 and 44
// (TestReview55SparkReadings), while lakewap folded "İD" to "id", matched
// no column, compared nothing, and a range check of at least 0 over the
// column passed on DuckDB's 200 and 300. A Spark schema whose top-level
// fields are not the Parquet schema's columns, by the same names in the
// same order, as Spark writes them, is refused naming the file.
func TestReview58SparkSchemaNamesItsColumnsAsTheParquetSchemaDoes(t *testing.T) {
	zero := 0.0
	src, _ := review36File(t, "review58_spark_schema_names.parquet")
	check := Check{Name: "c", Table: "t", Kind: KindRange, Column: "i\u0307d", Min: &zero}
	rep, res := review39Audit(t, src, check)
	if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "a.parquet") || !strings.Contains(res.Message, "column \"i\u0307d\": its Spark schema") {
		t.Fatalf("%s %q: Spark reads the column as a byte (-56, 44) under the name İD; want the file refused naming it and its Spark schema", res.Status, res.Message)
	}
	t.Logf("refused: %s", res.Message)
}

// TestReview58SparkSchemaOfNestedFieldsIsReadAsSparkReadsIt: a Spark
// schema's types below the top level are what Spark reads nested INT32 and
// INT64 leaves as, as at the top level (review 55). The files (pyarrow
// 26.0.1) hold a struct's INT32 field of 200 and 300 the schema says is a
// byte, a list's INT32 element 70000 it says is a short, and a map's INT32
// value 200 and 300 it says is a byte: PySpark 4.3.0 reads -56 and 44, 4464,
// and -56 and 44 (TestReview55SparkReadings), where DuckDB, pyarrow and
// pandas read the numbers, and a range check of at least 0 over the column
// passed before. Each is refused naming the file, the column and the path to
// the leaf; the honest schema of the same columns passes.
func TestReview58SparkSchemaOfNestedFieldsIsReadAsSparkReadsIt(t *testing.T) {
	for _, c := range []struct {
		file, col, leaf string
		refused         bool
	}{
		{"review58_spark_structfield.parquet", "st", "st.x", true},
		{"review58_spark_listelement.parquet", "l", "l[]", true},
		{"review58_spark_mapvalue.parquet", "m", "m.value", true},
		{"review58_spark_nested_honest.parquet", "st", "", false},
		{"review58_spark_nested_honest.parquet", "l", "", false},
		{"review58_spark_nested_honest.parquet", "m", "", false},
	} {
		src, _ := review36File(t, c.file)
		check := Check{Name: "c", Table: "t", Kind: KindSQL, SQL: fmt.Sprintf(`SELECT * FROM "t" WHERE "%s" IS NULL`, c.col)}
		rep, res := review39Audit(t, src, check)
		if !c.refused {
			if !rep.Passed {
				t.Errorf("%s, %s: %s %q; its Spark schema states the types Spark reads its Parquet types as: want it passed", c.file, c.col, res.Status, res.Message)
			}
			continue
		}
		if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "a.parquet") || !strings.Contains(res.Message, `column "`+c.col+`"`) ||
			!strings.Contains(res.Message, c.leaf+": Spark reads as") {
			t.Errorf("%s: %s %q; Spark reads %s otherwise: want it refused naming the file, the column and the leaf", c.file, res.Status, res.Message, c.leaf)
			continue
		}
		t.Logf("refused: %s", res.Message)
	}
}

// TestSparkNestedReadsABoundedText: each level of a nested Spark schema
// reads its own type's text again, so a deep field's padding (its
// metadata) would be read once per level above it; the text read for one
// file is bounded (maxSparkNestedBytes), past which the file is refused.
func TestSparkNestedReadsABoundedText(t *testing.T) {
	const depth = 20 // three JSON levels each: jsonKeysApart takes 64
	nodes := []schemaNode{{name: "schema", children: 1}}
	group := nodeTypes{physical: -1, repetition: 1, converted: -1}
	types := []nodeTypes{group}
	for d := 0; d < depth; d++ {
		nodes = append(nodes, schemaNode{name: fmt.Sprintf("s%d", d), children: 1})
		types = append(types, group)
	}
	nodes = append(nodes, schemaNode{name: "x"})
	types = append(types, nodeTypes{physical: ptInt32, repetition: 1, converted: -1})
	schema := func(pad int) []byte {
		leaf := fmt.Sprintf(`{"name":"x","type":"integer","nullable":true,"metadata":{"pad":%q}}`, strings.Repeat("p", pad))
		for d := depth - 1; d >= 0; d-- {
			leaf = fmt.Sprintf(`{"name":"s%d","type":{"type":"struct","fields":[%s]},"nullable":true,"metadata":{}}`, d, leaf)
		}
		return []byte(`{"type":"struct","fields":[` + leaf + `]}`)
	}
	for _, c := range []struct {
		pad     int
		refused bool
	}{{0, false}, {1 << 20, true}} {
		cols := schemaColumns(nodes)
		markSparkSchema(cols, nodes, types, [][]byte{schema(c.pad)})
		if got := cols[0].sparkSchema; (got != "") != c.refused || c.refused && !strings.Contains(got, "too large") {
			t.Errorf("padding of %d bytes at depth %d: %q, want refused %v for its size", c.pad, depth, got, c.refused)
		}
	}
}

// TestReview58FilesOfOneColumnInOtherIntegerTypesAreRefused: Spark reads a
// Parquet table's files by one file's types. review58_int_widths_dir
// (pyarrow 26.0.1) holds part-0.parquet, whose INT32 column x is annotated
// INT(8) (1), and part-1.parquet, whose x is a plain INT32 (300): PySpark
// 4.3.0 reads the table's x as a tinyint, 1 and 44
// (TestReview55SparkReadings), pyarrow and pandas fail on it, DuckDB reads
// 1 and 300, and a unique over x passed before, as would one where Spark
// finds 44 twice. It is refused naming both files and the column. A column
// widened from INT32 in one file to INT64 in another
// (review58_int_widen_dir) passes: Spark widens an INT32 to a long.
func TestReview58FilesOfOneColumnInOtherIntegerTypesAreRefused(t *testing.T) {
	for _, c := range []struct {
		dir     string
		refused bool
	}{{"review58_int_widths_dir", true}, {"review58_int_widen_dir", false}} {
		src := newBatchSource(t)
		dst := filepath.Join(src.root, "b1", "t")
		if err := os.MkdirAll(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"part-0.parquet", "part-1.parquet"} {
			b, err := os.ReadFile(filepath.Join("testdata", c.dir, f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		check := Check{Name: "c", Table: "t", Kind: KindUnique, Column: "x"}
		rep, res := review39Audit(t, src, check)
		if !c.refused {
			if !rep.Passed {
				t.Errorf("%s: %s %q; Spark widens the INT32 to a long: want it passed", c.dir, res.Status, res.Message)
			}
			continue
		}
		if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "part-0.parquet") || !strings.Contains(res.Message, "part-1.parquet") ||
			!strings.Contains(res.Message, `column "x" is byte to Spark in file t/part-0.parquet and integer in file t/part-1.parquet`) {
			t.Errorf("%s: %s %q; Spark reads part-1's 300 as 44: want it refused naming both files and the column", c.dir, res.Status, res.Message)
			continue
		}
		t.Logf("refused: %s", res.Message)
	}
}

// TestSparkNestedPathsAreClipped: the path to each node sparkNested walks
// is built from its parent's, clipped: a struct whose name is a megabyte
// long, with two thousand fields, is not copied into each field's path
// (two gigabytes).
func TestSparkNestedPathsAreClipped(t *testing.T) {
	const fields = 2000
	long := strings.Repeat("n", 1<<20)
	nodes := []schemaNode{{name: "schema", children: 1}, {name: long, children: fields}}
	types := []nodeTypes{{physical: -1, repetition: 0, converted: -1}, {physical: -1, repetition: 1, converted: -1}}
	var spark []string
	for f := 0; f < fields; f++ {
		nodes = append(nodes, schemaNode{name: fmt.Sprintf("f%d", f)})
		types = append(types, nodeTypes{physical: ptInt32, repetition: 1, converted: -1})
		spark = append(spark, fmt.Sprintf(`{"name":"f%d","type":"integer","nullable":true,"metadata":{}}`, f))
	}
	schema := []byte(fmt.Sprintf(`{"type":"struct","fields":[{"name":%q,"type":{"type":"struct","fields":[%s]},"nullable":true,"metadata":{}}]}`, long, strings.Join(spark, ",")))
	cols := schemaColumns(nodes)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	markSparkSchema(cols, nodes, types, [][]byte{schema})
	runtime.ReadMemStats(&after)
	if got := cols[0].sparkSchema; got != "" {
		t.Fatalf("an honest schema: %q", got)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<20 {
		t.Fatalf("comparing the schema allocated %d MiB, want the paths clipped", alloc>>20)
	}
}
