package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Imported is what a suite of another tool translates to: the checks
// lakewap runs, and the ones it cannot (each with the reason), which the
// dataset either refuses (a config error) or reports as skipped.
type Imported struct {
	Checks      []Check
	Unsupported []Skipped
}

// geSuite is a Great Expectations expectation suite as GE 1.x writes it
// (ExpectationSuite.to_json_dict); the 0.x names (expectation_suite_name,
// expectation_type) are read too.
type geSuite struct {
	Name         string          `json:"name"`
	OldName      string          `json:"expectation_suite_name"`
	Expectations []geExpectation `json:"expectations"`
}

type geExpectation struct {
	Type     string                     `json:"type"`
	OldType  string                     `json:"expectation_type"`
	Kwargs   map[string]json.RawMessage `json:"kwargs"`
	Meta     map[string]any             `json:"meta"`
	Severity string                     `json:"severity"`
}

// geIgnored are kwargs that change how GE reports, not what it checks.
var geIgnored = map[string]bool{"result_format": true, "include_config": true, "catch_exceptions": true,
	"batch_id": true, "meta": true}

// geTranslations maps each supported expectation type to its translation
// and the kwargs it understands (any other kwarg makes it unsupported, so
// that no condition is silently dropped).
var geTranslations = map[string]struct {
	kwargs []string
	fn     func(a geArgs, c *Check) error
}{
	"expect_column_values_to_not_be_null": {[]string{"column", "mostly"}, func(a geArgs, c *Check) error {
		c.Kind, c.Columns = KindNotNull, []string{a.str("column")}
		return a.err
	}},
	"expect_column_values_to_be_unique": {[]string{"column", "mostly"}, func(a geArgs, c *Check) error {
		c.Kind, c.Column = KindUnique, a.str("column")
		return a.err
	}},
	"expect_column_values_to_be_in_set": {[]string{"column", "value_set", "mostly"}, func(a geArgs, c *Check) error {
		c.Kind, c.Column, c.Values = KindAcceptedValues, a.str("column"), a.values("value_set")
		return a.err
	}},
	"expect_column_values_to_be_between": {[]string{"column", "min_value", "max_value", "strict_min", "strict_max", "mostly"}, func(a geArgs, c *Check) error {
		c.Kind, c.Column = KindRange, a.str("column")
		c.Min, c.Max, c.StrictMin, c.StrictMax = a.num("min_value"), a.num("max_value"), a.flag("strict_min"), a.flag("strict_max")
		return a.bounds(c)
	}},
	"expect_table_row_count_to_be_between": {[]string{"min_value", "max_value"}, func(a geArgs, c *Check) error {
		c.Kind, c.Min, c.Max = KindRowCount, a.num("min_value"), a.num("max_value")
		return a.bounds(c)
	}},
	"expect_table_row_count_to_equal": {[]string{"value"}, func(a geArgs, c *Check) error {
		c.Kind, c.Min = KindRowCount, a.num("value")
		c.Max = c.Min
		return a.bounds(c)
	}},
	"expect_column_to_exist": {[]string{"column"}, func(a geArgs, c *Check) error {
		c.Kind, c.Columns, c.AllowExtra = KindColumns, []string{a.str("column")}, true
		return a.err
	}},
	"expect_table_columns_to_match_set": {[]string{"column_set", "exact_match"}, func(a geArgs, c *Check) error {
		c.Kind, c.Columns = KindColumns, a.strs("column_set")
		exact := true // GE's default
		if _, ok := a.kw["exact_match"]; ok && string(a.kw["exact_match"]) != "null" {
			exact = a.flag("exact_match")
		}
		c.AllowExtra = !exact
		return a.err
	}},
	"expect_table_columns_to_match_ordered_list": {[]string{"column_list"}, func(a geArgs, c *Check) error {
		c.Kind, c.Columns, c.Ordered = KindColumns, a.strs("column_list"), true
		return a.err
	}},
	"expect_column_max_to_be_between": {[]string{"column", "min_value", "max_value", "strict_min", "strict_max"}, func(a geArgs, c *Check) error {
		c.Kind, c.Stat, c.Column = KindStat, StatMax, a.str("column")
		c.Min, c.Max, c.StrictMin, c.StrictMax = a.num("min_value"), a.num("max_value"), a.flag("strict_min"), a.flag("strict_max")
		return a.bounds(c)
	}},
	"expect_column_min_to_be_between": {[]string{"column", "min_value", "max_value", "strict_min", "strict_max"}, func(a geArgs, c *Check) error {
		c.Kind, c.Stat, c.Column = KindStat, StatMin, a.str("column")
		c.Min, c.Max, c.StrictMin, c.StrictMax = a.num("min_value"), a.num("max_value"), a.flag("strict_min"), a.flag("strict_max")
		return a.bounds(c)
	}},
	"expect_column_values_to_match_regex": {[]string{"column", "regex", "mostly"}, func(a geArgs, c *Check) error {
		c.Kind, c.Column, c.Pattern = KindRegex, a.str("column"), a.str("regex")
		if a.err == nil {
			if _, err := regexp.Compile(c.Pattern); err != nil {
				return fmt.Errorf("regex %q is not RE2 syntax, which lakewap (DuckDB) uses: %v", c.Pattern, err)
			}
		}
		return a.err
	}},
	"expect_compound_columns_to_be_unique": {[]string{"column_list", "mostly", "ignore_row_if"}, func(a geArgs, c *Check) error {
		c.Kind, c.Columns = KindUnique, a.strs("column_list")
		if a.err != nil {
			return a.err
		}
		if len(c.Columns) < 2 {
			return fmt.Errorf("column_list needs at least 2 columns")
		}
		// GE leaves out the rows it is told to ignore; lakewap compares
		// every row (NULLs equal) unless a where condition says otherwise.
		var nulls []string
		for _, col := range c.Columns {
			nulls = append(nulls, quoteIdent(col)+" IS NULL")
		}
		switch mode := a.strOr("ignore_row_if", "all_values_are_missing"); mode {
		case "all_values_are_missing":
			c.Where = "NOT (" + strings.Join(nulls, " AND ") + ")"
		case "any_value_is_missing":
			c.Where = "NOT (" + strings.Join(nulls, " OR ") + ")"
		case "never":
		default:
			return fmt.Errorf("ignore_row_if %q is not all_values_are_missing, any_value_is_missing or never", mode)
		}
		return a.err
	}},
}

// FromGreatExpectations translates a Great Expectations 1.x expectation
// suite (JSON) into checks of table. Each check is named after the
// expectation and its columns, e.g. expect_column_values_to_not_be_null(id);
// GE's severity critical is error, warning and info are warn; mostly and
// meta are kept. Expectations (or kwargs) lakewap cannot run are returned
// as Unsupported, with the reason.
func FromGreatExpectations(data []byte, table string) (Imported, error) {
	var s geSuite
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&s); err != nil {
		return Imported{}, fmt.Errorf("not a Great Expectations suite (JSON): %w", err)
	}
	if s.Expectations == nil {
		return Imported{}, fmt.Errorf("not a Great Expectations suite: no \"expectations\" list")
	}
	var out Imported
	names := map[string]int{}
	for i, e := range s.Expectations {
		typ := e.Type
		if typ == "" {
			typ = e.OldType
		}
		if typ == "" {
			return Imported{}, fmt.Errorf("expectations[%d]: no type", i)
		}
		name := geName(typ, e.Kwargs)
		if names[name]++; names[name] > 1 {
			name += "#" + strconv.Itoa(names[name])
		}
		skip := func(format string, args ...any) {
			out.Unsupported = append(out.Unsupported, Skipped{Name: name, Kind: typ, Table: table,
				Reason: fmt.Sprintf("expectations[%d] %s: %s", i, typ, fmt.Sprintf(format, args...))})
		}
		tr, ok := geTranslations[typ]
		if !ok {
			skip("not supported by lakewap")
			continue
		}
		var unknown []string
		for k, v := range e.Kwargs {
			if !geIgnored[k] && !slices.Contains(tr.kwargs, k) && string(v) != "null" {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) > 0 {
			skip("kwarg %s not supported by lakewap", strings.Join(sortedCopy(unknown), ", "))
			continue
		}
		c := Check{Name: name, Table: table, Meta: e.Meta}
		if len(c.Meta) == 0 {
			c.Meta = nil
		}
		switch strings.ToLower(e.Severity) {
		case "", "critical":
		case "warning", "info":
			c.Severity = SeverityWarn
		default:
			skip("severity %q is not critical, warning or info", e.Severity)
			continue
		}
		a := geArgs{kw: e.Kwargs}
		c.Mostly = a.num("mostly")
		if err := tr.fn(a, &c); err != nil {
			skip("%v", err)
			continue
		}
		if a.err != nil {
			skip("%v", a.err)
			continue
		}
		out.Checks = append(out.Checks, c)
	}
	return out, nil
}

func geName(typ string, kw map[string]json.RawMessage) string {
	var cols []string
	var one string
	if json.Unmarshal(kw["column"], &one) == nil && one != "" {
		cols = []string{one}
	}
	for _, k := range []string{"column_list", "column_set"} {
		var many []string
		if json.Unmarshal(kw[k], &many) == nil && len(many) > 0 {
			cols = many
		}
	}
	return typ + "(" + strings.Join(cols, ",") + ")"
}

// geArgs reads kwargs, keeping the first problem.
type geArgs struct {
	kw  map[string]json.RawMessage
	err error
}

func (a *geArgs) fail(k, want string) {
	if a.err == nil {
		a.err = fmt.Errorf("kwarg %s: %s is not %s", k, string(a.kw[k]), want)
	}
}

func (a *geArgs) str(k string) string {
	var s string
	if err := json.Unmarshal(a.kw[k], &s); err != nil || s == "" {
		if _, ok := a.kw[k]; !ok {
			if a.err == nil {
				a.err = fmt.Errorf("kwarg %s is missing", k)
			}
			return ""
		}
		a.fail(k, "a string")
	}
	return s
}

func (a *geArgs) strOr(k, def string) string {
	if v, ok := a.kw[k]; !ok || string(v) == "null" {
		return def
	}
	return a.str(k)
}

func (a *geArgs) strs(k string) []string {
	var s []string
	if err := json.Unmarshal(a.kw[k], &s); err != nil || len(s) == 0 {
		a.fail(k, "a list of column names")
	}
	return s
}

// values reads a value set as the text lakewap compares column values as.
func (a *geArgs) values(k string) []string {
	var raw []json.RawMessage
	if err := json.Unmarshal(a.kw[k], &raw); err != nil || len(raw) == 0 {
		a.fail(k, "a list of values")
		return nil
	}
	out := make([]string, 0, len(raw))
	for _, r := range raw {
		var s string
		switch {
		case string(r) == "null": // NULL passes anyway
		case json.Unmarshal(r, &s) == nil:
			out = append(out, s)
		case string(r) == "true" || string(r) == "false":
			out = append(out, string(r))
		default:
			var f float64
			if json.Unmarshal(r, &f) != nil {
				a.fail(k, "a list of strings, numbers or booleans")
				return nil
			}
			out = append(out, string(r))
		}
	}
	return out
}

func (a *geArgs) num(k string) *float64 {
	v, ok := a.kw[k]
	if !ok || string(v) == "null" {
		return nil
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil {
		a.fail(k, "a number (lakewap compares numbers only)")
		return nil
	}
	return &f
}

func (a *geArgs) flag(k string) bool {
	v, ok := a.kw[k]
	if !ok || string(v) == "null" {
		return false
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		a.fail(k, "true or false")
	}
	return b
}

func (a *geArgs) bounds(c *Check) error {
	if a.err == nil && c.Min == nil && c.Max == nil {
		return fmt.Errorf("min_value or max_value is required")
	}
	return a.err
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
