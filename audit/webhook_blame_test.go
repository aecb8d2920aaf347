package audit

import (
	"net/http"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// The hook judges a failing check as the runner judges a neighbor's: a
// merge is refused for a check it makes fail, not for one main fails
// already. Before, it refused any failing check, so a person's fix merge
// was refused while main was broken in a way the merge does not worsen,
// and lakewap's own publish of a batch its runner let through (a
// neighbor's check failing on main already: warn) was refused by its own
// hook. A check of the merge's files alone (scope: batch) is the merge's
// doing whatever main says: main has no batch, and so is a query that
// cannot run there nor with the merge.
func TestPreMergeHookBlamesOnlyWhatTheMergeBreaks(t *testing.T) {
	const src = "feature"
	orders := Guard{Dataset: "orders", Suite: Suite{Tables: []Table{{Name: "orders", Path: "gold/orders/"}, {Name: "customers", Path: "gold/customers/"}},
		Checks: []Check{
			{Name: "orders_have_customers", Kind: KindCrossTable, SQL: "SELECT o.* FROM orders o ANTI JOIN customers c USING (customer_id)"},
			{Name: "fresh_orders", Kind: KindFreshness, Table: "orders", Column: "at", MaxAge: "1d", Scope: ScopeBatch},
		}}}
	fail := schemas.StatusFail
	for _, tc := range []struct {
		name          string
		atSource      map[string]string
		atMain        map[string]string
		wantStatus    int
		wantCheck     string
		wantCheckStat string
	}{
		{"failing on main already", map[string]string{"orders_have_customers": fail}, map[string]string{"orders_have_customers": fail},
			http.StatusOK, "orders_have_customers", schemas.StatusWarn},
		// A query that cannot run cannot show the merge makes it no worse
		// (TestErringQueryExcusesNoChangeOfItsTables); only one of a
		// table with no file yet is excused (TestQueryOfATableWithNoFileYetIsExcused).
		{"could not run on main either", map[string]string{"orders_have_customers": schemas.StatusError},
			map[string]string{"orders_have_customers": schemas.StatusError}, http.StatusPreconditionFailed, "orders_have_customers", schemas.StatusError},
		{"passing on main", map[string]string{"orders_have_customers": fail}, nil,
			http.StatusPreconditionFailed, "orders_have_customers", fail},
		{"a batch-scope check, whatever main says", map[string]string{"fresh_orders": fail}, map[string]string{"fresh_orders": fail},
			http.StatusPreconditionFailed, "fresh_orders", fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &scriptedRunner{verdicts: map[string]map[string]string{"orders@" + src: tc.atSource, "orders@main": tc.atMain}}
			h, err := NewPreMergeHandler(PreMergeOptions{Guards: guardMap{"repo/main": {orders}}, Runner: r})
			if err != nil {
				t.Fatal(err)
			}
			status, ans := postHook(t, h, hookEvent(src, nil))
			if status != tc.wantStatus || ans.Allowed != (tc.wantStatus == http.StatusOK) {
				t.Fatalf("status %d, answer %+v; want %d", status, ans, tc.wantStatus)
			}
			var got string
			for _, c := range ans.Verdicts[0].Checks {
				if c.Name == tc.wantCheck {
					got = c.Status
				}
			}
			if got != tc.wantCheckStat {
				t.Errorf("%s: %q; want %q (%+v)", tc.wantCheck, got, tc.wantCheckStat, ans.Verdicts)
			}
			if tc.wantCheckStat == schemas.StatusWarn && !strings.Contains(strings.Join(ans.Summary, "\n"), "fail on main already") {
				t.Errorf("summary does not say the check fails on main already:\n%s", strings.Join(ans.Summary, "\n"))
			}
			reqs := r.runs()
			if tc.wantCheckStat == schemas.StatusWarn && (len(reqs) != 2 || reqs[1].Ref != "main" || reqs[1].BaseRef != "main" || !reqs[1].Full) {
				t.Errorf("audits %+v; want the merge's, then main's, full, against itself", reqs)
			}
		})
	}
}
