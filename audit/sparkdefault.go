package audit

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Spark (3.4 and later) keeps a column's default in the metadata of its
// field in the Spark schema it writes to a Parquet file
// (org.apache.spark.sql.parquet.row.metadata): CURRENT_DEFAULT, which it
// writes by on INSERT, and EXISTS_DEFAULT, which it reads, in the rows of
// a file lacking the column, instead of NULL
// (ResolveDefaultColumns.existenceDefaultValues). PySpark 4.3.0 read the
// rows of a file without x as x = 5 beside a file whose Spark schema
// declares x's EXISTS_DEFAULT "5", with either Parquet reader and
// mergeSchema or not; DuckDB, pyarrow and pandas read NULL, and a range of
// 0 to 3 passed where Spark reads a 5 that fails it
// (TestExistsDefault61SparkFillsAMissingColumnWithItsDefault). A
// CURRENT_DEFAULT alone Spark does not read a missing column by, nor an
// EXISTS_DEFAULT of a struct's field (PySpark 4.3.0 read a file's struct
// lacking field y as y NULL beside a file declaring y's default 5 in its
// struct: top-level columns only).
//
// So a Parquet table one of whose files' Spark schemas declares a
// top-level column's EXISTS_DEFAULT, and one of whose files lacks that
// column, is refused, naming both files, the column and the default
// (sparkDefaultsMissing); a default of a column every file holds changes
// nothing Spark reads. An incremental audit compares the files' records
// (sparkFacts.Defaults with fileStats.Schema; schemaagree.go) and runs
// full on such a table, which refuses it.

const sparkExistsDefaultKey = "EXISTS_DEFAULT"

// markSparkDefault notes on col, a file's top-level column, the
// EXISTS_DEFAULT its Spark schema's field f declares, clipped; or returns
// why the file is refused: metadata that cannot be read.
func markSparkDefault(col *fileColumn, f sparkField) string {
	if len(f.meta) == 0 {
		return ""
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(f.meta, &meta) != nil {
		return "its Spark schema's metadata of the column cannot be read"
	}
	v, ok := meta[sparkExistsDefaultKey]
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		s = string(v) // not text: kept as written, and refused where it counts
	}
	if s == "" {
		s = `""`
	}
	col.sparkDefault = clip(s, 128)
	return ""
}

// sparkDefaultsMissing names the first file of files (a Parquet table's)
// lacking a column that another file's Spark schema declares an
// EXISTS_DEFAULT (markSparkDefault), which Spark reads in its rows and
// DuckDB reads as NULL.
func sparkDefaultsMissing(cols map[string][]fileColumn, files []string, objPath map[string]string) error {
	type decl struct{ name, def, file string }
	declared := map[string]decl{} // by lower-case column: the first file declaring a default
	var order []string
	for _, f := range files {
		for _, c := range cols[f] {
			k := strings.ToLower(c.name)
			if _, ok := declared[k]; c.sparkDefault == "" || ok {
				continue
			}
			declared[k] = decl{c.name, c.sparkDefault, objPath[f]}
			order = append(order, k)
		}
	}
	if len(declared) == 0 {
		return nil
	}
	for _, f := range files {
		has := make(map[string]bool, len(cols[f]))
		for _, c := range cols[f] {
			has[strings.ToLower(c.name)] = true
		}
		for _, k := range order {
			if !has[k] {
				d := declared[k]
				return fmt.Errorf("file %s lacks column %q, and file %s declares it the default %q (%s) in its Spark schema (%s): Spark reads that default in each of the first file's rows, DuckDB, pyarrow and pandas read NULL: readers disagree on them (write the column in every file, or declare no default)",
					objPath[f], d.name, d.file, d.def, sparkExistsDefaultKey, sparkRowMetadataKey)
			}
		}
	}
	return nil
}
