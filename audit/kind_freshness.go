package audit

import (
	"context"
	"fmt"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// KindFreshness: the column's newest value is at most max_age before the
// batch time.
const KindFreshness = "freshness"

func init() {
	registerKind(&checkKind{
		name:   KindFreshness,
		fields: []string{"column", "max_age"},
		validate: func(c Check, add addFunc) {
			needColumns(c, add, true)
			if c.MaxAge == "" {
				add("max_age", "missing")
			} else if d, err := parseAge(c.MaxAge); err != nil {
				add("max_age", "%v", err)
			} else if d <= 0 {
				add("max_age", "must be positive")
			}
		},
		columnType: "TIMESTAMP",
		agg:        func(c Check) []string { return []string{fmt.Sprintf("max(%s)", quoteIdent(c.Column))} },
		judge: func(r *run, _ context.Context, c Check, total int64, v []any) schemas.CheckResult {
			maxAge, _ := parseAge(c.MaxAge) // validated
			threshold := "newest " + c.Column + " at most " + maxAge.String() + " before batch time"
			if v[0] == nil {
				return r.judged(c, true, fmt.Sprintf("no %s values in %d rows", c.Column, total), threshold)
			}
			latest, ok := v[0].(time.Time)
			if !ok {
				return r.errored(c, fmt.Errorf("column %q is not a timestamp or date (got %T)", c.Column, v[0]), 0)
			}
			age := r.req.BatchTime.Sub(latest).Round(time.Second)
			return r.judged(c, age > maxAge, fmt.Sprintf("newest %s, %s before batch time",
				latest.UTC().Format(time.RFC3339), age), threshold)
		},
	})
}
