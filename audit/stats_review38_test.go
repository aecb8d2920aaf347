package audit

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// review38Lake is a table's history for the statistics of a file that
// lacks a column the table has, named as one of read_parquet's virtual
// columns (file_row_number, file_index): files A and X have it, B does
// not (NULL in the table, union by name). A's and X's statistics are
// computed by an incremental audit before B is published by a full one,
// so an incremental audit after it computes B's statistics alone. A
// column of another name ("numbered") is the same history without a
// virtual column: B's statistics failed (no such column), and the checks
// that need them erred where the full audit passes.
type review38Lake struct {
	t       *testing.T
	lake    *lakeSim
	engines [2]*Engine // [1] does not fuse
	suite   Suite
	head    string
	n       int
}

func newReview38Lake(t *testing.T, col string, checks ...Check) *review38Lake {
	t.Helper()
	l := newReview38Start(t, col, checks...)
	q := quoteIdent(col)
	// Incremental: A's statistics (alone: it has the column), and X's.
	s := l.batch("x", `SELECT 5000::BIGINT AS `+q+`, 'X-0' AS customer_id`)
	l.publish(s, l.audit(s, false, "a batch with the column"))
	// Full: no statistics of B.
	s = l.batch("b", `SELECT 'B-' || i::VARCHAR AS customer_id FROM range(100, 200) t(i)`)
	l.publish(s, l.audit(s, true, "a batch without the column"))
	return l
}

// newReview38Start is a review38Lake whose table holds A (the column col
// and customer_id), published by a full audit.
func newReview38Start(t *testing.T, col string, checks ...Check) *review38Lake {
	t.Helper()
	l := &review38Lake{t: t, suite: Suite{Tables: []Table{{Name: "t", Path: "gold/t/"}}, Checks: checks},
		lake: &lakeSim{dirSource: newDirSource(t), commits: map[string]CommitInfo{}}}
	for i := range l.engines {
		e, err := New(Options{Source: l.lake, WorkDir: t.TempDir(), History: l.lake})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		l.engines[i] = e
	}
	l.engines[1].unfused = true
	c0 := cid("c000")
	l.lake.commit(c0, nil, nil)
	if err := os.MkdirAll(filepath.Join(l.lake.root, c0), 0o755); err != nil {
		t.Fatal(err)
	}
	l.head = c0
	s := l.batch("a", `SELECT (1000 + i)::BIGINT AS `+quoteIdent(col)+`, 'A-' || i::VARCHAR AS customer_id FROM range(100) t(i)`)
	l.publish(s, l.audit(s, true, "the table's first file"))
	return l
}

// newReview38LakeRetried is newReview38Lake's history where B's batch is
// audited as it comes first, which errs (its view has no such column) but
// stores B's statistics, computed from B alone, and then full, which
// passes: the next incremental audit takes B's statistics from the store.
func newReview38LakeRetried(t *testing.T, col string, checks ...Check) *review38Lake {
	t.Helper()
	l := newReview38Start(t, col, checks...)
	s := l.batch("b", `SELECT 'B-' || i::VARCHAR AS customer_id FROM range(100, 200) t(i)`)
	for i, e := range l.engines {
		rep, err := e.Run(context.Background(), l.req(s, false))
		// Review 53: it failed incrementally (the batch's view has no such
		// column) where the full audit passes it; it is audited full.
		if err != nil || !rep.Passed || rep.Mode != ModeFull || !strings.Contains(rep.ModeReason, "in no file of the batch") {
			t.Fatalf("engine %d: the batch without the column, as it comes: %v %s %q passed=%v, want it audited full and passed", i, err, rep.Mode, rep.ModeReason, rep.Passed)
		}
	}
	l.publish(s, l.audit(s, true, "the batch without the column, full"))
	return l
}

func (l *review38Lake) req(ref string, full bool) Request {
	return Request{Dataset: "d", Repository: "r", Ref: ref, BaseRef: l.head, BaseName: "main", BatchTime: batchTime, Suite: l.suite, Full: full}
}

// batch is a sealed commit on the head adding one file of rows.
func (l *review38Lake) batch(name, rows string) string {
	l.t.Helper()
	l.n++
	s := cid("s" + name)
	l.lake.branch(l.t, l.head, s)
	l.lake.commit(s, []string{l.head}, nil)
	l.lake.write(l.t, s, "gold/t/"+name+"/part-0.parquet", rows)
	return s
}

// audit runs both engines' audit of s, which must pass, and returns the
// fusing one's report.
func (l *review38Lake) audit(s string, full bool, what string) schemas.AuditReport {
	l.t.Helper()
	var out schemas.AuditReport
	for i, e := range l.engines {
		rep, err := e.Run(context.Background(), l.req(s, full))
		if err != nil || !rep.Passed {
			l.t.Fatalf("%s, engine %d: %v %+v", what, i, err, rep.Checks)
		}
		if i == 0 {
			out = rep
		}
	}
	return out
}

// publish merges s onto the head with the attestation of rep.
func (l *review38Lake) publish(s string, rep schemas.AuditReport) {
	l.t.Helper()
	m := cid("merged " + s)
	l.lake.mergeDirs(l.t, l.head, s, l.head, m)
	text, err := NewAttestation("d", l.suite, rep, s, l.head).Encode(nil)
	if err != nil {
		l.t.Fatal(err)
	}
	l.lake.commit(m, []string{l.head, s}, map[string]string{MetaAttestation: text})
	l.head = m
}

// incrementalIsFull audits batch s full and as it comes on both engines
// and wants the same status and figures of every check.
func (l *review38Lake) incrementalIsFull(s string, wantPassed bool) {
	l.t.Helper()
	full, err := l.engines[1].Run(context.Background(), l.req(s, true))
	if err != nil {
		l.t.Fatal(err)
	}
	if full.Passed != wantPassed {
		l.t.Fatalf("the full audit: passed=%v, want %v: %+v", full.Passed, wantPassed, full.Checks)
	}
	for i, e := range l.engines {
		rep, err := e.Run(context.Background(), l.req(s, false))
		if err != nil {
			l.t.Fatal(err)
		}
		if rep.Mode != ModeIncremental {
			l.t.Fatalf("engine %d: %s (%s), want an incremental audit", i, rep.Mode, rep.ModeReason)
		}
		if rep.Passed != full.Passed || len(rep.Checks) != len(full.Checks) {
			l.t.Errorf("engine %d: incremental passed=%v, full passed=%v\n%+v\n%+v", i, rep.Passed, full.Passed, rep.Checks, full.Checks)
			continue
		}
		for j, c := range rep.Checks {
			if f := full.Checks[j]; c.Status != f.Status || c.Observed != f.Observed {
				l.t.Errorf("engine %d: check %s incremental %s %q (%s), full %s %q (%s)", i, c.Name, c.Status, c.Observed, c.Message, f.Status, f.Observed, f.Message)
			}
		}
	}
}

// fileObject is the head's object at path.
func (l *review38Lake) fileObject(path string) Object {
	l.t.Helper()
	objs, err := l.lake.List(context.Background(), "r", l.head, "gold/t/")
	if err != nil {
		l.t.Fatal(err)
	}
	for _, o := range objs {
		if o.Path == path {
			return o
		}
	}
	l.t.Fatalf("no file %s", path)
	return Object{}
}

// TestReview38StatsOfAFileLackingAVirtualNamedColumn: the statistics
// lakewap computes of a file scanned without a file that has a column
// named file_row_number or file_index (read_parquet's virtual columns)
// were of the virtual column (its row numbers, its index in the scan)
// where the table reads NULL: B's 100 rows counted as 100 values from 0
// to 99. They must be no values.
func TestReview38StatsOfAFileLackingAVirtualNamedColumn(t *testing.T) {
	for _, col := range []string{"file_row_number", "file_index", "numbered"} {
		t.Run(col, func(t *testing.T) {
			one := 1.0
			l := newReview38Lake(t, col,
				Check{Name: "key_unique", Kind: KindUnique, Table: "t", Columns: []string{col, "customer_id"}},
				Check{Name: "has_rows", Kind: KindRowCount, Table: "t", Min: &one})
			l.incrementalIsFull(l.batch("y", `SELECT 2000::BIGINT AS `+quoteIdent(col)+`, 'Y-0' AS customer_id`), true)
			b := l.fileObject("gold/t/b/part-0.parquet")
			for i, e := range l.engines {
				st, ok := e.stats.get(statsKey("r", b))
				if !ok {
					t.Fatalf("engine %d: no statistics of B", i)
				}
				if cs := st.Cols[col]; st.Rows != 100 || cs.NonNull != 0 || cs.Min != "" || cs.Max != "" {
					t.Errorf("engine %d: B's statistics of %s, which it lacks: rows %d, %+v; want 100 rows and no values", i, col, st.Rows, cs)
				}
			}
		})
	}
}

// TestReview38VirtualColumnStatsGiveTheFullVerdict: B's statistics taken
// from the virtual column, for each check whose incremental plan trusts
// them: unique missed B's (NULL, B-150) (its key column counted no NULL,
// so B was not read), and range and row_count counted B's row numbers as
// values: a batch the full audit fails passed, and batches it passes
// failed.
func TestReview38VirtualColumnStatsGiveTheFullVerdict(t *testing.T) {
	for _, col := range []string{"file_row_number", "file_index", "numbered"} {
		q := quoteIdent(col)
		five, one := 500.0, 1.0
		max := 150.0
		for _, tc := range []struct {
			name   string
			check  Check
			batch  string
			passed bool
		}{
			{"unique", Check{Name: "key_unique", Kind: KindUnique, Table: "t", Columns: []string{col, "customer_id"}},
				`SELECT NULL::BIGINT AS ` + q + `, 'B-150' AS customer_id`, false},
			{"range", Check{Name: "at_least_500", Kind: KindRange, Table: "t", Column: col, Min: &five},
				`SELECT 2000::BIGINT AS ` + q + `, 'Y-0' AS customer_id`, true},
			{"stat", Check{Name: "min_at_least_500", Kind: KindStat, Table: "t", Column: col, Stat: StatMin, Min: &five},
				`SELECT 2000::BIGINT AS ` + q + `, 'Y-0' AS customer_id`, true},
			{"row_count", Check{Name: "numbered_rows", Kind: KindRowCount, Table: "t", Max: &max, Where: col + " IS NOT NULL"},
				`SELECT 2000::BIGINT AS ` + q + `, 'Y-0' AS customer_id`, true},
		} {
			t.Run(col+"/"+tc.name, func(t *testing.T) {
				l := newReview38Lake(t, col, tc.check, Check{Name: "has_rows", Kind: KindRowCount, Table: "t", Min: &one})
				l.incrementalIsFull(l.batch("y", tc.batch), tc.passed)
			})
			t.Run(col+"/"+tc.name+"/retried", func(t *testing.T) {
				l := newReview38LakeRetried(t, col, tc.check, Check{Name: "has_rows", Kind: KindRowCount, Table: "t", Min: &one})
				l.incrementalIsFull(l.batch("y", tc.batch), tc.passed)
			})
		}
	}
}

// TestReview38RecordsOfTheVirtualColumnAreComputedAgain: a record stored
// before the fix (by address, so kept for good) holds the virtual
// column's figures of a file that lacks the column: values where its
// schema has no such column. Such a record is doubtful: the file is read
// again, and the verdict is the full audit's.
func TestReview38RecordsOfTheVirtualColumnAreComputedAgain(t *testing.T) {
	col := "file_row_number"
	l := newReview38Lake(t, col, Check{Name: "key_unique", Kind: KindUnique, Table: "t", Columns: []string{col, "customer_id"}})
	b := l.fileObject("gold/t/b/part-0.parquet")
	for _, e := range l.engines {
		old := fileStats{Rows: 100, Counts: map[string]int64{}, Schema: [][2]string{{"customer_id", "VARCHAR"}},
			Cols: map[string]colStats{col: {Type: "BIGINT", NonNull: 100, Min: "0", Max: "99"}, "customer_id": {Type: "VARCHAR", NonNull: 100}}}
		if err := e.stats.put(statsKey("r", b), old); err != nil {
			t.Fatal(err)
		}
	}
	l.incrementalIsFull(l.batch("y", `SELECT NULL::BIGINT AS `+quoteIdent(col)+`, 'B-150' AS customer_id`), false)
	for i, e := range l.engines {
		if st, _ := e.stats.get(statsKey("r", b)); st.Cols[col].NonNull != 0 {
			t.Errorf("engine %d: B's record after the audit: %+v, want it computed again", i, st.Cols[col])
		}
	}
}
