package audit

import (
	"context"
	"fmt"
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

// TestReview37FusedUnionOfFilesEqualsLone: a batch of several files (the
// view's union_by_name read, readParquetParamSQL's n > 1), one lacking a
// column, one of a narrower type, one without rows, one whose column
// names' case differs: the fused engine's report is the lone one's.
func TestReview37FusedUnionOfFilesEqualsLone(t *testing.T) {
	r := newFuseRig(t)
	r.audit(r.batch("b0", demoRows(200)))
	cases := map[string][]string{
		"missing_currency": {demoRows(300), `SELECT 'INV-9' || i::VARCHAR AS billing_id, 'CUST-1' AS customer_id, 5::BIGINT AS amount_cents FROM range(3) t(i)`},
		"narrower_amount":  {demoRows(400), `SELECT 'INV-8' || i::VARCHAR AS billing_id, 'CUST-1' AS customer_id, (-1)::INTEGER AS amount_cents, 'EUR' AS currency FROM range(3) t(i)`},
		"no_rows":          {demoRows(500), demoRows(600) + " LIMIT 0"},
		"null_keys":        {demoRows(700), `SELECT NULL::VARCHAR AS billing_id, 'CUST-1' AS customer_id, 1::BIGINT AS amount_cents, 'XXX' AS currency`},
	}
	for name, files := range cases {
		t.Run(name, func(t *testing.T) {
			r.t = t
			s := r.batch("u-"+name, files[0])
			for i, rows := range files[1:] {
				r.lake.write(t, s, fmt.Sprintf("gold/billing_fact/u-%s/part-%d.parquet", name, i+1), rows)
			}
			var reps [2]schemas.AuditReport
			r.mu.Lock()
			r.stmts[r.fused] = nil
			r.mu.Unlock()
			for i, e := range []*Engine{r.fused, r.single} {
				var err error
				if reps[i], err = e.Run(context.Background(), r.request(s, cid("c001"), false)); err != nil {
					t.Fatal(err)
				}
			}
			sameReport(t, "fused and not", reps[0], reps[1])
			r.mu.Lock()
			ran := strings.Join(r.stmts[r.fused], "\n")
			r.mu.Unlock()
			if !strings.Contains(ran, "FROM (SELECT * FROM read_parquet(?, hive_partitioning = false, union_by_name = true))") {
				t.Fatalf("the fused statement did not read the batch's files as a union:\n%s", ran)
			}
			t.Logf("%s: passed=%v mode=%s", name, reps[0].Passed, reps[0].Mode)
		})
	}
}

// TestReview37CanceledProbationIsNoVerdict: a run canceled while the
// fused statement proves its batch view (settleProbation) ends with the
// context's error, not with a report (no check errs or passes for it), and
// the next run of the same batch, on the same engine, is the lone
// engine's: the failed probation marked nothing good in the memo.
func TestReview37CanceledProbationIsNoVerdict(t *testing.T) {
	r := newFuseRig(t)
	r.audit(r.batch("b0", demoRows(200)))
	s := r.batch("b1", demoRows(300))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hook := r.fused.onStatement
	r.fused.onStatement = func(q string) {
		if strings.Contains(q, "read_parquet(?") {
			cancel()
		}
		hook(q)
	}
	rep, err := r.fused.Run(ctx, r.request(s, cid("c001"), false))
	if err == nil {
		t.Fatalf("a canceled run gave a report: passed=%v %+v", rep.Passed, rep.Checks)
	}
	r.fused.onStatement = hook
	r.audit(s)
}

// TestReview37FusedTextOverTheKeptBoundEqualsLone: a batch of wide rows
// (1,500 columns of long names, a batch-scoped not_null of all of them,
// one NULL among them) makes a fused statement longer than
// maxKeptStatementBytes: it runs unprepared, is not kept, and the report
// is the lone engine's (the NULL found).
func TestReview37FusedTextOverTheKeptBoundEqualsLone(t *testing.T) {
	r := newFuseRig(t)
	r.audit(r.batch("b0", demoRows(200)))
	var cols, names []string
	for i := range 1500 {
		name := fmt.Sprintf("a_rather_long_column_name_of_the_wide_batch_%04d", i)
		names = append(names, name)
		v := "i"
		if i == 1234 {
			v = "CASE WHEN i % 100 = 7 THEN NULL ELSE i END"
		}
		cols = append(cols, v+" AS "+name)
	}
	rows := strings.Replace(demoRows(300), "FROM range(", ", "+strings.Join(cols, ", ")+" FROM range(", 1)
	s := r.batch("wide", rows)
	var reps [2]schemas.AuditReport
	r.mu.Lock()
	r.stmts[r.fused] = nil
	r.mu.Unlock()
	for i, e := range []*Engine{r.fused, r.single} {
		req := r.request(s, cid("c001"), false)
		req.Suite.Checks = append(slices0(req.Suite.Checks),
			Check{Name: "wide_not_null", Kind: KindNotNull, Table: "billing_fact", Columns: names, Scope: "batch"})
		var err error
		if reps[i], err = e.Run(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	sameReport(t, "fused and not", reps[0], reps[1])
	for _, c := range reps[0].Checks {
		if c.Name == "wide_not_null" && c.Status != schemas.StatusFail {
			t.Errorf("%s: %s (%s), want a failure (one NULL)", c.Name, c.Status, c.Message)
		}
	}
	r.mu.Lock()
	ran := r.stmts[r.fused]
	r.mu.Unlock()
	long := false
	for _, q := range ran {
		long = long || strings.Contains(q, "read_parquet(?") && len(q) > maxKeptStatementBytes
	}
	if !long {
		t.Fatal("no fused statement over the kept bound ran")
	}
	r.fused.kept.mu.Lock()
	defer r.fused.kept.mu.Unlock()
	for q := range r.fused.kept.by {
		if len(q) > maxKeptStatementBytes {
			t.Errorf("a statement of %d bytes was kept", len(q))
		}
	}
}
