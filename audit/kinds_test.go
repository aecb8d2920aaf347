package audit

import (
	"context"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// The kinds Great Expectations and dbt suites translate to, run over the
// fixture (billing: ids 1..1000, amount 0..99, status open|paid).
func TestRunImportedKinds(t *testing.T) {
	src := fixture(t)
	// 10 more rows: 3 NULL statuses, 2 'void', one amount of 150.
	src.write(t, "b1", "gold/billing/part-2.parquet", `SELECT * REPLACE (
		CASE WHEN id <= 1003 THEN NULL WHEN id <= 1005 THEN 'void' ELSE status END AS status,
		CASE WHEN id = 1010 THEN 150 ELSE amount END AS amount) FROM (`+billingRows(1001, 10)+`)`)
	e := newEngine(t, src, "")
	tests := []struct {
		check    Check
		status   string
		observed string
	}{
		{Check{Kind: KindRegex, Table: "billing", Column: "status", Pattern: "^(open|paid)$"}, schemas.StatusFail, "2 rows not matching of 1010"},
		{Check{Kind: KindRegex, Table: "billing", Column: "status", Pattern: "^(open|paid)$", Mostly: f64(0.99)}, schemas.StatusPass,
			"2 rows not matching of 1010 (99.8% pass)"},
		{Check{Kind: KindNotNull, Table: "billing", Column: "status", Mostly: f64(0.998)}, schemas.StatusFail,
			"3 null rows of 1010 (99.7% pass)"},
		{Check{Kind: KindNotNull, Table: "billing", Column: "status", Where: "id < 1001"}, schemas.StatusPass, "0 null rows of 1000"},
		{Check{Kind: KindRowCount, Table: "billing", Min: f64(5), Where: "amount > 99 -- a comment"}, schemas.StatusFail, "1 rows"},
		{Check{Kind: KindStat, Stat: StatMax, Table: "billing", Column: "amount", Max: f64(150)}, schemas.StatusPass, "max 150 of 1010 rows"},
		{Check{Kind: KindStat, Stat: StatMax, Table: "billing", Column: "amount", Max: f64(150), StrictMax: true}, schemas.StatusFail, "max 150 of 1010 rows"},
		{Check{Kind: KindStat, Stat: StatMin, Table: "billing", Column: "id", Min: f64(1)}, schemas.StatusPass, "min 1 of 1010 rows"},
		{Check{Kind: KindRange, Table: "billing", Column: "amount", Min: f64(0), Max: f64(99), StrictMin: true}, schemas.StatusFail,
			"11 rows out of range of 1010 (min 0, max 150)"},
		{Check{Kind: KindColumns, Table: "billing", Columns: []string{"ID", "status"}, AllowExtra: true}, schemas.StatusFail, "missing ID"}, // names compare exactly
		{Check{Kind: KindColumns, Table: "billing", Columns: []string{"id", "status", "nope"}}, schemas.StatusFail,
			"missing nope; unexpected customer_id; unexpected amount; unexpected updated_at"},
		{Check{Kind: KindColumns, Table: "billing", Columns: []string{"customer_id", "id", "status", "amount", "updated_at"}, Ordered: true}, schemas.StatusFail,
			"order is id, customer_id, status, amount, updated_at"},
		{Check{Kind: KindAcceptedValues, Table: "billing", Column: "status", Values: []string{"open", "paid"}, Mostly: f64(0.5),
			Meta: map[string]any{"owner": "x"}}, schemas.StatusPass, "2 rows with other values of 1010 (99.8% pass)"},
		{Check{Kind: KindAcceptedValues, Table: "billing", Column: "status", Values: []string{"open", "paid"},
			Meta: map[string]any{"owner": "x"}}, schemas.StatusFail, "2 rows with other values of 1010"},
	}
	for _, tt := range tests {
		rep := audit(t, e, "b1", tt.check)
		r := only(t, rep)
		if r.Status != tt.status || r.Observed != tt.observed {
			t.Errorf("%+v: %s %q (%s), want %s %q", tt.check, r.Status, r.Observed, r.Message, tt.status, tt.observed)
		}
		if tt.check.Meta != nil && r.Status == schemas.StatusFail && r.Message != `meta: {"owner":"x"}` {
			t.Errorf("%s: message %q, want the check's meta", r.Name, r.Message)
		}
		if tt.check.Kind == KindRegex && r.Status == schemas.StatusFail && (len(r.SampleRows) == 0 || !strings.Contains(r.SampleRows[0], "void")) {
			t.Errorf("regex samples: %v", r.SampleRows)
		}
	}
}

func TestRunReportsSkippedChecks(t *testing.T) {
	e := newEngine(t, fixture(t), "")
	rep, err := e.Run(context.Background(), Request{Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
		Suite: Suite{Tables: tables, Checks: []Check{{Kind: KindRowCount, Table: "billing", Min: f64(1)}},
			Skipped: []Skipped{{Name: "kl(amount)", Kind: "expect_column_kl_divergence_to_be_less_than", Table: "billing", Reason: "not supported"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Checks) != 2 || rep.Checks[1].Status != schemas.StatusSkipped || rep.Checks[1].Message != "not supported" || !rep.Passed {
		t.Fatalf("report = %+v", rep)
	}
	if p, f, w := rep.Counts(); p != 1 || f != 0 || w != 0 {
		t.Errorf("counts %d/%d/%d, want the skipped check in none", p, f, w)
	}
}

// unique counts the same extra copies whether it counts distinct values with
// a bitmap (integers in a small range, from Parquet statistics) or a hash
// table (a wide range, text, a where condition).
func TestRunUniqueBitmapAndHashAgree(t *testing.T) {
	src := newDirSource(t)
	src.write(t, "main", "t/a.parquet", `SELECT (i % 997 - 500)::INTEGER AS small, (i % 997)::BIGINT * 1000000000 AS wide,
		(i % 997)::VARCHAR AS txt, CASE WHEN i % 10 = 0 THEN NULL ELSE i % 997 END AS nullable FROM range(2000) r(i)`)
	e := newEngine(t, src, "")
	for _, col := range []string{"small", "wide", "txt", "nullable"} {
		rep, err := e.Run(context.Background(), Request{Repository: "r", Ref: "main", BatchTime: batchTime,
			Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{
				{Kind: KindUnique, Table: "t", Column: col},
				{Name: "filtered", Kind: KindUnique, Table: "t", Column: col, Where: "true"}}}})
		if err != nil {
			t.Fatal(err)
		}
		want := "1003 duplicate rows of 2000" // 2000 values, 997 distinct
		a, b := rep.Checks[0], rep.Checks[1]
		if a.Observed != b.Observed || a.Status != schemas.StatusFail {
			t.Errorf("%s: %q (bitmap when possible) vs %q (hash)", col, a.Observed, b.Observed)
		}
		if col != "nullable" && a.Observed != want { // nullable: fewer values, same figure either way
			t.Errorf("%s: %q, want %q", col, a.Observed, want)
		}
	}
}

// Checks settled from Parquet statistics report exactly what the scan of
// the same rows as CSV reports, passing or failing.
func TestRunStatisticsAgreeWithScan(t *testing.T) {
	src := newDirSource(t)
	rows := `SELECT CASE WHEN i % 7 = 0 THEN NULL ELSE i END AS id, (i % 100)::DOUBLE AS amount,
		TIMESTAMP '2025-06-01 11:00:00' - to_minutes(i::BIGINT) AS at FROM range(0, 500) r(i)`
	src.write(t, "main", "p/a.parquet", rows)
	// amount a DOUBLE as in a.parquet: DuckDB's 150.0 is a DECIMAL(4,1), an
	// INT32 that Spark reads by a.parquet's double as 1500.0 (review 62).
	src.write(t, "main", "p/b.parquet", "SELECT 1000 AS id, 150.0::DOUBLE AS amount, TIMESTAMP '2025-06-01 11:30:00' AS at")
	src.write(t, "main", "c/a.csv", rows)
	src.write(t, "main", "c/b.csv", "SELECT 1000 AS id, 150.0 AS amount, TIMESTAMP '2025-06-01 11:30:00' AS at")
	e := newEngine(t, src, "")
	suite := func(table string) []Check {
		return []Check{
			{Name: "nn", Kind: KindNotNull, Table: table, Column: "id"},
			{Name: "nn mostly", Kind: KindNotNull, Table: table, Column: "id", Mostly: f64(0.8)},
			{Name: "range in", Kind: KindRange, Table: table, Column: "amount", Min: f64(0), Max: f64(150)},
			{Name: "range strict", Kind: KindRange, Table: table, Column: "amount", Min: f64(0), Max: f64(150), StrictMax: true},
			{Name: "range out", Kind: KindRange, Table: table, Column: "amount", Max: f64(99)},
			{Name: "rows", Kind: KindRowCount, Table: table, Min: f64(501)},
			{Name: "fresh", Kind: KindFreshness, Table: table, Column: "at", MaxAge: "1h"},
			{Name: "max", Kind: KindStat, Stat: StatMax, Table: table, Column: "amount", Max: f64(100)},
		}
	}
	run := func(table string) schemas.AuditReport {
		rep, err := e.Run(context.Background(), Request{Repository: "r", Ref: "main", BatchTime: batchTime, Suite: Suite{
			Tables: []Table{{Name: "pq", Path: "p/"}, {Name: "csv", Path: "c/", Format: FormatCSV}}, Checks: suite(table)}})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	pq, csv := run("pq"), run("csv")
	for i := range pq.Checks {
		a, b := pq.Checks[i], csv.Checks[i]
		if a.Status != b.Status || a.Observed != b.Observed || len(a.SampleRows) != len(b.SampleRows) {
			t.Errorf("%s: parquet %s %q (%d samples), csv %s %q (%d samples)", a.Name, a.Status, a.Observed, len(a.SampleRows),
				b.Status, b.Observed, len(b.SampleRows))
		}
	}
	if pq.Checks[0].Status != schemas.StatusFail || pq.Checks[2].Status != schemas.StatusPass || pq.Checks[3].Status != schemas.StatusFail {
		t.Errorf("parquet: %+v", pq.Checks)
	}
}
