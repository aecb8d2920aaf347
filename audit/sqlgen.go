package audit

import (
	"fmt"
	"strings"
)

// SQL generation: pure functions, so the SQL a suite produces can be read and
// tested without DuckDB. Every name from config goes through quoteIdent and
// every value through quoteLiteral or num.

// DuckDB schemas holding the views of one run.
const (
	schemaMain  = "main"  // whole table at the audited ref
	schemaBatch = "batch" // files changed on the ref against the base ref
	schemaBase  = "base"  // whole table at the base ref
)

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func quoteLiteral(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }

func isNull(col string) string { return quoteIdent(col) + " IS NULL" }

// isMissing is the condition of a row lacking col's value as any reader of
// main reads it: NULL, or NaN in a FLOAT or DOUBLE column, which pandas
// reads as missing (isna) where DuckDB, pyarrow and Spark read a value
// (TestNotNullFailsNaN). DuckDB folds typeof of a column to a constant, so
// a column of another type costs nothing more than IS NULL, and TRY_CAST
// binds for every type.
func isMissing(col string) string {
	q := quoteIdent(col)
	return fmt.Sprintf("(%s IS NULL OR (typeof(%s) IN ('FLOAT', 'DOUBLE') AND isnan(TRY_CAST(%s AS DOUBLE))))", q, q, q)
}

func qualified(schema, table string) string { return quoteIdent(schema) + "." + quoteIdent(table) }

func literalList(vals []string) string {
	return "[" + strings.Join(each(vals, quoteLiteral), ", ") + "]"
}

// each is f of every one of vals, in order.
func each[T, U any](vals []T, f func(T) U) []U {
	out := make([]U, len(vals))
	for i, v := range vals {
		out[i] = f(v)
	}
	return out
}

// viewSQL defines a table as a view over local files. union_by_name lets
// files written by different writer versions (a column added later) be read
// together.
func viewSQL(schema, table, format string, files []string) string {
	return fmt.Sprintf("CREATE VIEW %s AS SELECT * FROM %s", qualified(schema, table), readSQL(format, files))
}

// noHive is every read_* call's option turning off DuckDB's guess of hive
// partitions from the files' paths. The engine reads local copies (under
// WorkDir or CacheDir), whose directories are the engine's, not the
// table's: an operator's directory named "env=prod" added a column env to
// every view of two or more files. lakewap adds no hive partition columns
// (DESIGN.md); a Delta table's partition values come from its log.
const noHive = ", hive_partitioning = false"

// csvDialect is every read_csv call's dialect: the one pandas and pyarrow
// read a CSV file in (comma-separated, quoted with a double quote and
// escaped by doubling it, no comment lines, no lines skipped before the
// header), and Spark too but for its escape, a backslash (fields with a
// quote or a trailing backslash are refused: nullSpelling), instead of
// DuckDB's guess of it from the file. A
// writer could shape a file DuckDB guesses otherwise (a ';' that makes
// more columns, a line starting with '#' taken for a comment, a first line
// skipped, ' as the quote), so that the audit read other rows and values
// than those readers (TestCSVDialectIsNotSniffed). A file not in this
// dialect reads in other columns, or fails with DuckDB's error naming it.
const csvDialect = `, delim = ',', quote = '"', escape = '"', comment = '', skip = 0`

// jsonRecords makes every read_json read each line as one record: a line
// that is not an object (an array, a number) fails the read. By default
// DuckDB then read the whole table as one column named json, and a row
// count passed on it where Spark reads an array's objects as rows
// (TestTablesSparkReadsOtherwiseAreRefused).
const jsonRecords = ", records = true"

// readSQL is the table function reading files of format.
func readSQL(format string, files []string) string {
	// A single file needs no union, and reading it plainly is measurably
	// faster.
	union := noHive
	if len(files) > 1 {
		union += ", union_by_name = true"
	}
	var from string
	switch format {
	case FormatCSV:
		from = fmt.Sprintf("read_csv(%s, header = true%s%s)", literalList(files), csvDialect, union)
	case FormatJSONL:
		from = fmt.Sprintf("read_json(%s, format = 'newline_delimited'%s%s)", literalList(files), jsonRecords, union)
	default:
		from = fmt.Sprintf("read_parquet(%s%s)", literalList(files), union)
	}
	return from
}

// readParquetParamSQL is readSQL(FormatParquet, files) for n files named
// by the statement's one parameter, a list of them: the same table function
// with the same options. DuckDB binds a statement whose table function
// takes a parameter once, when it runs it; one that reads a view over
// read_parquet it binds when the driver prepares it and again when it runs
// it (each binding reads the files' footers). It is the view's SELECT *
// of that read, as a subquery: read_parquet alone also has virtual columns
// (filename, file_row_number, file_index) that the view has not, and a
// check of a column the files lack but named so bound to one over the
// bare read where it errs over the view: not_null and range passed
// (TestReview37FusedReadHasOnlyTheViewsColumns).
func readParquetParamSQL(n int) string {
	union := noHive
	if n > 1 {
		union += ", union_by_name = true"
	}
	return "(SELECT * FROM read_parquet(?" + union + "))"
}

// emptyViewSQL is a table without files that has the columns of a file of
// the same table (read elsewhere), so checks bind and see zero rows.
func emptyViewSQL(schema, table, format, schemaFile string) string {
	return viewSQL(schema, table, format, []string{schemaFile}) + " LIMIT 0"
}

// syntheticEmptyViewSQL is a table of which no file exists anywhere: zero
// rows with the given columns, so that row counts are 0 rather than errors.
func syntheticEmptyViewSQL(schema, table string, cols []ColumnType) string {
	if len(cols) == 0 {
		cols = []ColumnType{{Name: "__no_files", Type: "INTEGER"}}
	}
	sel := each(cols, func(c ColumnType) string { return fmt.Sprintf("CAST(NULL AS %s) AS %s", c.Type, quoteIdent(c.Name)) })
	return fmt.Sprintf("CREATE VIEW %s AS SELECT %s WHERE false", qualified(schema, table), strings.Join(sel, ", "))
}

// failPredicate is the condition a failing row meets, for the kinds that
// judge rows one at a time, and "" for the others.
func failPredicate(c Check) string {
	if k := kindOf(c); k != nil && k.failing != nil {
		return k.failing(c)
	}
	return ""
}

// countFailing is the aggregate of a row-level check: its failing rows.
func countFailing(c Check) []string {
	return []string{fmt.Sprintf("count(*) FILTER (WHERE %s)", failPredicate(c))}
}

// filtered is a table, or the rows of it a check's where condition keeps.
// The condition is the user's SQL, trusted as custom SQL is; the newlines
// end a -- comment in it.
func filtered(schema, table, where string) string {
	t := qualified(schema, table)
	if strings.TrimSpace(where) == "" {
		return t
	}
	return fmt.Sprintf("(SELECT * FROM %s WHERE (\n%s\n)) AS %s", t, where, quoteIdent(table))
}

// valueCount is the expression counting the rows a check's mostly fraction
// is taken over: the rows with a value, or every row for not_null and
// multi-column unique (as Great Expectations does).
func valueCount(c Check) string {
	if cols := c.columns(); !kindOf(c).mostlyOverAll && len(cols) == 1 {
		return fmt.Sprintf("count(%s)", quoteIdent(cols[0]))
	}
	return "count(*)"
}

// aggExprs are the select-list expressions a check needs from the one
// aggregate scan of its table; count(*) is always expression 0 and not
// repeated here.
func aggExprs(c Check) []string {
	var e []string
	if k := kindOf(c); k != nil && k.agg != nil {
		e = k.agg(c)
	}
	if c.Mostly != nil {
		e = append(e, valueCount(c))
	}
	return e
}

// aggregateSQL is the one scan of a table that serves all its checks (of
// the same where condition).
func aggregateSQL(schema, table string, exprs []string, where ...string) string {
	return "SELECT " + strings.Join(append([]string{"count(*)"}, exprs...), ", ") + " FROM " +
		filtered(schema, table, strings.Join(where, ""))
}

// sampleSQL selects up to limit failing rows of a failed check as JSON
// objects, or "" when the kind has no rows to show. It stops at the limit;
// unique checks get theirs from uniqueSQL.
func sampleSQL(schema string, c Check, limit int) string {
	p := failPredicate(c)
	if p == "" {
		return ""
	}
	return fmt.Sprintf("SELECT CAST(to_json(__lakewap_row) AS VARCHAR) FROM (SELECT * FROM %s WHERE %s LIMIT %d) __lakewap_row",
		filtered(schema, c.Table, c.Where), p, limit)
}

// samplesSQL selects up to limit rows failing any of preds (the failing
// conditions of checks of one scan) as JSON objects, each with whether it
// fails each of preds.
func samplesSQL(schema, table, where string, preds []string, limit int) string {
	flags := each(preds, func(p string) string { return "coalesce((" + p + "), false)" })
	ors := each(preds, func(p string) string { return "(" + p + ")" })
	return fmt.Sprintf("SELECT CAST(to_json(__lakewap_row) AS VARCHAR), %s FROM (SELECT * FROM %s WHERE %s LIMIT %d) __lakewap_row",
		strings.Join(flags, ", "), filtered(schema, table, where), strings.Join(ors, " OR "), limit)
}

// trimQuery drops the trailing semicolons of a user query.
func trimQuery(query string) string {
	q := strings.TrimSpace(query)
	for strings.HasSuffix(q, ";") {
		q = strings.TrimSpace(strings.TrimSuffix(q, ";"))
	}
	return q
}
