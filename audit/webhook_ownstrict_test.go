package audit

import (
	"net/http"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// The hook judges lakewap's own publish by its dataset's checks as the
// runner's recheck does: none is excused as failing on the destination
// already (review 48). Here main has no file of orders nor customers, and
// the merge brings orders whose customers main lacks: orders' check cannot
// run on main (no file of orders) nor on the merge (no file of customers).
// The runner aborts such a batch (its own check errs), so the hook refuses
// lakewap's merge of it; before, it excused the check and allowed it. A
// person's merge is judged as before here, with no Diff to tell which
// tables it changes: a check that cannot run there and with the merge, for
// want of a table's files, is excused (docs/audits.md). With one, as the
// daemon runs the hook, a person's merge of orders is refused too
// (TestPersonsMergeOfATableItsDatasetAlonePublishesIsNotExcusedForAnUnbornTable).
func TestOwnPublishIsNotExcusedByItsOwnChecks(t *testing.T) {
	hex := func(c string) string { return strings.Repeat(c, 64) }
	head, source, merge := hex("1"), hex("2"), hex("3")
	orders := Guard{Dataset: "orders", Suite: Suite{Tables: []Table{{Name: "orders", Path: "gold/orders/"}, {Name: "customers", Path: "gold/customers/"}},
		Checks: []Check{{Name: "orders_have_customers", Kind: KindCrossTable, SQL: "SELECT o.* FROM orders o ANTI JOIN customers c USING (customer_id)"}}}}
	for _, tc := range []struct {
		committer string
		want      int
	}{{"lakewap", http.StatusPreconditionFailed}, {"ana", http.StatusOK}} {
		t.Run(tc.committer, func(t *testing.T) {
			src := newBatchSource(t)
			src.branch(t, "main", source)
			src.write(t, source, "gold/orders/o.parquet", "SELECT i::INTEGER AS order_id, i::INTEGER AS customer_id FROM range(1, 4) r(i)")
			book := mergeBook{heads: map[string]string{"main": head}, commits: map[string]MergeCommit{
				merge: {Parents: []string{head, source}, Committer: tc.committer, Metadata: map[string]string{schemas.MetaDataset: "orders"}},
			}}
			h, err := NewPreMergeHandler(PreMergeOptions{Guards: guardMap{"repo/main": {orders}}, Runner: newEngine(t, src, ""),
				Merges: book, OwnCommitter: "lakewap"})
			if err != nil {
				t.Fatal(err)
			}
			if status, ans := postHook(t, h, callFor(source, merge)); status != tc.want {
				t.Errorf("merge by %s: status %d (%v), want %d", tc.committer, status, ans.Summary, tc.want)
			}
		})
	}
}
