package audit

import (
	"context"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/lakewap/lakewap/schemas"
)

// checkKind is everything lakewap knows about one check kind, as lakeFS
// keeps its hook types: one entry per kind, each in its own file
// (kind_<name>.go) that registers it, and nothing else in the package
// switches on a kind's name. Adding a kind is one file plus its test.
type checkKind struct {
	name string
	// fields are the Check fields the kind reads besides name, kind, table,
	// severity, scope and meta, by their YAML names (see checkFields). A
	// field set on a check whose kind does not read it is a config error:
	// a misplaced threshold would otherwise check nothing.
	fields []string
	// validate reports problems with the fields the kind reads.
	validate func(c Check, add addFunc)

	// noTable: the check names no table of its own (it may read any).
	noTable bool
	// custom: the check is a query (confined, one SELECT) that may read
	// every table of its scope, and the base ref's when it names base.
	custom bool
	// compares: the check compares the table with the same table at the
	// base ref, whole (scope batch is refused).
	compares bool
	// anyColumns: a column the table lacks is what the check reports, not
	// an error before it runs.
	anyColumns bool
	// columnType is the type a table with no file anywhere gives the
	// check's columns (default VARCHAR), so that the check binds.
	columnType string

	// A check runs in one of two ways. Aggregated kinds give the
	// expressions they need from their table's one aggregate scan (agg;
	// count(*) is always there and not repeated) and judge their values;
	// the others run alone (run).
	agg   func(c Check) []string
	judge func(r *run, ctx context.Context, c Check, total int64, v []any) schemas.CheckResult
	run   func(r *run, ctx context.Context, c Check) schemas.CheckResult
	// countOnly: the row count alone decides the check, so the row-group
	// metadata's row counts settle it without a scan.
	countOnly bool
	// failing is the condition a failing row meets, for kinds that judge
	// rows one at a time: a failed check shows such rows as samples.
	failing func(c Check) string
	// failingRows, for a kind that counts failing rows without a failing
	// condition of each row, is the query of its failing rows from from
	// (its table, within its where, by its plain name): the excuse
	// compares them with the base's as multisets (newFailingRows).
	failingRows func(c Check, from string) string
	// mostlyOverAll: mostly is a fraction of all rows, not of the rows
	// with a value (not_null).
	mostlyOverAll bool
	// plan, when set, may take an aggregated check out of its table's scan
	// (its result, true) or choose the scan's expression for it
	// (run.planned, in place of agg's first).
	plan func(r *run, ctx context.Context, k scanKey, i int, c Check) (schemas.CheckResult, bool)
	// resample, when set, gives the judged result of a failed check its
	// sample rows (instead of failing's rows).
	resample func(r *run, ctx context.Context, k scanKey, c Check, res schemas.CheckResult) schemas.CheckResult
}

// addFunc records a problem with field (relative to the check), e.g.
// add("max_age", "missing").
type addFunc func(field, format string, args ...any)

var checkKinds = map[string]*checkKind{}

// registerKind adds a kind; each kind file calls it from init.
func registerKind(k *checkKind) {
	if k.name == "" || checkKinds[k.name] != nil || (k.agg == nil) == (k.run == nil) || (k.agg != nil && k.judge == nil) {
		panic("audit: bad or duplicate check kind " + k.name)
	}
	for _, f := range k.fields {
		if !slices.ContainsFunc(checkFields, func(cf checkField) bool { return cf.name == f }) {
			panic("audit: kind " + k.name + " names unknown field " + f)
		}
	}
	checkKinds[k.name] = k
}

// kindOf is the kind of c; Validate refuses unknown kinds, so after it this
// is never nil.
func kindOf(c Check) *checkKind { return checkKinds[c.Kind] }

// Kinds are the names of the check kinds, sorted.
func Kinds() []string { return slices.Sorted(maps.Keys(checkKinds)) }

// KindFields are the fields a check of kind reads besides name, kind,
// table, severity, scope and meta, by their YAML names ("column" stands for
// column and columns); nil for an unknown kind. The generated reference
// lists them.
func KindFields(kind string) []string {
	if k := checkKinds[kind]; k != nil {
		return slices.Clone(k.fields)
	}
	return nil
}

// CheckFields are every kind-specific field's YAML name, in the order
// Validate reports their problems.
func CheckFields() []string {
	names := make([]string, len(checkFields))
	for i, f := range checkFields {
		names[i] = f.name
	}
	return names
}

func (k *checkKind) reads(field string) bool { return slices.Contains(k.fields, field) }

// aggregated kinds are answered by their table's one aggregate scan.
func (k *checkKind) aggregated() bool { return k.agg != nil }

// checkFields are the kind-specific fields of Check, in the order their
// problems are reported, each with whether a check sets it.
var checkFields = []checkField{
	{"values", func(c Check) bool { return len(c.Values) > 0 }},
	{"min", func(c Check) bool { return c.Min != nil }},
	{"max", func(c Check) bool { return c.Max != nil }},
	{"strict_min", func(c Check) bool { return c.StrictMin }},
	{"strict_max", func(c Check) bool { return c.StrictMax }},
	{"pattern", func(c Check) bool { return c.Pattern != "" }},
	{"stat", func(c Check) bool { return c.Stat != "" }},
	{"ordered", func(c Check) bool { return c.Ordered }},
	{"mostly", func(c Check) bool { return c.Mostly != nil }},
	{"where", func(c Check) bool { return strings.TrimSpace(c.Where) != "" }},
	{"max_drop_pct", func(c Check) bool { return c.MaxDropPct != nil }},
	{"max_growth_pct", func(c Check) bool { return c.MaxGrowthPct != nil }},
	{"schema", func(c Check) bool { return len(c.Schema) > 0 }},
	{"allow_extra", func(c Check) bool { return c.AllowExtra }},
	{"max_age", func(c Check) bool { return c.MaxAge != "" }},
	{"sql", func(c Check) bool { return c.SQL != "" }},
	{"column", func(c Check) bool { return len(c.columns()) > 0 }},
}

type checkField struct {
	name string
	set  func(c Check) bool
}

// needColumns reports a check of a kind that reads columns without any
// (or, with one, with more than one).
func needColumns(c Check, add addFunc, one bool) {
	switch {
	case len(c.columns()) == 0:
		add("column", "missing")
	case one && len(c.Columns) > 0:
		add("columns", "%s takes one column: use column", c.Kind)
	}
}

// needBounds reports a check bounded by min and max (inclusive unless
// strict) without either, or with bounds that are not finite or crossed.
func needBounds(c Check, add addFunc, nonNegative bool) {
	if c.Min == nil && c.Max == nil {
		add("min", "min or max is required")
	}
	bound := func(field string, v *float64) {
		if v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0)) {
			add(field, "must be a finite number")
		} else if v != nil && nonNegative && *v < 0 {
			add(field, "must not be negative")
		}
	}
	bound("min", c.Min)
	bound("max", c.Max)
	if c.Min != nil && c.Max != nil && *c.Min > *c.Max {
		add("min", "min %s is greater than max %s", num(*c.Min), num(*c.Max))
	}
}

// validateCheck reports c's problems: the fields of other kinds, then the
// kind's own.
func (k *checkKind) validateCheck(c Check, add addFunc) {
	for _, f := range checkFields {
		switch {
		case !f.set(c):
		case !k.reads(f.name):
			add(f.name, "not used by %s checks", c.Kind)
		case f.name == "mostly" && !(*c.Mostly >= 0 && *c.Mostly <= 1):
			add(f.name, "must be between 0 and 1")
		}
	}
	if k.validate != nil {
		k.validate(c, add)
	}
}
