package audit

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// A Parquet table's files may give a column two types that no reader
// refuses to read together. DuckDB reads them in their union's type
// (FLOAT beside DOUBLE as DOUBLE, DATE beside TIMESTAMP as TIMESTAMP,
// DECIMAL beside DOUBLE as DOUBLE, an integer beside a FLOAT as FLOAT,
// BOOLEAN beside BIGINT as BIGINT); pyarrow's dataset, and so
// pandas.read_parquet of the table's directory, in its first file's type
// (by path), casting the other files' values to it, and where a value
// does not fit that type exactly pyarrow 26.0.1 casts it without a word
// for these pairs: a DOUBLE 1e300 beside a FLOAT first is inf and 0.1 is
// 0.10000000149011612, a TIMESTAMP 2024-01-01 12:00:00 beside a DATE
// first is 2024-01-01, a DOUBLE 0.123 beside a DECIMAL(10,2) first is
// 0.12, a BIGINT 2 beside a BOOLEAN first is True. Where the union is the
// narrower reading DuckDB rounds instead: an INTEGER 16777217 beside a
// FLOAT is 16777216 to DuckDB and, the integers first, 16777217 to
// pandas. A range, unique or any check of the values passed in DuckDB's
// reading where pandas 3.1.1 reads a failing value
// (TestReader61TypesUnionedAcrossFilesAreRefused). Spark reads the table
// by one file's schema and fails on a file of the other type.
//
// So, for a column a check reads for its values (valuesRead: not a
// not_null), each file giving it one type of such a pair beside another
// file giving it the other is scanned (memoized by the file's identity
// and the types) for a value the other type does not hold exactly (the
// cast there and back changes it; a timestamp adjusted to UTC beside a
// DATE: any value, the date pyarrow takes being its zone's; a DECIMAL
// beside a FLOAT: any value, and beside a DOUBLE one pyarrow reads
// otherwise, its unscaled integer times 10^-scale, 0.3 as
// 0.30000000000000004, where DuckDB reads the nearest DOUBLE, 0.3), and the
// first holding one is refused, naming it, the column, both types and a
// file of the other; whatever the files' order, which a later file may
// change. Values both types hold (a DOUBLE 0.25 beside a FLOAT, a
// midnight beside a DATE) read alike and pass. Pairs pyarrow refuses to
// cast with a loss (a float of a fraction beside integers, DECIMALs of
// two scales, a DECIMAL beside an integer) fail there, but DuckDB's
// read_parquet without union_by_name (its default, as a reader of main
// globs the table) reads them in the first file's type too, rounding
// without a word: a DOUBLE 4.4 beside a BIGINT first is 4, a DECIMAL(38,3)
// 1.234 beside a DECIMAL(18,2) first 1.23, and a unique passed where it
// reads one value twice (review 62,
// TestReader62DuckDBReadsTheFirstFilesType): they are scanned alike. Left:
// INT32 beside INT64 (an integer of either fits or fails), TIMESTAMPs of
// two units (a nanosecond beside micros Spark reads otherwise:
// sparkIntsApart), a timestamp with and without UTC adjustment (one
// instant to both, UTC being the session's zone) and files whose footer
// lakewap does not read in Go (parquet_schema's: not marked).

//
// A nested leaf (a struct's field s.x, a list's element l[], a map's key
// or value m.key, m.value, at any depth) is read so too: DuckDB reads
// STRUCT(x FLOAT) beside STRUCT(x DOUBLE) as STRUCT(x DOUBLE), pyarrow in
// the first file's struct (1e300 inf), and so for lists and maps
// (TestNested61TypesUnionedAcrossFilesAreRefused). Each is compared by
// its column and path, as markSparkInts names leaves, and scanned in each
// file by a condition on its values (unionLeafCond); a file of more than
// maxUnionLeaves of them, or nested deeper than 64, beside another file,
// is refused.

// maxUnionLeaves bounds the nested leaves markUnion notes of a file.
const maxUnionLeaves = 1 << 12

// unionLeaf is a nested leaf of a column: its path (the column's name and
// .name, [], .key, .value), the steps to it from the column, and its
// unionType.
type unionLeaf struct {
	path  string
	steps []unionStep
	typ   string
	width string // an integer's: integerWidth (review 64, typeof)
}

// unionStep is a step to a nested leaf: a struct's field (name), a list's
// element ("[]"), a map's keys or values (".key", ".value").
type unionStep struct {
	kind, name string
}

// markUnion notes on cols (a file's, schemaColumns of nodes) the type of
// each top-level leaf that unionValues compares across files ("" for
// none), and its nested leaves'. A file of no rows counts as much:
// pyarrow's dataset takes the first file's type whether it holds rows or
// not (a FLOAT file of no rows first, a DOUBLE 1e300 read as inf), and
// its own scan finds nothing, so only the other files' values refuse.
func markUnion(cols []fileColumn, nodes []schemaNode, types []nodeTypes) {
	top := topLevel(nodes, types)
	if len(top) != len(cols) {
		return
	}
	var ends []int
	left := maxUnionLeaves
	for k, i := range top {
		cols[k].union = unionType(types[i])
		if cols[k].union == "HUGEINT" {
			cols[k].width = integerWidth(types[i])
		}
		if nodes[i].children > 0 || types[i].repetition == 2 {
			cols[k].union = ""
			if ends == nil {
				ends = subtreeEnds(nodes)
			}
			if !unionLeaves(&cols[k].unionLeaves, nodes, types, ends, i, false, clip(nodes[i].name, 128), nil, 0, &left) {
				cols[0].unionOver = true
				for j := range cols {
					cols[j].unionLeaves = nil
				}
				return
			}
		}
	}
}

// unionLeaves appends to out the leaves under the node at i that
// unionType compares, with their paths and steps (sparkIntLeaves'
// reading of lists and maps). False: past left leaves, or nested deeper
// than 64.
func unionLeaves(out *[]unionLeaf, nodes []schemaNode, types []nodeTypes, ends []int, i int, element bool, path string, steps []unionStep, depth int, left *int) bool {
	return eachNestedLeaf(nodes, types, ends, i, element, path, steps, depth, func(l int, path string, steps []unionStep) bool {
		typ := unionType(types[l])
		if typ == "" || len(steps) == 0 {
			return true
		}
		if *left--; *left < 0 {
			return false
		}
		w := ""
		if typ == "HUGEINT" {
			w = integerWidth(types[l])
		}
		*out = append(*out, unionLeaf{path: path, steps: steps, typ: typ, width: w})
		return true
	})
}

// unionLeafCond is the DuckDB condition that e, a column's value, holds
// at steps a value for which cond (of the value's expression) holds.
func unionLeafCond(e string, steps []unionStep, depth int, cond func(string) string) string {
	if len(steps) == 0 {
		return cond(e)
	}
	s := steps[0]
	if s.kind == "." {
		return unionLeafCond(fmt.Sprintf("struct_extract(%s, %s)", e, quoteLiteral(s.name)), steps[1:], depth+1, cond)
	}
	list := e
	switch s.kind {
	case ".key":
		list = "map_keys(" + e + ")"
	case ".value":
		list = "map_values(" + e + ")"
	}
	v := fmt.Sprintf("u%d", depth)
	return fmt.Sprintf("coalesce(len(list_filter(%s, %s -> coalesce(%s, false))) > 0, false)", list, v, unionLeafCond(v, steps[1:], depth+1, cond))
}

// unionType is the DuckDB type unionValues casts a leaf of type t by, or
// "" for one it leaves: "HUGEINT" stands for every integer.
func unionType(t nodeTypes) string {
	switch {
	case t.logical == ltDecimal || t.logical == 0 && t.converted == cvDecimal:
		p, s := max(t.precision, t.logicalPrecision), max(t.scale, t.logicalScale)
		if p < 1 || p > 38 || s < 0 || s > p {
			return "" // wideDecimals' or typesDisagree's
		}
		return fmt.Sprintf("DECIMAL(%d,%d)", p, s)
	case t.physical == ptBoolean:
		return "BOOLEAN"
	case t.physical == ptFloat && t.logical == 0 && t.converted == -1:
		return "FLOAT"
	case t.physical == ptDouble && t.logical == 0 && t.converted == -1:
		return "DOUBLE"
	case t.physical == ptInt32 && (t.logical == ltDate || t.logical == 0 && t.converted == cvDate):
		return "DATE"
	case t.physical == ptInt64 && t.logical == ltTimestamp:
		switch {
		case t.utc:
			return "TIMESTAMPTZ"
		case t.unit == 3:
			return "TIMESTAMP_NS"
		}
		return "TIMESTAMP"
	case t.physical == ptInt64 && t.logical == 0 && (t.converted == cvTimestampMillis || t.converted == cvTimestampMicros):
		return "TIMESTAMPTZ" // the converted types are adjusted to UTC
	case (t.physical == ptInt32 || t.physical == ptInt64) && (t.logical == 0 || t.logical == ltInteger) &&
		(t.converted == -1 || t.converted >= cvUint8 && t.converted <= cvInt64):
		return "HUGEINT"
	}
	return ""
}

// integerWidth is the integer type DuckDB reads a leaf of unionType
// HUGEINT as: by its logical IntType, else its converted type, else its
// physical type (INT32 as INTEGER, INT64 as BIGINT).
func integerWidth(t nodeTypes) string {
	bits, unsigned := int8(0), false
	switch {
	case t.logical == ltInteger:
		bits, unsigned = t.intBits, t.unsigned
	case t.converted >= cvUint8 && t.converted <= cvUint64:
		bits, unsigned = int8(8<<(t.converted-cvUint8)), true
	case t.converted >= cvInt8 && t.converted <= cvInt64:
		bits = int8(8 << (t.converted - cvInt8))
	case t.physical == ptInt32:
		bits = 32
	default:
		bits = 64
	}
	name := map[int8]string{8: "TINYINT", 16: "SMALLINT", 32: "INTEGER", 64: "BIGINT"}[bits]
	if name == "" {
		name = fmt.Sprintf("INT(%d)", bits)
	}
	if unsigned {
		name = "U" + name
	}
	return name
}

// unionFamily is the family of a unionType.
func unionFamily(typ string) string {
	switch {
	case typ == "FLOAT" || typ == "DOUBLE":
		return "float"
	case strings.HasPrefix(typ, "DECIMAL"):
		return "decimal"
	case typ == "HUGEINT":
		return "integer"
	case strings.HasPrefix(typ, "TIMESTAMP"):
		return "timestamp"
	}
	return strings.ToLower(typ) // boolean, date
}

// unionPairs are the pairs of families pyarrow casts across without a
// word, with what readers read, for a refusal.
var unionPairs = map[[2]string]string{
	{"float", "float"}:     "a DOUBLE 0.1 beside a FLOAT first is 0.10000000149011612 to pandas, 1e300 inf",
	{"decimal", "float"}:   "a DOUBLE 0.123 beside a DECIMAL(10,2) first is 0.12 to pandas, and DuckDB reads a DECIMAL beside a DOUBLE as a DOUBLE, rounded",
	{"integer", "float"}:   "DuckDB reads an integer beside a FLOAT as a FLOAT, 16777217 as 16777216, and pandas, the integers first, as written; a DOUBLE 4.4 beside a BIGINT first is 4 to DuckDB's read_parquet without union_by_name",
	{"boolean", "integer"}: "an integer 2 beside a BOOLEAN first is True to pandas",
	{"boolean", "float"}:   "a DOUBLE 0.5 beside a BOOLEAN first is True to pandas",
	{"date", "timestamp"}:  "a TIMESTAMP 2024-01-01 12:00:00 beside a DATE first is 2024-01-01 to pandas",
	// pyarrow fails on the values these lose; DuckDB's read_parquet
	// without union_by_name rounds them (review 62).
	{"integer", "decimal"}: "a DECIMAL 4.4 beside a BIGINT first is 4 to DuckDB's read_parquet without union_by_name",
	{"decimal", "decimal"}: "a DECIMAL(38,3) 1.234 beside a DECIMAL(18,2) first is 1.23 to DuckDB's read_parquet without union_by_name",
}

// unionPair is what readers read of a pair of unionTypes, or "" when
// unionValues leaves the pair.
func unionPair(a, b string) string {
	if a == b {
		return ""
	}
	fa, fb := unionFamily(a), unionFamily(b)
	if s, ok := unionPairs[[2]string{fa, fb}]; ok {
		return s
	}
	return unionPairs[[2]string{fb, fa}]
}

// unionLoss is the DuckDB condition of a value of column q (quoted), of
// unionType own, that unionType other does not hold exactly and that a
// reader reads otherwise for it, or "" for none.
func unionLoss(q, own, other string) string {
	switch {
	case own == "TIMESTAMPTZ" && other == "DATE":
		// pyarrow takes the date in the zone of the file's Arrow
		// schema, which the footer's type does not say.
		return q + " IS NOT NULL"
	case unionFamily(own) == "decimal" && other == "FLOAT":
		// pyarrow 26.0.1 casts a decimal to a float not to the nearest
		// one (0.10 to the FLOAT 0.099999994), DuckDB to the nearest.
		return q + " IS NOT NULL"
	case unionFamily(own) == "decimal" && other == "DOUBLE":
		// pyarrow 26.0.1 casts a decimal to a DOUBLE as its unscaled
		// integer times 10^-scale (0.3 to 0.30000000000000004, about
		// half of all decimals of scale 1 to 4), DuckDB to the nearest
		// (0.3): a value read otherwise so, or whose integer a DOUBLE
		// does not hold, or that the DOUBLE does not hold, counts.
		var scale int
		if _, err := fmt.Sscanf(own, "DECIMAL(%d,%d)", new(int), &scale); err != nil {
			return q + " IS NOT NULL"
		}
		u := fmt.Sprintf("TRY_CAST(replace(CAST(%s AS VARCHAR), '.', '') AS HUGEINT)", q)
		return fmt.Sprintf("%s IS NOT NULL AND coalesce(abs(%s) > 9007199254740992 OR CAST(%s AS DOUBLE) * CAST('1e-%d' AS DOUBLE) <> CAST(%s AS DOUBLE) OR TRY_CAST(TRY_CAST(%s AS DOUBLE) AS %s) <> %s, true)",
			q, u, u, scale, q, q, own, q)
	}
	return fmt.Sprintf("%s IS NOT NULL AND coalesce(TRY_CAST(TRY_CAST(%s AS %s) AS %s) <> %s, true)", q, q, other, own, q)
}

// unionValues refuses a Parquet table (files, in order; cols, their
// columns) a column of which, read for its values by a check of table,
// is of two types readers cast across otherwise (above) and holds a value
// one of them does not hold exactly.
func (r *run) unionValues(ctx context.Context, cols map[string][]fileColumn, files []string, objPath, ids map[string]string, checks []Check, table string) error {
	read := valuesRead(checks, table)
	// A column's leaves unionValues compares: the column itself (path
	// ""), and its nested leaves.
	leaves := func(c fileColumn) []unionLeaf {
		out := c.unionLeaves
		if c.union != "" {
			out = append([]unionLeaf{{typ: c.union}}, out...)
		}
		return out
	}
	// Per leaf (column and path, lower case): its types, each with the
	// first file of it.
	typed := map[string]map[string]string{}
	type seen struct{ key, typ string }
	var order []seen // the leaves' types, as first seen
	for _, f := range files {
		if fc := cols[f]; len(files) > 1 && len(fc) > 0 && fc[0].unionOver && slices.ContainsFunc(fc, func(c fileColumn) bool { return read(c.name) }) {
			return fmt.Errorf("file %s has more than %d nested leaves, or some nested deeper than 64, which lakewap does not compare across the table's files: DuckDB reads a leaf of two types across files in their union's type, pyarrow and pandas.read_parquet in the first file's, casting without a word (write fewer nested fields, or the table in one file)",
				objPath[f], maxUnionLeaves)
		}
		for _, c := range cols[f] {
			if !read(c.name) {
				continue
			}
			for _, l := range leaves(c) {
				k := strings.ToLower(c.name) + "\x00" + strings.ToLower(l.path)
				if typed[k] == nil {
					typed[k] = map[string]string{}
				}
				if _, ok := typed[k][l.typ]; !ok {
					typed[k][l.typ] = f
					order = append(order, seen{k, l.typ})
				}
			}
		}
	}
	for _, f := range files {
		var conds []string
		type loss struct{ name, path, own, other, otherFile, what string }
		var losses []loss
		tag := "union-values"
		for _, c := range cols[f] {
			for _, l := range leaves(c) {
				k := strings.ToLower(c.name) + "\x00" + strings.ToLower(l.path)
				if len(typed[k]) < 2 {
					continue
				}
				for _, e := range order {
					if e.key != k {
						continue
					}
					other := e.typ
					what := unionPair(l.typ, other)
					if what == "" {
						continue
					}
					if unionLoss("v", l.typ, other) == "" {
						continue
					}
					cond := unionLeafCond(quoteIdent(c.name), l.steps, 0, func(q string) string { return unionLoss(q, l.typ, other) })
					conds = append(conds, "count(*) FILTER (WHERE "+cond+")")
					losses = append(losses, loss{c.name, l.path, l.typ, other, typed[k][other], what})
					tag += "\x00" + cond
				}
			}
		}
		if len(conds) == 0 {
			continue
		}
		named := func(l loss) string {
			if l.path == "" {
				return fmt.Sprintf("column %q", l.name)
			}
			return fmt.Sprintf("column %q: leaf %q", clip(l.name, 128), clip(l.path, 256))
		}
		err := r.guardScan(ctx, tag, f, ids, conds, func(err error) error {
			l := losses[0]
			return fmt.Errorf("file %s: %s is %s there and %s in file %s, and lakewap could not look for values one does not hold exactly (%v): readers may disagree on them",
				objPath[f], named(l), unionReadable(l.own), unionReadable(l.other), objPath[l.otherFile], clip(err.Error(), 256))
		}, func(i int, n int64) error {
			l := losses[i]
			held := fmt.Sprintf("holds %d values", n)
			if l.path != "" {
				held = fmt.Sprintf("%d of its rows hold values", n)
			}
			return fmt.Errorf("file %s: %s is %s there and %s in file %s, and %s not held exactly as %s: DuckDB reads the files together in their union's type (union_by_name), pyarrow, pandas.read_parquet and DuckDB's read_parquet without union_by_name in the first file's type, casting the other's values to it without a word or failing (%s), and Spark by one file's schema, failing on the other's narrower type: readers disagree on them, and a check reads the column (write the column in one type)",
				objPath[f], named(l), unionReadable(l.own), unionReadable(l.other), objPath[l.otherFile], held, unionReadable(l.other), l.what)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// unionReadable is a unionType for a message.
func unionReadable(typ string) string {
	switch typ {
	case "HUGEINT":
		return "an integer"
	case "TIMESTAMPTZ":
		return "a TIMESTAMP adjusted to UTC"
	}
	return typ
}

// unionRendered names a column of a Parquet table's files (cols, files in
// order) whose text a check of table compares and that two files give
// unionTypes rendered otherwise (review 62): DuckDB reads the files
// together in their union's type and renders it so (a BIGINT 3 beside a
// DOUBLE 4.0 as 3.0, a BOOLEAN true beside a BIGINT 1 as 1, a
// DECIMAL(18,1) 4.0 beside a DECIMAL(38,2) as 4.00), pandas 3.1.1 and
// DuckDB's read_parquet without union_by_name in the first file's type
// (3, True, 4.0), every value held exactly by both types, so unionValues
// passes them; a regex and an accepted_values passed where pandas found
// every row failing
// (TestReader62NumbersRenderedOtherwiseAcrossFilesAreRefused). A check
// compares the text of a column an accepted_values or regex names, and of
// one a where condition of table's or a custom query reads under a cast to
// text, a text function or a set operation (textReadColumns, review 63: a
// sql of regexp_matches(CAST(x AS VARCHAR), ...) and a not_null's where of
// x::VARCHAR = '3', format or concat passed where DuckDB's plain read
// fails them, TestReader63NumbersRenderedOtherwiseUnderCastsAreRefused;
// numbers' and booleans' types only, unionNumber);
// a struct's fields and a list's elements (unionLeaves) are compared as
// the column is. A file of no rows gives its type too (pyarrow and DuckDB
// take the first file's). DECIMALs of one scale render alike.
func (r *run) unionRendered(ctx context.Context, cols map[string][]fileColumn, files []string, objPath map[string]string, checks []Check, table string) error {
	type typed struct{ typ, file string }
	type apart struct {
		name, path string
		was        typed
		typ, file  string
	}
	first := map[string]typed{} // lower-case name and path: the first file's type
	var found []apart
	names := map[string]bool{}
	exact := map[string]typed{} // lower-case name and path: the first file's type as typeof names it
	var widthsApart []apart
	for _, f := range files {
		for _, c := range cols[f] {
			names[strings.ToLower(c.name)] = true
			leaves := c.unionLeaves
			if c.union != "" {
				leaves = append([]unionLeaf{{typ: c.union, width: c.width}}, leaves...)
			}
			for _, l := range leaves {
				key := strings.ToLower(c.name) + "\x00" + strings.ToLower(l.path)
				typ := l.typ
				if l.width != "" {
					typ = l.width
				}
				if was, ok := exact[key]; !ok {
					exact[key] = typed{typ, f}
				} else if was.typ != typ {
					widthsApart = append(widthsApart, apart{c.name, l.path, was, typ, f})
				}
				was, ok := first[key]
				if !ok {
					first[key] = typed{l.typ, f}
					continue
				}
				if unionRendering(was.typ) != unionRendering(l.typ) {
					found = append(found, apart{c.name, l.path, was, l.typ, f})
				}
			}
		}
	}
	if len(found) == 0 && len(widthsApart) == 0 {
		return nil
	}
	named := map[string]bool{}
	for _, c := range checks {
		if !strings.EqualFold(c.Table, table) || c.Kind != KindAcceptedValues && c.Kind != KindRegex {
			continue
		}
		for _, col := range c.columns() {
			named[strings.ToLower(col)] = true
		}
	}
	cast, typeOf, timeText := r.textReadColumns(ctx, checks, table, names)
	for _, a := range widthsApart {
		if typeOf != nil && typeOf(a.name) {
			what := fmt.Sprintf("column %q", clip(a.name, 128))
			if a.path != "" {
				what = fmt.Sprintf("column %q: leaf %q", clip(a.name, 128), clip(a.path, 256))
			}
			return fmt.Errorf("%s is %s in file %s and %s in file %s, and a where condition or custom query reads its type (typeof, hash, bit_count, a cast to BIT): DuckDB reads the files together in their union's type, DuckDB's read_parquet without union_by_name and pandas.read_parquet in the first file's: readers disagree on it (write the column in one type)",
				what, a.was.typ, objPath[a.was.file], a.typ, objPath[a.file])
		}
	}
	for _, a := range found {
		how := "a check compares its text"
		switch {
		case named[strings.ToLower(a.name)]:
		case cast != nil && cast(a.name) && unionNumber(a.was.typ) && unionNumber(a.typ):
			how = "a where condition or custom query may read its text (a cast to text, a text function, a set operation)"
		case timeText != nil && timeText(a.name) && unionTime(a.was.typ) && unionTime(a.typ):
			how = "a where condition or custom query may read its text (a cast to text, a text function, a set operation; DuckDB renders a DATE 2024-01-01 and a TIMESTAMP 2024-01-01 00:00:00)"
		default:
			continue
		}
		what := fmt.Sprintf("column %q", clip(a.name, 128))
		if a.path != "" {
			what = fmt.Sprintf("column %q: leaf %q", clip(a.name, 128), clip(a.path, 256))
		}
		return fmt.Errorf("%s is %s in file %s and %s in file %s, and %s: DuckDB reads the files together in their union's type and renders it so (a BIGINT 3 beside a DOUBLE as 3.0, a BOOLEAN true beside a BIGINT as 1), pandas.read_parquet and DuckDB's read_parquet without union_by_name in the first file's type (3, True): readers disagree on its text (write the column in one type)",
			what, unionReadable(a.was.typ), objPath[a.was.file], unionReadable(a.typ), objPath[a.file], how)
	}
	return nil
}

// unionNumber is whether a unionType is a number's or a boolean's, whose
// text a where condition or custom query reaches only through a cast to
// text or a text function (textReads); a time's is unionTime's.
func unionNumber(typ string) bool {
	switch unionFamily(typ) {
	case "integer", "float", "decimal", "boolean":
		return true
	}
	return false
}

// unionTime is whether a unionType is a DATE's or a timestamp's: a DATE
// beside a TIMESTAMP of midnights (which unionValues passes) is read by
// the audit's union_by_name as a TIMESTAMP, rendered 2024-01-01
// 00:00:00, and by DuckDB's plain read_parquet (the DATE file first) as a
// DATE, 2024-01-01, as pandas reads date objects; a CAST to text or a
// text function tells them apart, date_trunc, strftime, year and a CAST
// to DATE or TIMESTAMP do not (textReads.times, review 64,
// TestReader64DatesBesideTimestampsReadAsTextAreRefused). Timestamps of
// two units or zones are sparkIntsApart's.
func unionTime(typ string) bool {
	switch unionFamily(typ) {
	case "date", "timestamp":
		return true
	}
	return false
}

// unionRendering is a unionType as its values' text tells it: a
// DECIMAL's scale, or the type. A DECIMAL of scale 0 renders as an
// integer does (DuckDB 3 for a BIGINT 3 beside a DECIMAL(38,0), pandas 3
// for Decimal('3')).
func unionRendering(typ string) string {
	var p, s int
	if _, err := fmt.Sscanf(typ, "DECIMAL(%d,%d)", &p, &s); err == nil {
		if s == 0 {
			return "HUGEINT"
		}
		return fmt.Sprintf("DECIMAL(,%d)", s)
	}
	return typ
}
