package audit

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// TestForgedParquetStatistics is the attack of a writer who controls the
// Parquet footer: the data holds x = 1..10 and 1000, the column statistics
// claim a maximum of 50. A range check must read the data, not the claim.
func TestForgedParquetStatistics(t *testing.T) {
	src := newDirSource(t)
	dst := filepath.Join(src.root, "main", "t", "a.parquet")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	copySQL(t, "COPY (SELECT i::BIGINT AS x FROM range(1, 11) r(i) UNION ALL SELECT 1000::BIGINT) TO "+
		quoteLiteral(dst)+" (FORMAT parquet, COMPRESSION uncompressed)")
	honest, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	forged := forgeMax(t, honest, 1000, 50, dst)

	e := newEngine(t, src, "")
	e.claimsUnchecked = true // the audit's own reading, under the refusal of such a file (claims.go)
	rep, err := e.Run(context.Background(), Request{Repository: "r", Ref: "main", BatchTime: batchTime, Suite: Suite{
		Tables: []Table{{Name: "t", Path: "t/"}},
		Checks: []Check{{Name: "x_range", Kind: KindRange, Table: "t", Column: "x", Min: f64(0), Max: f64(100)}}}})
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Checks[0]; c.Status != schemas.StatusFail {
		t.Errorf("range over a file whose statistics claim max 50 (%d bytes): %s %q, want fail (the data holds 1000)", len(forged), c.Status, c.Observed)
	}
}

// forgedTable writes the attack file of TestForgedStatisticsEveryKind at
// dst: 11 rows with
//   - x = 1..10 and 1000, the footer claiming max 50;
//   - y = x except one NULL, the footer claiming no nulls;
//   - u = 1..10 and 1000 again (a duplicate), the footer claiming max 50;
//   - ts at most 2025-05-01 (a month before batchTime), the footer claiming
//     a newest value of batchTime.
//
// Two row groups, so that a claim can also prune a group: the second holds
// the rows the footer lies about.
func forgedTable(t *testing.T, dst string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	stale := time.Date(2025, 5, 1, 0, 0, 0, 0, time.UTC)
	copySQL(t, `COPY (SELECT x, CASE WHEN x = 7 THEN NULL ELSE x END AS y, CASE WHEN x = 9 THEN 1000 ELSE x END AS u,
		CASE WHEN x = 1000 THEN TIMESTAMP '2025-05-01 00:00:00' ELSE TIMESTAMP '2025-04-01 00:00:00' + to_days(x) END AS ts
		FROM (SELECT i::BIGINT AS x FROM range(1, 11) r(i) UNION ALL SELECT 1000) ORDER BY x)
		TO `+quoteLiteral(dst)+` (FORMAT parquet, COMPRESSION uncompressed, ROW_GROUP_SIZE 8)`)
	b, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	b = forgeMax(t, b, 1000, 50, dst)
	b = forgeMax(t, b, stale.UnixMicro(), batchTime.UnixMicro(), dst)
	forgeNullCount(t, b, "y", dst)
	for col, want := range map[string]string{"x": "50", "u": "50", "ts": "2025-06-01 12:00:00"} {
		if got := footerStat(t, dst, "max(stats_max)", col); got != want {
			t.Fatalf("footer of %s claims max %s, want the forged %s", col, got, want)
		}
	}
}

// TestForgedStatisticsEveryKind is the forged-footer attack against every
// check whose verdict depends on the rows: a predicate (row-level kinds, a
// where condition, row_count of a where), an aggregate over the values
// (stat, freshness, unique's bounds), custom and cross-table SQL, the batch
// scope and the sample rows. Each check fails on the data; none may pass
// on what the footer claims.
func TestForgedStatisticsEveryKind(t *testing.T) {
	src := newDirSource(t)
	forgedTable(t, filepath.Join(src.root, "main", "t", "a.parquet"))
	src.write(t, "main", "k/k.parquet", "SELECT 1000::BIGINT AS k")
	src.branch(t, "main", "b")
	forgedTable(t, filepath.Join(src.root, "b", "t", "b.parquet")) // the batch's own file
	e := newEngine(t, src, "")
	e.claimsUnchecked = true // the audit's own reading, under the refusal of such a file (claims.go)

	ten := make([]string, 10)
	for i := range ten {
		ten[i] = strings.TrimSpace(num(float64(i + 1)))
	}
	checks := []Check{
		{Name: "range", Kind: KindRange, Table: "t", Column: "x", Min: f64(0), Max: f64(100)},
		{Name: "range_strict", Kind: KindRange, Table: "t", Column: "x", Max: f64(100), StrictMax: true},
		{Name: "range_where", Kind: KindRange, Table: "t", Column: "u", Max: f64(100), Where: "x > 5"},
		{Name: "range_mostly", Kind: KindRange, Table: "t", Column: "x", Max: f64(100), Mostly: f64(0.95)},
		{Name: "range_batch", Kind: KindRange, Table: "t", Column: "x", Max: f64(100), Scope: ScopeBatch},
		{Name: "not_null", Kind: KindNotNull, Table: "t", Column: "y"},
		{Name: "not_null_where", Kind: KindNotNull, Table: "t", Column: "y", Where: "x < 100"},
		{Name: "accepted_values", Kind: KindAcceptedValues, Table: "t", Column: "x", Values: ten},
		{Name: "regex", Kind: KindRegex, Table: "t", Column: "x", Pattern: "^[0-9]{1,2}$"},
		{Name: "stat_max", Kind: KindStat, Table: "t", Column: "x", Stat: StatMax, Max: f64(100)},
		{Name: "unique", Kind: KindUnique, Table: "t", Column: "u", Scope: ScopeBatch}, // main has b twice
		{Name: "row_count_where", Kind: KindRowCount, Table: "t", Max: f64(0), Where: "x > 100"},
		{Name: "freshness", Kind: KindFreshness, Table: "t", Column: "ts", MaxAge: "7d"},
		{Name: "sql", Kind: KindSQL, Table: "t", SQL: "SELECT * FROM t WHERE x > 100"},
		{Name: "sql_nulls", Kind: KindSQL, Table: "t", SQL: "SELECT * FROM t WHERE y IS NULL"},
		{Name: "sql_top", Kind: KindSQL, Table: "t", SQL: "SELECT * FROM (SELECT x FROM t ORDER BY x DESC LIMIT 1) WHERE x > 100"},
		{Name: "sql_subquery", Kind: KindSQL, Table: "t", SQL: "SELECT * FROM t WHERE x > (SELECT 100)"},
		{Name: "cross_table", Kind: KindCrossTable, SQL: "SELECT * FROM t JOIN k ON t.x = k.k"},
	}
	suite := func(cs ...Check) Suite {
		return Suite{Tables: []Table{{Name: "t", Path: "t/"}, {Name: "k", Path: "k/"}}, Checks: cs}
	}
	// Together, as a suite runs them (one aggregate scan), and each alone
	// (a scan of nothing but its own aggregate, which DuckDB might answer
	// from the footer).
	var results []schemas.CheckResult
	runs := [][]Check{checks}
	for _, c := range checks {
		runs = append(runs, []Check{c})
	}
	for _, cs := range runs {
		rep, err := e.Run(context.Background(), Request{Repository: "r", Ref: "b", BaseRef: "main", BatchTime: batchTime, Suite: suite(cs...)})
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, rep.Checks...)
	}
	if len(results) != 2*len(checks) {
		t.Fatalf("%d results of %d checks", len(results), len(checks))
	}
	for i, c := range results {
		how := "in the suite"
		if i >= len(checks) {
			how = "alone"
		}
		if c.Status != schemas.StatusFail {
			t.Errorf("%s (%s) over a forged footer: %s (%s%s), want fail: the data breaks it", c.Name, how, c.Status, c.Observed, c.Message)
			continue
		}
		switch c.Kind {
		case KindRange, KindNotNull, KindAcceptedValues, KindRegex, KindUnique, KindSQL, KindCrossTable:
			// The failing rows are the ones the footer hides.
			if len(c.SampleRows) == 0 {
				t.Errorf("%s (%s): no sample rows (observed %s)", c.Name, how, c.Observed)
			}
			for _, s := range c.SampleRows {
				if !strings.Contains(s, "1000") && !strings.Contains(s, "null") {
					t.Errorf("%s (%s): sample row %s is not a failing row", c.Name, how, s)
				}
			}
		}
	}
}

// TestEveryConnectionDistrustsStatistics: the setting that keeps DuckDB
// off the footer's statistics holds on every connection of the engine's
// pool, not only on the one that set it up.
func TestEveryConnectionDistrustsStatistics(t *testing.T) {
	e := newEngine(t, newDirSource(t), "")
	ctx := context.Background()
	var conns []*sql.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 4 {
		c, err := e.duckDB().Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		var got string
		if err := c.QueryRowContext(ctx, "SELECT current_setting('disabled_optimizers')").Scan(&got); err != nil {
			t.Fatal(err)
		}
		for _, want := range strings.Split(distrustedOptimizers, ",") {
			if !strings.Contains(got, want) {
				t.Errorf("connection %d: disabled_optimizers = %q, missing %s", len(conns), got, want)
			}
		}
		if _, err := c.ExecContext(ctx, "SET disabled_optimizers = ''"); err == nil {
			t.Errorf("connection %d could turn the optimizers back on", len(conns))
		}
	}
}

// footerStat is agg (over the row groups) of what the footer claims about
// column col, as text.
func footerStat(t *testing.T, file, agg, col string) string {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var s sql.NullString
	if err := db.QueryRow("SELECT CAST("+agg+" AS VARCHAR) FROM parquet_metadata("+quoteLiteral(file)+") WHERE path_in_schema = $1", col).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s.String
}

// content is every row of a Parquet file as text (in order: a file of
// several row groups is read in parallel), read with the engine's own
// distrust of the footer so that the check of a forgery reads the data.
func content(t *testing.T, file string) string {
	t.Helper()
	db, err := sql.Open("duckdb", "?disabled_optimizers="+distrustedOptimizers)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var s string
	if err := db.QueryRow("SELECT CAST(list(t ORDER BY t) AS VARCHAR) FROM (SELECT * FROM read_parquet(" + quoteLiteral(file) + ")) t").Scan(&s); err != nil {
		return "unreadable: " + err.Error()
	}
	return s
}

// footer is where honest's footer (FileMetaData) lies: before its 4-byte
// length and the closing magic.
func footer(t *testing.T, b []byte) (from, to int) {
	t.Helper()
	if len(b) < 12 || string(b[len(b)-4:]) != "PAR1" {
		t.Fatal("not a Parquet file")
	}
	n := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
	return len(b) - 8 - n, len(b) - 8
}

// forgeMax rewrites every copy of the int64 value from in the footer to
// claim (the statistics' max and max_value), leaving the data pages alone,
// writes the file to dst and checks that its rows still read as before.
func forgeMax(t *testing.T, honest []byte, from, claim int64, dst string) []byte {
	t.Helper()
	var a, b [8]byte
	binary.LittleEndian.PutUint64(a[:], uint64(from))
	binary.LittleEndian.PutUint64(b[:], uint64(claim))
	f := bytes.Clone(honest)
	lo, hi := footer(t, f)
	n := 0
	for i := lo; i+8 <= hi; i++ {
		if bytes.Equal(f[i:i+8], a[:]) {
			copy(f[i:i+8], b[:])
			n++
		}
	}
	if n == 0 {
		t.Fatalf("the footer holds no %d to forge", from)
	}
	return writeForged(t, honest, f, dst)
}

// forgeNullCount makes the footer claim that column col has no nulls: it
// rewrites a null_count of 1 (Thrift compact: field 3 of Statistics, an
// i64, header 0x16 or 0x26 by the field before it, zigzag value 2) to 0,
// trying each candidate, and keeps the file whose footer then claims no
// nulls for col and whose rows still read as before.
func forgeNullCount(t *testing.T, honest []byte, col, dst string) []byte {
	t.Helper()
	lo, hi := footer(t, honest)
	want := contentOf(t, honest, dst)
	for i := lo; i+1 < hi; i++ {
		if (honest[i] != 0x16 && honest[i] != 0x26) || honest[i+1] != 0x02 {
			continue
		}
		f := bytes.Clone(honest)
		f[i+1] = 0
		if err := os.WriteFile(dst, f, 0o644); err != nil {
			t.Fatal(err)
		}
		if footerStat(t, dst, "sum(stats_null_count)", col) == "0" && content(t, dst) == want {
			return f
		}
	}
	t.Fatalf("could not forge the null count of %s", col)
	return nil
}

// writeForged writes forged to dst after checking that its rows read as
// honest's do: only the footer's claims differ.
func writeForged(t *testing.T, honest, forged []byte, dst string) []byte {
	t.Helper()
	want := contentOf(t, honest, dst)
	if err := os.WriteFile(dst, forged, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := content(t, dst); got != want {
		t.Fatalf("the forged file reads differently:\n%s\nwant\n%s", got, want)
	}
	return forged
}

// contentOf is content of the bytes b (written to a file next to dst).
func contentOf(t *testing.T, b []byte, dst string) string {
	t.Helper()
	p := dst + ".honest"
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(p)
	return content(t, p)
}
