package audit

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// Readers of main skip data by what a Parquet file says of it besides its
// row-group statistics: DuckDB (1.5.6 here, and 2.0) skips a row group
// whose split-block bloom filter says an equality's constant is absent.
// The writer of a file controls its bloom filters: one whose bits are
// cleared passes every check that reads the file whole, and a reader of
// main running WHERE s = 'v7' reads none of the rows the audit read.

// writeForgedBloom writes a DuckDB Parquet file of 3000 rows (one row
// group; s and k dictionary-encoded, so with bloom filters) at ref/path,
// and clears the bits of the bloom filter of column col. It returns the
// file's local path.
func writeForgedBloom(t *testing.T, src *dirSource, ref, path, col string) string {
	t.Helper()
	src.write(t, ref, path, "SELECT i::BIGINT AS id, 'v' || (i % 50) AS s, (i % 40)::INTEGER AS k FROM range(0, 3000) r(i)")
	f := filepath.Join(src.root, ref, filepath.FromSlash(path))
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var off, n int64
	if err := db.QueryRow("SELECT bloom_filter_offset, bloom_filter_length FROM parquet_metadata(?) WHERE path_in_schema = ? AND row_group_id = 0", f, col).Scan(&off, &n); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	// The bitset is the filter's last power of two bytes (32 or more); its
	// Thrift header the bytes before.
	size := int64(32)
	for size*2 <= n {
		size *= 2
	}
	clear(b[off+n-size : off+n])
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var skipped, read int
	cond := map[string]string{"s": "s = 'v7'", "k": "k = 7"}[col]
	if err := db.QueryRow("SELECT count(*) FROM read_parquet(?) WHERE "+cond, f).Scan(&skipped); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("SELECT count(*) FILTER (WHERE "+cond+") FROM read_parquet(?)", f).Scan(&read); err != nil {
		t.Fatal(err)
	}
	if skipped != 0 || read == 0 {
		t.Fatalf("the forged filter: DuckDB reads %d rows WHERE %s, %d in a full scan; want 0 and more", skipped, cond, read)
	}
	return f
}

// TestForgedBloomFilterIsRefused: a file whose bloom filter excludes a
// value its rows hold is refused, naming the file, the row group and the
// column; the checks read it whole and pass it otherwise.
func TestForgedBloomFilterIsRefused(t *testing.T) {
	for _, col := range []string{"s", "k"} {
		src := newBatchSource(t)
		writeForgedBloom(t, src, "b1", "t/part-0.parquet", col)
		for _, cache := range []string{"", filepath.Join(t.TempDir(), "cache")} {
			e := newEngine(t, src, cache)
			for range 2 { // the second run of an engine with a cache may take the memo
				rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
					Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{
						{Name: "rows", Kind: KindRowCount, Table: "t", Min: f64(1)},
						{Name: "nn", Kind: KindNotNull, Table: "t", Column: col}}}})
				if err != nil {
					t.Fatal(err)
				}
				msg := checkMessages(rep)
				if rep.Passed || !strings.Contains(msg, "t/part-0.parquet") || !strings.Contains(msg, "row group 0") || !strings.Contains(msg, `column "`+col+`"`) || !strings.Contains(msg, "bloom filter") {
					t.Errorf("column %s, cache %v: passed %v (%s), want refused naming the file, row group 0, the column and its bloom filter", col, cache != "", rep.Passed, msg)
				}
			}
		}
	}
}

func checkMessages(rep schemas.AuditReport) string {
	var s []string
	for _, c := range rep.Checks {
		s = append(s, c.Name+": "+c.Status+" "+c.Message)
	}
	return strings.Join(s, "; ")
}

// DuckDB 2.0 (the Python venv's 2.0.1; not 1.5.6, the engine's) and
// Spark's parquet-mr skip pages by a file's page index: a ColumnIndex
// gives each page its bounds and null count, an OffsetIndex its place and
// first row. testdata/page_index.parquet was written by pyarrow 26.0.1
// (write_page_index, PLAIN pages of about 1 KiB): id 0..2999 in two row
// groups, s text with a NULL in every ten rows.

// forgePageIndexMin rewrites, in the ColumnIndex of row group 0's id, the
// first page's min from 0 to 8: a reader that skips pages by it reads no
// row WHERE id = 7.
func forgePageIndexMin(t *testing.T, b []byte) {
	t.Helper()
	n := int64(binary.LittleEndian.Uint32(b[len(b)-8:]))
	ft, err := decodeFooter(b[int64(len(b))-8-n : len(b)-8])
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ft.chunks {
		if c.rowGroup != 0 || c.path != "id" {
			continue
		}
		ci := b[c.colIdxOffset : c.colIdxOffset+c.colIdxLength]
		// min_values' first element: its length (8) and 8 zero bytes.
		i := bytes.Index(ci, append([]byte{8}, make([]byte, 8)...))
		if c.colIdxOffset < 0 || i < 0 {
			t.Fatal("no column index, or no first page of min 0")
		}
		ci[i+1] = 8
		return
	}
	t.Fatal("no column id")
}

// TestForgedColumnIndexIsRefused: a file whose ColumnIndex excludes, from
// a page, a value the page holds is refused, naming the file, the row
// group, the column and the page; the honest file passes.
func TestForgedColumnIndexIsRefused(t *testing.T) {
	honest, err := os.ReadFile(filepath.Join("testdata", "page_index.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	forged := bytes.Clone(honest)
	forgePageIndexMin(t, forged)
	if python, err := testPython(); err == nil && !testing.Short() {
		// The attack, as a reader of main runs it.
		f := filepath.Join(t.TempDir(), "forged.parquet")
		if err := os.WriteFile(f, forged, 0o644); err != nil {
			t.Fatal(err)
		}
		q := fmt.Sprintf("import duckdb; print(duckdb.sql(\"SELECT count(*) FILTER (WHERE id = 7) FROM '%[1]s'\").fetchall()[0][0], duckdb.sql(\"SELECT count(*) FROM '%[1]s' WHERE id = 7\").fetchall()[0][0], duckdb.__version__)", f)
		out, err := exec.Command(python, "-c", q).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		t.Logf("Python DuckDB: a full scan, WHERE id = 7, version: %s", out)
		if fields := strings.Fields(string(out)); len(fields) != 3 || fields[0] != "1" || (fields[1] != "0" && strings.HasPrefix(fields[2], "2.")) {
			t.Errorf("Python DuckDB: %s; want 1 row in a full scan and 0 WHERE id = 7 (DuckDB 2)", out)
		}
	}
	for _, c := range []struct {
		name  string
		b     []byte
		fails bool
	}{{"honest", honest, false}, {"forged", forged, true}} {
		src := oneFileBatch(t, c.b)
		for _, cache := range []string{"", filepath.Join(t.TempDir(), "cache")} {
			e := newEngine(t, src, cache)
			for range 2 {
				rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
					Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{
						{Name: "rows", Kind: KindRowCount, Table: "t", Min: f64(1)},
						{Name: "nn", Kind: KindNotNull, Table: "t", Column: "id"}}}})
				if err != nil {
					t.Fatal(err)
				}
				msg := checkMessages(rep)
				if c.fails && (rep.Passed || !strings.Contains(msg, "t/part-0.parquet") || !strings.Contains(msg, "row group 0") || !strings.Contains(msg, `column "id"`) || !strings.Contains(msg, "column index says page 0")) {
					t.Errorf("%s, cache %v: passed %v (%s), want refused naming the file, row group 0, column id and its column index's page 0", c.name, cache != "", rep.Passed, msg)
				}
				if !c.fails && !rep.Passed {
					t.Errorf("%s, cache %v: refused: %s", c.name, cache != "", msg)
				}
			}
		}
	}
}

// indexPositions are where, in a ColumnIndex's null_counts (field 5) or an
// OffsetIndex's page locations' first_row_index (field 3 of each element
// of field 1), each value's varint begins.
func indexPositions(t *testing.T, b []byte, offsetIndex bool) []int {
	t.Helper()
	d := &compactReader{b: b}
	var at []int
	err := d.fields(func(id int16, typ byte) (bool, error) {
		switch {
		case !offsetIndex && id == 5:
			_, n, err := d.list()
			for range n {
				at = append(at, d.i)
				if _, err := d.i64(); err != nil {
					return true, err
				}
			}
			return true, err
		case offsetIndex && id == 1:
			_, n, err := d.list()
			for range n {
				if err := d.fields(func(id int16, typ byte) (bool, error) {
					if id == 3 {
						at = append(at, d.i)
					}
					return false, nil
				}); err != nil {
					return true, err
				}
			}
			return true, err
		}
		return false, nil
	})
	if err != nil || len(at) < 2 {
		t.Fatal(err, at)
	}
	return at
}

// TestForgedPageIndexIsRefused: a ColumnIndex miscounting a page's NULLs
// (a reader skips a page it says has none for WHERE s IS NULL), an
// OffsetIndex placing a page's first row elsewhere (a reader pairs other
// rows of the columns), are refused, naming what disagrees.
func TestForgedPageIndexIsRefused(t *testing.T) {
	honest, err := os.ReadFile(filepath.Join("testdata", "page_index.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, newDirSource(t), "")
	n := int64(binary.LittleEndian.Uint32(honest[len(honest)-8:]))
	ft, err := decodeFooter(honest[int64(len(honest))-8-n : len(honest)-8])
	if err != nil {
		t.Fatal(err)
	}
	var s, id chunkMeta
	for _, c := range ft.chunks {
		switch {
		case c.rowGroup == 1 && c.path == "s":
			s = c
		case c.rowGroup == 1 && c.path == "id":
			id = c
		}
	}
	for _, c := range []struct {
		name, want string
		forge      func(b []byte)
	}{
		{"null count", `row group 1, column "s": its column index says page 0 (rows 1500 to`, func(b []byte) {
			ci := b[s.colIdxOffset : s.colIdxOffset+s.colIdxLength]
			at := indexPositions(t, ci, false)
			if ci[at[0]]&0x7f < 2 {
				t.Fatalf("page 0's null count %#x", ci[at[0]])
			}
			ci[at[0]] -= 2 // zigzag: one NULL less
		}},
		{"first row", `row group 1, column "id": its offset index places page 1 at`, func(b []byte) {
			oi := b[id.offIdxOffset : id.offIdxOffset+id.offIdxLength]
			at := indexPositions(t, oi, true)
			if oi[at[1]]&0x7f >= 2 { // zigzag: one row earlier, or later
				oi[at[1]] -= 2
			} else {
				oi[at[1]] += 2
			}
		}},
	} {
		forged := bytes.Clone(honest)
		c.forge(forged)
		f := filepath.Join(e.dir, strings.ReplaceAll(c.name, " ", "_")+".parquet")
		if err := os.WriteFile(f, forged, 0o644); err != nil {
			t.Fatal(err)
		}
		claims, err := checkReaderIndexes(context.Background(), f, ft.chunks)
		if err == nil {
			err = (&run{e: e}).columnIndexDisagreement(context.Background(), f, ft.chunks, claims)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		t.Logf("%s: %v", c.name, err)
	}
}

// TestForgedPageStatisticsAreRefused: DuckDB 2.0 also skips a PLAIN page
// by the statistics in its header, which pyarrow writes by default
// (testdata/page_stats.parquet: pyarrow 26.0.1, PLAIN pages of about 1
// KiB, no page index; id 0..2999 in two row groups, s text with NULLs). A
// file whose first page of id claims min 8 is refused; the honest one
// passes.
func TestForgedPageStatisticsAreRefused(t *testing.T) {
	honest, err := os.ReadFile(filepath.Join("testdata", "page_stats.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	forged := bytes.Clone(honest)
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var off int64
	if err := db.QueryRow("SELECT data_page_offset FROM parquet_metadata(?) WHERE path_in_schema = 'id' AND row_group_id = 0", filepath.Join("testdata", "page_stats.parquet")).Scan(&off); err != nil {
		t.Fatal(err)
	}
	// The first page's header: its min_value and legacy min, 0 as 8 bytes
	// after their length, become 8.
	patched := 0
	h := forged[off : off+64]
	zero := append([]byte{8}, make([]byte, 8)...)
	for i := bytes.Index(h, zero); i >= 0; i = bytes.Index(h, zero) {
		h[i+1] = 8
		patched++
	}
	if patched == 0 {
		t.Fatal("no min 0 in the first page's header")
	}
	if python, err := testPython(); err == nil && !testing.Short() {
		f := filepath.Join(t.TempDir(), "forged.parquet")
		if err := os.WriteFile(f, forged, 0o644); err != nil {
			t.Fatal(err)
		}
		q := fmt.Sprintf("import duckdb; print(duckdb.sql(\"SELECT count(*) FILTER (WHERE id = 7) FROM '%[1]s'\").fetchall()[0][0], duckdb.sql(\"SELECT count(*) FROM '%[1]s' WHERE id = 7\").fetchall()[0][0], duckdb.__version__)", f)
		out, err := exec.Command(python, "-c", q).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		t.Logf("Python DuckDB: a full scan, WHERE id = 7, version: %s", out)
		if fields := strings.Fields(string(out)); len(fields) != 3 || fields[0] != "1" || (fields[1] != "0" && strings.HasPrefix(fields[2], "2.")) {
			t.Errorf("Python DuckDB: %s; want 1 row in a full scan and 0 WHERE id = 7 (DuckDB 2)", out)
		}
	}
	for _, c := range []struct {
		name  string
		b     []byte
		fails bool
	}{{"honest", honest, false}, {"forged", forged, true}} {
		src := oneFileBatch(t, c.b)
		for _, cache := range []string{"", filepath.Join(t.TempDir(), "cache")} {
			e := newEngine(t, src, cache)
			for range 2 {
				rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
					Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{
						{Name: "rows", Kind: KindRowCount, Table: "t", Min: f64(1)},
						{Name: "nn", Kind: KindNotNull, Table: "t", Column: "id"}}}})
				if err != nil {
					t.Fatal(err)
				}
				msg := checkMessages(rep)
				if c.fails && (rep.Passed || !strings.Contains(msg, "t/part-0.parquet") || !strings.Contains(msg, "row group 0") || !strings.Contains(msg, `column "id"`) || !strings.Contains(msg, "header of its data page 0")) {
					t.Errorf("%s, cache %v: passed %v (%s), want refused naming the file, row group 0, column id and its page 0's header", c.name, cache != "", rep.Passed, msg)
				}
				if !c.fails && !rep.Passed {
					t.Errorf("%s, cache %v: refused: %s", c.name, cache != "", msg)
				}
			}
		}
	}
}
