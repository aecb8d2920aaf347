package audit

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestFromGreatExpectationsTranslatesEachExpectation(t *testing.T) {
	b, err := os.ReadFile("testdata/ge_suite.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := FromGreatExpectations(b, "billing")
	if err != nil {
		t.Fatal(err)
	}
	want := []Check{
		{Name: "expect_column_values_to_not_be_null(id)", Kind: KindNotNull, Table: "billing", Columns: []string{"id"},
			Meta: map[string]any{"owner": "billing-team"}},
		{Name: "expect_column_values_to_not_be_null(status)", Kind: KindNotNull, Table: "billing", Columns: []string{"status"}, Mostly: f64(0.95)},
		{Name: "expect_column_values_to_be_unique(id)", Kind: KindUnique, Table: "billing", Column: "id"},
		{Name: "expect_column_values_to_be_in_set(status)", Kind: KindAcceptedValues, Table: "billing", Column: "status",
			Values: []string{"open", "paid"}, ValueTypes: []string{"string", "string"}, Severity: SeverityWarn},
		{Name: "expect_column_values_to_be_in_set(customer_id)", Kind: KindAcceptedValues, Table: "billing", Column: "customer_id",
			Values: []string{"1", "2", "3.5", "true"}, ValueTypes: []string{"number", "number", "number", "boolean"}},
		{Name: "expect_column_values_to_be_between(amount)", Kind: KindRange, Table: "billing", Column: "amount",
			Min: f64(0), Max: f64(100), StrictMax: true, Mostly: f64(0.99)},
		{Name: "expect_table_row_count_to_be_between()", Kind: KindRowCount, Table: "billing", Min: f64(1)},
		{Name: "expect_column_to_exist(updated_at)", Kind: KindColumns, Table: "billing", Columns: []string{"updated_at"}, AllowExtra: true},
		{Name: "expect_table_columns_to_match_set(id,status)", Kind: KindColumns, Table: "billing", Columns: []string{"id", "status"}, AllowExtra: true},
		{Name: "expect_table_columns_to_match_set(id,status,amount)", Kind: KindColumns, Table: "billing", Columns: []string{"id", "status", "amount"}},
		{Name: "expect_table_columns_to_match_ordered_list(id,customer_id,status,amount,updated_at)", Kind: KindColumns, Table: "billing",
			Columns: []string{"id", "customer_id", "status", "amount", "updated_at"}, Ordered: true},
		{Name: "expect_column_max_to_be_between(amount)", Kind: KindStat, Stat: StatMax, Table: "billing", Column: "amount", Max: f64(1000)},
		{Name: "expect_column_min_to_be_between(amount)", Kind: KindStat, Stat: StatMin, Table: "billing", Column: "amount", Min: f64(0)},
		{Name: "expect_column_values_to_match_regex(status)", Kind: KindRegex, Table: "billing", Column: "status", Pattern: "^(open|paid)$", Mostly: f64(1)},
		{Name: "expect_compound_columns_to_be_unique(customer_id,id)", Kind: KindUnique, Table: "billing", Columns: []string{"customer_id", "id"},
			Where: `NOT ("customer_id" IS NULL AND "id" IS NULL)`},
	}
	if len(got.Checks) != len(want) {
		t.Fatalf("%d checks, want %d: %+v", len(got.Checks), len(want), got.Checks)
	}
	for i := range want {
		if !reflect.DeepEqual(got.Checks[i], want[i]) {
			t.Errorf("check %d:\n got %+v\nwant %+v", i, got.Checks[i], want[i])
		}
	}
	if errs := (Suite{Tables: []Table{{Name: "billing", Path: "b/"}}, Checks: got.Checks}).Validate("s"); len(errs) > 0 {
		t.Errorf("translated checks do not validate: %v", errs)
	}
	wantSkipped := []struct{ name, reason string }{
		{"expect_column_kl_divergence_to_be_less_than(amount)", "expectations[15] expect_column_kl_divergence_to_be_less_than: not supported by lakewap"},
		{"expect_column_values_to_not_be_null(id)#2", "kwarg condition_parser, row_condition not supported"},
		{"expect_column_values_to_match_regex(status)#2", "is not RE2 syntax"},
		{"expect_column_max_to_be_between(updated_at)", `kwarg min_value: "2025-01-01" is not a number`},
	}
	if len(got.Unsupported) != len(wantSkipped) {
		t.Fatalf("unsupported = %+v", got.Unsupported)
	}
	for i, w := range wantSkipped {
		u := got.Unsupported[i]
		if u.Name != w.name || !strings.Contains(u.Reason, w.reason) || u.Table != "billing" {
			t.Errorf("unsupported[%d] = %+v, want name %s and reason containing %q", i, u, w.name, w.reason)
		}
	}
}

func TestFromGreatExpectationsRejectsOtherFiles(t *testing.T) {
	for _, in := range []string{`not json`, `{"name": "x"}`, `{"expectations": [{"kwargs": {}}]}`} {
		if _, err := FromGreatExpectations([]byte(in), "t"); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
	// GE 0.x names its fields differently.
	got, err := FromGreatExpectations([]byte(`{"expectation_suite_name": "s", "expectations": [
		{"expectation_type": "expect_column_values_to_be_unique", "kwargs": {"column": "id"}}]}`), "t")
	if err != nil || len(got.Checks) != 1 || got.Checks[0].Kind != KindUnique {
		t.Errorf("0.x suite: %+v, %v", got, err)
	}
}
