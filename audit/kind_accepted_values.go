package audit

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/lakewap/lakewap/schemas"
)

// KindAcceptedValues: the column's values are among values, compared as
// text (YAML gives text); NULL passes. A BOOLEAN value is among them when
// one is its name in any case: DuckDB and Spark render a boolean true,
// pandas True, and the listed true and True each named the value for some
// readers and not for others (booleanNames). A 64-bit integer column that holds
// a NULL and a value beyond ±2^53 is refused: pandas reads it as float64,
// where a listed 2^53+1 is not found (readers disagree). Values imported
// from a Great Expectations value_set keep their JSON type, which pandas'
// isin compares: a string against a column that is not text, a number or
// boolean against text, a number that is not a float32 against FLOAT or
// not its double's exact value against DECIMAL, is refused; so is a JSON
// lines column named like a date (updated_at) that pandas.read_json reads
// as datetimes.
const KindAcceptedValues = "accepted_values"

func init() {
	registerKind(&checkKind{
		name:   KindAcceptedValues,
		fields: []string{"column", "values", "mostly", "where"},
		validate: func(c Check, add addFunc) {
			needColumns(c, add, true)
			if len(c.Values) == 0 {
				add("values", "missing")
			}
			if len(c.ValueTypes) > 0 && len(c.ValueTypes) != len(c.Values) {
				add("values", "%d values of %d types", len(c.Values), len(c.ValueTypes))
			}
		},
		agg: countFailing,
		failing: func(c Check) string {
			col := quoteIdent(c.Column)
			cond := fmt.Sprintf("%s IS NOT NULL AND CAST(%s AS VARCHAR) NOT IN (%s)", col, col,
				strings.Trim(literalList(c.Values), "[]"))
			if names := booleanNames(c.Values); len(names) > 0 {
				cond += fmt.Sprintf(" AND (typeof(%s) <> 'BOOLEAN' OR CAST(%s AS VARCHAR) NOT IN (%s))", col, col,
					strings.Trim(literalList(names), "[]"))
			}
			return cond
		},
		judge: func(r *run, _ context.Context, c Check, total int64, v []any) schemas.CheckResult {
			bad := asInt(v[0])
			return r.judged(c, bad > 0, fmt.Sprintf("%d rows with other values of %d", bad, total),
				"one of "+listed(c.Values, 10))
		},
	})
}

// booleanNames are the names of the booleans values list in another case
// than DuckDB's text of them (True, FALSE): a BOOLEAN value is accepted
// when its text, true or false, is listed in any case. DuckDB 1.5.6 and
// PySpark 4.3.0 render a boolean true and false, pandas 3.1.1 True and
// False (astype(str)), and dbt renders a YAML true it quotes as 'True'
// (Python's text): listed as True the value was refused by DuckDB's and
// Spark's text and accepted by pandas', listed as true the reverse
// (TestReview52AcceptedValuesOverBooleansMeanTheValue). Every reader reads
// the same boolean, which the check now names, as dbt's quote: false
// compares it. A text column's values are compared as they are.
func booleanNames(values []string) []string {
	var names []string
	for _, v := range values {
		for _, b := range []string{"true", "false"} {
			if v != b && strings.EqualFold(v, b) && !slices.Contains(names, b) {
				names = append(names, b)
			}
		}
	}
	return names
}
