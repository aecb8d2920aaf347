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
	r.fused.currentDuck().kept.mu.Lock()
	defer r.fused.currentDuck().kept.mu.Unlock()
	for q := range r.fused.currentDuck().kept.by {
		if len(q) > maxKeptStatementBytes {
			t.Errorf("a statement of %d bytes was kept", len(q))
		}
	}
}

// TestReview37OldKeysReadHasOnlyTheFilesColumns: unique's incremental
// plan reads the key columns of the unchanged files that may hold the
// batch's keys with a bare read_parquet, whose virtual columns
// (file_row_number, ...) stand for a key column a file lacks. The table's
// files A (file_row_number written) and B (without it: NULL in the
// table, union by name); the batch repeats B's key (NULL, B-150), a
// collision the full audit finds (NULLs are equal in a combination) and
// the incremental one missed: B's keys read as (its row number, B-150).
func TestReview37OldKeysReadHasOnlyTheFilesColumns(t *testing.T) {
	one := 1.0
	suite := Suite{Tables: []Table{{Name: "t", Path: "gold/t/"}}, Checks: []Check{
		{Name: "key_unique", Kind: KindUnique, Table: "t", Columns: []string{"file_row_number", "customer_id"}},
		{Name: "has_rows", Kind: KindRowCount, Table: "t", Min: &one},
	}}
	lake := &lakeSim{dirSource: &dirSource{root: t.TempDir(), downloads: map[string]int{}, sums: map[string]string{}}, commits: map[string]CommitInfo{}}
	var engines [2]*Engine
	for i := range engines {
		e, err := New(Options{Source: lake, WorkDir: t.TempDir(), History: lake})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		engines[i] = e
	}
	engines[1].unfused = true
	req := func(ref, base string, full bool) Request {
		return Request{Dataset: "d", Repository: "r", Ref: ref, BaseRef: base, BaseName: "main", BatchTime: batchTime, Suite: suite, Full: full}
	}
	c0, s0, c1 := cid("c000"), cid("s0"), cid("c001")
	lake.commit(c0, nil, nil)
	lake.write(t, c0, "gold/t/b-0/part-0.parquet", `SELECT i::BIGINT AS file_row_number, 'A-' || i::VARCHAR AS customer_id FROM range(100) t(i)`)
	lake.branch(t, c0, s0)
	lake.commit(s0, []string{c0}, nil)
	lake.write(t, s0, "gold/t/b-1/part-0.parquet", `SELECT 'B-' || i::VARCHAR AS customer_id FROM range(100, 200) t(i)`)
	rep, err := engines[0].Run(context.Background(), req(s0, c0, true))
	if err != nil || !rep.Passed {
		t.Fatalf("the foundation's full audit: %v %+v", err, rep.Checks)
	}
	lake.mergeDirs(t, c0, s0, c0, c1)
	text, err := NewAttestation("d", suite, rep, s0, c0).Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	lake.commit(c1, []string{c0, s0}, map[string]string{MetaAttestation: text})
	batch := func(name, rows string) string {
		s := cid(name)
		lake.branch(t, c1, s)
		lake.commit(s, []string{c1}, nil)
		lake.write(t, s, "gold/t/"+name+"/part-0.parquet", rows)
		return s
	}
	// A first batch computes the statistics of the table's files.
	for _, e := range engines {
		if rep, err := e.Run(context.Background(), req(batch("b0", `SELECT 1000::BIGINT AS file_row_number, 'C-0' AS customer_id`), c1, false)); err != nil || !rep.Passed {
			t.Fatalf("first batch: %v %+v", err, rep.Checks)
		}
	}
	s := batch("b1", `SELECT NULL::BIGINT AS file_row_number, 'B-150' AS customer_id`)
	full, err := engines[1].Run(context.Background(), req(s, c1, true))
	if err != nil || full.Passed {
		t.Fatalf("the full audit of the batch repeating (NULL, B-150): %v passed=%v %+v", err, full.Passed, full.Checks)
	}
	for i, e := range engines {
		rep, err := e.Run(context.Background(), req(s, c1, false))
		if err != nil {
			t.Fatal(err)
		}
		if c := rep.Checks[0]; rep.Passed || c.Status != schemas.StatusFail || c.Observed != full.Checks[0].Observed {
			t.Errorf("engine %d (%s): the batch repeating (NULL, B-150): %s %q (%s), the full audit %s %q", i, rep.Mode, c.Status, c.Observed, c.Message,
				full.Checks[0].Status, full.Checks[0].Observed)
		}
	}
}
