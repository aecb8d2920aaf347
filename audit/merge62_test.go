package audit

import (
	"testing"
)

// TestMerge62WhereCountOfAFileLackingTheColumnIsTheTables: a file lacking a
// column reads NULL there as part of the table, in the table's type of the
// column (union by name with the files that have it). The statistics scan
// of such a file alone read its missing column as SQL's NULL type, so a
// where condition telling types apart (typeof, which rowOnly allows)
// counted its rows otherwise than the full audit: an incremental row_count
// under a max passed a batch the full audit fails.
func TestMerge62WhereCountOfAFileLackingTheColumnIsTheTables(t *testing.T) {
	e, h := statsHistory(t, "data/t/part-a.parquet", "SELECT * FROM (VALUES (1::BIGINT, 10::BIGINT)) v(id, x)")
	suite := Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: []Check{
		{Kind: KindUnique, Table: "t", Column: "id"},
		{Name: "typed_x", Kind: KindRowCount, Table: "t", Max: f64(6), Where: "typeof(x) = 'BIGINT'"},
	}}
	for n, b := range []struct {
		query string
		pass  bool
	}{
		{"SELECT * FROM (VALUES (2::BIGINT, 11::BIGINT)) v(id, x)", true},
		{"SELECT * FROM (VALUES (3::BIGINT, 12::BIGINT)) v(id, x)", true},
		{"SELECT * FROM (VALUES (4::BIGINT), (5), (6)) v(id)", true}, // 6 rows of the table read x as BIGINT
		{"SELECT * FROM (VALUES (7::BIGINT, 13::BIGINT)) v(id, x)", false},
	} {
		rep, s := h.audited(e, "d", suite, nil, "data/t/part-?.parquet", b.query)
		t.Logf("batch %d: %s %q passed=%v %+v", n, rep.Mode, rep.ModeReason, rep.Passed, rep.Checks[1])
		if rep.Passed != b.pass {
			t.Fatalf("batch %d: passed=%v, want %v: %+v", n, rep.Passed, b.pass, rep.Checks)
		}
		h.merge(h.head, s, "d", suite, rep)
	}
}

// TestMerge62WhereCountIsNotTakenFromAnotherTablesReading: the figures of a
// file without a column a where reads are kept by the file's address, and
// a file of the same bytes in another table (another dataset's, whose
// column is of another type; a writer can link an audited file's address
// anywhere) has the same address. Its count under the where, computed
// where the column is VARCHAR, is not the one of a table where it is
// BIGINT: it is computed again (fileStats.Nulls).
func TestMerge62WhereCountIsNotTakenFromAnotherTablesReading(t *testing.T) {
	lacking := "SELECT * FROM (VALUES (100::BIGINT), (101), (102)) v(id)" // the same bytes in both tables
	e, h := statsHistory(t, "data/a/part-a.parquet", "SELECT * FROM (VALUES (1::BIGINT, 'x'::VARCHAR)) v(id, x)",
		"data/a/part-f.parquet", lacking,
		"data/b/part-a.parquet", "SELECT * FROM (VALUES (1::BIGINT, 10::BIGINT)) v(id, x)",
		"data/b/part-f.parquet", lacking)
	suites := map[string]Suite{}
	for _, d := range []string{"a", "b"} {
		suites[d] = Suite{Tables: []Table{{Name: "t", Path: "data/" + d + "/"}}, Checks: []Check{
			{Kind: KindUnique, Table: "t", Column: "id"},
			{Name: "typed_x", Kind: KindRowCount, Table: "t", Max: f64(6), Where: "typeof(x) = 'BIGINT'"},
		}}
	}
	for n, b := range []struct {
		dataset, query string
		pass           bool
	}{
		{"a", "SELECT * FROM (VALUES (2::BIGINT, 'y'::VARCHAR)) v(id, x)", true},
		{"a", "SELECT * FROM (VALUES (3::BIGINT, 'z'::VARCHAR)) v(id, x)", true}, // computes part-f's figures, x VARCHAR
		{"b", "SELECT * FROM (VALUES (2::BIGINT, 11::BIGINT)) v(id, x)", true},   // 5 rows read x as BIGINT
		{"b", "SELECT * FROM (VALUES (3::BIGINT, 12::BIGINT)) v(id, x)", true},
		{"b", "SELECT * FROM (VALUES (4::BIGINT, 13::BIGINT)) v(id, x)", false}, // 7
	} {
		suite := suites[b.dataset]
		rep, s := h.audited(e, b.dataset, suite, nil, "data/"+b.dataset+"/part-?.parquet", b.query)
		t.Logf("batch %d of %s: %s %q passed=%v %s", n, b.dataset, rep.Mode, rep.ModeReason, rep.Passed, rep.Checks[1].Observed)
		if rep.Passed != b.pass {
			t.Fatalf("batch %d: passed=%v, want %v: %+v", n, rep.Passed, b.pass, rep.Checks)
		}
		h.merge(h.head, s, b.dataset, suite, rep)
	}
}

// TestMerge62KeptSummaryOfAnotherReadingIsNotTaken: the engine keeps the
// summary of a set of unchanged files (summary.go), and an audit of a
// table holding that set whole takes its counts. One made while the
// table's column was BIGINT counted a file without it under typeof(x) =
// 'VARCHAR' as 0; after a direct commit changed the column to VARCHAR
// (the audit after it full, so no incremental run met the summary), the
// next incremental audit took it and counted 3 rows of the full audit's 6.
func TestMerge62KeptSummaryOfAnotherReadingIsNotTaken(t *testing.T) {
	e, h := statsHistory(t, "data/t/part-f.parquet", "SELECT * FROM (VALUES (100::BIGINT), (101), (102)) v(id)",
		"data/t/part-g.parquet", "SELECT * FROM (VALUES (1::BIGINT, 10::BIGINT)) v(id, x)")
	suite := Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: []Check{
		{Kind: KindUnique, Table: "t", Column: "id"},
		{Name: "text_x", Kind: KindRowCount, Table: "t", Max: f64(5), Where: "typeof(x) = 'VARCHAR'"},
	}}
	publish := func(n int, remove []string, add, query string, pass bool) {
		rep, s := h.audited(e, "d", suite, remove, add, query)
		t.Logf("batch %d: %s %q passed=%v %s", n, rep.Mode, rep.ModeReason, rep.Passed, rep.Checks[1].Observed)
		if rep.Passed != pass {
			t.Fatalf("batch %d: passed=%v, want %v: %+v", n, rep.Passed, pass, rep.Checks)
		}
		h.merge(h.head, s, "d", suite, rep)
	}
	publish(0, []string{"data/t/part-g.parquet"}, "data/t/part-h1.parquet", "SELECT * FROM (VALUES (2::BIGINT, 11::BIGINT)) v(id, x)", true)
	// Unchanged: part-f alone, whose summary is kept (x BIGINT).
	publish(1, []string{"data/t/part-h1.parquet"}, "data/t/part-h2.parquet", "SELECT * FROM (VALUES (3::BIGINT, 12::BIGINT)) v(id, x)", true)
	// A direct commit: x is text from now on.
	c := h.lake.next("c")
	h.lake.branch(t, h.head, c)
	h.lake.remove(t, c, "data/t/part-h2.parquet")
	h.lake.write(t, c, "data/t/part-v1.parquet", "SELECT * FROM (VALUES (4::BIGINT, 'a'::VARCHAR)) v(id, x)")
	h.lake.commit(c, []string{h.head}, nil)
	h.head = c
	publish(2, nil, "data/t/part-v2.parquet", "SELECT * FROM (VALUES (5::BIGINT, 'b'::VARCHAR)) v(id, x)", true)  // full: 5 rows read x as VARCHAR
	publish(3, nil, "data/t/part-v3.parquet", "SELECT * FROM (VALUES (6::BIGINT, 'c'::VARCHAR)) v(id, x)", false) // 6
}
