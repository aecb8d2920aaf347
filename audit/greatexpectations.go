package audit

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
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

// geTranslation is how an expectation type translates, with the kwargs
// it understands (any other kwarg makes it unsupported, so that no
// condition is silently dropped). Problems go to a.err.
type geTranslation struct {
	kwargs []string
	fn     func(a *geArgs, c *Check)
}

// geBetween are the kwargs of the *_to_be_between expectations of a column.
var geBetween = []string{"column", "min_value", "max_value", "strict_min", "strict_max"}

func geStat(stat string) geTranslation {
	return geTranslation{geBetween, func(a *geArgs, c *Check) {
		c.Kind, c.Stat, c.Column = KindStat, stat, a.str("column")
		a.between(c)
	}}
}

var geTranslations = map[string]geTranslation{
	"expect_column_values_to_not_be_null": {[]string{"column", "mostly"}, func(a *geArgs, c *Check) {
		c.Kind, c.Columns = KindNotNull, []string{a.str("column")}
	}},
	"expect_column_values_to_be_unique": {[]string{"column", "mostly"}, func(a *geArgs, c *Check) {
		c.Kind, c.Column = KindUnique, a.str("column")
	}},
	"expect_column_values_to_be_in_set": {[]string{"column", "value_set", "mostly"}, func(a *geArgs, c *Check) {
		c.Kind, c.Column = KindAcceptedValues, a.str("column")
		c.Values, c.ValueTypes = a.values("value_set")
	}},
	"expect_column_values_to_be_between": {append([]string{"mostly"}, geBetween...), func(a *geArgs, c *Check) {
		c.Kind, c.Column = KindRange, a.str("column")
		a.between(c)
	}},
	"expect_column_max_to_be_between": geStat(StatMax),
	"expect_column_min_to_be_between": geStat(StatMin),
	"expect_table_row_count_to_be_between": {[]string{"min_value", "max_value"}, func(a *geArgs, c *Check) {
		c.Kind, c.Min, c.Max = KindRowCount, a.num("min_value"), a.num("max_value")
		a.bounds(c)
	}},
	"expect_table_row_count_to_equal": {[]string{"value"}, func(a *geArgs, c *Check) {
		c.Kind, c.Min = KindRowCount, a.num("value")
		c.Max = c.Min
		a.bounds(c)
	}},
	"expect_column_to_exist": {[]string{"column"}, func(a *geArgs, c *Check) {
		c.Kind, c.Columns, c.AllowExtra = KindColumns, []string{a.str("column")}, true
	}},
	"expect_table_columns_to_match_set": {[]string{"column_set", "exact_match"}, func(a *geArgs, c *Check) {
		c.Kind, c.Columns = KindColumns, a.strs("column_set")
		_, given := a.given("exact_match")
		c.AllowExtra = given && !a.flag("exact_match") // GE's default is exact
	}},
	"expect_table_columns_to_match_ordered_list": {[]string{"column_list"}, func(a *geArgs, c *Check) {
		c.Kind, c.Columns, c.Ordered = KindColumns, a.strs("column_list"), true
	}},
	"expect_column_values_to_match_regex": {[]string{"column", "regex", "mostly"}, func(a *geArgs, c *Check) {
		c.Kind, c.Column, c.Pattern = KindRegex, a.str("column"), a.str("regex")
		if _, err := regexp.Compile(c.Pattern); err != nil {
			a.failf("regex %q is not RE2 syntax, which lakewap (DuckDB) uses: %v", c.Pattern, err)
		}
	}},
	"expect_compound_columns_to_be_unique": {[]string{"column_list", "mostly", "ignore_row_if"}, func(a *geArgs, c *Check) {
		if c.Kind, c.Columns = KindUnique, a.strs("column_list"); a.err != nil || len(c.Columns) < 2 {
			a.failf("column_list needs at least 2 columns")
			return
		}
		// GE leaves out the rows it is told to ignore; lakewap compares
		// every row (NULLs equal) unless a where condition says otherwise.
		nulls := each(c.Columns, isNull)
		mode := "all_values_are_missing"
		if _, ok := a.given("ignore_row_if"); ok {
			mode = a.str("ignore_row_if")
		}
		switch mode {
		case "all_values_are_missing":
			c.Where = "NOT (" + strings.Join(nulls, " AND ") + ")"
		case "any_value_is_missing":
			c.Where = "NOT (" + strings.Join(nulls, " OR ") + ")"
		case "never":
		default: // also when ignore_row_if is not a string: this is the problem to report
			a.err = fmt.Errorf("ignore_row_if %q is not all_values_are_missing, any_value_is_missing or never", mode)
		}
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
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&s); err != nil {
		return Imported{}, fmt.Errorf("not a Great Expectations suite (JSON): %w", err)
	}
	if s.Expectations == nil {
		return Imported{}, fmt.Errorf("not a Great Expectations suite: no \"expectations\" list")
	}
	var out Imported
	names := map[string]int{}
	for i, e := range s.Expectations {
		typ := cmp.Or(e.Type, e.OldType)
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
		unknown := slices.DeleteFunc(slices.Sorted(maps.Keys(e.Kwargs)), func(k string) bool {
			return geIgnored[k] || slices.Contains(tr.kwargs, k) || string(e.Kwargs[k]) == "null"
		})
		if len(unknown) > 0 {
			skip("kwarg %s not supported by lakewap", strings.Join(unknown, ", "))
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
		if tr.fn(&a, &c); a.err != nil {
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

func (a *geArgs) failf(format string, args ...any) {
	if a.err == nil {
		a.err = fmt.Errorf(format, args...)
	}
}

func (a *geArgs) fail(k, want string) { a.failf("kwarg %s: %s is not %s", k, a.kw[k], want) }

func (a *geArgs) str(k string) string {
	var s string
	if _, ok := a.kw[k]; !ok {
		a.failf("kwarg %s is missing", k)
	} else if err := json.Unmarshal(a.kw[k], &s); err != nil || s == "" {
		a.fail(k, "a string")
	}
	return s
}

// given is kwarg k when it is there and not null.
func (a *geArgs) given(k string) (json.RawMessage, bool) {
	v, ok := a.kw[k]
	return v, ok && string(v) != "null"
}

func (a *geArgs) strs(k string) []string {
	var s []string
	if err := json.Unmarshal(a.kw[k], &s); err != nil || len(s) == 0 {
		a.fail(k, "a list of column names")
	}
	return s
}

// values reads a value set as the text lakewap compares column values
// as, and each value's JSON type (string, number, boolean), which pandas'
// isin compares too.
func (a *geArgs) values(k string) (out, types []string) {
	var raw []json.RawMessage
	if err := json.Unmarshal(a.kw[k], &raw); err != nil || len(raw) == 0 {
		a.fail(k, "a list of values")
		return nil, nil
	}
	for _, r := range raw {
		var s string
		switch {
		case string(r) == "null": // NULL passes anyway
		case json.Unmarshal(r, &s) == nil:
			out = append(out, s)
			types = append(types, valueString)
		case string(r) == "true" || string(r) == "false":
			out = append(out, string(r))
			types = append(types, valueBoolean)
		case json.Unmarshal(r, new(float64)) == nil:
			out = append(out, string(r))
			types = append(types, valueNumber)
		default:
			a.fail(k, "a list of strings, numbers or booleans")
			return nil, nil
		}
	}
	return out, types
}

// The JSON types of a value_set's values (Check.ValueTypes).
const (
	valueString  = "string"
	valueNumber  = "number"
	valueBoolean = "boolean"
)

func (a *geArgs) num(k string) *float64 {
	v, ok := a.given(k)
	if !ok {
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
	v, ok := a.given(k)
	var b bool
	if ok && json.Unmarshal(v, &b) != nil {
		a.fail(k, "true or false")
	}
	return b
}

// between reads the bounds of a *_to_be_between expectation.
func (a *geArgs) between(c *Check) {
	c.Min, c.Max, c.StrictMin, c.StrictMax = a.num("min_value"), a.num("max_value"), a.flag("strict_min"), a.flag("strict_max")
	a.bounds(c)
}

func (a *geArgs) bounds(c *Check) {
	if c.Min == nil && c.Max == nil {
		a.failf("min_value or max_value is required")
	}
}
