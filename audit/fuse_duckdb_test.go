package audit

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"
)

// TestFusedAnswersEqualLoneDuckDB: over files of many types (integers
// of a few or many values, doubles with NaN and infinity, decimals,
// text, timestamps, dates, booleans, HUGEINT, NULLs; 0 to 3000 rows), the
// queries fuse.go fuses (the statistics of a file, unique's batch keys,
// range's min and max, the checks' scan, the row count), each asked alone,
// give exactly the values (and Go types) of one statement of all their
// select lists, each distinct expression once (fusedList), lists that
// cannot be split with certainty kept whole.
func TestFusedAnswersEqualLoneDuckDB(t *testing.T) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, err := db.Exec("CREATE SCHEMA batch"); err != nil {
		t.Fatal(err)
	}
	cols := map[string]string{
		"i":  "(CASE WHEN random() < 0.2 THEN NULL ELSE (random()*%d)::BIGINT END)",
		"d":  "(CASE WHEN random() < 0.1 THEN 'NaN'::DOUBLE WHEN random() < 0.1 THEN NULL WHEN random() < 0.05 THEN 'inf'::DOUBLE ELSE random()*1000 - 500 END)",
		"m":  "(CASE WHEN random() < 0.2 THEN NULL ELSE (random()*1000)::DECIMAL(18,3) END)",
		"s":  "(CASE WHEN random() < 0.2 THEN NULL WHEN random() < 0.1 THEN 'é' || (random()*9)::INT::VARCHAR ELSE chr(65 + (random()*26)::INT) || (random()*%d)::INT::VARCHAR END)",
		"ts": "(CASE WHEN random() < 0.2 THEN NULL ELSE TIMESTAMP '2020-01-01' + to_seconds((random()*1e8)::BIGINT) END)",
		"b":  "(CASE WHEN random() < 0.2 THEN NULL ELSE random() < 0.5 END)",
		"h":  "(CASE WHEN random() < 0.2 THEN NULL ELSE (random()*1e30)::HUGEINT END)",
		"dt": "(CASE WHEN random() < 0.2 THEN NULL ELSE DATE '2020-01-01' + (random()*1000)::INT END)",
	}
	names := []string{"i", "d", "m", "s", "ts", "b", "h", "dt"}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 40 {
		k := 0
		u := func() string { // a deterministic uniform number in [0, 1) per row
			k++
			return fmt.Sprintf("((hash(n, %d, %d) %% 1000003)::DOUBLE / 1000003)", round, k)
		}
		n := []int{0, 1, 2, 5, 50, 3000}[rng.IntN(6)]
		spread := []int{1, 3, 100, 100000}[rng.IntN(4)]
		var sel []string
		for _, c := range names {
			e := cols[c]
			if strings.Contains(e, "%d") {
				e = fmt.Sprintf(e, spread)
			}
			for strings.Contains(e, "random()") {
				e = strings.Replace(e, "random()", u(), 1)
			}
			sel = append(sel, e+" AS "+c)
		}
		f := filepath.Join(t.TempDir(), fmt.Sprintf("f%d.parquet", round))
		if _, err := db.Exec(fmt.Sprintf("COPY (SELECT %s FROM range(%d) r(n)) TO '%s' (FORMAT parquet)", strings.Join(sel, ", "), n, f)); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec("DROP VIEW IF EXISTS batch.t; " + viewSQL("batch", "t", FormatParquet, []string{f})); err != nil {
			t.Fatal(err)
		}
		var qs []string
		var ns []int
		add := func(q string, k int) { qs, ns = append(qs, q), append(ns, k) }
		var need statsNeed
		for _, c := range names {
			need.cols = append(need.cols, colNeed{name: c})
		}
		add(batchStatsSQL("t", need), len(statsExprs(need)))
		var exprs []string
		for _, c := range names {
			add(uniqueBatchSQL("t", Check{Kind: KindUnique, Column: c}), 6)
			add(batchMinMaxSQL("t", Check{Kind: KindRange, Column: c}), 5)
			exprs = append(exprs, aggExprs(Check{Kind: KindNotNull, Column: c})...)
			exprs = append(exprs, aggExprs(Check{Kind: KindUnique, Column: c})...)
		}
		add(uniqueBatchSQL("t", Check{Kind: KindUnique, Columns: []string{"i", "s"}}), 6)
		for _, c := range []string{"i", "d", "m", "h"} {
			lo, hi := 10.0, 400.0
			exprs = append(exprs, aggExprs(Check{Kind: KindRange, Column: c, Min: &lo, Max: &hi})...)
		}
		exprs = append(exprs, aggExprs(Check{Kind: KindAcceptedValues, Column: "s", Values: []string{"A1", "B2"}})...)
		exprs = append(exprs, aggExprs(Check{Kind: KindRegex, Column: "s", Pattern: "^[A-Z][0-9]+$"})...)
		exprs = append(exprs, aggExprs(Check{Kind: KindUnique, Columns: []string{"i", "s"}})...)
		add(aggregateSQL("batch", "t", exprs), len(exprs)+1)
		add(aggregateSQL("batch", "t", nil), 1)
		// Lists splitList leaves whole: a comma in a comment, and one in
		// an escape string after an escaped quote, which a split by the
		// quotes alone would cut.
		add(`SELECT count(*), min("i") /* a, (b */, max("s") FROM "batch"."t"`, 3)
		add(`SELECT count(*) FILTER (WHERE "s" <> E'\', ('), min("i") FROM "batch"."t"`, 2)
		f2 := &fusion{from: qualified("batch", "t")}
		for i, q := range qs {
			f2.add(q, ns[i])
		}
		list, cols, width := fusedList(f2.parts)
		fused, err := scanValues(db.QueryRowContext(ctx, "SELECT "+strings.Join(list, ", ")+" FROM "+f2.from).Scan, width)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range f2.parts {
			lone, err := scanValues(db.QueryRowContext(ctx, p.text).Scan, p.n)
			if err != nil {
				t.Fatal(err)
			}
			got := each(cols[i], func(j int) any { return fused[j] })
			if fmt.Sprint(each(got, typed)) != fmt.Sprint(each(lone, typed)) { // NaN == NaN as text
				t.Errorf("round %d (%d rows): %s\nfused %#v\nlone  %#v", round, n, p.text, got, lone)
			}
		}
		if total := sumN(f2.parts); width >= total || width < total/3 {
			t.Fatalf("the fused statement has %d columns for %d answers: the repeated expressions were not shared", width, total)
		}
	}
}

func sumN(parts []fusedPart) int {
	n := 0
	for _, p := range parts {
		n += p.n
	}
	return n
}
