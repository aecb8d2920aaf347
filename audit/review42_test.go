package audit

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
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

// TestReview42TablesWithAFileRowNumberColumnAreAudited: the comparison of
// a Parquet file's row-group statistics (claims.go) and of its page index
// (pageindex.go) with its data placed each row by read_parquet's
// file_row_number option, which DuckDB refuses over a file having a column
// so named (any case: Binder Error, "Using file_row_number option on file
// with column named file_row_number is not supported"), so an honest
// table with such a column was refused as one whose claims cannot be
// compared. testdata/review42_file_row_number.parquet (pyarrow 26.0.1:
// row groups of 3, 5 and 2 rows, pages of 2, a page index; columns
// file_row_number, all 0, id 0 to 9, v 0 to 4.5) passes now, on the
// engine that settles claims in Go where it can and on one that leaves
// them all to DuckDB, and its forged copies are still refused, by the
// comparison with the data: a ColumnIndex whose page 0 of id claims min 1
// (it holds 0 and 1), a row group 1 claiming id's max 6 (it holds 7).
func TestReview42TablesWithAFileRowNumberColumnAreAudited(t *testing.T) {
	honest, err := os.ReadFile(filepath.Join("testdata", "review42_file_row_number.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	pageIndex := bytes.Clone(honest)
	forgePageIndexMinTo(t, pageIndex, 1) // 8, above the page's max (1), is refused unread
	dst := filepath.Join(t.TempDir(), "forged.parquet")
	groupMax := forgeMax(t, honest, 7, 6, dst)
	for _, c := range []struct {
		name string
		b    []byte
		want string // in the refusal; "" for a pass
	}{
		{"honest", honest, ""},
		{"forged column index", pageIndex, "column index says page 0"},
		{"forged row group max", groupMax, "row group 1"},
	} {
		for _, notInGo := range []bool{false, true} {
			for _, cache := range []string{"", filepath.Join(t.TempDir(), "cache")} {
				e := newEngine(t, oneFileBatch(t, c.b), cache)
				e.claimsNotInGo = notInGo
				for range 2 { // the second run of an engine with a cache may take the memo
					rep := auditTableAt(t, e, "t/", FormatParquet, Check{Kind: KindNotNull, Column: "id"})
					msg := checkMessages(rep)
					switch {
					case c.want == "" && !rep.Passed:
						t.Errorf("%s, claims not in Go %v, cache %v: refused: %s", c.name, notInGo, cache != "", msg)
					case c.want != "" && (rep.Passed || !strings.Contains(msg, "t/part-0.parquet") || !strings.Contains(msg, c.want) || !strings.Contains(msg, `column "id"`)):
						t.Errorf("%s, claims not in Go %v, cache %v: passed %v (%s), want refused naming the file, column id and %q", c.name, notInGo, cache != "", rep.Passed, msg, c.want)
					}
				}
			}
		}
	}
}

// forgePageIndexMinTo is forgePageIndexMin claiming min v (of 0 to 255).
func forgePageIndexMinTo(t *testing.T, b []byte, v byte) {
	t.Helper()
	n := int64(binary.LittleEndian.Uint32(b[len(b)-8:]))
	ft, err := decodeFooter(b[int64(len(b))-8-n : len(b)-8])
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ft.chunks {
		if c.rowGroup != 0 || c.path != "id" || c.colIdxOffset < 0 {
			continue
		}
		ci := b[c.colIdxOffset : c.colIdxOffset+c.colIdxLength]
		// min_values' first element: its length (8) and 8 zero bytes.
		if i := bytes.Index(ci, append([]byte{8}, make([]byte, 8)...)); i >= 0 {
			ci[i+1] = v
			return
		}
	}
	t.Fatal("no column index of id in row group 0 whose first page's min is 0")
}

// TestReview42RowNumberedNamesNoColumnOfTheFile: a file with a column
// named file_row_number, in any case, has its rows numbered under a name
// none of its columns has, case ignored; other files by the option.
func TestReview42RowNumberedNamesNoColumnOfTheFile(t *testing.T) {
	chunks := func(names ...string) []chunkMeta {
		return each(names, func(n string) chunkMeta { return chunkMeta{parts: []string{n}} })
	}
	for _, c := range []struct {
		cols   []string
		row    string
		option bool
	}{
		{[]string{"a", "b"}, "file_row_number", true},
		{[]string{"a", "File_Row_Number"}, "lakewap_row_number", false},
		{[]string{"file_row_number", "LAKEWAP_ROW_NUMBER", "lakewap_row_number_1"}, "lakewap_row_number_2", false},
	} {
		from, row := rowNumbered("/f.parquet", chunks(c.cols...))
		if row != c.row || strings.Contains(from, "file_row_number = true") != c.option {
			t.Errorf("%v: read %s numbering rows as %s; want %s, by the option %v", c.cols, from, row, c.row, c.option)
		}
	}
}

// TestReview42AcceptedValuesOverTimestampsWithAZoneAreRefused: DuckDB
// renders a timestamp with a zone as 2024-01-01 01:02:03+00, pandas 3.1.1
// as 2024-01-01 01:02:03+00:00; a regex over such a column was refused
// for it (pandasOtherText), and an accepted_values check, which compares
// the same text, passed a table where pandas' astype(str).isin, and isin,
// find every row failing (as review 39 refused it over timestamps without
// a zone and nested columns). A TIMESTAMP(NANOS) adjusted to UTC is worse:
// DuckDB 1.5 reads it as TIMESTAMP WITH TIME ZONE, in microseconds, so
// 01:02:03.000000500, which pandas reads, is 01:02:03 to the check. Files
// by pyarrow 26.0.1: timestamp[us, tz=UTC] of whole seconds, and
// timestamp[ns, tz=UTC] without statistics (the page statistics of its
// nanoseconds are refused otherwise: their bounds are not DuckDB's data).
func TestReview42AcceptedValuesOverTimestampsWithAZoneAreRefused(t *testing.T) {
	values := []string{"2024-01-01 01:02:03+00", "2024-01-01 04:05:06+00"}
	for _, file := range []string{"review42_timestamptz.parquet", "review42_timestamptz_nanos.parquet"} {
		path := filepath.Join("testdata", file)
		if answers := review40Pandas(t, []string{"parquet:ts:" + path}); answers != nil {
			for _, v := range strings.Split(review40Text(answers[0]), ",") {
				if slices.Contains(values, v) || !strings.HasSuffix(v, "+00:00") {
					t.Fatalf("%s: pandas reads ts as %s: the case shows nothing", file, review40Text(answers[0]))
				}
			}
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, cache := range []string{"", filepath.Join(t.TempDir(), "cache")} {
			e := newEngine(t, oneFileBatch(t, b), cache)
			for range 2 {
				rep := auditTableAt(t, e, "t/", FormatParquet, Check{Kind: KindAcceptedValues, Column: "ts", Values: values})
				if rep.Passed || !strings.Contains(refusal(rep), "TIMESTAMP WITH TIME ZONE") {
					t.Fatalf("%s, cache %v: passed %v (%s %s), want refused naming the column's type", file, cache != "", rep.Passed, refusal(rep), rep.Checks[0].Observed)
				}
			}
		}
	}
}

// TestReview42AcceptedValuesOverTimesPandasRendersOtherwise: DuckDB
// renders a TIME with a fraction as 01:02:03.5, pandas 3.1.1 (a
// datetime.time) as 01:02:03.500000; a TIME WITH TIME ZONE (DuckDB's, a
// Parquet TIME adjusted to UTC) as 04:05:06+00 where pyarrow reads a time
// without a zone, which pandas renders 04:05:06. An accepted_values check
// of DuckDB's text passed both, where pandas' astype(str).isin finds the
// rows failing. A TIME of whole seconds renders alike and passes. The
// files are written by DuckDB.
func TestReview42AcceptedValuesOverTimesPandasRendersOtherwise(t *testing.T) {
	cases := []struct {
		name, sql string
		values    []string
		passes    bool
	}{
		{"fraction", "SELECT '01:02:03.5'::TIME AS t UNION ALL SELECT '04:05:06'::TIME", []string{"01:02:03.5", "04:05:06"}, false},
		{"zone", "SELECT '01:02:03+00'::TIMETZ AS t UNION ALL SELECT '04:05:06+00'::TIMETZ", []string{"01:02:03+00", "04:05:06+00"}, false},
		{"whole_seconds", "SELECT '01:02:03'::TIME AS t UNION ALL SELECT '04:05:06'::TIME", []string{"01:02:03", "04:05:06"}, true},
	}
	src := newBatchSource(t)
	var args []string
	for _, c := range cases {
		f := filepath.Join(src.root, "b1", c.name, "a.parquet")
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		copySQL(t, "COPY ("+c.sql+") TO "+quoteLiteral(f)+" (FORMAT parquet)")
		args = append(args, "parquet:t:"+f)
	}
	if answers := review40Pandas(t, args); answers != nil {
		for i, c := range cases {
			got := strings.Split(review40Text(answers[i]), ",")
			if slices.Equal(got, c.values) != c.passes {
				t.Fatalf("%s: pandas reads %v, DuckDB %v: the case shows nothing", c.name, got, c.values)
			}
		}
	}
	for _, cache := range []string{"", filepath.Join(t.TempDir(), "cache")} {
		e := newEngine(t, src, cache)
		for _, c := range cases {
			for range 2 {
				rep := auditTableAt(t, e, c.name+"/", FormatParquet, Check{Kind: KindAcceptedValues, Column: "t", Values: c.values})
				if rep.Passed != c.passes {
					t.Errorf("%s, cache %v: passed %v (%s %s), want %v", c.name, cache != "", rep.Passed, refusal(rep), rep.Checks[0].Observed, c.passes)
				}
			}
		}
	}
}

// TestReview42AcceptedValuesOverTimesIncrementally: a table of whole
// seconds attested, and a batch adding a TIME with a fraction under an
// accepted_values of DuckDB's text: the statistics of the unchanged files
// do not say whether a value has a fraction, so the audit runs full and
// refuses it; a batch of whole seconds passes.
func TestReview42AcceptedValuesOverTimesIncrementally(t *testing.T) {
	times := func(vs ...string) string {
		return "SELECT * FROM (VALUES " + strings.Join(each(vs, func(v string) string { return "(TIME '" + v + "')" }), ", ") + ") v(t)"
	}
	suite := Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: []Check{{Kind: KindAcceptedValues, Table: "t", Column: "t",
		Values: []string{"01:02:03", "04:05:06", "07:08:09.5"}}}}
	eachCache(t, func(t *testing.T, cache bool) {
		r := newMemoRigSQL(t, cache, map[string]string{"data/t/d.parquet": times("01:02:03")}, times("04:05:06"), suite)
		if rep := r.audit(Request{Ref: r.batchSQL("c001", "s2", "data/t/s2/part-0.parquet", times("04:05:06")), BaseRef: cid("c001")}); !rep.Passed {
			t.Fatalf("whole seconds: %s passed %v: %s", rep.Mode, rep.Passed, checkMessages(rep))
		}
		rep := r.audit(Request{Ref: r.batchSQL("c001", "s1", "data/t/s1/part-0.parquet", times("07:08:09.5")), BaseRef: cid("c001")})
		if rep.Passed || !strings.Contains(checkMessages(rep), "01:02:03.500000") {
			t.Fatalf("a fraction: %s %q passed %v: %s", rep.Mode, rep.ModeReason, rep.Passed, checkMessages(rep))
		}
	})
}
