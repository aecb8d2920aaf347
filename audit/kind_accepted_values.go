package audit

import (
	"context"
	"fmt"
	"strings"

	"github.com/lakewap/lakewap/schemas"
)

// KindAcceptedValues: the column's values are among values, compared as
// text (YAML gives text); NULL passes. A 64-bit integer column that holds
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
			return fmt.Sprintf("%s IS NOT NULL AND CAST(%s AS VARCHAR) NOT IN (%s)", col, col,
				strings.Trim(literalList(c.Values), "[]"))
		},
		judge: func(r *run, _ context.Context, c Check, total int64, v []any) schemas.CheckResult {
			bad := asInt(v[0])
			return r.judged(c, bad > 0, fmt.Sprintf("%d rows with other values of %d", bad, total),
				"one of "+listed(c.Values, 10))
		},
	})
}
