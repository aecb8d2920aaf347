package audit

import (
	"context"
	"fmt"
	"strings"

	"github.com/lakewap/lakewap/schemas"
)

// KindRange: the column's values are between min and max (inclusive unless
// strict); NULL passes, NaN fails. A JSON lines column named like a date
// (updated_at) that pandas.read_json reads as datetimes is refused: pandas
// refuses to compare them with numbers.
const KindRange = "range"

func init() {
	registerKind(&checkKind{
		name:   KindRange,
		fields: []string{"column", "min", "max", "strict_min", "strict_max", "mostly", "where"},
		validate: func(c Check, add addFunc) {
			needColumns(c, add, true)
			needBounds(c, add, false)
		},
		columnType: "DOUBLE",
		agg: func(c Check) []string {
			col := quoteIdent(c.Column)
			return []string{countFailing(c)[0], "min(" + col + ")", "max(" + col + ")"}
		},
		failing: func(c Check) string {
			col := quoteIdent(c.Column)
			var parts []string
			if c.Min != nil {
				parts = append(parts, fmt.Sprintf("%s %s %s", col, map[bool]string{false: "<", true: "<="}[c.StrictMin], num(*c.Min)))
			}
			if c.Max != nil {
				parts = append(parts, fmt.Sprintf("%s %s %s", col, map[bool]string{false: ">", true: ">="}[c.StrictMax], num(*c.Max)))
			} else {
				// NaN is in no range. DuckDB orders it above +inf, so a max
				// fails it; without one, above +inf is NaN alone (pandas
				// and pyarrow compare it false: TestNaNIsInNoRange).
				parts = append(parts, col+" > 'inf'::DOUBLE")
			}
			return strings.Join(parts, " OR ")
		},
		judge: func(r *run, _ context.Context, c Check, total int64, v []any) schemas.CheckResult {
			bad := asInt(v[0])
			obs := fmt.Sprintf("%d rows out of range of %d", bad, total)
			if v[1] != nil {
				obs += fmt.Sprintf(" (min %s, max %s)", show(v[1]), show(v[2]))
			}
			return r.judged(c, bad > 0, obs, bounds(c.Min, c.Max))
		},
	})
}
