package audit

import (
	"context"
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
	rep, err := newEngine(t, src, "").Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
		Suite: Suite{Tables: []Table{{Name: "t", Path: "t/", Format: FormatParquet}}, Checks: []Check{check}}})
	if err != nil {
		t.Fatal(err)
	}
	res := rep.Checks[0]
	if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "a.parquet") || !strings.Contains(res.Message, "Spark schema") {
		t.Fatalf("%s %q: Spark reads the column as a byte (-56, 44) under the name İD; want the file refused naming it and its Spark schema", res.Status, res.Message)
	}
	t.Logf("refused: %s", res.Message)
}
