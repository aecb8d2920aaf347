package audit

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ErrNotConfined is why a custom query (or a where condition) is refused:
// it is not exactly one read-only query over the run's own tables.
var ErrNotConfined = errors.New("not a single read-only query over the audit's tables")

// confinedFunctions are the table functions a custom query may call: they
// make rows up and read nothing.
var confinedFunctions = map[string]bool{"range": true, "generate_series": true, "unnest": true}

// json_structure is not among scalarFunctions: it recurses once per level
// of its input, a column's text the writer chooses, and over 100,000
// nested brackets it overflowed DuckDB's stack and killed the process
// (TestLimits64JSONStructureOfAWritersTextIsNotCalled). The other JSON
// functions listed walk their input without recursing.

// scalarFunctions are the functions (scalar, aggregate and window, and the
// operators DuckDB's parser writes as functions) a custom query or a where
// condition may call: functions of the values in its rows. Anything else —
// functions that read settings, variables, the catalog, the environment or
// files (current_setting, getvariable, duckdb_*, read_text) or that a later
// DuckDB adds — is refused by name.
var scalarFunctions = setOf(
	// operators
	"+", "-", "*", "/", "//", "%", "**", "^", "||", "&", "|", "<<", ">>", "~", "!", "@",
	"~~", "!~~", "~~*", "!~~*", "~~~", "!~~~", "^@", "->", "->>", "@>", "<@", "&&",
	// conditionals and comparison
	"coalesce", "ifnull", "nullif", "greatest", "least", "if", "iff", "isnan", "isinf", "isfinite", "typeof",
	// numbers
	"abs", "round", "floor", "ceil", "ceiling", "trunc", "sign", "sqrt", "cbrt", "power", "pow", "exp", "ln", "log",
	"log10", "log2", "mod", "even", "gcd", "lcm", "factorial", "pi", "degrees", "radians", "sin", "cos", "tan",
	"asin", "acos", "atan", "atan2", "round_even", "bit_count", "xor", "add", "subtract", "multiply", "divide",
	// text
	"lower", "upper", "lcase", "ucase", "length", "len", "strlen", "char_length", "character_length",
	"octet_length", "bit_length", "substr", "substring", "substring_grapheme", "trim", "ltrim", "rtrim",
	"replace", "concat", "concat_ws", "starts_with", "ends_with", "suffix", "prefix", "contains", "strpos",
	"instr", "position", "left", "right", "left_grapheme", "right_grapheme", "lpad", "rpad", "reverse",
	"repeat", "split_part", "string_split", "str_split", "string_to_array", "regexp_matches",
	"regexp_full_match", "regexp_replace", "regexp_extract", "regexp_extract_all", "regexp_split_to_array",
	"like_escape", "ilike_escape", "not_like_escape", "md5", "sha1", "sha256", "hash", "format", "printf",
	"ascii", "chr", "unicode", "ord", "translate", "initcap", "strip_accents", "nfc_normalize", "levenshtein",
	"damerau_levenshtein", "hamming", "jaccard", "jaro_similarity", "jaro_winkler_similarity", "mismatches",
	"editdist3", "to_base64", "from_base64", "base64", "hex", "unhex", "bin", "unbin", "encode", "decode",
	"string_agg", "group_concat", "listagg", "array_to_string", "list_to_string", "formatReadableSize",
	"format_bytes", "parse_path", "parse_filename", "parse_dirname", "parse_dirpath",
	// dates and times
	"date_trunc", "datetrunc", "date_part", "datepart", "extract", "date_diff", "datediff", "date_sub",
	"datesub", "date_add", "age", "now", "current_date", "current_timestamp", "current_time",
	"get_current_timestamp", "get_current_time", "today", "transaction_timestamp", "epoch", "epoch_ms",
	"epoch_us", "epoch_ns", "make_date", "make_time", "make_timestamp", "make_timestamptz", "strftime",
	"strptime", "try_strptime", "to_timestamp", "to_days", "to_hours", "to_minutes", "to_seconds",
	"to_milliseconds", "to_microseconds", "to_weeks", "to_months", "to_years", "to_centuries", "to_decades",
	"to_millennia", "year", "month", "day", "hour", "minute", "second", "millisecond", "microsecond",
	"nanosecond", "week", "weekday", "weekofyear", "dayofweek", "dayofmonth", "dayofyear", "isodow",
	"isoyear", "yearweek", "quarter", "decade", "century", "millennium", "era", "dayname", "monthname",
	"last_day", "time_bucket", "timezone", "timezone_hour", "timezone_minute", "julian", "epoch_second",
	// lists, structs, maps, JSON
	"list_value", "list_pack", "struct_pack", "row", "map", "map_from_entries", "struct_extract",
	"struct_extract_at", "list_extract", "list_element", "array_extract", "element_at", "map_extract",
	"map_extract_value", "map_keys", "map_values", "map_contains", "cardinality", "list_contains",
	"array_contains", "list_has", "array_has", "list_position", "array_position", "list_has_any",
	"list_has_all", "array_length", "list_sort", "array_sort", "list_distinct", "array_distinct",
	"list_unique", "array_unique", "list_slice", "array_slice", "list_concat", "array_concat", "list_cat",
	"array_cat", "list_append", "array_append", "list_prepend", "array_prepend", "flatten", "list_transform",
	"array_transform", "list_apply", "apply", "list_filter", "array_filter", "filter", "list_reduce",
	"array_reduce", "reduce", "list_aggregate", "array_aggregate", "list_aggr", "list_min", "list_max",
	"list_sum", "list_avg", "list_count", "list_reverse", "array_reverse", "generate_subscripts",
	"struct_insert", "json_extract", "json_extract_string", "json_extract_path", "json_extract_path_text",
	"json_value", "json_exists", "json_type", "json_valid", "json_array_length", "json_keys", "json_contains",
	"json", "to_json", "json_object", "json_array", "json_quote", "array_to_json",
	"row_to_json", "from_json", "json_transform",
	// aggregates
	"count", "count_star", "sum", "avg", "mean", "min", "max", "median", "mode", "quantile", "quantile_cont",
	"quantile_disc", "approx_quantile", "approx_count_distinct", "stddev", "stddev_pop", "stddev_samp",
	"var_pop", "var_samp", "variance", "corr", "covar_pop", "covar_samp", "regr_slope", "regr_intercept",
	"regr_r2", "regr_count", "regr_avgx", "regr_avgy", "entropy", "kurtosis", "skewness", "mad",
	"bool_and", "bool_or", "every", "any_value", "first", "last", "arbitrary", "arg_min", "arg_max", "argmin",
	"argmax", "min_by", "max_by", "list", "array_agg", "histogram", "product", "fsum", "sumkahan", "kahan_sum",
	"favg", "count_if", "countif", "bit_and", "bit_or", "bit_xor", "bitstring_agg", "string_agg", "sem",
	// window functions
	"row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead", "first_value",
	"last_value", "nth_value", "rank_dense",
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[strings.ToLower(n)] = true
	}
	return m
}

// confine asks DuckDB's own parser (json_serialize_sql, which serializes
// SELECT statements only) whether query is exactly one SELECT, and walks
// the parse tree: every table it names must be one of the run's views (in
// its own catalog, schema main, batch or base) or a CTE of the query that
// is in scope where it is named (a CTE's own body and the CTEs before it
// do not see it: there the name is DuckDB's to resolve, as a table, a file
// or a system view); the only table functions allowed are
// confinedFunctions, and other functions come from scalarFunctions. That
// rules out a second statement (the driver runs every statement of a query
// string), DDL that replaces what later checks read, COPY or ATTACH,
// reading files (read_parquet(...), 'file.csv' replacement scans), the
// system catalog, and reaching another run's catalog in the shared
// database. Nothing is executed.
func (r *run) confine(ctx context.Context, query string) error {
	var js string
	if err := r.conn.QueryRowContext(ctx, "SELECT CAST(json_serialize_sql(CAST($1 AS VARCHAR)) AS VARCHAR)", query).Scan(&js); err != nil {
		return fmt.Errorf("parse: %w", err)
	}
	var parsed struct {
		Error        bool              `json:"error"`
		ErrorType    string            `json:"error_type"`
		ErrorMessage string            `json:"error_message"`
		Statements   []json.RawMessage `json:"statements"`
	}
	if err := json.Unmarshal([]byte(js), &parsed); err != nil {
		return fmt.Errorf("parse: %w", err)
	}
	switch {
	case parsed.Error && parsed.ErrorType == "not implemented":
		return fmt.Errorf("%w: only a SELECT may run (%s)", ErrNotConfined, parsed.ErrorMessage)
	case parsed.Error:
		return fmt.Errorf("%w: %s error: %s", ErrNotConfined, parsed.ErrorType, parsed.ErrorMessage)
	case len(parsed.Statements) != 1:
		return fmt.Errorf("%w: %d statements", ErrNotConfined, len(parsed.Statements))
	}
	var tree any
	if err := json.Unmarshal(parsed.Statements[0], &tree); err != nil {
		return fmt.Errorf("parse: %w", err)
	}
	return r.walk(tree, nil)
}

// walk checks every node of a parse tree, with the CTE names in scope.
func (r *run) walk(n any, scope []string) error {
	switch v := n.(type) {
	case []any:
		for _, c := range v {
			if err := r.walk(c, scope); err != nil {
				return err
			}
		}
	case map[string]any:
		if err := r.visit(v, scope); err != nil {
			return err
		}
		inner := scope
		if m, ok := v["cte_map"].(map[string]any); ok {
			entries, _ := m["map"].([]any)
			for _, e := range entries {
				em, _ := e.(map[string]any)
				name, _ := em["key"].(string)
				// A CTE's body sees the CTEs before it, and itself only when
				// it is recursive.
				body := inner
				if recursive(em["value"]) {
					body = append(slices.Clip(inner), name)
				}
				if err := r.walk(em["value"], body); err != nil {
					return err
				}
				inner = append(slices.Clip(inner), name)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if k == "cte_map" {
				continue
			}
			if err := r.walk(v[k], inner); err != nil {
				return err
			}
		}
	}
	return nil
}

// plainTables says why query names a table otherwise than by its plain
// name (with a schema or a catalog), as DuckDB's parser reads it: however
// the name is spelled ("main".t, MAIN/* */.t, catalog.t), a qualified
// table is not shadowed by a CTE of the same name, so a comparison of the
// query's rows at two refs (newFailingRows) would read the same table on
// both sides. Nil when every table is named plainly.
func (r *run) plainTables(ctx context.Context, query string) error {
	var js string
	if err := r.conn.QueryRowContext(ctx, "SELECT CAST(json_serialize_sql(CAST($1 AS VARCHAR)) AS VARCHAR)", query).Scan(&js); err != nil {
		return fmt.Errorf("parse: %w", err)
	}
	var parsed struct {
		Error        bool   `json:"error"`
		ErrorMessage string `json:"error_message"`
		Statements   []any  `json:"statements"`
	}
	if err := json.Unmarshal([]byte(js), &parsed); err != nil {
		return fmt.Errorf("parse: %w", err)
	}
	if parsed.Error || len(parsed.Statements) != 1 {
		return fmt.Errorf("%w: %s", ErrNotConfined, cmp.Or(parsed.ErrorMessage, fmt.Sprintf("%d statements", len(parsed.Statements))))
	}
	var qualified string
	eachObject(parsed.Statements, func(v map[string]any) {
		if v["type"] == "BASE_TABLE" && qualified == "" {
			catalog, _ := v["catalog_name"].(string)
			schema, _ := v["schema_name"].(string)
			table, _ := v["table_name"].(string)
			if catalog != "" || schema != "" {
				qualified = strings.Join(slices.DeleteFunc([]string{catalog, schema, table}, func(s string) bool { return s == "" }), ".")
			}
		}
	})
	if qualified != "" {
		return fmt.Errorf("it names table %s with its schema, which cannot be read as it was at the base", qualified)
	}
	return nil
}

// recursive says whether a CTE map entry's value is a recursive CTE.
func recursive(value any) bool {
	v, _ := value.(map[string]any)
	q, _ := v["query"].(map[string]any)
	node, _ := q["node"].(map[string]any)
	return node["type"] == "RECURSIVE_CTE_NODE"
}

// visit checks one node of the tree.
func (r *run) visit(v map[string]any, scope []string) error {
	if class, ok := v["class"].(string); ok {
		// An expression.
		if class != "FUNCTION" && class != "WINDOW" {
			return nil
		}
		name, _ := v["function_name"].(string)
		schema, _ := v["schema"].(string)
		catalog, _ := v["catalog"].(string)
		// range, generate_series and unnest are also scalar (list) functions,
		// and a table function's call is itself a function node.
		if !scalarFunctions[strings.ToLower(name)] && !confinedFunctions[strings.ToLower(name)] || catalog != "" || (schema != "" && schema != "main") {
			return fmt.Errorf("%w: function %s is not allowed (only functions of the rows' values)", ErrNotConfined, name)
		}
		return nil
	}
	switch v["type"] {
	case "BASE_TABLE":
		return r.allowedTable(v, scope)
	case "TABLE_FUNCTION":
		f, _ := v["function"].(map[string]any)
		name, _ := f["function_name"].(string)
		schema, _ := f["schema"].(string)
		catalog, _ := f["catalog"].(string)
		if !confinedFunctions[strings.ToLower(name)] || schema != "" || catalog != "" {
			return fmt.Errorf("%w: table function %s is not allowed (allowed: range, generate_series, unnest)", ErrNotConfined, name)
		}
	case "SHOW_REF", "COLUMN_DATA", "DELIM_GET", "BOUND_TABLE_REF":
		return fmt.Errorf("%w: %s is not allowed", ErrNotConfined, strings.ToLower(v["type"].(string)))
	}
	return nil
}

// allowedTable accepts a table reference to a CTE in scope, or to one of
// the run's views, unqualified or qualified by the run's own catalog and a
// schema.
func (r *run) allowedTable(ref map[string]any, scope []string) error {
	catalog, _ := ref["catalog_name"].(string)
	schema, _ := ref["schema_name"].(string)
	table, _ := ref["table_name"].(string)
	name := strings.Join(slices.DeleteFunc([]string{catalog, schema, table}, func(s string) bool { return s == "" }), ".")
	if catalog == "" && schema == "" && slices.ContainsFunc(scope, func(c string) bool { return strings.EqualFold(c, table) }) {
		return nil
	}
	if catalog != "" && !strings.EqualFold(catalog, r.catalog) {
		return fmt.Errorf("%w: %s is outside the audit's tables", ErrNotConfined, name)
	}
	switch strings.ToLower(schema) {
	case "", schemaMain, schemaBatch, schemaBase:
	default:
		return fmt.Errorf("%w: %s is outside the audit's tables", ErrNotConfined, name)
	}
	for k := range r.views {
		if strings.EqualFold(k.table, table) && (schema == "" || strings.EqualFold(k.schema, schema)) {
			return nil
		}
	}
	return fmt.Errorf("%w: %s is not a table of the audit", ErrNotConfined, name)
}

// timeFunctions are the functions of scalarFunctions whose answer depends
// on when the query runs: DuckDB marks them CONSISTENT_WITHIN_QUERY, except
// age, which it marks CONSISTENT although age of one argument counts from
// the current date (TestRowOnlyFunctionsAgreeWithDuckDB checks the rest of
// scalarFunctions against duckdb_functions()).
var timeFunctions = setOf("age", "now", "current_date", "current_time", "current_timestamp", "get_current_time",
	"get_current_timestamp", "today", "transaction_timestamp")

// rowOnlyClasses are the expression classes a where condition of the row's
// values is made of. A subquery (SUBQUERY, which is also how PIVOT and
// UNPIVOT in an expression parse), a window, a star or a parameter is not.
var rowOnlyClasses = setOf("CONSTANT", "COLUMN_REF", "FUNCTION", "OPERATOR", "COMPARISON", "CONJUNCTION", "CASE",
	"CAST", "BETWEEN", "LAMBDA", "COLLATE")

// rowOnly says whether a where condition's answer for a row depends only on
// that row's values: the same every time, whatever else the tables hold.
// Only then may a scan it filters be memoized (memo.go) or a check it
// belongs to be incremental (the unchanged files' counts for it are kept).
// DuckDB's parser decides (json_serialize_sql, on the engine's pool; nothing
// is executed), as confine does: the statement must be exactly
// SELECT 1 WHERE (condition), and the condition's tree must hold only the
// expressions of rowOnlyClasses, functions of scalarFunctions but not
// timeFunctions, and no column named as DuckDB's clock and session
// keywords (current_date, localtimestamp, user, ...: a column reference
// until bound). Anything else, a parse that fails included, is not
// row-only. Answers are kept by the condition's text.
func (e *Engine) rowOnly(ctx context.Context, where string) bool {
	if strings.TrimSpace(where) == "" {
		return true
	}
	return e.whereFactsOf(ctx, where).rowOnly
}

// whereFacts are what DuckDB's parse of a where condition tells: whether
// it is row-only (rowOnly), and the names its column references hold,
// lower case (every part of a qualified one, a lambda's parameters too:
// more than it reads, never less, as a row-only condition reads no column
// but by a reference).
type whereFacts struct {
	rowOnly bool
	cols    []string
}

// whereColumns are the names a row-only where condition's column
// references hold (whereFacts), in order; nil for any other.
func (e *Engine) whereColumns(ctx context.Context, where string) []string {
	if strings.TrimSpace(where) == "" {
		return nil
	}
	return e.whereFactsOf(ctx, where).cols
}

func (e *Engine) whereFactsOf(ctx context.Context, where string) whereFacts {
	if f, found := e.rowOnlyWheres.get(where); found {
		return f
	}
	duck, err := e.acquire()
	if err != nil {
		return whereFacts{}
	}
	defer e.release(duck)
	var js string
	if err := duck.db.QueryRowContext(ctx, "SELECT CAST(json_serialize_sql(CAST($1 AS VARCHAR)) AS VARCHAR)", "SELECT 1 WHERE (\n"+where+"\n)").Scan(&js); err != nil {
		return whereFacts{} // not kept: it may be the context's
	}
	f := whereFacts{rowOnly: rowOnlyStatement(js)}
	if f.rowOnly {
		f.cols = columnRefs(js)
	}
	e.rowOnlyWheres.put(where, f)
	return f
}

// columnRefs are the names of every COLUMN_REF of a json_serialize_sql
// answer, lower case, sorted, each once.
func columnRefs(js string) []string {
	var tree any
	if err := json.Unmarshal([]byte(js), &tree); err != nil {
		return nil
	}
	seen := map[string]bool{}
	eachObject(tree, func(v map[string]any) {
		if v["class"] == "COLUMN_REF" {
			names, _ := v["column_names"].([]any)
			for _, c := range names {
				if s, ok := c.(string); ok {
					seen[strings.ToLower(s)] = true
				}
			}
		}
	})
	return slices.Sorted(maps.Keys(seen))
}

// eachObject calls visit on every object of a decoded JSON tree, each
// before the objects under it, an object's members in the order of their
// keys.
func eachObject(n any, visit func(map[string]any)) {
	switch v := n.(type) {
	case []any:
		for _, c := range v {
			eachObject(c, visit)
		}
	case map[string]any:
		visit(v)
		for _, k := range slices.Sorted(maps.Keys(v)) {
			eachObject(v[k], visit)
		}
	}
}

// rowOnlyStatement says whether a json_serialize_sql answer is one
// SELECT 1 WHERE (condition) with a row-only condition (rowOnly).
func rowOnlyStatement(js string) bool {
	var parsed struct {
		Error      bool             `json:"error"`
		Statements []map[string]any `json:"statements"`
	}
	if err := json.Unmarshal([]byte(js), &parsed); err != nil || parsed.Error || len(parsed.Statements) != 1 {
		return false
	}
	stmt := parsed.Statements[0]
	node, _ := stmt["node"].(map[string]any)
	if node == nil || node["type"] != "SELECT_NODE" || node["where_clause"] == nil {
		return false
	}
	for k, v := range stmt {
		if k != "node" && !(k == "named_param_map" && empty(v)) {
			return false
		}
	}
	// Every part of the SELECT but its condition is as in SELECT 1: a
	// condition that closes the parenthesis and adds a GROUP BY, a HAVING,
	// a UNION or a FROM is not one condition.
	for k, v := range node {
		var ok bool
		switch k {
		case "type", "where_clause":
			ok = true
		case "aggregate_handling":
			ok = v == "STANDARD_HANDLING"
		case "modifiers", "group_expressions", "group_sets":
			ok = empty(v)
		case "cte_map":
			m, _ := v.(map[string]any)
			ok = m != nil && len(m) == 1 && empty(m["map"])
		case "having", "sample", "qualify":
			ok = v == nil
		case "from_table":
			m, _ := v.(map[string]any)
			ok = m != nil && m["type"] == "EMPTY"
		case "select_list":
			l, _ := v.([]any)
			c, _ := func() (map[string]any, bool) {
				if len(l) != 1 {
					return nil, false
				}
				m, ok := l[0].(map[string]any)
				return m, ok
			}()
			ok = c != nil && c["class"] == "CONSTANT"
		}
		if !ok {
			return false
		}
	}
	return rowOnlyExpr(node["where_clause"])
}

// empty says whether a parse tree's list is empty.
func empty(v any) bool {
	l, ok := v.([]any)
	return ok && len(l) == 0
}

// queryNodeTypes are the parse tree's query and table nodes: none belongs
// in a row-only condition (they sit under a SUBQUERY expression, refused
// already; this is the second lock).
var queryNodeTypes = setOf("SELECT_NODE", "SET_OPERATION_NODE", "RECURSIVE_CTE_NODE", "CTE_NODE", "BASE_TABLE",
	"JOIN", "SUBQUERY", "TABLE_FUNCTION", "EXPRESSION_LIST", "PIVOT", "EMPTY", "SHOW_REF", "COLUMN_DATA",
	"DELIM_GET", "BOUND_TABLE_REF")

// rowOnlyExpr walks a condition's tree (rowOnly).
func rowOnlyExpr(n any) bool {
	switch v := n.(type) {
	case []any:
		for _, c := range v {
			if !rowOnlyExpr(c) {
				return false
			}
		}
	case map[string]any:
		if class, ok := v["class"].(string); ok {
			if !rowOnlyClasses[strings.ToLower(class)] {
				return false
			}
			switch class {
			case "FUNCTION":
				name, _ := v["function_name"].(string)
				schema, _ := v["schema"].(string)
				catalog, _ := v["catalog"].(string)
				name = strings.ToLower(name)
				if !scalarFunctions[name] || timeFunctions[name] || catalog != "" || (schema != "" && schema != "main") {
					return false
				}
			case "COLUMN_REF":
				names, _ := v["column_names"].([]any)
				for _, c := range names {
					s, _ := c.(string)
					if sessionKeyword(s) {
						return false
					}
				}
			}
		} else if t, ok := v["type"].(string); ok && (queryNodeTypes[strings.ToLower(t)] || strings.HasSuffix(t, "_NODE")) {
			return false
		}
		for k, c := range v {
			if k == "subquery" || k == "node" || k == "from_table" {
				return false
			}
			if !rowOnlyExpr(c) {
				return false
			}
		}
	}
	return true
}

// sessionKeyword says whether a column name is one DuckDB binds, when the
// table has no such column, to the clock or the session (current_date,
// current_timestamp, localtime, localtimestamp, user, ...). A table's own
// column of that name is refused too: it only costs the memo.
func sessionKeyword(name string) bool {
	n := strings.ToLower(name)
	return strings.HasPrefix(n, "current_") || strings.HasPrefix(n, "local") || strings.HasPrefix(n, "session_") ||
		n == "user" || n == "current_user"
}
