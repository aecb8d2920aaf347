package audit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestSplitMemory: the one-thread database takes a sixteenth of the
// memory limit, at most soloMemory, and the engine's database the rest; without
// a limit, soloMemory, the other DuckDB's default.
func TestSplitMemory(t *testing.T) {
	for _, limit := range []string{"512MB", "1GB", "4GiB", "1.5 gb", "100000000", "64MiB"} {
		n, ok := memoryBytes(limit)
		if !ok || n <= 0 {
			t.Fatalf("memoryBytes(%q) = %d, %v", limit, n, ok)
		}
		wide, solo := splitMemory(limit)
		w, okw := memoryBytes(wide)
		s, oks := memoryBytes(solo)
		if !okw || !oks {
			t.Fatalf("splitMemory(%q) = %q, %q: not limits DuckDB reads", limit, wide, solo)
		}
		if want := min(n/16, soloMemory); s > want || want-s >= 1<<10 {
			t.Errorf("splitMemory(%q): one-thread database %d bytes, want %d", limit, s, want)
		}
		if w+s > n || n-(w+s) >= 2<<10 {
			t.Errorf("splitMemory(%q): %d + %d bytes, want the limit's %d", limit, w, s, n)
		}
	}
	if wide, solo := splitMemory(""); wide != "" || solo != "65536KiB" {
		t.Errorf(`splitMemory("") = %q, %q; want DuckDB's default and 64 MiB`, wide, solo)
	}
	if n, _ := memoryBytes("1KB"); n != 1000 {
		t.Errorf("1KB is %d bytes, want 1000 as DuckDB reads it", n)
	}
}

// smallTable is a Parquet file of rows ids 0..n-1, with a NULL where
// nullAt >= 0.
func smallTable(t *testing.T, n, nullAt int) []byte {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "t.parquet")
	copySQL(t, "COPY (SELECT CASE WHEN i = "+strconv.Itoa(nullAt)+" THEN NULL ELSE i END AS id, 'x' || i AS name FROM range("+strconv.Itoa(n)+") r(i)) TO "+quoteLiteral(dst)+" (FORMAT parquet)")
	b, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSmallRunsRunOnTheOneThreadDatabase: an audit of a batch of at most
// SmallRunBytes runs on the opening's one-thread database, one over it on
// the engine's, and both give the verdicts an engine without the
// one-thread database gives.
func TestSmallRunsRunOnTheOneThreadDatabase(t *testing.T) {
	good, bad := smallTable(t, 100, -1), smallTable(t, 100, 7)
	checks := []Check{{Kind: KindNotNull, Column: "id"}, {Kind: KindUnique, Columns: []string{"name"}}}
	// results are the checks' results, durations left out.
	results := func(e *Engine) []string {
		var out []string
		for _, c := range checks {
			rep := auditTableAt(t, e, "t/", FormatParquet, c)
			for _, r := range rep.Checks {
				rows, failures := deref(r.RowsChecked), deref(r.Failures)
				r.DurationMs, r.RowsChecked, r.Failures = 0, nil, nil
				out = append(out, fmt.Sprintf("%+v %v %v", r, rows, failures))
			}
		}
		return out
	}
	for _, c := range []struct {
		name      string
		small     int64 // Options.SmallRunBytes
		wantSolo  bool
		threads   int
		wantTwoDB bool
	}{
		{"small batch", 0, true, 2, true},
		{"over SmallRunBytes", int64(min(len(good), len(bad))) - 1, false, 2, true},
		{"turned off", -1, false, 2, false},
		{"one thread configured", 0, false, 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, file := range []struct {
				b    []byte
				pass bool
			}{{good, true}, {bad, false}} {
				e, err := New(Options{Source: oneFileBatch(t, file.b), WorkDir: t.TempDir(), MemoryLimit: "512MB", Threads: c.threads, SmallRunBytes: c.small})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { e.Close() })
				if (e.duck.solo != nil) != c.wantTwoDB {
					t.Fatalf("one-thread database opened %v, want %v", e.duck.solo != nil, c.wantTwoDB)
				}
				if c.wantTwoDB {
					for _, s := range []struct {
						side *side
						want string
					}{{&e.duck.side, strconv.Itoa(c.threads)}, {e.duck.solo, "1"}} {
						var threads string
						if err := s.side.db.QueryRow("SELECT current_setting('threads')::VARCHAR").Scan(&threads); err != nil || threads != s.want {
							t.Fatalf("threads %q (%v), want %s", threads, err, s.want)
						}
					}
				}
				// The same audits on an engine without the one-thread database.
				ref, err := New(Options{Source: oneFileBatch(t, file.b), WorkDir: t.TempDir(), MemoryLimit: "512MB", Threads: c.threads, SmallRunBytes: -1})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { ref.Close() })
				got, want := results(e), results(ref)
				if !slices.Equal(got, want) {
					t.Fatalf("results\n%s\nwant (one database)\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
				if failed := strings.Contains(strings.Join(got, ""), "Status:fail"); failed == file.pass {
					t.Fatalf("results %s: want passing %v", strings.Join(got, "\n"), file.pass)
				}
				if ref.SoloRuns() != 0 {
					t.Fatalf("the engine without a one-thread database ran %d runs on one", ref.SoloRuns())
				}
				if got := e.SoloRuns() == int64(len(checks)); got != c.wantSolo {
					t.Fatalf("runs on the one-thread database %d, want solo %v", e.SoloRuns(), c.wantSolo)
				}
			}
		})
	}
}

// TestSmallRunThatFailsOnTheOneThreadDatabaseRunsOnTheEngines: a small
// audit that fails for the machine's sake on the one-thread database (out
// of its memory: a file of a few bytes may be thousands of columns wide,
// TestReview33WideArrowSchemaIsNotRefused) runs again at once on the
// engine's database, which gives the verdict. Without that it would end
// as infrastructure, and every retry could fail the same way. The fault
// is injected (scanFault, tag "int96", the first time only): the
// one-thread database's memory could not be made to run out in a
// targeted way (DuckDB spills, and unique counts with a bitmap).
func TestSmallRunThatFailsOnTheOneThreadDatabaseRunsOnTheEngines(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "int96_in_range.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, oneFileBatch(t, b), "")
	faulted := 0
	e.scanFault = func(tag string) error {
		if tag != "int96" || faulted > 0 {
			return nil
		}
		faulted++
		return errors.New("Out of Memory Error: could not allocate block of size 256.0 KiB (32.0 MiB/32.0 MiB used)")
	}
	req := Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
		Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{{Name: "fresh", Kind: KindFreshness, Table: "t", Column: "ts", MaxAge: "48h"}}}}
	rep, err := e.Run(context.Background(), req)
	if faulted != 1 {
		t.Fatalf("faulted %d: the int96 guard did not scan the file, the case shows nothing", faulted)
	}
	if err != nil || !rep.Passed {
		t.Fatalf("err %v, passed %v (%s); want it passed on the engine's database", err, rep.Passed, checkMessages(rep))
	}
	if e.SoloRuns() != 1 {
		t.Fatalf("one-thread runs %d, want 1: the second try ran on the one-thread database again", e.SoloRuns())
	}
	// The next audit runs on the one-thread database again.
	if _, err := e.Run(context.Background(), req); err != nil || e.SoloRuns() != 2 {
		t.Fatalf("next audit: err %v, one-thread runs %d, want 2", err, e.SoloRuns())
	}
}

// TestCrashOfTheOneThreadDatabaseRetiresTheOpening: a crash that
// invalidates the one-thread database under a small audit in flight
// retires the opening (both databases), and the audit runs again at once
// on a fresh opening's other database and passes; the next small audits
// run on the fresh opening's one-thread database.
func TestCrashOfTheOneThreadDatabaseRetiresTheOpening(t *testing.T) {
	src := newBatchSource(t)
	src.writeRaw(t, "b1", "honest/a.csv", "v\nx\ny\n")
	// The crashing read takes a block of 30.5 MiB: the one-thread
	// database's memory at its most (soloMemory).
	e, err := New(Options{Source: src, WorkDir: t.TempDir(), MemoryLimit: "2GB", Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	poison := poisonCSV(t, e)
	crashedOn := e.smallSide()
	var once sync.Once
	var crash error
	e.onStatement = func(string) {
		once.Do(func() { _, crash = crashedOn.db.ExecContext(context.Background(), poison) })
	}
	check := Check{Name: "c", Table: "t", Kind: KindNotNull, Column: "v"}
	rep := auditTableAt(t, e, "honest/", FormatCSV, check)
	if crash == nil || !invalidating(crash) {
		t.Fatalf("the statement did not crash DuckDB (%v): the case shows nothing", crash)
	}
	if !rep.Passed {
		t.Fatalf("the audit in flight over the crash: %s, want it run again and passed", refusal(rep))
	}
	if n := e.Reopened(); n != 1 {
		t.Fatalf("reopened %d times, want 1", n)
	}
	if e.smallSide() == crashedOn {
		t.Fatal("the crashed opening is still the engine's")
	}
	before := e.SoloRuns()
	if rep := auditTableAt(t, e, "honest/", FormatCSV, check); !rep.Passed || e.SoloRuns() != before+1 {
		t.Fatalf("next audit: passed %v, one-thread runs %d, want %d", rep.Passed, e.SoloRuns(), before+1)
	}
}
