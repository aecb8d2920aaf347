package audit

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"
)

// TestFusedHostileNamesEqualLoneDuckDB: with column names and check
// literals that hold what splitList splits or refuses on (commas,
// brackets, quotes of both kinds, comment openers, a star, a dollar, a
// question mark, a semicolon, backslashes, non-ASCII) and checks naming a
// column in another case, the builders' lists all split into their
// columns (so the shared-expression mapping is what is tested), and each
// query's answer from the fused statement is its answer alone, value and
// Go type.
func TestFusedHostileNamesEqualLoneDuckDB(t *testing.T) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, err := db.Exec("CREATE SCHEMA batch"); err != nil {
		t.Fatal(err)
	}
	// Each column's values: a few rows, values as tricky as its name.
	cols := []struct{ name, values string }{
		{`a,b`, `['x,y', 'it''s', NULL, 'a\b', 'x,y']`},
		{`x"y`, `[1, 2, NULL, 2, -5]`},
		{`c(`, `['(', ')', '[', NULL, '(']`},
		{`--d`, `[1.5, -0.0, 'inf'::DOUBLE, NULL, 7.25]`},
		{`/*e`, `['/*', '*/', '--', '$1', '/*']`},
		{`*`, `[3, 3, 3, NULL, 4]`},
		{`é ñ`, `['é', 'ñ', 'é', 'e', NULL]`},
		{`it's`, `['''', '"', ',', '\', '''']`},
		{`$1`, `[10, 20, 30, 40, 50]`},
		{`?;`, `['?', ';', '?;', NULL, NULL]`},
		{`count(*)`, `[1, 1, 2, 3, 5]`},
		{`min("x")`, `['min', 'max', NULL, 'min', 'x']`},
	}
	var sel []string
	for _, c := range cols {
		sel = append(sel, fmt.Sprintf("(%s)[n + 1] AS %s", c.values, quoteIdent(c.name)))
	}
	f := filepath.Join(t.TempDir(), "hostile.parquet")
	if _, err := db.Exec(fmt.Sprintf("COPY (SELECT %s FROM range(5) r(n)) TO %s (FORMAT parquet)", strings.Join(sel, ", "), quoteLiteral(f))); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(viewSQL("batch", "t", FormatParquet, []string{f})); err != nil {
		t.Fatal(err)
	}
	var qs []string
	var ns []int
	add := func(q string, k int) { qs, ns = append(qs, q), append(ns, k) }
	var need statsNeed
	for _, c := range cols {
		need.cols = append(need.cols, colNeed{name: c.name})
	}
	add(batchStatsSQL("t", need), len(statsExprs(need)))
	lo, hi, zero := -1.0, 5.0, 0.0
	var exprs []string
	for _, c := range cols {
		for _, name := range []string{c.name, asciiUpper(c.name)} { // another case: the same column to DuckDB, another text
			add(uniqueBatchSQL("t", Check{Kind: KindUnique, Column: name}), 6)
			exprs = append(exprs, aggExprs(Check{Kind: KindNotNull, Column: name})...)
			exprs = append(exprs, aggExprs(Check{Kind: KindUnique, Column: name})...)
			exprs = append(exprs, aggExprs(Check{Kind: KindAcceptedValues, Column: name, Values: []string{"x,y", "it's", `a\b`, "(", "'", `"`, "$1", "?;", "--", "/*", "é"}})...)
			exprs = append(exprs, aggExprs(Check{Kind: KindRegex, Column: name, Pattern: `^(x,y|it's|a\\b|[(]|\$1|--|/\*|é)$`})...)
		}
	}
	add(uniqueBatchSQL("t", Check{Kind: KindUnique, Columns: []string{"a,b", `x"y`, "*"}}), 6)
	for _, c := range []string{`x"y`, `--d`, `*`, `$1`, `count(*)`} {
		add(batchMinMaxSQL("t", Check{Kind: KindRange, Column: c}), 5)
		exprs = append(exprs, aggExprs(Check{Kind: KindRange, Column: c, Min: &lo, Max: &hi})...)
		exprs = append(exprs, aggExprs(Check{Kind: KindRange, Column: c, Min: &zero, StrictMin: true})...)
		exprs = append(exprs, aggExprs(Check{Kind: KindStat, Column: c, Stat: StatMin})...)
		exprs = append(exprs, aggExprs(Check{Kind: KindStat, Column: asciiUpper(c), Stat: StatMax})...)
	}
	exprs = append(exprs, aggExprs(Check{Kind: KindUnique, Columns: []string{"a,b", `it's`}})...)
	add(aggregateSQL("batch", "t", exprs), len(exprs)+1)
	add(aggregateSQL("batch", "t", nil), 1)

	fu := &fusion{from: qualified("batch", "t")}
	for i, q := range qs {
		fu.add(q, ns[i])
	}
	for _, p := range fu.parts {
		if exprs, ok := splitList(p.list); !ok || len(exprs) != p.n {
			t.Errorf("not split into its %d columns (%v, %d): %s", p.n, ok, len(exprs), p.list)
		}
	}
	list, colsOf, width := fusedList(fu.parts)
	fused, err := scanValues(db.QueryRowContext(ctx, "SELECT "+strings.Join(list, ", ")+" FROM "+fu.from).Scan, width)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range fu.parts {
		lone, err := scanValues(db.QueryRowContext(ctx, p.text).Scan, p.n)
		if err != nil {
			t.Fatalf("%s: %v", p.text, err)
		}
		got := each(colsOf[i], func(j int) any { return fused[j] })
		if fmt.Sprint(each(got, typed)) != fmt.Sprint(each(lone, typed)) {
			t.Errorf("%s\nfused %#v\nlone  %#v", p.text, got, lone)
		}
	}
	if total := sumN(fu.parts); width >= total {
		t.Errorf("%d columns for %d answers: nothing shared", width, total)
	}
	t.Logf("%d answers from %d columns", sumN(fu.parts), width)
}

// asciiUpper is s with its ASCII letters in upper case: DuckDB's names
// ignore the case of those only ("É" is not "é").
func asciiUpper(s string) string {
	return strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' {
			return r - 'a' + 'A'
		}
		return r
	}, s)
}
