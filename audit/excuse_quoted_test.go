package audit

import (
	"net/http"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// The multiset comparison of failing rows reads the base's tables by
// shadowing each plain table name with a CTE of base.<table>; a query that
// names main.<table> is not compared (it would read the change's table on
// both sides). A query naming the schema otherwise than as the text main.
// (quoted, or with a comment before the dot) read the change's table on
// both sides, found no new failing row and excused a swap.
func TestExcuseSeesThroughSpelledSchemaNames(t *testing.T) {
	sc := swapChecks()
	for _, tc := range []struct {
		name string
		base swapCheck
		edit func(c *Check)
	}{
		{"sql quoted main", sc[1], func(c *Check) { c.SQL = `SELECT customer_id, name FROM "main".customers WHERE name LIKE 'bad%'` }},
		{"sql quoted MAIN", sc[1], func(c *Check) { c.SQL = `SELECT customer_id, name FROM "MAIN"."customers" WHERE name LIKE 'bad%'` }},
		{"sql comment", sc[1], func(c *Check) {
			c.SQL = `SELECT customer_id, name FROM main/* the target */.customers WHERE name LIKE 'bad%'`
		}},
		{"sql line comment", sc[1], func(c *Check) {
			c.SQL = "SELECT customer_id, name FROM main -- the target\n.customers WHERE name LIKE 'bad%'"
		}},
		{"where quoted main", sc[2], func(c *Check) { c.Where = `customer_id IN (SELECT customer_id FROM "main"."customers")` }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.base
			tc.edit(&s.check)
			run, passed, status, hook := judgeSwap(t, func(t *testing.T) *dirSource { return swapSource(t, s, s.swap) }, s.check)
			if passed || run.Status != schemas.StatusFail {
				t.Errorf("runner: passed %v, orders' check %q: %s; want held back", passed, run.Status, run.Message)
			}
			if status != http.StatusPreconditionFailed || hook.Status != schemas.StatusFail {
				t.Errorf("hook: status %d, check %q; want 412 with the check failing", status, hook.Status)
			}
			if !strings.Contains(run.Message, "cannot be compared") {
				t.Errorf("runner's verdict %q does not say its rows cannot be compared", run.Message)
			}
		})
	}
}
