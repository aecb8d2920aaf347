package audit

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// TestStatisticsTypedInGoAtTheExtremes: range and stat checks over columns
// of every integer width and DOUBLE whose unchanged file holds the
// extremes DuckDB prints at their widest (each width's bounds, 5e-324,
// 1.7976931348623157e+308, -0.0, 1e+20, infinities), and a batch of
// middling values, so the statistics' min and max win and are typed in Go:
// the incremental audit's verdicts and observed figures (range's min and
// max, stat's value) are the full audit's, and no statement cast the
// statistics' text.
func TestStatisticsTypedInGoAtTheExtremes(t *testing.T) {
	cols := []struct{ name, typ, lo, hi, mid string }{
		{"t8", "TINYINT", "-128", "127", "5"},
		{"t16", "SMALLINT", "-32768", "32767", "5"},
		{"t32", "INTEGER", "-2147483648", "2147483647", "5"},
		{"t64", "BIGINT", "-9223372036854775808", "9223372036854775807", "5"},
		{"u8", "UTINYINT", "0", "255", "5"},
		{"u16", "USMALLINT", "0", "65535", "5"},
		{"u32", "UINTEGER", "0", "4294967295", "5"},
		{"u64", "UBIGINT", "0", "18446744073709551615", "5"},
		{"dwide", "DOUBLE", "-1.7976931348623157e+308", "1.7976931348623157e+308", "0.5"},
		{"dtiny", "DOUBLE", "5e-324", "1e+20", "0.5"},
		{"dzero", "DOUBLE", "-0.0", "123456789012345680000", "0.5"},
		{"dinf", "DOUBLE", "-inf", "inf", "0.5"},
	}
	rows := func(vals func(lo, hi, mid string) []string) string {
		var sel []string
		for _, c := range cols {
			vs := vals(c.lo, c.hi, c.mid)
			sel = append(sel, fmt.Sprintf("([%s])[i + 1]::%s AS %s", strings.Join(each(vs, func(v string) string { return quoteLiteral(v) + "::" + c.typ }), ", "), c.typ, c.name))
		}
		return fmt.Sprintf("SELECT %s FROM range(3) t(i)", strings.Join(sel, ", "))
	}
	extremes := rows(func(lo, hi, mid string) []string { return []string{lo, mid, hi} })
	middling := rows(func(lo, hi, mid string) []string { return []string{mid, mid, mid} })
	lo, hi := -math.MaxFloat64, math.MaxFloat64
	var checks []Check
	for _, c := range cols {
		if c.name != "dinf" { // -inf is below any bound
			checks = append(checks, Check{Name: c.name + "_range", Kind: KindRange, Table: "t", Column: c.name, Min: &lo})
		}
		checks = append(checks,
			Check{Name: c.name + "_min", Kind: KindStat, Table: "t", Column: c.name, Stat: StatMin, Max: &hi},
			Check{Name: c.name + "_max", Kind: KindStat, Table: "t", Column: c.name, Stat: StatMax, Min: &lo})
	}
	suite := Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: checks}
	lake := &lakeSim{dirSource: &dirSource{root: t.TempDir(), downloads: map[string]int{}, sums: map[string]string{}}, commits: map[string]CommitInfo{}}
	e, err := New(Options{Source: lake, WorkDir: t.TempDir(), History: lake})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var stmts []string
	e.onStatement = func(q string) { stmts = append(stmts, q) }
	ctx := context.Background()
	req := func(ref, base string, full bool) Request {
		return Request{Dataset: "x", Repository: "r", Ref: ref, BaseRef: base, BaseName: "main", BatchTime: batchTime, Suite: suite, Full: full}
	}
	c0, s0, c1, b1 := cid("x0"), cid("xs0"), cid("x1"), cid("xb1")
	lake.commit(c0, nil, nil)
	lake.write(t, c0, "data/t/part-0.parquet", extremes)
	lake.branch(t, c0, s0)
	lake.commit(s0, []string{c0}, nil)
	lake.write(t, s0, "data/t/part-1.parquet", middling)
	rep, err := e.Run(ctx, req(s0, c0, true))
	if err != nil || !rep.Passed {
		t.Fatalf("the foundation's audit: %v %+v", err, rep.Checks)
	}
	lake.mergeDirs(t, c0, s0, c0, c1)
	text, err := NewAttestation("x", suite, rep, s0, c0).Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	lake.commit(c1, []string{c0, s0}, map[string]string{MetaAttestation: text})
	lake.branch(t, c1, b1)
	lake.commit(b1, []string{c1}, nil)
	lake.write(t, b1, "data/t/part-2.parquet", middling)

	stmts = nil
	inc, err := e.Run(ctx, req(b1, c1, false))
	if err != nil {
		t.Fatal(err)
	}
	if inc.Mode != ModeIncremental {
		t.Fatalf("the batch's audit is %s: %s", inc.Mode, inc.ModeReason)
	}
	for _, q := range stmts {
		if strings.Contains(q, "CAST('") {
			t.Errorf("the statistics' text was cast by DuckDB: %s", q)
		}
	}
	full, err := e.Run(ctx, req(b1, c1, true))
	if err != nil {
		t.Fatal(err)
	}
	if full.Mode != ModeFull || len(full.Checks) != len(inc.Checks) {
		t.Fatalf("full audit %s, %d checks; incremental %d", full.Mode, len(full.Checks), len(inc.Checks))
	}
	for i, want := range full.Checks {
		got := inc.Checks[i]
		if got.Status != want.Status || got.Observed != want.Observed || want.Status != schemas.StatusPass {
			t.Errorf("%s: incremental %s %q, full %s %q", want.Name, got.Status, got.Observed, want.Status, want.Observed)
		}
	}
}

// TestAsFloatTakesEveryNumericType: asFloat reads the value the driver
// scans of each of DuckDB's numeric types (a stat check on a UTINYINT or
// USMALLINT column errored "not a number (got uint8)" before).
func TestAsFloatTakesEveryNumericType(t *testing.T) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, typ := range []string{"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL(4,1)", "DECIMAL(18,3)", "DECIMAL(38,10)"} {
		var v any
		if err := db.QueryRow("SELECT CAST(100 AS " + typ + ")").Scan(&v); err != nil {
			t.Fatal(err)
		}
		if f, ok := asFloat(v); !ok || f != 100 {
			t.Errorf("%s (scanned as %T): asFloat gives %v %v", typ, v, f, ok)
		}
	}
}
