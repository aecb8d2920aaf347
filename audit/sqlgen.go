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

func qualified(schema, table string) string { return quoteIdent(schema) + "." + quoteIdent(table) }

func literalList(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = quoteLiteral(v)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// viewSQL defines a table as a view over local files. union_by_name lets
// files written by different writer versions (a column added later) be read
// together.
func viewSQL(schema, table, format string, files []string) string {
	// A single file needs no union, and reading it plainly is measurably
	// faster.
	union := ""
	if len(files) > 1 {
		union = ", union_by_name = true"
	}
	var from string
	switch format {
	case FormatCSV:
		from = fmt.Sprintf("read_csv(%s, header = true%s)", literalList(files), union)
	case FormatJSONL:
		from = fmt.Sprintf("read_json(%s, format = 'newline_delimited'%s)", literalList(files), union)
	default:
		from = fmt.Sprintf("read_parquet(%s%s)", literalList(files), union)
	}
	return fmt.Sprintf("CREATE VIEW %s AS SELECT * FROM %s", qualified(schema, table), from)
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
	sel := make([]string, len(cols))
	for i, c := range cols {
		sel[i] = fmt.Sprintf("CAST(NULL AS %s) AS %s", c.Type, quoteIdent(c.Name))
	}
	return fmt.Sprintf("CREATE VIEW %s AS SELECT %s WHERE false", qualified(schema, table), strings.Join(sel, ", "))
}

// failPredicate is the condition a failing row meets, for the kinds that
// judge rows one at a time.
func failPredicate(c Check) string {
	switch c.Kind {
	case KindNotNull:
		cols := c.columns()
		parts := make([]string, len(cols))
		for i, col := range cols {
			parts[i] = quoteIdent(col) + " IS NULL"
		}
		return strings.Join(parts, " OR ")
	case KindAcceptedValues:
		// Compared as text because YAML gives text; NULL is not judged here.
		col := quoteIdent(c.Column)
		return fmt.Sprintf("%s IS NOT NULL AND CAST(%s AS VARCHAR) NOT IN (%s)", col, col,
			strings.Trim(literalList(c.Values), "[]"))
	case KindRange:
		col := quoteIdent(c.Column)
		var parts []string
		if c.Min != nil {
			parts = append(parts, fmt.Sprintf("%s %s %s", col, map[bool]string{false: "<", true: "<="}[c.StrictMin], num(*c.Min)))
		}
		if c.Max != nil {
			parts = append(parts, fmt.Sprintf("%s %s %s", col, map[bool]string{false: ">", true: ">="}[c.StrictMax], num(*c.Max)))
		}
		return strings.Join(parts, " OR ")
	case KindRegex:
		col := quoteIdent(c.Column)
		return fmt.Sprintf("%s IS NOT NULL AND NOT regexp_matches(CAST(%s AS VARCHAR), %s)", col, col, quoteLiteral(c.Pattern))
	}
	return ""
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
	if cols := c.columns(); c.Kind != KindNotNull && len(cols) == 1 {
		return fmt.Sprintf("count(%s)", quoteIdent(cols[0]))
	}
	return "count(*)"
}

// aggExprs are the select-list expressions a check needs from the one
// aggregate scan of its table; count(*) is always expression 0 and not
// repeated here.
func aggExprs(c Check) []string {
	e := aggExprsOf(c)
	if c.Mostly != nil {
		e = append(e, valueCount(c))
	}
	return e
}

func aggExprsOf(c Check) []string {
	switch c.Kind {
	case KindNotNull, KindAcceptedValues, KindRegex:
		return []string{fmt.Sprintf("count(*) FILTER (WHERE %s)", failPredicate(c))}
	case KindStat:
		return []string{fmt.Sprintf("%s(%s)", c.Stat, quoteIdent(c.Column))}
	case KindRange:
		col := quoteIdent(c.Column)
		return []string{
			fmt.Sprintf("count(*) FILTER (WHERE %s)", failPredicate(c)),
			fmt.Sprintf("min(%s)", col),
			fmt.Sprintf("max(%s)", col),
		}
	case KindUnique:
		// The extra occurrences of a key. A single column ignores NULLs (they
		// are not_null's business); a combination counts every row, NULLs
		// comparing equal.
		cols := c.columns()
		if len(cols) == 1 {
			col := quoteIdent(cols[0])
			return []string{fmt.Sprintf("count(%s) - count(DISTINCT %s)", col, col)}
		}
		return []string{fmt.Sprintf("count(*) - count(DISTINCT %s)", rowExpr(cols))}
	case KindFreshness:
		return []string{fmt.Sprintf("max(%s)", quoteIdent(c.Column))}
	}
	return nil
}

// uniqueBitmapExpr counts the extra occurrences of an integer column's
// values, all within [lo, hi], with a bitmap of that range instead of a hash
// table: the same figure as count(col) - count(DISTINCT col).
func uniqueBitmapExpr(col string, lo, hi int64) string {
	c := quoteIdent(col)
	return fmt.Sprintf("count(%s) - coalesce(bit_count(bitstring_agg(%s::BIGINT, %d, %d)), 0)", c, c, lo, hi)
}

func rowExpr(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = quoteIdent(c)
	}
	return "(" + strings.Join(q, ", ") + ")"
}

// aggregateSQL is the one scan of a table that serves all its checks (of
// the same where condition).
func aggregateSQL(schema, table string, exprs []string, where ...string) string {
	var b strings.Builder
	b.WriteString("SELECT count(*)")
	for _, e := range exprs {
		b.WriteString(", ")
		b.WriteString(e)
	}
	b.WriteString(" FROM ")
	b.WriteString(filtered(schema, table, strings.Join(where, "")))
	return b.String()
}

// sampleSQL selects up to limit failing rows of a failed check as JSON
// objects, or "" when the kind has no rows to show. It stops at the limit;
// unique checks get theirs from uniqueSQL.
func sampleSQL(schema string, c Check, limit int) string {
	t := filtered(schema, c.Table, c.Where)
	switch c.Kind {
	case KindNotNull, KindAcceptedValues, KindRange, KindRegex:
		return fmt.Sprintf("SELECT CAST(to_json(s) AS VARCHAR) FROM (SELECT * FROM %s WHERE %s LIMIT %d) s",
			t, failPredicate(c), limit)
	}
	return ""
}

// uniqueSQL is a unique check's one grouped scan. Its row: all rows, the
// extra occurrences of keys (a single column ignores NULLs, they are
// not_null's business; a combination counts every row, NULLs comparing
// equal), the rows counted for mostly, and up to limit duplicated keys with
// their duplicate_count as a JSON array, most duplicated first, then by key.
func uniqueSQL(schema, table string, c Check, limit int) string {
	cols := c.columns()
	q := make([]string, len(cols))
	fields := make([]string, len(cols))
	for i, col := range cols {
		q[i] = quoteIdent(col)
		fields[i] = quoteLiteral(col) + ": " + q[i]
	}
	keys := strings.Join(q, ", ")
	counted, order := "true", "row("+keys+")"
	if len(cols) == 1 {
		counted, order = q[0]+" IS NOT NULL", q[0]
	}
	sample := fmt.Sprintf("{%s, 'duplicate_count': n}", strings.Join(fields, ", "))
	return fmt.Sprintf("SELECT CAST(coalesce(sum(n), 0) AS BIGINT), CAST(coalesce(sum(n - 1) FILTER (WHERE %s), 0) AS BIGINT), "+
		"CAST(coalesce(sum(n) FILTER (WHERE %s), 0) AS BIGINT), "+
		"coalesce(CAST(to_json(min_by(%s, {'o': -n, 'k': %s}, %d) FILTER (WHERE n > 1 AND %s)) AS VARCHAR), '[]') "+
		"FROM (SELECT %s, count(*) AS n FROM %s GROUP BY %s) g",
		counted, counted, sample, order, limit, counted, keys, filtered(schema, table, c.Where), keys)
}

// trimQuery drops the trailing semicolons of a user query.
func trimQuery(query string) string {
	q := strings.TrimSpace(query)
	for strings.HasSuffix(q, ";") {
		q = strings.TrimSpace(strings.TrimSuffix(q, ";"))
	}
	return q
}

// customSQL runs a user query as a subquery, which admits a single query
// and nothing else (no second statement, no DDL). It returns the number of
// rows and up to limit of them as JSON objects in one pass.
func customSQL(query string, limit int) string {
	q := trimQuery(query)
	// The newline ends a trailing -- comment in the user's query.
	return fmt.Sprintf("SELECT CAST(to_json(s) AS VARCHAR), count(*) OVER () FROM (\n%s\n) s LIMIT %d", q, limit)
}

// typeofSQL asks DuckDB for the canonical name of a type (INT -> INTEGER).
// t must match typeName.
func typeofSQL(t string) string { return fmt.Sprintf("SELECT typeof(CAST(NULL AS %s))", t) }
