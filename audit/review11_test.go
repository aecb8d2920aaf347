package audit

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A Thrift compact writer for hand-made Parquet files (review 11's
// attacks): tf is a field, tstruct a struct of fields in order.
type tf struct {
	id   int16
	typ  byte
	body []byte
}

func tstruct(fs ...tf) []byte {
	var out []byte
	last := int16(0)
	for _, f := range fs {
		if d := f.id - last; d > 0 && d <= 15 {
			out = append(out, byte(d)<<4|f.typ)
		} else {
			out = append(out, f.typ)
			out = binary.AppendVarint(out, int64(f.id))
		}
		out = append(out, f.body...)
		last = f.id
	}
	return append(out, 0)
}

func ti32(id int16, v int32) tf { return tf{id, 5, binary.AppendVarint(nil, int64(v))} }
func ti64(id int16, v int64) tf { return tf{id, 6, binary.AppendVarint(nil, v)} }
func tbin(id int16, b []byte) tf {
	return tf{id, 8, append(binary.AppendUvarint(nil, uint64(len(b))), b...)}
}
func tbool(id int16, v bool) tf {
	if v {
		return tf{id, 1, nil}
	}
	return tf{id, 2, nil}
}
func tst(id int16, fs ...tf) tf { return tf{id, 12, tstruct(fs...)} }

// tlist is a list field of elements of compact type et, each encoded.
func tlist(id int16, et byte, elems ...[]byte) tf {
	var b []byte
	if len(elems) < 15 {
		b = append(b, byte(len(elems))<<4|et)
	} else {
		b = append(b, 0xf0|et)
		b = binary.AppendUvarint(b, uint64(len(elems)))
	}
	for _, e := range elems {
		b = append(b, e...)
	}
	return tf{id, 9, b}
}

func tElemI32(v int32) []byte  { return binary.AppendVarint(nil, int64(v)) }
func tElemStr(s string) []byte { return append(binary.AppendUvarint(nil, uint64(len(s))), s...) }

func le32(v int32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }

// handParquet is a Parquet file of one required INT32 column x, one row
// group of rows rows, uncompressed, whose chunk is pages (headers and
// bodies, a dictionary page first when dict), claiming min and max
// (min_value, max_value) and no nulls.
func handParquet(rows int64, pages [][2][]byte, dict bool, min, max int32) []byte {
	var chunk []byte
	for _, p := range pages {
		chunk = append(append(chunk, p[0]...), p[1]...)
	}
	dataOff, dictOff := int64(4), int64(0)
	if dict {
		dictOff, dataOff = 4, 4+int64(len(pages[0][0])+len(pages[0][1]))
	}
	return handParquetAt(rows, chunk, dataOff, dictOff, int64(len(chunk)), min, max)
}

// handParquetAt is handParquet of the bytes chunk (at offset 4), whose
// metadata names data_page_offset dataOff, dictionary_page_offset dictOff
// (none where 0) and total_compressed_size size.
func handParquetAt(rows int64, chunk []byte, dataOff, dictOff, size int64, min, max int32) []byte {
	return handParquetCol(rows, chunk, dataOff, dictOff, size, ptInt32, -1, le32(min), le32(max))
}

// handParquetCol is handParquetAt of a required column x of physical type
// physical and converted type converted (none where -1), claiming min and
// max as these bytes.
func handParquetCol(rows int64, chunk []byte, dataOff, dictOff, size int64, physical, converted int32, min, max []byte, logical ...tf) []byte {
	return handParquetMeta(rows, chunk, dataOff, dictOff, size, physical, converted, min, max, []int32{0, 8}, nil, logical...)
}

// handRowGroupExtra are fields handParquetMeta adds to its row group;
// handFileRowsExtra, rows its FileMetaData's num_rows claims beyond the
// row group's.
var (
	handRowGroupExtra []tf
	handFileRowsExtra int64
)

// handParquetMeta is handParquetCol whose chunk's metadata lists
// encodings and, unless nil, encoding_stats.
func handParquetMeta(rows int64, chunk []byte, dataOff, dictOff, size int64, physical, converted int32, min, max []byte, encodings []int32, encodingStats [][]byte, logical ...tf) []byte {
	f := append([]byte("PAR1"), chunk...)
	var encs [][]byte
	for _, e := range encodings {
		encs = append(encs, tElemI32(e))
	}
	meta := []tf{ti32(1, physical), tlist(2, 5, encs...), tlist(3, 8, tElemStr("x")), ti32(4, 0),
		ti64(5, rows), ti64(6, size), ti64(7, size), ti64(9, dataOff)}
	if dictOff != 0 {
		meta = append(meta, ti64(11, dictOff))
	}
	if min != nil {
		meta = append(meta, tst(12, ti64(3, 0), tbin(5, max), tbin(6, min)))
	}
	if encodingStats != nil {
		meta = append(meta, tlist(13, 12, encodingStats...))
	}
	leaf := []tf{ti32(1, physical), ti32(3, 0), tbin(4, []byte("x"))}
	if converted >= 0 {
		leaf = append(leaf, ti32(6, converted))
	}
	if logical != nil {
		leaf = append(leaf, tst(10, logical...))
	}
	md := tstruct(
		ti32(1, 1),
		tlist(2, 12, tstruct(tbin(4, []byte("schema")), ti32(5, 1)), tstruct(leaf...)),
		ti64(3, rows+handFileRowsExtra),
		tlist(4, 12, tstruct(append([]tf{tlist(1, 12, tstruct(ti64(2, 4), tst(3, meta...))), ti64(2, size), ti64(3, rows)}, handRowGroupExtra...)...)),
	)
	f = append(f, md...)
	f = binary.LittleEndian.AppendUint32(f, uint32(len(md)))
	return append(f, "PAR1"...)
}

// review11Audit audits the Parquet file b as table t's one file of a
// batch, with a row count check only (x is read for its claims alone),
// on a fused and an unfused engine; it returns each report's messages and
// whether it passed.
func review11Audit(t *testing.T, b []byte) (msgs []string, passed []bool) {
	t.Helper()
	src := oneFileBatch(t, b)
	for _, unfused := range []bool{false, true} {
		e := newEngine(t, src, "")
		e.unfused = unfused
		rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
			Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{{Name: "rows", Kind: KindRowCount, Table: "t", Min: f64(1)}}}})
		if err != nil {
			t.Fatal(err)
		}
		msgs, passed = append(msgs, checkMessages(rep)), append(passed, rep.Passed)
	}
	return msgs, passed
}

// duckdbReads is what the engine's DuckDB reads of the file b: its
// count of rows WHERE cond in a scan that skips by the claims, and in one
// that reads every row.
func duckdbReads(t *testing.T, b []byte, cond string) (skipping, full int) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "f.parquet")
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow("SELECT count(*) FROM read_parquet(?) WHERE "+cond, f).Scan(&skipping); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("SELECT count(*) FILTER (WHERE "+cond+") FROM read_parquet(?)", f).Scan(&full); err != nil {
		t.Fatal(err)
	}
	return skipping, full
}

// TestReview11APageOfBothHeaderKindsIsNotSettledInGo: a DATA_PAGE whose
// header also carries a data_page_header_v2 (whose fields, later in the
// header, overwrote the V1 header's as the Go reader parsed it). DuckDB
// reads the page by its type, as V1: RLE_DICTIONARY indexes into the
// dictionary {10, 1000}, the one row 1000. The V2 struct says PLAIN,
// uncompressed: the Go reading took the same 4 bytes as the INT32 66049
// and settled the footer's claim min = max = 66049, so DuckDB's WHERE
// x = 1000 skipped the row group (0 rows of 1) and the audit passed.
func TestReview11APageOfBothHeaderKindsIsNotSettledInGo(t *testing.T) {
	body := []byte{1, 0x02, 0x01, 0x00} // bit width 1, a run of 1 of index 1; as PLAIN: 66049
	plain := int32(binary.LittleEndian.Uint32(body))
	dict := append(le32(10), le32(1000)...)
	dictHeader := tstruct(ti32(1, 2), ti32(2, int32(len(dict))), ti32(3, int32(len(dict))), tst(7, ti32(1, 2), ti32(2, 0)))
	dataHeader := tstruct(ti32(1, 0), ti32(2, int32(len(body))), ti32(3, int32(len(body))),
		tst(5, ti32(1, 1), ti32(2, 8), ti32(3, 3), ti32(4, 3)),
		tst(8, ti32(1, 1), ti32(2, 0), ti32(3, 1), ti32(4, 0), ti32(5, 0), ti32(6, 0), tbool(7, false)))
	b := handParquet(1, [][2][]byte{{dictHeader, dict}, {dataHeader, body}}, true, plain, plain)
	if skipping, full := duckdbReads(t, b, "x = 1000"); skipping != 0 || full != 1 {
		t.Fatalf("DuckDB reads %d rows WHERE x = 1000 by the claims, %d in a full scan; want 0 and 1", skipping, full)
	}
	msgs, passed := review11Audit(t, b)
	for i, m := range msgs {
		if passed[i] || !strings.Contains(m, "t/part-0.parquet") || !strings.Contains(m, `column "x"`) {
			t.Errorf("unfused %v: passed %v (%s), want refused naming the file and column x", i == 1, passed[i], m)
		}
	}
}

// TestReview11ADictionaryOffsetAfterTheDataIsNotSettledInGo: a chunk
// whose dictionary_page_offset names a page after its data_page_offset.
// DuckDB starts the chunk at the dictionary_page_offset it names, Go
// started at the lesser offset: two PLAIN data pages of one value each,
// 66049 then 1000, total_compressed_size one page's, so Go read 66049
// and settled the claim min = max = 66049, DuckDB read 1000.
func TestReview11ADictionaryOffsetAfterTheDataIsNotSettledInGo(t *testing.T) {
	page := func(v int32) []byte {
		body := le32(v)
		return append(tstruct(ti32(1, 0), ti32(2, 4), ti32(3, 4), tst(5, ti32(1, 1), ti32(2, 0), ti32(3, 3), ti32(4, 3))), body...)
	}
	first, second := page(66049), page(1000)
	chunk := append(append([]byte(nil), first...), second...)
	b := handParquetAt(1, chunk, 4, 4+int64(len(first)), int64(len(second)), 66049, 66049)
	// The same claiming DuckDB's 1000: pyarrow reads 66049 where the audit
	// read 1000, whatever the claims.
	asDuckDB := handParquetAt(1, chunk, 4, 4+int64(len(first)), int64(len(second)), 1000, 1000)
	msgs, passed := review11Audit(t, asDuckDB)
	for i, m := range msgs {
		if passed[i] || !strings.Contains(m, "t/part-0.parquet") || !strings.Contains(m, `column "x" names its dictionary page`) {
			t.Errorf("claims of 1000, unfused %v: passed %v (%s), want refused naming the file, column x and its dictionary page", i == 1, passed[i], m)
		}
	}
	skipping, full := duckdbReads(t, b, "x = 1000")
	t.Logf("DuckDB reads %d rows WHERE x = 1000 by the claims, %d in a full scan", skipping, full)
	if skipping != 0 || full != 1 {
		t.Skipf("DuckDB does not read the chunk from its dictionary_page_offset")
	}
	if python, err := testPython(); err == nil {
		f := filepath.Join(t.TempDir(), "f.parquet")
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(python, "-c", "import sys, pyarrow.parquet as pq; print(pq.read_table(sys.argv[1]).column('x').to_pylist())", f).CombinedOutput()
		t.Logf("pyarrow reads x as %s (%v)", strings.TrimSpace(string(out)), err)
	}
	msgs, passed = review11Audit(t, b)
	for i, m := range msgs {
		if passed[i] || !strings.Contains(m, "t/part-0.parquet") || !strings.Contains(m, `column "x"`) {
			t.Errorf("unfused %v: passed %v (%s), want refused naming the file and column x", i == 1, passed[i], m)
		}
	}
}

// textPagesFile is a file of a required UTF8 column x of two PLAIN pages,
// g h i and j k l, the first page's header claiming only the legacy
// min and max given.
func textPagesFile(min, max string) []byte {
	str := func(v string) []byte { return append(binary.LittleEndian.AppendUint32(nil, uint32(len(v))), v...) }
	page := func(stats []tf, vs ...string) []byte {
		var body []byte
		for _, v := range vs {
			body = append(body, str(v)...)
		}
		dp := []tf{ti32(1, int32(len(vs))), ti32(2, 0), ti32(3, 3), ti32(4, 3)}
		if stats != nil {
			dp = append(dp, tst(5, stats...))
		}
		return append(tstruct(ti32(1, 0), ti32(2, int32(len(body))), ti32(3, int32(len(body))), tst(5, dp...)), body...)
	}
	chunk := append(page([]tf{tbin(1, []byte(max)), tbin(2, []byte(min))}, "g", "h", "i"), page(nil, "j", "k", "l")...)
	return handParquetCol(6, chunk, 4, 0, int64(len(chunk)), ptByteArray, cvUTF8, []byte("g"), []byte("l"))
}

// TestReview11LegacyPageBoundsOfTextAreCompared: DuckDB 2.0 (the Python
// venv's 2.0.1) skips a page of text by the legacy min and max of its
// header's statistics where it has no min_value and max_value: a first
// page of g h i claiming min a, max e read 0 rows WHERE x = 'g', 1 in a
// full scan. headerClaims compared legacy bounds only for a column of
// signed order, so the audit passed the file.
func TestReview11LegacyPageBoundsOfTextAreCompared(t *testing.T) {
	forged := textPagesFile("a", "e")
	if python, err := testPython(); err == nil {
		f := filepath.Join(t.TempDir(), "f.parquet")
		if err := os.WriteFile(f, forged, 0o644); err != nil {
			t.Fatal(err)
		}
		q := "import sys, duckdb; f = sys.argv[1]; print(duckdb.sql(f\"SELECT count(*) FROM '{f}' WHERE x = 'g'\").fetchall()[0][0], duckdb.sql(f\"SELECT count(*) FILTER (WHERE x = 'g') FROM '{f}'\").fetchall()[0][0], duckdb.__version__)"
		out, err := exec.Command(python, "-c", q, f).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		t.Logf("Python DuckDB: WHERE x = 'g', a full scan, version: %s", out)
		if fs := strings.Fields(string(out)); len(fs) != 3 || fs[1] != "1" || (fs[0] != "0" && strings.HasPrefix(fs[2], "2.")) {
			t.Errorf("Python DuckDB: %s; want 0 rows WHERE x = 'g' (DuckDB 2) and 1 in a full scan", out)
		}
	}
	msgs, passed := review11Audit(t, forged)
	for i, m := range msgs {
		if passed[i] || !strings.Contains(m, "t/part-0.parquet") || !strings.Contains(m, `column "x"`) || !strings.Contains(m, "header of its data page 0") {
			t.Errorf("unfused %v: passed %v (%s), want refused naming the file, column x and its page 0's header", i == 1, passed[i], m)
		}
	}
	msgs, passed = review11Audit(t, textPagesFile("g", "i"))
	for i, m := range msgs {
		if !passed[i] {
			t.Errorf("honest legacy bounds, unfused %v: refused: %s", i == 1, m)
		}
	}
}

// dictionaryFallbackFiles are files of a required INT32 x of one row group
// of three rows: a dictionary {10, 20}, a data page of its indexes (10,
// 20) and a PLAIN data page (1000), as a writer falling back from the
// dictionary writes them. "honest" says so in its encoding_stats;
// "encodings" lists only PLAIN_DICTIONARY and RLE, which parquet-mr takes
// for a chunk of dictionary-encoded pages only; "encoding stats" claims
// its two data pages RLE_DICTIONARY.
func dictionaryFallbackFiles() map[string][]byte {
	dict := append(le32(10), le32(20)...)
	dictPage := append(tstruct(ti32(1, 2), ti32(2, int32(len(dict))), ti32(3, int32(len(dict))), tst(7, ti32(1, 2), ti32(2, 2))), dict...)
	idx := []byte{1, 0x03, 0x02} // bit width 1, a bit-packed group: 0 1 (then padding)
	idxPage := append(tstruct(ti32(1, 0), ti32(2, int32(len(idx))), ti32(3, int32(len(idx))), tst(5, ti32(1, 2), ti32(2, 8), ti32(3, 3), ti32(4, 3))), idx...)
	plainPage := append(tstruct(ti32(1, 0), ti32(2, 4), ti32(3, 4), tst(5, ti32(1, 1), ti32(2, 0), ti32(3, 3), ti32(4, 3))), le32(1000)...)
	chunk := append(append(append([]byte(nil), dictPage...), idxPage...), plainPage...)
	dataOff, size := 4+int64(len(dictPage)), int64(len(chunk))
	stat := func(typ, enc, n int32) []byte { return tstruct(ti32(1, typ), ti32(2, enc), ti32(3, n)) }
	return map[string][]byte{
		"honest": handParquetMeta(3, chunk, dataOff, 4, size, ptInt32, -1, le32(10), le32(1000), []int32{0, 2, 3, 8},
			[][]byte{stat(2, 2, 1), stat(0, 8, 1), stat(0, 0, 1)}),
		"encodings": handParquetMeta(3, chunk, dataOff, 4, size, ptInt32, -1, le32(10), le32(1000), []int32{2, 3}, nil),
		"encoding stats": handParquetMeta(3, chunk, dataOff, 4, size, ptInt32, -1, le32(10), le32(1000), []int32{0, 2, 3, 8},
			[][]byte{stat(2, 2, 1), stat(0, 8, 2)}),
	}
}

// TestReview11DictionaryOnlyClaimsAreCompared: a chunk's metadata saying
// every data page is dictionary-encoded (its encodings, or its
// encoding_stats) is a claim Spark skips row groups by: parquet-mr's
// dictionary filter reads the dictionary and skips the row group when it
// lacks an equality's constant. Spark 4.3.0 read 0 rows WHERE x = 1000 of
// either forged file, 1 of the honest one; the audit passed all three.
func TestReview11DictionaryOnlyClaimsAreCompared(t *testing.T) {
	files := dictionaryFallbackFiles()
	if python, err := sparkPython(); err == nil && !testing.Short() {
		dir := t.TempDir()
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".parquet"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		script := `import sys, glob, os
from pyspark.sql import SparkSession
s = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").config("spark.driver.bindAddress", "127.0.0.1").getOrCreate()
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.parquet"))):
    df = s.read.parquet(f)
    print(os.path.basename(f), df.filter("x = 1000").count(), sum(1 for r in df.collect() if r.x == 1000))
s.stop()`
		out, err := exec.Command(python, "-c", script, dir).Output()
		if err != nil {
			t.Fatalf("Spark: %v: %s", err, out)
		}
		t.Logf("Spark: file, rows WHERE x = 1000, in a full read:\n%s", out)
		want := "encoding_stats.parquet 0 1\nencodings.parquet 0 1\nhonest.parquet 1 1\n"
		if string(out) != want {
			t.Errorf("Spark read:\n%s\nwant\n%s", out, want)
		}
	}
	for name, b := range files {
		msgs, passed := review11Audit(t, b)
		for i, m := range msgs {
			if name == "honest" {
				if !passed[i] {
					t.Errorf("%s, unfused %v: refused: %s", name, i == 1, m)
				}
				continue
			}
			if passed[i] || !strings.Contains(m, "t/part-0.parquet") || !strings.Contains(m, `row group 0, column "x"`) || !strings.Contains(m, "dictionary-encoded") {
				t.Errorf("%s, unfused %v: passed %v (%s), want refused naming the file, row group 0, column x and its dictionary-encoded claim", name, i == 1, passed[i], m)
			}
		}
	}
}

// TestReview11RowCountsThePagesDoNotHoldAreRefused: a row group's
// num_rows (and its chunk's num_values) is a claim DuckDB counts by
// without reading the pages: a file of one page of 3 values (1, 2, 3)
// claiming 5 rows, without statistics, counted 5 in the audit's DuckDB
// (count(*)), so row_count >= 4 passed, where pyarrow and pandas read 3
// rows (and DuckDB's scan fails).
func TestReview11RowCountsThePagesDoNotHoldAreRefused(t *testing.T) {
	body := append(append(le32(1), le32(2)...), le32(3)...)
	pg := append(tstruct(ti32(1, 0), ti32(2, int32(len(body))), ti32(3, int32(len(body))), tst(5, ti32(1, 3), ti32(2, 0), ti32(3, 3), ti32(4, 3))), body...)
	b := handParquetCol(5, pg, 4, 0, int64(len(pg)), ptInt32, -1, nil, nil)
	if python, err := testPython(); err == nil {
		f := filepath.Join(t.TempDir(), "f.parquet")
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(python, "-c", "import sys, pyarrow.parquet as pq, pandas as pd; print(pq.read_table(sys.argv[1]).num_rows, len(pd.read_parquet(sys.argv[1])))", f).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "3 3" {
			t.Errorf("pyarrow and pandas read %s rows (%v), want 3 3", out, err)
		}
	}
	src := oneFileBatch(t, b)
	for _, unfused := range []bool{false, true} {
		e := newEngine(t, src, "")
		e.unfused = unfused
		rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
			Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{{Name: "rows", Kind: KindRowCount, Table: "t", Min: f64(4)}}}})
		if err != nil {
			t.Fatal(err)
		}
		m := checkMessages(rep)
		if rep.Passed || !strings.Contains(m, "t/part-0.parquet") || !strings.Contains(m, `row group 0, column "x"`) {
			t.Errorf("unfused %v: passed %v (%s), want refused naming the file, row group 0 and column x", unfused, rep.Passed, m)
		}
	}
}

// TestReview11RowGroupSizesOutsideTheFileAreRefused: Spark (parquet-mr)
// reads a row group in the split holding its midpoint, the first chunk's
// start plus half the RowGroup's total_compressed_size: a file of 3 rows
// whose row group claims a total_compressed_size of 1 GiB read 0 rows in
// Spark 4.3.0 (its midpoint past the file, in no split), 3 in DuckDB and
// pyarrow, and the audit passed row_count >= 3. Its file_offset, which
// parquet-mr does not read for it, passes.
func TestReview11RowGroupSizesOutsideTheFileAreRefused(t *testing.T) {
	body := append(append(le32(1), le32(2)...), le32(3)...)
	pg := append(tstruct(ti32(1, 0), ti32(2, int32(len(body))), ti32(3, int32(len(body))), tst(5, ti32(1, 3), ti32(2, 0), ti32(3, 3), ti32(4, 3))), body...)
	file := func(extra ...tf) []byte {
		handRowGroupExtra = extra
		defer func() { handRowGroupExtra = nil }()
		return handParquetCol(3, pg, 4, 0, int64(len(pg)), ptInt32, -1, le32(1), le32(3))
	}
	files := map[string][]byte{"honest": file(ti64(6, int64(len(pg)))), "file_offset": file(ti64(5, 1<<30)), "total": file(ti64(6, 1<<30)), "negative": file(ti64(6, -1<<20))}
	if python, err := sparkPython(); err == nil && !testing.Short() {
		dir := t.TempDir()
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(dir, name+".parquet"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		script := `import sys, glob, os
from pyspark.sql import SparkSession
s = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").config("spark.driver.bindAddress", "127.0.0.1").getOrCreate()
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.parquet"))):
    print(os.path.basename(f), s.read.parquet(f).count(), len(s.read.parquet(f).collect()))
s.stop()`
		out, err := exec.Command(python, "-c", script, dir).Output()
		if err != nil {
			t.Fatalf("Spark: %v: %s", err, out)
		}
		t.Logf("Spark: file, count(), rows read:\n%s", out)
		want := "file_offset.parquet 3 3\nhonest.parquet 3 3\nnegative.parquet 0 0\ntotal.parquet 0 0\n"
		if string(out) != want {
			t.Errorf("Spark read:\n%s\nwant\n%s", out, want)
		}
	}
	for name, b := range files {
		msgs, passed := review11Audit(t, b)
		for i, m := range msgs {
			if name == "honest" || name == "file_offset" {
				if !passed[i] {
					t.Errorf("%s, unfused %v: refused: %s", name, i == 1, m)
				}
				continue
			}
			if passed[i] || !strings.Contains(m, "t/part-0.parquet") || !strings.Contains(m, "row group 0") || !strings.Contains(m, "total_compressed_size") {
				t.Errorf("%s, unfused %v: passed %v (%s), want refused naming the file, row group 0 and its total_compressed_size", name, i == 1, passed[i], m)
			}
		}
	}
}

// TestReview11FileRowCountsOtherThanTheRowGroupsAreRefused: pyarrow's
// dataset counts a file's rows by its FileMetaData's num_rows
// (count_rows()), which the other readers and the audit do not read: a
// file of one row group of 3 rows claiming 5 (or 1) counted 5 (or 1) in
// pyarrow 26.0.1, 3 in DuckDB, Spark and pyarrow's read_table, and the
// audit passed it.
func TestReview11FileRowCountsOtherThanTheRowGroupsAreRefused(t *testing.T) {
	body := append(append(le32(1), le32(2)...), le32(3)...)
	pg := append(tstruct(ti32(1, 0), ti32(2, int32(len(body))), ti32(3, int32(len(body))), tst(5, ti32(1, 3), ti32(2, 0), ti32(3, 3), ti32(4, 3))), body...)
	for _, extra := range []int64{0, 2, -2} {
		handFileRowsExtra = extra
		b := handParquetCol(3, pg, 4, 0, int64(len(pg)), ptInt32, -1, le32(1), le32(3))
		handFileRowsExtra = 0
		if python, err := testPython(); err == nil {
			f := filepath.Join(t.TempDir(), "f.parquet")
			if err := os.WriteFile(f, b, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(python, "-c", "import sys, pyarrow.parquet as pq, pyarrow.dataset as ds; print(ds.dataset(sys.argv[1]).count_rows(), pq.read_table(sys.argv[1]).num_rows)", f).CombinedOutput()
			if want := fmt.Sprintf("%d 3", 3+extra); err != nil || strings.TrimSpace(string(out)) != want {
				t.Errorf("num_rows %d: pyarrow count_rows, read_table: %s (%v), want %s", 3+extra, out, err, want)
			}
		}
		msgs, passed := review11Audit(t, b)
		for i, m := range msgs {
			if extra == 0 {
				if !passed[i] {
					t.Errorf("honest, unfused %v: refused: %s", i == 1, m)
				}
				continue
			}
			if passed[i] || !strings.Contains(m, "t/part-0.parquet") || !strings.Contains(m, "num_rows") {
				t.Errorf("num_rows %d, unfused %v: passed %v (%s), want refused naming the file and its num_rows", 3+extra, i == 1, passed[i], m)
			}
		}
	}
}

// TestReview11FootersTheGoReaderGivesUpOnAreRefused: a footer the Go
// reader does not decode (a byte after its FileMetaData, which DuckDB,
// pyarrow and Spark ignore) skipped every check of readerIndexes: a file
// of 3 rows, without statistics, whose row group claims a
// total_compressed_size of 1 GiB (Spark reads 0 rows of it) passed.
func TestReview11FootersTheGoReaderGivesUpOnAreRefused(t *testing.T) {
	body := append(append(le32(1), le32(2)...), le32(3)...)
	pg := append(tstruct(ti32(1, 0), ti32(2, int32(len(body))), ti32(3, int32(len(body))), tst(5, ti32(1, 3), ti32(2, 0), ti32(3, 3), ti32(4, 3))), body...)
	handRowGroupExtra = []tf{ti64(6, 1<<30)}
	b := handParquetCol(3, pg, 4, 0, int64(len(pg)), ptInt32, -1, nil, nil)
	handRowGroupExtra = nil
	// One byte more inside the footer's length, after the FileMetaData.
	n := binary.LittleEndian.Uint32(b[len(b)-8:])
	b = append(append(b[:len(b)-8:len(b)-8], 0), binary.LittleEndian.AppendUint32(nil, n+1)...)
	b = append(b, "PAR1"...)
	if s, full := duckdbReads(t, b, "x = 2"); s != 1 || full != 1 {
		t.Fatalf("DuckDB reads %d and %d rows of x = 2, want 1", s, full)
	}
	if _, err := readFooter(writeTemp(t, b)); err == nil {
		t.Fatal("the Go reader decodes the footer")
	}
	msgs, passed := review11Audit(t, b)
	for i, m := range msgs {
		if passed[i] || !strings.Contains(m, "t/part-0.parquet") {
			t.Errorf("unfused %v: passed %v (%s), want refused naming the file", i == 1, passed[i], m)
		}
	}
}

func writeTemp(t *testing.T, b []byte) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "f.parquet")
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}
