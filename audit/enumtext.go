package audit

import (
	"fmt"
	"slices"
	"strings"
)

// A Parquet leaf of the ENUM logical (or converted) type, which
// parquet-avro writes for an Avro enum (Kafka Connect's Parquet sink
// among others), is text to DuckDB and Spark and binary to pyarrow 26.0.1:
// pandas.read_parquet reads b'abc', where DuckDB and PySpark 4.3.0 read
// abc. So a Great Expectations value_set of strings over such a column
// (its pandas isin(["abc"]) finds no bytes) passed where pandas finds
// every row failing (TestReview36EnumColumnUnderTextChecksIsRefused), as
// one over a BLOB column is refused (pandasValueSet, which judges by
// DuckDB's type, VARCHAR here). lakewap's and dbt's accepted_values
// compare text, and a regex's pandas form matches column.astype(str):
// pandas 3.1.1 decodes the bytes to abc, so they read alike and pass, as
// do checks that compare the values only with one another (unique,
// not_null). Delta tables are not judged so: deltalake's to_pandas takes
// the log's type.

// markEnum notes on cols (a file's, schemaColumns of nodes) its top-level
// leaves of the ENUM type.
func markEnum(cols []fileColumn, nodes []schemaNode, types []nodeTypes) {
	top := topLevel(nodes, types)
	if len(top) != len(cols) {
		return
	}
	for k, i := range top {
		t := types[i]
		cols[k].enum = nodes[i].children == 0 && (t.converted == cvEnum || t.logical == ltEnum)
	}
}

// enumText names the first Parquet file with an ENUM column (markEnum)
// that an accepted_values check of table from a Great Expectations
// value_set holding a string reads.
func enumText(names map[string][]fileColumn, order []string, objPath map[string]string, checks []Check, table string) error {
	text := map[string]string{}
	for _, c := range checks {
		if strings.EqualFold(c.Table, table) && c.Kind == KindAcceptedValues && len(c.ValueTypes) == len(c.Values) && slices.Contains(c.ValueTypes, valueString) {
			for _, col := range c.columns() {
				text[strings.ToLower(col)] = c.Kind
			}
		}
	}
	if len(text) == 0 {
		return nil
	}
	for _, f := range order {
		for _, c := range names[f] {
			if kind := text[strings.ToLower(c.name)]; c.enum && kind != "" {
				return fmt.Errorf("file %s: column %q is a Parquet ENUM, which pyarrow and pandas.read_parquet read as binary (b'abc'), DuckDB and Spark as text (abc): readers disagree on it, and Great Expectations' %s check (pandas' isin) compares its values with strings (write it as a STRING)",
					objPath[f], c.name, kind)
			}
		}
	}
	return nil
}
