package audit

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/lakewap/lakewap/schemas"
)

// KindVolumeChange: the table's row count changed against the same table
// at the base ref by at most max_drop_pct (fewer rows) and max_growth_pct
// (more), in percent.
const KindVolumeChange = "volume_change"

func init() {
	registerKind(&checkKind{
		name:     KindVolumeChange,
		fields:   []string{"max_drop_pct", "max_growth_pct"},
		compares: true,
		validate: func(c Check, add addFunc) {
			if c.MaxDropPct == nil && c.MaxGrowthPct == nil {
				add("max_drop_pct", "max_drop_pct or max_growth_pct is required")
			}
			if c.MaxDropPct != nil && (*c.MaxDropPct < 0 || *c.MaxDropPct > 100 || math.IsNaN(*c.MaxDropPct)) {
				add("max_drop_pct", "must be between 0 and 100")
			}
			if c.MaxGrowthPct != nil && (*c.MaxGrowthPct < 0 || math.IsNaN(*c.MaxGrowthPct) || math.IsInf(*c.MaxGrowthPct, 0)) {
				add("max_growth_pct", "must be a finite number >= 0")
			}
		},
		agg:       func(Check) []string { return nil },
		countOnly: true,
		judge: func(r *run, ctx context.Context, c Check, total int64, _ []any) schemas.CheckResult {
			return r.volume(ctx, c, total)
		},
	})
}

func (r *run) volume(ctx context.Context, c Check, total int64) schemas.CheckResult {
	vals, err := r.queryRow(ctx, aggregateSQL(schemaBase, r.table(c.Table).Name, nil), 1)
	if err != nil {
		return r.errored(c, err, 0)
	}
	return r.volumeJudged(c, total, asInt(vals[0]))
}

// volumeJudged judges the change from base rows to total.
func (r *run) volumeJudged(c Check, total, base int64) schemas.CheckResult {
	var parts []string
	if c.MaxDropPct != nil {
		parts = append(parts, "drop at most "+num(*c.MaxDropPct)+"%")
	}
	if c.MaxGrowthPct != nil {
		parts = append(parts, "growth at most "+num(*c.MaxGrowthPct)+"%")
	}
	threshold := strings.Join(parts, ", ") + " vs " + r.baseName()
	if base == 0 {
		return r.judged(c, false, fmt.Sprintf("%d rows; %s has none to compare with", total, r.baseName()), threshold)
	}
	pct := (float64(total) - float64(base)) / float64(base) * 100
	failed := (c.MaxDropPct != nil && -pct > *c.MaxDropPct) || (c.MaxGrowthPct != nil && pct > *c.MaxGrowthPct)
	return r.judged(c, failed, fmt.Sprintf("%d rows vs %d on %s (%+.1f%%)", total, base, r.baseName(), pct), threshold)
}
