package audit

import (
	"net/http"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// swapCheck is a check of orders' suite failing on main with more rows than
// the engine samples (newEngine: 3), and the customers of main and b1 for
// each way a change may leave it: a swap mends one failing row and makes
// another (as many failing rows as on main), a mend only mends one, a clean
// change adds customers that fail nothing.
type swapCheck struct {
	name  string
	check Check
	both  map[string]string // written on main and b1
	swap  map[string]string // written on b1
	mend  map[string]string
}

// clean adds ten customers that fail none of the checks.
var cleanCustomers = map[string]string{"gold/customers/c3.parquet": "SELECT (20 + i)::INTEGER AS customer_id, 'n' || i AS name FROM range(0, 10) r(i)"}

func swapChecks() []swapCheck {
	return []swapCheck{{
		// Five names held twice on main (c0..c4); the swap names c0 once
		// and gives two new customers one new name, x.
		name:  "unique",
		check: Check{Name: "customer_names_once", Kind: KindUnique, Table: "customers", Column: "name"},
		both:  map[string]string{"gold/customers/dup.parquet": "SELECT (10 + i)::INTEGER AS customer_id, 'c' || i AS name FROM range(0, 5) r(i)"},
		swap: map[string]string{"gold/customers/dup.parquet": "SELECT (10 + i)::INTEGER AS customer_id, 'c' || i AS name FROM range(1, 5) r(i) " +
			"UNION ALL SELECT 15, 'x' UNION ALL SELECT 16, 'x'"},
		mend: map[string]string{"gold/customers/dup.parquet": "SELECT (10 + i)::INTEGER AS customer_id, 'c' || i AS name FROM range(1, 5) r(i)"},
	}, {
		// Five customers named bad on main; the swap renames customer 30
		// and adds customer 35 named bad.
		name:  "sql",
		check: Check{Name: "no_bad_names", Kind: KindSQL, Table: "customers", SQL: "SELECT customer_id, name FROM customers WHERE name LIKE 'bad%'"},
		both:  map[string]string{"gold/customers/bad.parquet": "SELECT (30 + i)::INTEGER AS customer_id, 'bad' || i AS name FROM range(0, 5) r(i)"},
		swap: map[string]string{"gold/customers/bad.parquet": "SELECT (30 + i)::INTEGER AS customer_id, CASE WHEN i = 0 THEN 'good' ELSE 'bad' || i END AS name " +
			"FROM range(0, 5) r(i) UNION ALL SELECT 35, 'bad5'"},
		mend: map[string]string{"gold/customers/bad.parquet": "SELECT (30 + i)::INTEGER AS customer_id, CASE WHEN i = 0 THEN 'good' ELSE 'bad' || i END AS name " +
			"FROM range(0, 5) r(i)"},
	}, {
		// Five customers without a name on main, judged by a not_null
		// whose where reads a table (a query: not a check of each row's
		// own values); the swap names customer 40 and adds 45 without one.
		name: "where with a query",
		check: Check{Name: "customer_names", Kind: KindNotNull, Table: "customers", Column: "name",
			Where: "customer_id IN (SELECT customer_id FROM customers)"},
		both: map[string]string{"gold/customers/nulls.parquet": "SELECT (40 + i)::INTEGER AS customer_id, NULL::VARCHAR AS name FROM range(0, 5) r(i)"},
		swap: map[string]string{"gold/customers/nulls.parquet": "SELECT (40 + i)::INTEGER AS customer_id, CASE WHEN i = 0 THEN 'n40' END AS name " +
			"FROM range(0, 5) r(i) UNION ALL SELECT 45, NULL"},
		mend: map[string]string{"gold/customers/nulls.parquet": "SELECT (40 + i)::INTEGER AS customer_id, CASE WHEN i = 0 THEN 'n40' END AS name " +
			"FROM range(0, 5) r(i)"},
	}, {
		// Five orders of customers main lacks (100..104); the swap adds
		// customers 100 and 101 and drops customer 4, whose orders 4 and
		// 9 become orphans: five orphans again.
		name:  "cross_table",
		check: Check{Name: "orders_have_customers", Kind: KindCrossTable, SQL: "SELECT o.* FROM orders o ANTI JOIN customers c USING (customer_id)"},
		both:  map[string]string{"gold/orders/orphans.parquet": "SELECT (100 + i)::INTEGER AS order_id, (100 + i)::INTEGER AS customer_id FROM range(0, 5) r(i)"},
		swap: map[string]string{"gold/customers/c2.parquet": "SELECT i::INTEGER AS customer_id, 'c' || i AS name FROM range(0, 4) r(i) " +
			"UNION ALL SELECT 100, 'c100' UNION ALL SELECT 101, 'c101'"},
		mend: map[string]string{"gold/customers/c2.parquet": "SELECT i::INTEGER AS customer_id, 'c' || i AS name FROM range(0, 5) r(i) UNION ALL SELECT 100, 'c100'"},
	}}
}

// swapSource is shopSource with b1 a customers batch that rewrites
// customers 0..4 as they were (c.parquet removed, c2.parquet added), then
// sc's files of both refs and those of b1 (change).
func swapSource(t *testing.T, sc swapCheck, change map[string]string) *dirSource {
	t.Helper()
	src := shopSource(t)
	src.write(t, "b1", "gold/customers/c2.parquet", "SELECT i::INTEGER AS customer_id, 'c' || i AS name FROM range(0, 5) r(i)")
	for p, q := range sc.both {
		src.write(t, "main", p, q)
		src.write(t, "b1", p, q)
	}
	for p, q := range change {
		src.write(t, "b1", p, q)
	}
	return src
}

// judgeSwap judges b1 as the runner does (a customers batch, with orders'
// check as its neighbor's) and as the pre-merge hook does (a merge of b1
// into main guarded by orders' suite): the status of orders' check in the
// batch's report, whether the batch passed, the hook's HTTP status and its
// verdict of the check (which carries no message: the answer lands in
// lakeFS's action log).
func judgeSwap(t *testing.T, src func(*testing.T) *dirSource, c Check) (schemas.CheckResult, bool, int, CheckVerdict) {
	t.Helper()
	rep := auditShopBatch(t, src(t), c)
	var run schemas.CheckResult
	for _, r := range rep.Checks {
		if r.Name == neighborName(c.Name, "orders") {
			run = r
		}
	}
	orders := Guard{Dataset: "orders", Suite: Suite{Tables: []Table{{Name: "orders", Path: "gold/orders/"}, {Name: "customers", Path: "gold/customers/"}},
		Checks: []Check{c}}}
	h, err := NewPreMergeHandler(PreMergeOptions{Guards: guardMap{"repo/main": {orders}}, Runner: newEngine(t, src(t), "")})
	if err != nil {
		t.Fatal(err)
	}
	status, ans := postHook(t, h, hookEvent("b1", nil))
	var hook CheckVerdict
	if len(ans.Verdicts) == 1 {
		for _, r := range ans.Verdicts[0].Checks {
			if r.Name == c.Name {
				hook = r
			}
		}
	}
	return run, rep.Passed, status, hook
}

// Beyond audit.sample_rows failing rows on main, the excuse compared only
// the counts of failing rows of unique, sql and cross_table checks and of
// a check whose where holds a query: a change that mends one failing row
// and makes another keeps the count, and its new failing row reached main
// as "failing on main already" (the runner warned and published, the hook
// allowed the merge). The failing rows are compared as multisets with the
// base's: a row failing with the change and not on main is the change's.
func TestExcuseDoesNotHideASwapBeyondTheSamples(t *testing.T) {
	for _, sc := range swapChecks() {
		t.Run(sc.name, func(t *testing.T) {
			run, passed, status, hook := judgeSwap(t, func(t *testing.T) *dirSource { return swapSource(t, sc, sc.swap) }, sc.check)
			if passed || run.Status != schemas.StatusFail {
				t.Errorf("runner: passed %v, orders' check %q: %s; want held back", passed, run.Status, run.Message)
			}
			if status != http.StatusPreconditionFailed || hook.Status != schemas.StatusFail {
				t.Errorf("hook: status %d, check %q; want 412 with the check failing", status, hook.Status)
			}
			if !strings.Contains(run.Message, "do not fail there") {
				t.Errorf("runner's verdict %q does not say rows fail with the change that did not fail there", run.Message)
			}
		})
	}
}

// What the multiset comparison still excuses: a change that only mends
// failing rows, and one that adds rows failing nothing, beside main's
// failing rows (more than the samples hold).
func TestExcuseKeepsHonestChangesBeyondTheSamples(t *testing.T) {
	for _, sc := range swapChecks() {
		for _, ch := range []struct {
			name   string
			change map[string]string
		}{{"mend", sc.mend}, {"clean", cleanCustomers}} {
			t.Run(sc.name+"/"+ch.name, func(t *testing.T) {
				run, passed, status, hook := judgeSwap(t, func(t *testing.T) *dirSource { return swapSource(t, sc, ch.change) }, sc.check)
				if !passed || run.Status != schemas.StatusWarn {
					t.Errorf("runner: passed %v, orders' check %q: %s; want warn", passed, run.Status, run.Message)
				}
				if status != http.StatusOK || hook.Status != schemas.StatusWarn {
					t.Errorf("hook: status %d, check %q; want 200 with the check warn", status, hook.Status)
				}
			})
		}
	}
}

// A cross_table check that cannot run on main (customers' ids are text
// there, one of them x, which the join cannot read as orders' numbers)
// cannot run with a change that keeps it either: nothing judges the change's rows. A
// customers batch dropping customer 4 (orphaning orders 4 and 9), and a
// person's merge of it, were excused as "failing on main already".
func TestErringQueryExcusesNoChangeOfItsTables(t *testing.T) {
	orphans := Check{Name: "orders_have_customers", Kind: KindCrossTable, SQL: "SELECT o.* FROM orders o ANTI JOIN customers c USING (customer_id)"}
	src := func(t *testing.T) *dirSource {
		src := shopSource(t) // b1 drops customer 4
		src.write(t, "main", "gold/customers/c.parquet", "SELECT i::VARCHAR AS customer_id, 'c' || i AS name FROM range(0, 5) r(i) UNION ALL SELECT 'x', 'cx'")
		src.write(t, "b1", "gold/customers/c2.parquet", "SELECT i::VARCHAR AS customer_id, 'c' || i AS name FROM range(0, 4) r(i) UNION ALL SELECT 'x', 'cx'")
		return src
	}
	run, passed, status, hook := judgeSwap(t, src, orphans)
	if passed || run.Status != schemas.StatusError {
		t.Errorf("runner: passed %v, orders' check %q: %s; want held back", passed, run.Status, run.Message)
	}
	if status != http.StatusPreconditionFailed || hook.Status != schemas.StatusError {
		t.Errorf("hook: status %d, check %q; want 412 with the check erring", status, hook.Status)
	}
}

// On a new target a neighbor's query may read a table with no file yet:
// orders' cross_table check cannot run before orders publishes, and the
// first customers batch is not held back for it (nor is orders' first
// batch then: customers has files). The check judges no row of orders
// there: there is none.
func TestQueryOfATableWithNoFileYetIsExcused(t *testing.T) {
	orphans := Check{Name: "orders_have_customers", Kind: KindCrossTable, SQL: "SELECT o.* FROM orders o ANTI JOIN customers c USING (customer_id)"}
	src := func(t *testing.T) *dirSource {
		src := newDirSource(t)
		src.write(t, "main", "gold/customers/c.parquet", "SELECT i::INTEGER AS customer_id, 'c' || i AS name FROM range(0, 5) r(i)")
		src.branch(t, "main", "b1")
		src.remove(t, "b1", "gold/customers/c.parquet")
		src.write(t, "b1", "gold/customers/c2.parquet", "SELECT i::INTEGER AS customer_id, 'c' || i AS name FROM range(0, 6) r(i)")
		return src
	}
	run, passed, status, hook := judgeSwap(t, src, orphans)
	if !passed || run.Status != schemas.StatusWarn {
		t.Errorf("runner: passed %v, orders' check %q: %s; want warn", passed, run.Status, run.Message)
	}
	if status != http.StatusOK || hook.Status != schemas.StatusWarn {
		t.Errorf("hook: status %d, check %q; want 200 with the check warn", status, hook.Status)
	}
}

// Failing rows compare as multisets: a key held a third time fails once
// more. Main holds names c0..c4 twice (five extra rows); the change names
// c0 once and gives c1 a third row: five extra rows again, one of them new.
func TestExcuseCountsAKeyHeldOnceMore(t *testing.T) {
	sc := swapChecks()[0]
	third := map[string]string{"gold/customers/dup.parquet": "SELECT (10 + i)::INTEGER AS customer_id, 'c' || i AS name FROM range(1, 5) r(i) " +
		"UNION ALL SELECT 15, 'c1'"}
	run, passed, status, _ := judgeSwap(t, func(t *testing.T) *dirSource { return swapSource(t, sc, third) }, sc.check)
	if passed || run.Status != schemas.StatusFail || !strings.Contains(run.Message, `1 of its failing rows with this change do not fail there`) ||
		!strings.Contains(run.Message, `{"name":"c1"}`) {
		t.Errorf("runner: passed %v, orders' check %q: %s; want held back for one new failing row, c1", passed, run.Status, run.Message)
	}
	if status != http.StatusPreconditionFailed {
		t.Errorf("hook: status %d; want 412", status)
	}
}

// A query naming main.<table> or batch.<table> reads the change's tables
// in its run at the base too: its rows there would not be the base's, so
// they are not compared (the change is judged alone).
func TestFailingRowsOfAQueryNamingTheChangesSchema(t *testing.T) {
	for _, tc := range []struct {
		check Check
		want  string // in the query, or the error
	}{
		{Check{Kind: KindCrossTable, SQL: "SELECT * FROM main.orders o ANTI JOIN customers USING (customer_id)"}, "main.<table>"},
		{Check{Kind: KindNotNull, Table: "orders", Column: "customer_id", Where: "order_id IN (SELECT order_id FROM batch.orders)"}, "batch.<table>"},
		{Check{Kind: KindCrossTable, SQL: "SELECT * FROM orders;;"}, "SELECT * FROM orders\n"},
		{Check{Kind: KindUnique, Table: "orders", Columns: []string{"a", "b"}}, `SELECT "a", "b" FROM "orders" QUALIFY count(*) OVER (PARTITION BY "a", "b") > 1`},
		{Check{Kind: KindUnique, Table: "orders", Column: "a", Where: "a > 0"}, `SELECT "a" FROM (SELECT * FROM "orders" WHERE (` + "\na > 0\n" +
			`)) AS "orders" WHERE "a" IS NOT NULL QUALIFY`},
	} {
		q, err := failingRowsSQL(tc.check)
		got := q
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tc.want) && !strings.Contains(multisetSQL(q, tables), tc.want) {
			t.Errorf("%+v: %q; want it to hold %q", tc.check, got, tc.want)
		}
	}
}
