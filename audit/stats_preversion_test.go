package audit

import (
	"context"
	"testing"
)

// TestPreVersionFiguresAreNotKeptWhenARecordIsCompleted: a statistics
// record written before records held the file's columns may hold figures
// of a scan of files of several types (in their union's type: a BIGINT
// file's rows read as DOUBLE, "10.0"). Such a record is computed again
// where it is asked for (has wants the columns); but completed by a run
// that needs other figures of the file (another suite over the table, a
// volume_change's summary), its old figures were kept beside the new
// columns, and a later audit took them as this version's. Here the old
// record counts 0 of file A's rows meeting CAST(id AS VARCHAR) NOT LIKE
// '%.0' (read as DOUBLE beside a file long gone); A's BIGINT 10 and 20
// meet it. A run of another suite completes the record (what storeStats
// puts); then a batch adding 30 must fail row_count(where ..., max 3) as
// the full audit does (4 rows), not pass it incrementally on 0 + 1 + 1.
func TestPreVersionFiguresAreNotKeptWhenARecordIsCompleted(t *testing.T) {
	const where = "CAST(id AS VARCHAR) NOT LIKE '%.0'"
	three := 3.0
	suite := Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: []Check{
		{Name: "whole_ids", Kind: KindRowCount, Table: "t", Where: where, Max: &three},
	}}
	lake := &lakeSim{dirSource: &dirSource{root: t.TempDir(), downloads: map[string]int{}, sums: map[string]string{}}, commits: map[string]CommitInfo{}}
	e, err := New(Options{Source: lake, WorkDir: t.TempDir(), History: lake, StatsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	req := func(ref, base string, full bool) Request {
		return Request{Dataset: "x", Repository: "r", Ref: ref, BaseRef: base, BaseName: "main", BatchTime: batchTime, Suite: suite, Full: full}
	}
	c0, s0, c1, b1 := cid("p0"), cid("ps0"), cid("p1"), cid("pb1")
	lake.commit(c0, nil, nil)
	lake.write(t, c0, "data/t/part-0.parquet", "SELECT * FROM (VALUES (10::BIGINT), (20::BIGINT)) v(id)")
	lake.branch(t, c0, s0)
	lake.commit(s0, []string{c0}, nil)
	lake.write(t, s0, "data/t/part-1.parquet", "SELECT 15::BIGINT AS id")
	rep, err := e.Run(ctx, req(s0, c0, true))
	if err != nil || !rep.Passed {
		t.Fatalf("the foundation's audit: %v %+v", err, rep.Checks)
	}
	lake.mergeDirs(t, c0, s0, c0, c1)
	text, err := NewAttestation("x", suite, rep, s0, c0).Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	lake.commit(c1, []string{c0, s0}, map[string]string{MetaAttestation: text})

	objs, err := lake.List(ctx, "r", c1, "data/t/part-0.parquet")
	if err != nil || len(objs) != 1 {
		t.Fatalf("listing A: %v %v", objs, err)
	}
	key := statsKey("r", objs[0])
	// The record as a version before this one wrote it: no columns, the
	// count of a scan beside a DOUBLE file.
	if err := e.stats.put(key, fileStats{Rows: 2, Counts: map[string]int64{whereKey(where): 0}}); err != nil {
		t.Fatal(err)
	}
	// Completed by a run needing only the key's figures (another suite).
	if err := e.stats.put(key, fileStats{Rows: 2, Schema: [][2]string{{"id", "BIGINT"}},
		Cols: map[string]colStats{"id": {Type: "BIGINT", NonNull: 2, Min: "10", Max: "20"}}}); err != nil {
		t.Fatal(err)
	}

	lake.branch(t, c1, b1)
	lake.commit(b1, []string{c1}, nil)
	lake.write(t, b1, "data/t/part-2.parquet", "SELECT 30::BIGINT AS id")
	full, err := e.Run(ctx, req(b1, c1, true))
	if err != nil || full.Passed {
		t.Fatalf("the full audit should fail 4 rows: %v %+v", err, full.Checks)
	}
	inc, err := e.Run(ctx, req(b1, c1, false))
	if err != nil {
		t.Fatal(err)
	}
	if inc.Mode != ModeIncremental {
		t.Fatalf("the batch's audit is %s: %s", inc.Mode, inc.ModeReason)
	}
	if inc.Passed || inc.Checks[0].Observed != full.Checks[0].Observed {
		t.Fatalf("incremental passed=%v %q; full passed=%v %q", inc.Passed, inc.Checks[0].Observed, full.Passed, full.Checks[0].Observed)
	}
}
