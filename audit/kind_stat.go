package audit

import (
	"context"
	"fmt"
	"math"

	"github.com/lakewap/lakewap/schemas"
)

// KindStat: the column's min or max (stat) is between min and max (NaN is not).
// Great Expectations' expect_column_min/max_to_be_between. A JSON lines
// column named like a date (updated_at) that pandas.read_json reads as
// datetimes is refused: pandas refuses to compare them with numbers.
const KindStat = "stat"

// Stats of a stat check.
const (
	StatMin = "min"
	StatMax = "max"
)

func init() {
	registerKind(&checkKind{
		name:   KindStat,
		fields: []string{"column", "stat", "min", "max", "strict_min", "strict_max"},
		validate: func(c Check, add addFunc) {
			needColumns(c, add, true)
			if c.Stat != StatMin && c.Stat != StatMax {
				add("stat", "%q is not min or max", c.Stat)
			}
			needBounds(c, add, false)
		},
		columnType: "DOUBLE",
		agg:        func(c Check) []string { return []string{fmt.Sprintf("%s(%s)", c.Stat, quoteIdent(c.Column))} },
		judge: func(r *run, _ context.Context, c Check, total int64, v []any) schemas.CheckResult {
			threshold := c.Stat + " " + strictBounds(c)
			if v[0] == nil {
				return r.judged(c, true, fmt.Sprintf("no %s values in %d rows", c.Column, total), threshold)
			}
			x, ok := asFloat(v[0])
			if !ok {
				return r.errored(c, fmt.Errorf("%s of column %q is not a number (got %T)", c.Stat, c.Column, v[0]), 0)
			}
			// A NaN min or max is within no bounds (every comparison
			// with it is false: TestNaNIsInNoRange).
			failed := math.IsNaN(x) || (c.Min != nil && (x < *c.Min || c.StrictMin && x == *c.Min)) ||
				(c.Max != nil && (x > *c.Max || c.StrictMax && x == *c.Max))
			return r.judged(c, failed, fmt.Sprintf("%s %s of %d rows", c.Stat, show(v[0]), total), threshold)
		},
	})
}
