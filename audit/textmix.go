package audit

import (
	"fmt"
	"strings"
)

// A Parquet table's files may give a column text in one and another type
// in another. DuckDB reads them together (union by name) as VARCHAR, the
// other file's values cast to DuckDB's text (a TIMESTAMP 2024-01-01 as
// 2024-01-01 00:00:00, a DOUBLE 1 as 1.0); pyarrow's dataset, and so
// pandas.read_parquet of the table's directory, in its first file's type,
// casting the other files' with Arrow's text (2024-01-01 00:00:00.000,
// 1) or text to that type (a text 01 beside integers as 1); and Spark
// fails on files of other types. An accepted_values and a regex passed
// where pandas 3.1.1 found a row failing
// (TestReview36ColumnOfTextAndOtherTypesAcrossFilesIsRefused). So such a
// column a check reads refuses its table, naming two of its files.

// markText notes on cols (a file's, schemaColumns of nodes) how each
// top-level column is typed: "text" for a leaf DuckDB reads as VARCHAR,
// else its Parquet type.
func markText(cols []fileColumn, nodes []schemaNode, types []nodeTypes) {
	top := topLevel(nodes, types)
	if len(top) != len(cols) {
		return
	}
	for k, i := range top {
		t := types[i]
		switch {
		case nodes[i].children > 0:
			cols[k].typed = "a group"
		case t.physical == ptByteArray && (t.converted == cvUTF8 || t.converted == cvEnum || t.converted == cvJSON || t.logical == ltString || t.logical == ltEnum || t.logical == ltJSON):
			cols[k].typed = "text"
		case t.physical >= 0 && int(t.physical) < len(parquetPhysical):
			cols[k].typed = parquetPhysical[t.physical]
			if name := logicalNames[t.logical]; name != "" {
				cols[k].typed += " " + name
			}
		default:
			cols[k].typed = "another type"
		}
	}
}

// textBesideOther names a column of a Parquet table's files (names, in
// order) that a check reads (reads) and that one file gives as text and
// another as another type (markText).
func textBesideOther(names map[string][]fileColumn, order []string, objPath map[string]string, reads func(col string) bool) error {
	text := map[string]string{}  // lower-case name: the first file giving it as text
	other := map[string]string{} // ... as another type
	otherType := map[string]string{}
	for _, f := range order {
		for _, c := range names[f] {
			key := strings.ToLower(c.name)
			switch {
			case c.typed == "":
				continue // listed by DuckDB: readerIndexes refuses the file
			case c.typed == "text" && text[key] == "":
				text[key] = f
			case c.typed != "text" && other[key] == "":
				other[key], otherType[key] = f, c.typed
			}
			if text[key] != "" && other[key] != "" && reads(c.name) {
				return fmt.Errorf("column %q is text in file %s and %s in file %s: DuckDB reads the files together as text, the other's values by DuckDB's text of them (2024-01-01 00:00:00, 1.0), pyarrow and pandas.read_parquet in the first file's type, casting the others' by Arrow (2024-01-01 00:00:00.000, 1), and Spark fails: readers disagree on it, and a check reads it (write the column in one type)",
					c.name, objPath[text[key]], otherType[key], objPath[other[key]])
			}
		}
	}
	return nil
}
