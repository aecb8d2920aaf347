package audit

import (
	"context"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// zeroClaimSource lists the objects whose path contains "claims-zero" with
// size 0, as a writer can stage them.
type zeroClaimSource struct{ *dirSource }

func (s zeroClaimSource) List(ctx context.Context, repo, ref, prefix string) ([]Object, error) {
	return zeroClaims(s.dirSource.List(ctx, repo, ref, prefix))
}

func (s zeroClaimSource) Changed(ctx context.Context, repo, base, ref, prefix string) ([]Object, error) {
	return zeroClaims(s.dirSource.Changed(ctx, repo, base, ref, prefix))
}

func zeroClaims(objs []Object, err error) ([]Object, error) {
	for i := range objs {
		if strings.Contains(objs[i].Path, "claims-zero") {
			objs[i].Size = 0
		}
	}
	return objs, err
}

// Objects under a table path that the audit skipped were still merged:
// names starting with _ or ., objects claiming size 0, Delta data files the
// log does not name. DuckDB's globs and Polars read them on main. Each now
// fails unaudited_objects, which names it.
func TestUnauditedObjectsFailTheAudit(t *testing.T) {
	src := fixture(t)
	nulls := "SELECT NULL::BIGINT AS id, 1 AS customer_id, 'open' AS status, 1.0::DOUBLE AS amount, TIMESTAMP '2025-06-01 12:00:00' AS updated_at"
	src.write(t, "b1", "gold/billing/_hidden.parquet", nulls)
	src.write(t, "b1", "gold/billing/.dot.parquet", nulls)
	src.write(t, "b1", "gold/billing/_temporary/0/part-9.parquet", nulls)
	src.write(t, "b1", "gold/billing/claims-zero.parquet", nulls)
	src.write(t, "b1", "gold/billing/_SUCCESS", "SELECT 1 AS marker")
	// Named like Spark's job marker, but a data file: globs read it.
	src.write(t, "b1", "gold/billing/date=1/_committed_evil.parquet", nulls)
	e := newEngine(t, zeroClaimSource{src}, "")
	rep, err := e.Run(context.Background(), Request{Dataset: "billing", Repository: "repo", Ref: "b1", BaseRef: "main",
		BatchTime: batchTime, Suite: Suite{Tables: tables, Checks: []Check{{Kind: KindNotNull, Table: "billing", Column: "id"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Passed {
		t.Fatalf("passed with unaudited objects: %+v", rep.Checks)
	}
	c := rep.Checks[len(rep.Checks)-1]
	want := "5 changed objects not read by the audit: gold/billing/.dot.parquet, gold/billing/_hidden.parquet, " +
		"gold/billing/_temporary/0/part-9.parquet, gold/billing/claims-zero.parquet, gold/billing/date=1/_committed_evil.parquet"
	if c.Kind != KindUnaudited || c.Status != schemas.StatusFail || c.Observed != want {
		t.Errorf("last check %s %s %q, want fail %q", c.Kind, c.Status, c.Observed, want)
	}
	if rep.Checks[0].Status != schemas.StatusPass {
		t.Errorf("not_null: %+v", rep.Checks[0])
	}

	// Markers the table lists are allowed; the default list no longer applies.
	suite := Suite{Tables: []Table{{Name: "billing", Path: "gold/billing/", Markers: []string{"_hidden.parquet", ".dot.parquet", "_temporary/*/*", "claims-zero.parquet"}}},
		Checks: []Check{{Kind: KindNotNull, Table: "billing", Column: "id"}}}
	rep, err = e.Run(context.Background(), Request{Dataset: "billing", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime, Suite: suite})
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Checks[len(rep.Checks)-1]; c.Kind != KindUnaudited || c.Observed != "2 changed objects not read by the audit: gold/billing/_SUCCESS, gold/billing/date=1/_committed_evil.parquet" {
		t.Errorf("with markers: %s %s %q", c.Kind, c.Status, c.Observed)
	}
}

// A Delta data file the log does not name is merged with the batch; a
// file the log names as removed is not unaudited (the batch's version 2
// adds it, version 3 removes it: the row checks read it, deltainterim.go;
// it holds clean rows here, it held NULL ids that passed before).
func TestUnauditedDeltaFilesFailTheAudit(t *testing.T) {
	src := deltaFixture(t)
	src.write(t, "b1", "gold/events/part-c.parquet", deltaRows(200, 7, false))
	src.write(t, "b1", "gold/events/part-d.parquet", deltaRows(300, 5, false))
	src.write(t, "b1", "gold/events/stowaway.parquet", deltaRows(400, 3, true))
	writeDeltaCommit(t, src, "b1", "gold/events", 2, deltaAdd("part-c.parquet"), deltaAdd("part-d.parquet"))
	writeDeltaCommit(t, src, "b1", "gold/events", 3, deltaRemove("part-d.parquet"))
	rep := deltaAudit(t, src, "b1", FormatDelta, idsNotNull)
	c := rep.Checks[len(rep.Checks)-1]
	if rep.Passed || c.Kind != KindUnaudited || c.Observed != "1 changed objects not read by the audit: gold/events/stowaway.parquet" {
		t.Errorf("passed %v, last check %s %s %q", rep.Passed, c.Kind, c.Status, c.Observed)
	}
	src.remove(t, "b1", "gold/events/stowaway.parquet")
	if rep := deltaAudit(t, src, "b1", FormatDelta, idsNotNull); !rep.Passed || len(rep.Checks) != 1 {
		t.Errorf("without the stowaway: %+v", rep.Checks)
	}
}

// A table that no check reads was not audited at all, and objects a batch
// changed under its path were merged unread. Each is now an unaudited
// object; the config refuses such a table (internal/config), and the
// engine holds to the rule for every other caller.
func TestObjectsOfATableNoCheckReadsAreUnaudited(t *testing.T) {
	src := fixture(t)
	src.write(t, "b1", "gold/customers/c2.parquet", "SELECT NULL::INTEGER AS customer_id, 'x' AS name")
	e := newEngine(t, src, "")
	checks := []Check{{Kind: KindNotNull, Table: "billing", Column: "id"}}
	rep, err := e.Run(context.Background(), Request{Dataset: "billing", Repository: "repo", Ref: "b1", BaseRef: "main",
		BatchTime: batchTime, Suite: Suite{Tables: tables, Checks: checks}})
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Checks[len(rep.Checks)-1]
	if rep.Passed || c.Kind != KindUnaudited || c.Table != "customers" || c.Status != schemas.StatusFail ||
		c.Observed != "1 changed objects not read by the audit: gold/customers/c2.parquet" || !strings.Contains(c.Message, "no check of the suite reads table customers") {
		t.Errorf("passed %v, last check %+v; want unaudited_objects(customers) naming c2.parquet", rep.Passed, c)
	}
	// Custom SQL may name any table: it reads them all.
	checks = append(checks, Check{Name: "no_orphans", Kind: KindCrossTable, SQL: "SELECT * FROM customers WHERE customer_id IS NULL AND false"})
	rep, err = e.Run(context.Background(), Request{Dataset: "billing", Repository: "repo", Ref: "b1", BaseRef: "main",
		BatchTime: batchTime, Suite: Suite{Tables: tables, Checks: checks}})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Passed || len(rep.Checks) != 2 {
		t.Errorf("with a custom query over the tables: %+v", rep.Checks)
	}
}
