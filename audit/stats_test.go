package audit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// growingTable makes c000 with n files of 100 distinct ascending ids and
// an attested publish c001 on it, so that batches made from c001 can be
// incremental. It returns the lake and the suite.
func growingTable(t testing.TB, lake *lakeSim, n int) Suite {
	suite := Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: []Check{
		{Kind: KindNotNull, Table: "t", Column: "id"},
		{Kind: KindUnique, Table: "t", Column: "id"},
		{Kind: KindRowCount, Table: "t", Min: f64(1)},
	}}
	lake.commit("c000", nil, nil)
	for i := range n {
		lake.write(t, "c000", fmt.Sprintf("data/t/part-%04d.parquet", i), fmt.Sprintf("SELECT i AS id FROM range(%d, %d) r(i)", i*100, i*100+100))
	}
	lake.branch(t, "c000", "s000")
	lake.commit("s000", []string{"c000"}, nil)
	lake.branch(t, "s000", "c001")
	rep := passingReport(suite)
	text, err := NewAttestation("d", suite, rep, "s000", "c000").Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	lake.commit("c001", []string{"c000", "s000"}, map[string]string{MetaAttestation: text})
	return suite
}

// TestIncrementalReadsTheBatchAndWhatCanCollide: once lakewap has the
// unchanged files' statistics, an incremental audit downloads the batch's
// files and, for unique, only the unchanged files whose key range holds a
// batch key; a duplicate there fails the check naming that file.
func TestIncrementalReadsTheBatchAndWhatCanCollide(t *testing.T) {
	lake := newLakeSim(t)
	suite := growingTable(t, lake, 10)
	e, err := New(Options{Source: lake, WorkDir: t.TempDir(), History: lake})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	batch := func(name, query string) schemas.AuditReport {
		t.Helper()
		ref := cid(name) // statistics are kept of files read at a commit (review 44)
		lake.branch(t, "c001", ref)
		lake.commit(ref, []string{"c001"}, nil)
		lake.write(t, ref, "data/t/batch-"+name+".parquet", query)
		rep, err := e.Run(ctx, Request{Dataset: "d", Suite: suite, Repository: "r", Ref: ref, BaseRef: "c001", BaseName: "main"})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Mode != ModeIncremental {
			t.Fatalf("mode %s: %s", rep.Mode, rep.ModeReason)
		}
		return rep
	}
	oldReads := func(ref string) []string {
		var out []string
		for i := range 10 {
			if p := fmt.Sprintf("data/t/part-%04d.parquet", i); lake.downloaded(ref, p) > 0 {
				out = append(out, p)
			}
		}
		return out
	}
	// The first audit computes the unchanged files' statistics from them.
	rep := batch("s1", "SELECT i AS id FROM range(1000, 1050) r(i)")
	if !rep.Passed || len(oldReads(cid("s1"))) != 10 || rep.Checks[2].Observed != "1050 rows" {
		t.Fatalf("first: passed=%v, read %v, %+v", rep.Passed, oldReads(cid("s1")), rep.Checks)
	}
	rep = batch("s2", "SELECT i AS id FROM range(2000, 2050) r(i)")
	if !rep.Passed || len(oldReads(cid("s2"))) != 0 || lake.downloaded(cid("s2"), "data/t/batch-s2.parquet") != 1 {
		t.Fatalf("second: passed=%v, read %v", rep.Passed, oldReads(cid("s2")))
	}
	rep = batch("s3", "SELECT i AS id FROM range(2000, 2010) r(i) UNION ALL SELECT 345")
	if got := oldReads(cid("s3")); rep.Passed || len(got) != 1 || got[0] != "data/t/part-0003.parquet" {
		t.Fatalf("collision: passed=%v, read %v", rep.Passed, got)
	}
	u := rep.Checks[1]
	if u.Status != schemas.StatusFail || u.Observed != "1 duplicate rows of 1011" ||
		!strings.Contains(u.Message, "part-0003.parquet") || len(u.SampleRows) != 1 || u.SampleRows[0] != `{"id":345,"duplicate_count":2}` {
		t.Fatalf("unique: %+v", u)
	}
}

// TestStatsStoreDistrustsDoubtfulRecords: a record cut short, changed, put
// under another file's name or over its budget is not used, and the engine
// then computes the figures from the file again.
func TestStatsStoreDistrustsDoubtfulRecords(t *testing.T) {
	dir := t.TempDir()
	s, err := NewStatsStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	a := statsKey("r", Object{Address: "local://a", Size: 10})
	b := statsKey("r", Object{Address: "local://b", Size: 10})
	st := fileStats{Rows: 7, Cols: map[string]colStats{"id": {Type: "BIGINT", NonNull: 7, Min: "1", Max: "7"}}}
	if err := s.put(a, st); err != nil {
		t.Fatal(err)
	}
	fresh := func() *StatsStore {
		s, err := NewStatsStore(dir) // a restart: nothing in memory
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if got, ok := fresh().get(a); !ok || got.Rows != 7 || got.Cols["id"].Max != "7" {
		t.Fatalf("a whole record is used after a restart: %+v %v", got, ok)
	}
	good, err := os.ReadFile(s.path(a))
	if err != nil {
		t.Fatal(err)
	}
	for name, damage := range map[string]func() []byte{
		"cut short":    func() []byte { return good[:len(good)/2] },
		"rows changed": func() []byte { return []byte(strings.Replace(string(good), `"rows":7`, `"rows":9`, 1)) },
		"max changed":  func() []byte { return []byte(strings.Replace(string(good), `"max":"7"`, `"max":"3"`, 1)) },
		"over budget":  func() []byte { return append(good, make([]byte, maxStatsRecordBytes)...) },
		"empty":        func() []byte { return nil },
	} {
		if err := os.WriteFile(s.path(a), damage(), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, ok := fresh().get(a); ok {
			t.Errorf("%s: record used: %+v", name, got)
		}
	}
	// Another file's whole record, copied under this file's name.
	if err := s.put(b, fileStats{Rows: 1}); err != nil {
		t.Fatal(err)
	}
	other, _ := os.ReadFile(s.path(b))
	os.WriteFile(s.path(a), other, 0o644)
	if got, ok := fresh().get(a); ok {
		t.Errorf("another file's record used: %+v", got)
	}
	// A crash while writing leaves a temporary file, never a torn record.
	var crashed bool
	s3 := fresh()
	s3.failpoint = func(name string) {
		if name == "stats_half_written" {
			crashed = true
			if _, ok := fresh().get(b); !ok {
				t.Error("the record being replaced is gone mid-write")
			}
		}
	}
	if err := s3.put(b, fileStats{Rows: 2}); err != nil || !crashed {
		t.Fatal(err, crashed)
	}
	if got, ok := fresh().get(b); !ok || got.Rows != 2 {
		t.Fatalf("after the write: %+v %v", got, ok)
	}
}

// TestDamagedStatisticsAreRebuilt: with every stored record damaged after
// a restart, an incremental audit reads the unchanged files again and
// still finds the duplicate an old file holds.
func TestDamagedStatisticsAreRebuilt(t *testing.T) {
	lake := newLakeSim(t)
	suite := growingTable(t, lake, 4)
	statsDir := t.TempDir()
	run := func(ref string) schemas.AuditReport {
		e, err := New(Options{Source: lake, WorkDir: t.TempDir(), History: lake, StatsDir: statsDir})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		rep, err := e.Run(context.Background(), Request{Dataset: "d", Suite: suite, Repository: "r", Ref: ref, BaseRef: "c001"})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	s1, s2 := cid("s1"), cid("s2") // statistics are kept of files read at a commit (review 44)
	lake.branch(t, "c001", s1)
	lake.commit(s1, []string{"c001"}, nil)
	lake.write(t, s1, "data/t/b1.parquet", "SELECT 5000 AS id")
	if rep := run(s1); !rep.Passed || rep.Mode != ModeIncremental {
		t.Fatalf("%+v", rep)
	}
	// Every record now claims its file holds only the ids 0..1.
	n := 0
	filepath.WalkDir(statsDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			os.WriteFile(p, []byte(strings.NewReplacer(`"max":"`, `"max":"1`, `"rows":`, `"rows":1`).Replace(string(b))), 0o644)
			n++
		}
		return nil
	})
	if n < 4 {
		t.Fatalf("%d records stored", n)
	}
	lake.branch(t, "c001", s2)
	lake.commit(s2, []string{"c001"}, nil)
	lake.write(t, s2, "data/t/b2.parquet", "SELECT 250 AS id")
	rep := run(s2)
	if rep.Passed || rep.Checks[1].Observed != "1 duplicate rows of 401" || rep.Checks[2].Observed != "401 rows" {
		t.Fatalf("%+v", rep.Checks)
	}
	if lake.downloaded(s2, "data/t/part-0000.parquet") == 0 {
		t.Fatal("the damaged statistics were not rebuilt from the file")
	}
}
