package audit

import (
	"context"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// TestCustomSQLOverARefusedTableSaysWhy: a table the audit refuses (here
// two files spelling a column id and ID, one column to DuckDB and two to
// pyarrow) has no view. A sql or cross_table check naming it errors with
// the refusal, as the table's other checks do, not with DuckDB's "Table
// with name t does not exist", which names no cause; a sql check over
// another table still runs.
func TestCustomSQLOverARefusedTableSaysWhy(t *testing.T) {
	src := newBatchSource(t)
	src.write(t, "b1", "t/a.parquet", "SELECT 1 AS id")
	src.write(t, "b1", "t/b.parquet", "SELECT 2 AS \"ID\"")
	src.write(t, "b1", "k/a.parquet", "SELECT 1 AS k")
	e := newEngine(t, src, "")
	rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
		Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}, {Name: "k", Path: "k/"}}, Checks: []Check{
			{Name: "sql_t", Kind: KindSQL, Table: "t", SQL: "SELECT * FROM t WHERE id > 5"},
			{Name: "cross", Kind: KindCrossTable, SQL: "SELECT * FROM k JOIN t ON k.k = t.id"},
			{Name: "sql_k", Kind: KindSQL, Table: "k", SQL: "SELECT * FROM k WHERE k > 5"},
		}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Checks {
		switch c.Name {
		case "sql_t", "cross":
			if c.Status != schemas.StatusError || !strings.Contains(c.Message, "readers disagree") {
				t.Errorf("%s: %s %q, want the refusal of table t", c.Name, c.Status, c.Message)
			}
		case "sql_k":
			if c.Status != schemas.StatusPass {
				t.Errorf("%s: %s %q, want pass: table k is readable", c.Name, c.Status, c.Message)
			}
		}
	}
}
