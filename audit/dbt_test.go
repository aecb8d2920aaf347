package audit

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestFromDBTTranslatesGenericTests(t *testing.T) {
	b, err := os.ReadFile("testdata/dbt_schema.yml")
	if err != nil {
		t.Fatal(err)
	}
	tables := map[string]string{"billing": "billing", "customers": "customers"}
	got, err := FromDBT(b, func(m string) (string, bool) { t, ok := tables[m]; return t, ok })
	if err != nil {
		t.Fatal(err)
	}
	want := []Check{
		{Name: "not_null_billing_id", Kind: KindNotNull, Table: "billing", Columns: []string{"id"}},
		{Name: "unique_billing_id", Kind: KindUnique, Table: "billing", Column: "id", Severity: SeverityWarn, Where: "amount > 0"},
		{Name: "accepted_values_billing_status__open__paid", Kind: KindAcceptedValues, Table: "billing", Column: "status",
			Values: []string{"open", "paid"}, Where: "id > 10"},
		{Name: "status_has_three_values", Kind: KindAcceptedValues, Table: "billing", Column: "status", Values: []string{"open", "paid", "void"}},
		{Name: "relationships_billing_customer_id__customer_id__ref_customers_", Kind: KindCrossTable, Table: "billing",
			SQL: `SELECT child.* FROM "billing" AS child WHERE child."customer_id" IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "customers" AS parent WHERE parent."customer_id" = child."customer_id")`},
		{Name: "not_null_customers_customer_id", Kind: KindNotNull, Table: "customers", Columns: []string{"customer_id"},
			Where: "name <> 'x'", Meta: map[string]any{"owner": "crm"}},
	}
	if len(got.Checks) != len(want) {
		t.Fatalf("%d checks, want %d: %+v", len(got.Checks), len(want), got.Checks)
	}
	for i := range want {
		if !reflect.DeepEqual(got.Checks[i], want[i]) {
			t.Errorf("check %d:\n got %+v\nwant %+v", i, got.Checks[i], want[i])
		}
	}
	wantSkipped := []struct{ name, reason string }{
		{"dbt_utils_not_constant_billing_customer_id", "dbt test dbt_utils.not_constant is not supported"},
		{"unique_billing_customer_id", `error_if ">10" is not supported`},
		{"not_null_orders_id", "model orders is not a table of the dataset"},
	}
	if len(got.Unsupported) != len(wantSkipped) {
		t.Fatalf("unsupported = %+v", got.Unsupported)
	}
	for i, w := range wantSkipped {
		if u := got.Unsupported[i]; u.Name != w.name || !strings.Contains(u.Reason, w.reason) {
			t.Errorf("unsupported[%d] = %+v, want %s: %q", i, u, w.name, w.reason)
		}
	}
}

func TestFromDBTRejectsOtherFiles(t *testing.T) {
	any := func(string) (string, bool) { return "t", true }
	for _, in := range []string{"models: {a: b}", "models:\n  - name: m\n    columns:\n      - name: c\n        tests:\n          - {not_null: {}, unique: {}}\n"} {
		if _, err := FromDBT([]byte(in), any); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}
