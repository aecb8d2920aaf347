package audit

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestValidate(t *testing.T) {
	base := func() Suite {
		return Suite{Tables: []Table{{Name: "billing", Path: "gold/billing/"}, {Name: "customers", Path: "gold/c/", Format: "csv"}}}
	}
	tests := []struct {
		name   string
		tables []Table // replaces base tables when set
		checks []Check
		want   []string
	}{
		{name: "valid", checks: standard()},
		{name: "unknown kind", checks: []Check{{Kind: "nul", Table: "billing"}},
			want: []string{`datasets.billing.checks[0].kind: unknown check kind "nul"`}},
		{name: "missing kind", checks: []Check{{Table: "billing"}},
			want: []string{`datasets.billing.checks[0].kind: missing`}},
		{name: "unknown table", checks: []Check{{Kind: KindNotNull, Table: "bills", Column: "id"}},
			want: []string{`datasets.billing.checks[0].table: unknown table "bills"`}},
		{name: "missing table", checks: []Check{{Kind: KindNotNull, Column: "id"}},
			want: []string{`datasets.billing.checks[0].table: missing`}},
		{name: "duplicate check names", checks: []Check{
			{Kind: KindNotNull, Table: "billing", Column: "id"},
			{Name: "x", Kind: KindRowCount, Table: "billing", Min: f64(1)},
			{Kind: KindNotNull, Table: "billing", Column: "id", Severity: SeverityWarn},
			{Name: "x", Kind: KindRowCount, Table: "billing", Max: f64(1)}},
			want: []string{`datasets.billing.checks[2].name: duplicate check name "not_null(billing.id)"`,
				`datasets.billing.checks[3].name: duplicate check name "x"`}},
		{name: "duplicate and bad tables", tables: []Table{{Name: "a", Path: "a/"}, {Name: "A", Path: "/b/", Format: "orc"}, {Name: "my-table"}},
			want: []string{`datasets.billing.tables[1].name: duplicate table "A"`,
				`datasets.billing.tables[1].path: "/b/" must be relative to the repository root`,
				`datasets.billing.tables[1].format: unknown format "orc" (want parquet, csv, jsonl or delta)`,
				`datasets.billing.tables[2].name: "my-table" is not a plain identifier (letters, digits, _)`,
				`datasets.billing.tables[2].path: missing`}},
		{name: "min greater than max", checks: []Check{{Kind: KindRange, Table: "billing", Column: "amount", Min: f64(5), Max: f64(1)}},
			want: []string{`datasets.billing.checks[0].min: min 5 is greater than max 1`}},
		{name: "negative row count", checks: []Check{{Kind: KindRowCount, Table: "billing", Min: f64(-1)}},
			want: []string{`datasets.billing.checks[0].min: must not be negative`}},
		{name: "no bounds", checks: []Check{{Kind: KindRange, Table: "billing", Column: "amount"}},
			want: []string{`datasets.billing.checks[0].min: min or max is required`}},
		{name: "bad volume thresholds", checks: []Check{{Kind: KindVolumeChange, Table: "billing", MaxDropPct: f64(120), MaxGrowthPct: f64(-1)}},
			want: []string{`datasets.billing.checks[0].max_drop_pct: must be between 0 and 100`,
				`datasets.billing.checks[0].max_growth_pct: must be a finite number >= 0`}},
		{name: "volume without threshold in batch scope", checks: []Check{{Kind: KindVolumeChange, Table: "billing", Scope: ScopeBatch}},
			want: []string{`datasets.billing.checks[0].scope: volume_change compares whole tables: scope must be table`,
				`datasets.billing.checks[0].max_drop_pct: max_drop_pct or max_growth_pct is required`}},
		{name: "sql missing", checks: []Check{{Kind: KindSQL, Table: "billing", SQL: "  "}, {Kind: KindCrossTable}},
			want: []string{`datasets.billing.checks[0].sql: missing`, `datasets.billing.checks[1].sql: missing`}},
		{name: "column missing or doubled", checks: []Check{
			{Kind: KindNotNull, Table: "billing"},
			{Kind: KindRange, Table: "billing", Column: "a", Columns: []string{"b"}, Max: f64(1)},
			{Kind: KindUnique, Table: "billing", Columns: []string{"a", ""}}},
			want: []string{`datasets.billing.checks[0].column: missing`,
				`datasets.billing.checks[1].columns: range takes one column: use column`,
				`datasets.billing.checks[2].columns[1]: empty column name`}},
		{name: "accepted values missing", checks: []Check{{Kind: KindAcceptedValues, Table: "billing", Column: "s"}},
			want: []string{`datasets.billing.checks[0].values: missing`}},
		{name: "misplaced fields", checks: []Check{{Kind: KindNotNull, Table: "billing", Column: "id", Min: f64(1), SQL: "x", MaxAge: "1h"}},
			want: []string{`datasets.billing.checks[0].min: not used by not_null checks`,
				`datasets.billing.checks[0].max_age: not used by not_null checks`,
				`datasets.billing.checks[0].sql: not used by not_null checks`}},
		{name: "freshness durations", checks: []Check{
			{Name: "a", Kind: KindFreshness, Table: "billing", Column: "ts"},
			{Name: "b", Kind: KindFreshness, Table: "billing", Column: "ts", MaxAge: "3 days"},
			{Name: "c", Kind: KindFreshness, Table: "billing", Column: "ts", MaxAge: "-1h"},
			{Name: "d", Kind: KindFreshness, Table: "billing", Column: "ts", MaxAge: "2d"}},
			want: []string{`datasets.billing.checks[0].max_age: missing`,
				`datasets.billing.checks[1].max_age: bad duration "3 days" (want e.g. 36h or 2d)`,
				`datasets.billing.checks[2].max_age: must be positive`}},
		{name: "schema contract", checks: []Check{{Kind: KindSchema, Table: "billing", Schema: []ColumnType{
			{Name: "id", Type: "BIGINT"}, {Name: "ID", Type: "DECIMAL(18, 2)"}, {Name: "x", Type: "INT); DROP"}, {Name: "", Type: ""}}}},
			want: []string{`datasets.billing.checks[0].schema[1].name: duplicate column "ID"`,
				`datasets.billing.checks[0].schema[2].type: "INT); DROP" is not a type name`,
				`datasets.billing.checks[0].schema[3].name: missing`,
				`datasets.billing.checks[0].schema[3].type: missing`}},
		{name: "severity and scope", checks: []Check{{Kind: KindRowCount, Table: "billing", Min: f64(1), Severity: "fatal", Scope: "file"}},
			want: []string{`datasets.billing.checks[0].severity: unknown severity "fatal" (want error or warn)`,
				`datasets.billing.checks[0].scope: unknown scope "file" (want table or batch)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base()
			if tt.tables != nil {
				s.Tables = tt.tables
			}
			s.Checks = tt.checks
			var got []string
			for _, err := range s.Validate("datasets.billing") {
				got = append(got, err.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// The suite is read from lakewap's config with KnownFields: a misspelt key
// must be rejected, and the documented keys must land in their fields.
func TestSuiteYAML(t *testing.T) {
	doc := `
tables:
  - {name: billing, path: gold/billing/}
checks:
  - kind: range
    table: billing
    column: amount
    min: 0
    max: 1e6
    severity: warn
  - kind: volume_change
    table: billing
    max_drop_pct: 50
  - kind: schema
    table: billing
    allow_extra: true
    schema:
      - {name: id, type: BIGINT}
  - kind: sql
    table: billing
    scope: batch
    sql: SELECT 1
`
	var s Suite
	dec := yaml.NewDecoder(strings.NewReader(doc))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		t.Fatal(err)
	}
	if errs := s.Validate("x"); len(errs) > 0 {
		t.Fatal(errs)
	}
	c := s.Checks
	if *c[0].Max != 1e6 || c[0].Severity != SeverityWarn || *c[1].MaxDropPct != 50 || !c[2].AllowExtra ||
		c[2].Schema[0].Type != "BIGINT" || c[3].Scope != ScopeBatch {
		t.Errorf("decoded %+v", s)
	}
	dec = yaml.NewDecoder(strings.NewReader("checks:\n  - kind: not_null\n    colums: [id]\n"))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err == nil || !strings.Contains(err.Error(), "colums") {
		t.Errorf("misspelt key: err = %v", err)
	}
}
