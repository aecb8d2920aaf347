package audit

import (
	"net/http"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// TestPersonsMergeOfATableItsDatasetAlonePublishesIsNotExcusedForAnUnbornTable
// (review 51): on a new target, orders' cross_table check (every order's
// customer exists) cannot run while customers has no file. lakewap's own
// publish of an orders batch is refused for it (the batch's own check
// cannot judge its rows), and the first customers batch is let through
// (orders has no row to judge). A person's merge was judged as a
// neighbor's change whatever it held: a merge bringing orders, whose
// customers exist nowhere, was allowed as "cannot run before nor after"
// and main held orders no check had judged. A person's merge that changes
// a table only one guarding dataset publishes (orders') is now held, for
// that dataset's checks, to what lakewap's own publish of it is: a query
// that cannot run for a table with no file yet does not excuse it. A
// person's first customers (a table orders and customers both list) is
// still let through.
func TestPersonsMergeOfATableItsDatasetAlonePublishesIsNotExcusedForAnUnbornTable(t *testing.T) {
	orphans := Check{Name: "orders_have_customers", Kind: KindCrossTable, SQL: "SELECT o.* FROM orders o ANTI JOIN customers c USING (customer_id)"}
	orders := Guard{Dataset: "orders", Suite: Suite{Tables: []Table{{Name: "orders", Path: "gold/orders/"}, {Name: "customers", Path: "gold/customers/"}},
		Checks: []Check{orphans}}}
	customers := Guard{Dataset: "customers", Suite: Suite{Tables: []Table{{Name: "customers", Path: "gold/customers/"}},
		Checks: []Check{{Name: "customer_ids_unique", Kind: KindUnique, Table: "customers", Column: "customer_id"}}}}
	for _, tc := range []struct {
		name, path, query string
		want              int
	}{
		{"orders while customers has no file", "gold/orders/o.parquet",
			"SELECT i::INTEGER AS order_id, i::INTEGER AS customer_id FROM range(1, 4) r(i)", http.StatusPreconditionFailed},
		{"the first customers while orders has no file", "gold/customers/c.parquet",
			"SELECT i::INTEGER AS customer_id, 'c' || i AS name FROM range(1, 4) r(i)", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newBatchSource(t)
			src.write(t, "b1", tc.path, tc.query)
			changed, _, _ := strings.Cut(strings.TrimPrefix(tc.path, "gold/"), "/")
			diff := diffFunc(func(_, _, _, prefix string) (bool, error) { return prefix == "gold/"+changed+"/", nil })
			h, err := NewPreMergeHandler(PreMergeOptions{Guards: guardMap{"repo/main": {orders, customers}}, Runner: newEngine(t, src, ""), Diff: diff})
			if err != nil {
				t.Fatal(err)
			}
			status, ans := postHook(t, h, hookEvent("b1", nil))
			var got string
			for _, v := range ans.Verdicts {
				for _, c := range v.Checks {
					if c.Name == orphans.Name {
						got = c.Status
					}
				}
			}
			if status != tc.want {
				t.Fatalf("a person's merge of %s: %d (orders' check %q), want %d:\n%s", tc.path, status, got, tc.want, strings.Join(ans.Summary, "\n"))
			}
			if tc.want != http.StatusOK && got != schemas.StatusError {
				t.Errorf("orders' check %q; want error (it cannot run: customers has no file)", got)
			}
		})
	}
}

// TestOwnRevertMergeIsJudgedAsARevert (review 51): lakewap lands a revert
// as a merge of its audited scratch revert commit, and the hook judges it
// as the runner's revert audit does, not as a publish of the dataset it
// names: a check failing on main already, and a batch-scoped check (a
// revert adds no rows: it fails on main as with the revert), do not hold
// it back. The same merge without wap.reverted_batch_id is lakewap's
// publish of orders, whose own checks are excused for nothing.
func TestOwnRevertMergeIsJudgedAsARevert(t *testing.T) {
	hex := func(c string) string { return strings.Repeat(c, 64) }
	head, source, merge := hex("1"), hex("2"), hex("3")
	orders := Guard{Dataset: "orders", Suite: Suite{Tables: []Table{{Name: "orders", Path: "gold/orders/"}},
		Checks: []Check{
			{Name: "some_orders", Kind: KindRowCount, Table: "orders", Min: f64(1), Scope: ScopeBatch},
			{Name: "ids_unique", Kind: KindUnique, Table: "orders", Column: "order_id"},
		}}}
	for _, tc := range []struct {
		name string
		meta map[string]string
		want int
	}{
		{"revert", map[string]string{schemas.MetaDataset: "orders", schemas.MetaRevertedBatchID: "b9"}, http.StatusOK},
		{"publish", map[string]string{schemas.MetaDataset: "orders"}, http.StatusPreconditionFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// main: duplicate ids (ids_unique fails there already) in two
			// files; the merge (a revert) removes one batch's file and
			// leaves the duplicates of the others.
			src := newBatchSource(t)
			src.write(t, "main", "gold/orders/a.parquet", "SELECT i::INTEGER AS order_id FROM range(1, 4) r(i)")
			src.write(t, "main", "gold/orders/b.parquet", "SELECT i::INTEGER AS order_id FROM range(1, 4) r(i)")
			src.write(t, "main", "gold/orders/c.parquet", "SELECT (10 + i)::INTEGER AS order_id FROM range(1, 4) r(i)")
			src.branch(t, "main", head)
			src.branch(t, "main", source)
			src.remove(t, source, "gold/orders/c.parquet")
			book := mergeBook{heads: map[string]string{"main": head}, commits: map[string]MergeCommit{
				merge: {Parents: []string{head, source}, Committer: "lakewap", Metadata: tc.meta},
			}}
			h, err := NewPreMergeHandler(PreMergeOptions{Guards: guardMap{"repo/main": {orders}}, Runner: newEngine(t, src, ""),
				Merges: book, OwnCommitter: "lakewap"})
			if err != nil {
				t.Fatal(err)
			}
			if status, ans := postHook(t, h, callFor(source, merge)); status != tc.want {
				t.Errorf("lakewap's %s merge: status %d, want %d: %+v", tc.name, status, tc.want, ans)
			}
		})
	}
}
