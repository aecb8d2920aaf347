package audit

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
)

// textReads are the column references of a where condition or a custom
// query that may reach a value's text (review 63): a reference under a
// CAST to another type than a number's or a boolean, under a function or
// operator that is not a number's (format, printf, concat, ||, LIKE,
// regexp_matches, a lambda, a subquery's expression), beside a text
// constant it is compared with (x = '3.5', stringOperand), or anywhere in
// a set operation (UNION of a number and a text casts the number). A
// CASE, coalesce, greatest and the like pass their operands' values on. refs are the names of each such reference, lower case, every
// part of a qualified one; star is whether a * or COLUMNS(...) stands in
// such a place. A condition that compares numbers as numbers (x > 0,
// x IN (1, 2), abs(x) + 1 BETWEEN 1 AND 5, CAST(x AS BIGINT)) has none.
// unknown: DuckDB's parser could not read it (every column may be read).
type textReads struct {
	refs    [][]string
	star    bool
	unknown bool
	// types are the references under typeof, pg_typeof or another of
	// typeFunctions, or a cast to BIT, which tell an INTEGER from a
	// BIGINT (reviews 63, 64); typeStar, a star there.
	types    [][]string
	typeStar bool
	// times are the refs whose text a DATE and a TIMESTAMP may render
	// otherwise (review 64): refs but those read only through a
	// function or cast that reads a date and a midnight alike
	// (dateAlikeFunctions, dateAlikeCasts); timeStar, a star there.
	times    [][]string
	timeStar bool
}

// textReadsOf parses sql with DuckDB's parser (json_serialize_sql, on the
// engine's pool; nothing is executed): a full query, or, when where is
// set, a where condition.
func (e *Engine) textReadsOf(ctx context.Context, sql string, where bool) textReads {
	if where {
		sql = "SELECT 1 WHERE (\n" + sql + "\n)"
	}
	duck, err := e.acquire()
	if err != nil {
		return textReads{unknown: true}
	}
	defer e.release(duck)
	var js string
	if err := duck.db.QueryRowContext(ctx, "SELECT CAST(json_serialize_sql(CAST($1 AS VARCHAR)) AS VARCHAR)", sql).Scan(&js); err != nil {
		return textReads{unknown: true}
	}
	var tree any
	if err := json.Unmarshal([]byte(js), &tree); err != nil {
		return textReads{unknown: true}
	}
	if m, ok := tree.(map[string]any); !ok || m["error"] == true {
		return textReads{unknown: true}
	}
	var out textReads
	walkTextReads(tree, false, false, false, &out)
	return out
}

// stringOperand is whether an expression node of a parse tree has a
// text constant among its operands (the expressions directly under it):
// DuckDB casts the text to the type of the other operand, so x = '3.5' is
// false for a DOUBLE 4.0 and true for a BIGINT 4 ('3.5' read as 4), and
// coalesce(x, '3.5') likewise (review 63). A numeric constant is compared
// as a number (x = 3.5 reads alike). DuckDB serializes a constant as a
// literal of a kind (STRING) or a value of a type (VARCHAR).
func stringOperand(v map[string]any) bool {
	found := false
	var look func(n any, top bool)
	look = func(n any, top bool) {
		switch c := n.(type) {
		case []any:
			for _, e := range c {
				look(e, false)
			}
		case map[string]any:
			if _, ok := c["class"]; ok && !top {
				if c["class"] == "CONSTANT" {
					lit, _ := c["literal"].(map[string]any)
					val, _ := c["value"].(map[string]any)
					typ, _ := val["type"].(map[string]any)
					if lit != nil && lit["kind"] == "STRING" || typ != nil && typ["id"] == "VARCHAR" {
						found = true
					}
				}
				return
			}
			for _, e := range c {
				look(e, false)
			}
		}
	}
	look(v, true)
	return found
}

// numberFunctions are the functions and aggregates whose answer for a
// number is a number, whatever the number's type: a reference under them
// alone is compared as a number.
var numberFunctions = setOf("+", "-", "*", "/", "//", "%", "**", "^", "abs", "sign", "floor", "ceil", "ceiling",
	"round", "trunc", "sqrt", "cbrt", "ln", "log", "log10", "log2", "exp", "pow", "power", "mod", "fmod",
	"isnan", "isinf", "isfinite", "count", "count_star", "sum", "avg", "mean", "min", "max", "median",
	"stddev", "stddev_pop", "stddev_samp", "variance", "var_pop", "var_samp", "even", "radians", "degrees",
	// a value of their operands, in their common type (DuckDB casts no
	// number to text there: coalesce(x, s) of a BIGINT and a VARCHAR fails)
	"coalesce", "ifnull", "nullif", "greatest", "least", "if")

// numberCasts are the types a CAST to which reads a number as a number.
var numberCasts = setOf("tinyint", "smallint", "integer", "int", "int1", "int2", "int4", "int8", "int16", "int32",
	"int64", "int128", "bigint", "hugeint", "utinyint", "usmallint", "uinteger", "ubigint", "uhugeint", "float",
	"float4", "float8", "real", "double", "decimal", "numeric", "boolean", "bool", "long", "short", "signed")

// dateAlikeFunctions are the functions that read a DATE as the TIMESTAMP of
// its midnight (date_trunc, strftime, year and the like: DuckDB 2.0.1
// renders their answers alike for both), and dateAlikeCasts the types a CAST
// to which does so (review 64).
var dateAlikeFunctions = setOf("date_trunc", "datetrunc", "strftime", "year", "month", "day", "dayofmonth", "hour",
	"minute", "second", "date_part", "datepart", "extract", "epoch", "epoch_ms", "epoch_us", "dayofweek",
	"dayofyear", "week", "weekofyear", "quarter", "isodow", "isoyear", "yearweek", "last_day", "monthname",
	"dayname", "decade", "century", "millennium", "era", "julian", "date_diff", "datediff", "date_sub", "datesub")

var dateAlikeCasts = setOf("date", "timestamp", "datetime")

// typeFunctions are the functions whose answer for one value tells its
// type apart (textReads.types): typeof; hash, whose answer for a
// negative INTEGER -1 and BIGINT -1 differs in DuckDB 2.0.1 (a sampling
// where of hash(x) % 10 = 0 picks other rows), and approx_count_distinct,
// which counts by it; bit_count, 32 and 64 (review 64,
// TestReader64WidthReadingFunctionsAreRefused).
var typeFunctions = setOf("typeof", "pg_typeof", "hash", "approx_count_distinct", "bit_count")

// ownText is whether an expression node of a parse tree (of class)
// reads its operands' text of its own (walkTextReads' rules), whatever
// its ancestors.
func ownText(v map[string]any, class string) bool {
	switch class {
	case "":
		t, _ := v["type"].(string)
		return t == "SET_OPERATION_NODE"
	case "COLUMN_REF", "STAR", "CONSTANT", "TYPE":
		return false
	case "CONJUNCTION", "COMPARISON", "BETWEEN", "CASE":
		return stringOperand(v)
	case "OPERATOR":
		switch v["type"] {
		case "OPERATOR_NOT", "OPERATOR_IS_NULL", "OPERATOR_IS_NOT_NULL", "COMPARE_IN", "COMPARE_NOT_IN", "OPERATOR_COALESCE", "OPERATOR_NULLIF":
			return stringOperand(v)
		}
		return true
	case "FUNCTION", "WINDOW":
		name, _ := v["function_name"].(string)
		return !numberFunctions[strings.ToLower(name)] || stringOperand(v)
	case "CAST":
		return !numberCasts[castTarget(v)]
	}
	return true
}

// walkTextReads notes in out the column references of a parse tree n
// that stand where a value's text may be read (textReads); text: an
// ancestor already makes it so; timeOK: only through dateAlikeFunctions and
// dateAlikeCasts.
func walkTextReads(n any, text, typ, timeOK bool, out *textReads) {
	switch v := n.(type) {
	case []any:
		for _, c := range v {
			walkTextReads(c, text, typ, timeOK, out)
		}
	case map[string]any:
		class, _ := v["class"].(string)
		was := text
		safe := false // a time's text read alike through this node
		if class == "" {
			if t, _ := v["type"].(string); t == "SET_OPERATION_NODE" {
				text = true
			}
		} else {
			switch class {
			case "COLUMN_REF":
				if text {
					var names []string
					l, _ := v["column_names"].([]any)
					for _, c := range l {
						if s, ok := c.(string); ok {
							names = append(names, strings.ToLower(s))
						}
					}
					out.refs = append(out.refs, names)
					if typ {
						out.types = append(out.types, names)
					}
					if !timeOK {
						out.times = append(out.times, names)
					}
				}
				return
			case "STAR":
				out.star = out.star || text
				out.typeStar = out.typeStar || typ
				out.timeStar = out.timeStar || text && !timeOK
			case "CONSTANT", "TYPE":
			case "CONJUNCTION", "COMPARISON", "BETWEEN", "CASE":
				text = text || stringOperand(v)
			case "OPERATOR":
				switch v["type"] {
				case "OPERATOR_NOT", "OPERATOR_IS_NULL", "OPERATOR_IS_NOT_NULL", "COMPARE_IN", "COMPARE_NOT_IN", "OPERATOR_COALESCE", "OPERATOR_NULLIF":
					text = text || stringOperand(v)
				default:
					text = true
				}
			case "FUNCTION", "WINDOW":
				name, _ := v["function_name"].(string)
				text = text || !numberFunctions[strings.ToLower(name)] || stringOperand(v)
				safe = dateAlikeFunctions[strings.ToLower(name)]
				if typeFunctions[strings.ToLower(name)] {
					typ = true
				}
			case "CAST":
				if !numberCasts[castTarget(v)] {
					text = true
				}
				safe = dateAlikeCasts[castTarget(v)]
				if t := castTarget(v); t == "bit" || t == "bitstring" {
					typ = true // 32 bits for an INTEGER -1, 64 for a BIGINT (review 64)
				}
			default:
				text = true // LAMBDA, SUBQUERY, COLLATE, a parameter, what a parser adds
			}
		}
		if own := text && (!was || ownText(v, class)); own {
			// the nearest node reading text decides: a time function's
			// or cast's answer is of one type for a DATE and a TIMESTAMP
			timeOK = safe
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			walkTextReads(v[k], text, typ, timeOK, out)
		}
	}
}

// castTarget is the lower-case name of the type a CAST node of a parse
// tree casts to (DuckDB's serializations: type_expr.type_name, or
// cast_type.id), or "" when it names none.
func castTarget(v map[string]any) string {
	if t, ok := v["type_expr"].(map[string]any); ok {
		if s, ok := t["type_name"].(string); ok {
			if c, _ := t["children"].([]any); len(c) > 0 && !strings.EqualFold(s, "decimal") && !strings.EqualFold(s, "numeric") {
				return "" // a nested type's name, or modifiers: not a number's
			}
			return strings.ToLower(s)
		}
	}
	if t, ok := v["cast_type"].(map[string]any); ok {
		if s, ok := t["id"].(string); ok {
			return strings.ToLower(s)
		}
	}
	return ""
}

// textReadColumns tells whether a where condition of a check of table,
// or a custom query of any check, may read a column of table's text
// (textReads): by name, lower case, among names (the table's columns); a
// reference none of whose parts is a column (an alias, another table's
// column), a star, or a text DuckDB cannot parse may read any, and so
// does every column then. typeOf tells likewise whether one reads a
// column's type name (typeof), and timeText whether one reads its text
// otherwise than through a function or cast that reads a DATE and its
// midnight alike (textReads.times). nil: no check reads any column so.
func (r *run) textReadColumns(ctx context.Context, checks []Check, table string, names map[string]bool) (text, typeOf, timeText func(col string) bool) {
	type reads struct {
		read map[string]bool
		all  bool
	}
	tx, ty, tt := reads{read: map[string]bool{}}, reads{read: map[string]bool{}}, reads{read: map[string]bool{}}
	note := func(to *reads, refs [][]string, all bool) {
		to.all = to.all || all
		for _, ref := range refs {
			found := false
			for _, p := range ref {
				if names[p] {
					to.read[p], found = true, true
				}
			}
			if !found {
				to.all = true
			}
		}
	}
	for _, c := range checks {
		var ts []textReads
		if strings.TrimSpace(c.SQL) != "" {
			ts = append(ts, r.e.textReadsOf(ctx, c.SQL, false))
		}
		if strings.TrimSpace(c.Where) != "" && strings.EqualFold(c.Table, table) {
			ts = append(ts, r.e.textReadsOf(ctx, c.Where, true))
		}
		for _, t := range ts {
			note(&tx, t.refs, t.unknown || t.star)
			note(&ty, t.types, t.unknown || t.typeStar)
			note(&tt, t.times, t.unknown || t.timeStar)
		}
	}
	fn := func(x reads) func(string) bool {
		if !x.all && len(x.read) == 0 {
			return nil
		}
		return func(col string) bool { return x.all || x.read[strings.ToLower(col)] }
	}
	return fn(tx), fn(ty), fn(tt)
}
