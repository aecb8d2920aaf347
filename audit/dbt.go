package audit

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// dbtSchema is the part of a dbt properties file (schema.yml) that holds
// generic data tests: models, their columns, and the tests of each.
type dbtSchema struct {
	Models []struct {
		Name    string      `yaml:"name"`
		Tests   []yaml.Node `yaml:"tests"`
		DTests  []yaml.Node `yaml:"data_tests"`
		Columns []struct {
			Name   string      `yaml:"name"`
			Tests  []yaml.Node `yaml:"tests"`
			DTests []yaml.Node `yaml:"data_tests"`
		} `yaml:"columns"`
	} `yaml:"models"`
	Sources []struct {
		Name string `yaml:"name"`
	} `yaml:"sources"`
}

// dbtTest is one generic test with its arguments and configs merged: dbt
// accepts configs at the top of the test, under config:, and arguments at
// the top or (dbt 1.10+) under arguments:.
type dbtTest struct {
	kind  string
	name  string
	args  map[string]any
	index string // where it is in the file, for messages
}

// FromDBT translates the generic data tests of a dbt schema.yml into
// checks: not_null, unique, accepted_values and relationships (a
// cross_table check), with their where, severity and enabled configs. table
// maps a dbt model to the dataset's table it is; a test of a model it does
// not map is unsupported. Checks are named as dbt names its tests
// (not_null_<model>_<column>) unless the test has a name.
func FromDBT(data []byte, table func(model string) (string, bool)) (Imported, error) {
	var s dbtSchema
	if err := yaml.Unmarshal(data, &s); err != nil {
		return Imported{}, fmt.Errorf("not a dbt schema.yml: %w", err)
	}
	var out Imported
	names := map[string]bool{}
	for i, src := range s.Sources {
		out.Unsupported = append(out.Unsupported, Skipped{Name: "source " + src.Name, Kind: "dbt source",
			Reason: fmt.Sprintf("sources[%d] %s: tests of dbt sources are not supported; declare the table as a model", i, src.Name)})
	}
	for mi, m := range s.Models {
		var tests []dbtTest
		parse := func(index, column string, nodes []yaml.Node) error {
			for ti, n := range nodes {
				t, err := parseDBTTest(&n)
				t.index = fmt.Sprintf("%s tests[%d]", index, ti)
				if err != nil {
					return fmt.Errorf("%s: %w", t.index, err)
				}
				if _, ok := t.args["column_name"]; !ok && column != "" {
					t.args["column_name"] = column
				}
				tests = append(tests, t)
			}
			return nil
		}
		index := fmt.Sprintf("models[%d] %s", mi, m.Name)
		if err := parse(index, "", append(m.Tests, m.DTests...)); err != nil {
			return Imported{}, err
		}
		for ci, col := range m.Columns {
			if err := parse(fmt.Sprintf("%s columns[%d] %s", index, ci, col.Name), col.Name, append(col.Tests, col.DTests...)); err != nil {
				return Imported{}, err
			}
		}
		for _, t := range tests {
			if enabled, ok := t.args["enabled"].(bool); ok && !enabled {
				continue // dbt does not run it either
			}
			c, err := dbtCheck(m.Name, t, table)
			if names[c.Name] {
				return Imported{}, fmt.Errorf("%s: two tests named %s; give one a name", t.index, c.Name)
			}
			names[c.Name] = true
			if err != nil {
				tbl, _ := table(m.Name)
				out.Unsupported = append(out.Unsupported, Skipped{Name: c.Name, Kind: "dbt " + t.kind, Table: tbl,
					Reason: fmt.Sprintf("%s %s: %v", t.index, t.kind, err)})
				continue
			}
			out.Checks = append(out.Checks, c)
		}
	}
	return out, nil
}

func parseDBTTest(n *yaml.Node) (dbtTest, error) {
	t := dbtTest{args: map[string]any{}}
	switch n.Kind {
	case yaml.ScalarNode:
		t.kind = n.Value
		return t, nil
	case yaml.MappingNode:
		if len(n.Content) != 2 {
			return t, fmt.Errorf("a test is one name with its settings, got %d keys", len(n.Content)/2)
		}
		t.kind = n.Content[0].Value
		var raw map[string]any
		if err := n.Content[1].Decode(&raw); err != nil {
			return t, fmt.Errorf("test %s: %w", t.kind, err)
		}
		for k, v := range raw {
			switch k {
			case "config", "arguments":
				sub, ok := v.(map[string]any)
				if !ok && v != nil {
					return t, fmt.Errorf("test %s: %s is not a mapping", t.kind, k)
				}
				maps.Copy(t.args, sub)
			case "name":
				t.name, _ = v.(string)
			default:
				t.args[k] = v
			}
		}
		return t, nil
	}
	return t, fmt.Errorf("a test is a name or a mapping")
}

var dbtRef = regexp.MustCompile(`^\s*ref\(\s*(?:['"][^'"]+['"]\s*,\s*)?['"]([^'"]+)['"]\s*\)\s*$`)

var nonWord = regexp.MustCompile(`[^A-Za-z0-9_]+`)

// dbtConfigKeys are a test's configs; every other key is an argument.
var dbtConfigKeys = map[string]bool{"severity": true, "where": true, "enabled": true, "error_if": true, "warn_if": true,
	"limit": true, "fail_calc": true, "tags": true, "meta": true, "store_failures": true, "store_failures_as": true,
	"alias": true, "database": true, "schema": true, "description": true, "docs": true}

// dbtArgs are the arguments of each supported test besides column_name.
var dbtArgs = map[string][]string{"accepted_values": {"values", "quote"}, "relationships": {"to", "field"}}

// dbtTestName is the name dbt gives a generic test (its full name, as in
// the test's unique_id): test, model and the test's arguments in name
// order, each made of word characters.
func dbtTestName(kind, model string, args map[string]any) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(args)) {
		if dbtConfigKeys[k] || k == "model" {
			continue
		}
		switch v := args[k].(type) {
		case []any:
			parts = append(parts, each(v, pyStr)...)
		case map[string]any:
			// Python keeps a mapping's order; YAML's is not kept here.
			parts = append(parts, each(slices.Sorted(maps.Keys(v)), func(k2 string) string { return pyStr(v[k2]) })...)
		default:
			parts = append(parts, pyStr(v))
		}
	}
	words := each(parts, func(p string) string { return nonWord.ReplaceAllString(p, "_") })
	return strings.ReplaceAll(kind, ".", "_") + "_" + model + "_" + strings.Join(words, "__")
}

// pyStr is Python's str() of a YAML value.
func pyStr(v any) string {
	switch v {
	case true:
		return "True"
	case false:
		return "False"
	case nil:
		return "None"
	}
	return fmt.Sprint(v)
}

// dbtCheck is the check a test translates to; on error the check still
// carries the test's name.
func dbtCheck(model string, t dbtTest, table func(string) (string, bool)) (Check, error) {
	col, _ := t.args["column_name"].(string)
	c := Check{Name: cmp.Or(t.name, dbtTestName(t.kind, model, t.args))}
	tbl, ok := table(model)
	if !ok {
		return c, fmt.Errorf("model %s is not a table of the dataset (map it under checks_from models:)", model)
	}
	c.Table = tbl
	if m, ok := t.args["meta"].(map[string]any); ok && len(m) > 0 {
		c.Meta = m
	}
	if col == "" {
		return c, fmt.Errorf("no column (column_name)")
	}
	unknown := slices.DeleteFunc(slices.Sorted(maps.Keys(t.args)), func(k string) bool {
		return dbtConfigKeys[k] || k == "column_name" || slices.Contains(dbtArgs[t.kind], k)
	})
	if len(unknown) > 0 {
		return c, fmt.Errorf("setting %s not supported by lakewap", strings.Join(unknown, ", "))
	}
	if sev, ok := t.args["severity"]; ok {
		switch strings.ToLower(fmt.Sprint(sev)) {
		case "error":
		case "warn":
			c.Severity = SeverityWarn
		default:
			return c, fmt.Errorf("severity %v is not warn or error", sev)
		}
	}
	// Thresholds other than "any failing row" have no lakewap equivalent.
	for _, k := range []string{"error_if", "warn_if"} {
		if v, ok := t.args[k]; ok {
			if s := strings.ReplaceAll(fmt.Sprint(v), " ", ""); s != "!=0" && s != ">0" {
				return c, fmt.Errorf("%s %q is not supported (only !=0 / >0)", k, v)
			}
		}
	}
	if v, ok := t.args["limit"]; ok && v != nil {
		return c, fmt.Errorf("limit is not supported")
	}
	if v, ok := t.args["fail_calc"]; ok && strings.ReplaceAll(fmt.Sprint(v), " ", "") != "count(*)" {
		return c, fmt.Errorf("fail_calc %q is not supported", v)
	}
	where, isText := t.args["where"].(string)
	if w := t.args["where"]; w != nil && (!isText || strings.Contains(where, "{{") || strings.Contains(where, "{%")) {
		return c, fmt.Errorf("where %v is not plain SQL (Jinja is not rendered)", w)
	}
	switch t.kind {
	case "not_null":
		c.Kind, c.Columns, c.Where = KindNotNull, []string{col}, where
	case "unique":
		c.Kind, c.Column, c.Where = KindUnique, col, where
	case "accepted_values":
		c.Kind, c.Column, c.Where = KindAcceptedValues, col, where
		vals, ok := t.args["values"].([]any)
		if !ok || len(vals) == 0 {
			return c, fmt.Errorf("values is not a list")
		}
		quote, isBool := t.args["quote"].(bool)
		quote = quote || !isBool // dbt's default
		for _, v := range vals {
			switch v.(type) {
			case string:
				if !quote {
					return c, fmt.Errorf("quote: false with SQL expressions (%v) is not supported", v)
				}
			case int, int64, float64, bool:
			default:
				return c, fmt.Errorf("value %v is not a string, number or boolean", v)
			}
			c.Values = append(c.Values, fmt.Sprint(v))
		}
	case "relationships":
		to, _ := t.args["to"].(string)
		field, _ := t.args["field"].(string)
		m := dbtRef.FindStringSubmatch(to)
		if m == nil {
			return c, fmt.Errorf("to %q is not ref('model')", to)
		}
		if field == "" {
			return c, fmt.Errorf("field is missing")
		}
		parent, ok := table(m[1])
		if !ok {
			return c, fmt.Errorf("model %s (to) is not a table of the dataset (map it under checks_from models:)", m[1])
		}
		c.Kind = KindCrossTable
		child := quoteIdent(tbl)
		if where != "" {
			child = "(SELECT * FROM " + quoteIdent(tbl) + " WHERE (\n" + where + "\n))"
		}
		// As dbt's relationships: child rows with a value that no parent row has.
		c.SQL = fmt.Sprintf("SELECT child.* FROM %s AS child WHERE child.%s IS NOT NULL AND NOT EXISTS (SELECT 1 FROM %s AS parent WHERE parent.%s = child.%s)",
			child, quoteIdent(col), quoteIdent(parent), quoteIdent(field), quoteIdent(col))
	default:
		return c, fmt.Errorf("dbt test %s is not supported by lakewap (not_null, unique, accepted_values, relationships are)", t.kind)
	}
	return c, nil
}
