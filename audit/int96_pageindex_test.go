package audit

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// testdata/int96_page_index.parquet: pyarrow 26.0.1 (write_page_index,
// PLAIN, pages of 100 rows, no compression) wrote id 0..299 and ts a
// FIXED_LEN_BYTE_ARRAY(12) of INT96 times, 2024-01-01 12:00:00 (Julian
// day 2460311) in rows 0..149 and one microsecond later in the others,
// and its footer's two type fields were made INT96: a file of INT96 page
// bounds and row-group claims that hold. testdata/int96_page_stats.parquet
// is the same written without a page index, so with statistics in its
// data pages' headers (pyarrow's default). No
// writer at hand emits INT96 page bounds (pyarrow 26.0.1 with
// write_page_index and parquet-mr 1.17.0 write no ColumnIndex for an
// INT96 leaf), and none of the readers at hand skips pages by them
// (DuckDB 1.5.6 skips no page at all; DuckDB 2.0.1 and Spark 4.3.0's
// readers skip by an INT64 ColumnIndex, not by an INT96 one, and DuckDB
// 2.0.1 by INT64 page header statistics, not by INT96 ones), but a
// writer may write them and a reader may skip by them as it does by the
// other types'.

// int96Bytes is an INT96 time: nanoseconds of the day, then the Julian day.
func int96Bytes(day uint32, nanos int64) []byte {
	var b [12]byte
	binary.LittleEndian.PutUint64(b[:], uint64(nanos))
	binary.LittleEndian.PutUint32(b[8:], day)
	return b[:]
}

// forgeInt96PageIndex is b with the ColumnIndex of ts claiming, for its
// last page (rows 200..299, all 2024-01-01 12:00:00.000001), that time a
// day later as min and max: the bounds stay ascending, and a reader that
// skipped pages by them would read no row of that page for WHERE ts =
// TIMESTAMP '2024-01-01 12:00:00.000001'.
func forgeInt96PageIndex(t *testing.T, b []byte) []byte {
	t.Helper()
	out := bytes.Clone(b)
	n := int64(binary.LittleEndian.Uint32(out[len(out)-8:]))
	ft, err := decodeFooter(out[int64(len(out))-8-n : len(out)-8])
	if err != nil {
		t.Fatal(err)
	}
	const day, nanos = 2460311, 12*3600e9 + 1000
	was := append([]byte{12}, int96Bytes(day, nanos)...)
	now := append([]byte{12}, int96Bytes(day+1, nanos)...)
	for _, c := range ft.chunks {
		if c.path != "ts" || c.colIdxOffset < 0 {
			continue
		}
		ci := out[c.colIdxOffset : c.colIdxOffset+c.colIdxLength]
		// min_values A, A, B; max_values A, B, B: B's first and third.
		if k := bytes.Count(ci, was); k != 3 {
			t.Fatalf("the column index of ts holds the later time %d times, want 3 (pages of 100 rows)", k)
		}
		at := 0
		for i := range 3 {
			k := bytes.Index(ci[at:], was) + at
			if i != 1 {
				copy(ci[k:], now)
			}
			at = k + len(was)
		}
		return out
	}
	t.Fatal("no column index of ts")
	return nil
}

// forgeInt96PageStats is b (int96_page_stats.parquet) with the header
// statistics of ts's pages claiming the later time a day later: page 2's
// min and max (a lie, as forgeInt96PageIndex's) and page 1's max (only
// wider). Its values are PLAIN, without a length before each, so the
// length-prefixed times in the chunk are the headers' statistics.
func forgeInt96PageStats(t *testing.T, b []byte) []byte {
	t.Helper()
	out := bytes.Clone(b)
	n := int64(binary.LittleEndian.Uint32(out[len(out)-8:]))
	ft, err := decodeFooter(out[int64(len(out))-8-n : len(out)-8])
	if err != nil {
		t.Fatal(err)
	}
	const day, nanos = 2460311, 12*3600e9 + 1000
	was := append([]byte{12}, int96Bytes(day, nanos)...)
	now := append([]byte{12}, int96Bytes(day+1, nanos)...)
	for _, c := range ft.chunks {
		if c.path != "ts" {
			continue
		}
		pages := out[c.dataOffset : c.dataOffset+c.totalCompressed]
		if k := bytes.Count(pages, was); k != 3 {
			t.Fatalf("the page headers of ts hold the later time %d times, want 3 (pages of 100 rows)", k)
		}
		copy(pages, bytes.ReplaceAll(pages, was, now))
		return out
	}
	t.Fatal("no column ts")
	return nil
}

// TestInt96PageBoundsAreCompared: a ColumnIndex of an INT96 leaf was
// refused whatever it said ("physical type 3"), so an honest file of
// INT96 page bounds was refused. Its bounds, and its page headers', are
// compared with the data as DuckDB reads it, in microseconds (as the
// row groups' INT96 claims are, claimInt96): the honest file passes, and
// its ColumnIndex, or its pages' header statistics, claiming a day later
// for a page are refused, naming the file, the column and the page.
func TestInt96PageBoundsAreCompared(t *testing.T) {
	honest, err := os.ReadFile(filepath.Join("testdata", "int96_page_index.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	forged := forgeInt96PageIndex(t, honest)
	stats, err := os.ReadFile(filepath.Join("testdata", "int96_page_stats.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if python, err := testPython(); err == nil && !testing.Short() {
		// What a reader of main reads of the forged files (logged: none at
		// hand skips by INT96 page bounds today).
		for name, b := range map[string][]byte{"column index": forged, "page statistics": forgeInt96PageStats(t, stats)} {
			f := filepath.Join(t.TempDir(), "forged.parquet")
			if err := os.WriteFile(f, b, 0o644); err != nil {
				t.Fatal(err)
			}
			q := fmt.Sprintf("import duckdb; print(duckdb.sql(\"SELECT count(*) FILTER (WHERE ts = TIMESTAMP '2024-01-01 12:00:00.000001') FROM '%[1]s'\").fetchall()[0][0], duckdb.sql(\"SELECT count(*) FROM '%[1]s' WHERE ts = TIMESTAMP '2024-01-01 12:00:00.000001'\").fetchall()[0][0], duckdb.__version__)", f)
			out, err := exec.Command(python, "-c", q).CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			t.Logf("forged %s, Python DuckDB: a full scan, WHERE ts = the later time, version: %s", name, out)
			if fields := strings.Fields(string(out)); len(fields) != 3 || fields[0] != "150" {
				t.Errorf("forged %s, Python DuckDB: %s; want 150 rows of the later time in a full scan", name, out)
			}
		}
	}
	for _, c := range []struct {
		name, want string
		b          []byte
	}{
		{"honest", "", honest},
		{"column index", "column index says page 2", forged},
		{"honest page statistics", "", stats},
		{"page statistics", "the statistics in the header of its data page 2", forgeInt96PageStats(t, stats)},
	} {
		src := oneFileBatch(t, c.b)
		for _, cache := range []string{"", filepath.Join(t.TempDir(), "cache")} {
			e := newEngine(t, src, cache)
			for range 2 {
				rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
					Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{
						{Name: "rows", Kind: KindRowCount, Table: "t", Min: f64(1)},
						{Name: "nn", Kind: KindNotNull, Table: "t", Column: "ts"}}}})
				if err != nil {
					t.Fatal(err)
				}
				msg := checkMessages(rep)
				if c.want != "" && (rep.Passed || !strings.Contains(msg, "t/part-0.parquet") || !strings.Contains(msg, `column "ts"`) || !strings.Contains(msg, c.want)) {
					t.Errorf("%s, cache %v: passed %v (%s), want refused naming the file, column ts and %q", c.name, cache != "", rep.Passed, msg, c.want)
				}
				if c.want == "" && !rep.Passed {
					t.Errorf("%s, cache %v: refused: %s", c.name, cache != "", msg)
				}
			}
		}
	}
}
