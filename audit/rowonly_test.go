package audit

import (
	"context"
	"database/sql"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// whereEngines is an engine with the query memo and one without, over lake.
func whereEngines(t *testing.T, lake *lakeSim, cache bool) (memo, plain *Engine) {
	for _, e := range []**Engine{&memo, &plain} {
		opts := Options{Source: lake, WorkDir: t.TempDir(), History: lake}
		if cache {
			opts.CacheDir = t.TempDir()
		}
		var err error
		if *e, err = New(opts); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { (*e).Close() })
	}
	plain.memo = nil
	return memo, plain
}

func runReport(t *testing.T, e *Engine, req Request) schemas.AuditReport {
	t.Helper()
	rep, err := e.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// otherRowsWheres are where conditions that read rows other than the one
// they are evaluated on, or whose answer changes with time, without a
// SELECT or FROM in their text.
var otherRowsWheres = []string{
	"('id', 500) NOT IN (UNPIVOT main.t ON id INTO NAME k VALUE v)",
	"(PIVOT main.t ON id IN (500) USING count(*)) = 0",
	"transaction_timestamp() < TIMESTAMPTZ '2999-01-01 00:00:00+00'",
	"age(TIMESTAMP '2026-12-01 00:00:00') < INTERVAL 36500 DAY",
	"current_date < DATE '2999-01-01'",
	"localtimestamp < TIMESTAMP '2999-01-01 00:00:00'",
}

// TestMemoWhereReadingTheTargetIsNotReused: a batch-scope row count whose
// where condition reads the table at the audited state (main.t) through
// UNPIVOT, which has neither SELECT nor FROM in its text. The recheck of
// batch S onto a head that gained id 500 keeps S's batch view (the same
// key), but the condition now drops every row: the engine without the
// memo fails the check, and so must the engine with it. Before the fix
// the memo reused the first answer and passed it.
func TestMemoWhereReadingTheTargetIsNotReused(t *testing.T) {
	// Subtests named without "=": before hive partitioning was turned off,
	// DuckDB read "cache=true" in a temporary directory as a column.
	t.Run("cache", func(t *testing.T) { testMemoWhereReadingTheTarget(t, true) })
	t.Run("nocache", func(t *testing.T) { testMemoWhereReadingTheTarget(t, false) })
}

func testMemoWhereReadingTheTarget(t *testing.T, cache bool) {
	lake := newLakeSim(t)
	c0, c1, c2 := cid("c000"), cid("c001"), cid("c002")
	lake.commit(c0, nil, nil)
	lake.write(t, c0, "data/t/e.parquet", idsSQL("1000", "2000"))
	lake.branch(t, c0, c1)
	lake.commit(c1, []string{c0}, nil)
	s := cid("s1")
	lake.branch(t, c1, s)
	lake.commit(s, []string{c1}, nil)
	lake.write(t, s, "data/t/s1/part-0.parquet", idsSQL("100", "101", "102"))
	suite := Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: []Check{
		{Kind: KindNotNull, Table: "t", Column: "id"},
		{Name: "batch_rows_while_no_500", Kind: KindRowCount, Table: "t", Scope: ScopeBatch, Min: f64(1),
			Where: otherRowsWheres[0]},
	}}
	memo, plain := whereEngines(t, lake, cache)
	req := Request{Dataset: "d", Suite: suite, Repository: "r", Ref: s, BaseRef: c1, BatchTime: batchTime, Onto: true}
	for _, e := range []*Engine{memo, plain} {
		if rep := runReport(t, e, req); !rep.Passed {
			t.Fatalf("audit of S onto c001: %+v", rep.Checks)
		}
	}
	// P publishes id 500: c002.
	lake.branch(t, c1, c2)
	lake.write(t, c2, "data/t/p1/part-0.parquet", idsSQL("500"))
	lake.commit(c2, []string{c1}, nil)
	req.BaseRef = c2
	got, want := runReport(t, memo, req), runReport(t, plain, req)
	if want.Passed {
		t.Fatalf("the engine without the memo passed the recheck: the test shows nothing")
	}
	sameReport(t, "recheck of S onto c002", got, want)
}

// TestWhereReadingOtherRowsKeepsTheCheckFull: a table-scope row count is
// incremental (the batch's rows plus the unchanged files' counts kept in
// the statistics), unless its where condition reads other rows or the
// clock: the unchanged files' counts would then be stale. For each such
// condition, a suite of that one check, attested on the target, audits
// fully. Before the fix the first four were incremental (the volatile
// pattern caught only now(), current_*, select and the like).
func TestWhereReadingOtherRowsKeepsTheCheckFull(t *testing.T) {
	plainWhere := "id % 2 = 0 AND lower(CAST(id AS VARCHAR)) <> 'x'"
	for _, w := range append([]string{plainWhere}, otherRowsWheres...) {
		t.Run("", func(t *testing.T) {
			lake := newLakeSim(t)
			c0, c1 := cid("c000"), cid("c001")
			lake.commit(c0, nil, nil)
			lake.write(t, c0, "data/t/e.parquet", idsSQL("1000", "2000"))
			suite := Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: []Check{
				{Name: "rows", Kind: KindRowCount, Table: "t", Min: f64(0), Where: w},
			}}
			e, _ := whereEngines(t, lake, false)
			// c001: an attested publish of s0 with the suite.
			s0 := cid("s0")
			lake.branch(t, c0, s0)
			lake.commit(s0, []string{c0}, nil)
			lake.write(t, s0, "data/t/s0/part-0.parquet", idsSQL("3000"))
			rep := runReport(t, e, Request{Dataset: "d", Suite: suite, Repository: "r", Ref: s0, BaseRef: c0, BatchTime: batchTime, Full: true})
			if !rep.Passed {
				t.Fatalf("audit of s0: %+v", rep.Checks)
			}
			lake.mergeDirs(t, c0, s0, c0, c1)
			text, err := NewAttestation("d", suite, rep, s0, c0).Encode(nil)
			if err != nil {
				t.Fatal(err)
			}
			lake.commit(c1, []string{c0, s0}, map[string]string{MetaAttestation: text})
			s1 := cid("s1")
			lake.branch(t, c1, s1)
			lake.commit(s1, []string{c1}, nil)
			lake.write(t, s1, "data/t/s1/part-0.parquet", idsSQL("4000"))
			rep = runReport(t, e, Request{Dataset: "d", Suite: suite, Repository: "r", Ref: s1, BaseRef: c1, BatchTime: batchTime})
			want := ModeFull
			if w == plainWhere {
				want = ModeIncremental
			}
			if rep.Mode != want {
				t.Fatalf("where %q: mode %s (%s), want %s", w, rep.Mode, rep.ModeReason, want)
			}
		})
	}
}

// TestRowOnlyWhere: which where conditions rowOnly takes as reading only
// the row they are evaluated on, the same every time. The first ones of
// the refused list were memoized before the fix (the memo's pattern saw
// no SELECT, FROM or volatile function in them).
func TestRowOnlyWhere(t *testing.T) {
	e, err := New(Options{Source: newLakeSim(t), WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	refused := append(slices.Clone(otherRowsWheres),
		"now() > TIMESTAMP '2000-01-01'",
		"current_timestamp > TIMESTAMP '2000-01-01'",
		"CURRENT_TIME > TIME '00:00:00'",
		"get_current_timestamp() > TIMESTAMP '2000-01-01'",
		"today() > DATE '2000-01-01'",
		"region = user",
		"random() < 0.5",
		"uuid() IS NOT NULL",
		"id IN (SELECT 1)",
		"EXISTS (FROM main.t)",
		"id = (TABLE main.t LIMIT 1)",
		"getvariable('x') = 1",
		"current_setting('TimeZone') = 'UTC'",
		"id > $1",
		"id > ?",
		"true) GROUP BY (id",
		"true) HAVING (count(*) > 1",
		"true) UNION ALL SELECT 2 WHERE (true",
		"true) ORDER BY (1",
		"id IN (1, 2) OR count(*) OVER () > 1",
		"lakewap_unknown_function(id)",
		"system.main.lower(region) = 'a'",
		"this is not sql",
	)
	for _, w := range refused {
		if e.rowOnly(ctx, w) {
			t.Errorf("rowOnly(%q) = true", w)
		}
	}
	for _, w := range []string{
		"",
		"id > 3",
		"region = 'a' AND id % 7 = 0",
		"lower(CAST(id AS VARCHAR)) <> 'x' OR id IS NULL",
		"list_filter([1, 2], x -> x > 1) = [2]",
		"CASE WHEN id > 1 THEN 'a' ELSE 'b' END = 'a'",
		"CAST(amount AS DECIMAL(10, 2)) BETWEEN 1 AND 2",
		"region COLLATE NOCASE = 'A'",
		"strftime(ts, '%Y') = '2026' AND ts > TIMESTAMP '2026-01-01'",
		"date_diff('day', ts, TIMESTAMP '2026-12-01') < 7",
		"coalesce(region, 'x') IN ('a', 'b')",
	} {
		if !e.rowOnly(ctx, w) {
			t.Errorf("rowOnly(%q) = false", w)
		}
	}
}

// TestRowOnlyFunctionsAgreeWithDuckDB: every function rowOnly accepts
// (scalarFunctions but timeFunctions) that DuckDB lists is CONSISTENT
// (the same answer for the same arguments) or a macro of such functions,
// in every overload (a table function of the same name aside: a
// condition cannot call it); the functions of timeFunctions DuckDB lists are not,
// but for age (CONSISTENT to DuckDB; one argument counts from now).
func TestRowOnlyFunctionsAgreeWithDuckDB(t *testing.T) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT function_name, function_type, coalesce(stability, '') FROM duckdb_functions() WHERE list_contains($1, function_name)",
		slices.Sorted(maps.Keys(scalarFunctions)))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var name, typ, stability string
		if err := rows.Scan(&name, &typ, &stability); err != nil {
			t.Fatal(err)
		}
		seen++
		switch {
		case timeFunctions[name] && name != "age" && stability == "CONSISTENT":
			t.Errorf("%s is in timeFunctions, but DuckDB marks it %s", name, stability)
		case timeFunctions[name]:
		case stability == "CONSISTENT", stability == "" && strings.HasSuffix(typ, "macro"):
		case stability == "" && typ == "table":
			// A table function of the same name (repeat): an expression
			// calls the scalar one.
		default:
			t.Errorf("rowOnly accepts %s (%s), which DuckDB marks %q", name, typ, stability)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if seen < 200 {
		t.Fatalf("DuckDB lists %d overloads of scalarFunctions: the test shows little", seen)
	}
}
