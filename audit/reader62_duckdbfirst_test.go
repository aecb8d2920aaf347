package audit

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// Review 62: DuckDB's read_parquet of a table's files without
// union_by_name (its default: read_parquet('t/*.parquet'), as a reader of
// main writes it) reads every file in the first file's type, casting the
// others' values to it without a word: a DOUBLE 4.2 and 4.4 beside a
// BIGINT first are 4 and 4, a DECIMAL(38,3) 1.231 and 1.234 beside a
// DECIMAL(18,2) first 1.23 twice (DuckDB 1.5.6 through duckdb-go, and the
// venv's). The audit reads the files by union_by_name (4.2, 4.4), and
// unionValues left these pairs: pyarrow refuses the casts (pandas fails on
// the table), and Spark on a BIGINT beside a DOUBLE. A unique passed where
// that reader finds one value twice.

// TestReader62DuckDBReadsTheFirstFilesType: part-0.parquet gives x one
// type, part-1.parquet another. Refused where DuckDB's plain read_parquet
// reads part-1's values otherwise (naming both files and the column);
// values the first file's type holds (a DOUBLE 4.0 beside a BIGINT) pass.
func TestReader62DuckDBReadsTheFirstFilesType(t *testing.T) {
	for _, c := range []struct {
		name, first, second string
		refused             bool
	}{
		{"bigint_then_doubles", "3::BIGINT", "unnest([4.2, 4.4])::DOUBLE", true},
		{"bigint_then_decimals", "3::BIGINT", "unnest([4.2, 4.4])::DECIMAL(20,1)", true},
		{"decimal_then_finer_decimals", "9.99::DECIMAL(18,2)", "unnest([1.231, 1.234])::DECIMAL(38,3)", true},
		{"bigint_then_whole_doubles", "3::BIGINT", "unnest([4.0, 5.0])::DOUBLE", false},
		{"decimal_then_decimals_it_holds", "9.99::DECIMAL(18,2)", "unnest([1.230, 1.240])::DECIMAL(38,3)", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			plainReadRefused(t, "SELECT "+c.first+" AS x", "SELECT "+c.second+" AS x", c.refused)
		})
	}
}

// TestReader62DuckDBFirstFilesTypeIsAuditedWhole: the attack of
// TestReader62DuckDBReadsTheFirstFilesType by a batch onto main whose
// attestation lets it be audited incrementally: a batch writing DOUBLEs
// 4.2 and 4.4 beside main's BIGINT file, and a batch writing a BIGINT
// file that sorts before main's DOUBLE file. The batch's files alone read
// alike; the audit runs full (the files give x two types) and refuses the
// table, naming both files.
func TestReader62DuckDBFirstFilesTypeIsAuditedWhole(t *testing.T) {
	for _, c := range []struct {
		name, mainValue, batchPath, batchValue string
	}{
		{"doubles_after_main_bigint", "3::BIGINT", "data/t/part-b.parquet", "unnest([4.2, 4.4])::DOUBLE"},
		{"bigint_before_main_doubles", "unnest([4.2, 4.4])::DOUBLE", "data/t/a.parquet", "3::BIGINT"},
	} {
		t.Run(c.name, func(t *testing.T) {
			suite := Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: []Check{{Name: "u", Kind: KindUnique, Table: "t", Column: "x"}}}
			audit := attestedBatches(t, suite, "SELECT "+c.mainValue+" AS x")
			// A first batch of main's type: passed, and attested.
			if rep := audit("data/t/part-?.parquet", "SELECT "+c.mainValue+"+10 AS x"); !rep.Passed {
				t.Fatalf("a batch of main's type: %s %q", rep.Checks[0].Status, rep.Checks[0].Message)
			}
			rep := audit(c.batchPath, "SELECT "+c.batchValue+" AS x")
			res := rep.Checks[0]
			if rep.Passed || rep.Mode != ModeFull || res.Status != schemas.StatusError || !strings.Contains(res.Message, "is DOUBLE there and an integer in file") {
				t.Fatalf("passed=%v %s (%q) %s %q: want the table refused by a full audit", rep.Passed, rep.Mode, rep.ModeReason, res.Status, res.Message)
			}
			t.Logf("%s (%s): %s", rep.Mode, rep.ModeReason, res.Message)
		})
	}
}

// TestReader62TextBesideAnEmptyDateFileIsJudged: part-0.parquet is a DATE
// file of no rows, part-1.parquet holds x as text. DuckDB's read_parquet
// without union_by_name takes the first file's type whether it holds rows
// or not, and casts the texts to DATE without a word: 2024-01-01 and
// 2024-1-1 are one date twice, where the audit (union_by_name) reads two
// texts and a unique passed. textCastType had left DATE, as pyarrow fails
// to cast such texts. Refused naming both files; texts a DATE renders so
// pass.
func TestReader62TextBesideAnEmptyDateFileIsJudged(t *testing.T) {
	for _, c := range []struct {
		name, texts string
		refused     bool
	}{
		{"texts_one_date", "unnest(['2024-01-01', '2024-1-1'])", true},
		{"texts_as_dates_render", "unnest(['2024-01-01', '2024-01-02'])", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			plainReadRefused(t, "SELECT DATE '2024-01-01' AS x WHERE false", "SELECT "+c.texts+" AS x", c.refused)
		})
	}
}

// plainReadRefused writes a batch of table t/ of two files, part-0.parquet
// by first and part-1.parquet by second, checks that DuckDB's read_parquet
// without union_by_name reads a value of x twice exactly when refused, and
// that a unique on x is refused naming both files and the column when
// refused, passed otherwise.
func plainReadRefused(t *testing.T, first, second string, refused bool) {
	t.Helper()
	src := newBatchSource(t)
	src.write(t, "b1", "t/part-0.parquet", first)
	src.write(t, "b1", "t/part-1.parquet", second)
	dir := filepath.Join(src.root, "b1", "t")
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var dups int64
	q := "SELECT count(x) - count(DISTINCT x) FROM read_parquet(" + quoteLiteral(filepath.Join(dir, "*.parquet")) + ")"
	if err := db.QueryRow(q).Scan(&dups); err != nil {
		t.Fatal(err)
	}
	if (dups > 0) != refused {
		t.Fatalf("DuckDB's plain read_parquet finds %d values repeated: the case shows nothing", dups)
	}
	rep, res := review39Audit(t, src, Check{Kind: KindUnique, Column: "x"})
	if !refused {
		if !rep.Passed {
			t.Fatalf("%s %q; every reader reads the values as distinct: want it passed", res.Status, res.Message)
		}
		return
	}
	if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "t/part-0.parquet") ||
		!strings.Contains(res.Message, "t/part-1.parquet") || !strings.Contains(res.Message, `column "x"`) {
		t.Fatalf("passed=%v %s %q (%s); DuckDB's plain read_parquet reads %d values twice: want it refused naming both files and the column", rep.Passed, res.Status, res.Message, res.Observed, dups)
	}
	t.Logf("refused: %s", res.Message)
}
