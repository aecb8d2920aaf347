package audit

import (
	"context"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// TestReview37FusedReadHasOnlyTheViewsColumns: the fused statement reads
// the batch view's files with read_parquet, whose virtual columns
// (filename, file_row_number, file_index) the view's SELECT * does not
// have. A batch-scoped check of a column the file lacks but named as one
// of them errors over the view (no such column); over the bare read it
// bound to the virtual column and not_null and range passed (0 NULLs, the
// row numbers). The fused read must have exactly the view's columns.
func TestReview37FusedReadHasOnlyTheViewsColumns(t *testing.T) {
	r := newFuseRig(t)
	r.audit(r.batch("b0", demoRows(200)))
	zero := 0.0
	for _, col := range []string{"file_row_number", "file_index", "filename"} {
		t.Run(col, func(t *testing.T) {
			r.t = t
			s := r.batch("v-"+col, demoRows(300))
			var reps [2]schemas.AuditReport
			for i, e := range []*Engine{r.fused, r.single} {
				req := r.request(s, cid("c001"), false)
				req.Suite.Checks = append(slices0(req.Suite.Checks),
					Check{Name: "virtual_not_null", Kind: KindNotNull, Table: "billing_fact", Columns: []string{col}, Scope: "batch"},
					Check{Name: "virtual_range", Kind: KindRange, Table: "billing_fact", Column: col, Min: &zero, Scope: "batch"})
				var err error
				if reps[i], err = e.Run(context.Background(), req); err != nil {
					t.Fatal(err)
				}
			}
			for _, c := range reps[0].Checks {
				if strings.HasPrefix(c.Name, "virtual_") && c.Status != schemas.StatusError {
					t.Errorf("%s of column %s, which the batch's file lacks: %s (%s), want an error", c.Name, col, c.Status, c.Message)
				}
			}
			sameReport(t, "fused and not", reps[0], reps[1])
		})
	}
}

func slices0(c []Check) []Check { return append([]Check(nil), c...) }
