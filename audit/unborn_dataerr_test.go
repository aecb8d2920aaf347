package audit

import (
	"net/http"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// A custom query erring at the base and with a change of a table it reads
// is not excused, except while a table it names has no file anywhere (a
// new target: the query cannot bind). That exception held for any error:
// with customers unborn, an orders query that could not read main's
// orders ('x' where it casts a note to a number) excused a merge adding
// orders that fail it (an orphan with a negative note), though the error
// is the data's, not the missing table's.
func TestUnbornTableExcusesNoDataError(t *testing.T) {
	check := Check{Name: "orphans", Kind: KindCrossTable,
		SQL: "SELECT o.* FROM orders o ANTI JOIN customers c USING (customer_id) WHERE CAST(o.note AS INTEGER) < 0"}
	orders := Guard{Dataset: "orders", Suite: Suite{Tables: []Table{{Name: "orders", Path: "gold/orders/"}, {Name: "customers", Path: "gold/customers/"}},
		Checks: []Check{check, {Name: "customer_ids", Kind: KindUnique, Table: "customers", Column: "customer_id"}}}}
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, src *dirSource)
	}{{
		// Main's 'x' stays: the query errs on it with the change too.
		"adds orphans", func(t *testing.T, src *dirSource) {
			src.write(t, "b1", "gold/orders/o2.parquet", "SELECT (100 + i)::INTEGER AS order_id, 999 AS customer_id, '-5' AS note FROM range(0, 3) r(i)")
		},
	}, {
		// The change rewrites orders without the column: the query cannot
		// bind with it (customers still has no file), where it could at
		// main and erred on the data.
		"drops the column", func(t *testing.T, src *dirSource) {
			src.remove(t, "b1", "gold/orders/o.parquet")
			src.write(t, "b1", "gold/orders/o3.parquet", "SELECT (100 + i)::INTEGER AS order_id, 999 AS customer_id FROM range(0, 3) r(i)")
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			src := newDirSource(t)
			src.write(t, "main", "gold/orders/o.parquet", "SELECT i::INTEGER AS order_id, i::INTEGER AS customer_id, CASE WHEN i = 0 THEN 'x' ELSE i::VARCHAR END AS note FROM range(0, 5) r(i)")
			src.branch(t, "main", "b1")
			tc.change(t, src)
			h, err := NewPreMergeHandler(PreMergeOptions{Guards: guardMap{"repo/main": {orders}}, Runner: newEngine(t, src, "")})
			if err != nil {
				t.Fatal(err)
			}
			status, ans := postHook(t, h, hookEvent("b1", nil))
			var got CheckVerdict
			if len(ans.Verdicts) == 1 {
				for _, r := range ans.Verdicts[0].Checks {
					if r.Name == check.Name {
						got = r
					}
				}
			}
			if status != http.StatusPreconditionFailed || got.Status != schemas.StatusError {
				t.Errorf("hook: status %d, check %q; want 412 with the check erring", status, got.Status)
			}
		})
	}
}
