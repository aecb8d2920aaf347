package audit

import (
	"context"
	"fmt"
	"regexp"

	"github.com/lakewap/lakewap/schemas"
)

// KindRegex: the column's values, as text, match pattern (RE2) somewhere;
// NULL passes. Great Expectations' expect_column_values_to_match_regex. An
// integer column that holds a NULL, a timestamp column of midnights only or
// with a fraction of a second, and a BOOLEAN, zoned timestamp, TIME, FLOAT,
// DECIMAL of scale above 6, BLOB, INTERVAL, list, struct or map column, are
// refused: pandas renders them as other text (12345.0, True, 2024-01-01,
// 01:02:03.500, 1e+15, 1E-7, [1 2]; readers disagree). So is a DOUBLE
// column holding a value at or beyond 10^7, under 10^-3, NaN or infinite,
// which Spark renders as 1.2345678E7, 1.0E-4, NaN, and a JSON lines column
// named like a date (updated_at) that pandas.read_json reads as datetimes.
const KindRegex = "regex"

func init() {
	registerKind(&checkKind{
		name:   KindRegex,
		fields: []string{"column", "pattern", "mostly", "where"},
		validate: func(c Check, add addFunc) {
			needColumns(c, add, true)
			if c.Pattern == "" {
				add("pattern", "missing")
			} else if _, err := regexp.Compile(c.Pattern); err != nil {
				add("pattern", "%v", err)
			}
		},
		agg: countFailing,
		failing: func(c Check) string {
			col := quoteIdent(c.Column)
			return fmt.Sprintf("%s IS NOT NULL AND NOT regexp_matches(CAST(%s AS VARCHAR), %s)", col, col, quoteLiteral(c.Pattern))
		},
		judge: func(r *run, _ context.Context, c Check, total int64, v []any) schemas.CheckResult {
			bad := asInt(v[0])
			return r.judged(c, bad > 0, fmt.Sprintf("%d rows not matching of %d", bad, total), "matches "+c.Pattern)
		},
	})
}
