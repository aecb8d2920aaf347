package audit

import (
	"context"
	"fmt"
	"strings"

	"github.com/lakewap/lakewap/schemas"
)

// KindSchemaDrift: the table has the columns and types it has at the base
// ref; with allow_extra it may gain columns.
const KindSchemaDrift = "schema_drift"

func init() {
	registerKind(&checkKind{
		name:     KindSchemaDrift,
		fields:   []string{"allow_extra"},
		compares: true,
		run:      (*run).schemaDrift,
	})
}

func (r *run) schemaDrift(ctx context.Context, c Check) schemas.CheckResult {
	threshold := "same columns and types as " + r.baseName()
	if c.AllowExtra {
		threshold += "; new columns allowed"
	}
	if r.views[viewKey{schemaBase, strings.ToLower(c.Table)}].synthetic {
		return r.judged(c, false, "table not on "+r.baseName(), threshold)
	}
	cur, _ := r.describe(ctx, schemaMain, c.Table)
	base, _ := r.describe(ctx, schemaBase, c.Table)
	var problems []string
	for _, b := range base {
		got, ok := findColumnExact(cur, b.name)
		switch {
		case !ok:
			problems = append(problems, "removed "+b.name+" "+b.typ)
		case !strings.EqualFold(got.typ, b.typ):
			problems = append(problems, fmt.Sprintf("%s changed from %s to %s", b.name, b.typ, got.typ))
		}
	}
	var added []string
	for _, col := range cur {
		if _, ok := findColumnExact(base, col.name); !ok {
			added = append(added, "added "+col.name+" "+col.typ)
		}
	}
	failed := len(problems) > 0 || (len(added) > 0 && !c.AllowExtra)
	problems = append(problems, added...)
	if len(problems) == 0 {
		return r.judged(c, false, fmt.Sprintf("%d columns unchanged", len(cur)), threshold)
	}
	return r.judged(c, failed, strings.Join(problems, "; "), threshold)
}
