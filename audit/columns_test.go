package audit

import (
	"context"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// billing_id in one file and BILLING_ID in another are one column to
// DuckDB and two to pyarrow, pandas and Polars (which read NULL for the
// second file): not_null passed. Such a table is refused.
func TestColumnsDifferingOnlyInCaseAreRefused(t *testing.T) {
	src := newDirSource(t)
	src.write(t, "main", "gold/billing/a.parquet", "SELECT 1::BIGINT AS billing_id")
	src.branch(t, "main", "b1")
	src.write(t, "b1", "gold/billing/b.parquet", `SELECT 2::BIGINT AS "BILLING_ID"`)
	rep := audit(t, newEngine(t, src, ""), "b1",
		Check{Kind: KindNotNull, Table: "billing", Column: "billing_id"},
		Check{Name: "batch", Kind: KindNotNull, Table: "billing", Column: "billing_id", Scope: ScopeBatch},
		Check{Kind: KindSchema, Table: "billing", Schema: []ColumnType{{Name: "billing_id", Type: "BIGINT"}}})
	for _, c := range rep.Checks {
		if c.Status != schemas.StatusError || !strings.Contains(c.Message, `has a column "BILLING_ID", which the table spells "billing_id"`) {
			t.Errorf("%s: %s %q %q, want an error naming the collision", c.Name, c.Status, c.Observed, c.Message)
		}
	}
}

// schema and columns compare names exactly: a table whose column is ID
// does not have the column id.
func TestSchemaAndColumnsCompareNamesExactly(t *testing.T) {
	src := newDirSource(t)
	src.write(t, "main", "gold/billing/a.parquet", `SELECT 1::BIGINT AS "ID", 'x' AS name`)
	rep := audit(t, newEngine(t, src, ""), "main",
		Check{Kind: KindSchema, Table: "billing", Schema: []ColumnType{{Name: "id", Type: "BIGINT"}, {Name: "name", Type: "VARCHAR"}}},
		Check{Kind: KindColumns, Table: "billing", Columns: []string{"id", "name"}},
		Check{Name: "exact", Kind: KindColumns, Table: "billing", Columns: []string{"ID", "name"}, Ordered: true})
	want := []struct{ status, observed string }{
		{schemas.StatusFail, "missing id; unexpected ID BIGINT"},
		{schemas.StatusFail, "missing id; unexpected ID"},
		{schemas.StatusPass, "2 columns as expected (2 in table)"},
	}
	for i, c := range rep.Checks {
		if c.Status != want[i].status || c.Observed != want[i].observed {
			t.Errorf("%s: %s %q %q, want %s %q", c.Name, c.Status, c.Observed, c.Message, want[i].status, want[i].observed)
		}
	}
}

// The same holds for CSV headers and JSON keys: DuckDB's union by name
// makes billing_id and BILLING_ID one column; pandas (read_csv,
// read_json) and pyarrow keep two, the second file's billing_id NULL.
func TestTextColumnsDifferingOnlyInCaseAreRefused(t *testing.T) {
	for _, format := range []string{FormatCSV, FormatJSONL} {
		t.Run(format, func(t *testing.T) {
			src := newDirSource(t)
			ext := map[string]string{FormatCSV: ".csv", FormatJSONL: ".jsonl"}[format]
			src.write(t, "main", "raw/billing/a"+ext, "SELECT 1::BIGINT AS billing_id")
			src.branch(t, "main", "b1")
			src.write(t, "b1", "raw/billing/b"+ext, `SELECT 2::BIGINT AS "BILLING_ID"`)
			rep, err := newEngine(t, src, "").Run(context.Background(), Request{Dataset: "billing", Repository: "repo", Ref: "b1", BaseRef: "main",
				BatchTime: batchTime, Suite: Suite{Tables: []Table{{Name: "billing", Path: "raw/billing/", Format: format}},
					Checks: []Check{{Kind: KindNotNull, Table: "billing", Column: "billing_id"}}}})
			if err != nil {
				t.Fatal(err)
			}
			c := rep.Checks[0]
			if c.Status != schemas.StatusError || !strings.Contains(c.Message, `has a column "BILLING_ID", which the table spells "billing_id"`) {
				t.Errorf("not_null: %s %q %q, want an error naming the collision", c.Status, c.Observed, c.Message)
			}
		})
	}
}
