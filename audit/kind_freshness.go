package audit

import (
	"context"
	"fmt"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// KindFreshness: the column's newest value is at most max_age before the
// batch time, and not later than now plus the engine's clock-skew
// allowance (audit.clock_skew): one row dated in the future would
// otherwise make stale data look fresh.
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
			threshold := "newest " + c.Column + " at most " + maxAge.String() + " before batch time, and not after now + " + r.e.opts.ClockSkew.String()
			if v[0] == nil {
				return r.judged(c, true, fmt.Sprintf("no %s values in %d rows", c.Column, total), threshold)
			}
			latest, ok := v[0].(time.Time)
			if !ok {
				return r.errored(c, fmt.Errorf("column %q is not a timestamp or date (got %T)", c.Column, v[0]), 0)
			}
			if limit := time.Now().Add(r.e.opts.ClockSkew); latest.After(limit) {
				return r.judged(c, true, fmt.Sprintf("newest %s is %s after now, beyond the clock-skew allowance of %s (audit.clock_skew)",
					latest.UTC().Format(time.RFC3339), latest.Sub(limit.Add(-r.e.opts.ClockSkew)).Round(time.Second), r.e.opts.ClockSkew), threshold)
			}
			age := r.req.BatchTime.Sub(latest).Round(time.Second)
			return r.judged(c, age > maxAge, fmt.Sprintf("newest %s, %s before batch time",
				latest.UTC().Format(time.RFC3339), age), threshold)
		},
	})
}
