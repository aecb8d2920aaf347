package audit

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRowCountsOfListOnlyFilesAreCountedFromTheirPages: a file whose only
// columns are lists or maps has no flat column whose values count its
// rows. Its footer claimed 5 rows (num_rows of the file and of its one row
// group) where its pages hold 3 records (repetition levels of 0): DuckDB's
// count(*) (and pyarrow's count_rows) give the claim, 5, without reading
// the pages; pyarrow's read_table and pandas read 3 (deltalake's and
// Spark 4.3.0 read 5 rows: the 3 and two empty lists it made up). The
// audit passed row_count of 5. A claim of 2 is read as 2 by all of them,
// the third record dropped; it is refused alike (the footer says
// otherwise than the pages).
func TestRowCountsOfListOnlyFilesAreCountedFromTheirPages(t *testing.T) {
	cases := []struct {
		name, query string
	}{
		{"list", "SELECT * FROM (VALUES ([1, 2]), ([3]), ([4, 5, 6])) v(l)"},
		{"map", "SELECT * FROM (VALUES (MAP {'a': 1}), (MAP {'b': 2, 'c': 3}), (MAP {})) v(l)"},
		{"two_lists", "SELECT * FROM (VALUES ([1, 2], ['x']), ([3], []), ([4, 5, 6], ['y', 'z'])) v(l, m)"},
	}
	if python, err := sparkPython(); err == nil && !testing.Short() {
		// Spark's reading of each forged file, in one session.
		dir := t.TempDir()
		var want strings.Builder
		for _, c := range cases {
			for _, claim := range []int64{5, 2} {
				name := fmt.Sprintf("%s_%d.parquet", c.name, claim)
				writeQuery(t, filepath.Join(dir, name), c.query)
				forgeRowCount(t, filepath.Join(dir, name), 3, claim)
				fmt.Fprintf(&want, "%s %d %d\n", name, claim, claim)
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
		lines := strings.Split(strings.TrimSpace(want.String()), "\n")
		slices.Sort(lines)
		if got := strings.TrimSpace(string(out)); got != strings.Join(lines, "\n") {
			t.Errorf("Spark read (file, count(), rows):\n%s\nwant\n%s", got, strings.Join(lines, "\n"))
		}
	}
	for _, c := range cases {
		for _, claim := range []int64{3, 5, 2} {
			t.Run(fmt.Sprintf("%s_%d", c.name, claim), func(t *testing.T) {
				src := newBatchSource(t)
				src.write(t, "b1", "t/part-0.parquet", c.query)
				dst := filepath.Join(src.root, "b1", "t", "part-0.parquet")
				if claim != 3 {
					forgeRowCount(t, dst, 3, claim)
				}
				if python, err := testPython(); err == nil && !testing.Short() {
					out, err := exec.Command(python, "-c", "import sys, pyarrow.parquet as pq, pyarrow.dataset as ds, pandas as pd; print(ds.dataset(sys.argv[1]).count_rows(), pq.read_table(sys.argv[1]).num_rows, len(pd.read_parquet(sys.argv[1])))", dst).CombinedOutput()
					want := fmt.Sprintf("%d %d %d", claim, min(claim, 3), min(claim, 3))
					if err != nil || strings.TrimSpace(string(out)) != want {
						t.Errorf("pyarrow's count_rows, read_table and pandas read %s rows (%v), want %s", out, err, want)
					}
				}
				for _, unfused := range []bool{false, true} {
					e := newEngine(t, src, "")
					e.unfused = unfused
					rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
						Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{{Name: "rows", Kind: KindRowCount, Table: "t", Min: f64(float64(claim)), Max: f64(float64(claim))}}}})
					if err != nil {
						t.Fatal(err)
					}
					m := checkMessages(rep)
					if claim == 3 {
						if !rep.Passed {
							t.Errorf("unfused %v: the honest file is refused: %s", unfused, m)
						}
						continue
					}
					if rep.Passed || !strings.Contains(m, "t/part-0.parquet") || !strings.Contains(m, `row group 0, column "l`) ||
						!strings.Contains(m, fmt.Sprintf("%d rows", claim)) || !strings.Contains(m, "3 records") {
						t.Errorf("unfused %v: passed %v (%s), want refused naming the file, row group 0, column l and both counts", unfused, rep.Passed, m)
					}
				}
			})
		}
	}
}

// forgeRowCount rewrites the file's and its one row group's num_rows
// (Thrift compact: an i64 field after the field before it, header 0x16,
// zigzag varint) from rows to claim, both of one byte, and checks with the
// Go footer reader that both now say claim.
func forgeRowCount(t *testing.T, path string, rows, claim int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := footer(t, b)
	from, to := []byte{0x16, byte(rows * 2)}, []byte{0x16, byte(claim * 2)}
	if n := bytes.Count(b[lo:hi], from); n != 2 {
		t.Fatalf("the footer holds %d copies of %x, want 2 (the file's and the row group's num_rows)", n, from)
	}
	copy(b[lo:hi], bytes.ReplaceAll(b[lo:hi], from, to))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ft, err := readFooter(path)
	if err != nil {
		t.Fatal(err)
	}
	if ft.rows != claim || len(ft.chunks) == 0 || ft.chunks[0].rows != claim {
		t.Fatalf("forged footer: file rows %d, row group rows %v, want %d", ft.rows, ft.chunks, claim)
	}
}

// writeQuery writes the rows of query to a Parquet file at path.
func writeQuery(t *testing.T, path, query string) {
	t.Helper()
	copySQL(t, fmt.Sprintf("COPY (%s) TO %s (FORMAT parquet)", query, quoteLiteral(path)))
}

// handListAndFlat is a Parquet file of one row group claiming rows rows:
// a required INT32 x of the values xs, and an optional LIST l of optional
// INT32 elements whose one V1 page holds the records recs (each a list).
func handListAndFlat(rows int64, xs []int32, recs [][]int32) []byte {
	f := []byte("PAR1")
	// x: one PLAIN page.
	var xb []byte
	for _, v := range xs {
		xb = append(xb, le32(v)...)
	}
	xpg := append(tstruct(ti32(1, 0), ti32(2, int32(len(xb))), ti32(3, int32(len(xb))), tst(5, ti32(1, int32(len(xs))), ti32(2, 0), ti32(3, 3), ti32(4, 3))), xb...)
	xOff := int64(len(f))
	f = append(f, xpg...)
	// l: repetition levels (bit width 1) and definition levels (bit
	// width 2, all 3) as bit-packed runs, then the values.
	var reps, vals []int32
	for _, r := range recs {
		for i, v := range r {
			reps = append(reps, int32(min(i, 1)))
			vals = append(vals, v)
		}
	}
	n := len(vals)
	groups := (n + 7) / 8
	rep := []byte{byte(groups<<1 | 1)}
	rb := make([]byte, groups)
	for i, r := range reps {
		rb[i/8] |= byte(r) << (i % 8)
	}
	rep = append(rep, rb...)
	def := []byte{byte(groups<<1 | 1)}
	db := make([]byte, groups*2)
	for i := range n {
		bit := i * 2
		db[bit/8] |= 3 << (bit % 8)
	}
	def = append(def, db...)
	var lb []byte
	lb = append(lb, le32(int32(len(rep)))...)
	lb = append(lb, rep...)
	lb = append(lb, le32(int32(len(def)))...)
	lb = append(lb, def...)
	for _, v := range vals {
		lb = append(lb, le32(v)...)
	}
	lpg := append(tstruct(ti32(1, 0), ti32(2, int32(len(lb))), ti32(3, int32(len(lb))), tst(5, ti32(1, int32(n)), ti32(2, 0), ti32(3, 3), ti32(4, 3))), lb...)
	lOff := int64(len(f))
	f = append(f, lpg...)
	chunk := func(path []string, off, size, values int64) []byte {
		var ps [][]byte
		for _, p := range path {
			ps = append(ps, tElemStr(p))
		}
		meta := []tf{ti32(1, 1), tlist(2, 5, tElemI32(0), tElemI32(3)), tlist(3, 8, ps...), ti32(4, 0), ti64(5, values), ti64(6, size), ti64(7, size), ti64(9, off)}
		return tstruct(ti64(2, off), tst(3, meta...))
	}
	md := tstruct(
		ti32(1, 1),
		tlist(2, 12,
			tstruct(tbin(4, []byte("schema")), ti32(5, 2)),
			tstruct(ti32(1, 1), ti32(3, 0), tbin(4, []byte("x"))),
			tstruct(ti32(3, 1), tbin(4, []byte("l")), ti32(5, 1), ti32(6, 3)),
			tstruct(ti32(3, 2), tbin(4, []byte("list")), ti32(5, 1)),
			tstruct(ti32(1, 1), ti32(3, 1), tbin(4, []byte("element")))),
		ti64(3, rows),
		tlist(4, 12, tstruct(tlist(1, 12, chunk([]string{"x"}, xOff, int64(len(xpg)), int64(len(xs))), chunk([]string{"l", "list", "element"}, lOff, int64(len(lpg)), int64(n))),
			ti64(2, int64(len(xpg)+len(lpg))), ti64(3, rows))),
	)
	f = append(f, md...)
	f = binary.LittleEndian.AppendUint32(f, uint32(len(md)))
	return append(f, "PAR1"...)
}

// TestRowCountsOfListLeavesBesideFlatOnesAreCounted: a row group with a
// flat column x of 5 values claiming 5 rows, whose list column l holds 3
// records: DuckDB counts 5 rows and reads x's 5 (count(x)), pyarrow's
// read_table and pandas fail ("Column 1 named l expected length 5 but got
// length 3"), Spark 4.3.0 reads 5 rows, x 4 and 5 beside two empty lists it
// made up. The audit checked only the flat leaf's values in a row group
// that had one, and passed row_count of 5 and not_null(x). Now every
// repeated leaf's records are counted. A list of 5 records beside 3 rows
// (every reader reads 3, the last two records dropped) is refused alike;
// the honest file passes.
func TestRowCountsOfListLeavesBesideFlatOnesAreCounted(t *testing.T) {
	recs3 := [][]int32{{1, 2}, {3}, {4, 5, 6}}
	files := map[string][]byte{
		"honest":     handListAndFlat(3, []int32{1, 2, 3}, recs3),
		"list_short": handListAndFlat(5, []int32{1, 2, 3, 4, 5}, recs3),
		"list_long":  handListAndFlat(3, []int32{1, 2, 3}, append(recs3, []int32{7}, []int32{8})),
	}
	if python, err := testPython(); err == nil && !testing.Short() {
		dir := t.TempDir()
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(dir, name+".parquet"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		script := `import sys, os, pyarrow.parquet as pq
for n in ["honest", "list_short", "list_long"]:
    try:
        print(n, pq.read_table(os.path.join(sys.argv[1], n + ".parquet")).num_rows)
    except Exception as e:
        print(n, type(e).__name__)`
		out, err := exec.Command(python, "-c", script, dir).CombinedOutput()
		if want := "honest 3\nlist_short ArrowInvalid\nlist_long 3\n"; err != nil || string(out) != want {
			t.Errorf("pyarrow read:\n%s(%v), want\n%s", out, err, want)
		}
	}
	for name, b := range files {
		src := oneFileBatch(t, b)
		for _, unfused := range []bool{false, true} {
			e := newEngine(t, src, "")
			e.unfused = unfused
			rows := map[string]float64{"honest": 3, "list_short": 5, "list_long": 3}[name]
			rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
				Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{
					{Name: "rows", Kind: KindRowCount, Table: "t", Min: f64(rows), Max: f64(rows)},
					{Name: "x", Kind: KindNotNull, Table: "t", Column: "x"}}}})
			if err != nil {
				t.Fatal(err)
			}
			m := checkMessages(rep)
			if name == "honest" {
				if !rep.Passed {
					t.Errorf("unfused %v: the honest file is refused: %s", unfused, m)
				}
				continue
			}
			if rep.Passed || !strings.Contains(m, "t/part-0.parquet") || !strings.Contains(m, `column "l.list.element"`) || !strings.Contains(m, "records") {
				t.Errorf("%s, unfused %v: passed %v (%s), want refused naming the file, column l and its records", name, unfused, rep.Passed, m)
			}
		}
	}
}
