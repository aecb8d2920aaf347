package audit

import (
	"context"
	"fmt"
	"strings"

	"github.com/lakewap/lakewap/schemas"
)

// KindNotNull: each of the columns has a value in every row. A NaN in a
// FLOAT or DOUBLE column counts as missing, as pandas reads it. A JSON
// lines column of strings that are all numbers' text, one "NaN", is
// refused: pandas.read_json reads that as missing; so is a JSON lines
// text column named like a date (created_at) holding "", NaT or nan,
// which it parses with to_datetime, reading those as missing.
const KindNotNull = "not_null"

func init() {
	registerKind(&checkKind{
		name:          KindNotNull,
		fields:        []string{"column", "mostly", "where"},
		validate:      func(c Check, add addFunc) { needColumns(c, add, false) },
		agg:           countFailing,
		failing:       func(c Check) string { return strings.Join(each(c.columns(), isMissing), " OR ") },
		mostlyOverAll: true,
		judge: func(r *run, _ context.Context, c Check, total int64, v []any) schemas.CheckResult {
			bad := asInt(v[0])
			what := "null rows"
			if cols := c.columns(); len(cols) > 1 {
				what = "rows with a null in " + strings.Join(cols, ", ")
			}
			return r.judged(c, bad > 0, fmt.Sprintf("%d %s of %d", bad, what, total), "0 nulls")
		},
	})
}
