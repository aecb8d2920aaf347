package audit

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// TestReview53BatchWithoutATablesColumnIsAuditedAsFull: a batch whose
// files lack a column the table's files have (its writer stopped writing
// an optional column) reads, with the table, NULL there, which
// accepted_values, regex, a multi-column unique and where conditions take
// as the full audit does. The incremental audit read the batch's view
// alone, which has no such column: those checks erred and the batch
// failed where the full audit passed it. Now such a batch is audited
// full, and a column no planned check reads leaves the audit incremental.
func TestReview53BatchWithoutATablesColumnIsAuditedAsFull(t *testing.T) {
	lake := newLakeSim(t)
	lake.ids = true
	root := cid("c000")
	lake.commit(root, nil, nil)
	lake.write(t, root, "data/t/part-a.parquet", "SELECT * FROM (VALUES (1::BIGINT, 'a', 'EUR', 5.5::DOUBLE), (2, 'b', 'USD', 6.5)) v(id, region, currency, amount)")
	e, err := New(Options{Source: lake, WorkDir: t.TempDir(), CacheDir: t.TempDir(), History: lake, StatsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	narrow := Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: []Check{
		{Kind: KindNotNull, Table: "t", Column: "id"},
		{Kind: KindUnique, Table: "t", Column: "id"},
		{Kind: KindRange, Table: "t", Column: "amount", Min: f64(0)},
	}}
	for _, tc := range []struct {
		name  string
		suite Suite
		mode  string
	}{
		{"checks reading the column", diffSuite(0), ModeFull},
		{"no check reading it", narrow, ModeIncremental},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &diffHistory{t: t, lake: lake, rng: rand.New(rand.NewPCG(1, 2)), head: root, nextID: 1}
			audit := func(query string) schemas.AuditReport {
				s := lake.next("s")
				lake.branch(t, h.head, s)
				lake.commit(s, []string{h.head}, nil)
				lake.write(t, s, "data/t/part-"+s[:8]+".parquet", query)
				req := Request{Dataset: "d", Suite: tc.suite, Repository: "r", Ref: s, BaseRef: h.head, BaseName: "main", BatchTime: batchTime}
				rep := h.compare(e, req) // fails unless every verdict and figure is the full audit's
				if rep.Passed {
					m := lake.next("c")
					lake.mergeDirs(t, h.head, s, h.head, m)
					text, err := NewAttestation("d", tc.suite, rep, s, h.head).Encode(nil)
					if err != nil {
						t.Fatal(err)
					}
					lake.commit(m, []string{h.head, s}, map[string]string{MetaAttestation: text})
					h.head = m
				}
				return rep
			}
			audit("SELECT * FROM (VALUES (3::BIGINT, 'a', 'EUR', 7.5::DOUBLE)) v(id, region, currency, amount)")
			rep := audit("SELECT * FROM (VALUES (4::BIGINT, 8.5::DOUBLE)) v(id, amount)")
			if !rep.Passed || rep.Mode != tc.mode {
				t.Fatalf("the batch without region and currency: passed=%v %s %q, want passed %s", rep.Passed, rep.Mode, rep.ModeReason, tc.mode)
			}
			if tc.mode == ModeFull && !strings.Contains(rep.ModeReason, "in no file of the batch") {
				t.Fatalf("the full audit's reason %q names no missing column", rep.ModeReason)
			}
		})
	}
}

// TestReview53StatisticsOfAFileWithoutAWhereColumn: an unchanged file
// without the column a where condition reads, whose statistics are not
// stored (its own batch's could not be computed: its view had no such
// column), beside a batch without it either: the scan that computes the
// file's figures (its columns and the batch's view's) had no such column
// and failed, and the planned checks of the table erred where the full
// audit, reading the table's files together, passed.
func TestReview53StatisticsOfAFileWithoutAWhereColumn(t *testing.T) {
	lake := newLakeSim(t)
	lake.ids = true
	root := cid("c000")
	lake.commit(root, nil, nil)
	lake.write(t, root, "data/t/part-a.parquet", "SELECT * FROM (VALUES (1::BIGINT, 'a', 5.5::DOUBLE), (2, 'b', 6.5)) v(id, region, amount)")
	suite := Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: []Check{
		{Kind: KindUnique, Table: "t", Column: "id"},
		{Name: "b_rows", Kind: KindRowCount, Table: "t", Max: f64(5000), Where: "region = 'b'"},
		{Kind: KindRange, Table: "t", Column: "amount", Min: f64(0)},
	}}
	e, err := New(Options{Source: lake, WorkDir: t.TempDir(), CacheDir: t.TempDir(), History: lake, StatsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	h := &diffHistory{t: t, lake: lake, rng: rand.New(rand.NewPCG(1, 2)), head: root, nextID: 1}
	for n, query := range []string{
		"SELECT * FROM (VALUES (4::BIGINT, 'a', 8.5::DOUBLE)) v(id, region, amount)",
		"SELECT * FROM (VALUES (5::BIGINT, 'a', 8.5::DOUBLE)) v(id, region, amount)",
		"SELECT * FROM (VALUES (6::BIGINT, 9.5::DOUBLE)) v(id, amount)",
		"SELECT * FROM (VALUES (7::BIGINT, 9.5::DOUBLE)) v(id, amount)",
	} {
		s := lake.next("s")
		lake.branch(t, h.head, s)
		lake.commit(s, []string{h.head}, nil)
		lake.write(t, s, "data/t/part-"+s[:8]+".parquet", query)
		rep := h.compare(e, Request{Dataset: "d", Suite: suite, Repository: "r", Ref: s, BaseRef: h.head, BaseName: "main", BatchTime: batchTime})
		t.Logf("batch %d: %s %q", n, rep.Mode, rep.ModeReason)
		if !rep.Passed {
			t.Fatalf("batch %d: %+v", n, rep.Checks)
		}
		m := lake.next("c")
		lake.mergeDirs(t, h.head, s, h.head, m)
		text, err := NewAttestation("d", suite, rep, s, h.head).Encode(nil)
		if err != nil {
			t.Fatal(err)
		}
		lake.commit(m, []string{h.head, s}, map[string]string{MetaAttestation: text})
		h.head = m
	}
}
