package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const geSuite = `{"name": "s", "expectations": [
  {"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "billing_id", "mostly": 0.9}, "meta": {"notes": "pk"}},
  {"type": "expect_column_kl_divergence_to_be_less_than", "kwargs": {"column": "amount", "threshold": 0.1}}
]}`

const dbtSchema = `version: 2
models:
  - name: fct_billing
    columns:
      - name: billing_id
        data_tests: [unique, not_null]
`

func writeFiles(t *testing.T, files map[string]string) string {
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func withChecksFrom(from string) string {
	return strings.Replace(good, "    checks:\n", "    checks_from:"+from+"\n    checks:\n", 1)
}

func TestChecksFromImportsGreatExpectationsAndDBT(t *testing.T) {
	dir := writeFiles(t, map[string]string{"suite.json": geSuite, "schema.yml": dbtSchema,
		"lakewap.yaml": withChecksFrom(`
      - {great_expectations: suite.json, skip_unsupported: true}
      - {dbt: schema.yml, models: {fct_billing: billing_fact}}`)})
	t.Setenv("KAFKA_PASSWORD", "pw")
	t.Setenv("LAKEFS_KEY", "AKIA")
	c, err := Load(filepath.Join(dir, "lakewap.yaml")) // files relative to the config, not the working directory
	if err != nil {
		t.Fatal(err)
	}
	d := c.Datasets["billing"]
	var names []string
	for _, ch := range d.Checks {
		names = append(names, ch.ID())
	}
	want := "id_not_null expect_column_values_to_not_be_null(billing_id) unique_fct_billing_billing_id not_null_fct_billing_billing_id"
	if strings.Join(names, " ") != want {
		t.Errorf("checks %v, want %s", names, want)
	}
	if ch := d.Checks[1]; ch.Table != "billing_fact" || ch.Mostly == nil || *ch.Mostly != 0.9 || ch.Meta["notes"] != "pk" {
		t.Errorf("GE check = %+v", ch)
	}
	if len(d.Skipped) != 1 || d.Skipped[0].Kind != "expect_column_kl_divergence_to_be_less_than" {
		t.Errorf("skipped = %+v", d.Skipped)
	}
}

func TestChecksFromMistakesNameTheField(t *testing.T) {
	t.Setenv("KAFKA_PASSWORD", "pw")
	t.Setenv("LAKEFS_KEY", "AKIA")
	tests := []struct{ name, from, want string }{
		{"unsupported expectation", " {great_expectations: suite.json}",
			`datasets.billing.checks_from[0].great_expectations: suite.json: expectations[1] expect_column_kl_divergence_to_be_less_than: not supported by lakewap (set skip_unsupported: true`},
		{"missing file", " {great_expectations: nope.json}", `datasets.billing.checks_from[0].great_expectations: nope.json: open`},
		{"unmapped model", " {dbt: schema.yml}", `datasets.billing.checks_from[0].dbt: schema.yml: models[0] fct_billing columns[0] billing_id tests[0] unique: model fct_billing is not a table`},
		{"unknown table", " {great_expectations: suite.json, table: nope, skip_unsupported: true}", `datasets.billing.checks_from[0].table: unknown table "nope"`},
		{"both", " {great_expectations: suite.json, dbt: schema.yml}", `datasets.billing.checks_from[0].great_expectations: name exactly one`},
		{"bad mostly", " {great_expectations: bad.json}", `datasets.billing.checks_from[0].great_expectations.checks[0].mostly: must be between 0 and 1 (from bad.json)`},
		{"name clash", " {dbt: clash.yml, models: {m: billing_fact}}", `imported check "id_not_null" has the name of another check`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{"suite.json": geSuite, "schema.yml": dbtSchema,
				"bad.json":     `{"expectations": [{"type": "expect_column_values_to_be_unique", "kwargs": {"column": "a", "mostly": 2}}]}`,
				"clash.yml":    "models:\n  - name: m\n    columns:\n      - name: billing_id\n        tests:\n          - not_null: {name: id_not_null}\n",
				"lakewap.yaml": withChecksFrom(tt.from)})
			_, err := Load(filepath.Join(dir, "lakewap.yaml"))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v\nwant one containing %s", err, tt.want)
			}
		})
	}
}
