package audit

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Check kinds.
const (
	KindNotNull        = "not_null"
	KindUnique         = "unique"
	KindAcceptedValues = "accepted_values"
	KindRange          = "range"
	KindRowCount       = "row_count"
	KindVolumeChange   = "volume_change"
	KindSchema         = "schema"
	KindSchemaDrift    = "schema_drift"
	KindFreshness      = "freshness"
	KindSQL            = "sql"
	KindCrossTable     = "cross_table"
	// Kinds that Great Expectations and dbt suites translate to.
	KindRegex   = "regex"   // values of column match pattern (NULL passes)
	KindStat    = "stat"    // min or max of column between min and max
	KindColumns = "columns" // the table has columns (in order, and nothing else)
)

// Table formats.
const (
	FormatParquet = "parquet"
	FormatCSV     = "csv"
	FormatJSONL   = "jsonl"
	// FormatDelta is a Delta Lake table: the Parquet files its _delta_log
	// says are active at the ref.
	FormatDelta = "delta"
)

// Severities and scopes.
const (
	SeverityError = "error"
	SeverityWarn  = "warn"
	ScopeTable    = "table"
	ScopeBatch    = "batch"
)

var kinds = []string{KindNotNull, KindUnique, KindAcceptedValues, KindRange, KindRowCount,
	KindVolumeChange, KindSchema, KindSchemaDrift, KindFreshness, KindSQL, KindCrossTable,
	KindRegex, KindStat, KindColumns}

// Stats of a stat check.
const (
	StatMin = "min"
	StatMax = "max"
)

// Suite is the audit declaration of one dataset, embedded in lakewap's YAML
// config under the dataset.
type Suite struct {
	Tables []Table `yaml:"tables" json:"tables"`
	Checks []Check `yaml:"checks" json:"checks"`
	// Skipped are checks imported from another tool (checks_from) that
	// lakewap cannot run, kept because the dataset chose to skip them: each
	// is reported with status skipped.
	Skipped []Skipped `yaml:"-" json:"skipped,omitempty"`
}

// Skipped is an imported check lakewap does not run, and why.
type Skipped struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"` // the other tool's name for it, e.g. expect_column_kl_divergence_to_be_less_than
	Table  string `json:"table,omitempty"`
	Reason string `json:"reason"`
}

// Table is a table of the dataset: the objects under Path in the repository.
// Objects whose base name starts with "_" or "." (writer markers, lakeFS
// actions) and empty objects are not table files.
type Table struct {
	// Name is how checks and custom SQL refer to the table.
	Name string `yaml:"name" json:"name"`
	// Path is an object prefix in the repository, e.g. gold/billing_fact/.
	Path string `yaml:"path" json:"path"`
	// Format is parquet (default), csv (with a header), jsonl or delta.
	Format string `yaml:"format,omitempty" json:"format,omitempty"`
}

// Check is one audit check. Which fields apply depends on Kind.
type Check struct {
	// Name identifies the check in reports; empty means kind(table.columns).
	Name string `yaml:"name,omitempty" json:"name,omitempty"`
	Kind string `yaml:"kind" json:"kind"`
	// Table is the table checked; every kind but cross_table needs one.
	Table string `yaml:"table,omitempty" json:"table,omitempty"`
	// Columns for not_null (each must be non-null) and unique (the
	// combination must be unique). Column is the single-column shorthand and
	// the column of accepted_values, range and freshness.
	Columns []string `yaml:"columns,omitempty" json:"columns,omitempty"`
	Column  string   `yaml:"column,omitempty" json:"column,omitempty"`
	// Values accepted by accepted_values, compared as text; NULL passes.
	Values []string `yaml:"values,omitempty" json:"values,omitempty"`
	// Min and Max bound the column for range (NULL passes) and the row
	// count for row_count, inclusive.
	Min *float64 `yaml:"min,omitempty" json:"min,omitempty"`
	Max *float64 `yaml:"max,omitempty" json:"max,omitempty"`
	// MaxDropPct and MaxGrowthPct bound the change in row count against the
	// same table at the base ref, in percent.
	MaxDropPct   *float64 `yaml:"max_drop_pct,omitempty" json:"max_drop_pct,omitempty"`
	MaxGrowthPct *float64 `yaml:"max_growth_pct,omitempty" json:"max_growth_pct,omitempty"`
	// Schema is the column contract of a schema check, types in DuckDB's
	// names (aliases such as INT or TEXT are accepted). AllowExtra lets the
	// table have other columns (schema) or gain columns (schema_drift).
	Schema     []ColumnType `yaml:"schema,omitempty" json:"schema,omitempty"`
	AllowExtra bool         `yaml:"allow_extra,omitempty" json:"allow_extra,omitempty"`
	// MaxAge is how old the newest Column value may be at batch time, as a
	// Go duration or a number of days ("36h", "90m", "2d").
	MaxAge string `yaml:"max_age,omitempty" json:"max_age,omitempty"`
	// SQL is a query for sql and cross_table checks: every row it returns
	// is a failure.
	SQL string `yaml:"sql,omitempty" json:"sql,omitempty"`
	// Severity is error (default; a failure blocks publishing) or warn.
	Severity string `yaml:"severity,omitempty" json:"severity,omitempty"`
	// Scope is table (default: the whole table at the ref) or batch (only
	// the files added or changed on the ref against the base ref).
	Scope string `yaml:"scope,omitempty" json:"scope,omitempty"`
	// Pattern is the regular expression (RE2 syntax) of a regex check; a
	// value passes when the pattern matches somewhere in it.
	Pattern string `yaml:"pattern,omitempty" json:"pattern,omitempty"`
	// Stat is min or max, for stat checks.
	Stat string `yaml:"stat,omitempty" json:"stat,omitempty"`
	// StrictMin and StrictMax make Min and Max exclusive (range, stat).
	StrictMin bool `yaml:"strict_min,omitempty" json:"strict_min,omitempty"`
	StrictMax bool `yaml:"strict_max,omitempty" json:"strict_max,omitempty"`
	// Ordered makes a columns check require the columns in this order.
	Ordered bool `yaml:"ordered,omitempty" json:"ordered,omitempty"`
	// Mostly is the fraction of rows (0..1) that must pass for not_null,
	// unique, accepted_values, range and regex, as Great Expectations'
	// mostly; unset means every row. The rows counted are those with a
	// value (all rows for not_null and multi-column unique).
	Mostly *float64 `yaml:"mostly,omitempty" json:"mostly,omitempty"`
	// Where is a SQL condition: only the rows meeting it are checked
	// (row-level kinds and row_count), as dbt's where config.
	Where string `yaml:"where,omitempty" json:"where,omitempty"`
	// Meta is carried along from imported suites (GE meta, dbt meta) and
	// shown with a failed check.
	Meta map[string]any `yaml:"meta,omitempty" json:"meta,omitempty"`
}

// ColumnType is one column of a schema contract.
type ColumnType struct {
	Name string `yaml:"name" json:"name"`
	Type string `yaml:"type" json:"type"`
}

// ID is the check's name, or a name derived from what it checks.
func (c Check) ID() string {
	if c.Name != "" {
		return c.Name
	}
	var b strings.Builder
	b.WriteString(c.Kind)
	b.WriteByte('(')
	b.WriteString(c.Table)
	if cols := c.columns(); len(cols) > 0 {
		b.WriteByte('.')
		b.WriteString(strings.Join(cols, ","))
	}
	b.WriteByte(')')
	return b.String()
}

// columns is Column and Columns together, Column first.
func (c Check) columns() []string {
	if c.Column == "" {
		return c.Columns
	}
	return append([]string{c.Column}, c.Columns...)
}

func (c Check) severity() string {
	if c.Severity == "" {
		return SeverityError
	}
	return c.Severity
}

func (c Check) scope() string {
	if c.Scope == "" {
		return ScopeTable
	}
	return c.Scope
}

func (t Table) format() string {
	if t.Format == "" {
		return FormatParquet
	}
	return t.Format
}

// tableName keeps names usable unquoted in custom SQL.
var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// typeName admits DuckDB type names such as DECIMAL(18,2), VARCHAR[] or
// TIMESTAMP WITH TIME ZONE and nothing that could end the cast it goes in.
var typeName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_ ]*(\(\s*\d+\s*(,\s*\d+\s*)?\))?(\[\d*\])*$`)

// Validate checks the suite without running it. Each error names the field
// path under path, e.g. datasets.billing.checks[2].kind.
func (s Suite) Validate(path string) []error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", path, field, fmt.Sprintf(format, args...)))
	}
	tables := map[string]bool{}
	for i, t := range s.Tables {
		f := fmt.Sprintf("tables[%d]", i)
		switch {
		case t.Name == "":
			add(f+".name", "missing")
		case !tableName.MatchString(t.Name):
			add(f+".name", "%q is not a plain identifier (letters, digits, _)", t.Name)
		case tables[strings.ToLower(t.Name)]:
			add(f+".name", "duplicate table %q", t.Name)
		}
		tables[strings.ToLower(t.Name)] = true
		if t.Path == "" {
			add(f+".path", "missing")
		} else if strings.HasPrefix(t.Path, "/") {
			add(f+".path", "%q must be relative to the repository root", t.Path)
		}
		switch t.format() {
		case FormatParquet, FormatCSV, FormatJSONL, FormatDelta:
		default:
			add(f+".format", "unknown format %q (want parquet, csv, jsonl or delta)", t.Format)
		}
	}
	names := map[string]bool{}
	for i, c := range s.Checks {
		f := fmt.Sprintf("checks[%d]", i)
		if id := c.ID(); names[id] {
			add(f+".name", "duplicate check name %q", id)
		} else {
			names[id] = true
		}
		known := false
		for _, k := range kinds {
			known = known || c.Kind == k
		}
		if !known {
			if c.Kind == "" {
				add(f+".kind", "missing")
			} else {
				add(f+".kind", "unknown check kind %q", c.Kind)
			}
			continue
		}
		switch {
		case c.Table == "" && c.Kind != KindCrossTable:
			add(f+".table", "missing")
		case c.Table != "" && !tables[strings.ToLower(c.Table)]:
			add(f+".table", "unknown table %q", c.Table)
		}
		switch c.severity() {
		case SeverityError, SeverityWarn:
		default:
			add(f+".severity", "unknown severity %q (want error or warn)", c.Severity)
		}
		switch c.scope() {
		case ScopeTable:
		case ScopeBatch:
			if c.Kind == KindVolumeChange || c.Kind == KindSchemaDrift {
				add(f+".scope", "%s compares whole tables: scope must be table", c.Kind)
			}
		default:
			add(f+".scope", "unknown scope %q (want table or batch)", c.Scope)
		}
		for j, col := range c.Columns {
			if col == "" {
				add(fmt.Sprintf("%s.columns[%d]", f, j), "empty column name")
			}
		}
		cols := c.columns()
		needCols := func(one bool) {
			switch {
			case len(cols) == 0:
				add(f+".column", "missing")
			case one && len(c.Columns) > 0:
				add(f+".columns", "%s takes one column: use column", c.Kind)
			}
		}
		unexpected := func(field string, set bool) {
			if set {
				add(f+"."+field, "not used by %s checks", c.Kind)
			}
		}
		// Fields that a kind ignores are errors: a misplaced threshold would
		// otherwise silently check nothing.
		unexpected("values", len(c.Values) > 0 && c.Kind != KindAcceptedValues)
		bounded := c.Kind == KindRange || c.Kind == KindRowCount || c.Kind == KindStat
		unexpected("min", c.Min != nil && !bounded)
		unexpected("max", c.Max != nil && !bounded)
		unexpected("strict_min", c.StrictMin && c.Kind != KindRange && c.Kind != KindStat)
		unexpected("strict_max", c.StrictMax && c.Kind != KindRange && c.Kind != KindStat)
		unexpected("pattern", c.Pattern != "" && c.Kind != KindRegex)
		unexpected("stat", c.Stat != "" && c.Kind != KindStat)
		unexpected("ordered", c.Ordered && c.Kind != KindColumns)
		switch c.Kind {
		case KindNotNull, KindUnique, KindAcceptedValues, KindRange, KindRegex:
			if c.Mostly != nil && !(*c.Mostly >= 0 && *c.Mostly <= 1) {
				add(f+".mostly", "must be between 0 and 1")
			}
		default:
			unexpected("mostly", c.Mostly != nil)
		}
		switch c.Kind {
		case KindNotNull, KindUnique, KindAcceptedValues, KindRange, KindRegex, KindRowCount:
		default:
			unexpected("where", strings.TrimSpace(c.Where) != "")
		}
		unexpected("max_drop_pct", c.MaxDropPct != nil && c.Kind != KindVolumeChange)
		unexpected("max_growth_pct", c.MaxGrowthPct != nil && c.Kind != KindVolumeChange)
		unexpected("schema", len(c.Schema) > 0 && c.Kind != KindSchema)
		unexpected("allow_extra", c.AllowExtra && c.Kind != KindSchema && c.Kind != KindSchemaDrift && c.Kind != KindColumns)
		unexpected("max_age", c.MaxAge != "" && c.Kind != KindFreshness)
		unexpected("sql", c.SQL != "" && c.Kind != KindSQL && c.Kind != KindCrossTable)
		switch c.Kind {
		case KindNotNull, KindUnique:
			needCols(false)
		case KindAcceptedValues:
			needCols(true)
			if len(c.Values) == 0 {
				add(f+".values", "missing")
			}
		case KindRegex:
			needCols(true)
			if c.Pattern == "" {
				add(f+".pattern", "missing")
			} else if _, err := regexp.Compile(c.Pattern); err != nil {
				add(f+".pattern", "%v", err)
			}
		case KindColumns:
			needCols(false)
		case KindRange, KindRowCount, KindStat:
			switch c.Kind {
			case KindRange:
				needCols(true)
			case KindStat:
				needCols(true)
				if c.Stat != StatMin && c.Stat != StatMax {
					add(f+".stat", "%q is not min or max", c.Stat)
				}
			default:
				unexpected("column", len(cols) > 0)
			}
			if c.Min == nil && c.Max == nil {
				add(f+".min", "min or max is required")
			}
			for _, b := range []struct {
				field string
				v     *float64
			}{{"min", c.Min}, {"max", c.Max}} {
				if b.v != nil && (math.IsNaN(*b.v) || math.IsInf(*b.v, 0)) {
					add(f+"."+b.field, "must be a finite number")
				} else if b.v != nil && c.Kind == KindRowCount && *b.v < 0 {
					add(f+"."+b.field, "must not be negative")
				}
			}
			if c.Min != nil && c.Max != nil && *c.Min > *c.Max {
				add(f+".min", "min %s is greater than max %s", num(*c.Min), num(*c.Max))
			}
		case KindVolumeChange:
			unexpected("column", len(cols) > 0)
			if c.MaxDropPct == nil && c.MaxGrowthPct == nil {
				add(f+".max_drop_pct", "max_drop_pct or max_growth_pct is required")
			}
			if c.MaxDropPct != nil && (*c.MaxDropPct < 0 || *c.MaxDropPct > 100 || math.IsNaN(*c.MaxDropPct)) {
				add(f+".max_drop_pct", "must be between 0 and 100")
			}
			if c.MaxGrowthPct != nil && (*c.MaxGrowthPct < 0 || math.IsNaN(*c.MaxGrowthPct) || math.IsInf(*c.MaxGrowthPct, 0)) {
				add(f+".max_growth_pct", "must be a finite number >= 0")
			}
		case KindSchema:
			unexpected("column", len(cols) > 0)
			if len(c.Schema) == 0 {
				add(f+".schema", "missing")
			}
			seen := map[string]bool{}
			for j, ct := range c.Schema {
				cf := fmt.Sprintf("%s.schema[%d]", f, j)
				if ct.Name == "" {
					add(cf+".name", "missing")
				} else if seen[strings.ToLower(ct.Name)] {
					add(cf+".name", "duplicate column %q", ct.Name)
				}
				seen[strings.ToLower(ct.Name)] = true
				if ct.Type == "" {
					add(cf+".type", "missing")
				} else if !typeName.MatchString(strings.TrimSpace(ct.Type)) {
					add(cf+".type", "%q is not a type name", ct.Type)
				}
			}
		case KindSchemaDrift:
			unexpected("column", len(cols) > 0)
		case KindFreshness:
			needCols(true)
			if c.MaxAge == "" {
				add(f+".max_age", "missing")
			} else if d, err := parseAge(c.MaxAge); err != nil {
				add(f+".max_age", "%v", err)
			} else if d <= 0 {
				add(f+".max_age", "must be positive")
			}
		case KindSQL, KindCrossTable:
			unexpected("column", len(cols) > 0)
			if strings.TrimSpace(c.SQL) == "" {
				add(f+".sql", "missing")
			}
		}
	}
	return errs
}

// parseAge reads a Go duration or a whole number of days ("2d").
func parseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil {
			return 0, fmt.Errorf("bad duration %q (want e.g. 36h or 2d)", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q (want e.g. 36h or 2d)", s)
	}
	return d, nil
}

// num formats a threshold the way it was most likely written.
func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
