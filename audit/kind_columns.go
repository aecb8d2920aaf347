package audit

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/lakewap/lakewap/schemas"
)

// KindColumns: the table has the columns (in this order with ordered),
// and no others unless allow_extra. Great Expectations' column set, list
// and existence expectations.
const KindColumns = "columns"

func init() {
	registerKind(&checkKind{
		name:       KindColumns,
		fields:     []string{"column", "allow_extra", "ordered"},
		anyColumns: true,
		validate:   func(c Check, add addFunc) { needColumns(c, add, false) },
		run:        (*run).columnsCheck,
	})
}

// columnsCheck: the table has the columns (in order with Ordered), and no
// others unless AllowExtra. Names compare exactly: DuckDB binds ID to id,
// pyarrow, pandas and Polars do not.
func (r *run) columnsCheck(ctx context.Context, c Check) schemas.CheckResult {
	want := c.columns()
	threshold := "columns " + listed(want, 20)
	switch {
	case c.Ordered:
		threshold = "exactly the columns, in order: " + listed(want, 20)
	case !c.AllowExtra:
		threshold = "exactly the columns " + listed(want, 20)
	default:
		threshold += "; other columns allowed"
	}
	cols, _ := r.describe(ctx, schemaOf(c), c.Table) // preflight read them
	var problems []string
	for _, w := range want {
		if _, ok := findColumnExact(cols, w); !ok {
			problems = append(problems, "missing "+w)
		}
	}
	if !c.AllowExtra || c.Ordered {
		for _, col := range cols {
			if !slices.Contains(want, col.name) {
				problems = append(problems, "unexpected "+col.name)
			}
		}
	}
	if names := columnNames(cols); c.Ordered && len(problems) == 0 && !slices.Equal(want, names) {
		problems = append(problems, "order is "+strings.Join(names, ", "))
	}
	if len(problems) == 0 {
		return r.judged(c, false, fmt.Sprintf("%d columns as expected (%d in table)", len(want), len(cols)), threshold)
	}
	return r.judged(c, true, strings.Join(problems, "; "), threshold)
}
