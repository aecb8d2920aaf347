package audit

import (
	"cmp"
	"context"
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
// column an accepted_values, regex or unique check reads (the kinds that
// compare its text), or any column a custom query or a where condition
// may read (review 61), refuses its table, naming two of its files; integers
// beside text, which render an integer alike, are scanned for a text an
// integer does not render (integersBesideText). A file of no rows gives
// its type too (pyarrow's dataset takes the first file's whether it holds
// rows or not), but what pandas writes for an empty DataFrame is a DOUBLE,
// so beside text it is not refused by its type alone: the texts are
// scanned for ones its type reads otherwise (1.50 as 1.5: review 61,
// integersBesideText). Left: the other checks (a schema check reports
// DuckDB's union type).

// markText notes on cols (a file's, schemaColumns of nodes) how each
// top-level column is typed: "text" for a leaf DuckDB reads as VARCHAR,
// else its Parquet type.
func markText(cols []fileColumn, nodes []schemaNode, types []nodeTypes, rows int64) {
	top := topLevel(nodes, types)
	if len(top) != len(cols) {
		return
	}
	for k, i := range top {
		t := types[i]
		cols[k].noRows = rows == 0
		switch {
		case nodes[i].children > 0:
			cols[k].typed = "a group"
		case t.physical == ptByteArray && (t.converted == cvUTF8 || t.converted == cvEnum || t.converted == cvJSON || t.logical == ltString || t.logical == ltEnum || t.logical == ltJSON):
			cols[k].typed = "text"
		case (t.physical == ptInt32 || t.physical == ptInt64) && (t.logical == 0 || t.logical == ltInteger) &&
			(t.converted == -1 || t.converted >= cvUint8 && t.converted <= cvInt64):
			cols[k].typed = "integer" // rendered alike by both
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
// order) whose text a check of table compares (textCompared)
// and that one file gives as text and another as another type than an
// integer (markText).
func textBesideOther(names map[string][]fileColumn, order []string, objPath map[string]string, checks []Check, table string) error {
	read := textCompared(checks, table)
	if read == nil {
		return nil
	}
	text := map[string]string{}  // lower-case name: the first file giving it as text
	other := map[string]string{} // ... as another type
	otherType := map[string]string{}
	for _, f := range order {
		for _, c := range names[f] {
			key := strings.ToLower(c.name)
			switch {
			case c.typed == "" || c.typed == "integer":
				continue // listed by DuckDB (readerIndexes refuses the file), or an integer
			case c.noRows && c.typed != "text":
				continue // what pandas writes for an empty DataFrame (a DOUBLE): integersBesideText scans the texts
			case c.typed == "text" && text[key] == "":
				text[key] = f
			case c.typed != "text" && other[key] == "":
				other[key], otherType[key] = f, c.typed
			}
			if text[key] != "" && other[key] != "" && read(key) {
				return fmt.Errorf("column %q is text in file %s and %s in file %s: DuckDB reads the files together as text, the other's values by DuckDB's text of them (2024-01-01 00:00:00, 1.0), pyarrow and pandas.read_parquet in the first file's type, casting the others' by Arrow (2024-01-01 00:00:00.000, 1), and Spark fails: readers disagree on it, and a check compares its text (write the column in one type)",
					c.name, objPath[text[key]], otherType[key], objPath[other[key]])
			}
		}
	}
	return nil
}

// integersBesideText closes a case textBesideOther leaves: a column that
// one file of a Parquet table gives as integers and another as text.
// DuckDB reads them together as text, pyarrow's dataset and
// pandas.read_parquet of the directory in the first file's type: a text
// 09 beside a file of integers first is the integer 9 to pandas 3.1.1 and
// 09 to DuckDB, and a unique of 9 and 09 passed where pandas finds 9
// twice (TestReader60IntegerTextBesideIntegersIsRefused). So, for a
// column whose text a check of table compares (textCompared), each
// file giving it as text beside another giving it as integers is scanned
// (memoized) for a text DuckDB reads as an integer (TRY_CAST) that it
// does not render so (09, +9, a space, 1e3), and the first holding one
// is refused, naming it, the column and the integers' file; whatever the
// files' order, which a later file may change. Texts no integer reads
// (pyarrow fails on them beside integers first) and texts an integer
// renders so pass.
func (r *run) integersBesideText(ctx context.Context, names map[string][]fileColumn, order []string, objPath, ids map[string]string, checks []Check, table string) error {
	read := textCompared(checks, table)
	if read == nil {
		return nil
	}
	integers := map[string]string{}  // lower-case name: the first file giving it as integers
	castTo := map[string][2]string{} // ... a file of no rows giving it a type pyarrow casts texts to, and that type
	for _, f := range order {
		for _, c := range names[f] {
			key := strings.ToLower(c.name)
			switch {
			case !read(key):
			case c.typed == "integer":
				if integers[key] == "" {
					integers[key] = f
				}
			case c.noRows && c.typed != "text" && castTo[key][0] == "":
				if typ := textCastType(c.union); typ != "" {
					castTo[key] = [2]string{f, typ}
				}
			}
		}
	}
	if len(integers) == 0 && len(castTo) == 0 {
		return nil
	}
	for _, f := range order {
		var conds []string
		var found []func(n int64) error
		var firstCol, firstOther string
		tag := "integer-text"
		for _, c := range names[f] {
			key := strings.ToLower(c.name)
			if c.typed != "text" || c.noRows {
				continue
			}
			q := quoteIdent(c.name)
			if ints := integers[key]; ints != "" {
				cond := fmt.Sprintf("TRY_CAST(%s AS HUGEINT) IS NOT NULL AND CAST(TRY_CAST(%s AS HUGEINT) AS VARCHAR) <> %s", q, q, q)
				conds = append(conds, "count(*) FILTER (WHERE coalesce("+cond+", false))")
				tag += "\x00" + cond
				name := c.name
				found = append(found, func(n int64) error {
					return fmt.Errorf("file %s: column %q holds %d texts of integers that an integer does not render so (09, +9), and is integers in file %s: DuckDB reads the files together as text (09), pyarrow and pandas.read_parquet in the first file's type, integers first reading 09 as 9: readers disagree on them, and a check compares its text (write the column in one type)",
						objPath[f], name, n, objPath[ints])
				})
				firstCol, firstOther = cmp.Or(firstCol, c.name), cmp.Or(firstOther, ints)
			}
			if to := castTo[key]; to[0] != "" {
				cond := fmt.Sprintf("TRY_CAST(%s AS %s) IS NOT NULL", q, to[1])
				if textCastRendered(to[1]) {
					cond += fmt.Sprintf(" AND CAST(TRY_CAST(%s AS %s) AS VARCHAR) <> %s", q, to[1], q)
				}
				conds = append(conds, "count(*) FILTER (WHERE coalesce("+cond+", false))")
				tag += "\x00" + cond
				name := c.name
				found = append(found, func(n int64) error {
					return fmt.Errorf("file %s: column %q holds %d texts that %s reads otherwise (1.50 as 1.5), and file %s, of no rows, gives it as %s: pyarrow, pandas.read_parquet and DuckDB's read_parquet without union_by_name read the first file's type whether it holds rows or not (what pandas writes for an empty DataFrame is a DOUBLE), casting the texts to it or failing, DuckDB's union_by_name reads them as written: readers disagree on them, and a check compares its text (write the column in one type)",
						objPath[f], name, n, to[1], objPath[to[0]], to[1])
				})
				firstCol, firstOther = cmp.Or(firstCol, c.name), cmp.Or(firstOther, to[0])
			}
		}
		if len(conds) == 0 {
			continue
		}
		err := r.guardScan(ctx, tag, f, ids, conds, func(err error) error {
			return fmt.Errorf("file %s: column %q is text, and of another type in file %s, and lakewap could not look for texts read otherwise (%v): readers may disagree on them",
				objPath[f], firstCol, objPath[firstOther], clip(err.Error(), 256))
		}, func(i int, n int64) error {
			return found[i](n)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// textCastType is the DuckDB type by which integersBesideText looks for
// texts pyarrow, or DuckDB's read_parquet without union_by_name, casts to
// a first file's unionType typ, or "" for none: integers are
// integersBesideText's own. pyarrow fails to cast a text to a DATE, but
// DuckDB's plain read casts 2024-1-1 to 2024-01-01 (review 62,
// TestReader62TextBesideAnEmptyDateFileIsJudged).
func textCastType(typ string) string {
	switch typ {
	case "", "HUGEINT":
		return ""
	}
	return typ
}

// textCastRendered is whether a text cast to typ that DuckDB renders back
// as written is read alike by pandas and DuckDB's plain read (a float, a
// decimal, a DATE); a BOOLEAN or a timestamp pandas renders otherwise
// (True, its own form) whatever the text.
func textCastRendered(typ string) bool {
	return typ == "FLOAT" || typ == "DOUBLE" || typ == "DATE" || strings.HasPrefix(typ, "DECIMAL")
}

// textCompared is whether a check reads a column of table (by its name)
// in a way that compares its text: an accepted_values, regex or unique
// check names it, or a custom query (sql, cross_table: it may compare any
// column's text, a NOT IN or a length) or a where condition of a check of
// table may read it (review 61: both passed on a column that is text in one
// file and TIMESTAMP or DOUBLE in another, where pandas read other texts).
// nil when no check does.
func textCompared(checks []Check, table string) func(col string) bool {
	read, all := map[string]bool{}, false
	for _, c := range checks {
		switch {
		case c.Kind == KindSQL || c.Kind == KindCrossTable:
			all = true
		case !strings.EqualFold(c.Table, table):
		case strings.TrimSpace(c.Where) != "":
			all = true
		case c.Kind == KindAcceptedValues || c.Kind == KindRegex || c.Kind == KindUnique:
			for _, col := range c.columns() {
				read[strings.ToLower(col)] = true
			}
		}
	}
	if !all && len(read) == 0 {
		return nil
	}
	return func(col string) bool { return all || read[strings.ToLower(col)] }
}
