package audit

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// A run takes the catalog an earlier run emptied, on its connection,
// instead of attaching and tearing down its own: the second first audit on
// an engine runs no ATTACH, CREATE SCHEMA or USE, and gives the report the
// first run's engine gives it alone. The catalog goes back to the pool
// holding none of the run's views. (Before, every run that opened DuckDB
// attached its catalog, made two schemas, and detached it at its end.)
func TestRunCatalogsAreReused(t *testing.T) {
	r := newFuseRig(t)
	first, _, _ := r.audit(r.batch("b1", demoRows(200)))
	if !first.Passed {
		t.Fatalf("first batch: %+v", first.Failed())
	}
	rep, fused, single := r.audit(r.batch("b2", demoRows(300)))
	if !rep.Passed {
		t.Fatalf("second batch: %+v", rep.Failed())
	}
	setup := func(stmts []string) []string {
		return slices.DeleteFunc(slices.Clone(stmts), func(q string) bool {
			return !strings.HasPrefix(q, "ATTACH") && !strings.HasPrefix(q, "CREATE SCHEMA") && !strings.HasPrefix(q, "USE")
		})
	}
	for name, stmts := range map[string][]string{"fused": fused, "unfused": single} {
		if len(stmts) == 0 {
			t.Errorf("%s engine: the second audit ran no statement", name)
		}
		if s := setup(stmts); len(s) > 0 {
			t.Errorf("%s engine: the second audit set up a catalog again: %q", name, s)
		}
	}
	// The kept catalogs hold no view of the runs that used them.
	for _, e := range []*Engine{r.fused, r.single} {
		pc, ok := e.currentDuck().catalogs.take()
		if !ok {
			t.Fatal("no catalog kept for the next run")
		}
		var n int
		if err := pc.conn.QueryRowContext(context.Background(),
			"SELECT count(*) FROM duckdb_views() WHERE database_name = $1 AND NOT internal", pc.name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("catalog %s kept with %d views", pc.name, n)
		}
		e.currentDuck().catalogs.put(pc)
	}
}

// A run whose custom SQL check over the batch set the connection's search path tears its
// catalog down instead of keeping it: a kept catalog is as runSQL made it.
func TestRunCatalogWithAChangedSearchPathIsNotKept(t *testing.T) {
	e := newEngine(t, fixture(t), "")
	rep := audit(t, e, "b1", Check{Name: "custom", Kind: KindSQL, Table: "billing", Scope: ScopeBatch, SQL: "SELECT * FROM billing WHERE id IS NULL"})
	if len(rep.Checks) == 0 || rep.Checks[0].Status == "error" {
		t.Fatalf("custom check: %+v", rep.Checks)
	}
	if pc, ok := e.currentDuck().catalogs.take(); ok {
		t.Errorf("catalog %s kept after a custom SQL check", pc.name)
	}
	audit(t, e, "b1", Check{Name: "rows", Kind: KindRowCount, Table: "billing", Min: f64(1)})
	if _, ok := e.currentDuck().catalogs.take(); !ok {
		t.Error("the catalog of a run without custom SQL was not kept")
	}
}

// A run whose context ends while its fresh catalog is being made (between
// ATTACH and USE) must not put that half-made catalog in the pool: the
// next run that took it would create its views in the shared "memory"
// catalog (its connection was never switched to its catalog), where every
// other such run's views are too. Before, emptyCatalog found no view to
// drop and the catalog went back to the pool as if runSQL had made it.
func TestRunCatalogWhoseSetupWasInterruptedIsNotKept(t *testing.T) {
	e := newEngine(t, fixture(t), "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.onStatement = func(q string) {
		if strings.HasPrefix(q, "USE ") {
			cancel() // the run's context ends before its catalog is made current
		}
	}
	_, err := e.Run(ctx, Request{Dataset: "billing", Repository: "repo", Ref: "b1", BaseRef: "main",
		BatchTime: batchTime, Suite: Suite{Tables: tables, Checks: []Check{{Name: "rows", Kind: KindRowCount, Table: "billing", Min: f64(1)}}}})
	if err == nil {
		t.Fatal("the interrupted run returned no error")
	}
	e.onStatement = nil
	var kept []pooledCatalog
	for {
		pc, ok := e.currentDuck().catalogs.take()
		if !ok {
			break
		}
		kept = append(kept, pc)
		var current string
		var schemas int
		if err := pc.conn.QueryRowContext(context.Background(), "SELECT current_database()").Scan(&current); err != nil {
			t.Fatal(err)
		}
		if err := pc.conn.QueryRowContext(context.Background(),
			"SELECT count(*) FROM duckdb_schemas() WHERE database_name = $1 AND schema_name IN ('batch', 'base')", pc.name).Scan(&schemas); err != nil {
			t.Fatal(err)
		}
		if current != pc.name || schemas != 2 {
			t.Errorf("catalog %s kept half made: the connection's catalog is %q, %d of its 2 schemas exist", pc.name, current, schemas)
		}
	}
	for _, pc := range kept {
		e.currentDuck().catalogs.put(pc)
	}
	// The next run (which takes what was kept) audits the batch as an
	// engine of its own would.
	rep := audit(t, e, "b1", Check{Name: "rows", Kind: KindRowCount, Table: "billing", Min: f64(1)},
		Check{Name: "batch rows", Kind: KindRowCount, Table: "billing", Scope: ScopeBatch, Max: f64(0)})
	if !rep.Passed {
		t.Fatalf("the next run: %+v", rep.Checks)
	}
	noViewsInMemory(t, e)
}

// A run whose custom query DuckDB interrupted at its time bound keeps its
// catalog only if the connection still works: the next run, which takes it, audits as a fresh engine would, its
// views in its own catalog.
func TestRunCatalogAfterAnInterruptedQueryServesTheNextRun(t *testing.T) {
	e, err := New(Options{Source: fixture(t), WorkDir: t.TempDir(), Threads: 2, QueryTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	forever := Check{Name: "forever", Kind: KindCrossTable, SQL: "SELECT count(*) FROM range(1000000) a, range(1000000) b HAVING count(*) < 0"}
	req := func(checks ...Check) Request {
		return Request{Dataset: "billing", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
			Suite: Suite{Tables: tables, Checks: checks}}
	}
	rep, err := e.Run(context.Background(), req(forever))
	if err != nil || rep.Checks[0].Status != schemas.StatusError {
		t.Fatalf("the query at its time bound: %v %+v", err, rep.Checks)
	}
	if len(e.currentDuck().catalogs.ch) != 1 {
		t.Fatalf("%d catalogs kept after the interrupted query, want its run's", len(e.currentDuck().catalogs.ch))
	}
	for i := range 3 { // each takes a kept catalog, if any
		rep, err := e.Run(context.Background(), req(
			Check{Name: "ids", Kind: KindNotNull, Table: "billing", Column: "id"},
			Check{Name: "custom", Kind: KindSQL, Table: "billing", SQL: "SELECT * FROM billing WHERE id IS NULL"},
			Check{Name: "batch rows", Kind: KindRowCount, Table: "billing", Scope: ScopeBatch, Max: f64(0)}))
		if err != nil || !rep.Passed {
			t.Fatalf("run %d after the interrupted ones: %v %+v", i, err, rep.Checks)
		}
	}
	noViewsInMemory(t, e)
}

// noViewsInMemory fails t when a run's view is in DuckDB's shared memory
// catalog, outside every run catalog.
func noViewsInMemory(t *testing.T, e *Engine) {
	t.Helper()
	var n int
	if err := e.duckDB().QueryRowContext(context.Background(),
		"SELECT count(*) FROM duckdb_views() WHERE database_name = 'memory' AND NOT internal").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d views of runs in the shared memory catalog", n)
	}
}
