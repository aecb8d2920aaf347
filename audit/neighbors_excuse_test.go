package audit

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// The excuse of a check failing on the target already (excused) must not
// let a change add failing rows of its own. Each case is judged twice: as
// a customers batch's neighbor check (the runner) and by the pre-merge hook
// on a merge of b1 into main (orders' own checks, a person's merge).
func TestExcuseDoesNotHideNewFailingRows(t *testing.T) {
	orphans := Check{Name: "orders_have_customers", Kind: KindCrossTable, SQL: "SELECT o.* FROM orders o ANTI JOIN customers c USING (customer_id)"}
	for _, tc := range []struct {
		name  string
		check Check
		src   func(t *testing.T) *dirSource
	}{{
		// Main has one orphan (order 100 of customer 999). b1 adds
		// customer 999 and drops customer 5, orphaning order 200: one
		// orphan before and one after, another row.
		name: "swap of the failing row", check: orphans,
		src: func(t *testing.T) *dirSource {
			src := shopSource(t)
			src.write(t, "main", "gold/customers/c.parquet", "SELECT i::INTEGER AS customer_id, 'c' || i AS name FROM range(0, 6) r(i)")
			for _, ref := range []string{"main", "b1"} {
				src.write(t, ref, "gold/orders/o999.parquet", "SELECT 100::INTEGER AS order_id, 999::INTEGER AS customer_id")
				src.write(t, ref, "gold/orders/o200.parquet", "SELECT 200::INTEGER AS order_id, 5::INTEGER AS customer_id")
			}
			src.write(t, "b1", "gold/customers/c2.parquet",
				"SELECT i::INTEGER AS customer_id, 'c' || i AS name FROM range(0, 5) r(i) UNION ALL SELECT 999, 'c999'")
			return src
		},
	}, {
		// Main has one customer without a name (50); b1 names 50 and adds
		// 60 without one: one failing row before and after, another row.
		name:  "swap of a row-level kind's failing row",
		check: Check{Name: "customer_names", Kind: KindNotNull, Table: "customers", Column: "name"},
		src: func(t *testing.T) *dirSource {
			src := shopSource(t)
			src.write(t, "main", "gold/customers/cnull.parquet", "SELECT 50::INTEGER AS customer_id, NULL::VARCHAR AS name")
			src.write(t, "b1", "gold/customers/c2.parquet",
				"SELECT i::INTEGER AS customer_id, 'c' || i AS name FROM range(0, 5) r(i) UNION ALL SELECT 50, 'c50' UNION ALL SELECT 60, NULL")
			return src
		},
	}, {
		// Main has one customer without an id, named by 300 x's and an
		// a; b1 drops it and adds another without an id, named by the
		// same x's and a b. A sample row's values are clipped to
		// audit.max_sample_value_bytes (256): both rows read alike there.
		name:  "swap of a failing row for one its clipped sample reads alike",
		check: Check{Name: "customer_ids", Kind: KindNotNull, Table: "customers", Column: "customer_id"},
		src: func(t *testing.T) *dirSource {
			src := shopSource(t)
			src.write(t, "main", "gold/customers/cnull.parquet", "SELECT NULL::INTEGER AS customer_id, repeat('x', 300) || 'a' AS name")
			src.write(t, "b1", "gold/customers/c2.parquet",
				"SELECT i::INTEGER AS customer_id, 'c' || i AS name FROM range(0, 5) r(i) UNION ALL SELECT NULL, repeat('x', 300) || 'b'")
			return src
		},
	}, {
		// Main holds one order over orders' bound of ten rows; b1 adds a
		// thousand. row_count has no failing rows to count.
		name:  "row_count over its bound by far more",
		check: Check{Name: "orders_bounded", Kind: KindRowCount, Table: "orders", Max: f64(10)},
		src: func(t *testing.T) *dirSource {
			src := shopSource(t)
			for _, ref := range []string{"main", "b1"} {
				src.write(t, ref, "gold/orders/o999.parquet", "SELECT 100::INTEGER AS order_id, 0::INTEGER AS customer_id")
			}
			src.write(t, "b1", "gold/customers/c2.parquet", "SELECT i::INTEGER AS customer_id, 'c' || i AS name FROM range(0, 5) r(i)")
			src.write(t, "b1", "gold/orders/big.parquet", "SELECT (1000 + i)::INTEGER AS order_id, 0::INTEGER AS customer_id FROM range(0, 1000) r(i)")
			return src
		},
	}, {
		// Orders' check cannot run on main (customer ids there are
		// lists); with b1 it runs and finds two orphans. An error at the
		// base says nothing of which rows fail there.
		name: "error on the target, failing rows with the change", check: orphans,
		src: func(t *testing.T) *dirSource {
			src := shopSource(t) // b1: customers 0..3, orphaning orders 4 and 9
			src.write(t, "main", "gold/customers/c.parquet", "SELECT [i::INTEGER] AS customer_id, 'c' || i AS name FROM range(0, 5) r(i)")
			return src
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.check.Kind == KindCrossTable || tc.check.Table == "customers" {
				rep := auditShopBatch(t, tc.src(t), tc.check)
				if got := statusOf(rep, neighborName(tc.check.Name, "orders")); rep.Passed || got != schemas.StatusFail {
					t.Errorf("runner: passed %v, orders' check %q; want held back (%+v)", rep.Passed, got, rep.Checks)
				}
			}
			tables := []Table{{Name: "orders", Path: "gold/orders/"}, {Name: "customers", Path: "gold/customers/"}}
			switch {
			case tc.check.Table == "customers":
				tables = tables[1:]
			case tc.check.Kind != KindCrossTable:
				tables = tables[:1] // a suite reading no customers (b1 changes them)
			}
			orders := Guard{Dataset: "orders", Suite: Suite{Tables: tables, Checks: []Check{tc.check}}}
			h, err := NewPreMergeHandler(PreMergeOptions{Guards: guardMap{"repo/main": {orders}}, Runner: newEngine(t, tc.src(t), "")})
			if err != nil {
				t.Fatal(err)
			}
			status, ans := postHook(t, h, hookEvent("b1", nil))
			if status != http.StatusPreconditionFailed {
				t.Errorf("hook: status %d, answer %+v; want 412", status, ans)
			}
		})
	}
}

// What the excuse still lets through: a change that leaves a check's
// failing rows as they were on the target, judged by sample rows (a
// row-level kind, audited incrementally by the hook) and by observed value
// (a count-less kind), is not held back for them.
func TestExcuseKeepsChangesThatAddNoFailingRow(t *testing.T) {
	named := Check{Name: "customer_names", Kind: KindNotNull, Table: "customers", Column: "name"}
	bounded := Check{Name: "customers_bounded", Kind: KindRowCount, Table: "customers", Max: f64(3)}
	mk := func(t *testing.T) *dirSource {
		src := shopSource(t) // b1 rewrites customers; with 50 and 51, seven rows on main and b1
		for _, ref := range []string{"main", "b1"} {
			src.write(t, ref, "gold/customers/cnull.parquet", "SELECT 50::INTEGER AS customer_id, NULL::VARCHAR AS name UNION ALL SELECT 51, 'c1'")
		}
		src.write(t, "b1", "gold/customers/c2.parquet", "SELECT i::INTEGER AS customer_id, 'c' || i AS name FROM range(0, 5) r(i)")
		return src
	}
	dup := Check{Name: "customer_names_once", Kind: KindUnique, Table: "customers", Column: "name"}
	ranged := Check{Name: "customer_ids_small", Kind: KindRange, Table: "customers", Column: "customer_id", Max: f64(10)}
	for _, c := range []Check{named, bounded, dup, ranged} {
		t.Run(c.Name, func(t *testing.T) {
			rep := auditShopBatch(t, mk(t), c)
			if got := statusOf(rep, neighborName(c.Name, "orders")); !rep.Passed || got != schemas.StatusWarn {
				t.Errorf("runner: passed %v, orders' check %q; want warn (%+v)", rep.Passed, got, rep.Checks)
			}
			guard := Guard{Dataset: "orders", Suite: Suite{Tables: []Table{{Name: "customers", Path: "gold/customers/"}}, Checks: []Check{c}}}
			h, err := NewPreMergeHandler(PreMergeOptions{Guards: guardMap{"repo/main": {guard}}, Runner: newEngine(t, mk(t), "")})
			if err != nil {
				t.Fatal(err)
			}
			if status, ans := postHook(t, h, hookEvent("b1", nil)); status != http.StatusOK {
				t.Errorf("hook: status %d, answer %+v; want 200", status, ans)
			}
		})
	}
}

// A check that cannot run on the target (one file of orders there holds
// customer ids as lists) cannot run with a change either while that file
// stays: nothing judges the change's rows. A person's merge adding orders
// of no customer (NULL ids) beside it was excused as "failing on main
// already" and allowed. A check of no table of its own (cross_table) that
// cannot run at the base nor with the change is still excused: on a new
// target a neighbor's join of a table with no file yet cannot run
// (TestNeighborAlreadyFailingWithTheHook's first customers batch).
func TestCheckErringOnTheTargetExcusesNoChangeOfItsTable(t *testing.T) {
	customer := Check{Name: "order_customers", Kind: KindNotNull, Table: "orders", Column: "customer_id"}
	src := shopSource(t)
	for _, ref := range []string{"main", "b1"} {
		src.write(t, ref, "gold/orders/obad.parquet", "SELECT 300::INTEGER AS order_id, [1]::INTEGER[] AS customer_id")
	}
	src.write(t, "b1", "gold/orders/onull.parquet", "SELECT (400 + i)::INTEGER AS order_id, NULL::INTEGER AS customer_id FROM range(0, 100) r(i)")
	src.write(t, "b1", "gold/customers/c2.parquet", "SELECT i::INTEGER AS customer_id, 'c' || i AS name FROM range(0, 5) r(i)")
	orders := Guard{Dataset: "orders", Suite: Suite{Tables: []Table{{Name: "orders", Path: "gold/orders/"}}, Checks: []Check{customer}}}
	h, err := NewPreMergeHandler(PreMergeOptions{Guards: guardMap{"repo/main": {orders}}, Runner: newEngine(t, src, "")})
	if err != nil {
		t.Fatal(err)
	}
	if status, ans := postHook(t, h, hookEvent("b1", nil)); status != http.StatusPreconditionFailed {
		t.Errorf("status %d, answer %+v; want 412", status, ans)
	}
}

// Beyond audit.sample_rows failing rows on the target, the samples are not
// all of them and cannot show a swap. For a check that judges each row by
// its own values (not_null here), a row failing with a change and not
// before is a row of a file the change adds or rewrites: the check is run
// on those files alone, and a failing row there is not excused. Main has
// six customers without a name (the engine samples five); b1 names one and
// adds another without one: six before and after.
func TestExcuseBeyondTheSamplesJudgesTheChangesFiles(t *testing.T) {
	named := Check{Name: "customer_names", Kind: KindNotNull, Table: "customers", Column: "name"}
	mk := func(t *testing.T, swap bool) *dirSource {
		src := shopSource(t)
		for _, ref := range []string{"main", "b1"} {
			src.write(t, ref, "gold/customers/cnull.parquet", "SELECT (50 + i)::INTEGER AS customer_id, NULL::VARCHAR AS name FROM range(0, 6) r(i)")
		}
		src.write(t, "b1", "gold/customers/c2.parquet", "SELECT i::INTEGER AS customer_id, 'c' || i AS name FROM range(0, 5) r(i)")
		if swap {
			src.write(t, "b1", "gold/customers/cnull.parquet",
				"SELECT (50 + i)::INTEGER AS customer_id, CASE WHEN i = 0 THEN 'c50' END AS name FROM range(0, 6) r(i) UNION ALL SELECT 60, NULL")
		}
		return src
	}
	for _, tc := range []struct {
		name     string
		swap     bool
		wantRun  string
		wantHook int
	}{{"a swap", true, schemas.StatusFail, http.StatusPreconditionFailed}, {"no failing row of its own", false, schemas.StatusWarn, http.StatusOK}} {
		t.Run(tc.name, func(t *testing.T) {
			rep := auditShopBatch(t, mk(t, tc.swap), named)
			if got := statusOf(rep, neighborName(named.Name, "orders")); rep.Passed != (tc.wantRun == schemas.StatusWarn) || got != tc.wantRun {
				t.Errorf("runner: passed %v, orders' check %q; want %q (%+v)", rep.Passed, got, tc.wantRun, rep.Checks)
			}
			guard := Guard{Dataset: "orders", Suite: Suite{Tables: []Table{{Name: "customers", Path: "gold/customers/"}}, Checks: []Check{named}}}
			h, err := NewPreMergeHandler(PreMergeOptions{Guards: guardMap{"repo/main": {guard}}, Runner: newEngine(t, mk(t, tc.swap), "")})
			if err != nil {
				t.Fatal(err)
			}
			if status, ans := postHook(t, h, hookEvent("b1", nil)); status != tc.wantHook {
				t.Errorf("hook: status %d, answer %+v; want %d", status, ans, tc.wantHook)
			}
		})
	}
}

// The run of a check on the change's files alone (ownRowsFail) goes
// through the hook's Runner, lakewap's Service, whose cache keeps passing
// reports by commit, base and batch time, not by suite. Its one-check
// report must not answer the audit of the whole suite at the same commit:
// a retried hook call for a merge that fails another check would be
// allowed.
func TestOwnRowsRunDoesNotAnswerTheSuitesAudit(t *testing.T) {
	s, _ := neighborService(t, map[string]map[string]string{"orders@" + sealedRef: {"orders_have_customers": schemas.StatusFail}})
	suite := shopDatasets()["orders"].Suite
	req := Request{Dataset: "orders", Suite: suite, Repository: "lake", Ref: sealedRef, BaseRef: baseRef, BatchTime: time.Unix(1, 0)}
	six := int64(6)
	after := schemas.CheckResult{Name: "customer_names", Status: schemas.StatusFail, Failures: &six, SampleRows: []string{"a", "b", "c", "d", "e"}}
	before := schemas.CheckResult{Name: "customer_names", Status: schemas.StatusFail, Failures: &six, SampleRows: []string{"a", "b", "c", "d", "f"}}
	if why, err := ownRowsFail(context.Background(), s, req, suite, after, before, baseRef); err != nil || why != "" {
		t.Fatalf("own rows: %q, %v; want none failing (the scripted run passes)", why, err)
	}
	rep, err := s.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Passed || statusOf(rep, "orders_have_customers") != schemas.StatusFail {
		t.Errorf("the suite's audit after the own-rows run: passed %v (%+v); want orders_have_customers failing", rep.Passed, rep.Checks)
	}
}
