package audit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReview42Int96GuardThatCannotScanAFileRefusesIt: int96Range scans
// each Parquet file's INT96 columns for times pyarrow and pandas wrap
// around (TestInt96OutsidePandasRangeIsRefused), and passed a file its
// scan failed on. testdata/review42_int96_lz4_hadoop.parquet (pyarrow
// 26.0.1, use_deprecated_int96_timestamps) has a column a (1, 2) and an
// INT96 column named "t\x00s" holding 1500-01-01 and 2025-05-31, which
// pandas 3.1.1 reads as 2084-07-20 23:34:33.709551616 and 2025-05-31.
// The guard's query names the column, and DuckDB ends the statement at the
// NUL (a parser error), while the table's view (SELECT *) and a check of a
// read it: not_null of a passed on a table pandas reads as dated 59 years
// ahead. A guard that cannot scan a file DuckDB reads must refuse it.
func TestReview42Int96GuardThatCannotScanAFileRefusesIt(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "review42_int96_lz4_hadoop.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if answers := review40Pandas(t, []string{"parquet:ts:" + filepath.Join("testdata", "review42_int96_lz4_hadoop.parquet")}); answers != nil {
		if got := review40Text(answers[0]); !strings.HasPrefix(got, "2084-07-20") {
			t.Fatalf("pandas reads ts as %s, want 2084-07-20...: the case shows nothing", got)
		}
	}
	for _, cache := range []string{"", filepath.Join(t.TempDir(), "cache")} {
		e := newEngine(t, oneFileBatch(t, b), cache)
		for range 2 { // the second run of an engine with a cache may take the memo
			rep := auditTableAt(t, e, "t/", FormatParquet, Check{Kind: KindNotNull, Column: "a"})
			if rep.Passed || !strings.Contains(refusal(rep), "t/part-0.parquet") {
				t.Fatalf("cache %v: passed %v (%s), want the file refused by name", cache != "", rep.Passed, refusal(rep))
			}
			t.Logf("refused: %s", refusal(rep))
		}
	}
}

// TestReview42GuardScanOutOfMemoryIsInfrastructure: a reader guard's scan
// that fails for want of memory ends the audit as infrastructure (retried
// later), neither passing the file unseen (int96Range did) nor refusing an
// honest table. testdata/int96_in_range.parquet passes without the fault.
func TestReview42GuardScanOutOfMemoryIsInfrastructure(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "int96_in_range.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, oneFileBatch(t, b), "")
	check := Check{Name: "fresh", Kind: KindFreshness, Table: "t", Column: "ts", MaxAge: "48h"}
	req := Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
		Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{check}}}
	if rep, err := e.Run(context.Background(), req); err != nil || !rep.Passed {
		t.Fatalf("without the fault: err %v, passed %v (%s); want it passed", err, rep.Passed, refusal(rep))
	}
	faulted := 0
	e.scanFault = func(tag string) error {
		if tag != "int96" {
			return nil
		}
		faulted++
		return errors.New("Out of Memory Error: could not allocate block of size 256.0 KiB (488.2 MiB/488.2 MiB used)")
	}
	rep, err := e.Run(context.Background(), req)
	if faulted == 0 {
		t.Fatal("the int96 guard did not scan the file: the case shows nothing")
	}
	if !errors.Is(err, ErrInfrastructure) {
		t.Fatalf("an out-of-memory guard scan: err %v, report passed %v %s; want an infrastructure error", err, rep.Passed, refusal(rep))
	}
}
