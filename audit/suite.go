package audit

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Check kinds are registered by their files (kind_<name>.go), each with
// its validation, its SQL and how it is evaluated: see checkKind.

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
	// Markers are patterns (path.Match, against the path under Path or its
	// base name) of objects a batch may change under Path without the
	// audit reading them; any other changed object the audit did not read
	// fails unaudited_objects. Unset: DefaultMarkers (_SUCCESS,
	// _committed_*, _started_*); a Delta table's _delta_log/ is read.
	Markers []string `yaml:"markers,omitempty" json:"markers,omitempty"`
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
	// ValueTypes are the JSON types (string, number, boolean) of Values
	// imported from a Great Expectations value_set, one each: pandas'
	// isin compares values of their types, so a value of a type the
	// column's is not is refused (pandasValueSet). Not in the config file.
	ValueTypes []string `yaml:"-" json:"value_types,omitempty"`
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
	id := c.Kind + "(" + c.Table
	if cols := c.columns(); len(cols) > 0 {
		id += "." + strings.Join(cols, ",")
	}
	return id + ")"
}

// columns is Column and Columns together, Column first.
func (c Check) columns() []string {
	if c.Column == "" {
		return c.Columns
	}
	return append([]string{c.Column}, c.Columns...)
}

func (c Check) severity() string { return cmp.Or(c.Severity, SeverityError) }
func (c Check) scope() string    { return cmp.Or(c.Scope, ScopeTable) }
func (t Table) format() string   { return cmp.Or(t.Format, FormatParquet) }

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
		for j, m := range t.Markers {
			if !validPattern(m) {
				add(fmt.Sprintf("%s.markers[%d]", f, j), "%q is not a path pattern", m)
			}
		}
		if !slices.Contains([]string{FormatParquet, FormatCSV, FormatJSONL, FormatDelta}, t.format()) {
			add(f+".format", "unknown format %q (want parquet, csv, jsonl or delta)", t.Format)
		}
	}
	names := map[string]bool{}
	for i, c := range s.Checks {
		f := fmt.Sprintf("checks[%d]", i)
		if names[c.ID()] {
			add(f+".name", "duplicate check name %q", c.ID())
		}
		names[c.ID()] = true
		kind := kindOf(c)
		if kind == nil {
			if c.Kind == "" {
				add(f+".kind", "missing")
			} else {
				add(f+".kind", "unknown check kind %q", c.Kind)
			}
			continue
		}
		switch {
		case c.Table == "" && !kind.noTable:
			add(f+".table", "missing")
		case c.Table != "" && !tables[strings.ToLower(c.Table)]:
			add(f+".table", "unknown table %q", c.Table)
		}
		if c.severity() != SeverityError && c.severity() != SeverityWarn {
			add(f+".severity", "unknown severity %q (want error or warn)", c.Severity)
		}
		switch {
		case c.scope() != ScopeTable && c.scope() != ScopeBatch:
			add(f+".scope", "unknown scope %q (want table or batch)", c.Scope)
		case c.scope() == ScopeBatch && kind.compares:
			add(f+".scope", "%s compares whole tables: scope must be table", c.Kind)
		}
		for j, col := range c.Columns {
			if col == "" {
				add(fmt.Sprintf("%s.columns[%d]", f, j), "empty column name")
			}
		}
		kind.validateCheck(c, func(field, format string, args ...any) { add(f+"."+field, format, args...) })
	}
	return errs
}

// whereTables are the tables of tables (lower-cased names) that c's where
// condition names: those a subquery of it may read. A table is read by its
// name (confine admits no other way), so a condition reading one names it
// as a word, quoted or not; a column of the same name counts too, which
// costs a view and misses nothing.
func whereTables(c Check, tables []Table) []string {
	return namedTables(c.Where, tables)
}

// namedTables are the tables of tables (lower-cased names) that text, a
// where condition or a query, names as a word (a table's name is one:
// tableName).
func namedTables(text string, tables []Table) []string {
	if strings.TrimSpace(text) == "" {
		return nil
	}
	words := map[string]bool{}
	for _, w := range identifierWord.FindAllString(text, -1) {
		words[strings.ToLower(w)] = true
	}
	var out []string
	for _, t := range tables {
		if n := strings.ToLower(t.Name); words[n] && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// identifierWord is a run of the characters a table name is made of.
var identifierWord = regexp.MustCompile(`[A-Za-z0-9_]+`)

// Unread lists the tables of s (their indices) that no check reads: no
// check names them and no custom query (which may name any table) runs.
// Nothing under such a table's path is audited, so every object a batch
// changes there is unaudited (see unaudited).
func (s Suite) Unread() []int {
	read := map[string]bool{}
	for _, c := range s.Checks {
		if k := kindOf(c); k != nil && k.custom {
			return nil
		}
		read[strings.ToLower(c.Table)] = true
	}
	var out []int
	for i, t := range s.Tables {
		if !read[strings.ToLower(t.Name)] {
			out = append(out, i)
		}
	}
	return out
}

// parseAge reads a Go duration or a whole number of days ("2d").
func parseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	d, err := time.ParseDuration(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		n, err = strconv.Atoi(days)
		d = time.Duration(n) * 24 * time.Hour
	}
	if err != nil {
		return 0, fmt.Errorf("bad duration %q (want e.g. 36h or 2d)", s)
	}
	return d, nil
}

// num formats a threshold the way it was most likely written.
func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
