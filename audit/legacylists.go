package audit

import (
	"fmt"
	"strings"
)

// The Parquet format's backward-compatibility rules for lists read a
// repeated group of one field as a list of structs of that field when it
// is named array or <list>_tuple in a LIST-annotated group (parquet-avro's
// old lists of records, parquet-thrift's), or when no LIST or MAP
// annotates its parent (a bare repeated group, parquet-protobuf's
// repeated messages); in a LIST under any other name it is the 3-level
// list's wrapper, and its field the element. pyarrow 26.0.1 and PySpark
// 4.3.0 follow the rules: optional group a (LIST) { repeated group array
// { optional int32 x; } } reads list<struct<x>>, [{'x': 1}, {'x': 2}],
// where DuckDB 1.5 reads INTEGER[], [1, 2], unwrapping the struct. A
// schema check of a INTEGER[] and an accepted_values of [1, 2] passed
// where pyarrow's and Spark's users read structs
// (TestReview39LegacyListsDuckDBReadsOtherwiseAreRefused). The other
// layouts (a 2-level list of a primitive, a bare repeated primitive, a
// 3-level list of any names, a repeated group of two fields or more) read
// alike. A file whose column a check reads (columnsRead, but a not_null,
// which reads the lists alike) holds such a group is refused, by its
// footer alone.

// Converted and logical types of the schema's groups.
const (
	cvMap, cvMapKeyValue, cvList = 1, 2, 3
	ltMap, ltList                = 2, 3
)

// markLegacyLists notes on cols (a file's, schemaColumns of nodes) the
// first repeated group under each top-level column that DuckDB reads as
// its one field where the format's rules read a struct of it.
func markLegacyLists(cols []fileColumn, nodes []schemaNode, types []nodeTypes) {
	eachColumnNode(cols, nodes, types, func(col *fileColumn, i, parent int, path []string) {
		if col.legacyList == "" && types[i].repetition == 2 && nodes[i].children == 1 {
			p := types[parent]
			list := parent > 0 && (p.converted == cvList || p.logical == ltList)
			mapped := parent > 0 && (p.converted == cvMap || p.converted == cvMapKeyValue || p.logical == ltMap)
			if list && (nodes[i].name == "array" || nodes[i].name == nodes[parent].name+"_tuple") || !list && !mapped {
				col.legacyList = strings.Join(path, ".")
			}
		}
	})
}

// legacyLists names the first Parquet file of files with a column a check
// reads (read) holding a repeated group DuckDB reads otherwise than the
// format's rules (markLegacyLists).
func legacyLists(cols map[string][]fileColumn, files []string, objPath map[string]string, checks []Check, table string) error {
	return markedColumn(cols, files, objPath, checks, table, func(c fileColumn) string { return c.legacyList }, func(file, col, mark string) error {
		return fmt.Errorf("file %s: column %q holds the repeated group %s of one field, which the Parquet format's rules for old lists (and pyarrow and Spark) read as a list of structs of that field, and DuckDB as a list of the field's values ([{'x': 1}] where DuckDB reads [1]): readers disagree on it, and a check reads it (write the list in the 3-level LIST layout)",
			file, col, mark)
	})
}

// valuesRead is columnsRead of the checks that read a column's values: all
// but a not_null check without a where, which reads whether they are NULL.
func valuesRead(checks []Check, table string) func(string) bool {
	var judged []Check
	for _, c := range checks {
		if c.Kind != KindNotNull || strings.TrimSpace(c.Where) != "" {
			judged = append(judged, c)
		}
	}
	return columnsRead(judged, table)
}

// eachColumnNode calls visit with each node of the subtree of each
// top-level column of a file's schema (cols, schemaColumns of nodes), in
// schema order: the column's entry, the node, its parent (the root, 0, for
// a top-level one) and the path of names to it.
func eachColumnNode(cols []fileColumn, nodes []schemaNode, types []nodeTypes, visit func(col *fileColumn, i, parent int, path []string)) {
	top := topLevel(nodes, types)
	if len(top) != len(cols) {
		return
	}
	for k, i := range top {
		var path []string
		var walk func(i, parent int) int // the index after the subtree at i
		walk = func(i, parent int) int {
			path = append(path, nodes[i].name)
			visit(&cols[k], i, parent, path)
			j := i + 1
			for c := int64(0); c < nodes[i].children && j < len(nodes); c++ {
				j = walk(j, i)
			}
			path = path[:len(path)-1]
			return j
		}
		walk(i, 0)
	}
}

// markedColumn is refused(file, column, its mark) for the first column of
// files, in order, that a check reads the values of and whose mark (what
// a markLegacyLists or markWideDecimals noted on it) is set; nil if none.
func markedColumn(cols map[string][]fileColumn, files []string, objPath map[string]string, checks []Check, table string,
	mark func(fileColumn) string, refused func(file, col, mark string) error) error {
	read := valuesRead(checks, table)
	for _, f := range files {
		for _, c := range cols[f] {
			if m := mark(c); m != "" && read(c.name) {
				return refused(objPath[f], c.name, m)
			}
		}
	}
	return nil
}
