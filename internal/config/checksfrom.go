package config

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/lakewap/lakewap/audit"
)

// ChecksFrom names a file of another tool whose checks a dataset runs:
// a Great Expectations expectation suite or a dbt schema.yml.
type ChecksFrom struct {
	// GreatExpectations is a GE 1.x expectation suite (JSON).
	GreatExpectations string `yaml:"great_expectations"`
	// Table is the table a GE suite checks; default: the dataset's only table.
	Table string `yaml:"table"`
	// DBT is a dbt properties file (schema.yml) with generic data tests.
	DBT string `yaml:"dbt"`
	// Models maps dbt model names to the dataset's tables; a model not
	// named here is the table of the same name.
	Models map[string]string `yaml:"models"`
	// SkipUnsupported reports the expectations and tests lakewap cannot
	// run as skipped; without it each one is a config error.
	SkipUnsupported bool `yaml:"skip_unsupported"`
}

// ChecksFromList is one checks_from entry (a mapping) or several (a list).
type ChecksFromList []ChecksFrom

// UnmarshalYAML accepts a mapping or a sequence of mappings.
func (l *ChecksFromList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode {
		*l = make(ChecksFromList, 1)
		return n.Decode(&(*l)[0])
	}
	return n.Decode((*[]ChecksFrom)(l))
}

// ImportChecks reads every dataset's checks_from files (relative to dir
// unless absolute), translates them and adds the checks to the dataset's
// suite. Each problem is an error naming the dataset's checks_from entry:
// an unreadable file, an unsupported expectation or test (unless
// skip_unsupported), a translated check that is not valid.
func (c *Config) ImportChecks(dir string) error {
	var errs Errors
	for _, n := range slices.Sorted(maps.Keys(c.Datasets)) {
		d := c.Datasets[n]
		for i, from := range d.ChecksFrom {
			f := fmt.Sprintf("datasets.%s.checks_from[%d]", n, i)
			imported, errsOf := importOne(d.Suite, from, dir, f)
			errs = append(errs, errsOf...)
			if len(errsOf) > 0 {
				continue
			}
			d.Suite.Checks = append(d.Suite.Checks, imported.Checks...)
			d.Suite.Skipped = append(d.Suite.Skipped, imported.Unsupported...)
		}
		// Names must stay unique across the dataset's own and imported checks.
		seen := map[string]bool{}
		for _, ch := range d.Suite.Checks {
			if id := ch.ID(); seen[id] {
				errs = append(errs, fmt.Errorf("datasets.%s.checks_from: imported check %q has the name of another check", n, id))
			} else {
				seen[id] = true
			}
		}
		c.Datasets[n] = d
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

func importOne(suite audit.Suite, from ChecksFrom, dir, f string) (audit.Imported, Errors) {
	var errs Errors
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", f, field, fmt.Sprintf(format, args...)))
	}
	tableOf := func(name string) (string, bool) {
		for _, t := range suite.Tables {
			if strings.EqualFold(t.Name, name) {
				return t.Name, true
			}
		}
		return "", false
	}
	field, file := "great_expectations", from.GreatExpectations
	var translate func([]byte) (audit.Imported, error)
	switch {
	case (from.GreatExpectations == "") == (from.DBT == ""):
		bad(field, "name exactly one of great_expectations or dbt")
	case file != "":
		if len(from.Models) > 0 {
			bad("models", "only for dbt")
		}
		table := from.Table
		switch {
		case table == "" && len(suite.Tables) == 1:
			table = suite.Tables[0].Name
		case table == "":
			bad("table", "required: the dataset has %d tables", len(suite.Tables))
		default:
			if t, ok := tableOf(table); ok {
				table = t
			} else {
				bad("table", "unknown table %q", from.Table)
			}
		}
		translate = func(b []byte) (audit.Imported, error) { return audit.FromGreatExpectations(b, table) }
	default:
		field, file = "dbt", from.DBT
		if from.Table != "" {
			bad("table", "only for great_expectations (dbt tests name their models)")
		}
		models := map[string]string{}
		for m, t := range from.Models {
			if tt, ok := tableOf(t); ok {
				models[strings.ToLower(m)] = tt
			} else {
				bad("models."+m, "unknown table %q", t)
			}
		}
		translate = func(b []byte) (audit.Imported, error) {
			return audit.FromDBT(b, func(model string) (string, bool) {
				if t, ok := models[strings.ToLower(model)]; ok {
					return t, true
				}
				return tableOf(model)
			})
		}
	}
	var imported audit.Imported
	if len(errs) > 0 {
		return imported, errs
	}
	path := file
	if !filepath.IsAbs(file) {
		path = filepath.Join(dir, file)
	}
	b, err := os.ReadFile(path)
	if err == nil {
		imported, err = translate(b)
	}
	if err != nil {
		bad(field, "%s: %v", file, err)
		return imported, errs
	}
	if !from.SkipUnsupported {
		for _, u := range imported.Unsupported {
			bad(field, "%s: %s (set skip_unsupported: true to report it as skipped)", file, u.Reason)
		}
	}
	check := audit.Suite{Tables: suite.Tables, Checks: imported.Checks}
	for _, e := range check.Validate(f + "." + field) {
		errs = append(errs, fmt.Errorf("%s (from %s)", e, file))
	}
	return imported, errs
}
