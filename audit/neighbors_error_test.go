package audit

import (
	"net/http"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// A check that fails on the target already excuses a change that leaves it
// failing, not one after which it cannot run at all: main holds an order
// of a customer it lacks; a customers batch rewrites the table with each
// id in a list, which customers' own suite (unique ids) passes and orders'
// join can no longer compare. Before, an error with the change after a failure before
// was excused as failing already (no count to compare), the batch was
// published, and orders' check could never judge main again.
func TestCheckFailingAlreadyThatTheChangeMakesUnrunnable(t *testing.T) {
	orphans := Check{Name: "orders_have_customers", Kind: KindCrossTable, SQL: "SELECT o.* FROM orders o ANTI JOIN customers c USING (customer_id)"}
	mk := func(t *testing.T) *dirSource {
		src := shopSource(t)
		src.write(t, "main", "gold/orders/o999.parquet", "SELECT 100::INTEGER AS order_id, 999::INTEGER AS customer_id")
		src.write(t, "b1", "gold/orders/o999.parquet", "SELECT 100::INTEGER AS order_id, 999::INTEGER AS customer_id")
		src.write(t, "b1", "gold/customers/c2.parquet", "SELECT [i::INTEGER] AS customer_id, 'c' || i AS name FROM range(0, 5) r(i)")
		return src
	}
	t.Run("runner", func(t *testing.T) {
		rep := auditShopBatch(t, mk(t), orphans)
		var got schemas.CheckResult
		for _, c := range rep.Checks {
			if c.Name == neighborName(orphans.Name, "orders") {
				got = c
			}
		}
		if rep.Passed || got.Status != schemas.StatusError {
			t.Errorf("a customers batch after which orders' check cannot run: passed %v, %s: %s; want held back", rep.Passed, got.Status, got.Message)
		}
	})
	t.Run("hook", func(t *testing.T) {
		orders := Guard{Dataset: "orders", Suite: Suite{Tables: []Table{{Name: "orders", Path: "gold/orders/"}, {Name: "customers", Path: "gold/customers/"}},
			Checks: []Check{orphans}}}
		h, err := NewPreMergeHandler(PreMergeOptions{Guards: guardMap{"repo/main": {orders}}, Runner: newEngine(t, mk(t), "")})
		if err != nil {
			t.Fatal(err)
		}
		if status, ans := postHook(t, h, hookEvent("b1", nil)); status != http.StatusPreconditionFailed {
			t.Errorf("status %d, answer %+v; want 412", status, ans)
		}
	})
}
