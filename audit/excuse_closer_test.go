package audit

import (
	"net/http"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// A person's merge that lowers a row_count overrun without clearing it
// makes main better and breaks nothing. Main has 21 orders over orders'
// max of 10 (o.parquet's ten and eleven more); b1 deletes five of the
// eleven: 16 rows, still over, but nearer. Before, a count-less check was
// excused only when it observed exactly what it did on main, so the hook
// refused the merge with 412.
func TestExcuseLetsAMergeCloserToPassingThrough(t *testing.T) {
	bounded := Check{Name: "orders_bounded", Kind: KindRowCount, Table: "orders", Max: f64(10)}
	src := shopSource(t)
	src.write(t, "main", "gold/orders/more.parquet", "SELECT (100 + i)::INTEGER AS order_id, 0::INTEGER AS customer_id FROM range(0, 11) r(i)")
	src.write(t, "b1", "gold/orders/more.parquet", "SELECT (100 + i)::INTEGER AS order_id, 0::INTEGER AS customer_id FROM range(0, 6) r(i)")
	src.write(t, "b1", "gold/customers/c2.parquet", "SELECT i::INTEGER AS customer_id, 'c' || i AS name FROM range(0, 5) r(i)")
	guard := Guard{Dataset: "orders", Suite: Suite{Tables: []Table{{Name: "orders", Path: "gold/orders/"}}, Checks: []Check{bounded}}}
	h, err := NewPreMergeHandler(PreMergeOptions{Guards: guardMap{"repo/main": {guard}}, Runner: newEngine(t, src, "")})
	if err != nil {
		t.Fatal(err)
	}
	status, ans := postHook(t, h, hookEvent("b1", nil))
	if status != http.StatusOK {
		t.Fatalf("hook: status %d, answer %+v; want 200", status, ans)
	}
	for _, c := range ans.Verdicts[0].Checks {
		if c.Name == bounded.Name && c.Status != schemas.StatusWarn {
			t.Errorf("%s: %q; want warn (%+v)", c.Name, c.Status, c)
		}
	}
}

// The runner judges another dataset's check alike: orders' row_count of
// customers (max 2) sees five customers on main and four with b1 (a
// customers batch replacing c.parquet's five by four): nearer, so warn.
func TestExcuseLetsABatchCloserToPassingThrough(t *testing.T) {
	bounded := Check{Name: "customers_bounded", Kind: KindRowCount, Table: "customers", Max: f64(2)}
	rep := auditShopBatch(t, shopSource(t), bounded)
	if got := statusOf(rep, neighborName(bounded.Name, "orders")); !rep.Passed || got != schemas.StatusWarn {
		t.Errorf("runner: passed %v, orders' check %q; want warn (%+v)", rep.Passed, got, rep.Checks)
	}
}

// worse judges a count-less check's observed values against its bounds:
// nearer or as near is excused, farther is not, and a kind where nearness
// is not defined keeps the exact rule.
func TestWorseByDistanceToTheBound(t *testing.T) {
	res := func(kind, observed string) schemas.CheckResult {
		return schemas.CheckResult{Name: "c", Kind: kind, Status: schemas.StatusFail, Observed: observed}
	}
	rows := Check{Name: "c", Kind: KindRowCount, Min: f64(100), Max: f64(1000)}
	stat := Check{Name: "c", Kind: KindStat, Stat: "max", Column: "x", Max: f64(5)}
	fresh := Check{Name: "c", Kind: KindFreshness, Column: "at", MaxAge: "1h"}
	vol := Check{Name: "c", Kind: KindVolumeChange, MaxDropPct: f64(10), MaxGrowthPct: f64(50)}
	schema := Check{Name: "c", Kind: KindSchema}
	for _, tc := range []struct {
		name          string
		check         Check
		before, after string
		wantExcused   bool
	}{
		{"row_count over max, nearer", rows, "1011 rows", "1006 rows", true},
		{"row_count over max, same", rows, "1011 rows", "1011 rows", true},
		{"row_count over max, farther", rows, "1001 rows", "2001 rows", false},
		{"row_count under min, nearer", rows, "10 rows", "50 rows", true},
		{"row_count over max to under min, farther", rows, "1001 rows", "10 rows", false},
		{"stat over max, nearer: its rows may be new ones beyond the bound", stat, "max 9.5 of 10 rows", "max 7 of 10 rows", false},
		{"stat over max, farther", stat, "max 7 of 10 rows", "max 9.5 of 10 rows", false},
		{"stat without values after", stat, "max 7 of 10 rows", "no x values in 0 rows", false},
		{"freshness, nearer", fresh, "newest 2026-01-01T00:00:00Z, 5h0m0s before batch time", "newest 2026-01-01T03:00:00Z, 2h0m0s before batch time", true},
		{"freshness, farther", fresh, "newest 2026-01-01T03:00:00Z, 2h0m0s before batch time", "newest 2026-01-01T00:00:00Z, 5h0m0s before batch time", false},
		{"volume_change drop, nearer", vol, "50 rows vs 100 on main (-50.0%)", "80 rows vs 100 on main (-20.0%)", true},
		{"volume_change drop, farther", vol, "80 rows vs 100 on main (-20.0%)", "50 rows vs 100 on main (-50.0%)", false},
		{"volume_change growth, farther", vol, "160 rows vs 100 on main (+60.0%)", "170 rows vs 100 on main (+70.0%)", false},
		{"schema, another value", schema, "missing a", "missing b", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			suite := Suite{Checks: []Check{tc.check}}
			w := worse(res(tc.check.Kind, tc.after), res(tc.check.Kind, tc.before), true, suite)
			if (w == "") != tc.wantExcused {
				t.Errorf("worse = %q; want excused %v", w, tc.wantExcused)
			}
		})
	}
}
