package audit

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// A CTE defined in an inner scope made the allow-list accept an outer
// reference of the same name, which DuckDB resolves as a file (another
// dataset's cached objects) or as a system view. A CTE name binds only
// where it is in scope now; scalar functions come from an allow-list.
func TestConfinedSQLEscapesAreRefused(t *testing.T) {
	src := fixture(t)
	cache := t.TempDir()
	e := newEngine(t, src, cache)
	// Fills the cache, read at a commit (a file read at a branch is not cached).
	main := cid("main")
	src.branch(t, "main", main)
	if _, err := e.Run(context.Background(), Request{Dataset: "billing", Repository: "repo", Ref: main, BaseRef: main, BatchTime: batchTime,
		Suite: Suite{Tables: tables, Checks: []Check{{Kind: KindRowCount, Table: "customers", Min: f64(1)}}}}); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(cache, "*.parquet"))
	if len(files) == 0 {
		t.Fatal("no cached file")
	}
	cached := strings.ReplaceAll(files[0], `"`, `""`)
	escapes := []Check{
		{Name: "cte shadows a cached file", Kind: KindCrossTable,
			SQL: `SELECT * FROM (WITH "` + cached + `" AS (SELECT 1 AS x) SELECT 1 AS y) s, "` + cached + `"`},
		{Name: "cte shadows a system view", Kind: KindCrossTable,
			SQL: "SELECT * FROM (WITH duckdb_tables AS (SELECT 1 AS x) SELECT 1 AS y) s, duckdb_tables"},
		{Name: "cte body names itself", Kind: KindCrossTable,
			SQL: "WITH duckdb_databases AS (SELECT * FROM duckdb_databases) SELECT * FROM duckdb_databases"},
		{Name: "cte names a later one", Kind: KindCrossTable,
			SQL: "WITH a AS (SELECT * FROM duckdb_views), duckdb_views AS (SELECT 1) SELECT * FROM a"},
		{Name: "in a where", Kind: KindNotNull, Table: "billing", Column: "id",
			Where: "id IN (SELECT 1 FROM (WITH duckdb_tables AS (SELECT 1) SELECT 1) s, duckdb_tables)"},
		{Name: "settings", Kind: KindSQL, Table: "billing", SQL: "SELECT current_setting('allowed_directories') AS d FROM billing"},
		{Name: "variables", Kind: KindSQL, Table: "billing", SQL: "SELECT getvariable('x') FROM billing"},
		{Name: "catalog function", Kind: KindNotNull, Table: "billing", Column: "id", Where: "current_database() <> ''"},
		{Name: "summarize", Kind: KindCrossTable, SQL: "SELECT * FROM (SUMMARIZE billing)"},
		{Name: "information schema", Kind: KindCrossTable, SQL: "SELECT * FROM information_schema.tables"},
	}
	rep := audit(t, e, "b1", escapes...)
	for _, c := range rep.Checks {
		if c.Status != schemas.StatusError || !strings.Contains(c.Message, "not a single read-only query") {
			t.Errorf("%s: %s %q %q, want an error saying it is not confined", c.Name, c.Status, c.Observed, c.Message)
		}
	}
	// What stays allowed: CTEs in scope (also recursive ones and those
	// named by later ones), common functions, the three schemas.
	rep = audit(t, e, "b1",
		Check{Name: "ctes", Kind: KindCrossTable, SQL: `WITH a AS (SELECT id FROM billing), b AS (SELECT * FROM a WHERE id > 0)
			SELECT * FROM b JOIN base.billing m USING (id) WHERE (SELECT count(*) FROM a) < 0`},
		Check{Name: "recursive", Kind: KindCrossTable, SQL: "WITH RECURSIVE r AS (SELECT 1 AS i UNION ALL SELECT i + 1 FROM r WHERE i < 3) SELECT * FROM r WHERE i > 3"},
		Check{Name: "functions", Kind: KindSQL, Table: "billing", SQL: `SELECT lower(status), date_trunc('day', updated_at), coalesce(amount, 0) + 1,
			row_number() OVER (ORDER BY id), regexp_matches(status, '^o') FROM billing WHERE length(status) > 100 OR status LIKE 'zz%'`},
		Check{Name: "where", Kind: KindNotNull, Table: "billing", Column: "id", Where: "upper(status) IN ('OPEN', 'PAID') AND amount >= abs(-1)"},
	)
	for _, c := range rep.Checks {
		if c.Status != schemas.StatusPass {
			t.Errorf("%s: %s %q %q, want pass", c.Name, c.Status, c.Observed, c.Message)
		}
	}
}

// A custom query that runs for ever errors at its time bound, and the
// checks after it still run.
func TestCustomQueryHasATimeBound(t *testing.T) {
	src := fixture(t)
	e, err := New(Options{Source: src, WorkDir: t.TempDir(), Threads: 2, QueryTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := e.Run(ctx, Request{Dataset: "billing", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
		Suite: Suite{Tables: tables, Checks: []Check{
			{Name: "forever", Kind: KindCrossTable, SQL: "SELECT count(*) FROM range(1000000) a, range(1000000) b HAVING count(*) < 0"},
			{Name: "after", Kind: KindNotNull, Table: "billing", Column: "id"},
		}}})
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Checks[0]; c.Status != schemas.StatusError || !strings.Contains(c.Message, "longer than its time bound of 300ms") {
		t.Errorf("forever: %s %q, want an error at its time bound", c.Status, c.Message)
	}
	if c := rep.Checks[1]; c.Status != schemas.StatusPass {
		t.Errorf("after: %s %q %q", c.Status, c.Observed, c.Message)
	}
}

// One row dated in the future made stale data pass freshness: its newest
// value was "fresh". Rows later than now plus the clock-skew allowance
// fail it.
func TestFreshnessFailsOnRowsFromTheFuture(t *testing.T) {
	src := newDirSource(t)
	src.write(t, "main", "gold/billing/a.parquet", `SELECT i::BIGINT AS id, TIMESTAMP '2020-01-01 00:00:00' AS updated_at FROM range(10) r(i)
		UNION ALL SELECT 99, TIMESTAMP '2100-01-01 00:00:00'`)
	e := newEngine(t, src, "")
	rep, err := e.Run(context.Background(), Request{Dataset: "billing", Repository: "repo", Ref: "main",
		Suite: Suite{Tables: tables, Checks: []Check{{Kind: KindFreshness, Table: "billing", Column: "updated_at", MaxAge: "1h"}}}})
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Checks[0]
	if c.Status != schemas.StatusFail || !strings.Contains(c.Observed, "newest 2100-01-01T00:00:00Z is") ||
		!strings.Contains(c.Observed, "beyond the clock-skew allowance of 5m0s") {
		t.Errorf("freshness: %s %q, want fail beyond the clock-skew allowance", c.Status, c.Observed)
	}
	// Within the allowance it is fresh.
	src = newDirSource(t)
	src.write(t, "main", "gold/billing/a.parquet", "SELECT 1::BIGINT AS id, now()::TIMESTAMP + INTERVAL 1 MINUTE AS updated_at")
	rep, err = newEngine(t, src, "").Run(context.Background(), Request{Dataset: "billing", Repository: "repo", Ref: "main",
		Suite: Suite{Tables: tables, Checks: []Check{{Kind: KindFreshness, Table: "billing", Column: "updated_at", MaxAge: "1h"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Checks[0]; c.Status != schemas.StatusPass {
		t.Errorf("a row one minute ahead: %s %q, want pass", c.Status, c.Observed)
	}
}
