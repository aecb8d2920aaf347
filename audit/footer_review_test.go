package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// TestRootNameDuckDBCannotListRefusesTheTable: a Parquet file whose root
// schema element's name is not UTF-8. The Go footer reader gives it up,
// parquet_schema fails on the root's name ("Invalid unicode ... detected
// in value construction"), and read_parquet never looks at the root's
// name, so it binds billing_id and BILLING_ID as one column (pyarrow: two,
// the second file's billing_id NULL). The table is refused, naming the
// file; before, the error listing the columns left the whole table without
// the collision check and not_null passed, whether the bad root was the
// colliding file's or any other file's.
func TestRootNameDuckDBCannotListRefusesTheTable(t *testing.T) {
	for _, name := range []string{"colliding", "other"} {
		t.Run(name, func(t *testing.T) {
			src := newDirSource(t)
			src.write(t, "main", "gold/billing/a.parquet", "SELECT 1::BIGINT AS billing_id")
			src.branch(t, "main", "b1")
			src.write(t, "b1", "gold/billing/b.parquet", `SELECT 2::BIGINT AS "BILLING_ID"`)
			bad := "b.parquet"
			if name == "other" {
				src.write(t, "b1", "gold/billing/c.parquet", "SELECT 3::BIGINT AS billing_id")
				bad = "c.parquet"
			}
			f := filepath.Join(src.root, "b1", "gold", "billing", bad)
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			// Same length: the footer length and every other byte stay.
			b = bytes.Replace(b, []byte("duckdb_schema"), []byte("\xffuckdb_schema"), 1)
			if err := os.WriteFile(f, b, 0o644); err != nil {
				t.Fatal(err)
			}
			rep := audit(t, newEngine(t, src, ""), "b1",
				Check{Kind: KindNotNull, Table: "billing", Column: "billing_id"},
				Check{Name: "batch", Kind: KindNotNull, Table: "billing", Column: "billing_id", Scope: ScopeBatch})
			for _, c := range rep.Checks {
				if c.Status != schemas.StatusError {
					t.Errorf("%s: %s %q %q, want the table refused", c.Name, c.Status, c.Observed, c.Message)
				}
			}
		})
	}
}
