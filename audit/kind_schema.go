package audit

import (
	"context"
	"fmt"
	"strings"

	"github.com/lakewap/lakewap/schemas"
)

// KindSchema: the table has the columns of schema with those types
// (DuckDB's names; aliases such as INT or TEXT are accepted), and no other
// columns unless allow_extra. Names compare exactly: ID is not id to
// pyarrow, pandas or Polars.
const KindSchema = "schema"

func init() {
	registerKind(&checkKind{
		name:   KindSchema,
		fields: []string{"schema", "allow_extra"},
		validate: func(c Check, add addFunc) {
			if len(c.Schema) == 0 {
				add("schema", "missing")
			}
			seen := map[string]bool{}
			for j, ct := range c.Schema {
				f := fmt.Sprintf("schema[%d]", j)
				if ct.Name == "" {
					add(f+".name", "missing")
				} else if seen[strings.ToLower(ct.Name)] {
					add(f+".name", "duplicate column %q", ct.Name)
				}
				seen[strings.ToLower(ct.Name)] = true
				if ct.Type == "" {
					add(f+".type", "missing")
				} else if !typeName.MatchString(strings.TrimSpace(ct.Type)) {
					add(f+".type", "%q is not a type name", ct.Type)
				}
			}
		},
		run: (*run).schemaContract,
	})
}

func (r *run) schemaContract(ctx context.Context, c Check) schemas.CheckResult {
	schema := schemaOf(c)
	extra := map[bool]string{false: "no other columns", true: "other columns allowed"}[c.AllowExtra]
	want := each(c.Schema, func(ct ColumnType) string { return ct.Name + " " + strings.ToUpper(strings.TrimSpace(ct.Type)) })
	threshold := listed(want, 20) + "; " + extra
	if r.views[viewKey{schema, strings.ToLower(c.Table)}].synthetic {
		return r.judged(c, true, "table has no files", threshold)
	}
	cols, _ := r.describe(ctx, schema, c.Table) // preflight read them
	var problems []string
	expected := map[string]bool{}
	for _, ct := range c.Schema {
		expected[ct.Name] = true
		typ, err := r.canonicalType(ctx, ct.Type)
		if err != nil {
			return r.errored(c, fmt.Errorf("schema column %s: %w", ct.Name, err), 0)
		}
		got, ok := findColumnExact(cols, ct.Name)
		switch {
		case !ok:
			problems = append(problems, "missing "+ct.Name)
		case !strings.EqualFold(got.typ, typ):
			problems = append(problems, fmt.Sprintf("%s is %s, not %s", ct.Name, got.typ, typ))
		}
	}
	if !c.AllowExtra {
		for _, col := range cols {
			if !expected[col.name] {
				problems = append(problems, "unexpected "+col.name+" "+col.typ)
			}
		}
	}
	if len(problems) == 0 {
		return r.judged(c, false, fmt.Sprintf("%d columns as expected (%d in table)", len(c.Schema), len(cols)), threshold)
	}
	return r.judged(c, true, strings.Join(problems, "; "), threshold)
}
