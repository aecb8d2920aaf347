package audit

import (
	"context"
	"fmt"

	"github.com/lakewap/lakewap/schemas"
)

// KindRowCount: the table (or the rows meeting where) has between min and
// max rows.
const KindRowCount = "row_count"

func init() {
	registerKind(&checkKind{
		name:      KindRowCount,
		fields:    []string{"min", "max", "where"},
		validate:  func(c Check, add addFunc) { needBounds(c, add, true) },
		agg:       func(Check) []string { return nil },
		countOnly: true,
		judge: func(r *run, _ context.Context, c Check, total int64, _ []any) schemas.CheckResult {
			failed := (c.Min != nil && float64(total) < *c.Min) || (c.Max != nil && float64(total) > *c.Max)
			return r.judged(c, failed, fmt.Sprintf("%d rows", total), bounds(c.Min, c.Max)+" rows")
		},
	})
}
